"""The Prometheus side of one app: request timings, and the services' own figures read at
scrape time.

The exporter times requests itself (per method, route template and status, with the same
:class:`somnid.metrics.Histogram` the services use). Everything else is read when
``GET /metrics`` is scraped: the counters the services keep (recall latency, hint decisions,
dreams), gauges of the index and the data dir, and the process (CPU, memory, open files) from
prometheus-client's collector in a registry of the app's own, never the global one, so
several apps in one process (tests) do not clash.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, ProcessCollector
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4, generate_latest

from somnid.metrics import Histogram, HistogramSnapshot
from somnid.recall.system import INDEXED_KINDS, IndexStatus
from somnid.runtime import Runtime
from somnid.services.status import Status

CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4
"""The classic text format, which every Prometheus reads (somnid's names are all legacy-safe)."""


class Exporter:
    def __init__(self, version: str) -> None:
        self.version = version
        self.registry = CollectorRegistry()
        ProcessCollector(registry=self.registry)
        # Keyed by (method, route template, status); touched on the event loop only.
        self._requests: dict[tuple[str, str, str], Histogram] = {}

    def observe_request(self, method: str, route: str, status: int, seconds: float) -> None:
        key = (method, route, str(status))
        histogram = self._requests.get(key)
        if histogram is None:
            histogram = self._requests[key] = Histogram()
        histogram.observe(seconds)

    async def scrape(self, runtime: Runtime) -> bytes:
        """The exposition: the runtime's figures as they are now, then the process's."""
        index, files = await asyncio.to_thread(_read_state, runtime)
        families = [self._build(), self._http()]
        families += _runtime_families(runtime, index, files)  # on the loop: no races
        return await asyncio.to_thread(generate_latest, _Scrape(self.registry, families))

    def _build(self) -> Metric:
        family = GaugeMetricFamily(
            "somnid_build_info", "The somnid version serving.", labels=["version"]
        )
        family.add_metric([self.version], 1)
        return family

    def _http(self) -> Metric:
        family = HistogramMetricFamily(
            "somnid_http_request_duration_seconds",
            "Time to answer an HTTP request, by method, route template and status.",
            labels=["method", "route", "status"],
        )
        for key, histogram in sorted(self._requests.items()):
            _add_histogram(family, list(key), histogram.snapshot())
        return family


@dataclass(frozen=True, slots=True)
class _Scrape:
    """One scrape's collector: the families read for it, then the registry's."""

    registry: CollectorRegistry
    families: list[Metric]

    def collect(self) -> Iterable[Metric]:
        yield from self.families
        yield from self.registry.collect()


def _read_state(runtime: Runtime) -> tuple[IndexStatus | None, Status]:
    """Blocking reads (SQLite, the data dir): run in a thread."""
    return runtime.status.read_now()


def _runtime_families(
    runtime: Runtime, index: IndexStatus | None, files: Status
) -> Iterator[Metric]:
    recall = HistogramMetricFamily(
        "somnid_recall_duration_seconds",
        "Time a recall search took, whoever asked (routes, tools, hints, dreams).",
    )
    _add_histogram(recall, [], runtime.status.recall_latency())
    yield recall
    yield _counter(
        "somnid_hints_total",
        "Hint decisions by outcome: fired (shown), or why not (below the threshold, "
        "habituated, ambiguous, silent while vectors are not ready, skipped).",
        "outcome",
        dataclasses.asdict(runtime.assoc.stats),
    )
    dreamer = runtime.dreamer
    yield _counter(
        "somnid_dreams_total", "Sleeps by result status.", "outcome", dict(dreamer.stats.runs)
    )
    tokens = dreamer.stats.tokens
    yield _counter(
        "somnid_dream_tokens_total",
        "LLM tokens dreams used, prompt and completion.",
        "kind",
        {"prompt": tokens["prompt"], "completion": tokens["completion"]},
    )
    yield CounterMetricFamily(
        "somnid_dream_cached_tokens_total",
        "Prompt tokens the LLM served from its cache (counted in the prompt tokens too).",
        value=tokens["cached"],
    )
    yield _gauge("somnid_sleeping", "1 while a dream runs.", int(dreamer.sleeping))
    up = int(index is not None)
    yield _gauge("somnid_index_up", "1 while the index answers (its PostgreSQL server).", up)
    if index is not None:  # else the server is away: the index's own figures are unknown
        yield from _index_families(index)
    yield _labelled_gauge(
        "somnid_memory_files", "Active memory files in the data dir.", "kind", files.counts
    )
    yield _gauge(
        "somnid_session_logs_pending", "Session logs no dream has processed.", files.pending_logs
    )
    yield _gauge("somnid_broken_files", "Files broken by hand, left alone.", len(files.broken))


def _add_histogram(
    family: HistogramMetricFamily, labels: list[str], snapshot: HistogramSnapshot
) -> None:
    buckets = [(_le(bound), float(count)) for bound, count in snapshot.buckets]
    family.add_metric(labels, buckets, snapshot.sum)


def _le(bound: float) -> str:
    return "+Inf" if math.isinf(bound) else repr(bound)


def _counter(name: str, documentation: str, label: str, values: dict[str, int]) -> Metric:
    family = CounterMetricFamily(name, documentation, labels=[label])
    for key, value in sorted(values.items()):
        family.add_metric([key], value)
    return family


def _labelled_gauge(name: str, documentation: str, label: str, values: dict[str, int]) -> Metric:
    family = GaugeMetricFamily(name, documentation, labels=[label])
    for key, value in sorted(values.items()):
        family.add_metric([key], value)
    return family


def _gauge(name: str, documentation: str, value: float) -> Metric:
    return GaugeMetricFamily(name, documentation, value=value)


def _index_families(index: IndexStatus) -> Iterator[Metric]:
    entries = {kind.value: 0 for kind in INDEXED_KINDS} | index.counts
    yield _labelled_gauge("somnid_index_entries", "Entries in the index.", "kind", entries)
    yield _gauge("somnid_index_vectors", "Entries with an embedding.", index.vectors)
    yield _gauge(
        "somnid_index_pending_embeddings", "Index texts waiting for their vector.", index.pending
    )
    yield _gauge("somnid_index_size_bytes", "Size of the index database.", index.size_bytes)
