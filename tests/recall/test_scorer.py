"""The fused score against values computed by hand."""

from __future__ import annotations

import pytest

from somnid.recall.scorer import Candidate, Scored, Weights, fuse, spread_links

W = Weights(vector=0.6, keyword=0.4, literal=0.2, cos_floor=0.78, cos_span=0.12, link_spread=0.6)


def test_hybrid_scores() -> None:
    candidates = [
        Candidate(1, activation=0.5, cosine=0.90, keyword=4.0),
        Candidate(2, activation=0.5, cosine=0.84, keyword=0.0),
        Candidate(3, activation=0.5, cosine=0.80, keyword=2.0, literal=True),
    ]
    scored = {s.entry_id: s for s in fuse(candidates, W, vectors=True)}
    # confidence = clip((0.90 - 0.78) / 0.12) = 1.0; min-max over [0.80, 0.90]
    # 1: 0.6 * 1.0 + 0.4 * 4/4 = 1.0
    assert scored[1].score == pytest.approx(1.0)
    # 2: 0.6 * (0.04 / 0.10) = 0.24
    assert scored[2].score == pytest.approx(0.24)
    # 3: 0.6 * 0 + 0.4 * 2/4 + 0.2 = 0.4
    assert scored[3].score == pytest.approx(0.4)
    assert scored[3].components["literal"] == 0.2
    assert scored[1].components == {"cosine": 0.9, "vector": 0.6, "keyword": 0.4, "bm25": 4.0}


def test_weak_best_cosine_scales_everything_down() -> None:
    candidates = [Candidate(1, 0.5, cosine=0.81), Candidate(2, 0.5, cosine=0.79)]
    scored = fuse(candidates, W, vectors=True)
    # confidence = (0.81 - 0.78) / 0.12 = 0.25 -> top gets 0.6 * 0.25
    assert scored[0].score == pytest.approx(0.15)
    assert [s.entry_id for s in scored] == [1]  # the bottom of the pool scores 0 and drops


def test_keyword_mode_puts_the_best_hit_at_one() -> None:
    candidates = [Candidate(1, 0.5, keyword=3.0), Candidate(2, 0.5, keyword=1.5, literal=True)]
    scored = fuse(candidates, W, vectors=False)
    assert [(s.entry_id, round(s.score, 4)) for s in scored] == [(1, 1.0), (2, 0.7)]


def test_ties_go_to_the_stronger_memory() -> None:
    candidates = [Candidate(1, 0.3, keyword=1.0), Candidate(2, 0.9, keyword=1.0)]
    assert [s.entry_id for s in fuse(candidates, W, vectors=False)] == [2, 1]


def test_spreading_one_hop() -> None:
    scored = [Scored(1, 0.8, 0.5), Scored(2, 0.3, 0.5)]
    spread = spread_links(scored, {1: [2, 3], 3: [4]}, {2: 0.5, 3: 0.5, 4: 0.5}, seeds=5, decay=0.6)
    got = {s.entry_id: round(s.score, 4) for s in spread}
    assert got == {1: 0.8, 2: 0.48, 3: 0.48}  # 4 is two hops away: not reached
    assert spread[1].components["spread"] == pytest.approx(0.18)
