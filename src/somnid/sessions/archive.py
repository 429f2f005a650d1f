"""The move of a session log out of the pending set: archived as processed.

The sessions package owns every rule about session-log files: what is pending
(:func:`somnid.sessions.records.is_pending`), when a log may be dreamed, and this move.
Dream code asks :meth:`somnid.sessions.service.SessionService.mark_processed`; nothing
outside the package takes :data:`LOG_MOVES`.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable
from pathlib import Path

from somnid.errors import BrokenFile
from somnid.sessions.transcript import MAX_READ_BYTES
from somnid.store import frontmatter
from somnid.store.atomic import move_atomic, write_atomic
from somnid.store.layout import Layout
from somnid.store.safe import read_regular

LOG_MOVES = threading.Lock()
"""Held while a closed log is rewritten in place or moved out of ``session-log/``. A rewrite
renames a new file over the log's path: racing a move (a dream archiving the log), it would
put a copy of the moved log back among the pending ones."""

_COLLISION = "--"


def archive_processed(layout: Layout, path: Path, *, skipped: bool = False) -> tuple[Path, str]:
    """Move a closed log into ``session-log/archived/`` (never over another file), then set
    ``status: processed`` there, atomically (with ``dream_skipped: true`` when ``skipped``:
    a log marked ``dream: false``, archived unread). Returns where it went and a note when
    its front-matter could not be set (the file is moved as it is, never rewritten blind).

    Moving first means a crash in between leaves a log that is archived (out of the
    pending set: done) with a stale status, never a processed log stuck among the pending.
    Blocks: call it in a thread.
    """
    with LOG_MOVES:
        return _archive(layout, path, skipped)


def restore_processed(
    layout: Layout, stem: str, kept_out: Callable[[str], bool] | None = None
) -> Path | None:
    """Move the processed log ``stem`` back among the pending ones (its dream was
    reverted): ``status: pending`` set there, never over another file; ``dream: false``
    too when ``kept_out`` says its session is never to be dreamed (marked after the log
    was: back pending without it, the next dream read it). None when it is not in the
    archive (or is not a regular file). Blocks: call it in a thread."""
    if not _STEM.fullmatch(stem):
        return None
    source = layout.session_log_archive / f"{stem}.md"
    with LOG_MOVES:
        if not source.is_file() or source.is_symlink():
            return None
        target = _free_target(layout.session_log_dir, source.name)
        try:
            text = read_regular(layout.root, source, MAX_READ_BYTES)[0].decode("utf-8")
            doc = frontmatter.parse(text)
        except (BrokenFile, UnicodeDecodeError):
            doc = None
        move_atomic(source, target, within=layout.memory_dir)
        if doc is not None and text.lstrip("\ufeff").startswith(frontmatter.FENCE):
            # As it was before it was processed: its status then, or none (pending).
            if "status_before" in doc.meta:
                doc.meta["status"] = doc.meta.pop("status_before")
            else:
                doc.meta.pop("status", None)
            doc.meta.pop("dream_skipped", None)
            chat_id = doc.meta.get("chat_id")
            if kept_out is not None and chat_id is not None and kept_out(str(chat_id)):
                doc.meta["dream"] = False
            write_atomic(target, frontmatter.render(doc).encode("utf-8"), make_dirs=False)
        return target


_STEM = re.compile(r"[\w.-]{1,120}")


def _free_target(folder: Path, name: str) -> Path:
    target = folder / name
    stem, suffix = os.path.splitext(name)
    number = 1
    while target.exists():
        number += 1
        target = folder / f"{stem}{_COLLISION}{number}{suffix}"
    return target


def _archive(layout: Layout, path: Path, skipped: bool) -> tuple[Path, str]:
    while True:
        target = _free_target(layout.session_log_archive, path.name)
        try:
            move_atomic(path, target, within=layout.memory_dir)
            break
        except FileExistsError:
            continue  # taken between the check and the move: take the next name
    try:
        # Read as every log is read: a link or a FIFO swapped in is moved, never followed.
        text = read_regular(layout.root, target, MAX_READ_BYTES)[0].decode("utf-8")
    except BrokenFile as exc:
        return target, f"it could not be read ({exc.detail}), so it was moved as it is"
    except UnicodeDecodeError:
        return target, "its front-matter could not be read, so it was moved as it is"
    try:
        doc = frontmatter.parse(text)
    except BrokenFile:
        return target, "its front-matter could not be read, so it was moved as it is"
    if not text.lstrip("\ufeff").startswith(frontmatter.FENCE):
        return target, "it had no front-matter, so it was moved as it is"
    if "status" in doc.meta:
        doc.meta["status_before"] = doc.meta["status"]
    doc.meta["status"] = "processed"
    if skipped:
        doc.meta["dream_skipped"] = True
    write_atomic(target, frontmatter.render(doc).encode("utf-8"), make_dirs=False)
    return target, ""
