"""The embedder's life in the daemon: chosen from settings, loaded off the event loop,
and a background worker that fills in missing vectors in batches.

Until the model is ready the index answers keyword queries; hints stay silent.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import enum
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from somnid.config import EmbedSettings
from somnid.embed.base import Embedder, EmbedError, Matrix, MeasuresPassages
from somnid.embed.heap import release_free_memory
from somnid.embed.loading import build_embedder, model_at_hand
from somnid.errors import IndexUnavailable
from somnid.recall.backend import IndexBackend
from somnid.recall.vectors import Vector

log = logging.getLogger(__name__)

QUERY_CACHE_SIZE = 512
T = TypeVar("T")


class EmbedState(enum.StrEnum):
    OFF = "off"
    STARTING = "starting"
    READY = "ready"
    FAILED = "failed"


FETCH_TEXTS = 1024  # texts asked of the index at once
STORE_TEXTS = 128  # texts embedded between two writes of vectors
DROP_EVERY_S = 6 * 3600.0
"""A daemon that runs for weeks drops the vectors no text uses (edits' old ones) at most
this often, after a pass that stored some; a full sync (a start) and a purge drop them too.
Not after every pass: an entry archived and restored around another's embedding lost its
vector and was embedded again."""


def _close_unused(load: Future[Embedder | None]) -> None:
    """Close the model of an early load that a handed-in embedder made unneeded (in the
    loading thread, or here at once if it is done). A failed load left nothing open."""
    if load.cancelled() or load.exception() is not None:
        return
    model = load.result()
    if model is not None:
        model.close()


class EmbedWorker:
    """Loads the embedder, then keeps every indexed text embedded. start() / stop()."""

    def __init__(
        self,
        settings: EmbedSettings,
        models_dir: Path,
        index: IndexBackend,
        embedder: Embedder | None = None,
        model_load: Future[Embedder | None] | None = None,
    ) -> None:
        self.settings = settings
        self.models_dir = models_dir
        self.index = index
        self._given = embedder
        self._early = None if embedder is not None else model_load  # see load_early
        if embedder is not None and model_load is not None:
            model_load.add_done_callback(_close_unused)  # nobody else holds that model
        off = settings.provider == "off" and embedder is None
        self.state = EmbedState.OFF if off else EmbedState.STARTING
        self.error: str | None = None
        self.embedder: Embedder | None = None
        self.filled = False  # the first pass over all texts is done
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._dropped_at = time.monotonic()  # a start's full sync has just dropped them
        # Set by the owner once the first index sync is over: embedding waits for it, so
        # parsing and embedding do not fight over two cores (the model loads meanwhile).
        self.sync_done = asyncio.Event()
        # Set once the embedder is loaded (or failed, or off): the first sync may wait for it.
        self.loaded = asyncio.Event()
        self._index_away = asyncio.Event()  # set while the index's server is unreachable
        self._cache: collections.OrderedDict[str, Vector] = collections.OrderedDict()
        self._cache_lock = threading.Lock()  # queries are embedded in several threads

    @property
    def loads_quickly(self) -> bool:
        """The embedder is at hand: handed in, or a local model already installed (not
        converted first, not behind a network)."""
        if self._given is not None or self._early is not None:
            return True
        return model_at_hand(self.settings, self.models_dir)

    @property
    def ready(self) -> bool:
        return self.state is EmbedState.READY

    @property
    def idle(self) -> bool:
        """No text is waiting for its vector (always true when embeddings are off)."""
        return self._idle.is_set()

    @property
    def model(self) -> str | None:
        return self.embedder.name if self.embedder is not None else None

    def start(self) -> None:
        if self.state is EmbedState.OFF:
            self._idle.set()
            return
        self._task = asyncio.create_task(self._run(), name="somnid-embed-worker")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if self.embedder is not None and self.embedder is not self._given:
            self.embedder.close()  # an embedder handed in belongs to whoever made it

    def wake(self) -> None:
        """Something changed in the index: look for texts without vectors."""
        if self.state in (EmbedState.OFF, EmbedState.FAILED):
            return  # nothing will ever embed them; waiting for idle must not hang
        self._idle.clear()
        self._wake.set()

    async def wait_loaded(self) -> None:
        """Until the model is loaded (or failed, or off), or the index it needs first is
        unreachable (a PostgreSQL server down: the start waited its whole wait for a model
        that waits for the server)."""
        waits = [asyncio.ensure_future(e.wait()) for e in (self.loaded, self._index_away)]
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()

    async def wait_idle(self) -> None:
        """Until the model is loaded (or failed) and no text waits for a vector."""
        await self._idle.wait()

    async def _run(self) -> None:
        try:
            embedder = self._given or await self._load()
        except Exception as exc:  # the daemon keeps serving keywords; health says why
            self.state = EmbedState.FAILED
            self.loaded.set()
            self.error = str(exc) or type(exc).__name__
            log.error("embeddings unavailable, recall is keyword-only: %s", self.error)
            self._idle.set()
            return
        assert embedder is not None
        self.embedder = embedder
        await self._patiently(self.index.use_model, embedder.name, embedder.dim)
        self.state = EmbedState.READY
        self.loaded.set()
        log.info("embedding model %s ready (dim %d)", embedder.name, embedder.dim)
        await self.sync_done.wait()
        failures, stored = 0, False
        while True:
            # Cleared before the index is asked: a write meanwhile sets it again, and then
            # the worker must not call itself idle on an answer that missed that write.
            self._wake.clear()
            pending = await self._patiently(self.index.missing_vectors, FETCH_TEXTS)
            if not pending:
                if self._wake.is_set():
                    continue
                if stored and time.monotonic() - self._dropped_at >= DROP_EVERY_S:
                    stored, self._dropped_at = False, time.monotonic()
                    await self._drop_unused()
                self.filled = True
                self._idle.set()
                await self._wake.wait()
                continue
            # Texts of like length side by side: a batch of the model pads little, and
            # calls run side by side end together; stored a few hundred at a time.
            pending = await asyncio.to_thread(by_length, embedder, pending)
            step = STORE_TEXTS
            for start in range(0, len(pending), step):
                chunk = pending[start : start + step]
                try:
                    vectors = await asyncio.to_thread(_embed_bulk, embedder, chunk)
                except EmbedError as exc:
                    failures += 1
                    delay = min(60.0, 2.0**failures)
                    log.warning("embedding a batch failed, retrying in %.0f s: %s", delay, exc)
                    await asyncio.sleep(delay)
                    break  # ask the index again: the texts may have changed meanwhile
                failures = 0
                items = [
                    (h, np.asarray(v, dtype=np.float32))
                    for (h, _), v in zip(chunk, vectors, strict=True)
                ]
                await self._patiently(self.index.store_vectors, items)
                stored = True

    async def _drop_unused(self) -> None:
        """Housekeeping: its failure is said, and the worker goes on."""
        try:
            dropped = await self._patiently(self.index.drop_unused_vectors)
        except Exception as exc:  # a full disk, say: nothing of the worker's is at stake
            log.warning("index: unused vectors not dropped: %s", exc)
            return
        if dropped:
            log.info("index: %d vectors no entry uses dropped", dropped)

    async def _load(self) -> Embedder | None:
        """The model: the load started early if there is one (its errors are raised
        here), else loaded now, off the event loop."""
        if self._early is not None:
            return await asyncio.wrap_future(self._early)
        return await asyncio.to_thread(build_embedder, self.settings, self.models_dir)

    async def _patiently(self, call: Callable[..., T], *args: Any) -> T:
        """``call`` in a thread, again and again while the index's server is unreachable
        (the embedding waits for it; recall says the index is unavailable meanwhile)."""
        delay = 0.2
        while True:
            try:
                found = await asyncio.to_thread(call, *args)
                self._index_away.clear()
                return found
            except IndexUnavailable as exc:
                self._index_away.set()
                log.warning("the index is unreachable, embedding waits: %s", exc.detail)
                await asyncio.sleep(delay)
                delay = min(5.0, delay * 2)

    async def embed_passages(self, texts: list[str]) -> list[Vector] | None:
        """The texts' vectors as stored passages, unit length, or None while the model is
        not ready (or fails): for comparing texts with each other, not for search."""
        if self.embedder is None or not self.ready or not texts:
            return None if texts else []
        embedder = self.embedder
        try:
            matrix = await asyncio.to_thread(embedder.embed_passages, texts)
        except EmbedError as exc:
            log.warning("could not embed %d text(s): %s", len(texts), exc)
            return None
        vectors = []
        for row in matrix:
            vector = np.asarray(row, dtype=np.float32)
            vectors.append(vector / (float(np.linalg.norm(vector)) or 1.0))
        return vectors

    async def embed_query(self, text: str) -> Vector | None:
        """The query's vector, or None while the model is not ready."""
        if self.embedder is None or not self.ready:
            return None
        cached = self._cached(text)
        if cached is not None:
            return cached
        return await asyncio.to_thread(self.query_vector, text)

    def query_vector(self, text: str) -> Vector | None:
        """``embed_query`` in the calling thread, for a thread that searches with it next
        (one hand-over between threads per search instead of two)."""
        embedder = self.embedder
        if embedder is None or not self.ready:
            return None
        cached = self._cached(text)
        if cached is not None:
            return cached
        try:
            matrix = embedder.embed_queries([text])
        except EmbedError as exc:
            log.warning("could not embed a query: %s", exc)
            return None
        vector = np.asarray(matrix[0], dtype=np.float32)
        with self._cache_lock:
            self._cache[text] = vector
            if len(self._cache) > QUERY_CACHE_SIZE:
                self._cache.popitem(last=False)
        return vector

    def _cached(self, text: str) -> Vector | None:
        with self._cache_lock:
            cached = self._cache.get(text)
            if cached is not None:
                self._cache.move_to_end(text)
            return cached


def by_length(embedder: Embedder, pending: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """``pending`` (hash, text) shortest first: by the model's tokens where the embedder
    counts them, else by characters. Characters put a Chinese and an English text of one
    token length far apart: on a 10k mixed store, chunks ordered by characters padded 11 %
    more tokens than by tokens (2 %), and the backfill ran at 124 against 138-141 texts/s."""
    if isinstance(embedder, MeasuresPassages):
        lengths = embedder.passage_lengths([text for _, text in pending])
        return [pending[i] for i in sorted(range(len(pending)), key=lengths.__getitem__)]
    return sorted(pending, key=lambda item: len(item[1]))


def _embed_bulk(embedder: Embedder, chunk: list[tuple[str, str]]) -> Matrix:
    """One chunk of the backfill; then the tensors' freed memory goes back to the system
    (without it a long backfill held hundreds of MB it no longer used; see embed/heap.py)."""
    try:
        return embedder.embed_passages([text for _, text in chunk])
    finally:
        release_free_memory()
