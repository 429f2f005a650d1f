"""Dates read from text as day ranges, against the day the text was said.

Every kind of :mod:`somnid.memory.dates.patterns` becomes a :class:`Span`: where it is, how
precise it is (its *grain*: day, weekend, week, month, season, year) and the days it covers.
One rule per phrase, the same in English and Chinese:

- a day word is a day (``the day before yesterday``, 前天: two back); a calendar week
  (``last week``, 上周) is the Monday-to-Sunday week, a month (``next month``, 下个月) the
  month, a year the year, a weekend (``last weekend``, 上周末) the Saturday and Sunday of the
  week before (on a Sunday too: the weekend that day ends is ``this weekend``);
- ``last``/``next`` + a weekday is the one strictly before/after; ``this`` + a weekday, and
  上/这/下 + a weekday, are that day of the calendar week meant; ``this coming Friday`` is
  ahead; a weekday said bare (``on Friday``, 周五) points the way the clause around it does
  (:func:`tense`): a report is of a day gone, a plan of a day to come;
- ``N weeks ago`` / ``in N weeks`` / N周前 / N周后 is about that day (its grain the unit,
  and ``around`` days either side: a week ±3, a month ±10, a year ±120);
- a season (``last summer``, 去年夏天) is its three months; ``the past week`` the seven days
  up to the reference day.
- a range of days (``between Aug 11 and Aug 15``, ``May 3-7``, ``8 to 14 May``,
  8月11日到15日) is every day from the first to the last, at most a season; ``and`` makes a
  range only after ``between`` (``on Aug 11 and 15`` is two days).

- a range of months or years (``Jan-Mar 2023``, ``from May to July``, 3月到5月, ``2022-2023``,
  ``2023-24``) is every day from the first's start to the last's end (see
  :mod:`~somnid.memory.dates.ranges`); ``2023-11`` is the month, as the dream writes it;
- the middle of a month is its second ten days, of a season its middle month;
- a month alone, with no day and no year, is a date after a word that sets it in time
  (``in May``, ``since may``, ``for October``) or in a list of months; alone when it is
  capitalised and no name or verb as often (``October was busy``; not ``April said``,
  ``May I``); not before a name after a weak word (``by June Carter``).

A calendar date without a year is read in the reference's year (the year before when it
would be more than two months ahead; the year after when that is at most two months ahead
and the clause is of no past: ``We fly out on January 3`` said on December 20), or in every
year from 1970 when ``any_year`` (a question's "on October 3"). Without a reference day only
dates that name their year are read.
"""

from __future__ import annotations

import bisect
import datetime as dt
import re
from dataclasses import dataclass

from somnid.memory.dates import calendar as cal
from somnid.memory.dates.patterns import (
    COMPILED,
    HAS_CHINESE,
    MAY_HAVE_DATE,
    PARTS,
    RANGES,
    RELATIVE,
    WITHOUT_CHINESE,
    year_beside,
)
from somnid.memory.dates.periods import (
    DAY_KINDS,
    YEAR_PART_KINDS,
    day_of_month,
    not_a_year,
    year_part,
)
from somnid.memory.dates.ranges import (
    ANY_YEAR,
    Found,
    date_or_none,
    day_range,
    long_range,
    month_of,
    year_range,
    years_of,
)
from somnid.memory.dates.tense import past, tense
from somnid.memory.dates.words import (
    DIRECTION,
    MONTH_WORD,
    SEASONS,
    WEEKDAYS,
    ZH_SEASONS,
    ZH_WEEKDAYS,
    count,
    month_number,
)

AROUND = {"day": 0, "week": 3, "month": 10, "year": 120}
"""How far either side of its day ``N units ago`` may be (three weeks ago is about a day)."""

_NO_DAY = dt.date(2000, 1, 1)  # reads spans when there is no reference; only dated ones kept
_HAS_YEAR = re.compile(r"(?:19|20)\d{2}")
_ZH_UNIT = {"天": "day", "周": "week", "星期": "week", "个星期": "week", "礼拜": "week",
            "个月": "month", "月": "month", "年": "year"}  # fmt: skip
_ZH_DAYS = {"大前天": -3, "前天": -2, "昨天": -1, "昨晚": -1, "昨日": -1, "今天": 0,
            "今晚": 0, "今日": 0, "今早": 0, "明天": 1, "明晚": 1, "明日": 1, "后天": 2,
            "大后天": 3}  # fmt: skip
