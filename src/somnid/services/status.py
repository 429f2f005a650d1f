"""What health reports: counts per kind, pending session logs, files broken by hand."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Literal

from somnid.errors import BrokenFile, StorageError
from somnid.memory.clock import Clock
from somnid.memory.kinds import Kind
from somnid.metrics import HistogramSnapshot
from somnid.recall.backend import BackendInfo
from somnid.recall.system import IndexStatus, RecallSystem
from somnid.services.memories import MemoryService
from somnid.sessions.records import is_pending
from somnid.sessions.transcript import MAX_READ_BYTES, live_files
from somnid.store import frontmatter
from somnid.store.health import State
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


def collect_status(memories: MemoryService) -> Status:
    """Cheap enough for every health probe: counts entry files, parses none of them.
    Blocking."""
    return Status(memories.counts(), pending_session_logs(memories.layout), memories.broken())


def broken_files(layout: Layout, clock: Clock) -> list[tuple[str, str]]:
    """Every broken entry file of a data dir no daemon holds (``somnid doctor``): path and
    reason. Blocking; reads every file."""
    store = MemoryStore(layout, clock)
    store.scan(tuple(Kind))
    return [(item.path, item.reason) for item in store.broken()]


class StatusService:
    """The one door for health, metrics and doctor: the data dir's state, the storage's,
    the index's, the vectors' and recall's timings, each read where it is kept."""

    def __init__(self, memories: MemoryService, recall: RecallSystem) -> None:
        self._memories = memories
        self._recall = recall

    async def files(self) -> Status:
        return await asyncio.to_thread(collect_status, self._memories)

    async def storage(self) -> tuple[State, str | None]:
        return await asyncio.to_thread(self._memories.storage_check)

    def storage_failed(self, exc: StorageError) -> None:
        """A write failed outside the store (a session log's append): health says so."""
        self._memories.storage_failed(exc)

    def read_now(self) -> tuple[IndexStatus, Status]:
        """The index's and the files' state together (blocking: SQLite, the data dir)."""
        return self._recall.status(), collect_status(self._memories)

    async def index(self) -> BackendInfo:
        """The index's backend, its server and extension, and whether it answers."""
        return await asyncio.to_thread(self._recall.describe_index)

    @property
    def vector(self) -> tuple[Literal["ok", "off", "starting", "unavailable"], str | None]:
        return self._recall.vector_status

    def recall_latency(self) -> HistogramSnapshot:
        return self._recall.latency.snapshot()
