"""What health reports: counts per kind, pending session logs, files broken by hand."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Literal

from somnid.errors import IndexUnavailable, StorageError
from somnid.memory.clock import Clock
from somnid.memory.kinds import Kind
from somnid.metrics import HistogramSnapshot
from somnid.recall.backend import BackendInfo
from somnid.recall.system import IndexStatus, RecallSystem
from somnid.services.memories import MemoryService
from somnid.sessions.service import SessionService
from somnid.store.health import State
from somnid.store.layout import Layout
from somnid.store.memories import MemoryStore
from somnid.store.reader import BrokenReport

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Status:
    counts: dict[str, int]
    pending_logs: int
    broken: list[BrokenReport]


def broken_files(layout: Layout, clock: Clock) -> list[tuple[str, str]]:
    """Every broken entry file of a data dir no daemon holds (``somnid doctor``): path and
    reason. Blocking; reads every file."""
    store = MemoryStore(layout, clock)
    store.scan(tuple(Kind))
    return [(item.path, item.reason) for item in store.broken()]


class StatusService:
    """The one door for health, metrics and doctor: the data dir's state, the storage's,
    the index's, the vectors' and recall's timings, each read where it is kept."""

    def __init__(
        self, memories: MemoryService, recall: RecallSystem, sessions: SessionService
    ) -> None:
        self._memories = memories
        self._recall = recall
        self._sessions = sessions

    async def files(self) -> Status:
        """Cheap enough for every health probe: counts entry files (parses none of them),
        the pending session logs (by the sessions' own rule), the files broken by hand."""
        return await asyncio.to_thread(self._files)

    async def count_first(self) -> None:
        """Take the entry counts once, while the daemon starts (beside the model's load):
        the first health probe then answers from them. Counted in that probe, a restart at
        100k entries kept it 2.8 s, past the plugin's 1 s probe."""
        try:
            await asyncio.to_thread(self._memories.counts)
        except OSError as exc:  # the probe counts again, and says what is wrong
            log.warning("could not count the entries: %s", exc)

    def _files(self) -> Status:
        memories = self._memories
        return Status(memories.counts(), self._sessions.pending_count(), memories.broken())

    async def storage(self) -> tuple[State, str | None]:
        return await asyncio.to_thread(self._memories.storage_check)

    def storage_failed(self, exc: StorageError) -> None:
        """A write failed outside the store (a session log's append): health says so."""
        self._memories.storage_failed(exc)

    def read_now(self) -> tuple[IndexStatus | None, Status]:
        """The index's and the files' state together (blocking: SQLite, the data dir); no
        index state while its server cannot be reached."""
        try:
            index: IndexStatus | None = self._recall.status()
        except IndexUnavailable:
            index = None
        return index, self._files()

    async def index(self) -> BackendInfo:
        """The index's backend, its server and extension, and whether it answers."""
        return await asyncio.to_thread(self._recall.describe_index)

    @property
    def vector(self) -> tuple[Literal["ok", "off", "starting", "unavailable"], str | None]:
        return self._recall.vector_status

    def recall_latency(self) -> HistogramSnapshot:
        return self._recall.latency.snapshot()
