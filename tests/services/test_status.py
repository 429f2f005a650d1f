"""Health's entry counts are taken while the daemon starts, not in its first probe."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from somnid.config import Settings
from somnid.memory.clock import ManualClock
from somnid.memory.kinds import Kind
from somnid.runtime import Runtime
from somnid.store.reader import EntryReader
from tests.conftest import START
from tests.store.test_counts import LONG_AGO_NS  # a settled mtime


async def test_the_first_health_probe_answers_from_counts_taken_at_start(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    # At 100k entries a cold count took 2.8 s inside the first probe after a restart:
    # longer than the plugin's 1 s probe, so the plugin took somnid for down.
    async with Runtime.open(settings, clock=ManualClock(START)) as rt:
        await rt.memories.create(Kind.KNOWLEDGE, "vpn", body="port 1194\n")
        await rt.memories.create(Kind.EPISODE, "standup", body="moved to ten\n")
    for kind in Kind:  # folders untouched for a while, as after any restart
        folder = rt.layout.kind_dir(kind)
        if folder.is_dir():
            os.utime(folder, ns=(LONG_AGO_NS, LONG_AGO_NS))

    counted: list[Path] = []
    count_in = EntryReader._count_in

    def spy(reader: EntryReader, folder: Path, kind: Kind) -> int:
        counted.append(folder)
        return count_in(reader, folder, kind)

    monkeypatch.setattr(EntryReader, "_count_in", spy)
    async with Runtime.open(settings, clock=ManualClock(START)) as rt:
        at_start = len(counted)
        assert at_start > 0
        status = await rt.status.files()
        assert len(counted) == at_start  # nothing counted in the probe
        assert status.counts[Kind.KNOWLEDGE.value] == 1
        assert status.counts[Kind.EPISODE.value] == 1
