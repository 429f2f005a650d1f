"""Rewriting a session log's front-matter in place: atomically, only if it is still the
file the writer created, and only if it reads (a log broken by hand is left alone)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from somnid.errors import BrokenFile
from somnid.sessions import transcript
from somnid.sessions.records import is_pending
from somnid.store import frontmatter
from somnid.store.atomic import FileVersion, Superseded, storage_error, version_of, write_atomic
from somnid.store.safe import read_text

log = logging.getLogger(__name__)


def read(root: Path, path: Path, *, errors: str = "strict") -> str:
    """A log's text, read only if it is a regular file (a FIFO would block for good)."""
    return read_text(root, path, transcript.MAX_READ_BYTES, errors=errors)


def read_meta(root: Path, path: Path) -> Any:
    """A log's front-matter, or None if it cannot be read (the fast reader: for reading
    only; a start read every live log's with the writer's, 5.8 s for 3,000 logs)."""
    try:
        return frontmatter.parse(read(root, path), round_trip=False).meta
    except (OSError, UnicodeDecodeError, BrokenFile):
        return None


def own_document(
    root: Path, path: Path, file_id: tuple[int, int], size: int, doing: str
) -> tuple[frontmatter.Document, FileVersion] | None:
    """The log's document and the version it was read from, if ``path`` is still the file
    ``file_id`` names, as somnid left it (``size``: rewritten in place, it keeps its inode),
    and it parses; None (and a warning saying what was not done) otherwise."""
    try:
        stat = path.stat()
        if (stat.st_dev, stat.st_ino) != file_id or stat.st_size != size:
            raise FileNotFoundError(path)
        return frontmatter.parse(read(root, path)), version_of(stat)
    except (FileNotFoundError, BrokenFile, UnicodeDecodeError) as exc:
        log.warning("not %s session log %s: %s", doing, path.name, exc)
        return None
    except OSError as exc:
        raise storage_error(exc, path) from exc


def save(path: Path, doc: frontmatter.Document, expected: FileVersion | None = None) -> bool:
    """Write ``doc`` back; with ``expected``, only over that version of the file: False
    when it changed or went since it was read. A dream that archived the log between the
    read and the write left it moved, and the write put it back beside the archived copy:
    every line twice, the copy pending again."""
    try:
        write_atomic(
            path, frontmatter.render(doc).encode("utf-8"), make_dirs=False, expected=expected
        )
    except Superseded:
        log.warning("not rewriting session log %s: it changed or moved meanwhile", path.name)
        return False
    return True


def pending_of(meta: Any, session_id: str) -> bool:
    """Whether a front-matter is that of a pending log of the client session ``session_id``."""
    if meta is None or not is_pending(meta):
        return False
    chat_id = meta.get("chat_id")
    return chat_id is not None and str(chat_id) == session_id


def set_before(meta: Any, anchor: str, updates: dict[str, Any]) -> None:
    """Set keys in place if present, else insert them just before ``anchor`` (or at the end)."""
    for key, value in updates.items():
        if key in meta:
            meta[key] = value
        elif anchor in meta:
            meta.insert(list(meta).index(anchor), key, value)
        else:
            meta[key] = value
