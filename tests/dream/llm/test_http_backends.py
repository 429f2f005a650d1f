"""The callback and OpenAI backends against a small HTTP server in a thread on 127.0.0.1:
answers with tool calls and usage, retries after 429/5xx, no retry after other 4xx, a clear
LLMError when the failures persist, timeouts, cancellation, and the key header."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from somnid.dream.llm import (
    CallbackBackend,
    LLMBadResponse,
    LLMRejected,
    LLMTimeout,
    LLMUnavailable,
    OpenAIBackend,
)
from somnid.dream.llm.retry import RetryPolicy

FAST = RetryPolicy(retries=2, backoff_s=0.01, max_backoff_s=0.05)
MESSAGES: list[dict[str, Any]] = [{"role": "user", "content": "consolidate"}]
TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "search_knowledge",
            "description": "Search.",
            "parameters": {"type": "object", "properties": {"query": {"type": "string"}}},
        },
    }
]
TOOL_CALL = {
    "id": "call_abc",
    "type": "function",
    "function": {"name": "search_knowledge", "arguments": '{"query": "pnpm"}'},
}


@dataclass
class Behaviour:
    """What the server does; tests set it, the handler reads it."""

    statuses: list[int] = field(default_factory=list)  # served (then dropped) before a 200
    retry_after: str | None = None
    delay_s: float = 0.0
    body: Any = None  # the 200 answer; None means a default for the path
    raw: bytes | None = None  # a 200 answer that is not JSON
    requests: list[tuple[str, dict[str, Any], dict[str, str]]] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)
    arrived: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)
    error: str | None = None  # the message of a refusal; None: "status <n>"
    probe_status: int = 200  # GET (the probe)
    probe_endless: bool = False  # the GET's body never ends (a drip, 64 KB each 10 ms)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    behaviour: Behaviour


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_POST(self) -> None:
        behaviour = self.server.behaviour
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with behaviour.lock:
            behaviour.requests.append((self.path, body, dict(self.headers.items())))
            status = behaviour.statuses.pop(0) if behaviour.statuses else 200
        behaviour.arrived.set()
        if behaviour.delay_s:
            behaviour.release.wait(behaviour.delay_s)
        if status != 200:
            said = behaviour.error or f"status {status}"
            self._send(status, json.dumps({"error": {"message": said}}).encode())
        elif behaviour.raw is not None:
            self._send(200, behaviour.raw)
        else:
            answer = behaviour.body if behaviour.body is not None else _default(self.path)
            self._send(200, json.dumps(answer).encode())

    def do_GET(self) -> None:
        behaviour = self.server.behaviour
        try:
            self.send_response(behaviour.probe_status)
            self.send_header("Content-Length", str(1 << 40 if behaviour.probe_endless else 0))
            self.end_headers()
            while behaviour.probe_endless and not behaviour.release.is_set():
                self.wfile.write(b"x" * 65536)
                time.sleep(0.01)
        except OSError:
            pass  # the probe does not read the body

    def _send(self, status: int, raw: bytes) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            if status != 200 and self.server.behaviour.retry_after is not None:
                self.send_header("Retry-After", self.server.behaviour.retry_after)
            self.end_headers()
            self.wfile.write(raw)
        except OSError:
            pass  # the client gave up (timeout, cancellation)

    def log_message(self, format: str, *args: Any) -> None:
        return None


def _default(path: str) -> dict[str, Any]:
    message = {"role": "assistant", "content": None, "tool_calls": [TOOL_CALL]}
    if path.endswith("/chat/completions"):
        return {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
            "usage": {
                "prompt_tokens": 500,
                "completion_tokens": 20,
                "total_tokens": 520,
                "prompt_tokens_details": {"cached_tokens": 384},
            },
        }
    usage = {"prompt_tokens": 50, "completion_tokens": 5, "cached_tokens": 10}
    return {"message": message, "usage": usage}


@pytest.fixture
def server() -> Iterator[tuple[str, Behaviour]]:
    behaviour = Behaviour()
    httpd = _Server(("127.0.0.1", 0), _Handler)
    httpd.behaviour = behaviour
    thread = threading.Thread(target=httpd.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", behaviour
    finally:
        behaviour.release.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


HANG = 60.0
"""A cap for a hang, never a figure: a loaded machine is slow, not broken."""


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


# -- callback ------------------------------------------------------------------------------


async def test_callback_posts_messages_and_tools(server: tuple[str, Behaviour]) -> None:
    url, behaviour = server
    backend = CallbackBackend(f"{url}/dream/llm", timeout_s=5, retry=FAST)
    assert backend.name == "callback" and backend.available()
    result = await backend.chat(MESSAGES, TOOLS)
    assert result.message == {"role": "assistant", "content": "", "tool_calls": [TOOL_CALL]}
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (50, 5)
    assert result.usage.cached_tokens == 10
    [(path, body, _)] = behaviour.requests
    assert path == "/dream/llm"
    assert body == {"messages": MESSAGES, "tools": TOOLS}


async def test_callback_without_url_is_unavailable() -> None:
    backend = CallbackBackend(None, timeout_s=5)
    assert not backend.available()
    with pytest.raises(LLMUnavailable, match="callback_url"):
        await backend.chat(MESSAGES, TOOLS)


async def test_one_retry_after_a_503(server: tuple[str, Behaviour]) -> None:
    url, behaviour = server
    behaviour.statuses = [503]
    result = await CallbackBackend(url, timeout_s=5, retry=FAST).chat(MESSAGES, TOOLS)
    assert result.message["tool_calls"] == [TOOL_CALL]
    assert len(behaviour.requests) == 2


async def test_a_429_is_retried_after_its_retry_after(server: tuple[str, Behaviour]) -> None:
    url, behaviour = server
    behaviour.statuses, behaviour.retry_after = [429], "0.2"
    started = time.monotonic()
    await CallbackBackend(url, timeout_s=5, retry=RetryPolicy(backoff_s=0.01)).chat(MESSAGES, [])
    assert time.monotonic() - started >= 0.2
    assert len(behaviour.requests) == 2


async def test_persistent_failure_is_a_clear_error(server: tuple[str, Behaviour]) -> None:
    url, behaviour = server
    behaviour.statuses = [500, 502, 503, 504]
    with pytest.raises(LLMUnavailable, match=r"after 3 attempt\(s\); last error: HTTP 503"):
        await CallbackBackend(url, timeout_s=5, retry=FAST).chat(MESSAGES, TOOLS)
    assert len(behaviour.requests) == 3


async def test_other_4xx_are_not_retried(server: tuple[str, Behaviour]) -> None:
    url, behaviour = server
    behaviour.statuses = [400, 400]
    with pytest.raises(LLMRejected, match=r"HTTP 400: .*status 400"):
        await CallbackBackend(url, timeout_s=5, retry=FAST).chat(MESSAGES, TOOLS)
    assert len(behaviour.requests) == 1


async def test_nobody_listening_is_unavailable() -> None:
    backend = CallbackBackend(f"http://127.0.0.1:{_closed_port()}/", timeout_s=5, retry=FAST)
    with pytest.raises(LLMUnavailable, match="3 attempt"):
        await backend.chat(MESSAGES, TOOLS)


async def test_the_timeout_is_honoured_and_not_retried(server: tuple[str, Behaviour]) -> None:
    url, behaviour = server
    behaviour.delay_s = HANG * 10  # an answer that never comes (released at teardown)
    with pytest.raises(LLMTimeout, match=r"0\.3 s"):  # its own time-out, not the hang cap
        await asyncio.wait_for(
            CallbackBackend(url, timeout_s=0.3, retry=FAST).chat(MESSAGES, TOOLS), HANG
        )
    assert len(behaviour.requests) == 1


async def test_cancelling_aborts_the_request(server: tuple[str, Behaviour]) -> None:
    url, behaviour = server
    behaviour.delay_s = HANG * 10  # an answer that never comes (released at teardown)
    call = asyncio.create_task(CallbackBackend(url, timeout_s=HANG * 5).chat(MESSAGES, TOOLS))
    assert await asyncio.to_thread(behaviour.arrived.wait, HANG)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):  # at once: never after the answer or time-out
        await asyncio.wait_for(call, HANG)


@pytest.mark.parametrize(
    ("raw", "body", "match"),
    [
        (b"<html>oops</html>", None, "invalid JSON"),
        (None, [1, 2], "JSON list"),
        (None, {"usage": {}}, "without a message"),
        (None, {"message": {"role": "assistant", "tool_calls": "x"}}, "not a list"),
        (None, {"message": {"tool_calls": [{"function": {"arguments": "{}"}}]}}, "name"),
    ],
)
async def test_answers_that_are_not_chat_replies(
    server: tuple[str, Behaviour], raw: bytes | None, body: Any, match: str
) -> None:
    url, behaviour = server
    behaviour.raw, behaviour.body = raw, body
    with pytest.raises(LLMBadResponse, match=match):
        await CallbackBackend(url, timeout_s=5, retry=FAST).chat(MESSAGES, TOOLS)


async def test_messages_are_normalised(server: tuple[str, Behaviour]) -> None:
    url, behaviour = server
    behaviour.body = {
        "message": {
            "content": [{"type": "text", "text": "part one, "}, {"type": "text", "text": "two"}],
            "refusal": None,
            "tool_calls": [{"function": {"name": "search_knowledge", "arguments": {"query": "x"}}}],
        }
    }
    result = await CallbackBackend(url, timeout_s=5).chat(MESSAGES, TOOLS)
    assert result.message["role"] == "assistant"
    assert result.message["content"] == "part one, two"
    assert "refusal" not in result.message
    [call] = result.message["tool_calls"]
    assert call["id"].startswith("call_") and call["type"] == "function"
    assert call["function"] == {"name": "search_knowledge", "arguments": '{"query": "x"}'}
    assert result.usage.total == 0


async def test_a_lone_surrogate_in_an_answer_can_be_sent_back(
    server: tuple[str, Behaviour],
) -> None:
    """``"\\ud800"`` is valid JSON but no UTF-8: echoed in a repair request it made the
    request impossible to encode, and the dream ended in error."""
    url, behaviour = server
    behaviour.body = {
        "choices": [{"message": {"role": "assistant", "content": '{\ud800"memories": ['}}]
    }
    backend = OpenAIBackend(f"{url}/v1/", "m", api_key=None, timeout_s=5)
    result = await backend.chat(MESSAGES, TOOLS)
    assert result.message["content"] == '{?"memories": ['
    await backend.chat([*MESSAGES, result.message], TOOLS)  # sent back as it is
    assert behaviour.requests[-1][1]["messages"][-1]["content"] == '{?"memories": ['


# -- openai --------------------------------------------------------------------------------


async def test_openai_request_and_answer(server: tuple[str, Behaviour]) -> None:
    url, behaviour = server
    backend = OpenAIBackend(f"{url}/v1/", "qwen2.5-7b", api_key="sk-local", timeout_s=5)
    assert backend.name == "openai" and backend.available()
    result = await backend.chat(MESSAGES, TOOLS)
    [(path, body, headers)] = behaviour.requests
    assert path == "/v1/chat/completions"
    assert body == {
        "model": "qwen2.5-7b",
        "messages": MESSAGES,
        "tools": TOOLS,
        "tool_choice": "auto",
    }
    assert headers["Authorization"] == "Bearer sk-local"
    assert result.message == {"role": "assistant", "content": "", "tool_calls": [TOOL_CALL]}
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (500, 20)
    assert result.usage.cached_tokens == 384 and result.usage.total == 520


async def test_openai_without_tools_or_key(server: tuple[str, Behaviour]) -> None:
    url, behaviour = server
    behaviour.body = {
        "choices": [
            {
                "message": {
                    "role": "assistant",
                    "content": "All consolidated.",
                    "reasoning_content": "Nothing left to do.",
                }
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 3, "prompt_cache_hit_tokens": 8},
    }
    result = await OpenAIBackend(url, "deepseek-chat", api_key=None, timeout_s=5).chat(MESSAGES, [])
    [(_, body, headers)] = behaviour.requests
    assert "tools" not in body and "tool_choice" not in body
    assert "Authorization" not in headers
    assert result.message == {
        "role": "assistant",
        "content": "All consolidated.",
        "reasoning_content": "Nothing left to do.",
    }
    assert result.usage.cached_tokens == 8


async def test_openai_retries_and_gives_up(server: tuple[str, Behaviour]) -> None:
    url, behaviour = server
    behaviour.statuses = [503]
    backend = OpenAIBackend(url, "m", api_key="k", timeout_s=5, retry=FAST)
    assert (await backend.chat(MESSAGES, TOOLS)).message["tool_calls"] == [TOOL_CALL]
    behaviour.statuses = [503, 503, 503]
    with pytest.raises(LLMUnavailable, match="chat/completions failed after 3"):
        await backend.chat(MESSAGES, TOOLS)
    assert len(behaviour.requests) == 5


async def test_openai_error_bodies(server: tuple[str, Behaviour]) -> None:
    url, behaviour = server
    backend = OpenAIBackend(url, "m", api_key="sk-secret", timeout_s=5, retry=FAST)
    behaviour.statuses = [401]
    with pytest.raises(LLMRejected, match="HTTP 401") as rejected:
        await backend.chat(MESSAGES, TOOLS)
    assert "sk-secret" not in str(rejected.value)
    behaviour.body = {"error": {"message": "context length exceeded"}}
    with pytest.raises(LLMRejected, match="context length exceeded"):
        await backend.chat(MESSAGES, TOOLS)
    behaviour.body = {"choices": []}
    with pytest.raises(LLMBadResponse, match="without choices"):
        await backend.chat(MESSAGES, TOOLS)
    # A probe: a gateway's quota message in a 200 was taken for "structured output not
    # supported": the dream asked for less and less, then called the log refused.
    behaviour.body = {"error": {"message": "You exceeded your quota", "type": "insufficient_quota"}}
    with pytest.raises(LLMUnavailable, match="exceeded your quota"):
        await backend.chat(MESSAGES, TOOLS)
    behaviour.body = {"error": {"message": "upstream busy", "code": 503}}
    with pytest.raises(LLMUnavailable, match="upstream busy"):
        await backend.chat(MESSAGES, TOOLS)
    behaviour.body = None
    behaviour.statuses = [302]  # a redirect is not followed, nor taken for a refusal
    with pytest.raises(LLMUnavailable, match="redirected"):
        await backend.chat(MESSAGES, TOOLS)


def test_openai_needs_a_url_and_a_model() -> None:
    assert not OpenAIBackend("http://127.0.0.1:1/v1", " ", api_key=None, timeout_s=1).available()


async def test_a_key_the_endpoint_echoes_is_not_kept(server: tuple[str, Behaviour]) -> None:
    # An endpoint answered 401 "Incorrect API key provided: sk-proj-…": the key went to the
    # dream's reason, its journal and history's commit message.
    url, behaviour = server
    key = "sk-proj-AbCdEf0123456789AbCdEf0123456789xyzw"
    local = "my-gateway-key-1234"
    for sent in (key, local):
        backend = OpenAIBackend(url, "m", api_key=sent, timeout_s=5, retry=FAST)
        behaviour.statuses, behaviour.error = [401], f"Incorrect API key provided: {sent}."
        with pytest.raises(LLMRejected, match="Incorrect API key provided") as rejected:
            await backend.chat(MESSAGES, TOOLS)
        assert sent not in str(rejected.value)
        behaviour.body = {"error": {"message": f"bad key {sent}"}}  # a 200 with an error
        with pytest.raises(LLMRejected, match="bad key") as rejected:
            await backend.chat(MESSAGES, TOOLS)
        assert sent not in str(rejected.value)
        behaviour.body = None
    # A key across the cut at 300 characters: scrubbed whole before the cut, else a
    # prefix of it was kept.
    backend = OpenAIBackend(url, "m", api_key=key, timeout_s=5, retry=FAST)
    behaviour.statuses, behaviour.error = [401], "x" * 250 + f" invalid key {key} end"
    with pytest.raises(LLMRejected) as rejected:
        await backend.chat(MESSAGES, TOOLS)
    assert key[:12] not in str(rejected.value)


async def test_the_probe_says_a_refused_key_and_reads_no_body(
    server: tuple[str, Behaviour],
) -> None:
    url, behaviour = server
    with_key = OpenAIBackend(url, "m", api_key="sk-secret-123456", timeout_s=5, retry=FAST)
    assert await with_key.probe() is None
    behaviour.probe_status = 401  # the key is refused: every dream would fail
    problem = await OpenAIBackend(url, "m", api_key="sk-secret-123456", timeout_s=5).probe()
    assert problem is not None and "HTTP 401: the API key was refused" in problem
    assert await OpenAIBackend(url, "m", api_key=None, timeout_s=5).probe() is None  # no key
    behaviour.probe_status, behaviour.probe_endless = 200, True  # read, it never ends
    assert await OpenAIBackend(url, "m", api_key=None, timeout_s=5).probe() is None
