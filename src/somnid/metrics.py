"""What the services count about themselves, in no export format.

A service keeps its own figures (``Recall.latency``, ``Associator.stats``,
``Dreamer.stats``) and updates them as it works; ``somnid.api.exporter`` reads them when
``GET /metrics`` is scraped and writes Prometheus text. Nothing here knows of HTTP or of
Prometheus, and an update is a few additions under a lock: cheap enough for every recall.
"""

from __future__ import annotations

import bisect
import contextlib
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

# Seconds: from a keyword-only recall on a small store (a few ms) to a cold model (seconds).
LATENCY_BUCKETS: tuple[float, ...] = (
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class HistogramSnapshot:
    """Cumulative counts per upper bound (the last bound is ``inf``), their count and sum."""

    buckets: tuple[tuple[float, int], ...]
    count: int
    sum: float


class Histogram:
    """Observations counted into fixed upper bounds, with their sum. Thread-safe."""

    def __init__(self, bounds: Sequence[float] = LATENCY_BUCKETS) -> None:
        ordered = sorted(set(bounds))
        if not ordered or ordered != list(bounds):
            raise ValueError("bounds must be distinct, ascending and not empty")
        self.bounds = (*ordered, float("inf")) if ordered[-1] != float("inf") else tuple(ordered)
        self._counts = [0] * len(self.bounds)
        self._sum = 0.0
        self._lock = threading.Lock()

    def observe(self, value: float) -> None:
        slot = bisect.bisect_left(self.bounds, value)  # bounds are inclusive ("le")
        with self._lock:
            self._counts[slot] += 1
            self._sum += value

    @contextlib.contextmanager
    def time(self) -> Iterator[None]:
        """Observe the seconds the ``with`` block took, whether or not it raised."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.observe(time.perf_counter() - start)

    def snapshot(self) -> HistogramSnapshot:
        with self._lock:
            counts, total = list(self._counts), self._sum
        cumulative: list[tuple[float, int]] = []
        running = 0
        for bound, count in zip(self.bounds, counts, strict=True):
            running += count
            cumulative.append((bound, running))
        return HistogramSnapshot(tuple(cumulative), running, total)
