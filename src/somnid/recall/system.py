"""Everything recall needs, opened and closed together: index, embedder, reconciler,
watcher, the recall engine and the hint gate.

Start-up never waits for the index: the first full sync and the model load run behind, so
the daemon serves at once; keyword queries answer from what is indexed so far and vectors
fill in as the model gets to them (``status()`` shows the progress).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import enum
import logging
import socket
import time
from concurrent.futures import Future
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from somnid.config import Settings
from somnid.embed.base import Embedder
from somnid.errors import IndexUnavailable, InvalidInput, SomnidError, StorageError
from somnid.memory.clock import Clock
from somnid.memory.entry import Entry
from somnid.memory.kinds import Kind
from somnid.metrics import Histogram
from somnid.recall.assoc import Associator
from somnid.recall.backend import INDEXED_KINDS as INDEXED_KINDS  # the kinds it holds
from somnid.recall.backend import BackendInfo, IndexBackend, Row
from somnid.recall.embedding import EmbedState, EmbedWorker
from somnid.recall.engine import Hit, Outcome, Recall
from somnid.recall.index import Index
from somnid.recall.reconcile import Reconciler, SyncReport
from somnid.recall.scorer import Weights
from somnid.recall.text import MAX_BODY_CHARS
from somnid.recall.vectors import Vector
from somnid.recall.watcher import Watcher
from somnid.store.atomic import sweep_temp_files
from somnid.store.memories import MemoryStore

log = logging.getLogger(__name__)

INDEX_FILE = "index.sqlite"


class SyncState(enum.StrEnum):
    PENDING = "pending"
    SYNCING = "syncing"
    REBUILDING = "rebuilding"
    READY = "ready"


@dataclass(frozen=True, slots=True)
class RebuildStatus:
    """The running or the last rebuild: ``state`` queued, reading, done or failed."""

    state: str
    vectors: bool
    files: int | None
    done: int
    started: str
    finished: str | None
    error: str | None


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
    rebuild: RebuildStatus | None


MODEL_FIRST_S = 10.0  # the longest start-up waits for a model at hand
SETTLE_S = 0.5  # after start-up, before the watcher and the first sync begin
HEAL_FIRST_S, HEAL_MAX_S = 0.2, 30.0  # retries of a full sync while the index misses writes
MISSED = (IndexUnavailable, StorageError)  # the index's server is away, or its disk full


def open_index(settings: Settings, index_dir: Path) -> IndexBackend:
    """The index the settings name: the SQLite file in ``index_dir``, or PostgreSQL (its
    schema is made on first use, so a server that is down does not stop the daemon)."""
    recall = settings.recall
    weights: tuple[float, ...] = (recall.name_weight, recall.description_weight)
    weights += (recall.tags_weight, recall.body_weight, recall.context_weight)
    config = settings.index
    if config.backend == "sqlite":
        return Index(index_dir / INDEX_FILE, weights)
    if config.dsn is None:
        raise InvalidInput("index.backend = postgres needs index.dsn (SOMNID_INDEX__DSN)")
    # Imported only for this backend: psycopg and the pg modules take ~0.1 s to import.
    from somnid.recall.pg_db import PgDatabase
    from somnid.recall.pg_index import PgIndex

    source = config.source or f"{socket.gethostname()}:{settings.data_dir.resolve()}"
    db = PgDatabase(
        config.dsn,
        connect_timeout=config.connect_timeout_s,
        query_timeout=config.query_timeout_s,
        ef_search=config.ef_search,
    )
    return PgIndex(db, source, weights)


class RecallSystem:
    def __init__(
        self,
        settings: Settings,
        store: MemoryStore,
        clock: Clock,
        embedder: Embedder | None = None,
        model_load: Future[Embedder | None] | None = None,
    ) -> None:
        self.settings = settings
        self._store = store
        self.clock = clock
        layout = store.layout
        recall = settings.recall
        self._index = open_index(settings, layout.index_dir)
        self._worker = EmbedWorker(
            settings.embed, layout.models_dir, self._index, embedder, model_load
        )
        self._reconciler = Reconciler(store, self._index, clock)
        self._engine = Recall(
            self._index, self._worker, recall, today=self.today, read_text=self._written_text
        )
        self.assoc = Associator(self._engine, settings.assoc, settings.prompt_lang)
        roots = [layout.memory_dir, layout.skills_dir]
        changed = (self._file_changed, self._folder_changed, self.sync)
        self._watcher = Watcher(roots, *changed) if recall.watch else None
        self.sync_state = SyncState.PENDING
        self._started = time.time()
        self.last_report: SyncReport | None = None
        self._sync_lock = asyncio.Lock()
        self._initial: asyncio.Task[None] | None = None
        self._rebuild: RebuildStatus | None = None
        self._rebuild_task: asyncio.Task[SyncReport] | None = None
        self._heal: asyncio.Task[None] | None = None
        self.index_error: str | None = None
        """Why the index missed a change, until a full sync after it succeeds."""

    async def start(self, *, sync: bool = True) -> None:
        """Start the model and, behind, the watcher and the first sync. ``sync=False`` (an
        offline rebuild that just read every file) starts the model and embedding only.

        A model at hand (installed, or handed in) is loaded before this returns, so the
        daemon answers with hybrid recall from its first request; the stored index answers
        meanwhile for everything else. One still to be converted or behind a network loads
        in the background."""
        self._worker.start()
        if not sync:
            if self._watcher is not None:
                self._watcher.start()
            self._worker.sync_done.set()
            return
        if self._worker.loads_quickly:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._worker.wait_loaded(), MODEL_FIRST_S)
        self._initial = asyncio.create_task(self._first_sync(), name="index first sync")
        self._initial.add_done_callback(_log_failure)

    async def stop(self) -> None:
        if self._watcher is not None:
            await self._watcher.stop()
        for task in (self._initial, self._rebuild_task, self._heal):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        await self._worker.stop()
        await asyncio.to_thread(self._engine.close)
        await asyncio.to_thread(self._index.close)

    async def _first_sync(self) -> None:
        # Setting up the watches (one per folder, ~0.2 s at 10k entries) holds the GIL: the
        # first requests go first. Edits made meanwhile are read by the sync, which follows.
        await asyncio.sleep(SETTLE_S)
        if self._watcher is not None:
            self._watcher.start()
        removed = await asyncio.to_thread(
            sweep_temp_files, self._store.layout.root, older_than=self._started
        )
        if removed:
            log.warning("removed %d temp files left by an interrupted write", len(removed))
        try:
            await self.sync()  # reads every changed file: broken ones get reported on the way
        except MISSED as exc:
            self._missed(exc)
        finally:
            self._worker.sync_done.set()
        # Profiles are not indexed; read them once so a broken one shows in health too.
        await asyncio.to_thread(self._store.scan, (Kind.PROFILE,))

    async def sync(self) -> SyncReport:
        """A full hash-diff reconcile of the files against the index."""
        async with self._sync_lock:
            self.sync_state = SyncState.SYNCING
            try:
                report = await asyncio.to_thread(self._reconciler.full)
            finally:
                self.sync_state = SyncState.READY
            self.last_report = report
            if report.added or report.updated:
                log.info("index sync: %s", report)
            self._worker.wake()
            return report

    def start_rebuild(self, *, vectors: bool = False) -> bool:
        """:meth:`rebuild` in the background; False if one is already queued or running."""
        if self._rebuild_task is not None and not self._rebuild_task.done():
            return False
        self._rebuild = RebuildStatus("queued", vectors, None, 0, self._now(), None, None)
        self._rebuild_task = asyncio.create_task(
            self.rebuild(vectors=vectors), name="index rebuild"
        )
        self._rebuild_task.add_done_callback(_log_failure)
        return True

    async def rebuild(self, *, vectors: bool = False) -> SyncReport:
        """Read and index every file again, as if the index were new (after a hand repair, a
        suspected inconsistency, a change of tokenizer). Vectors are kept by content unless
        ``vectors``; either way missing ones are embedded behind. Recall keeps answering
        meanwhile, from what is indexed so far."""
        started = self._rebuild.started if self._rebuild is not None else self._now()
        progress = RebuildStatus("queued", vectors, None, 0, started, None, None)
        self._rebuild = progress
        async with self._sync_lock:
            self.sync_state = SyncState.REBUILDING
            try:
                files = await asyncio.to_thread(self._count_files)
                self._rebuild = progress = replace(progress, state="reading", files=files)
                await asyncio.to_thread(self._index.invalidate, vectors=vectors)
                report = await asyncio.to_thread(self._reconciler.full)
            except BaseException as exc:
                error = str(exc) or type(exc).__name__
                self._rebuild = replace(progress, state="failed", finished=self._now(), error=error)
                raise
            finally:
                self.sync_state = SyncState.READY
            self.last_report = report
            self._rebuild = replace(
                progress, state="done", done=report.scanned - report.broken, finished=self._now()
            )
            log.info("index rebuilt: %s", report)
            self._worker.wake()
            return report

    def _count_files(self) -> int:
        return sum(1 for kind in INDEXED_KINDS for _ in self._store.files(kind))

    def today(self) -> dt.date:
        """Today in the configured time zone (what a query's "yesterday" is read against)."""
        return self.clock.now().astimezone(self.clock.tz).date()

    def _now(self) -> str:
        return self.clock.now().isoformat()

    def _rebuild_status(self) -> RebuildStatus | None:
        progress = self._rebuild
        if progress is None or progress.state != "reading":
            return progress
        done = self._index.total() - self._index.count_invalidated()
        return replace(progress, done=min(done, progress.files or done))

    async def search(
        self,
        query: str,
        *,
        kinds: tuple[Kind, ...] | None = None,
        limit: int = 10,
        project: str | None = None,
    ) -> list[Hit]:
        return (await self.run(query, kinds=kinds, limit=limit, project=project)).hits

    async def run(
        self,
        query: str,
        *,
        kinds: tuple[Kind, ...] | None = None,
        limit: int = 10,
        project: str | None = None,
    ) -> Outcome:
        """A search with the mode it ran in and the dates it read from the query. An
        unreachable index raises IndexUnavailable, and a full sync follows its return (a
        server that crashed may have lost its last commits)."""
        try:
            return await self._engine.run(query, kinds=kinds, limit=limit, project=project)
        except IndexUnavailable as exc:
            self._missed(exc)
            raise

    @property
    def vectors_ready(self) -> bool:
        return self._engine.vectors_ready

    @property
    def latency(self) -> Histogram:
        """Seconds per search with a query, whoever asked."""
        return self._engine.latency

    @property
    def weights(self) -> Weights:
        return self._engine.weights

    @property
    def embedder(self) -> EmbedWorker:
        """What turns texts into vectors (the archive's ranking uses it too)."""
        return self._worker

    async def embed_passages(self, texts: list[str]) -> list[Vector] | None:
        """The texts' vectors, or None while the embedding model is not ready."""
        return await self._worker.embed_passages(texts)

    def _written_text(self, row: Row) -> str | None:
        """An indexed entry's text as its file holds it, as much as the index holds; None
        when the file is gone, unreadable or broken (the index's text stands in)."""
        try:
            entry = self._store.read(row.kind, row.name)
        except (SomnidError, OSError):
            return None
        return f"{row.name}\n{entry.description}\n{entry.body[:MAX_BODY_CHARS]}"

    def read_entry(self, kind: Kind, name: str) -> Entry:
        """The entry behind a hit, read from its file (blocking)."""
        return self._store.read(kind, name)

    def forget_deleted(self) -> None:
        """Leave no copy of deleted text in the index files (blocking; purge calls it)."""
        self._index.forget_deleted()

    @property
    def watcher(self) -> Watcher | None:
        """The file watcher, for history to hear hand edits after the index has."""
        return self._watcher

    async def wait_idle(self) -> None:
        """Until the first sync ran and no text waits for its vector."""
        if self._initial is not None:
            await asyncio.shield(self._initial)
        await self._worker.wait_idle()

    async def entry_changed(self, entry: Entry | None, path: str) -> None:
        """Listener for writes through the API: reconcile the path now."""
        await self._file_changed(self._store.layout.root / path)

    # The worker is woken only when searchable text changed: each wake scans every entry for
    # texts without a vector (~0.15 s at 100k), and a decay pass rewrites every file's score.

    async def _file_changed(self, path: Path) -> None:
        changed = True
        try:
            changed = await asyncio.to_thread(self._reconciler.path, path)
        except Exception as exc:  # the file is written: a full sync catches up with it
            self._missed(exc)
        if changed:
            self._worker.wake()

    async def _folder_changed(self, folder: Path) -> None:
        changed = True
        try:
            changed = await asyncio.to_thread(self._reconciler.folder, folder)
        except Exception as exc:
            self._missed(exc)
        if changed:
            self._worker.wake()

    def _missed(self, exc: Exception) -> None:
        """The index missed a change (its server is down, its disk full): the file is
        written, and a full sync catches up once the index takes writes again."""
        if self.index_error is None:
            log.warning("the index missed a change, catching up when it is back: %s", exc)
        self.index_error = exc.detail if isinstance(exc, SomnidError) else repr(exc)
        if self._heal is None or self._heal.done():
            self._heal = asyncio.create_task(self._catch_up(), name="index catch-up")
            self._heal.add_done_callback(_log_failure)

    async def _catch_up(self) -> None:
        delay = HEAL_FIRST_S
        while True:
            await asyncio.sleep(delay)
            try:
                await self.sync()
            except Exception as exc:  # tried again, and said in health meanwhile
                self.index_error = exc.detail if isinstance(exc, SomnidError) else repr(exc)
                delay = min(HEAL_MAX_S, delay * 2)
                continue
            log.info("the index is back and caught up with the files")
            self.index_error = None
            return

    def describe_index(self) -> BackendInfo:
        """The backend, its server's version, its extension, and whether it answers
        (blocking: one query on PostgreSQL)."""
        info = self._index.describe()
        if info.reachable and self.index_error is not None:
            return replace(info, error=f"catching up after: {self.index_error}")
        if info.reachable and self._watcher is not None and self._watcher.failure:
            return replace(info, error=self._watcher.failure)
        return info

    def status(self) -> IndexStatus:
        counts = self._index.counts()
        vectors = self._index.vector_count()
        pending = self._index.count_missing_vectors() if self._worker.ready else 0
        return IndexStatus(
            entries=sum(counts.values()),
            counts=counts,
            vectors=vectors,
            pending=pending,
            model=self._worker.model,
            embed_state=self._worker.state.value,
            embed_error=self._worker.error,
            sync_state=self.sync_state.value,
            last_sync=self._index.get_state("last_sync"),
            last_report=self.last_report,
            size_bytes=self._index.size_bytes(),
            rebuild=self._rebuild_status(),
        )

    @property
    def vector_status(self) -> tuple[Literal["ok", "off", "starting", "unavailable"], str | None]:
        """(ok | off | starting | unavailable, detail) for health."""
        state = self._worker.state
        if state is EmbedState.OFF:
            return "off", "embed.provider = off: recall is keyword-only, hints are silent"
        if state is EmbedState.FAILED:
            return "unavailable", self._worker.error
        if state is EmbedState.STARTING:
            return "starting", "loading the embedding model"
        if not self._worker.idle:
            return "starting", "embedding entries"
        return "ok", self._worker.model


def _log_failure(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and (exc := task.exception()) is not None:  # ours said: no trace
        log.error("%s failed: %s", task.get_name(), exc, exc_info=not isinstance(exc, SomnidError))
