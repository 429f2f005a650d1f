"""When somnid sleeps: idle time, the max interval, pending logs, quiet windows, preemption."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from somnid.config import Settings
from somnid.dream.quiet import QuietWindow
from somnid.errors import InvalidInput
from somnid.memory.clock import ManualClock
from somnid.runtime import Runtime
from somnid.sessions.records import Message
from somnid.tools.memory_tools import ToolContext
from tests.dream.fakes import ScriptedLLM, say

START = dt.datetime(2026, 10, 3, 22, 0, tzinfo=dt.UTC)
MINUTE = dt.timedelta(minutes=1)


@pytest.fixture
async def runtime(tmp_path: Path) -> AsyncIterator[Runtime]:
    settings = Settings(
        data_dir=tmp_path / "data",
        timezone="UTC",
        embed={"provider": "off"},
        dream={
            "mode": "agentic",
            "idle_ms": 15 * 60_000,
            "max_interval_ms": 6 * 3_600_000,
            "quiet_windows": ["08:00-09:00"],
        },
    )
    async with Runtime.open(settings, clock=ManualClock(START)) as rt:
        yield rt


def clock_of(rt: Runtime) -> ManualClock:
    assert isinstance(rt.clock, ManualClock)
    return rt.clock


async def test_idle_time_pending_logs_and_running_agents(runtime: Runtime) -> None:
    scheduler, clock = runtime.scheduler, clock_of(runtime)
    await scheduler.on_report("host", "agent-1", "running")
    assert (await scheduler.eligibility()).reason == "an agent is running"
    await runtime.sessions.append_messages("s", [Message(role="user", text="hello, remember this")])
    await scheduler.on_report("host", "agent-1", "idle")
    verdict = await scheduler.eligibility()
    assert not verdict.eligible and verdict.next_eligible == START + 15 * MINUTE
    clock.advance(14 * MINUTE)
    assert not (await scheduler.eligibility()).eligible
    clock.advance(MINUTE)
    assert (await scheduler.eligibility()).eligible  # the open log counts; it is closed on start
    await scheduler.on_report("host", "agent-2", "running")
    assert not (await scheduler.eligibility()).eligible


async def test_capture_and_tool_calls_keep_the_agents_awake_without_reports(
    runtime: Runtime,
) -> None:
    """A time probe: only reports counted, so a conversation captured (or an MCP client's
    tools called) every few minutes was dreamed at every tick past idle_ms, its log cut in
    pieces (a reply in one log, its question in another)."""
    scheduler, clock = runtime.scheduler, clock_of(runtime)
    runtime.dreamer.backend = ScriptedLLM([say("nothing to keep")] * 20)
    for turn in range(8):  # a turn every 9 minutes for 72 minutes, ticks every minute
        if turn % 2:
            await runtime.tools.call("recall_memories", {"query": "kites"}, ToolContext())
        else:
            said = [Message(role="user", text=f"turn {turn} of a long chat")]
            await runtime.sessions.append_messages("live", said)
        for _ in range(9):
            clock.advance(MINUTE)
            await scheduler.tick()
    assert runtime.dreamer.last is None
    assert [p.open for p in await runtime.sessions.pending_logs()] == [True]  # one log, whole
    verdict = await scheduler.eligibility()
    assert verdict.next_eligible == clock.now() + 6 * MINUTE  # 15 after the last tool call
    clock.advance(6 * MINUTE)
    await scheduler.tick()
    assert runtime.dreamer.last is not None and runtime.dreamer.last.trigger == "idle"


async def test_a_tick_dreams_and_closes_open_logs_only_then(runtime: Runtime) -> None:
    scheduler, clock = runtime.scheduler, clock_of(runtime)
    await runtime.sessions.append_messages("s", [Message(role="user", text="a thing to keep")])
    clock.advance(10 * MINUTE)
    await scheduler.tick()
    assert [p.open for p in await runtime.sessions.pending_logs()] == [True]  # too early: untouched
    clock.advance(6 * MINUTE)
    llm = ScriptedLLM([say("nothing to keep")])
    runtime.dreamer.backend = llm
    await scheduler.tick()
    assert runtime.dreamer.last is not None and runtime.dreamer.last.trigger == "idle"
    assert [p.open for p in await runtime.sessions.pending_logs()] == [
        False
    ]  # closed for the dream
    # No progress (the model processed nothing): the next try waits another idle_ms, and
    # each further fruitless one twice the wait before (a review: a log a filter refuses,
    # alone, was sent every 15 minutes for ever), up to max_interval_ms.
    verdict = await scheduler.eligibility()
    assert not verdict.eligible and verdict.next_eligible == clock.now() + 15 * MINUTE
    for wait in (30, 60, 120, 240, 360, 360):
        clock.advance(verdict.next_eligible - clock.now())
        runtime.dreamer.backend = ScriptedLLM([say("nothing to keep")])
        await scheduler.tick()
        verdict = await scheduler.eligibility()
        assert verdict.next_eligible == clock.now() + wait * MINUTE, wait


async def test_reports_expire_and_the_max_interval(runtime: Runtime) -> None:
    scheduler, clock = runtime.scheduler, clock_of(runtime)
    await scheduler.on_report("dead-host", "agent", "running")
    clock.advance(31 * MINUTE)  # the host went silent: its report expired
    assert (await scheduler.eligibility()).reason != "an agent is running"
    scheduler.last_dream = clock.now()
    await runtime.sessions.append_messages("s", [Message(role="user", text="x y z, remember")])
    # A busy day: the agent never rests 15 minutes, yet after 6 h it sleeps in a short pause.
    for _ in range(36):
        await scheduler.on_report("host", "agent", "running")
        clock.advance(9 * MINUTE)
        await scheduler.on_report("host", "agent", "idle")
        clock.advance(MINUTE)
        verdict = await scheduler.eligibility()
        if verdict.eligible:
            break
    assert verdict.eligible
    assert clock.now() - scheduler.last_dream >= dt.timedelta(hours=6)


async def test_quiet_windows(runtime: Runtime) -> None:
    clock = clock_of(runtime)
    clock.set(dt.datetime(2026, 10, 4, 8, 30, tzinfo=dt.UTC))
    assert (await runtime.scheduler.eligibility()).reason == "quiet window"
    window = QuietWindow.parse("22:00-07:00 Asia/Shanghai")
    assert window.contains(dt.datetime(2026, 10, 4, 15, 0, tzinfo=dt.UTC))  # 23:00 in Shanghai
    assert not window.contains(dt.datetime(2026, 10, 4, 1, 0, tzinfo=dt.UTC))  # 09:00 there
    with pytest.raises(InvalidInput):
        QuietWindow.parse("tonight")
    with pytest.raises(InvalidInput):
        QuietWindow.parse("09:00-18:00 Mars/Olympus")


async def test_a_running_agent_cancels_the_dream(runtime: Runtime) -> None:
    await runtime.sessions.append_messages("s", [Message(role="user", text="keep this one")])
    llm = ScriptedLLM(["hang"])
    runtime.dreamer.backend = llm
    runtime.dreamer.start("idle")
    await asyncio.wait_for(llm.reached(1), 120)
    assert await runtime.scheduler.on_report("host", "agent", "running")
    assert runtime.dreamer.last is not None and runtime.dreamer.last.status == "interrupted"
    assert llm.cancelled.is_set()


async def test_a_dream_cancelled_before_it_began_is_interrupted_not_an_error(
    runtime: Runtime,
) -> None:
    # A probe: a cancel right after the start reached the task before its try: the
    # CancelledError escaped, and POST /v1/sleep/run {"wait": true} answered 503 "shutting
    # down" on a running daemon.
    started, task = runtime.dreamer.start("manual")
    assert started and task is not None
    assert await runtime.dreamer.cancel()
    result = await runtime.dreamer.outcome(task, "manual")
    assert (result.status, result.reason, result.trigger) == ("interrupted", "cancelled", "manual")
    again = await runtime.dreamer.run("manual")  # the next one runs as ever
    assert again.status != "interrupted"
