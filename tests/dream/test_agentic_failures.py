"""The tool loop (``dream.mode = "agentic"``) against transcripts of what small local models did
in issue 12. Each of these ran wrong before: a log archived unseen, a refused call repeated
until the cap, a cut or odd reply taken for "done", a profile written into the wrong user,
journals counting nothing, the last journal's front-matter fed to the next dream."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from somnid.config import Settings
from somnid.dream.ledger import Ledger
from somnid.dream.llm.base import ChatOptions
from somnid.dream.loop import MAX_CALLS_PER_REPLY, ReactLoop
from somnid.memory.clock import ManualClock
from somnid.runtime import Runtime
from somnid.sessions.records import Message
from somnid.store import frontmatter
from tests.dream.fakes import AGENTIC, ScriptedLLM, Step, call, calls, cut, say

START = dt.datetime(2026, 10, 3, 22, 0, tzinfo=dt.UTC)
TALK = (
    "Caroline: I went to the LGBTQ support group yesterday and it was so powerful.",
    "Melanie: That sounds wonderful, what did you learn there?",
    "Caroline: That I want to work in counselling, helping people like me.",
)


@pytest.fixture
async def runtime(tmp_path: Path) -> AsyncIterator[Runtime]:
    settings = Settings(
        data_dir=tmp_path / "data", timezone="UTC", embed={"provider": "off"}, dream=AGENTIC
    )
    async with Runtime.open(settings, clock=ManualClock(START)) as rt:
        yield rt


async def conversation(rt: Runtime, session: str, *lines: str, user: str | None = None) -> str:
    messages = [Message("user" if n % 2 == 0 else "agent", t, user_id=user) for n, t in
                enumerate(lines or TALK)]  # fmt: skip
    await rt.sessions.append_messages(session, messages)
    closed = await rt.sessions.close(session)
    assert closed.path is not None
    return Path(closed.path).stem


async def dream(rt: Runtime, llm: ScriptedLLM) -> tuple[Any, list[dict[str, Any]]]:
    """Run one dream with ``llm``; its result and every event it published."""
    rt.dreamer.backend = llm
    async with rt.dreamer.events.subscribe() as queue:
        result = await rt.dreamer.run("test")
        events = []
        while not queue.empty():
            events.append(queue.get_nowait())
    return result, events


def pending(rt: Runtime) -> list[str]:
    return sorted(p.name.removesuffix(".md") for p in rt.layout.session_log_dir.glob("*.md"))


def told(llm: ScriptedLLM, request: int) -> str:
    """What the model was last told before its ``request``-th reply (0-based)."""
    return str(llm.requests[request][-1]["content"])


# ---------------------------------------------------------------------- read, then mark


async def test_a_mark_in_the_same_reply_as_the_read_is_refused(runtime: Runtime) -> None:
    """Two of three logs were archived this way, unseen, with invented memories."""
    log = await conversation(runtime, "c")
    llm = ScriptedLLM([
        calls(("read_session_log", {"log": log}),
              ("record_episode", {"what": "A person did a task", "source": log}),
              ("mark_log_processed", {"log": log})),
        say("All done."),
        say("Done, really."),
    ])  # fmt: skip
    result, events = await dream(runtime, llm)
    replies = [m["content"] for m in llm.requests[1] if m.get("role") == "tool"]
    assert "support group" in replies[0]  # the read ran
    assert replies[2].startswith(f"error: log {log} is read in this same reply")
    assert pending(runtime) == [log] and result.processed == []
    assert (result.status, result.reason.split(":")[0]) == ("interrupted", "llm_unrecognised")
    assert {"type": "tool", "name": "mark_log_processed", "ok": False} == {
        k: v for k, v in events[3].items() if k in ("type", "name", "ok")
    }


async def test_the_mark_that_follows_the_read_archives_the_log(runtime: Runtime) -> None:
    log = await conversation(runtime, "c")
    llm = ScriptedLLM([
        calls(("read_session_log", {"log": log}), ("mark_log_processed", {"log": log})),
        call("mark_log_processed", log=log),
        say("1 log processed."),
    ])  # fmt: skip
    result, _ = await dream(runtime, llm)
    assert (result.status, result.reason, result.processed) == ("deep_sleep", "done", [log])
    # the model had the log's text in front of it when it marked the log
    assert any("support group" in str(m["content"]) for m in llm.requests[1])


async def test_one_reply_runs_a_bounded_number_of_calls(runtime: Runtime) -> None:
    """A probe: one reply of 3,000 create_knowledge calls made 3,000 entries, past every
    budget (the budgets count replies and tokens, not calls)."""
    log = await conversation(runtime, "c")
    flood = [
        ("create_knowledge", {"name": f"flood-{n}", "entry_type": "fact",
                              "description": f"Flood item {n}.",
                              "body": f"Flood item {n}."})
        for n in range(MAX_CALLS_PER_REPLY + 40)
    ]  # fmt: skip
    llm = ScriptedLLM([calls(*flood), say("Done.")])
    await dream(runtime, llm)
    made = list((runtime.layout.root / "memory/knowledge").glob("flood-*"))
    assert len(made) == MAX_CALLS_PER_REPLY
    replies = [m for m in llm.requests[1] if m.get("role") == "tool"]
    assert len(replies) == MAX_CALLS_PER_REPLY  # one answer per call the reply still holds
    assert told(llm, 1).startswith(f"error: only the first {MAX_CALLS_PER_REPLY} tool calls")
    assert pending(runtime) == [log]


async def test_a_read_stubbed_before_the_model_saw_it_cannot_be_marked(runtime: Runtime) -> None:
    log = await conversation(runtime, "c")
    llm = ScriptedLLM([
        calls(("read_session_log", {"log": log}), *[("list_items", {})] * 6),
        call("mark_log_processed", log=log),
        call("read_session_log", log=log),
        call("mark_log_processed", log=log),
    ])  # fmt: skip
    tools = runtime.dreamer.tools
    tools.bind(Ledger())
    loop = ReactLoop(llm, tools.specs(), tools.call, max_iterations=10, token_budget=10**6,
                     context_budget=50)  # fmt: skip
    outcome = await loop.run([{"role": "system", "content": "s"}, {"role": "user", "content": "u"}])
    assert outcome.reason == "done"
    assert told(llm, 2).startswith(f"error: the text of page(s) 1 of log {log} was left out")
    assert tools.ledger.processed_logs == [log]  # once read again and seen


async def test_a_log_the_tools_say_to_leave_is_not_insisted_on(runtime: Runtime) -> None:
    """A log that a session writes to again while the dream runs cannot be marked; the
    tool says to leave it, and the dream ends done instead of insisting until it gives up
    (a stress run saw a dream interrupted so)."""
    closed = await conversation(runtime, "c")
    await runtime.sessions.append_messages("d", [Message("user", "still talking here")])
    [still_open] = [p.path.stem for p in await runtime.sessions.pending_logs() if p.open]
    llm = ScriptedLLM([
        call("read_session_log", log=closed),
        call("mark_log_processed", log=closed),
        call("read_session_log", log=still_open),
        call("mark_log_processed", log=still_open),
        say("Both handled."),
    ])  # fmt: skip
    tools = runtime.dreamer.tools
    ledger = Ledger()
    tools.bind(ledger)
    loop = ReactLoop(llm, tools.specs(), tools.call, max_iterations=10, token_budget=10**6,
                     unfinished=lambda: ledger.unfinished([closed, still_open]))  # fmt: skip
    outcome = await loop.run([{"role": "system", "content": "s"}, {"role": "user", "content": "u"}])
    assert told(llm, 4).startswith(f"error: log {still_open} is still open")
    assert outcome.reason == "done", outcome
    assert ledger.processed_logs == [closed] and ledger.left_logs == {still_open}


# ---------------------------------------------------------------------- stuck models


async def test_a_refused_call_repeated_stops_the_dream_as_stuck(runtime: Runtime) -> None:
    """The 0.5B used the trigger text as a tool name, 5 and 15 times in a row."""
    await conversation(runtime, "c")
    llm = ScriptedLLM([call("test", log="processed_logs")] * 15)
    result, events = await dream(runtime, llm)
    assert result.status == "interrupted" and result.reason.startswith("llm_stuck: ")
    assert "unknown tool 'test'" in result.reason
    assert (len(llm.requests), result.llm_calls, result.tool_calls) == (3, 3, 3)
    assert [e["ok"] for e in events if e["type"] == "tool"] == [False] * 3
    assert "the closest tool is" in told(llm, 1)
    journal = frontmatter.parse((runtime.layout.root / str(result.journal)).read_text()).meta
    assert journal["status"] == "interrupted" and str(journal["reason"]).startswith("llm_stuck")


async def test_marking_an_unread_log_over_and_over_stops_at_the_third(runtime: Runtime) -> None:
    """The 1.5B called mark_log_processed on an unread log 23 times (106k tokens)."""
    log = await conversation(runtime, "c")
    llm = ScriptedLLM([call("mark_log_processed", log=log)] * 23)
    result, _ = await dream(runtime, llm)
    assert result.status == "interrupted" and result.reason.startswith("llm_stuck")
    assert len(llm.requests) == 3 and pending(runtime) == [log]
    assert "read log" in told(llm, 1)


async def test_read_only_successes_do_not_hide_a_stuck_mark(runtime: Runtime) -> None:
    log = await conversation(runtime, "c")
    again = calls(("read_session_log", {"log": log}), ("mark_log_processed", {"log": log}))
    result, _ = await dream(runtime, ScriptedLLM([again] * 10))
    assert result.reason.startswith("llm_stuck") and pending(runtime) == [log]


# ---------------------------------------------------------------------- odd replies


async def test_a_reply_cut_by_the_token_limit_is_told_once(runtime: Runtime) -> None:
    log = await conversation(runtime, "c")
    llm = ScriptedLLM([
        cut('{"name": "read_session_log", "arguments": {"lo'),
        call("read_session_log", log=log),
        call("mark_log_processed", log=log),
        say("1 log processed."),
    ])  # fmt: skip
    result, events = await dream(runtime, llm)
    assert (result.status, result.processed) == ("deep_sleep", [log])
    assert "cut off by the length limit" in told(llm, 1)
    assert {"type": "rejected", "reason": "llm_truncated"}.items() <= events[1].items()


async def test_two_cut_replies_in_a_row_interrupt(runtime: Runtime) -> None:
    await conversation(runtime, "c")
    result, _ = await dream(runtime, ScriptedLLM([cut("I will now"), cut("I will now")]))
    assert result.status == "interrupted" and result.reason.startswith("llm_truncated")
    assert result.llm_calls == 2


async def test_a_reply_without_a_call_is_no_done_while_logs_wait(runtime: Runtime) -> None:
    """ "Done" with 0 logs processed was reported as a deep sleep."""
    log = await conversation(runtime, "c")
    llm = ScriptedLLM([say("I have consolidated everything."), say("Yes, all done.")])
    result, _ = await dream(runtime, llm)
    assert result.status == "interrupted" and result.reason.startswith("llm_unrecognised")
    assert f"not processed yet: {log}" in told(llm, 1)


@pytest.mark.parametrize(
    "written",
    [
        'read_session_log({{"log": "{log}"}})',
        "Let me start by reading it.\n"
        '{{"name": "read_session_log", "arguments": {{"log": "{log}"}}}}'
        "\nAfter that I will store what matters.",
    ],
)
async def test_calls_written_in_text_are_run(runtime: Runtime, written: str) -> None:
    log = await conversation(runtime, "c")
    llm = ScriptedLLM([
        say(written.format(log=log)),
        say(f'mark_log_processed({{"log": "{log}"}})'),
        say("1 log processed."),
    ])  # fmt: skip
    result, _ = await dream(runtime, llm)
    assert (result.status, result.processed) == ("deep_sleep", [log])
    assert result.tool_calls == 2


# ---------------------------------------------------------------------- what gets written


async def test_a_profile_goes_only_to_the_user_of_the_log(runtime: Runtime) -> None:
    """The agent's self-description went into user default for a log of caroline."""
    log = await conversation(runtime, "c", user="caroline")
    llm = ScriptedLLM([
        call("read_session_log", log=log),
        call("update_about_user", user_id="default", content="I am a memory consolidation agent."),
        call("update_about_user", user_id="caroline", content="Wants to work in counselling."),
        call("mark_log_processed", log=log),
        say("done"),
    ])  # fmt: skip
    result, _ = await dream(runtime, llm)
    assert result.status == "deep_sleep"
    assert told(llm, 2).startswith("error: user 'default' is not the user of a log read")
    assert not (runtime.layout.root / "memory/users/default/about_user.md").exists()
    profile = (runtime.layout.root / "memory/users/caroline/about_user.md").read_text()
    assert "counselling" in profile


