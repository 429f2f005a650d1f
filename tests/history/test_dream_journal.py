"""A dream's journal is in the dream's commit, never a "Hand edit": the journal is on disk
before the dream's last step (a full index sync, 12 s at 100k entries), and a sweep for
hand edits in that while (the watcher heard the journal) used to commit it as one."""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path

import pytest

from somnid.config import Settings
from somnid.memory.clock import ManualClock
from somnid.memory.kinds import Kind
from somnid.recall.reconcile import SyncReport
from somnid.recall.system import RecallSystem
from somnid.runtime import Runtime
from tests.conftest import START
from tests.history.helpers import git, subjects


async def test_the_journal_is_committed_with_its_dream(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    settings = Settings(
        data_dir=data, timezone="UTC", embed={"provider": "off"},
        history={"batch_window_s": 0.1},
    )  # fmt: skip
    clock = ManualClock(START)
    async with Runtime.open(settings, clock=clock) as rt:
        committer = rt.history.committer
        assert committer is not None
        await rt.memories.create(Kind.KNOWLEDGE, "old", body="fades")
        await committer.flush()

        # The dream's full sync waits until a sweep for hand edits has run meanwhile.
        syncing, go_on = asyncio.Event(), asyncio.Event()
        full_sync = RecallSystem.sync

        async def held(system: RecallSystem) -> SyncReport:
            syncing.set()
            await go_on.wait()
            return await full_sync(system)

        monkeypatch.setattr(RecallSystem, "sync", held)
        clock.advance(dt.timedelta(days=10))  # 0.5 * 0.9**10 < 0.2: retired, archived
        rt.dreamer.backend = None  # an upkeep sleep: decay, a journal, no model
        sleep = asyncio.create_task(rt.dreamer.run("idle"))
        # Either the sync is reached, or the dream ended without one (then no window).
        await asyncio.wait(
            [asyncio.create_task(syncing.wait()), sleep], return_when=asyncio.FIRST_COMPLETED
        )
        committer.hand_edited()  # the watcher heard the journal
        await committer.flush()
        go_on.set()
        result = await sleep
        monkeypatch.undo()
        await committer.flush()

    assert (result.status, result.retired) == ("maintenance", 1) and result.journal is not None
    made = subjects(data)
    assert not any(subject.startswith("Hand edit") for subject in made), made
    assert made[0].startswith("Dream (idle, maintenance)"), made
    changed = git(data, "show", "--name-only", "--no-renames", "--format=", "HEAD").split()
    assert result.journal in changed
    # Retired by the dream: moved to the archive in the dream's commit.
    assert {"memory/knowledge/old/SKILL.md", "memory/archived/old/SKILL.md"} <= set(changed)
