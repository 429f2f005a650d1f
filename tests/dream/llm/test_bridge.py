"""The LLM bridge end to end: a real uvicorn server on a free 127.0.0.1 port serving the
``WS /v1/llm/bridge`` route, and a fake host speaking the protocol with the ``websockets``
client (scripted answers, errors, silence, a dropped socket, cancellation)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import uvicorn
from fastapi import FastAPI
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.typing import Origin

from somnid.api.routes.bridge import router
from somnid.config import DreamSettings
from somnid.dream.llm import (
    BridgeBackend,
    BridgeHub,
    CallbackBackend,
    ChatBackend,
    LLMBadResponse,
    LLMRejected,
    LLMTimeout,
    LLMUnavailable,
    OpenAIBackend,
    build_backend,
)
from somnid.dream.llm.bridge import CLOSE_REPLACED

MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": "You consolidate memories."},
    {"role": "user", "content": "Begin. 开始。"},
]
TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "read_session_log",
            "description": "Read one log.",
            "parameters": {
                "type": "object",
                "properties": {"log": {"type": "string"}},
                "required": ["log"],
                "additionalProperties": False,
            },
        },
    }
]
ANSWER = {
    "role": "assistant",
    "content": "",
    "reasoning_content": "I should read the log first.",
    "tool_calls": [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "read_session_log", "arguments": '{"log": "2026-10-03"}'},
        }
    ],
}


class _Server(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield  # leave pytest's signal handlers alone


@dataclass
class _Runtime:
    """Stands in for somnid's Runtime: the route needs only ``bridge``."""

    bridge: BridgeHub


@dataclass
class Bridge:
    hub: BridgeHub
    url: str

    async def host(self, **kwargs: Any) -> ClientConnection:
        """A fake host, connected and registered with the hub."""
        before = self.hub.host_info
        ws = await connect(self.url, proxy=None, open_timeout=5, **kwargs)
        await until(lambda: self.hub.host_info is not None and self.hub.host_info is not before)
        return ws


@pytest.fixture
async def bridge() -> AsyncIterator[Bridge]:
    hub = BridgeHub(request_timeout_s=2 * HANG)
    app = FastAPI()
    app.include_router(router)
    app.state.runtime = _Runtime(hub)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        app, log_config=None, lifespan="off", ws="websockets-sansio", access_log=False
    )
    server = _Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    await until(lambda: server.started)
    try:
        yield Bridge(hub, f"ws://127.0.0.1:{port}/v1/llm/bridge")
    finally:
        await hub.close()
        server.should_exit = True
        await asyncio.wait_for(task, HANG)
        sock.close()


# Waits are capped for a hang, never timed: "at once" means well before the bridge's own
# 120 s request time-out, not in a number of milliseconds a loaded machine may miss.
HANG = 60.0


async def until(condition: Callable[[], bool], within: float = HANG) -> None:
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.005)


async def receive(ws: ClientConnection, within: float = HANG) -> dict[str, Any]:
    frame: dict[str, Any] = json.loads(await asyncio.wait_for(ws.recv(), within))
    return frame


async def test_no_host_means_unavailable_at_once(bridge: Bridge) -> None:
    assert not bridge.hub.connected
    assert not bridge.hub.available()
    assert bridge.hub.host_info is None
    with pytest.raises(LLMUnavailable, match="no LLM host"):  # not after the 120 s time-out
        await asyncio.wait_for(bridge.hub.chat(MESSAGES, TOOLS), HANG)


async def test_hello_then_a_scripted_answer(bridge: Bridge) -> None:
    async with await bridge.host() as host:
        await host.send(json.dumps({"type": "hello", "host": "dsh", "model": "deepseek/chat"}))
        await until(lambda: bridge.hub.host_info is not None and bridge.hub.host_info.host == "dsh")
        info = bridge.hub.host_info
        assert info is not None and info.model == "deepseek/chat"
        assert info.peer.startswith("127.0.0.1:")

        call = asyncio.create_task(bridge.hub.chat(MESSAGES, TOOLS))
        request = await receive(host)
        assert request["type"] == "llm.chat"
        assert request["messages"] == MESSAGES and request["tools"] == TOOLS
        usage = {"prompt_tokens": 120, "completion_tokens": 30, "cached_tokens": 100}
        reply = {"type": "llm.result", "id": request["id"], "message": ANSWER, "usage": usage}
        await host.send(json.dumps(reply))
        result = await asyncio.wait_for(call, HANG)

    assert result.message == ANSWER
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (120, 30)
    assert result.usage.cached_tokens == 100 and result.usage.total == 150
    await until(lambda: not bridge.hub.connected)


