"""The whole asleep half through the real daemon: a host answers over the websocket bridge."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import websockets

from somnid.store import frontmatter
from somnid.store.atomic import TEMP_PREFIX
from tests.daemon import Daemon, start_daemon
from tests.dream.fakes import tea_steps, tool_call

Script = Callable[[list[dict[str, Any]], list[str]], dict[str, Any] | None]


@contextlib.asynccontextmanager
async def host(daemon: Daemon, answer: Script) -> AsyncIterator[list[dict[str, Any]]]:
    """A fake harness: answers llm.chat frames; ``answer`` returning None means hang."""
    seen: list[dict[str, Any]] = []
    url = daemon.base_url.replace("http://", "ws://") + "/v1/llm/bridge"
    async with websockets.connect(url, max_size=None, additional_headers=daemon.headers) as socket:
        await socket.send(json.dumps({"type": "hello", "host": "test", "model": "scripted"}))

        async def serve() -> None:
            async for raw in socket:
                frame = json.loads(raw)
                seen.append(frame)
                if frame["type"] != "llm.chat":
                    continue
                logs = re.findall(r"^- (\S+)$", frame["messages"][1]["content"], re.MULTILINE)
                message = answer(frame["messages"], logs)
                if message is None:
                    continue  # hang: the dream waits until cancelled
                usage = {"prompt_tokens": 50, "completion_tokens": 10}
                await socket.send(
                    json.dumps(
                        {
                            "type": "llm.result",
                            "id": frame["id"],
                            "message": message,
                            "usage": usage,
                        }
                    )
                )

        task = asyncio.create_task(serve())
        try:
            yield seen
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, websockets.ConnectionClosed):
                await task


async def bridged(client: Any) -> bool:
    return bool((await client.get("/v1/sleep/status")).json()["llm"]["status"] == "ok")


async def until(check: Callable[[], Awaitable[bool]], what: str) -> None:
    """Wait for ``check``, capped at 120 s for a hang (a loaded machine is slow, not broken)."""
    try:
        async with asyncio.timeout(120):
            while True:
                if await check():
                    return
                await asyncio.sleep(0.02)  # polling the daemon: no event to wait on
    except TimeoutError:
        raise AssertionError(what) from None


def consolidating(messages: list[dict[str, Any]], logs: list[str]) -> dict[str, Any] | None:
    done = sum(1 for m in messages if m.get("role") == "tool")
    log = logs[0]
    steps = tea_steps(log)
    return steps[done] if done < len(steps) else {"role": "assistant", "content": "1 log done."}


async def test_a_conversation_becomes_memory_through_the_bridge(tmp_path: Path) -> None:
    with start_daemon(tmp_path / "data", ("SOMNID_DREAM__MODE", "agentic")) as daemon:
        async with daemon.async_client(timeout=30) as client:
            turns = [{"role": "user", "text": "I only drink green tea, no sugar please."},
                     {"role": "agent", "text": "Green tea without sugar, noted."}]  # fmt: skip
            assert (
                await client.post("/v1/sessions/t1/messages", json={"messages": turns})
            ).status_code == 200
            async with host(daemon, consolidating):
                await until(lambda: bridged(client), "the host never connected")
                run = (
                    await client.post("/v1/sleep/run", json={"trigger": "test", "wait": True})
                ).json()
            result = run["result"]
            assert result["status"] == "deep_sleep", result
            assert result["created"] == 3 and len(result["processed"]) == 1
            assert result["tokens"]["total"] == 6 * 60
            root = daemon.data_dir
            assert (
                "Green tea, no sugar."
                in (root / "memory/knowledge/tea-preference/SKILL.md").read_text()
            )
            assert list((root / "memory/intentions").glob("pi-*/INTENT.md"))
            journal = (root / result["journal"]).read_text()
            assert "tea-preference" in journal
            health = (await client.get("/v1/health")).json()
            assert health["pendingLogs"] == 0


async def test_a_user_turn_stops_the_dream_within_a_second(tmp_path: Path) -> None:
    with start_daemon(tmp_path / "data", ("SOMNID_DREAM__MODE", "agentic")) as daemon:
        async with daemon.async_client(timeout=30) as client:
            turns = [{"role": "user", "text": "The build server is ci-7.internal, port 8443."}]
            await client.post("/v1/sessions/t2/messages", json={"messages": turns})

            def slow(messages: list[dict[str, Any]], logs: list[str]) -> dict[str, Any] | None:
                if not any(m.get("role") == "tool" for m in messages):
                    return tool_call("read_session_log", log=logs[0])
                return None  # then think forever

            async with host(daemon, slow) as frames:
                await until(lambda: bridged(client), "the host never connected")
                assert (await client.post("/v1/sleep/run", json={"trigger": "test"})).json()[
                    "started"
                ]

                async def thinking() -> bool:
                    return sum(bool(f["type"] == "llm.chat") for f in frames) >= 2

                await until(thinking, "the dream never reached its second LLM call")
                # The answer says the dream was interrupted: it does not wait for the LLM
                # call that never ends (how fast is a figure for bench/, not a test).
                report = {"hostId": "h", "agentId": "a", "status": "running"}
                assert (await client.post("/v1/activity", json=report)).json() == {
                    "interrupted": True
                }

                async def cancelled() -> bool:
                    return any(bool(f["type"] == "llm.cancel") for f in frames)

                await until(cancelled, "the host was never told to cancel")
            status = (await client.get("/v1/sleep/status")).json()
            assert status["lastDream"]["status"] == "interrupted"
            assert status["pendingLogs"] == 1  # the log waits for the next dream
        root = daemon.data_dir
        assert list(root.rglob(f"{TEMP_PREFIX}*")) == []
        for path in root.rglob("*.md"):
            frontmatter.parse(path.read_text())  # nothing half-written
