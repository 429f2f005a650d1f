"""Reinforcement and decay against values computed by hand from the original's formulas."""

from __future__ import annotations

import datetime as dt

import pytest

from somnid.memory.kinds import Kind
from somnid.memory.lifecycle import (
    Vitals,
    daily_factor,
    decay,
    initial_score,
    record_usage,
    should_retire,
)

DAY = dt.date(2026, 10, 1)


def vitals(score: float, stability: int = 0, last_decay: dt.date | None = DAY) -> Vitals:
    return Vitals(score=score, stability=stability, last_used=DAY, last_decay=last_decay)


@pytest.mark.parametrize(
    ("kind", "stability", "salience", "expected"),
    [
        (Kind.KNOWLEDGE, 0, None, 0.9),  # 1 - 0.1 / 1
        (Kind.KNOWLEDGE, 1, None, 1 - 0.1 / 1.5),  # 0.93333
        (Kind.KNOWLEDGE, 2, None, 0.95),  # 1 - 0.1 / 2
        (Kind.KNOWLEDGE, 4, None, 1 - 0.1 / 3),  # 0.96667
        (Kind.KNOWLEDGE, 10, None, 1 - 0.1 / 6),  # 0.98333
        (Kind.SKILL, 0, None, 0.9),
        (Kind.EPISODE, 0, "low", 0.75),  # 1 - 0.25
        (Kind.EPISODE, 0, "mid", 0.825),  # 1 - 0.25 * 0.7
        (Kind.EPISODE, 0, "medium", 0.825),
        (Kind.EPISODE, 0, "high", 0.9),  # 1 - 0.25 * 0.4
        (Kind.EPISODE, 2, "high", 0.95),  # 1 - 0.1 / 2
        (Kind.EPISODE, 1, "mid", 1 - 0.175 / 1.5),
        (Kind.EPISODE, 0, None, 0.75),  # unknown salience decays as low
    ],
)
def test_daily_factor(kind: Kind, stability: int, salience: str | None, expected: float) -> None:
    assert daily_factor(kind, stability, salience) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(
    ("kind", "stability", "salience", "start", "days", "expected"),
    [
        (Kind.KNOWLEDGE, 0, None, 0.5, 1, 0.45),
        (Kind.KNOWLEDGE, 0, None, 0.5, 8, 0.5 * 0.43046721),
        (Kind.KNOWLEDGE, 0, None, 0.5, 9, 0.5 * 0.387420489),
        (Kind.KNOWLEDGE, 2, None, 1.0, 30, 0.95**30),  # 0.214638763
        (Kind.KNOWLEDGE, 4, None, 0.8, 365, 0.8 * (1 - 0.1 / 3) ** 365),
        (Kind.EPISODE, 0, "low", 0.4, 3, 0.4 * 0.421875),
        (Kind.EPISODE, 0, "mid", 0.6, 6, 0.6 * 0.825**6),
        (Kind.EPISODE, 0, "high", 0.8, 14, 0.8 * 0.9**14),
    ],
)
def test_decay_catches_up_missed_days(
    kind: Kind, stability: int, salience: str | None, start: float, days: int, expected: float
) -> None:
    after = decay(vitals(start, stability), kind, DAY + dt.timedelta(days=days), salience)
    assert after.score == pytest.approx(expected, rel=1e-9)
    assert after.last_decay == DAY + dt.timedelta(days=days)
    assert after.stability == stability


def test_decay_day_by_day_equals_catch_up() -> None:
    stepwise = vitals(0.9, 3)
    for day in range(1, 41):
        stepwise = decay(stepwise, Kind.KNOWLEDGE, DAY + dt.timedelta(days=day))
    at_once = decay(vitals(0.9, 3), Kind.KNOWLEDGE, DAY + dt.timedelta(days=40))
    assert stepwise.score == pytest.approx(at_once.score, rel=1e-12)


def test_decay_is_idempotent_within_a_day() -> None:
    once = decay(vitals(0.5), Kind.KNOWLEDGE, DAY + dt.timedelta(days=2))
    twice = decay(once, Kind.KNOWLEDGE, DAY + dt.timedelta(days=2))
    assert twice == once
    assert decay(vitals(0.5), Kind.KNOWLEDGE, DAY) == vitals(0.5)
    assert decay(vitals(0.5), Kind.KNOWLEDGE, DAY - dt.timedelta(days=3)) == vitals(0.5)


