"""Can the data dir take writes? What health says about storage.

Two signs, either one enough: a write that failed for want of space or of write access
(``disk_full``, ``read_only``) and has not been followed by a successful one; and what the
file system says now (``statvfs``: read-only, or less than :data:`LOW_SPACE_BYTES` free).
And whether memory/ and skills/ are there: one a person moved away while somnid runs is
never made again by a write (:func:`somnid.store.atomic.ensure_dir`), so writes there fail
until it is back.
A failure is forgotten once a write succeeds, or once ``statvfs`` sees the space back (more
than low, and more than when the write failed) or the file system writable again. Each
health probe looks, so the answer is at most one probe old.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from somnid.errors import StorageError
from somnid.store.atomic import folder_missing

LOW_SPACE_BYTES = 1024 * 1024
WATCHED = frozenset({"disk_full", "read_only"})

State = Literal["ok", "degraded"]


@dataclass(frozen=True, slots=True)
class _Failure:
    code: str
    detail: str
    free: int | None  # bytes free when it failed
    where: Path | None = None  # the file or folder it failed on


@dataclass(frozen=True, slots=True)
class _Look:
    read_only: bool
    free: int | None
    writable: bool


def _gone(folder: Path) -> bool:
    return not folder.is_dir()


class StorageHealth:
    """Thread-safe: writes report from worker threads, health asks from another."""

    def __init__(
        self, root: Path, folders: tuple[Path, ...] = (), away: Callable[[Path], bool] = _gone
    ) -> None:
        self.root = root
        self.folders = folders
        self.away = away  # whether one of ``folders`` is missing as a move makes it
        self._lock = threading.Lock()
        self._failure: _Failure | None = None

    def failed(self, error: StorageError) -> None:
        """A write failed; remembered if it says the storage is full or read-only."""
        if error.code not in WATCHED:
            return
        failure = _Failure(error.code, error.detail, self._look().free, error.where)
        with self._lock:
            self._failure = failure

    def succeeded(self) -> None:
        with self._lock:
            self._failure = None

    def check(self) -> tuple[State, str | None]:
        """``("ok", None)``, or ``("degraded", why)``."""
        look = self._look()
        with self._lock:
            failure = self._failure
            if failure is not None and _recovered(failure, look):
                self._failure = failure = None
        for folder in self.folders:
            if self.away(folder):
                return "degraded", folder_missing(folder).detail
        if look.read_only:
            return "degraded", "the data dir's file system is read-only: writes fail (read_only)"
        if look.free is not None and look.free < LOW_SPACE_BYTES:
            return "degraded", (
                f"{look.free} bytes free on the data dir's device: writes fail (disk_full) "
                "once it is full"
            )
        if failure is not None:
            return "degraded", f"the last write failed ({failure.code}): {failure.detail}"
        return "ok", None

    def _look(self) -> _Look:
        try:
            stat = os.statvfs(self.root)
        except OSError:
            return _Look(read_only=False, free=None, writable=False)
        return _Look(
            read_only=bool(stat.f_flag & os.ST_RDONLY),
            free=stat.f_bavail * stat.f_frsize,
            writable=os.access(self.root, os.W_OK),
        )


def _writable_at(where: Path | None) -> bool:
    """Whether the folder holding ``where`` (or the nearest one that is there) takes writes;
    the file itself too, when it is there."""
    if where is None:
        return True
    folder = where.parent
    while not folder.is_dir() and folder != folder.parent:
        folder = folder.parent
    if not os.access(folder, os.W_OK | os.X_OK):
        return False
    return not os.path.lexists(where) or os.path.isdir(where) or os.access(where, os.W_OK)


def _recovered(failure: _Failure, look: _Look) -> bool:
    if failure.code == "read_only":
        # Where it failed, not only the data dir's root: a person's `chmod -R a-w memory`
        # leaves the root writable, and health said ok while every write failed.
        return look.writable and not look.read_only and _writable_at(failure.where)
    if look.free is None:
        return False
    return look.free >= LOW_SPACE_BYTES and (failure.free is None or look.free > failure.free)
