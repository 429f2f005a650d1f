"""An exclusive lock on the data dir: one somnid per directory, across processes.

``flock`` on ``<data>/.somnid.lock``; the kernel drops it when the process dies, so a
crashed daemon never leaves a stale lock behind. The file records the holder's pid.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

from somnid.errors import DataDirLocked
from somnid.store.atomic import ensure_dir

LOCK_NAME = ".somnid.lock"


class DataDirLock:
    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / LOCK_NAME
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> None:
        ensure_dir(self.path.parent)  # a new data dir is the owner's alone (0700)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_pid(fd)
            os.close(fd)
            who = f" (pid {holder})" if holder else ""
            raise DataDirLocked(
                f"another somnid{who} is already using the data dir {self.path.parent}"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd

    def release(self) -> None:
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            os.ftruncate(self._fd, 0)
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)
        self._fd = None

    def holder_pid(self) -> int | None:
        """The pid written by whoever holds (or last held) the lock, if readable."""
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except OSError:
            return None
        try:
            return _read_pid(fd)
        finally:
            os.close(fd)


def _read_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode().strip()
        return int(text) if text else None
    except (OSError, ValueError):
        return None
