"""The files somnid wrote last, for upkeep's quiet rule: a file changed a moment ago, and
not by somnid, may be one a person is still writing in place."""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from somnid.store.atomic import FileVersion, version_of

OURS_KEPT = 4096


class OwnWrites:
    def __init__(self, kept: int = OURS_KEPT) -> None:
        self.kept = kept
        self._ours: dict[Path, FileVersion] = {}

    def note(self, path: Path) -> None:
        """Remember the file as somnid wrote it."""
        with contextlib.suppress(OSError):
            self._ours[path] = version_of(os.lstat(path))
            while len(self._ours) > self.kept:
                self._ours.pop(next(iter(self._ours)))

    def changed_lately_by_another(self, path: Path, quiet_s: float) -> bool:
        """Modified less than ``quiet_s`` seconds ago, and not to what somnid wrote."""
        try:
            info = os.lstat(path)
        except OSError:
            return False  # gone: the write says so
        if self._ours.get(path) == version_of(info):
            return False
        now = time.time()  # a time far ahead (a clock ahead, touch -d 2030) is no write now
        return now - quiet_s < info.st_mtime <= now + quiet_s
