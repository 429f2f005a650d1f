"""Reinforcement and forgetting: the numbers of the original memory core, as pure functions.

* ``record_usage``: a use on a new day adds stability +1 and score +0.2; another use on the
  same day adds only +0.05 (spaced repetition beats massed repetition). Episodes are
  reconsolidated instead: score +0.03, stability unchanged. Scores are capped at 1.
* ``decay``: once per day-step, ``daily = 1 - base / (1 + 0.5 * stability)`` and
  ``score *= daily ** days``, with base 0.1 for knowledge and skills and 0.25 for episodes;
  high-salience episodes use ``base * 0.4``, mid ``base * 0.7``.
* Entries whose score falls below the retirement floor (0.2) are archived, never deleted.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from somnid.memory.kinds import SALIENCE_DECAY_FACTOR, SALIENCE_SCORE, Kind, normalise_salience

NEW_DAY_STABILITY = 1
NEW_DAY_SCORE = 0.2
SAME_DAY_SCORE = 0.05
EPISODE_RECONSOLIDATION = 0.03
STABILITY_FLATTENING = 0.5
RETIRE_BELOW = 0.2
MAX_STABILITY = 10_000  # far beyond any use: a cap for what a client or a dream sets


@dataclass(frozen=True, slots=True)
class Vitals:
    """The numbers that drive an entry's life: activation and consolidation."""

    score: float
    stability: int
    last_used: dt.date | None
    last_decay: dt.date | None


def clamp_score(score: float) -> float:
    return min(1.0, max(0.0, score))


def record_usage(vitals: Vitals, kind: Kind, day: dt.date) -> Vitals:
    """The entry was used (recalled or re-confirmed) on ``day``."""
    if kind is Kind.EPISODE:
        return Vitals(
            clamp_score(vitals.score + EPISODE_RECONSOLIDATION),
            vitals.stability,
            day,
            vitals.last_decay,
        )
    if vitals.last_used == day:
        return Vitals(
            clamp_score(vitals.score + SAME_DAY_SCORE), vitals.stability, day, vitals.last_decay
        )
    return Vitals(
        clamp_score(vitals.score + NEW_DAY_SCORE),
        vitals.stability + NEW_DAY_STABILITY,
        day,
        vitals.last_decay,
    )


def daily_factor(kind: Kind, stability: int, salience: str | None = None) -> float:
    """The fraction of activation an entry keeps per day without use."""
    base = kind.decay_base
    if kind is Kind.EPISODE:
        base *= SALIENCE_DECAY_FACTOR[normalise_salience(salience)]
    return 1.0 - base / (1.0 + max(0, stability) * STABILITY_FLATTENING)


def decay(vitals: Vitals, kind: Kind, day: dt.date, salience: str | None = None) -> Vitals:
    """Decay up to ``day``. Idempotent within a day; missed days are caught up at once.

    A missing ``last_decay`` counts as ``day`` (nothing to catch up), as in the original.
    """
    if not kind.decays:
        return vitals
    last = vitals.last_decay or day
    days = (day - last).days
    if days <= 0:
        return vitals
    factor = daily_factor(kind, vitals.stability, salience)
    return Vitals(vitals.score * factor**days, vitals.stability, vitals.last_used, day)


def should_retire(vitals: Vitals, kind: Kind, floor: float = RETIRE_BELOW) -> bool:
    return kind.decays and vitals.score < floor


def initial_score(kind: Kind, *, verified: bool = True, salience: str | None = None) -> float:
    """Where a new entry starts: episodes by salience, others 0.5 (0.3 unverified)."""
    if kind is Kind.EPISODE:
        return SALIENCE_SCORE[normalise_salience(salience)]
    if kind is Kind.INTENTION or kind is Kind.PROFILE:
        return 1.0
    return 0.5 if verified else 0.3