async def test_an_episode_is_recorded_once(runtime: Runtime) -> None:
    """Six identical episodes came out of one log."""
    log = await conversation(runtime, "c")
    episode = {"what": "Caroline went to a support group", "source": log,
               "when": "2026-10-02T18:00"}  # fmt: skip
    near = {**episode, "what": "Caroline went to the support group."}
    llm = ScriptedLLM([
        call("read_session_log", log=log),
        *[call("record_episode", **episode)] * 2,
        call("record_episode", **near),
        call("mark_log_processed", log=log),
        say("done"),
    ])  # fmt: skip
    result, _ = await dream(runtime, llm)
    assert result.created == 1
    assert told(llm, 3).startswith("error: this dream recorded that episode from log")
    assert told(llm, 4).startswith("error: this dream recorded that episode")
    # another dream, another log, the same event at the same time: still one episode
    other = await conversation(runtime, "d")
    llm = ScriptedLLM([call("read_session_log", log=other), call("record_episode", **{
        **episode, "source": other})])  # fmt: skip
    await dream(runtime, llm)
    assert "records that already, at the same time" in told(llm, 2)
    assert len(list((runtime.layout.root / "memory/episodes").glob("ep-*"))) == 1


async def test_the_tool_schemas_hold_no_example_to_copy(runtime: Runtime) -> None:
    """What was stored was invented from the docstrings' examples."""
    shown = json.dumps(runtime.dreamer.tools.specs(), ensure_ascii=False)
    for example in ("Alice", "kubectl", "deploy-window", "release-checklist", "2026-", "e.g."):
        assert example not in shown, example
    assert "<log name>" in shown and "<person>" in shown


