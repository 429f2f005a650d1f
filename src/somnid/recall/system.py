"""Everything recall needs, opened and closed together: index, embedder, reconciler,
watcher, the recall engine and the hint gate.

Start-up never waits for the index: the first full sync and the model load run behind, so
the daemon serves at once; keyword queries answer from what is indexed so far and vectors
fill in as the model gets to them (``status()`` shows the progress).
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from somnid.config import Settings
from somnid.embed.base import Embedder
from somnid.memory.clock import Clock
from somnid.memory.entry import Entry
from somnid.memory.kinds import Kind
from somnid.recall.assoc import Associator
from somnid.recall.embedding import EmbedState, EmbedWorker
from somnid.recall.engine import Hit, Recall
from somnid.recall.index import Index
from somnid.recall.reconcile import Reconciler, SyncReport
from somnid.recall.watcher import Watcher
from somnid.store.atomic import sweep_temp_files
from somnid.store.memories import MemoryStore

log = logging.getLogger(__name__)

INDEX_FILE = "index.sqlite"


class SyncState(enum.StrEnum):
    PENDING = "pending"
    SYNCING = "syncing"
    READY = "ready"


@dataclass(frozen=True, slots=True)
class IndexStatus:
    entries: int
    counts: dict[str, int]
    vectors: int
    pending: int
    model: str | None
    embed_state: str
    embed_error: str | None
    sync_state: str
    last_sync: str | None
    last_report: SyncReport | None
    size_bytes: int


class RecallSystem:
    def __init__(
        self,
        settings: Settings,
        store: MemoryStore,
        clock: Clock,
        embedder: Embedder | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.clock = clock
        layout = store.layout
        recall = settings.recall
        self.index = Index(
            layout.index_dir / INDEX_FILE,
            (recall.name_weight, recall.description_weight, recall.tags_weight, recall.body_weight),
        )
        self.worker = EmbedWorker(settings.embed, layout.models_dir, self.index, embedder)
        self.reconciler = Reconciler(store, self.index, clock)
        self.recall = Recall(self.index, self.worker, recall)
        self.assoc = Associator(self.recall, settings.assoc, settings.prompt_lang)
        self.watcher = (
            Watcher(
                [layout.memory_dir, layout.skills_dir], self._file_changed, self._folder_changed
            )
            if recall.watch
            else None
        )
        self.sync_state = SyncState.PENDING
        self._started = time.time()
        self.last_report: SyncReport | None = None
        self._sync_lock = asyncio.Lock()
        self._initial: asyncio.Task[None] | None = None

    async def start(self) -> None:
        if self.watcher is not None:
            self.watcher.start()
        self._initial = asyncio.create_task(self._first_sync(), name="somnid-first-sync")

    async def stop(self) -> None:
        if self.watcher is not None:
            await self.watcher.stop()
        if self._initial is not None:
            self._initial.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._initial
        await self.worker.stop()
        await asyncio.to_thread(self.index.close)

    async def _first_sync(self) -> None:
        # The model loads beside the sync: vectors already stored serve at once.
        self.worker.start()
        removed = await asyncio.to_thread(
            sweep_temp_files, self.store.layout.root, older_than=self._started
        )
        if removed:
            log.warning("removed %d temp files left by an interrupted write", len(removed))
        try:
            await self.sync()  # reads every changed file: broken ones get reported on the way
        finally:
            self.worker.sync_done.set()
        # Profiles are not indexed; read them once so a broken one shows in health too.
        await asyncio.to_thread(self.store.scan, (Kind.PROFILE,))

    async def sync(self) -> SyncReport:
        """A full hash-diff reconcile of the files against the index."""
        async with self._sync_lock:
            self.sync_state = SyncState.SYNCING
            try:
                report = await asyncio.to_thread(self.reconciler.full)
            finally:
                self.sync_state = SyncState.READY
            self.last_report = report
            if report.added or report.updated:
                log.info("index sync: %s", report)
            self.worker.wake()
            return report

    async def search(
        self,
        query: str,
        *,
        kinds: tuple[Kind, ...] | None = None,
        limit: int = 10,
        project: str | None = None,
    ) -> list[Hit]:
        return await self.recall.search(query, kinds=kinds, limit=limit, project=project)

    async def wait_idle(self) -> None:
        """Until the first sync ran and no text waits for its vector."""
        if self._initial is not None:
            await asyncio.shield(self._initial)
        await self.worker.wait_idle()

    async def entry_changed(self, entry: Entry | None, path: str) -> None:
        """Listener for writes through the API: reconcile the path now."""
        await asyncio.to_thread(self.reconciler.path, self.store.layout.root / path)
        self.worker.wake()

    async def _file_changed(self, path: Path) -> None:
        await asyncio.to_thread(self.reconciler.path, path)
        self.worker.wake()

    async def _folder_changed(self, folder: Path) -> None:
        await asyncio.to_thread(self.reconciler.folder, folder)
        self.worker.wake()

    def status(self) -> IndexStatus:
        counts = self.index.counts()
        vectors = len(self.index.vectors) if self.index.vectors is not None else 0
        pending = self.index.count_missing_vectors() if self.worker.ready else 0
        return IndexStatus(
            entries=sum(counts.values()),
            counts=counts,
            vectors=vectors,
            pending=pending,
            model=self.worker.model,
            embed_state=self.worker.state.value,
            embed_error=self.worker.error,
            sync_state=self.sync_state.value,
            last_sync=self.index.get_state("last_sync"),
            last_report=self.last_report,
            size_bytes=self.index.db.size_bytes(),
        )

    @property
    def vector_status(self) -> tuple[Literal["ok", "off", "starting", "unavailable"], str | None]:
        """(ok | off | starting | unavailable, detail) for health."""
        state = self.worker.state
        if state is EmbedState.OFF:
            return "off", "embed.provider = off: recall is keyword-only, hints are silent"
        if state is EmbedState.FAILED:
            return "unavailable", self.worker.error
        if state is EmbedState.STARTING:
            return "starting", "loading the embedding model"
        if not self.worker.idle:
            return "starting", "embedding entries"
        return "ok", self.worker.model
