"""The kinds of memory somnid keeps, and what each kind's entries are made of."""

from __future__ import annotations

import enum

from somnid.errors import InvalidInput


class Kind(enum.StrEnum):
    """A kind of memory. The value is what the API and the index call it."""

    KNOWLEDGE = "knowledge"  # semantic: facts, decisions, pitfalls, preferences
    EPISODE = "episode"  # episodic: what happened, when, how it went
    INTENTION = "intention"  # prospective: what to do, when, on which cue
    SKILL = "skill"  # procedural: distilled how-tos (SKILL.md)
    PROFILE = "profile"  # identity: the agent's about_me and each user's profile

    @property
    def decays(self) -> bool:
        """Intentions (Zeigarnik) and profiles never fade."""
        return self in (Kind.KNOWLEDGE, Kind.EPISODE, Kind.SKILL)

    @property
    def archivable(self) -> bool:
        return self is not Kind.PROFILE

    @property
    def decay_base(self) -> float:
        """Base daily loss: 0.1 for semantic memory and skills, 0.25 for episodes."""
        return 0.25 if self is Kind.EPISODE else 0.1


# The entry name of the agent's own profile; any other profile name is a user id.
SELF_PROFILE = "about_me"

SALIENCE_SCORE = {"low": 0.4, "mid": 0.6, "high": 0.8}
SALIENCE_DECAY_FACTOR = {"high": 0.4, "mid": 0.7, "low": 1.0}
PRIORITIES = ("high", "mid", "low")


def normalise_salience(value: object) -> str:
    """``medium`` is ``mid``; anything unknown is ``low`` (as the original scored it)."""
    text = str(value or "").strip().lower()
    if text == "medium":
        return "mid"
    return text if text in SALIENCE_SCORE else "low"


def check_priority(value: object) -> str:
    """A priority someone gives (a tool, a request): ``low``, ``mid`` (or ``medium``) or
    ``high``; anything else is refused, never quietly made ``mid``."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return "mid"  # none given (a tool's "" is "not set", as for its other fields)
    text = value.strip().lower() if isinstance(value, str) else None
    if text not in (*PRIORITIES, "medium"):
        raise InvalidInput(f"priority must be low, mid or high, not {str(value)[:40]!r}")
    return normalise_priority(text)


def check_salience(value: object) -> str:
    """An episode's salience someone gives: ``low``, ``mid`` (or ``medium``) or ``high``;
    anything else is refused, never quietly made ``low`` (a file's unknown one reads so)."""
    text = value.strip().lower() if isinstance(value, str) else None
    if text not in (*SALIENCE_SCORE, "medium"):
        raise InvalidInput(f"salience must be low, mid or high, not {str(value)[:40]!r}")
    return normalise_salience(text)


def normalise_priority(value: object) -> str:
    """A priority as read from a file (a person's hand): anything unknown reads as ``mid``."""
    text = str(value or "").strip().lower()
    if text in ("", "medium"):
        return "mid"
    return text if text in PRIORITIES else "mid"