_EN_DAYS = {"the day before yesterday": -2, "the day after tomorrow": 2, "yesterday": -1,
            "last night": -1, "tomorrow": 1}  # fmt: skip
_ZH_YEARS = {"前年": -2, "去年": -1, "今年": 0, "明年": 1, "后年": 2}


@dataclass(frozen=True, slots=True)
class Span:
    """A date in a text: ``text[start:end]``, its kind (a pattern's), its grain and the day
    ranges it covers (one per year for a year-less date read in any year)."""

    start: int
    end: int
    text: str
    kind: str
    grain: str
    ranges: tuple[cal.Range, ...]
    around: int = 0
    """Days either side of the one day meant (``3 weeks ago``); 0 for a period."""

    @property
    def relative(self) -> bool:
        """Read against the day it was said (``yesterday``), not from the calendar."""
        return self.kind in RELATIVE


def find_dates(text: str, ref: dt.date | None, *, any_year: bool = False) -> list[Span]:
    """Every date in ``text``, in text order and not overlapping (the first pattern to
    claim a stretch wins), read against ``ref``; without one, only those naming a year."""
    if not text or not MAY_HAVE_DATE.search(text):
        return []
    day = ref or _NO_DAY
    spans: list[Span] = []
    starts: list[int] = []  # the spans taken, in text order: an overlap is found by bisection
    ends: list[int] = []  # (a body of 8000 dates compared each match with every span: 3 s)
    for kind, pattern in COMPILED if HAS_CHINESE.search(text) else WITHOUT_CHINESE:
        for m in pattern.finditer(text):
            whole = m.group(0)  # the span is its words, not the spaces a pattern took with them
            start = m.start() + len(whole) - len(whole.lstrip())
            end = m.end() - len(whole) + len(whole.rstrip())
            at = bisect.bisect_right(starts, start)
            if (at and ends[at - 1] > start) or (at < len(starts) and starts[at] < end):
                continue  # a finer pattern claimed (part of) it
            # A year beside it that no pattern takes (May 1850): no date, and claimed.
            unread = year_beside(text, m)
            try:
                found = None if unread else _read(kind, m, day, any_year)
            except (OverflowError, ValueError):  # a day beyond the calendar's end
                found = None
            if found is None:
                if unread or _impossible(kind, m):  # claimed, so its year is not read alone:
                    starts.insert(at, start)  # "as of 2023-02-30" was "as of 2023-12-31"
                    ends.insert(at, end)
                continue
            grain, ranges, around = found
            starts.insert(at, start)
            ends.insert(at, end)
            spans.append(Span(start, end, whole.strip(), kind, grain, tuple(ranges), around))
    spans.sort(key=lambda span: span.start)
    if ref is None:
        return [s for s in spans if not s.relative and _HAS_YEAR.search(s.text)]
    return spans


def _impossible(kind: str, m: re.Match[str]) -> bool:
    """Whether a match that read as no date names a day in numbers (``2023-02-30``,
    ``February 30, 2023``, ``2023年2月30日``): a day the calendar has not, not a date's
    fragment for a coarser pattern to read."""
    g = m.groupdict()
    return (
        kind == "iso"
        or (kind == "zh_date" and bool(g.get("d")))
        or (kind == "month" and bool(g.get("d1") or g.get("d2")) and bool(g.get("y")))
    )


