"""Entry counts kept for health probes: taken again whenever they could have changed."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import time
from pathlib import Path

import pytest

from somnid.memory.clock import ManualClock
from somnid.memory.kinds import Kind
from somnid.store.counts import MAX_AGE_S, SETTLED_NS, FolderCounts
from somnid.store.layout import Layout
from somnid.store.memories import MemoryStore

START = dt.datetime(2026, 10, 3, 12, 0, tzinfo=dt.UTC)
LONG_AGO_NS = 1_700_000_000 * 1_000_000_000  # a settled mtime: November 2023


class Counter:
    """A count that says how often it was taken."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.calls = 0

    def __call__(self) -> int:
        self.calls += 1
        return sum(1 for _ in self.folder.iterdir())


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def settle(folder: Path) -> None:
    os.utime(folder, ns=(LONG_AGO_NS, LONG_AGO_NS))


def test_a_count_is_kept_while_its_folder_is_unchanged(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    settle(tmp_path)
    counts, count = FolderCounts(), Counter(tmp_path)
    assert [counts.get(tmp_path, count) for _ in range(3)] == [1, 1, 1]
    assert count.calls == 1


def test_an_entry_folder_made_or_removed_is_counted_at_once(tmp_path: Path) -> None:
    settle(tmp_path)
    counts, count = FolderCounts(), Counter(tmp_path)
    assert counts.get(tmp_path, count) == 0
    (tmp_path / "new").mkdir()
    assert counts.get(tmp_path, count) == 1
    settle(tmp_path)  # as if a second later: kept again
    assert counts.get(tmp_path, count) == 1
    (tmp_path / "new").rmdir()
    assert counts.get(tmp_path, count) == 0
    assert count.calls == 4


def test_a_folder_changed_within_the_mtime_grain_is_never_kept(tmp_path: Path) -> None:
    # The folder changed "just now": on a file system with coarse mtimes another change
    # within the same tick would not move it, so the count is taken every time.
    (tmp_path / "a").mkdir()
    now_ns = time.time_ns()
    os.utime(tmp_path, ns=(now_ns, now_ns))
    count = Counter(tmp_path)
    counts = FolderCounts(wall_ns=lambda: now_ns + SETTLED_NS - 1)
    assert counts.get(tmp_path, count) == counts.get(tmp_path, count) == 1
    assert count.calls == 2
    settled = FolderCounts(wall_ns=lambda: now_ns + SETTLED_NS)
    assert settled.get(tmp_path, count) == settled.get(tmp_path, count) == 1
    assert count.calls == 3


def test_a_kept_count_is_taken_again_once_old(tmp_path: Path) -> None:
    # An entry's file removed by hand inside its folder does not move the kind's folder.
    settle(tmp_path)
    clock = Clock()
    counts, count = FolderCounts(monotonic=clock), Counter(tmp_path)
    assert counts.get(tmp_path, count) == 0
    clock.now += MAX_AGE_S - 1
    assert counts.get(tmp_path, count) == 0 and count.calls == 1
    clock.now += 1
    assert counts.get(tmp_path, count) == 0 and count.calls == 2


def test_a_folder_that_is_gone_is_counted_by_the_caller(tmp_path: Path) -> None:
    counts = FolderCounts()
    assert counts.get(tmp_path / "missing", lambda: 0) == 0
    settle(tmp_path)
    assert counts.get(tmp_path, lambda: 5) == 5
    shutil.rmtree(tmp_path)
    assert counts.get(tmp_path, lambda: 0) == 0


@pytest.mark.parametrize("kind", [Kind.KNOWLEDGE, Kind.EPISODE])
def test_the_store_counts_creates_archives_and_hand_removals(tmp_path: Path, kind: Kind) -> None:
    store = MemoryStore(Layout(tmp_path), ManualClock(START))
    for name in ("one", "two", "three"):
        store.create(kind, name, meta={"description": name}, body="b")
    folder = store.layout.kind_dir(kind)
    settle(folder)
    assert store.count(kind) == 3
    store.archive(kind, "two", reason="faded")
    assert store.count(kind) == 2
    store.create(kind, "four", meta={"description": "four"}, body="b")
    assert store.count(kind) == 3
    settle(folder)
    assert store.count(kind) == 3
    shutil.rmtree(folder / "one")  # by hand: the whole entry folder
    assert store.count(kind) == 2
