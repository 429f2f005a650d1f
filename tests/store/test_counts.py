"""Entry counts kept for health probes: taken again whenever they could have changed."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from somnid.memory.clock import ManualClock
from somnid.memory.kinds import Kind
from somnid.store.counts import MAX_AGE_S, SETTLED_NS, FolderCounts
from tests.stores import open_store

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


class Later:
    """Background work, run when the test says."""

    def __init__(self) -> None:
        self.work: list[Callable[[], None]] = []

    def __call__(self, work: Callable[[], None]) -> None:
        self.work.append(work)

    def run(self) -> None:
        work, self.work = self.work, []
        for item in work:
            item()


def settle(folder: Path, later_ns: int = 0) -> None:
    os.utime(folder, ns=(LONG_AGO_NS + later_ns, LONG_AGO_NS + later_ns))


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


def test_a_large_folder_is_counted_in_the_background_the_probe_given_the_last_count(
    tmp_path: Path,
) -> None:
    (tmp_path / "a").mkdir()
    settle(tmp_path)
    clock, later = Clock(), Later()
    counts = FolderCounts(monotonic=clock, spawn=later, background_from=1)
    count = Counter(tmp_path)
    assert counts.get(tmp_path, count) == 1  # nothing to answer with yet: counted here
    (tmp_path / "new").mkdir()
    settle(tmp_path, 1)  # the folder moved, long enough ago to be kept
    assert counts.get(tmp_path, count) == 1  # the last count, at once
    assert counts.get(tmp_path, count) == 1
    assert count.calls == 1 and len(later.work) == 1  # one count in the background at a time
    later.run()
    assert count.calls == 2
    assert counts.get(tmp_path, count) == 2  # kept: the folder has not moved since
    assert count.calls == 2 and not later.work
    clock.now += MAX_AGE_S  # old: taken again, in the background too
    assert counts.get(tmp_path, count) == 2 and len(later.work) == 1
    (tmp_path / "new").rmdir()
    later.run()
    assert counts.get(tmp_path, count) == 1
    (tmp_path / "a").rmdir()
    settle(tmp_path, 2)
    assert counts.get(tmp_path, count) == 1 and len(later.work) == 1
    later.run()  # 0 entries: under the size, so the probe counts again
    (tmp_path / "b").mkdir()
    assert counts.get(tmp_path, count) == 1 and not later.work


def test_a_small_folder_is_still_counted_in_the_probe(tmp_path: Path) -> None:
    settle(tmp_path)
    later = Later()
    counts, count = FolderCounts(spawn=later, background_from=2), Counter(tmp_path)
    assert counts.get(tmp_path, count) == 0
    (tmp_path / "new").mkdir()
    assert counts.get(tmp_path, count) == 1
    assert count.calls == 2 and not later.work


def test_a_thread_that_cannot_start_leaves_the_count_to_the_probe(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    settle(tmp_path)

    def refuse(_work: Callable[[], None]) -> None:
        raise RuntimeError("can't start new thread")

    counts, count = FolderCounts(spawn=refuse, background_from=1), Counter(tmp_path)
    assert counts.get(tmp_path, count) == 1
    (tmp_path / "b").mkdir()
    assert counts.get(tmp_path, count) == 2
    (tmp_path / "c").mkdir()
    assert counts.get(tmp_path, count) == 3 and count.calls == 3


def test_a_background_count_runs_in_a_thread_and_a_folder_gone_meanwhile_is_no_error(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "kind"
    folder.mkdir()
    settle(folder)
    clock, threads = Clock(), list[threading.Thread]()
    ready = threading.Event()  # the background count waits for the test's go

    def spawn(work: Callable[[], None]) -> None:
        def waiting() -> None:
            ready.wait()
            work()

        threads.append(threading.Thread(target=waiting, daemon=True))
        threads[-1].start()

    counts = FolderCounts(monotonic=clock, spawn=spawn, background_from=0)
    count = Counter(folder)
    assert counts.get(folder, count) == 0
    (folder / "a").mkdir()
    settle(folder, 1)
    assert counts.get(folder, count) == 0
    ready.set()
    threads[-1].join()
    assert counts.get(folder, count) == 1
    ready.clear()
    (folder / "b").mkdir()
    settle(folder, 2)
    assert counts.get(folder, count) == 1
    shutil.rmtree(folder)  # gone before the background count reads it
    ready.set()
    threads[-1].join()  # its stat failed: nothing kept, nothing raised
    assert count.calls == 2
    folder.mkdir()
    assert counts.get(folder, count) == 0  # counted in the probe, as a new folder
    assert count.calls == 3 and len(threads) == 2


@pytest.mark.parametrize("kind", [Kind.KNOWLEDGE, Kind.EPISODE])
def test_the_store_counts_creates_archives_and_hand_removals(tmp_path: Path, kind: Kind) -> None:
    store = open_store(tmp_path, ManualClock(START))
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
