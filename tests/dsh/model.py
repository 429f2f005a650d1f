"""A scripted OpenAI-compatible streaming chat endpoint on 127.0.0.1 for the DSH CLI.

DSH's DeepSeek adapter streams ``POST /chat/completions`` (SSE, ``[DONE]``-terminated). A
request that offers tools is the agent's: the test's ``agent`` script answers it (text or one
tool call) and may act first (restart somnid, say). A request without tools is somnid's dream
over the LLM bridge: it is answered with the smallest JSON object that fits the JSON Schema the
plugin put into the system prompt (``{"memories": []}`` for an extraction), or "ok".
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SCHEMA_NOTE = "matching this JSON Schema:\n"

Reply = dict[str, Any]  # {"text": str} or {"tool": name, "args": {...}}
AgentScript = Callable[[int, dict[str, Any]], Reply]


def minimal(schema: dict[str, Any]) -> Any:
    """The smallest value of ``schema``: required properties only, empty arrays, first enum."""
    if "enum" in schema:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return minimal(schema[key][0])
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        props = schema.get("properties", {})
        return {name: minimal(props.get(name, {})) for name in schema.get("required", [])}
    if kind == "array":
        return [minimal(schema.get("items", {})) for _ in range(schema.get("minItems", 0))]
    if kind in ("integer", "number"):
        return schema.get("minimum", 0)
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    return "x" * int(schema.get("minLength", 0))


def dream_answer(system: str) -> str:
    at = system.find(SCHEMA_NOTE)
    if at < 0:
        return "{}" if "JSON object" in system else "ok"
    schema = json.loads(system[at + len(SCHEMA_NOTE) :].strip().splitlines()[0])
    return json.dumps(minimal(schema))


@dataclass
class Model:
    url: str
    agent: AgentScript
    agent_requests: list[dict[str, Any]] = field(default_factory=list)
    dream_requests: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _chunks(reply: Reply) -> Iterator[dict[str, Any]]:
    usage = {"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105}
    if "tool" in reply:
        call = {
            "index": 0,
            "id": reply.get("id", "call-1"),
            "type": "function",
            "function": {"name": reply["tool"], "arguments": json.dumps(reply.get("args", {}))},
        }
        yield {"choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [call]}}]}
        yield {
            "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}],
            "usage": usage,
        }
    else:
        yield {"choices": [{"index": 0, "delta": {"role": "assistant", "content": reply["text"]}}]}
        yield {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": usage}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    model: Model


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))) or b"{}")
        model = self.server.model
        system = "\n".join(
            str(m.get("content") or "")
            for m in body.get("messages", [])
            if m.get("role") == "system"
        )
        if body.get("tools"):
            with model.lock:
                model.agent_requests.append(body)
                n = len(model.agent_requests)
            reply = model.agent(n, body)
        else:
            with model.lock:
                model.dream_requests.append(body)
            reply = {"text": dream_answer(system)}
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        for chunk in _chunks(reply):
            payload = {"id": "x", "object": "chat.completion.chunk", "model": "scripted", **chunk}
            self.wfile.write(f"data: {json.dumps(payload)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def serve_model(agent: AgentScript) -> Iterator[Model]:
    server = _Server(("127.0.0.1", 0), _Handler)
    server.model = Model(url=f"http://127.0.0.1:{server.server_address[1]}", agent=agent)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.model
    finally:
        server.shutdown()
        server.server_close()
