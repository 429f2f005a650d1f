"""The composition root: opens every long-lived part in one order and closes them in reverse.

Start-up: lock the data dir -> lay out its folders -> sweep crash leftovers -> open the store
-> build the services. Shut-down runs the same list backwards; one failing closer does not
stop the others. Nothing here knows about HTTP.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

from somnid import __version__
from somnid.config import Settings
from somnid.embed.base import Embedder
from somnid.memory.clock import Clock, SystemClock, resolve_timezone
from somnid.recall.assoc import Associator
from somnid.recall.system import RecallSystem
from somnid.services.maintenance import Maintenance
from somnid.services.memories import MemoryService
from somnid.store.atomic import ensure_dir, sweep_temp_files
from somnid.store.layout import Layout
from somnid.store.lock import DataDirLock
from somnid.store.memories import MemoryStore

log = logging.getLogger(__name__)


@dataclass
class Runtime:
    settings: Settings
    clock: Clock
    layout: Layout
    lock: DataDirLock
    store: MemoryStore
    memories: MemoryService
    maintenance: Maintenance
    recall: RecallSystem
    version: str = __version__
    _closers: list[Callable[[], Awaitable[None]]] = field(default_factory=list)

    @property
    def index(self) -> RecallSystem:
        """The index side of recall: ``sync()``, ``wait_idle()``, ``status()``."""
        return self.recall

    @property
    def assoc(self) -> Associator:
        return self.recall.assoc

    @classmethod
    @contextlib.asynccontextmanager
    async def open(
        cls,
        settings: Settings,
        *,
        clock: Clock | None = None,
        lock: DataDirLock | None = None,
        embedder: Embedder | None = None,
    ) -> AsyncIterator[Runtime]:
        """Open everything; ``embedder`` replaces the configured one (tests, benchmarks)."""
        clock = clock or SystemClock(resolve_timezone(settings.timezone))
        layout = Layout(settings.data_dir)
        ensure_dir(layout.root)
        lock = lock or DataDirLock(layout.root)
        owns_lock = not lock.held
        if owns_lock:
            lock.acquire()
        try:
            for folder in layout.skeleton():
                ensure_dir(folder)
            removed = sweep_temp_files(layout.root)
            if removed:
                log.warning("removed %d temp files left by an interrupted write", len(removed))
            store = MemoryStore(layout, clock)
            memories = MemoryService(store, clock)
            maintenance = Maintenance(
                memories,
                clock,
                retire_below=settings.memory.retire_below,
                intention_expiry_days=settings.memory.intention_expiry_days,
            )
            recall = RecallSystem(settings, store, clock, embedder)
            memories.subscribe(recall.entry_changed)
            runtime = cls(settings, clock, layout, lock, store, memories, maintenance, recall)
            await recall.start()
            runtime._closers.append(recall.stop)
            log.info("somnid %s serving %s", __version__, layout.root)
            try:
                yield runtime
            finally:
                await runtime._close()
        finally:
            if owns_lock:
                lock.release()

    async def _close(self) -> None:
        for closer in reversed(self._closers):
            try:
                await closer()
            except Exception:
                log.exception("error while shutting down")
