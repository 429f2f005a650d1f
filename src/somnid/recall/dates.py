"""What a query says about time, and the days a memory is about, for the time pass.

Dates are read by :mod:`somnid.memory.dates` (the one reading of dates, en + zh, that the
dream uses too); this module says what recall does with them: a query's dates are read
against today, a day or month without a year in any year; a memory's against its own
``when``. Each span weighs by its *grain* (day 1.0, weekend 0.9, week 0.7, month 0.5, season
0.4, year 0.25); the calendar dates of a query bound the search, its reference point
(``as of May 2023``) ends it; a query that asks for a time (``When did …``, 什么时候) says so.

A range is a pair of proleptic ordinals (``date.toordinal()``), both ends inclusive.
"""

from __future__ import annotations

import bisect
import datetime as dt
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from somnid.memory.dates import find_dates, is_reference

GRAIN_WEIGHT = {"day": 1.0, "weekend": 0.9, "week": 0.7, "month": 0.5, "season": 0.4, "year": 0.25}


@dataclass(frozen=True, slots=True)
class Periods:
    """Day ranges merged and in order, to tell in O(log n) whether a range touches any of
    them: a day or month without a year is one range per year, and the time pass asks of
    every candidate's dates."""

    starts: tuple[int, ...]
    ends: tuple[int, ...]

    @classmethod
    def of(cls, ranges: Iterable[tuple[int, int]]) -> Periods:
        merged: list[list[int]] = []
        for start, end in sorted(r for r in ranges if r[0] <= r[1]):  # a reversed one: no day
            if merged and start <= merged[-1][1] + 1:  # whole days: adjacent ranges join
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end])
        return cls(tuple(s for s, _ in merged), tuple(e for _, e in merged))

    def touch(self, ranges: Iterable[tuple[int, int]]) -> bool:
        """Whether any of ``ranges`` shares a day with these periods."""
        for start, end in ranges:
            # The first period not over before ``start``; the later ones begin later still.
            k = bisect.bisect_left(self.ends, start)
            if start <= end and k < len(self.ends) and self.starts[k] <= end:
                return True
        return False


@dataclass(frozen=True, slots=True)
class TimeQuery:
    """What a query says about time: the spans found, each a range or, for a day or month
    without a year, one range per year; an entry matches with the best span's grain."""

    spans: tuple[tuple[str, str, tuple[tuple[int, int], ...]], ...]  # text, grain, ranges
    bound: tuple[tuple[int, int], ...] = ()
    """The days the calendar dates of the query (a month, a year, ``the last week of July
    2023``; not ``yesterday``) allow; empty when it names none."""
    until: int | None = None
    """The last day of a reference point (``as of May 2023``): nothing said after it."""
    asks_when: bool = False
    """The query asks for a time (``When did …``, ``什么时候``): an entry whose text names
    one is likelier the answer than one that does not."""
    _spans: tuple[tuple[float, Periods], ...] = field(init=False, repr=False, compare=False)
    _bound: Periods = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        weighed = [(GRAIN_WEIGHT.get(grain, 0.25), Periods.of(r)) for _t, grain, r in self.spans]
        # The most precise span first: the first one an entry touches is its match.
        weighed.sort(key=lambda pair: -pair[0])
        object.__setattr__(self, "_spans", tuple(weighed))
        object.__setattr__(self, "_bound", Periods.of(self.bound))

    def __bool__(self) -> bool:
        return bool(self.spans) or bool(self.bound) or self.until is not None or self.asks_when

    def outside(self, ranges: list[tuple[int, int]], written: int | None) -> bool:
        """An entry's dates (``ranges``, its ``written`` day among them) fall outside the
        period the query bounds, or it was written after the query's reference point."""
        if self.until is not None and written is not None and written > self.until:
            return True
        if not self.bound or not ranges:
            return False
        return not self._bound.touch(ranges)

    def match(self, ranges: list[tuple[int, int]]) -> float:
        """How precisely an entry's dates meet the query's: for each of its ranges, the
        grain weight of the most precise span it overlaps, but no more than its own grain's
        (an entry that says "in 2023" meets "June 27, 2023" as a year, not as a day); the
        best of them; 0 if none."""
        best = 0.0
        for found in ranges:
            own = _precision(found)
            for weight, periods in self._spans:
                if min(weight, own) <= best:
                    break  # the spans come most precise first: none after can do better
                if periods.touch((found,)):
                    best = min(weight, own)
                    break
        return best

    def bounds(self) -> tuple[int, int] | None:
        """The widest range any span covers (a prefilter for the index)."""
        if not self.spans:
            return None
        starts = [s for _t, _g, r in self.spans for s, _ in r]
        ends = [e for _t, _g, r in self.spans for _, e in r]
        return min(starts), max(ends)

    def describe(self) -> str:
        parts = []
        for text, grain, ranges in self.spans:
            if len(ranges) > 1:
                first = dt.date.fromordinal(ranges[0][0])
                parts.append(f"{text!r} ({grain}, {first:%m-%d} in any year)")
            else:
                start, end = (dt.date.fromordinal(x) for x in ranges[0])
                span = start.isoformat() if start == end else f"{start}..{end}"
                parts.append(f"{text!r} ({grain}, {span})")
        if self.until is not None:
            parts.append(f"as of {dt.date.fromordinal(self.until).isoformat()}")
        if self.asks_when:
            parts.append("asks when")
        return "; ".join(parts)


