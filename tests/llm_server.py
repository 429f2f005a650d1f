"""One scripted LLM endpoint on 127.0.0.1 for dreams against the real daemon.

It answers as an OpenAI ``/chat/completions`` endpoint (and ``GET /models``, which the
backend's probe asks), or in the callback shape (``{messages, tools}`` → ``{message,
usage, finish_reason}``) on any other path (a GET there answers 405, as a real callback
would), and records every request. A message's ``finish_reason`` key is the reply's
(``length``: cut by the token limit); without it the reply says ``tool_calls`` or ``stop``.
A script sees the chat's messages and answers a message, or a :class:`Fault` with the faults
of a real endpoint: any status and raw body, bodies trickled byte by byte, silence. Every
answer may be delayed (``delay_s``), so a dream lasts long enough to be killed in the middle.
"""

from __future__ import annotations

import contextlib
import json
import select
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "scripted-llm"
KEY_ENV = "SOMNID_TEST_LLM_SERVER_KEY"
HOLD_S = 120.0  # the longest a request is held open (the server's close ends it sooner)


@dataclass(frozen=True)
class Fault:
    """A raw answer: ``status`` and ``body`` as they are, sent ``trickle_s`` apart byte by
    byte; ``hang`` holds the request open (until the server closes) instead."""

    status: int = 200
    body: bytes = b""
    trickle_s: float = 0.0
    hang: bool = False


HANG = Fault(hang=True)
GARBAGE = Fault(body=b"<html><body>502 Bad Gateway (but sent as 200)</body></html>")

Answer = dict[str, Any] | Fault
Script = Callable[[list[dict[str, Any]]], Answer]


@dataclass
class Request:
    path: str
    body: dict[str, Any]
    headers: dict[str, str]


@dataclass
class LLMServer:
    """The endpoint at ``url``; ``script`` and ``delay_s`` may change between dreams."""

    url: str
    script: Script
    delay_s: float = 0.0
    requests: list[Request] = field(default_factory=list)
    abandoned: threading.Event = field(default_factory=threading.Event)
    """Set when a client closed a connection the server was holding (a hang)."""
    release: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def count(self) -> int:
        with self.lock:
            return len(self.requests)

    def env(self, timeout_s: float = 10.0, mode: str = "agentic") -> tuple[tuple[str, str], ...]:
        """The daemon's settings to dream with this endpoint as an OpenAI API (the scripts
        of these tests call tools: ``dream.mode`` agentic unless told otherwise)."""
        return (
            ("SOMNID_DREAM__MODE", mode),
            ("SOMNID_DREAM__LLM", "openai"),
            ("SOMNID_DREAM__OPENAI__BASE_URL", self.url + "/v1"),
            ("SOMNID_DREAM__OPENAI__MODEL", MODEL),
            ("SOMNID_DREAM__OPENAI__API_KEY_ENV", KEY_ENV),
            (KEY_ENV, "sk-scripted"),
            ("SOMNID_DREAM__REQUEST_TIMEOUT_S", str(timeout_s)),
        )


def _usage(path: str) -> dict[str, Any]:
    if path.endswith("/chat/completions"):
        return {"prompt_tokens": 500, "completion_tokens": 20, "total_tokens": 520,
                "prompt_tokens_details": {"cached_tokens": 384}}  # fmt: skip
    return {"prompt_tokens": 50, "completion_tokens": 10}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    llm: LLMServer


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        if self.path.endswith("/models"):
            listing = {"object": "list", "data": [{"id": MODEL, "object": "model"}]}
            self._send(200, json.dumps(listing).encode())
        else:
            self._send(405, b'{"error": "POST only"}')

    def do_POST(self) -> None:
        llm = self.server.llm
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with llm.lock:
            llm.requests.append(Request(self.path, body, dict(self.headers.items())))
        if llm.delay_s and llm.release.wait(llm.delay_s):
            return  # the server is closing
        answer = llm.script(body["messages"])
        if isinstance(answer, Fault):
            self._fault(answer)
            return
        answer = dict(answer)
        finish = answer.pop("finish_reason", None)
        if finish is None:
            finish = "tool_calls" if answer.get("tool_calls") else "stop"
        if self.path.endswith("/chat/completions"):
            reply: dict[str, Any] = {
                "id": "chatcmpl-scripted",
                "object": "chat.completion",
                "model": body.get("model"),
                "choices": [{"index": 0, "message": answer, "finish_reason": finish}],
                "usage": _usage(self.path),
            }
        else:
            reply = {"message": answer, "usage": _usage(self.path), "finish_reason": finish}
        self._send(200, json.dumps(reply).encode())

    def _fault(self, fault: Fault) -> None:
        llm = self.server.llm
        if fault.hang:
            # Held until the server closes, or until the client gives up and closes the
            # connection (seen as the socket turning readable with nothing to read).
            deadline = time.monotonic() + HOLD_S
            while not llm.release.wait(0.05) and time.monotonic() < deadline:
                ready, _, _ = select.select([self.connection], [], [], 0)
                if ready and not self.connection.recv(1, socket.MSG_PEEK):
                    llm.abandoned.set()
                    return
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
def serve_llm(script: Script, *, delay_s: float = 0.0) -> Iterator[LLMServer]:
    httpd = _Server(("127.0.0.1", 0), _Handler)
    llm = LLMServer(f"http://127.0.0.1:{httpd.server_address[1]}", script, delay_s)
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
