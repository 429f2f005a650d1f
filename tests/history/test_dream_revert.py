"""A scripted pipeline dream is one commit with its journal's id; reverting it restores the
files as they were byte for byte, and the index follows."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from somnid.config import Settings
from somnid.errors import Conflict
from somnid.memory.clock import ManualClock
from somnid.memory.kinds import Kind
from somnid.runtime import Runtime
from tests.dream.pipeline.fakes import ScriptedJSON, by_stage, extraction
from tests.dream.pipeline.helpers import conversation
from tests.dream.pipeline.test_pipeline import BOSTON
from tests.history.helpers import git, tree_files

NOW = dt.datetime(2026, 10, 10, 22, 0, tzinfo=dt.UTC)


@pytest.fixture
async def runtime(tmp_path: Path) -> AsyncIterator[Runtime]:
    settings = Settings(
        data_dir=tmp_path / "data",
        timezone="UTC",
        embed={"provider": "off"},
        dream={"by_speaker": False},
        history={"batch_window_s": 0.1},
    )
    async with Runtime.open(settings, clock=ManualClock(NOW)) as rt:
        yield rt


async def test_reverting_a_dream_restores_the_files_and_the_index(runtime: Runtime) -> None:
    await runtime.memories.create(Kind.KNOWLEDGE, "kites", body="Mira likes red kites.\n")
    await conversation(runtime, "chat-1", *BOSTON)
    assert runtime.history.committer is not None
    await runtime.history.committer.flush()
    before = tree_files(runtime.layout.root)
    indexed_before = runtime.recall.status().entries

    runtime.dreamer.backend = ScriptedJSON(
        by_stage(
            lambda r: extraction(
                (
                    "event",
                    ["L1", "L3"],
                    "Calvin met Dana at the harbour in Boston yesterday "
                    "and bought a blue kite for his niece Mira.",
                ),
                ("preference", ["L4"], "Dana prefers green kites."),
            )
        )
    )
    result = await runtime.dreamer.run("test")
    assert (result.status, result.created) == ("deep_sleep", 2), result.reason
    assert result.journal is not None
    dream_id = Path(result.journal).stem
    commits, _ = await runtime.history.commits(offset=0, limit=5, dreams=True)
    [dream] = commits
    assert dream.dream_id == dream_id and dream.source == "dream"
    assert dream.subject.startswith("Dream (test, deep_sleep): 2 created")
    assert {c.kind for c in dream.changes if c.kind} == {"episode", "knowledge"}
    assert tree_files(runtime.layout.root) != before
    assert await runtime.recall.search("green kites Dana")

    done = await runtime.history.revert_dream(dream_id)
    assert done.commit is not None
    assert tree_files(runtime.layout.root) == before  # byte for byte
    await runtime.recall.wait_idle()
    assert runtime.recall.status().entries == indexed_before
    assert [hit.name for hit in await runtime.recall.search("green kites Dana")] == ["kites"]
    # The journal stays: it is the record that the dream happened.
    assert (runtime.layout.root / result.journal).is_file()
    log = git(runtime.layout.root, "log", "-1", "--format=%B")
    assert f"Reverts-Dream: {dream_id}" in log
    with pytest.raises(Conflict):
        await runtime.history.revert_dream(dream_id)


async def test_reverting_a_dream_makes_its_logs_pending_again(runtime: Runtime) -> None:
    """A revert undoes the whole dream: the sessions it consolidated are dreamed anew, the
    log back byte for byte as it was before the dream archived it."""
    log = await conversation(runtime, "chat-1", *BOSTON)
    pending = runtime.layout.session_log_dir / f"{log}.md"
    as_closed = pending.read_bytes()
    answer = extraction(("event", ["L3"], "Calvin bought a blue kite for his niece Mira."))
    runtime.dreamer.backend = ScriptedJSON(by_stage(lambda r: answer))
    result = await runtime.dreamer.run("test")
    assert result.processed == [log] and not pending.exists()
    assert result.journal is not None
    assert runtime.history.committer is not None
    await runtime.history.committer.flush()

    done = await runtime.history.revert_dream(Path(result.journal).stem)
    assert done.reopened_logs == (log,)
    assert pending.read_bytes() == as_closed
    assert not (runtime.layout.session_log_archive / f"{log}.md").exists()
    assert [p.path.stem for p in await runtime.sessions.pending_logs()] == [log]
    again = await runtime.dreamer.run("test")
    assert again.processed == [log] and again.candidates["added"] == 1


async def test_a_dream_that_wrote_no_memory_can_be_reverted_for_its_logs(runtime: Runtime) -> None:
    """A dream whose model proposed nothing usable consolidated its logs into no memory: its
    commit holds its journal alone, which a revert keeps. The revert was refused ("changed
    no memory entry"), and the logs could not be read again by a better model."""
    log = await conversation(runtime, "chat-1", *BOSTON)
    runtime.dreamer.backend = ScriptedJSON(by_stage(lambda r: extraction()))
    result = await runtime.dreamer.run("test")
    assert result.processed == [log] and result.candidates["added"] == 0
    assert result.journal is not None and runtime.history.committer is not None
    await runtime.history.committer.flush()

    done = await runtime.history.revert_dream(Path(result.journal).stem)
    assert done.reopened_logs == (log,) and done.paths == [] and done.commit is None
    assert [p.path.stem for p in await runtime.sessions.pending_logs()] == [log]

    # A probe: reverted again once a later dream had consolidated those logs, it reopened
    # them all the same (no memory to refuse on), and the next dream read them twice.
    first = Path(result.journal).stem
    later = await runtime.dreamer.run("test")
    assert later.processed == [log] and later.journal is not None
    await runtime.history.committer.flush()
    again = await runtime.history.revert_dream(first)
    assert again.reopened_logs == ()
    assert await runtime.sessions.pending_logs() == []
    assert (runtime.layout.session_log_archive / f"{log}.md").is_file()


async def test_a_log_reopened_for_a_never_dream_session_stays_undreamed(runtime: Runtime) -> None:
    """A probe: the session marked "never dream this" after a dream consolidated its log;
    the dream reverted, the log came back pending without ``dream: false``, and the next
    dream read it."""
    log = await conversation(runtime, "private", *BOSTON)
    answer = extraction(("event", ["L3"], "Calvin bought a blue kite for his niece Mira."))
    runtime.dreamer.backend = ScriptedJSON(by_stage(lambda r: answer))
    result = await runtime.dreamer.run("test")
    assert result.processed == [log] and result.journal is not None
    assert runtime.history.committer is not None
    await runtime.history.committer.flush()
    marked = await runtime.sessions.mark_no_dream("private")
    assert marked.paths == []  # its log was processed already: nothing to mark

    done = await runtime.history.revert_dream(Path(result.journal).stem)
    assert done.reopened_logs == (log,)
    [pending] = await runtime.sessions.pending_logs()
    assert pending.path.stem == log and not pending.dream
    runtime.dreamer.backend = ScriptedJSON(by_stage(lambda r: answer))
    again = await runtime.dreamer.run("test")
    assert again.processed == [] and again.candidates["added"] == 0, again
