"""Which way a date said without its year or week points: the tense of the clause around it.

A report is of a day gone (``I went … on Friday``, 周五去了), a plan of a day to come (``I'm
flying on Friday``, 周五要去); a clause that says neither is read as the past.
"""

from __future__ import annotations

import re

_PAST = re.compile(
    r"\b(went|was|were|did|had|got|saw|met|came|took|made|ago|yesterday|last|paid|said|told"
    r"|bought|sent|left|spent|found|gave|ran|ate|wrote|flew|drove|sold|won|lost|began|felt"
    r"|kept|brought|thought|caught|heard|held|built|slept|fell|knew|chose|forgot)\b"
    r"|(?<![a-z])[a-z]{3,}ed\b|了|过|已经|昨",
    re.I,
)
_FUTURE = re.compile(
    r"\b(will|'ll|going to|gonna|wanna|want to|plan|plans|planning|let's|lets|can't wait|"
    r"next|tomorrow|hope to|see you|meet|am|i'm|are|we're|is)\b|会|要|打算|准备|计划|将|想|明|见",
    re.I,
)
_STOPS = ".!?。！？;；"
CLAUSE_CHARS = 200


def _clause(match: re.Match[str]) -> str:
    """The clause around ``match``: at most CLAUSE_CHARS either side (an unpunctuated body
    is not one clause per date)."""
    text = match.string
    origin, limit = max(0, match.start() - CLAUSE_CHARS), match.end() + CLAUSE_CHARS
    start = max(max(text.rfind(mark, origin, match.start()) for mark in _STOPS) + 1, origin)
    ends = [i for mark in _STOPS if (i := text.find(mark, match.end(), limit)) >= 0]
    return text[start : min(ends) if ends else limit]


def past(match: re.Match[str]) -> bool:
    """The clause around ``match`` speaks of the past (``I started … this Monday``)."""
    return bool(_PAST.search(_clause(match)))


def leaning(match: re.Match[str]) -> int:
    """Which way the clause around ``match`` points: -1 when it speaks of the past (``I
    went … on Friday``, 周五去了), +1 when it speaks of a plan or the present (``I'm flying
    on Friday``, 周五要去), 0 when it says neither."""
    around = _clause(match)
    if _PAST.search(around):
        return -1
    return 1 if _FUTURE.search(around) else 0


def tense(match: re.Match[str]) -> int:
    """Which way a weekday said bare points: the clause's :func:`leaning`, the past when it
    says neither."""
    return leaning(match) or -1