def test_missing_last_decay_counts_as_today() -> None:
    fresh = vitals(0.5, last_decay=None)
    assert decay(fresh, Kind.KNOWLEDGE, DAY + dt.timedelta(days=5)) == fresh


@pytest.mark.parametrize("kind", [Kind.INTENTION, Kind.PROFILE])
def test_intentions_and_profiles_never_decay(kind: Kind) -> None:
    start = vitals(1.0)
    assert decay(start, kind, DAY + dt.timedelta(days=400)) == start
    assert not should_retire(Vitals(0.01, 0, None, None), kind)


@pytest.mark.parametrize(
    ("kind", "stability", "salience", "start", "retired_after"),
    [
        # The reference's table of lifetimes without reinforcement.
        (Kind.KNOWLEDGE, 0, None, 0.5, 9),
        (Kind.KNOWLEDGE, 0, None, 0.3, 4),
        (Kind.KNOWLEDGE, 1, None, 0.7, 19),
        (Kind.KNOWLEDGE, 3, None, 1.0, 40),
        (Kind.KNOWLEDGE, 10, None, 1.0, 96),
        (Kind.EPISODE, 0, "low", 0.4, 3),
        (Kind.EPISODE, 0, "mid", 0.6, 6),
        (Kind.EPISODE, 0, "high", 0.8, 14),
    ],
)
def test_lifetimes_match_the_reference(
    kind: Kind, stability: int, salience: str | None, start: float, retired_after: int
) -> None:
    state = vitals(start, stability)
    day = 0
    while not should_retire(state, kind):
        day += 1
        state = decay(state, kind, DAY + dt.timedelta(days=day), salience)
        assert day < 1000
    assert day == retired_after


def test_usage_on_a_new_day_strengthens() -> None:
    after = record_usage(vitals(0.5, 1), Kind.KNOWLEDGE, DAY + dt.timedelta(days=1))
    assert after.score == pytest.approx(0.7)
    assert after.stability == 2
    assert after.last_used == DAY + dt.timedelta(days=1)


def test_usage_on_the_same_day_adds_little() -> None:
    after = record_usage(vitals(0.5, 1), Kind.KNOWLEDGE, DAY)
    assert after.score == pytest.approx(0.55)
    assert after.stability == 1


def test_episodes_reconsolidate() -> None:
    after = record_usage(vitals(0.6, 2), Kind.EPISODE, DAY + dt.timedelta(days=3))
    assert after.score == pytest.approx(0.63)
    assert after.stability == 2


def test_score_is_capped_at_one() -> None:
    assert record_usage(vitals(0.95), Kind.SKILL, DAY + dt.timedelta(days=1)).score == 1.0
    assert record_usage(vitals(0.99), Kind.EPISODE, DAY).score == 1.0
    assert record_usage(vitals(0.98), Kind.KNOWLEDGE, DAY).score == 1.0


def test_spaced_use_beats_massed_use() -> None:
    massed = vitals(0.5)
    for _ in range(4):
        massed = record_usage(massed, Kind.KNOWLEDGE, DAY + dt.timedelta(days=1))
    spaced = vitals(0.5)
    for day in range(1, 5):
        spaced = record_usage(spaced, Kind.KNOWLEDGE, DAY + dt.timedelta(days=day))
    assert spaced.stability == 4 > massed.stability == 1
    assert spaced.score > massed.score


@pytest.mark.parametrize(
    ("kind", "kwargs", "expected"),
    [
        (Kind.KNOWLEDGE, {}, 0.5),
        (Kind.KNOWLEDGE, {"verified": False}, 0.3),
        (Kind.SKILL, {"verified": False}, 0.3),
        (Kind.EPISODE, {"salience": "low"}, 0.4),
        (Kind.EPISODE, {"salience": "mid"}, 0.6),
        (Kind.EPISODE, {"salience": "HIGH"}, 0.8),
        (Kind.EPISODE, {"salience": "weird"}, 0.4),
        (Kind.INTENTION, {}, 1.0),
    ],
)
def test_initial_scores(kind: Kind, kwargs: dict[str, object], expected: float) -> None:
    assert initial_score(kind, **kwargs) == expected  # type: ignore[arg-type]
