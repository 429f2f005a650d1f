"""Recall: a query in, the memories that matter out, each able to explain its score.

Keyword candidates and vector neighbours come from the index (either backend: one call
each per pass); their union is scored by :mod:`somnid.recall.scorer`. Blocking work runs
in threads.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime as dt
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Literal

from somnid.config import RecallSettings
from somnid.memory.kinds import Kind
from somnid.metrics import Histogram
from somnid.recall.backend import INDEXED_KINDS, IndexBackend, Row
from somnid.recall.dates import TimeQuery, query_time
from somnid.recall.embedding import EmbedWorker
from somnid.recall.passes import (
    boost_speakers,
    boost_time,
    entity_terms,
    mmr,
    penalise_brief_turns,
    penalise_questions,
    rocchio,
    speaker_of,
)
from somnid.recall.scorer import Candidate, Scored, Weights, fuse, rank, spread_links
from somnid.recall.text import is_in, keyword_evidence, literal_forms, query_terms
from somnid.recall.turns import (
    ANSWER_SHARE,
    Near,
    answer_echoes,
    lift_by_context,
    spread_to_turns,
)
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


@dataclass(frozen=True, slots=True)
class Prepared:
    """What a search reads before it has the query's vector (see ``Recall._prepare``)."""

    keyword: dict[int, float] | None  # None: the backend searches keywords in the pass
    when: TimeQuery
    dated: set[int]
    rows: dict[int, Row]
    texts: dict[int, str]


@dataclass(frozen=True, slots=True)
class Outcome:
    """One search: the hits, the mode the search itself ran in, the time the query named."""

    hits: list[Hit]
    mode: Literal["hybrid", "keyword"]
    when: TimeQuery  # read from the query

    @property
    def time(self) -> str | None:
        """The dates read from the query, as explain shows them."""
        return self.when.describe() if self.when else None


def weights_of(settings: RecallSettings) -> Weights:
    return Weights(
        vector=settings.vector_weight,
        keyword=settings.keyword_weight,
        literal=settings.literal_boost,
        cos_floor=settings.cos_floor,
        cos_span=settings.cos_span,
        link_spread=settings.link_spread,
        fusion=settings.fusion,
        rrf_k=settings.rrf_k,
    )


