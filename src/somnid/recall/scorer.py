"""The fused recall score, as pure arithmetic over one query's candidates.

    score = vector_weight · v + keyword_weight · k + literal_boost · [whole query appears]

* ``v``: the cosine, min-max normalised over this query's candidates (raw E5 cosines sit in
  a narrow 0.75–0.95 band, so unnormalised they would be drowned by keywords), scaled by the
  best cosine's absolute confidence ``clip((best − cos_floor) / cos_span, 0, 1)``: a query
  nothing matches well gets low scores everywhere, which the hint gate relies on.
* ``k``: BM25 over weighted fields (stop words left out of the query) relative to the best
  keyword hit. (Scaling it by how much of the query the best hit covers, as ``v`` is scaled,
  cost 2 points of recall@10 on LoCoMo and was dropped.)
* Without vectors (provider off, model not ready) the keyword part alone ranks, with the
  best keyword hit at 1.0, as the original's keyword mode did.
* Then one hop of spreading over ``related:`` links (a neighbour gets ``link_spread`` of
  its seed's score if that is more than its own), and ties go to the higher activation.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Weights:
    vector: float = 0.6
    keyword: float = 0.4
    literal: float = 0.2
    cos_floor: float = 0.78
    cos_span: float = 0.12
    link_spread: float = 0.6
    fusion: str = "minmax"  # minmax | rrf | calibrated
    rrf_k: int = 60


@dataclass(slots=True)
class Candidate:
    entry_id: int
    activation: float
    cosine: float | None = None
    keyword: float = 0.0  # BM25 relevance, > 0 when the entry matched any term
    literal: bool = False


@dataclass(slots=True)
class Scored:
    entry_id: int
    score: float
    activation: float
    components: dict[str, float] = field(default_factory=dict)


def _clip(value: float) -> float:
    return min(1.0, max(0.0, value))


def fuse(
    candidates: list[Candidate],
    weights: Weights,
    *,
    vectors: bool,
    keep: Collection[int] | None = None,
) -> list[Scored]:
    """Score every candidate; best first, ties broken by activation then id. A candidate
    that scores nothing is left out, unless ``keep`` holds it (an entry about the days the
    query names: the time pass lifts it later)."""
    if not candidates:
        return []
    keep = keep or ()
    if vectors and weights.fusion == "rrf":
        return _fuse_rrf(candidates, weights, keep)
    cosines = [c.cosine for c in candidates if c.cosine is not None]
    best_cos = max(cosines) if cosines else 0.0
    low_cos = min(cosines) if cosines else 0.0
    confidence = _clip((best_cos - weights.cos_floor) / weights.cos_span) if cosines else 0.0
    spread = best_cos - low_cos
    best_kw = max((c.keyword for c in candidates), default=0.0)
    # The hot loop of every search (~100 candidates): components are left unrounded here;
    # a hit's are rounded when it is reported.
    vector_weight, keyword_weight = weights.vector, weights.keyword
    calibrated = weights.fusion == "calibrated"
    per_kw = 1.0 / best_kw if best_kw > 0 else 0.0
    per_cos = 1.0 / spread if spread > 1e-9 else 0.0
    scored: list[Scored] = []
    for c in candidates:
        k = c.keyword * per_kw
        parts: dict[str, float]
        if vectors:
            v = 0.0
            cosine = c.cosine
            if cosine is not None:
                if calibrated:  # the absolute scale, as the gate reads it
                    v = _clip((cosine - weights.cos_floor) / weights.cos_span)
                elif per_cos:
                    relative = (cosine - low_cos) * per_cos
                    v = confidence * (1.0 if relative > 1.0 else relative if relative > 0 else 0.0)
                else:
                    v = confidence
                parts = {"cosine": cosine, "vector": vector_weight * v}
            else:
                parts = {"vector": 0.0}
            parts["keyword"] = keyword_weight * k
            total = vector_weight * v + keyword_weight * k
        else:
            parts = {"keyword": k}
            total = k
        if c.literal:
            parts["literal"] = weights.literal
            total += weights.literal
        if c.keyword > 0:
            parts["bm25"] = c.keyword
        if total > 0 or c.entry_id in keep:
            scored.append(Scored(c.entry_id, total, c.activation, parts))
    return rank(scored)


def _fuse_rrf(candidates: list[Candidate], weights: Weights, keep: Collection[int]) -> list[Scored]:
    """Reciprocal-rank fusion of the two rankings, Σ 1 / (k + rank), scaled so that first on
    both is 1 and then by the best cosine's confidence (the gate needs an absolute scale)."""
    by_cos = sorted(
        (c for c in candidates if c.cosine is not None), key=lambda c: -(c.cosine or 0.0)
    )
    by_kw = sorted((c for c in candidates if c.keyword > 0), key=lambda c: -c.keyword)
    best_cos = by_cos[0].cosine if by_cos else None
    confidence = (
        _clip(((best_cos or 0.0) - weights.cos_floor) / weights.cos_span) if by_cos else 0.0
    )
    k = weights.rrf_k
    scale = (k + 1) / 2 * confidence
    ranks: dict[int, float] = {}
    for ranking in (by_cos, by_kw):
        for position, c in enumerate(ranking, start=1):
            ranks[c.entry_id] = ranks.get(c.entry_id, 0.0) + 1.0 / (k + position)
    scored: list[Scored] = []
    for c in candidates:
        total = ranks.get(c.entry_id, 0.0) * scale
        parts = {"rrf": round(total, 4)}
        if c.cosine is not None:
            parts["cosine"] = round(c.cosine, 4)
        if c.keyword > 0:
            parts["bm25"] = round(c.keyword, 4)
        if c.literal:
            parts["literal"] = weights.literal
            total += weights.literal
        if total > 0 or c.entry_id in keep:
            scored.append(Scored(c.entry_id, total, c.activation, parts))
    return rank(scored)


def rank(scored: list[Scored]) -> list[Scored]:
    return sorted(scored, key=lambda s: (-s.score, -s.activation, s.entry_id))


def spread_links(
    scored: list[Scored],
    neighbours: dict[int, list[int]],
    activation: dict[int, float],
    *,
    seeds: int,
    decay: float,
    key: str = "spread",
) -> list[Scored]:
    """One hop over links (``related:``, session neighbours) from the top ``seeds``
    results; no second hop. ``key`` names the component the lift shows under."""
    if decay <= 0:
        return scored
    by_id = {s.entry_id: s for s in scored}
    for seed in scored[:seeds]:
        for neighbour in neighbours.get(seed.entry_id, []):
            if neighbour == seed.entry_id:
                continue
            value = seed.score * decay
            current = by_id.get(neighbour)
            if current is None:
                by_id[neighbour] = Scored(
                    neighbour, value, activation.get(neighbour, 0.0), {key: round(value, 4)}
                )
            elif current.score < value and key not in current.components:
                current.components[key] = round(value - current.score, 4)
                current.score = value
    return rank(list(by_id.values()))
