"""What health reports: counts per kind, pending session logs, files broken by hand."""

from __future__ import annotations

from dataclasses import dataclass

from somnid.errors import BrokenFile
from somnid.memory.kinds import Kind
from somnid.sessions.records import is_pending
from somnid.sessions.transcript import MAX_READ_BYTES, live_files
from somnid.store import frontmatter
from somnid.store.layout import Layout
from somnid.store.memories import MemoryStore
from somnid.store.reader import BrokenReport
from somnid.store.safe import read_text


@dataclass(frozen=True, slots=True)
class Status:
    counts: dict[str, int]
    pending_logs: int
    broken: list[BrokenReport]


def pending_session_logs(layout: Layout) -> int:
    """Session logs directly under session-log/ that are pending (the sessions package's
    rule, :func:`somnid.sessions.records.is_pending`)."""
    pending = 0
    for path in live_files(layout):
        try:
            text = read_text(layout.root, path, MAX_READ_BYTES)  # never a FIFO's open
            doc = frontmatter.parse(text, round_trip=False)
        except (OSError, UnicodeDecodeError, BrokenFile):
            pending += 1  # unreadable logs are still work to do, not lost
            continue
        if is_pending(doc.meta):
            pending += 1
    return pending


def collect_status(store: MemoryStore) -> Status:
    """Cheap enough for every health probe: counts entry files, parses none of them."""
    counts = {kind.value: store.count(kind) for kind in Kind}
    store.recheck_broken()
    return Status(counts, pending_session_logs(store.layout), store.broken())
