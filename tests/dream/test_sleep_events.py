"""``GET /v1/sleep/events`` on the real daemon: a dream's ``started``, ``tool`` and ``finished``
events reach every subscriber in order, and subscribers that go away break nothing."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tests.daemon import Daemon, start_daemon
from tests.dream.fakes import tool_call
from tests.dream.test_http_backend_dreams import (
    backend_env,
    consolidating,
    converse,
    dream,
    llm_server,
)
from tests.llm_server import HANG, Answer

EXPECTED_TOOLS = [
    "read_session_log",
    "create_knowledge",
    "record_episode",
    "create_intention",
    "mark_log_processed",
    "write_dream_log",
]


@dataclass
class Subscriber:
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    headers: httpx.Headers | None = None
    connected: asyncio.Event = field(default_factory=asyncio.Event)
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    async def until(self, kind: str, count: int = 1) -> None:
        """Wait until ``count`` events of ``kind`` arrived (capped for a hang: a loaded
        machine is slow, not broken)."""
        async with asyncio.timeout(120):
            while True:
                self.changed.clear()
                if sum(name == kind for name, _ in self.events) >= count:
                    return
                await self.changed.wait()


async def _read(client: httpx.AsyncClient, subscriber: Subscriber) -> None:
    async with client.stream("GET", "/v1/sleep/events") as response:
        assert response.status_code == 200
        subscriber.headers = response.headers
        kind: str | None = None
        data: list[str] = []
        async for line in response.aiter_lines():
            if line == ": connected":
                subscriber.connected.set()
            elif line.startswith("event: "):
                kind = line.removeprefix("event: ")
            elif line.startswith("data: "):
                data.append(line.removeprefix("data: "))
            elif line == "" and kind is not None:
                payload = json.loads("\n".join(data))
                assert payload["type"] == kind
                subscriber.events.append((kind, payload))
                subscriber.changed.set()
                kind, data = None, []


@contextlib.asynccontextmanager
async def subscribed(client: httpx.AsyncClient) -> AsyncIterator[Subscriber]:
    """Listen to the events until the block ends (then hang up); yields once subscribed."""
    subscriber = Subscriber()
    reader = asyncio.create_task(_read(client, subscriber))
    connected = asyncio.create_task(subscriber.connected.wait())
    try:
        await asyncio.wait([reader, connected], timeout=120, return_when=asyncio.FIRST_COMPLETED)
        if reader.done():
            reader.result()  # raise what went wrong
        assert subscriber.connected.is_set(), "the event stream did not open"
        yield subscriber
    finally:
        connected.cancel()
        reader.cancel()
        # A stream the daemon cut (at shutdown) ends in a protocol error: that is hanging up.
        with contextlib.suppress(asyncio.CancelledError, httpx.RemoteProtocolError):
            await reader


def errors_logged(daemon: Daemon) -> list[str]:
    lines = []
    for line in daemon.log().splitlines():
        with contextlib.suppress(ValueError):
            if json.loads(line).get("level") in ("error", "critical"):
                lines.append(line)
    return lines


async def test_a_dream_is_streamed_to_every_subscriber_in_order(tmp_path: Path) -> None:
    with (
        llm_server(consolidating) as llm,
        start_daemon(tmp_path / "data", *backend_env("callback", llm.url)) as daemon,
    ):
        async with daemon.async_client(timeout=30) as client:
            log = await converse(client)
            async with subscribed(client) as first, subscribed(client) as second:
                result = await dream(client)
                await first.until("finished")
                await second.until("finished")
            assert (await client.get("/v1/health")).status_code == 200

    assert result["status"] == "deep_sleep"
    assert first.headers is not None
    assert first.headers["content-type"].startswith("text/event-stream")
    assert first.events == second.events  # fanned out alike
    kinds = [kind for kind, _ in first.events]
    assert kinds == ["started", *["tool"] * len(EXPECTED_TOOLS), "finished"]
    started, *tools, finished = (payload for _, payload in first.events)
    assert started["trigger"] == "test"
    assert started["at"] == result["started"]
    assert [tool["name"] for tool in tools] == EXPECTED_TOOLS
    assert all(tool["ok"] is True for tool in tools)
    assert json.loads(tools[0]["args"]) == {"log": log}  # the arguments, in brief
    assert json.loads(tools[4]["args"]) == {"log": log}
    assert finished == {"type": "finished", "status": "deep_sleep", "reason": "done"}
    assert errors_logged(daemon) == []


async def test_subscribers_that_hang_up_break_nothing(tmp_path: Path) -> None:
    script = "hang after reading"

    def answer(messages: list[dict[str, Any]], logs: list[str]) -> Answer:
        if script == "consolidate":
            return consolidating(messages, logs)
        if not any(m.get("role") == "tool" for m in messages):
            return tool_call("read_session_log", log=logs[0])
        return HANG

    with (
        llm_server(answer) as llm,
        start_daemon(tmp_path / "data", *backend_env("callback", llm.url)) as daemon,
    ):
        async with daemon.async_client(timeout=30) as client:
            await converse(client)
            async with subscribed(client):
                pass  # hangs up before anything happens
            async with subscribed(client) as leaving:
                assert (await client.post("/v1/sleep/run", json={"trigger": "t"})).json()["started"]
                await leaving.until("tool")  # the dream is now waiting for the LLM
            # That subscriber is gone mid-dream; the dream goes on until cancelled.
            assert (await client.get("/v1/sleep/status")).json()["sleeping"] is True
            assert (await client.post("/v1/sleep/cancel")).json() == {"cancelled": True}
            status = (await client.get("/v1/sleep/status")).json()
            assert status["lastDream"]["status"] == "interrupted"

            script = "consolidate"
            async with subscribed(client) as staying:
                result = await dream(client)
                await staying.until("finished")
            assert (await client.get("/v1/health")).status_code == 200

    assert [kind for kind, _ in leaving.events] == ["started", "tool"]
    assert result["status"] == "deep_sleep" and len(result["processed"]) == 1
    assert [kind for kind, _ in staying.events] == ["started", *["tool"] * 6, "finished"]
    assert staying.events[-1][1]["status"] == "deep_sleep"
    assert errors_logged(daemon) == []


async def test_the_daemon_still_stops_with_a_subscriber_connected(tmp_path: Path) -> None:
    """An event stream never ends by itself, so on SIGTERM uvicorn waits for it up to
    ``shutdown_timeout_s`` and then cuts it: slower, but the daemon exits cleanly."""
    with start_daemon(tmp_path / "data", ("SOMNID_SHUTDOWN_TIMEOUT_S", "1")) as daemon:
        async with (
            daemon.async_client(timeout=30) as client,
            subscribed(client),
        ):
            daemon.process.send_signal(signal.SIGTERM)
            status = await asyncio.to_thread(daemon.process.wait, 120)
        assert status == 0  # the stream never ends by itself: the 1 s budget cut it
    assert "Application shutdown complete" in daemon.log()


def test_an_open_event_stream_does_not_hold_shutdown(tmp_path: Path) -> None:
    import threading

    # A budget far longer than the stop may take: a stream that held shutdown would hold
    # it past the stop's cap (never a guessed figure a loaded machine may miss).
    with start_daemon(tmp_path / "data", ("SOMNID_SHUTDOWN_TIMEOUT_S", "300")) as daemon:
        stream_open = threading.Event()
        stream_ended = threading.Event()

        def listen() -> None:
            with (
                daemon.client(timeout=600) as client,
                client.stream("GET", "/v1/sleep/events") as response,
            ):
                stream_open.set()
                for _ in response.iter_lines():
                    pass
            stream_ended.set()

        listener = threading.Thread(target=listen, daemon=True)
        listener.start()
        assert stream_open.wait(120)
        assert daemon.stop(timeout=120) == 0
        assert stream_ended.wait(120)
        assert "graceful shutdown exceeded" not in daemon.log()