# ---------------------------------------------------------------------- honest accounts


async def test_the_journal_counts_the_tool_calls_and_the_options_are_sent(
    runtime: Runtime,
) -> None:
    log = await conversation(runtime, "c")
    llm = ScriptedLLM(
        [call("read_session_log", log=log), call("list_items"),
         call("mark_log_processed", log=log), say("ok")]
    )  # fmt: skip
    result, _ = await dream(runtime, llm)
    meta = frontmatter.parse((runtime.layout.root / str(result.journal)).read_text()).meta
    assert (meta["tool_calls"], meta["llm_calls"], meta["iterations"]) == (3, 4, 4)
    assert (result.tool_calls, result.llm_calls, result.iterations) == (3, 4, 4)
    sent = ChatOptions(max_tokens=1024, temperature=0.0, frequency_penalty=0.3)
    assert llm.options == [sent] * 4


async def test_an_interrupted_dream_counts_its_rounds(runtime: Runtime) -> None:
    log = await conversation(runtime, "c")
    llm = ScriptedLLM([call("read_session_log", log=log), call("list_items"), "hang"])
    started, task = runtime.dreamer.start("test")
    runtime.dreamer.backend = llm
    assert started and task is not None
    await asyncio.wait_for(llm.reached(3), 120)
    await runtime.dreamer.cancel()
    result = task.result()
    assert result.status == "interrupted" and result.iterations == 3
    assert (result.tool_calls, result.llm_calls) == (2, 2)
    meta = frontmatter.parse((runtime.layout.root / str(result.journal)).read_text()).meta
    assert (meta["iterations"], meta["tool_calls"]) == (3, 2)