async def test_calls_are_matched_by_id_in_any_order(bridge: Bridge) -> None:
    async with await bridge.host() as host:
        first = asyncio.create_task(bridge.hub.chat([{"role": "user", "content": "one"}], []))
        second = asyncio.create_task(bridge.hub.chat([{"role": "user", "content": "two"}], []))
        requests = [await receive(host), await receive(host)]
        assert len({r["id"] for r in requests}) == 2
        for request in reversed(requests):
            text = request["messages"][0]["content"]
            message = {"role": "assistant", "content": f"answer to {text}"}
            await host.send(
                json.dumps({"type": "llm.result", "id": request["id"], "message": message})
            )
        assert (await first).message["content"] == "answer to one"
        assert (await second).message["content"] == "answer to two"
        assert (await second).usage.total == 0  # usage is optional


async def test_an_error_frame_fails_the_call(bridge: Bridge) -> None:
    async with await bridge.host() as host:
        call = asyncio.create_task(bridge.hub.chat(MESSAGES, TOOLS))
        request = await receive(host)
        error = {"message": "provider said 401", "code": "auth"}
        await host.send(json.dumps({"type": "llm.error", "id": request["id"], "error": error}))
        with pytest.raises(LLMRejected, match="provider said 401"):
            await call
        assert bridge.hub.connected  # one failed call does not end the connection


async def test_silence_times_out_and_tells_the_host_to_stop(bridge: Bridge) -> None:
    async with await bridge.host() as host:
        started = time.monotonic()
        call = asyncio.create_task(bridge.hub.chat(MESSAGES, TOOLS, timeout_s=0.3))
        request = await receive(host)
        with pytest.raises(LLMTimeout, match=r"0\.3 s"):
            await call
        assert time.monotonic() - started >= 0.3  # never before its time
        assert await receive(host) == {"type": "llm.cancel", "id": request["id"]}
        # An answer that comes too late is ignored; the bridge keeps working.
        late = {"type": "llm.result", "id": request["id"], "message": ANSWER}
        await host.send(json.dumps(late))
        follow_up = asyncio.create_task(bridge.hub.chat(MESSAGES, TOOLS))
        request = await receive(host)
        message = {"role": "assistant", "content": "done"}
        await host.send(json.dumps({"type": "llm.result", "id": request["id"], "message": message}))
        assert (await follow_up).message == message


async def test_backend_uses_its_configured_timeout(bridge: Bridge) -> None:
    backend = BridgeBackend(bridge.hub, timeout_s=0.2)
    assert backend.name == "bridge" and not backend.available()
    async with await bridge.host() as host:
        assert backend.available()
        call = asyncio.create_task(backend.chat(MESSAGES, TOOLS))
        await receive(host)
        with pytest.raises(LLMTimeout):
            await asyncio.wait_for(call, HANG)


async def test_a_dropped_socket_fails_pending_calls_at_once(bridge: Bridge) -> None:
    host = await bridge.host()
    calls = [asyncio.create_task(bridge.hub.chat(MESSAGES, TOOLS)) for _ in range(2)]
    await receive(host)
    await receive(host)
    host.transport.abort()  # the host process died: no close frame
    for call in calls:  # failed, not left to the 120 s time-out
        with pytest.raises(LLMUnavailable, match="disconnected"):
            await asyncio.wait_for(call, HANG)
    await until(lambda: not bridge.hub.connected)
    with pytest.raises(LLMUnavailable):
        await bridge.hub.chat(MESSAGES, TOOLS)


async def test_a_clean_close_fails_pending_calls_too(bridge: Bridge) -> None:
    host = await bridge.host()
    call = asyncio.create_task(bridge.hub.chat(MESSAGES, TOOLS))
    await receive(host)
    await host.close()
    with pytest.raises(LLMUnavailable):
        await asyncio.wait_for(call, HANG)


async def test_cancelling_the_caller_aborts_at_once_and_sends_cancel(bridge: Bridge) -> None:
    async with await bridge.host() as host:
        call = asyncio.create_task(bridge.hub.chat(MESSAGES, TOOLS))
        request = await receive(host)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(call, HANG)
        assert await receive(host) == {"type": "llm.cancel", "id": request["id"]}
        assert bridge.hub.connected