def _precision(found: tuple[int, int]) -> float:
    """The grain weight a range's length stands for: a day, a weekend, a week, a month, a
    season, a year or more."""
    days = found[1] - found[0] + 1
    grain = (
        "day" if days <= 1 else "weekend" if days <= 3 else "week" if days <= 9
        else "month" if days <= 45 else "season" if days <= 100 else "year"
    )  # fmt: skip
    return GRAIN_WEIGHT[grain]


def query_time(query: str, today: dt.date) -> TimeQuery:
    """The time a query asks about, relative to ``today``: the spans it names, the period
    its calendar dates bound, and a reference point (``as of``, ``by``, ``截至``), which is
    not the time of an event and so is no span."""
    spans: list[tuple[str, str, tuple[tuple[int, int], ...]]] = []
    bound: list[tuple[int, int]] = []
    until: int | None = None
    for span in find_dates(query, today, any_year=True):
        if is_reference(query, span):
            # The latest reading not after today (a month without a year: the last one).
            past = [e for _s, e in span.ranges if e <= today.toordinal()] or [span.ranges[0][1]]
            until = max(past) if until is None else min(until, max(past))
            continue
        around = _AROUND.search(query[max(0, span.start - 40) : span.start])
        if around is not None and _CAUSAL.match(query, span.end):
            around = None
        zh = _ZH_SIDE.match(query[span.end :])
        open_side = _ZH_SIDES[zh["side"]] if zh else None
        if around is not None and around["unit"] is None:
            open_side = " ".join(around["side"].lower().split())
        if open_side is not None and not span.relative:
            # "before 2024", "since May 2023", 2023年以来: every day on that side of it is
            # meant (bound), the stretch next to it likelier (the span); not the date itself.
            # A date without a year ("since May"): its latest reading not after today.
            seen = [r for r in span.ranges if r[0] <= today.toordinal()] or [span.ranges[0]]
            spans.append(_beside(f"{open_side} {span.text}", max(seen), open_side))
            bound.append(_side(max(seen), open_side))
            continue
        spans.append((span.text, span.grain, span.ranges))
        # A question's relative time ("yesterday", "last summer") is often relative to a
        # moment the asker has in mind, not to the clock: only calendar dates bound.
        if not span.relative:
            # "the week before August 3": the month up to the day; "after": the month from it.
            widen = around["side"].lower() if around is not None else None
            for first, last in span.ranges:
                if widen in _BEFORE:
                    first -= 31
                elif widen is not None:
                    last += 31
                bound.append((first, last))
    return TimeQuery(tuple(spans), tuple(bound), until, bool(_ASKS_WHEN.search(query)))