async def test_the_next_dream_sees_a_summary_never_the_journal(runtime: Runtime) -> None:
    """The 0.5B built tool calls from the last journal's front-matter."""
    first = await conversation(runtime, "a")
    steps: list[Step | str] = [
        call("read_session_log", log=first),
        call("mark_log_processed", log=first),
        say("ok"),
    ]
    await dream(runtime, ScriptedLLM(steps))
    await conversation(runtime, "b", "Another day, another talk about the garden.")
    llm = ScriptedLLM([say("nothing")])
    await dream(runtime, llm)
    task = str(llm.requests[0][1]["content"])
    assert "The last dream: 2026-10-03 22:00, ended deep_sleep, processed 1 log(s)" in task
    for leak in ("---", "dream_id", "processed_logs", "tool_calls", first, "## "):
        assert leak not in task, leak


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_the_llm_is_unavailable_when_nothing_listens(tmp_path: Path) -> None:
    """/v1/sleep/status said ok while nothing listened."""
    openai = {"base_url": f"http://127.0.0.1:{closed_port()}/v1", "model": "m"}
    settings = Settings(data_dir=tmp_path / "data", timezone="UTC", embed={"provider": "off"},
                        dream={**AGENTIC, "llm": "openai", "openai": openai})  # fmt: skip
    async with Runtime.open(settings, clock=ManualClock(START)) as rt:
        status, detail = await rt.dreamer.probe_llm()
        assert status == "unavailable" and "ConnectError" in str(detail), detail
        await conversation(rt, "c")
        result = await rt.dreamer.run("test")
        assert result.status == "maintenance" and result.reason.startswith("no_llm")
