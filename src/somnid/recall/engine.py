"""Recall: a query in, the memories that matter out, each able to explain its score.

Keyword candidates come from SQLite FTS5, vector candidates from the in-memory matrix; their
union is scored by :mod:`somnid.recall.scorer`. Blocking work runs in threads.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from somnid.config import RecallSettings
from somnid.memory.kinds import Kind
from somnid.metrics import Histogram
from somnid.recall.embedding import EmbedWorker
from somnid.recall.index import INDEXED_KINDS, KIND_CODE, Index, Row
from somnid.recall.scorer import Candidate, Scored, Weights, fuse, spread_links
from somnid.recall.text import query_terms
from somnid.recall.vectors import Vector

DEFAULT_KINDS = (Kind.KNOWLEDGE, Kind.EPISODE, Kind.SKILL)
MIN_LITERAL_CHARS = 4


@dataclass(frozen=True, slots=True)
class Hit:
    kind: Kind
    name: str
    path: str
    score: float
    activation: float
    components: dict[str, float] = field(default_factory=dict)


def weights_of(settings: RecallSettings) -> Weights:
    return Weights(
        vector=settings.vector_weight,
        keyword=settings.keyword_weight,
        literal=settings.literal_boost,
        cos_floor=settings.cos_floor,
        cos_span=settings.cos_span,
        link_spread=settings.link_spread,
    )


class Recall:
    def __init__(self, index: Index, worker: EmbedWorker, settings: RecallSettings) -> None:
        self.index = index
        self.worker = worker
        self.settings = settings
        self.weights = weights_of(settings)
        self.latency = Histogram()
        """Seconds per search with a query, whoever asked (routes, tools, hints, dreams)."""

    @property
    def vectors_ready(self) -> bool:
        """Vectors are searched once the model is loaded and the table holds rows."""
        return self.worker.ready and self.index.vectors is not None and len(self.index.vectors) > 0

    @property
    def filled(self) -> bool:
        """The first embedding pass is over: vectors cover the store (new writes aside)."""
        return self.worker.filled

    async def search(
        self,
        query: str,
        *,
        kinds: tuple[Kind, ...] | None = None,
        limit: int = 10,
        project: str | None = None,
    ) -> list[Hit]:
        query = query.strip()
        if not query:
            return []
        kinds = tuple(k for k in (kinds or DEFAULT_KINDS) if k in INDEXED_KINDS)
        if not kinds:
            return []
        with self.latency.time():
            pool = max(self.settings.candidates, limit * 3)
            # The keyword search runs while the query is embedded: two cores, two threads.
            keywords = asyncio.create_task(
                asyncio.to_thread(self.index.keyword_search, query_terms(query), kinds, pool)
            )
            try:
                vector = await self.worker.embed_query(query) if self.vectors_ready else None
            finally:
                keyword = dict(await keywords)
            return await asyncio.to_thread(
                self._search, query, keyword, vector, kinds, limit, project
            )

    def _search(
        self,
        query: str,
        keyword: dict[int, float],
        vector: Vector | None,
        kinds: tuple[Kind, ...],
        limit: int,
        project: str | None,
    ) -> list[Hit]:
        pool = max(self.settings.candidates, limit * 3)
        cosines: dict[int, float] = {}
        table = self.index.vectors
        use_vectors = vector is not None and table is not None
        if vector is not None and table is not None:
            codes = [KIND_CODE[kind] for kind in kinds]
            cosines = dict(table.search(vector, codes, pool))
            missing = [entry_id for entry_id in keyword if entry_id not in cosines]
            cosines.update(table.cosines(vector, missing))
        ids = set(keyword) | set(cosines)
        rows = self.index.rows_by_id(ids)
        rows = {i: r for i, r in rows.items() if _in_scope(r, kinds, project)}
        needle = query.casefold()
        # A literal hit contains every word of the query, so it is among the keyword hits.
        literal_possible = len(needle) >= MIN_LITERAL_CHARS
        texts = self.index.texts(i for i in rows if i in keyword) if literal_possible else {}
        candidates = [
            Candidate(
                entry_id=i,
                activation=row.score,
                cosine=cosines.get(i),
                keyword=keyword.get(i, 0.0),
                literal=literal_possible and needle in texts.get(i, ""),
            )
            for i, row in rows.items()
        ]
        scored = fuse(candidates, self.weights, vectors=use_vectors)
        scored = self._spread(scored, rows, kinds, project, limit)
        hits: list[Hit] = []
        all_rows = rows | self.index.rows_by_id(
            s.entry_id for s in scored if s.entry_id not in rows
        )
        for s in scored[:limit]:
            row = all_rows.get(s.entry_id)
            if row is None:
                continue
            hits.append(
                Hit(row.kind, row.name, row.path, round(s.score, 4), row.score, s.components)
            )
        return hits

    def _spread(
        self,
        scored: list[Scored],
        rows: dict[int, Row],
        kinds: tuple[Kind, ...],
        project: str | None,
        limit: int,
    ) -> list[Scored]:
        if self.weights.link_spread <= 0:
            return scored
        seeds = scored[:limit]
        names = [name for s in seeds if s.entry_id in rows for name in rows[s.entry_id].related]
        if not names:
            return scored
        ids = self.index.ids_by_name(names)
        linked = self.index.rows_by_id(ids.values())
        linked = {i: r for i, r in linked.items() if _in_scope(r, kinds, project)}
        neighbours: dict[int, list[int]] = {}
        for s in seeds:
            row = rows.get(s.entry_id)
            if row is None:
                continue
            neighbours[s.entry_id] = [ids[n] for n in row.related if n in ids and ids[n] in linked]
        activation = {i: r.score for i, r in linked.items()}
        return spread_links(
            scored, neighbours, activation, seeds=limit, decay=self.weights.link_spread
        )


def _in_scope(row: Row, kinds: tuple[Kind, ...], project: str | None) -> bool:
    if row.kind not in kinds:
        return False
    return project is None or row.project is None or row.project == project
