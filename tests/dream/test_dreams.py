"""Dreams with a scripted LLM: files a person can read, a journal, interruption and resume."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from somnid.config import Settings
from somnid.dream.result import DreamResult
from somnid.memory.clock import ManualClock
from somnid.memory.kinds import Kind
from somnid.recall.reconcile import SyncReport
from somnid.recall.system import RecallSystem
from somnid.runtime import Runtime
from somnid.sessions.records import Message
from somnid.store import frontmatter
from tests.dream.fakes import AGENTIC, ScriptedLLM, call, calls, say

START = dt.datetime(2026, 10, 3, 22, 0, tzinfo=dt.UTC)


@pytest.fixture
async def runtime(tmp_path: Path) -> AsyncIterator[Runtime]:
    settings = Settings(
        data_dir=tmp_path / "data", timezone="UTC", embed={"provider": "off"}, dream=AGENTIC
    )
    async with Runtime.open(settings, clock=ManualClock(START)) as rt:
        yield rt


async def conversation(rt: Runtime, session: str, *lines: str) -> str:
    messages = [
        Message(role="user" if n % 2 == 0 else "agent", text=t) for n, t in enumerate(lines)
    ]
    await rt.sessions.append_messages(session, messages)
    closed = await rt.sessions.close(session)
    assert closed.path is not None
    return Path(closed.path).stem


def use(rt: Runtime, llm: ScriptedLLM) -> None:
    rt.dreamer.backend = llm


async def test_a_dream_consolidates_a_conversation(runtime: Runtime) -> None:
    log = await conversation(
        runtime, "chat-1",
        "Our staging deploys go through `make ship STAGE=staging`; prod needs a ticket.",
        "Noted: staging via make ship, prod needs a ticket.",
        "Remind me to renew the TLS cert before 2026-10-20.",
        "I'll remember the TLS renewal.",
    )  # fmt: skip
    llm = ScriptedLLM([
        call("review_dream_history"),
        call("read_session_log", log=log),
        call("find_similar", text="staging deploy make ship"),
        calls(
            ("create_knowledge", {"name": "staging-deploys", "entry_type": "fact",
                                  "description": "Staging deploys run make ship STAGE=staging",
                                  "body": "`make ship STAGE=staging`; production needs a ticket."}),
            ("record_episode", {"what": "Explained the deploy process and asked for a TLS reminder",
                                "outcome": "success", "salience": "mid", "source": log}),
            ("create_intention", {"what": "Renew the TLS certificate", "due": "2026-10-20",
                                  "cue": "TLS, cert", "source": log}),
        ),
        call("mark_log_processed", log=log),
        call("write_dream_log", content="One deploy fact, one episode, one reminder."),
        say("Processed 1 log: 1 knowledge entry, 1 episode, 1 intention."),
    ])  # fmt: skip
    use(runtime, llm)
    result = await runtime.dreamer.run("test")
    assert result.status == "deep_sleep", result
    assert (result.reason, result.processed, result.created) == ("done", [log], 3)
    assert result.tokens["total"] == 7 * 125
    root = runtime.layout.root
    knowledge = (root / "memory/knowledge/staging-deploys/SKILL.md").read_text()
    assert "make ship STAGE=staging" in knowledge
    episodes = list((root / "memory/episodes").glob("ep-*/SKILL.md"))
    assert len(episodes) == 1 and f"source: {log}" in episodes[0].read_text()
    intention = (root / "memory/intentions/pi-20261003-001/INTENT.md").read_text()
    assert "due: 2026-10-20" in intention and "Renew the TLS certificate" in intention
    assert not (root / f"memory/session-log/{log}.md").exists()
    archived = (root / f"memory/session-log/archived/{log}.md").read_text()
    assert "status: processed" in archived
    journal = (root / str(result.journal)).read_text()
    meta = frontmatter.parse(journal).meta
    assert meta["status"] == "deep_sleep" and list(meta["processed_logs"]) == [log]
    assert "knowledge staging-deploys" in journal and "One deploy fact" in journal
    assert "## Decay" in journal
    # the scripted model was told about the log and given the tools
    assert log in llm.requests[0][1]["content"]


async def test_the_journal_is_written_even_when_the_model_writes_none(runtime: Runtime) -> None:
    log = await conversation(runtime, "c", "hello there, let's talk about nothing much")
    use(
        runtime,
        ScriptedLLM(
            [call("read_session_log", log=log), call("mark_log_processed", log=log), say("ok")]
        ),
    )
    result = await runtime.dreamer.run("test")
    assert result.journal is not None
    text = (runtime.layout.root / result.journal).read_text()
    assert f"processed_logs:\n- {log}" in text and "## Decay" in text


async def test_bad_tool_calls_are_answered_not_fatal(runtime: Runtime) -> None:
    log = await conversation(runtime, "c", "a conversation worth nothing")
    broken = {"name": "read_session_log", "arguments": "{log: oops"}
    bad_json = {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "x", "type": "function", "function": broken}],
    }
    llm = ScriptedLLM([
        bad_json,
        call("no_such_tool"),
        call("create_knowledge", name="x"),  # missing required arguments
        say(f'{{"name": "read_session_log", "arguments": {{"log": "{log}"}}}}'),  # a call in text
        call("mark_log_processed", log=log),
        say("done"),
    ])  # fmt: skip
    use(runtime, llm)
    result = await runtime.dreamer.run("test")
    assert result.status == "deep_sleep" and result.processed == [log]
    replies = [m["content"] for m in llm.requests[-1] if m.get("role") == "tool"]
    assert "not valid JSON" in replies[0]
    assert "unknown tool" in replies[1]
    assert "invalid arguments for create_knowledge" in replies[2]


async def test_budget_and_iteration_caps(runtime: Runtime) -> None:
    await conversation(runtime, "c", "first log text here")
    runtime.dreamer.settings.token_budget = 1000
    use(runtime, ScriptedLLM([call("list_items")] * 50, usage=400))
    result = await runtime.dreamer.run("test")
    # nothing processed: no deep sleep, whatever stopped the loop
    assert (result.status, result.reason) == ("interrupted", "no_log_processed: budget")
    assert result.tokens["total"] >= 1000 and result.iterations < 10
    runtime.dreamer.settings.token_budget = 1_000_000
    runtime.dreamer.settings.max_iterations = 3
    use(runtime, ScriptedLLM([call("list_items")] * 50))
    result = await runtime.dreamer.run("test")
    assert result.reason == "no_log_processed: max_iterations" and result.iterations == 3


async def count_syncs(runtime: Runtime, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The full index syncs from now on, one ``"sync"`` each (after the start's own, which
    a loaded machine may run late)."""
    await runtime.recall.wait_idle()
    syncs: list[str] = []
    full_sync = RecallSystem.sync

    async def counted(system: RecallSystem) -> SyncReport:
        syncs.append("sync")
        return await full_sync(system)

    monkeypatch.setattr(RecallSystem, "sync", counted)
    return syncs


