"""One part of a session log as its writer knows it: the file it created (device and
inode), opened again for each append only while it is still that file, finalised and
marked in place by atomic rewrites. Blocking functions; :mod:`.logs` holds the locks."""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from somnid.errors import BrokenFile, StorageError
from somnid.sessions import rewrite
from somnid.sessions.records import wants_dream
from somnid.store.atomic import storage_error
from somnid.store.safe import open_append


@dataclass(slots=True)
class OpenLog:
    """The writer state of one session: the part it appends to, and how to know it is
    still the file it wrote (``file_id`` = device, inode; ``size`` after its last write: a
    file rewritten in place by someone else keeps its inode, not its size)."""

    path: Path
    part: int
    file_id: tuple[int, int]
    user: str
    chat_type: str | None
    count: int = 0
    total: int = 0
    size: int = 0

    def own(self, info: os.stat_result) -> None:
        """The file as somnid just wrote it is the one to append to."""
        self.file_id, self.size = (info.st_dev, info.st_ino), info.st_size

    @property
    def stem(self) -> str:
        return self.path.stem


def must_reopen(current: OpenLog) -> int:
    fd = reopen(current)
    if fd is None:
        raise StorageError(f"the session log {current.path.name} vanished as it was created")
    return fd


def reopen(current: OpenLog) -> int | None:
    """The log opened for appending, or None if it is gone or no longer our file."""
    try:
        fd = open_append(current.path)  # a FIFO put there would block the open
    except (FileNotFoundError, BrokenFile):
        return None
    except OSError as exc:
        raise storage_error(exc, current.path) from exc
    stat = os.fstat(fd)
    if (stat.st_dev, stat.st_ino) != current.file_id or stat.st_size != current.size:
        os.close(fd)
        return None
    return fd


def finalise(
    root: Path,
    current: OpenLog,
    now: dt.datetime,
    *,
    last: bool = False,
    continued_by: str | None = None,
) -> None:
    """Write ``end_time`` and ``message_count`` (and the link to the next part) into the
    front-matter, atomically. A file that is no longer ours, or was broken by hand, is
    left alone."""
    found = rewrite.own_document(root, current.path, current.file_id, current.size, "finalising")
    if found is None:
        return
    doc, version = found
    updates: dict[str, Any] = {"end_time": now, "message_count": current.count}
    if last and current.part > 1:
        updates["total_message_count"] = current.total
    if continued_by is not None:
        updates["continued_by"] = continued_by
    rewrite.set_before(doc.meta, "status", updates)
    doc.meta.setdefault("status", "pending")
    rewrite.save(current.path, doc, version)


def mark_open(root: Path, current: OpenLog) -> bool:
    """``dream: false`` into the open log (the caller holds the session's lock); the
    writer then knows the rewritten file as its own. A file that is no longer ours, or
    was broken by hand, is left alone (the session continues in a new, marked part)."""
    found = rewrite.own_document(
        root, current.path, current.file_id, current.size, "marking dream: false"
    )
    if found is None:
        return False
    doc, version = found
    if wants_dream(doc.meta):
        rewrite.set_before(doc.meta, "status", {"dream": False})
        if not rewrite.save(current.path, doc, version):
            return False
        current.own(current.path.stat())
    return True
