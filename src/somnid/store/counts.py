"""Entry counts for health probes, kept while the folder they count is unchanged.

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
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

SETTLED_NS = 2_000_000_000
"""A folder whose mtime is younger than this when counted may still change within it."""

MAX_AGE_S = 60.0
"""A kept count is taken again after this long even if its folder's mtime did not move."""


@dataclass(frozen=True, slots=True)
class _Kept:
    mtime_ns: int
    count: int
    at: float  # monotonic seconds


class FolderCounts:
    """Counts by folder, each taken again when its folder's mtime moves or it is old."""

    def __init__(
        self,
        *,
        monotonic: Callable[[], float] = time.monotonic,
        wall_ns: Callable[[], int] = time.time_ns,
    ) -> None:
        self._monotonic = monotonic
        self._wall_ns = wall_ns
        self._kept: dict[Path, _Kept] = {}
        self._lock = threading.Lock()

    def get(self, folder: Path, count: Callable[[], int]) -> int:
        """``count()`` for ``folder``, or the count kept for it while it still holds."""
        try:
            mtime_ns = os.stat(folder).st_mtime_ns  # before counting: a change meanwhile
        except OSError:  # moves it again, and the next probe counts anew
            with self._lock:
                self._kept.pop(folder, None)
            return count()
        now = self._monotonic()
        with self._lock:
            kept = self._kept.get(folder)
        if kept is not None and kept.mtime_ns == mtime_ns and now - kept.at < MAX_AGE_S:
            return kept.count
        counted = count()
        with self._lock:
            if self._wall_ns() - mtime_ns >= SETTLED_NS:
                self._kept[folder] = _Kept(mtime_ns, counted, now)
            else:
                self._kept.pop(folder, None)
        return counted