async def test_cancel_mid_dream_then_resume(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    syncs = await count_syncs(runtime, monkeypatch)
    first = await conversation(runtime, "a", "first conversation about apples")
    second = await conversation(runtime, "b", "second conversation about pears")
    llm = ScriptedLLM([
        call("read_session_log", log=first),
        call("create_knowledge", name="apples", entry_type="fact", description="a", body="Apples."),
        call("mark_log_processed", log=first),
        call("read_session_log", log=second),
        "hang",
    ])  # fmt: skip
    use(runtime, llm)
    started, task = runtime.dreamer.start("test")
    assert started and task is not None
    await asyncio.wait_for(llm.reached(5), 120)
    # The LLM call hangs for ever: cancel returns only because it aborts it (the cap is for
    # a hang, not a figure a loaded machine must meet).
    assert await asyncio.wait_for(runtime.dreamer.cancel(), 60)
    result = task.result()
    assert result.status == "interrupted" and result.processed == [first]
    assert llm.cancelled.is_set()  # the LLM call in flight was aborted
    assert (runtime.layout.root / "memory/knowledge/apples/SKILL.md").is_file()
    assert result.journal is not None  # an interrupted dream still leaves its journal
    # No full sync after a cut-short dream (12 s at 100k, while an agent starts): each of
    # its writes reached the index as it was made.
    assert syncs == []
    assert [h.name for h in await runtime.recall.search("apples")] == ["apples"]
    pending = [p.path.stem for p in await runtime.sessions.pending_logs()]
    assert pending == [second]
    use(
        runtime,
        ScriptedLLM(
            [
                call("read_session_log", log=second),
                call("mark_log_processed", log=second),
                say("ok"),
            ]
        ),
    )
    resumed = await runtime.dreamer.run("test")
    assert resumed.logs == [second] and resumed.processed == [second]
    assert syncs == ["sync"]  # a dream that ran to its end syncs once, as a safety net


async def test_a_lost_host_interrupts_cleanly(runtime: Runtime) -> None:
    log = await conversation(runtime, "c", "something to remember later")
    use(runtime, ScriptedLLM([call("read_session_log", log=log), "drop"]))
    result = await runtime.dreamer.run("test")
    assert result.status == "interrupted" and "went away" in result.reason
    assert [p.path.stem for p in await runtime.sessions.pending_logs()] == [log]


async def test_one_dream_at_a_time(runtime: Runtime) -> None:
    await conversation(runtime, "c", "some text to dream about")
    use(runtime, ScriptedLLM(["hang"]))
    started, _ = runtime.dreamer.start("one")
    assert started
    assert (await runtime.dreamer.run("two")).status == "skipped"
    await runtime.dreamer.cancel()


async def test_maintenance_sleep_without_an_llm(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    syncs = await count_syncs(runtime, monkeypatch)
    log = await conversation(runtime, "c", "a log that waits for a real dream")
    await runtime.memories.create(Kind.KNOWLEDGE, "old", body="fades")
    clock = runtime.clock
    assert isinstance(clock, ManualClock)
    clock.advance(dt.timedelta(days=10))
    runtime.dreamer.backend = None
    result = await runtime.dreamer.run("idle")
    assert result.status == "maintenance" and result.reason.startswith("no_llm")
    assert result.retired == 1  # 0.5 * 0.9**10 < 0.2
    assert [p.path.stem for p in await runtime.sessions.pending_logs()] == [log]
    assert result.journal is not None
    journal = (runtime.layout.root / result.journal).read_text(encoding="utf-8")
    assert "- 1 entries decayed; retired: knowledge old" in journal
    assert syncs == ["sync"]  # one full sync (12 s at 100k), not one per step


async def test_an_upkeep_sleep_without_logs_still_syncs_once(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    syncs = await count_syncs(runtime, monkeypatch)
    await runtime.memories.create(Kind.KNOWLEDGE, "old", body="fades")
    clock = runtime.clock
    assert isinstance(clock, ManualClock)
    clock.advance(dt.timedelta(days=10))
    use(runtime, ScriptedLLM([]))
    result = await runtime.dreamer.run("idle")
    assert (result.status, result.reason, result.retired) == ("skipped", "no_pending_logs", 1)
    assert syncs == ["sync"]


async def test_dreams_always_decay_once(runtime: Runtime) -> None:
    log = await conversation(runtime, "c", "text")
    await runtime.memories.create(Kind.KNOWLEDGE, "k", body="fades")
    clock = runtime.clock
    assert isinstance(clock, ManualClock)
    clock.advance(dt.timedelta(days=2))
    use(
        runtime,
        ScriptedLLM(
            [call("read_session_log", log=log), call("mark_log_processed", log=log), say("ok")]
        ),
    )
    result = await runtime.dreamer.run("test")
    assert result.decayed >= 1  # the model never called decay_all_knowledge
    entry = await runtime.memories.get(Kind.KNOWLEDGE, "k")
    assert round(entry.vitals(dt.UTC).score, 4) == 0.405


async def test_an_upkeep_pass_cut_short_still_says_what_it_did(runtime: Runtime) -> None:
    """The journal and the history commit of a dream cut short in its upkeep pass count
    the entries the pass did rewrite (they said 0 decayed, 0 retired)."""
    for number in range(6):
        await runtime.memories.create(Kind.KNOWLEDGE, f"k{number}", body=f"fact {number}")
    clock = runtime.clock
    assert isinstance(clock, ManualClock)
    clock.advance(dt.timedelta(days=2))
    runtime.dreamer.backend = None
    rewritten: list[str] = []
    dream: asyncio.Task[DreamResult] | None = None

    async def cut_after_three(entry: object, path: str) -> None:
        rewritten.append(path)
        if len(rewritten) == 3:  # an agent starts: the dream's task is cancelled
            assert dream is not None
            dream.cancel()

    runtime.memories.subscribe(cut_after_three)
    started, dream = runtime.dreamer.start("idle")
    assert started and dream is not None
    result = await dream  # the dream ends itself, interrupted
    assert result.status == "interrupted" and result.reason == "cancelled"
    assert result.decayed == 3 and result.retired == 0
    assert result.journal is not None
    journal = (runtime.layout.root / result.journal).read_text(encoding="utf-8")
    assert "- 3 entries decayed; retired: none" in journal