def _read(kind: str, m: re.Match[str], ref: dt.date, any_year: bool) -> Found | None:
    if kind in YEAR_PART_KINDS:
        return year_part(kind, m, ref, any_year)
    if kind in DAY_KINDS:
        return day_of_month(kind, m, ref)
    if kind in RELATIVE:
        return _relative(kind, m, ref)
    g = m.groupdict()
    if kind in PARTS:
        years = [int(g["y"])] if g.get("y") else list(ANY_YEAR) if any_year else [ref.year]
        return _part(kind, g, years)
    if kind in RANGES:
        return day_range(kind, g, ref, any_year)
    if kind in ("iso_range", "month_range", "zh_month_range"):
        return long_range(kind, g, ref, any_year)
    if kind == "year_range":
        return year_range(g)
    if kind == "year_month":
        if int(g["m"]) == int(g["y"]) % 100 + 1:
            return None  # 2011-12: a season of two years (year_range reads it), as often
        return "month", [cal.month_range(int(g["y"]), int(g["m"]))], 0
    if kind == "week_of":
        day = date_or_none(int(g["y"]), int(g["m"]), int(g["d"]))
        if day is None:
            return None
        if g["unit"].lower() == "weekend":
            return "weekend", [cal.weekend_range(day, 0)], 0
        return "week", [cal.week_range(day)], 0
    if kind == "week_of_day":
        return _week_of_day(g, ref, any_year)
    if kind == "month":
        month = month_number(g["m"])
        day_text = g["d1"] or g["d2"]
        if month is None:
            return None
        if not (day_text or g["y"] or _month_alone(m)):
            return None
        return _day_or_month(g["y"], month, day_text, ref, any_year, ahead=not past(m))
    if kind in ("iso", "zh_date"):
        return _day_or_month(g["y"], month_of(g["m"]), g["d"], ref, any_year)
    if kind == "year" and not_a_year(m):
        return None
    # zh_year, year
    return "year", [cal.year_range(int(g["y"]))], 0


_TIME_WORD_BEFORE = re.compile(
    r"\b(?:in|since|before|after|by|until|till|from|during|through|throughout|of|early|late"
    r"|mid|last|next|this|coming|past|around|about|each|every|for|starting|beginning|ending)"
    r"\s+(?:the\s+)?(?:month\s+of\s+)?$",
    re.IGNORECASE,
)
_LISTED = re.compile(
    rf"\b{MONTH_WORD}\.?(?:\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or|&|to)\s+)$", re.IGNORECASE
)
_WEAK_BEFORE = re.compile(r"\b(?:by|of)\s+(?:the\s+)?$", re.IGNORECASE)
_NAME_AFTER = re.compile(r"\s+(?!I\b)[A-Z][a-z]")
NAME_LIKE = frozenset({"april", "apr", "may", "june", "jun", "august", "aug", "march", "mar"})
"""Months that are as often a name or a verb (April, June, August; May I, march on)."""


def _month_alone(m: re.Match[str]) -> bool:
    """Whether a month with no day and no year is a date. After a word that sets it in time
    (``in May``, ``since may``, ``for October``) or in a list of months (``in March, April
    and May``), it is; alone, a capitalised month is (``October was busy``) unless it is as
    often a name or a verb (:data:`NAME_LIKE`: ``What did April say``, ``August Wilson``,
    ``May I``, ``March forward``); lower-case alone it is not (``march on``). A name after
    a weak word makes it one too: ``a talk by June Carter``."""
    text, word = m.string, m["m"]
    if word.lower() in NAME_LIKE and text.startswith(("'s", "’s"), m.end()):
        return False  # "a gift for April's birthday": hers
    before = text[max(0, m.start() - 30) : m.start()]
    timed = bool(_TIME_WORD_BEFORE.search(before) or _LISTED.search(before))
    if not timed and (word.lower() in NAME_LIKE or not word[0].isupper()):
        return False
    named = bool(_NAME_AFTER.match(text, m.end()))
    return not (named and (not timed or _WEAK_BEFORE.search(before)))


def _week_of_day(g: dict[str, str | None], ref: dt.date, any_year: bool) -> Found | None:
    """The calendar week, or weekend, of a named day (``the week of May 8``)."""
    month, day = month_number(g["m"] or ""), int(g["d1"] or g["d2"] or 0)
    if month is None or not day:
        return None
    weekend = (g["unit"] or "").lower() == "weekend"
    ranges = []
    for year in years_of(g["y"], month, day, ref, any_year):
        if (date := date_or_none(year, month, day)) is not None:
            ranges.append(cal.weekend_range(date, 0) if weekend else cal.week_range(date))
    return (("weekend" if weekend else "week"), ranges, 0) if ranges else None


ROLLING_FEW = 3
"""What "the past few days" counts."""


def _rolling(kind: str, g: dict[str, str | None], ref: dt.date) -> Found | None:
    """The days from ``N units`` before ``ref`` up to it (``the last two weeks``, 过去三个月)."""
    word = (g["n"] or "").lower()
    if word.startswith("couple"):
        n: int | None = 2
    else:
        n = ROLLING_FEW if word in ("few", "several", "几") else count(word)
    if not n:
        return None
    unit = _ZH_UNIT[g["unit"] or ""] if kind == "zh_rolling" else (g["unit"] or "").lower()
    first = cal.shift(ref, unit, -n).toordinal()
    days = ref.toordinal() - first
    grain = "week" if days <= 9 else "month" if days <= 45 else "season" if days <= 100 else "year"
    return grain, [(first, ref.toordinal())], 0


