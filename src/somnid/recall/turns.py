"""Passes over a conversation's turns that read the index: the turn after an echo (a top
result that is mostly a question), the context each candidate's neighbours give it, and
the turns beside each top result in its session."""

from __future__ import annotations

from collections.abc import Iterable

from somnid.recall.backend import IndexBackend, Row
from somnid.recall.scorer import Scored, rank, spread_links

Pair = tuple[int | None, int | None]


class Near:
    """The turns just before and after entries, read from the index once in a search: the
    passes below ask for overlapping entries (the context lift for every candidate, the
    answer pass for the echoes among them)."""

    def __init__(self, index: IndexBackend) -> None:
        self.index = index
        self._pairs: dict[int, Pair] = {}
        self._asked: set[int] = set()

    def of(self, rows: Iterable[Row]) -> dict[int, Pair]:
        """The pairs of ``rows`` that are in a session; the index is asked only for those
        not asked before."""
        wanted = [row for row in rows if row.session is not None]
        missing = [row for row in wanted if row.id not in self._asked]
        if missing:
            self._pairs.update(self.index.neighbours(missing))
            self._asked.update(row.id for row in missing)
        return {row.id: self._pairs[row.id] for row in wanted if row.id in self._pairs}


ANSWER_SHARE = 0.8
"""Of an echo's score (before its question penalty), what the turn after it gets at least."""


def answer_echoes(
    near: Near, scored: list[Scored], rows: dict[int, Row], limit: int
) -> list[Scored]:
    """The turn after an echo (a top result that is mostly a question) is what answers
    it: it gets ``ANSWER_SHARE`` of the echo's score before the penalty, if more."""
    echoes = [s for s in scored[:limit] if s.entry_id in rows and rows[s.entry_id].asks]
    if not echoes:
        return scored
    pairs = near.of(rows[s.entry_id] for s in echoes)
    by_id = {s.entry_id: s for s in scored}
    new = {after for _before, after in pairs.values() if after is not None} - set(rows)
    rows.update(near.index.rows_by_id(new))
    for echo in echoes:
        after = pairs.get(echo.entry_id, (None, None))[1]
        if after is None or after not in rows:
            continue
        value = ANSWER_SHARE * (echo.score - echo.components.get("question", 0.0))
        current = by_id.get(after)
        if current is None:
            by_id[after] = Scored(after, value, rows[after].score, {"answer": round(value, 4)})
        elif current.score < value:
            current.components["answer"] = round(value - current.score, 4)
            current.score = value
    return rank(list(by_id.values()))


def lift_by_context(
    near: Near, scored: list[Scored], rows: dict[int, Row], share: float
) -> list[Scored]:
    """A subject runs over several turns of a conversation: a turn beside one that matches
    is more likely about it than a turn that matches as well alone. Each candidate of a
    session gains ``share`` of the better score of the turns just before and after it,
    when those are candidates too (their scores before this pass)."""
    if share <= 0:
        return scored
    pairs = near.of(rows[s.entry_id] for s in scored if s.entry_id in rows)
    if not pairs:
        return scored
    before_pass = {s.entry_id: s.score for s in scored}
    for s in scored:
        pair = pairs.get(s.entry_id)
        if pair is None:
            continue
        lift = share * max(before_pass.get(n, 0.0) if n is not None else 0.0 for n in pair)
        if lift > 0:
            s.components["context"] = lift
            s.score += lift
    return rank(scored)


def spread_to_turns(
    near: Near, scored: list[Scored], rows: dict[int, Row], limit: int, decay: float
) -> list[Scored]:
    """One hop to the turns just before and after each of the top results in their
    session: the reply to a turn that matches, the question a reply answers."""
    seeds = [rows[s.entry_id] for s in scored[:limit] if s.entry_id in rows]
    pairs = near.of(seeds)
    neighbours = {
        entry_id: [n for n in (after, before) if n is not None]
        for entry_id, (before, after) in pairs.items()
    }
    if not neighbours:
        return scored
    found = near.index.rows_by_id({n for ns in neighbours.values() for n in ns} - set(rows))
    rows.update(found)
    activation = {i: r.score for i, r in rows.items()}
    return spread_links(
        scored,
        neighbours,
        activation,
        seeds=limit,
        decay=decay,
        key="neighbour",
    )
