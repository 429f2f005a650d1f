"""A figure read from the index server now and then, off the caller's path.

Counting 100k rows in PostgreSQL takes ~140 ms. BM25's row count and mean length, and the
vector count, were read again every 10 s inside whichever recall came next, so one recall
in every few dozen paid for them. Now a recall that finds the figure stale is answered with
it while one worker thread reads the next. Only the first read, and the first after
:meth:`Refreshed.forget` (a write changed the figure), waits for the server.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Generic, TypeVar

from somnid.errors import SomnidError

T = TypeVar("T")
log = logging.getLogger(__name__)


class Refreshed(Generic[T]):
    """``read()``'s last result, read again in ``pool`` once older than ``ttl_s``."""

    def __init__(
        self,
        read: Callable[[], T],
        ttl_s: float,
        pool: Executor,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._read = read
        self._ttl = ttl_s
        self._pool = pool
        self._clock = clock
        self._lock = threading.Lock()
        self._value: tuple[float, T] | None = None  # (when read, value)
        self._generation = 0  # bumped by forget: a read begun before it is not kept
        self._reading = False

    def get(self) -> T:
        with self._lock:
            held, generation = self._value, self._generation
            stale = held is not None and self._clock() - held[0] > self._ttl
            if stale and not self._reading:
                self._reading = True
                try:
                    self._pool.submit(self._refresh, generation)
                except RuntimeError:  # the pool is shut down: somnid is stopping
                    self._reading = False
        if held is not None:
            return held[1]
        value = self._read()
        self._keep(generation, value)
        return value

    def forget(self) -> None:
        """The figure changed: the next :meth:`get` reads it, and waits."""
        with self._lock:
            self._value = None
            self._generation += 1

    def _refresh(self, generation: int) -> None:
        try:
            value = self._read()
        except SomnidError as exc:  # the server is away: keep the old figure, try later
            log.debug("could not refresh an index figure: %s", exc)
            with self._lock:
                self._reading = False
            return
        self._keep(generation, value)

    def _keep(self, generation: int, value: T) -> None:
        with self._lock:
            self._reading = False
            if generation == self._generation:
                self._value = (self._clock(), value)