def _relative(kind: str, m: re.Match[str], ref: dt.date) -> Found | None:
    g = m.groupdict()
    if kind in ("rolling", "zh_rolling"):
        return _rolling(kind, g, ref)
    if kind == "twice_removed":
        unit, back = (g["unit"] or "").lower(), (g["which"] or "").lower().startswith("before")
        if unit == "weekend":
            return "weekend", [cal.weekend_range(ref, -2 if back else 2)], 0
        return _unit(unit, -2 if back else 2, ref)
    if kind in ("day_word", "zh_day_word"):
        word = " ".join(g["w"].lower().split())
        offset = _ZH_DAYS[word] if kind == "zh_day_word" else _EN_DAYS.get(word, 0)
        return _day(ref + dt.timedelta(days=offset))
    if kind in ("ago", "in_count", "zh_ago"):
        n = count(g["n"])
        if not n:
            return None
        unit = _ZH_UNIT[g["unit"]] if kind == "zh_ago" else g["unit"].lower()
        back = g["dir"].lower() == "ago" or g["dir"].endswith("前")
        day = cal.shift(ref, unit, -n if back else n).toordinal()
        slack = AROUND[unit]
        return unit, [(day - slack, day + slack)], slack
    if kind in ("rel_weekday", "coming_weekday", "bare_weekday"):
        weekday = WEEKDAYS.index(g["w"].lower())
        if kind == "rel_weekday":
            direction = DIRECTION[g["which"].lower()]
            if direction == 0 and not past(m):
                return _day(cal.weekday(ref, weekday, 0, coming=True))
        else:
            direction = 1 if kind == "coming_weekday" else tense(m)
        return _day(cal.weekday(ref, weekday, direction))
    if kind == "zh_bare_weekday":
        return _day(cal.weekday(ref, ZH_WEEKDAYS[g["w"]], tense(m)))
    if kind == "zh_weekday":
        return _day(cal.weekday_of_week(ref, ZH_WEEKDAYS[g["w"]], DIRECTION[g["which"]]))
    if kind == "rel_season":
        month = SEASONS[g["s"].lower()]
        return "season", [cal.season_from(ref, month, DIRECTION[g["which"].lower()])], 0
    if kind == "zh_season":
        return "season", [cal.season_range(ref.year + _ZH_YEARS[g["which"]], ZH_SEASONS[g["s"]])], 0
    if kind == "zh_weekend":
        return "weekend", [cal.weekend_range(ref, DIRECTION[g["which"]])], 0
    if kind == "zh_year_word":
        return "year", [cal.year_range(ref.year + _ZH_YEARS[g["w"]])], 0
    if kind == "zh_rel_year_month":
        year = str(ref.year + _ZH_YEARS[g["which"]])
        return _day_or_month(year, month_of(g["m"]), g["d"], ref, False)
    if kind == "zh_rel_unit":
        unit = "month" if g["unit"] == "月" else "week"
        return _unit(unit, DIRECTION[g["which"]], ref)
    # rel_unit: last/this/next/past week, weekend, month, year
    which, unit = g["which"].lower(), g["unit"].lower()
    if unit == "weekend":
        return "weekend", [cal.weekend_range(ref, DIRECTION[which])], 0
    if which == "past":
        span = {"week": 7, "month": 31, "year": 365}[unit]
        return unit, [(ref.toordinal() - span, ref.toordinal())], 0
    return _unit(unit, DIRECTION[which], ref)


def _unit(unit: str, direction: int, ref: dt.date) -> Found:
    """The calendar week, month or year ``direction`` from ``ref``'s."""
    return unit, [cal.period_range(cal.shift(ref, unit, direction), unit)], 0


def _day(day: dt.date) -> Found:
    return "day", [cal.day_range(day)], 0