async def test_malformed_frames_are_ignored(
    bridge: Bridge, caplog: pytest.LogCaptureFixture
) -> None:
    async with await bridge.host() as host:
        call = asyncio.create_task(bridge.hub.chat(MESSAGES, TOOLS))
        request = await receive(host)
        for junk in (
            "not json at all",
            "[1, 2, 3]",
            json.dumps({"no": "type"}),
            json.dumps({"type": "llm.result", "id": "no-such-call", "message": ANSWER}),
            json.dumps({"type": "llm.result", "id": 42, "message": ANSWER}),
            json.dumps({"type": "something.new", "id": request["id"]}),
        ):
            await host.send(junk)
        await host.send(b"\xff\xfe binary")
        message = {"role": "assistant", "content": "still here"}
        await host.send(json.dumps({"type": "llm.result", "id": request["id"], "message": message}))
        assert (await asyncio.wait_for(call, HANG)).message == message
    assert "not JSON" in caplog.text


async def test_a_result_without_a_message_fails_that_call(bridge: Bridge) -> None:
    async with await bridge.host() as host:
        call = asyncio.create_task(bridge.hub.chat(MESSAGES, TOOLS))
        request = await receive(host)
        await host.send(json.dumps({"type": "llm.result", "id": request["id"], "message": "hi"}))
        with pytest.raises(LLMBadResponse):
            await asyncio.wait_for(call, HANG)
        assert bridge.hub.connected


async def test_a_newer_host_replaces_the_older(bridge: Bridge) -> None:
    old = await bridge.host()
    pending = asyncio.create_task(bridge.hub.chat(MESSAGES, TOOLS))
    await receive(old)
    async with await bridge.host() as new:
        with pytest.raises(LLMUnavailable, match="replaced"):
            await asyncio.wait_for(pending, HANG)
        with pytest.raises(ConnectionClosed) as closed:
            await asyncio.wait_for(old.recv(), HANG)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == CLOSE_REPLACED
        call = asyncio.create_task(bridge.hub.chat(MESSAGES, TOOLS))
        request = await receive(new)
        message = {"role": "assistant", "content": "from the new host"}
        await new.send(json.dumps({"type": "llm.result", "id": request["id"], "message": message}))
        assert (await call).message == message
        assert bridge.hub.connected  # the old socket's end did not unregister the new one


async def test_browsers_are_refused(bridge: Bridge) -> None:
    with pytest.raises(InvalidStatus) as refused:
        await connect(bridge.url, proxy=None, origin=Origin("https://evil.example"))
    assert refused.value.response.status_code == 403
    with pytest.raises(InvalidStatus):
        await connect(bridge.url, proxy=None, origin=Origin("null"))
    assert not bridge.hub.connected
    async with await bridge.host(origin=Origin("http://127.0.0.1:5173")):
        assert bridge.hub.connected


async def test_close_fails_pending_calls_and_refuses_new_hosts(bridge: Bridge) -> None:
    host = await bridge.host()
    call = asyncio.create_task(bridge.hub.chat(MESSAGES, TOOLS))
    await receive(host)
    await bridge.hub.close()
    with pytest.raises(LLMUnavailable, match="shutting down"):
        await asyncio.wait_for(call, HANG)
    with pytest.raises(ConnectionClosed) as closed:
        await asyncio.wait_for(host.recv(), HANG)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1001
    with pytest.raises(InvalidStatus):
        await connect(bridge.url, proxy=None)


def test_build_backend_follows_dream_llm(monkeypatch: pytest.MonkeyPatch) -> None:
    hub = BridgeHub()
    assert build_backend(DreamSettings(llm="off"), hub) is None

    bridge = build_backend(DreamSettings(llm="bridge", request_timeout_s=7), hub)
    assert isinstance(bridge, BridgeBackend) and bridge.timeout_s == 7 and bridge.hub is hub

    callback = build_backend(DreamSettings(llm="callback"), hub)
    assert isinstance(callback, CallbackBackend) and not callback.available()
    configured = build_backend(
        DreamSettings(llm="callback", callback_url="http://127.0.0.1:9/x"), hub
    )
    assert isinstance(configured, CallbackBackend) and configured.available()

    monkeypatch.setenv("SOMNID_TEST_LLM_KEY", "sk-test")
    settings = DreamSettings(llm="openai", openai={"api_key_env": "SOMNID_TEST_LLM_KEY"})
    openai = build_backend(settings, hub)
    assert isinstance(openai, OpenAIBackend) and openai.available()
    assert openai.model == "gpt-4o-mini"

    backends: list[ChatBackend] = [bridge, callback, openai]  # all honour the Protocol
    assert [b.name for b in backends] == ["bridge", "callback", "openai"]
