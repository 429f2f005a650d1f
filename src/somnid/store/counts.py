"""Entry counts for health probes, kept while the folder they count is unchanged; a large
folder's taken again in the background, never in the probe.

Counting a kind's entries stats every entry folder's file: 54–75 ms at 10k entries on 2
cores, ~0.8 s at 100k, on every ``/v1/health``. A folder's mtime moves whenever an entry folder is
created, renamed (archived, restored) or removed in it, so a count taken at one mtime holds
while the mtime does, with two exceptions, each bounded:

* a file system may keep mtimes at a coarse grain (a second or two), and a folder changed
  within the grain of the count may change again without its mtime moving: a count is only
  kept when the folder's mtime was at least :data:`SETTLED_NS` older than the count (git's
  "racily clean" rule);
* an entry's file removed (or added) by hand inside its existing folder moves that folder's
  mtime, not the kind's: a kept count is taken again after :data:`MAX_AGE_S` at the latest.

A folder that held :data:`BACKGROUND_FROM` entries or more at its last count is counted again
in a thread of its own, one count at a time per folder, and until that count is in, a probe
gets the last one: at 100k entries a probe would otherwise wait a second once a minute, and on
every probe while entries are being written. Such a count lags the folder by at most the time
one count takes. (By size, not by how long the last count took: a busy machine would make a
small folder's count lag now and then.)
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

SETTLED_NS = 2_000_000_000
"""A folder whose mtime is younger than this when counted may still change within it."""

MAX_AGE_S = 60.0
"""A kept count is taken again after this long even if its folder's mtime did not move."""

BACKGROUND_FROM = 5_000
"""A folder with this many entries is counted in the background (10k entries: 54–75 ms)."""

Spawn = Callable[[Callable[[], None]], None]
"""Starts work in another thread (never in the caller's: it holds a lock the work takes)."""


def _in_thread(work: Callable[[], None]) -> None:
    # A daemon thread: it only reads, and the daemon's exit need not wait for a count.
    threading.Thread(target=work, name="somnid-count", daemon=True).start()


@dataclass(frozen=True, slots=True)
class _Count:
    mtime_ns: int  # the folder's, read before counting
    count: int
    at: float  # monotonic seconds, when the count began
    settled: bool  # the folder's mtime was old enough for the count to be kept


class FolderCounts:
    """Counts by folder, each taken again when its folder's mtime moves or it is old; in
    the background, the caller answered with the last count, from ``background_from``
    entries on."""

    def __init__(
        self,
        *,
        monotonic: Callable[[], float] = time.monotonic,
        wall_ns: Callable[[], int] = time.time_ns,
        spawn: Spawn = _in_thread,
        background_from: int = BACKGROUND_FROM,
    ) -> None:
        self._monotonic = monotonic
        self._background_from = background_from
        self._wall_ns = wall_ns
        self._spawn = spawn
        self._last: dict[Path, _Count] = {}
        self._counting: set[Path] = set()  # folders counted in the background now
        self._lock = threading.Lock()

    def get(self, folder: Path, count: Callable[[], int]) -> int:
        """``count()`` for ``folder``, or the count kept for it while it still holds, or
        (a large folder) the last count while a new one is taken in the background."""
        try:
            mtime_ns = os.stat(folder).st_mtime_ns  # before counting: a change meanwhile
        except OSError:  # moves it again, and the next probe counts anew
            with self._lock:
                self._last.pop(folder, None)
            return count()
        now = self._monotonic()
        with self._lock:
            last = self._last.get(folder)
            if last is not None:
                if last.settled and last.mtime_ns == mtime_ns and now - last.at < MAX_AGE_S:
                    return last.count
                if last.count >= self._background_from and self._in_background(folder, count):
                    return last.count
        return self._take(folder, mtime_ns, count)

    def _in_background(self, folder: Path, count: Callable[[], int]) -> bool:
        """A count of ``folder`` is on its way in another thread (started now, or already
        running); False if no thread could be started (the interpreter is exiting). Called
        with the lock held."""
        if folder in self._counting:
            return True
        try:
            self._spawn(lambda: self._recount(folder, count))
        except RuntimeError:  # "can't start new thread"
            return False
        self._counting.add(folder)
        return True

    def _take(self, folder: Path, mtime_ns: int, count: Callable[[], int]) -> int:
        start = self._monotonic()
        counted = count()
        taken = _Count(mtime_ns, counted, start, self._wall_ns() - mtime_ns >= SETTLED_NS)
        with self._lock:
            self._last[folder] = taken
        return counted

    def _recount(self, folder: Path, count: Callable[[], int]) -> None:
        try:
            self._take(folder, os.stat(folder).st_mtime_ns, count)
        except OSError as exc:  # the folder went: the next probe counts, as for a new folder
            log.debug("counting %s failed: %s", folder, exc)
            with self._lock:
                self._last.pop(folder, None)
        finally:
            with self._lock:
                self._counting.discard(folder)