class Recall:
    def __init__(
        self,
        index: IndexBackend,
        worker: EmbedWorker,
        settings: RecallSettings,
        today: Callable[[], dt.date] = dt.date.today,
        read_text: Callable[[Row], str | None] | None = None,
    ) -> None:
        self.index = index
        self.worker = worker
        self.settings = settings
        self.weights = weights_of(settings)
        self.today = today
        self.read_text = read_text  # as written (the index's is lower-cased): for names
        self.latency = Histogram()
        """Seconds per search with a query, whoever asked (routes, tools, hints, dreams)."""
        self._helpers = ThreadPoolExecutor(2, thread_name_prefix="somnid-keywords")

    @property
    def vectors_ready(self) -> bool:
        """Vectors are searched once the model is loaded and the table holds rows."""
        return self.worker.ready and self.index.has_vectors()

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
        outcome = await self.run(query, kinds=kinds, limit=limit, project=project)
        return outcome.hits

    async def run(
        self,
        query: str,
        *,
        kinds: tuple[Kind, ...] | None = None,
        limit: int = 10,
        project: str | None = None,
    ) -> Outcome:
        """A search, with the mode it ran in and the time it read from the query."""
        query = query.strip()
        hybrid = self.vectors_ready  # asked once: on PostgreSQL it may read a count
        mode: Literal["hybrid", "keyword"] = "hybrid" if hybrid else "keyword"
        kinds = tuple(k for k in (kinds or DEFAULT_KINDS) if k in INDEXED_KINDS)
        if not query or not kinds:  # no memory to find; the dates still, for archived lines
            return Outcome([], mode, self._when(query))
        with self.latency.time():
            pool = max(self.settings.candidates, limit * 3)
            prepared: Future[Prepared] | None = None
            with contextlib.suppress(RuntimeError):  # closed: prepared in the search's thread
                # What the query alone decides is read in a helper thread while this
                # search's thread embeds the query.
                prepared = self._helpers.submit(self._prepare, query, kinds, pool)
            return await asyncio.to_thread(
                self._embed_and_search, query, prepared, hybrid, kinds, pool, limit, project
            )

    def close(self) -> None:
        """Stop the helper threads (searches running now finish first)."""
        self._helpers.shutdown(wait=True)

    def _embed_and_search(
        self,
        query: str,
        prepared: Future[Prepared] | None,
        hybrid: bool,
        kinds: tuple[Kind, ...],
        pool: int,
        limit: int,
        project: str | None,
    ) -> Outcome:
        """The query's vector and the search, in one thread: each hand-over between the
        event loop and a thread costs a wake-up (~0.3-0.6 ms on a slow host)."""
        try:
            vector = self.worker.query_vector(query) if hybrid else None
        finally:
            ready = prepared.result() if prepared else self._prepare(query, kinds, pool)
        return self._search(query, ready, vector, kinds, limit, project)

    def _prepare(self, query: str, kinds: tuple[Kind, ...], pool: int) -> Prepared:
        """Everything of a search that needs no query vector: the keyword hits (unless the
        backend searches keywords in the pass), the time the query names and the entries
        about it, their rows, and the keyword hits' texts for the literal check."""
        when = self._when(query)
        dated = self._in_time(when, kinds, pool)
        if self.index.one_pass:
            return Prepared(None, when, dated, {}, {})
        keyword = dict(self.index.keyword_search(query_terms(query), kinds, pool))
        literal = len(query.casefold()) >= MIN_LITERAL_CHARS
        texts = self.index.texts(keyword) if literal and keyword else {}
        return Prepared(keyword, when, dated, self.index.rows_by_id(keyword.keys() | dated), texts)

    def _when(self, query: str) -> TimeQuery:
        """The time the query names (none with ``recall.time_boost`` 0)."""
        return query_time(query, self.today()) if self.settings.time_boost > 0 else TimeQuery(())

    def _search(
        self,
        query: str,
        prepared: Prepared,
        vector: Vector | None,
        kinds: tuple[Kind, ...],
        limit: int,
        project: str | None,
    ) -> Outcome:
        settings = self.settings
        pool = max(settings.candidates, limit * 3)
        use_vectors = vector is not None
        when = prepared.when
        seen = dict(prepared.texts)  # the texts read so far in this search, by entry id
        scored, rows, keyword = self._pass(
            query,
            prepared.keyword,
            vector,
            kinds,
            project,
            pool,
            seen,
            prepared.dated,
            have=prepared.rows,
        )
        if settings.prf_weight > 0 and scored:
            scored, rows = self._bridge(
                query, scored, rows, keyword, vector, kinds, project, pool, seen
            )
        scored = self._after(query, scored, rows, when, kinds, project, limit, seen)
        scored = [s for s in scored if s.score > 0]  # an entry about the days, not lifted
        if settings.mmr_lambda < 1.0 and use_vectors:
            top = [s.entry_id for s in scored[: 3 * limit]]
            scored = mmr(scored, self.index.vectors_of(top), settings.mmr_lambda, limit)
        hits: list[Hit] = []
        all_rows = rows | self.index.rows_by_id(
            s.entry_id for s in scored[:limit] if s.entry_id not in rows
        )
        for s in scored[:limit]:
            row = all_rows.get(s.entry_id)
            if row is None or not row.in_scope(kinds, project):
                continue
            parts = {name: round(value, 4) for name, value in s.components.items()}
            hits.append(Hit(row.kind, row.name, row.path, round(s.score, 4), row.score, parts))
        mode: Literal["hybrid", "keyword"] = "hybrid" if use_vectors else "keyword"
        return Outcome(hits, mode, when)

    def _in_time(self, when: TimeQuery, kinds: tuple[Kind, ...], pool: int) -> set[int]:
        """Entries about the days the query names, as extra candidates (narrow spans only:
        a year or a day in any year would bring in half the store)."""
        found: set[int] = set()
        for _text, grain, ranges in when.spans:
            if len(ranges) == 1 and grain not in ("year",):
                first, last = ranges[0]
                found.update(self.index.ids_in_time(first, last, kinds, pool))
        return found

    def _pass(
        self,
        query: str,
        keyword: dict[int, float] | None,
        vector: Vector | None,
        kinds: tuple[Kind, ...],
        project: str | None,
        pool: int,
        seen: dict[int, str],
        extra: set[int] | None = None,
        have: dict[int, Row] | None = None,
    ) -> tuple[list[Scored], dict[int, Row], dict[int, float]]:
        """One fused pass: keyword hits (searched here when ``keyword`` is None), vector
        neighbours (and ``extra`` ids), scored; with the keyword hits. The rows in ``have``
        (an earlier pass's) and the texts in ``seen`` are not read again."""
        needles = literal_forms(query)
        # A literal hit contains every word of the query, so it is among the keyword hits.
        literal_possible = len(needles[0]) >= MIN_LITERAL_CHARS
        have = have or {}
        asked = set(keyword or ()) | (extra or set())
        got = self.index.gather(
            vector,
            asked,
            kinds,
            pool,
            {i for i in keyword or () if i not in seen} if literal_possible else None,
            terms=query_terms(query) if keyword is None else None,
            known=have,
        )
        cosines = got.cosines
        keyword = got.keyword or {} if keyword is None else keyword
        seen.update(got.texts)
        reused = (asked | set(keyword) | set(cosines)).intersection(have)
        found = {i: have[i] for i in reused} | got.rows
        rows = {i: r for i, r in found.items() if r.in_scope(kinds, project)}
        candidates = [
            Candidate(
                entry_id=i,
                activation=row.score,
                cosine=cosines.get(i),
                keyword=keyword.get(i, 0.0),
                literal=literal_possible and i in keyword and is_in(needles, seen.get(i, "")),
            )
            for i, row in rows.items()
        ]
        weights = self.weights
        evidence = keyword_evidence(query_terms(query))
        if evidence < 1.0:  # CJK bigrams: the keyword half says less, so it weighs less
            weights = dataclasses.replace(weights, keyword=weights.keyword * evidence)
        return fuse(candidates, weights, vectors=vector is not None, keep=extra), rows, keyword

    def _bridge(
        self,
        query: str,
        scored: list[Scored],
        rows: dict[int, Row],
        keyword: dict[int, float],
        vector: Vector | None,
        kinds: tuple[Kind, ...],
        project: str | None,
        pool: int,
        seen: dict[int, str],
    ) -> tuple[list[Scored], dict[int, Row]]:
        """Pseudo-relevance feedback: search again with the names the strongest hits hold
        and the query vector moved towards them; a second-pass score adds ``prf_weight`` of
        itself. The query's own vector is re-used: no second embedding."""
        settings = self.settings
        seeds = [s.entry_id for s in scored[: settings.prf_docs] if s.score > 0]
        texts = self._written_texts(seeds, rows, seen)
        terms = entity_terms([texts.get(i, "") for i in seeds], query, settings.prf_terms)
        terms = [*query_terms(query), *terms] if terms else []
        keyword2 = dict(self.index.keyword_search(terms, kinds, pool)) if terms else keyword
        vector2 = vector
        if vector is not None:
            vector2 = rocchio(vector, list(self.index.vectors_of(seeds).values()))
        second, rows2, _ = self._pass(
            query, keyword2, vector2, kinds, project, pool, seen, have=rows
        )
        weight = settings.prf_weight
        merged = {s.entry_id: s for s in scored}
        for s in merged.values():
            s.score *= 1.0 - weight
        for s in second:
            current = merged.get(s.entry_id)
            if current is None:
                merged[s.entry_id] = Scored(
                    s.entry_id,
                    weight * s.score,
                    s.activation,
                    {"bridge": round(weight * s.score, 4)},
                )
            else:
                current.components["bridge"] = round(weight * s.score, 4)
                current.score += weight * s.score
        return rank(list(merged.values())), rows | rows2

    def _after(
        self,
        query: str,
        scored: list[Scored],
        rows: dict[int, Row],
        when: TimeQuery,
        kinds: tuple[Kind, ...],
        project: str | None,
        limit: int,
        seen: dict[int, str],
    ) -> list[Scored]:
        settings = self.settings
        head = max(limit * 6, 60)  # the candidates the passes that read texts look at
        if when:
            # Every candidate when the query bounds the time: a cut one must not fall
            # below one out of the period that was never looked at.
            bounds = bool(when.bound) or when.until is not None
            dated = [s.entry_id for s in (scored if bounds else scored[:head])]
            written = {i: rows[i].day if i in rows else None for i in dated}
            dates = self.index.dates_of(dated)
            scored = boost_time(
                scored, when, dates, written, settings.time_boost, settings.time_bound
            )
        if settings.speaker_boost > 0:
            bodies = self._bodies_of([s.entry_id for s in scored[:head]], seen)
            speakers = {i: speaker_of(body) for i, body in bodies.items()}
            scored = boost_speakers(scored, speakers, query, settings.speaker_boost)
        asks = {i for i, row in rows.items() if row.asks}
        scored = penalise_questions(scored, asks, settings.question_penalty)
        near = Near(self.index)
        if settings.turn_context > 0:  # every candidate's turns beside, in one read
            near.of(rows[s.entry_id] for s in scored if s.entry_id in rows)
        if settings.question_penalty > 0 and ANSWER_SHARE > 0:
            scored = answer_echoes(near, scored, rows, limit)
        if settings.turn_context > 0:
            scored = lift_by_context(near, scored, rows, settings.turn_context)
        if settings.neighbour_spread > 0:
            scored = spread_to_turns(near, scored, rows, limit, settings.neighbour_spread)
        if settings.brief_turn_penalty > 0:
            # The results and as many again twice over (as MMR): a reorder near the top;
            # of those, the turns of a dialogue (a line before or after in its session).
            top = [rows[s.entry_id] for s in scored[: 3 * limit] if s.entry_id in rows]
            pairs = near.of(top)
            turns = [i for i, pair in pairs.items() if pair != (None, None)]
            bodies = self._bodies_of(turns, seen)
            scored = penalise_brief_turns(scored, bodies, query, settings.brief_turn_penalty)
        return self._spread(scored, rows, kinds, project, limit)

    def _written_texts(
        self, ids: list[int], rows: dict[int, Row], seen: dict[int, str]
    ) -> dict[int, str]:
        """The texts of ``ids`` as written, where they can be read (names are capitalised
        there, not in the index); the index's text of the others."""
        read = self.read_text or (lambda _row: None)
        found = {i: text for i in ids if i in rows and (text := read(rows[i])) is not None}
        return found | self._texts_of([i for i in ids if i not in found], seen)

    def _bodies_of(self, ids: list[int], seen: dict[int, str]) -> dict[int, str]:
        """The bodies of ``ids``: their index text after the name and description lines."""
        return {i: text.split("\n", 2)[-1] for i, text in self._texts_of(ids, seen).items()}

    def _texts_of(self, ids: list[int], seen: dict[int, str]) -> dict[int, str]:
        """The texts of ``ids``: those this search read already, the rest from the index."""
        missing = [i for i in ids if i not in seen]
        if missing:
            seen.update(self.index.texts(missing))
        return {i: seen[i] for i in ids if i in seen}

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
        linked = {i: r for i, r in linked.items() if r.in_scope(kinds, project)}
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