# A question for a time: "When did …", "what year", "how long ago", 什么时候, 哪一年, 几月.
_ASKS_WHEN = re.compile(
    r"^\W*when\b|\b(?:what|which)\s+(?:year|month|day|date|week(?:end)?)\b"
    r"|\bhow\s+long\s+ago\b|什么时候|何时|哪一?天|哪一?年|哪个月|几月|几号|多久以前",
    re.IGNORECASE,
)
_AROUND = re.compile(
    r"(?P<unit>\b(?:day|night|morning|evening|week|weekend|month|year|monday|tuesday"
    r"|wednesday|thursday|friday|saturday|sunday)s?\s+)?"
    r"\b(?P<side>before|after|since|prior\s+to|earlier\s+than|later\s+than)\s+(?:the\s+)?$",
    re.IGNORECASE,
)
_BEFORE = ("before", "prior to", "earlier than")
# "since 2023 was a bad year": a reason, not a side of the date (its verb follows the date).
_CAUSAL = re.compile(r"\s+(?:was|is|were|are|has|had|will|would)\b", re.IGNORECASE)
# 起 is "since" (2021年起我…, 2020年起至今), not in a word (起诉 "sued", 起床, 起飞); 前 alone
# is "before" only where the clause goes on (2023年前我…), not in a word (前往 "go to", 前后
# "around", 前端) nor "the first …" (2023年前三个月).
_ZH_SIDE = re.compile(
    r"\s*的?(?P<side>之前|以前|以来|之后|以后|起(?![诉草床来飞身跑点源因码色伏义])"
    r"|前(?=$|[\s，。,.！？!?、；;：:我你他她它们就都还的]))"
)
_ZH_SIDES = {"之前": "before", "以前": "before", "前": "before", "以来": "since", "起": "since",
             "之后": "after", "以后": "after"}  # fmt: skip
_FIRST_DAY, _LAST_DAY = dt.date.min.toordinal(), dt.date.max.toordinal()


def _side(found: tuple[int, int], side: str) -> tuple[int, int]:
    """The days on ``side`` of a range: before it, after it, or from it on (since)."""
    first, last = found
    if side in _BEFORE:
        return _FIRST_DAY, first - 1
    return (first if side == "since" else last + 1), _LAST_DAY


def _beside(
    text: str, found: tuple[int, int], side: str
) -> tuple[str, str, tuple[tuple[int, int], ...]]:
    """The stretch next to a range on ``side`` (as long as it, a week at least; whole
    months beside whole months: the year after 2024 is 2025, the month before March is
    February), as a span."""
    first, last = found
    length = max(last - first + 1, 7)
    months = _whole_months(first, last)
    if side == "since":
        near = (first, last)
    elif months:
        near = _months_from(first, -months) if side in _BEFORE else _months_from(last + 1, months)
    elif side in _BEFORE:
        near = (first - length, first - 1)
    else:
        near = (last + 1, last + length)
    grain = {1.0: "day", 0.9: "weekend", 0.7: "week", 0.5: "month", 0.4: "season"}.get(
        _precision(near), "year"
    )
    return text, grain, (near,)


def _whole_months(first: int, last: int) -> int:
    """How many whole calendar months ``first``..``last`` is (0: not whole months)."""
    start, end = dt.date.fromordinal(first), dt.date.fromordinal(last)
    if start.day != 1 or (end + dt.timedelta(days=1)).day != 1:
        return 0
    return (end.year - start.year) * 12 + end.month - start.month + 1


def _months_from(day: int, months: int) -> tuple[int, int]:
    """The ``abs(months)`` whole months that start at ``day`` (a month's first day; going
    back when ``months`` is negative: the months that end the day before it)."""
    start = dt.date.fromordinal(day)
    if months < 0:
        index = start.year * 12 + start.month - 1 + months
        begin = dt.date(index // 12, index % 12 + 1, 1)
        return begin.toordinal(), day - 1
    index = start.year * 12 + start.month - 1 + months
    return day, dt.date(index // 12, index % 12 + 1, 1).toordinal() - 1


def memory_dates(text: str, when: dt.date | None) -> list[tuple[int, int]]:
    """The days a memory's text speaks of: absolute ones, and relative ones (``yesterday``,
    ``last Friday``) resolved against the memory's own date; none of the relative ones
    without one."""
    return [r for span in find_dates(text, when) for r in span.ranges]