def _day_or_month(
    year_text: str | None,
    month: int,
    day_text: str | None,
    ref: dt.date,
    any_year: bool,
    *,
    ahead: bool = False,
) -> Found | None:
    if not 1 <= month <= 12:
        return None
    day = int(day_text) if day_text else None
    if day is not None and not 1 <= day <= 31:
        return None
    ranges: list[cal.Range] = []
    for year in years_of(year_text, month, day or 1, ref, any_year, ahead=ahead):
        if day is None:
            ranges.append(cal.month_range(year, month))
        elif (date := date_or_none(year, month, day)) is not None:
            ranges.append(cal.day_range(date))
    if not ranges:
        return None
    return ("day" if day is not None else "month"), ranges, 0


def _part(kind: str, g: dict[str, str | None], years: list[int]) -> Found | None:
    """A part of a month or season: the nth week or weekend, early/mid/late, the end."""
    if kind in ("nth_of_month", "zh_nth_of_month", "part_of_month", "zh_part_of_month"):
        word = g["m"] or ""
        month = month_number(word) if kind in ("nth_of_month", "part_of_month") else month_of(word)
        if month is None or not 1 <= month <= 12:
            return None
        if kind in ("part_of_month", "zh_part_of_month"):
            third = _third(g["part"] or "")
            return "week", [cal.part_of_month(y, month, third) for y in years], 0
        weekend = (g["unit"] or "").lower() in ("weekend", "周末")
        nth = _NTH.get((g["nth"] or "").lower(), -1)
        ranges = [cal.nth_week(y, month, nth, weekend=weekend) for y in years]
        return ("weekend" if weekend else "week"), ranges, 0
    season = g["s"] or ""
    first, last = cal.season_range(years[0], SEASONS.get(season.lower()) or ZH_SEASONS[season])
    part = (g.get("part") or "").lower()
    if not part:
        return "season", [(first, last)], 0
    third = _third(part)
    if third == 0:
        return "month", [(first, first + 34)], 0
    if third == 1:  # its middle month
        middle = dt.date.fromordinal(first + 45)
        return "month", [cal.month_range(middle.year, middle.month)], 0
    return "month", [(last - 34, last)], 0


_NTH = {"first": 0, "second": 1, "third": 2, "fourth": 3, "第一": 0, "第二": 1, "第三": 2}


def _third(part: str) -> int:
    """Which third of a period a part names: 0 the start, 1 the middle, 2 the end."""
    part = " ".join(part.lower().split()).removeprefix("the ")
    if part in ("early", "初", "上旬") or part.endswith(("start of", "beginning of")):
        return 0
    if part in ("mid", "中旬") or part.startswith("middle"):
        return 1
    return 2


_REFERENCE_BEFORE = re.compile(
    r"(?P<marker>\bas\s+of|\bby|\buntil|\btill|\bup\s+(?:to|until)|截至|截止到?|到)\s*"
    r"(?:the\s+)?(?:end\s+of\s+(?:the\s+)?)?$",
    re.IGNORECASE,
)
_NOT_FOR_A_RELATIVE_DAY = ("by", "up to", "up until")
"""Markers that make no reference point of a relative date: "What were you up to last
weekend?", "stop by tomorrow" (but "as of last week", "until yesterday" are)."""
_ZH_UNTIL_AFTER = re.compile(r"^\s*(?:为止|以前|之前)")


def is_reference(text: str, span: Span) -> bool:
    """The date is a reference point (``as of May 2023``, ``by May 2023``, ``截至2023年5月``,
    ``到5月为止``): when a question stands, not the time of an event."""
    return reference_stretch(text, span) is not None


def reference_stretch(text: str, span: Span) -> tuple[int, int] | None:
    """Where a reference point is in ``text``, with the words that make the date one
    (``as of``, ``截至``, ``到 … 为止``); None when the date is no reference point."""
    # "as of 2024": the year's pattern takes "of 2024", so the "of" is read with "as".
    lead = re.match(r"(?:of|in)\s+", span.text, re.IGNORECASE)
    origin = max(0, span.start - 24)
    marker = _REFERENCE_BEFORE.search(text[origin : span.start + (lead.end() if lead else 0)])
    if marker is None:
        return None
    word = " ".join(marker["marker"].lower().split())
    if span.relative and word in _NOT_FOR_A_RELATIVE_DAY:
        return None
    after = _ZH_UNTIL_AFTER.match(text[span.end :])
    if word == "到" and after is None:
        return None  # 到 alone is "to" (went to …): only 到 … 为止
    return origin + marker.start(), span.end + (after.end() if after else 0)
