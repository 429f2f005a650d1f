"""A scripted OpenAI-compatible endpoint on 127.0.0.1 for dreams against the real daemon,
with the faults of a real one: slow answers, bodies trickled byte by byte, silence, HTTP
errors, and bodies that are no chat reply.

Unlike the server in ``tests/dream/test_http_backend_dreams.py`` a script here may answer
with any status and raw body (:class:`Fault`), and every answer may be delayed
(``ScriptedLLM.delay_s``), so a dream lasts long enough to be killed in the middle.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.dream.fakes import say, tool_call

MODEL = "scripted-stress"
KEY_ENV = "SOMNID_TEST_STRESS_KEY"
LOG_LINE = re.compile(r"^- (\d{4}-\d{2}-\d{2}_\d{3,}(?:--\d+)?)$", re.MULTILINE)
PAGE = re.compile(r"page (\d+) of (\d+)")


@dataclass(frozen=True)
class Fault:
    """A raw answer: ``status`` and ``body`` as they are, sent ``trickle_s`` apart byte by
    byte; ``hang`` holds the request open (until the server closes) instead."""

    status: int = 200
    body: bytes = b""
    trickle_s: float = 0.0
    hang: bool = False


Answer = dict[str, Any] | Fault
Script = Callable[[list[dict[str, Any]]], Answer]


@dataclass
class ScriptedLLM:
    url: str
    script: Script
    delay_s: float = 0.0
    requests: list[list[dict[str, Any]]] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def env(self, timeout_s: float = 10.0) -> tuple[tuple[str, str], ...]:
        """The daemon's settings to dream with this endpoint."""
        return (
            ("SOMNID_DREAM__LLM", "openai"),
            ("SOMNID_DREAM__OPENAI__BASE_URL", self.url + "/v1"),
            ("SOMNID_DREAM__OPENAI__MODEL", MODEL),
            ("SOMNID_DREAM__OPENAI__API_KEY_ENV", KEY_ENV),
            (KEY_ENV, "sk-stress"),
            ("SOMNID_DREAM__REQUEST_TIMEOUT_S", str(timeout_s)),
        )

    @property
    def count(self) -> int:
        with self.lock:
            return len(self.requests)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    llm: ScriptedLLM


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_POST(self) -> None:
        llm = self.server.llm
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        messages = body["messages"]
        with llm.lock:
            llm.requests.append(messages)
        if llm.delay_s and llm.release.wait(llm.delay_s):
            return  # the server is closing
        answer = llm.script(messages)
        if isinstance(answer, Fault):
            self._fault(answer)
            return
        reply = {
            "id": "chatcmpl-stress",
            "object": "chat.completion",
            "model": body.get("model"),
            "choices": [{"index": 0, "message": answer, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
        }
        self._send(200, json.dumps(reply).encode())

    def _fault(self, fault: Fault) -> None:
        llm = self.server.llm
        if fault.hang:
            llm.release.wait(120)
            return
        if not fault.trickle_s:
            self._send(fault.status, fault.body)
            return
        with contextlib.suppress(OSError):
            self._head(fault.status, len(fault.body))
            for index in range(len(fault.body)):
                if llm.release.wait(fault.trickle_s):
                    return
                self.wfile.write(fault.body[index : index + 1])
                self.wfile.flush()

    def _head(self, status: int, length: int) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(length))
        self.end_headers()

    def _send(self, status: int, raw: bytes) -> None:
        with contextlib.suppress(OSError):  # somnid gave up on this request
            self._head(status, len(raw))
            self.wfile.write(raw)

    def log_message(self, format: str, *args: Any) -> None:
        return None


@contextlib.contextmanager
def scripted_llm(script: Script, *, delay_s: float = 0.0) -> Iterator[ScriptedLLM]:
    httpd = _Server(("127.0.0.1", 0), _Handler)
    llm = ScriptedLLM(f"http://127.0.0.1:{httpd.server_address[1]}", script, delay_s)
    httpd.llm = llm
    thread = threading.Thread(target=httpd.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield llm
    finally:
        llm.release.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


# ---------------------------------------------------------------------- the dream script


def dream_logs(messages: list[dict[str, Any]]) -> list[str]:
    """The logs a dream was given, from its task message (the journal excerpt after them
    holds lines such as ``- none`` that are no log)."""
    return LOG_LINE.findall(str(messages[1]["content"]))


def knowledge_name(log: str) -> str:
    """The knowledge entry the scripted dreamer makes of ``log``."""
    return f"dream-{log}".replace("_", "-")


def _history(messages: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any], str]]:
    """(tool, arguments, result) of every call so far, in order."""
    results = {
        m.get("tool_call_id"): str(m.get("content")) for m in messages if m["role"] == "tool"
    }
    done = []
    for message in messages:
        for call in message.get("tool_calls") or []:
            function = call["function"]
            arguments = json.loads(function["arguments"] or "{}")
            done.append((function["name"], arguments, results.get(call["id"], "")))
    return done


def consolidate(messages: list[dict[str, Any]]) -> Answer:
    """A diligent dreamer: for each log in order, read every page, store one piece of
    knowledge naming it, mark it processed; then notes and a summary. It reacts to what
    the tools answered, so a re-run after a crash finishes whatever is left."""
    history = _history(messages)
    for log in dream_logs(messages):
        reads = [(a, r) for name, a, r in history if name == "read_session_log" and a["log"] == log]
        if not reads:
            return _call(history, "read_session_log", log=log)
        last = reads[-1][1]
        if last.startswith("error"):
            continue  # gone, or never to be dreamed: leave it
        page = PAGE.search(last)
        if page and int(page[1]) < int(page[2]):
            return _call(history, "read_session_log", log=log, page=int(page[1]) + 1)
        name = knowledge_name(log)
        if not any(n == "create_knowledge" and a["name"] == name for n, a, _ in history):
            return _call(
                history,
                "create_knowledge",
                name=name,
                entry_type="fact",
                description=f"What session log {log} said",
                body=f"Consolidated from {log}.",
            )
        if not any(n == "mark_log_processed" and a["log"] == log for n, a, _ in history):
            return _call(history, "mark_log_processed", log=log)
    if not any(name == "write_dream_log" for name, _, _ in history):
        return _call(history, "write_dream_log", content="Consolidated every log in order.")
    return say(f"{len(dream_logs(messages))} logs consolidated.")


def _call(history: list[Any], name: str, /, **args: Any) -> dict[str, Any]:
    message = tool_call(name, **args)
    message["tool_calls"][0]["id"] = f"call-{len(history)}"  # ids unique in the chat
    return message


def wait_for(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {timeout} s for {what}")
        time.sleep(0.02)
