"""Relative dates written out: what a dream stores beside the words that were said.

"Yesterday I met her in Boston", said on 2023-10-04, is stored as "Yesterday (2023-10-03)
I met her in Boston": a memory read months later must not depend on the day it is read. The
value names the period the words mean (:mod:`somnid.memory.dates.reading` reads them):

- a day ``2023-10-03``; a calendar week ``week of 2023-09-25`` (its Monday), never one day
  of it; a weekend ``weekend of 2023-09-30`` (its Saturday); a month ``2023-11``; a season
  ``summer 2022``; a quarter ``Q3 2022``, a half year ``H1 2022``; a year ``2024``;
- ``N weeks ago`` the day (``2023-09-20``), ``N months ago`` its month, ``N years ago`` its
  year: about that much, so no finer than the unit said.

Each form is one recall reads back as the same days. A span that names no such period
(``the past week``: the seven days up to the day) and vague words (``recently``) are left
as they are: there is nothing exact to write.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from somnid.memory.dates import calendar as cal
from somnid.memory.dates.reading import Span, find_dates
from somnid.memory.dates.words import SEASON_NAMES


@dataclass(frozen=True, slots=True)
class Resolved:
    start: int
    end: int
    expression: str
    value: str
    """``YYYY-MM-DD``, ``week of YYYY-MM-DD``, ``weekend of YYYY-MM-DD``, ``YYYY-MM``,
    ``<season> YYYY`` or ``YYYY``."""


def value(span: Span) -> str | None:
    """The written form of a span's period, or None when it names no calendar period."""
    if len(span.ranges) != 1:
        return None
    first, last = (dt.date.fromordinal(x) for x in span.ranges[0])
    if span.around:
        day = dt.date.fromordinal(span.ranges[0][0] + span.around)
        month, year = f"{day.year:04d}-{day.month:02d}", f"{day.year:04d}"  # (%Y: "1" for 0001)
        return {"month": month, "year": year}.get(span.grain, day.isoformat())
    if first == last:
        return first.isoformat()
    if span.grain == "week" and cal.week_range(first) == span.ranges[0]:
        return f"week of {first.isoformat()}"
    if span.grain == "weekend" and first.weekday() == 5 and (last - first).days == 1:
        return f"weekend of {first.isoformat()}"
    if span.grain == "month" and cal.month_range(first.year, first.month) == span.ranges[0]:
        return f"{first.year:04d}-{first.month:02d}"
    if span.grain == "season" and cal.season_range(first.year, first.month) == span.ranges[0]:
        if first.month in SEASON_NAMES:
            return f"{SEASON_NAMES[first.month]} {first.year:04d}"
        return f"Q{first.month // 3 + 1} {first.year:04d}"  # 1, 4, 7, 10: a quarter
    if span.grain == "year" and cal.year_range(first.year) == span.ranges[0]:
        return f"{first.year:04d}"
    if (
        span.grain == "year"
        and first.day == 1
        and first.month in (1, 7)
        and last == _half_end(first)
    ):
        return f"H{first.month // 6 + 1} {first.year:04d}"
    return None


def _half_end(first: dt.date) -> dt.date:
    return dt.date(first.year, 6, 30) if first.month == 1 else dt.date(first.year, 12, 31)


def resolve(text: str, ref: dt.date) -> list[Resolved]:
    """The relative expressions in ``text`` with their absolute values, in text order."""
    found = []
    for span in find_dates(text, ref):
        if span.relative and (written := value(span)) is not None:
            found.append(Resolved(span.start, span.end, text[span.start : span.end], written))
    return found


def absolutise(text: str, ref: dt.date) -> tuple[str, list[str]]:
    """``text`` with each relative expression followed by its absolute value in
    parentheses (unless already there), and the values, in order."""
    parts: list[str] = []
    values: list[str] = []
    last = 0
    for item in resolve(text, ref):
        parts.append(text[last : item.end])
        following = text[item.end : item.end + len(item.value) + 3]
        if item.value not in following:
            parts.append(f" ({item.value})")
        values.append(item.value)
        last = item.end
    parts.append(text[last:])
    return "".join(parts), values
