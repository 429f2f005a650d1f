"""Parts of a year and days of a month: quarters (``Q3 2023``, ``the third quarter of 2023``,
2023年第三季度), halves (``the first half of 2023``, ``H1 2023``, 上半年, ``the second half
of September``), and a day of the month named alone (``on the 9th``, ``the 15th of next
month``, 15号, 下个月5号). Used by :mod:`somnid.memory.dates.reading`.

- A quarter is its three months (grain ``season``; 上季度, 本季度, 下一季度 from the
  reference's; 每季度 none), a half year its six (grain ``year``), a
  half month its first fifteen days or the rest (grain ``week``, as the other parts of a
  month). Without a year: the reference's year, or every year for a question; ``Q3`` alone
  only after a word that sets it in time (``in Q3``, ``by Q4``: not ``answer Q3``).
- A day of the month alone is that day of the month said (``of next month``, 下个月), or the
  one the clause points to (:func:`~somnid.memory.dates.tense.leaning`): ``I paid on the
  9th`` said on the 20th is this month's 9th, ``we will fly on the 9th`` the next month's;
  when the clause says neither, the nearer of the two. ``of each month`` names no day.
  An ordinal that counts something is no day (``on the 9th floor``, 3号线, 3日游).

And a year said bare that is a number (:func:`not_a_year`): ``I ran 2024 meters``, ``room
2012``.
"""

from __future__ import annotations

import datetime as dt
import re

from somnid.memory.dates import calendar as cal
from somnid.memory.dates.ranges import ANY_YEAR, Found, date_or_none
from somnid.memory.dates.tense import leaning
from somnid.memory.dates.words import DIRECTION, count, month_number

_ORDINAL = {"first": 0, "1st": 0, "second": 1, "2nd": 1, "latter": 1, "third": 2, "3rd": 2,
            "fourth": 3, "4th": 3, "last": -1, "final": -1, "上": 0, "下": 1}  # fmt: skip
_YEARS = {"前年": -2, "去年": -1, "今年": 0, "明年": 1, "后年": 2, "last": -1, "this": 0,
          "next": 1}  # fmt: skip

YEAR_PART_KINDS = frozenset(
    {"half_of_month", "quarter", "half_year", "q_year", "zh_year_part", "rel_year_part",
     "zh_rel_year_part", "rel_q_year", "zh_rel_quarter"}
)  # fmt: skip
DAY_KINDS = frozenset(
    {"day_of_rel_month", "zh_rel_month_day", "bare_day", "zh_bare_day", "zh_bare_day_range"}
)


def year_part(kind: str, m: re.Match[str], ref: dt.date, any_year: bool) -> Found | None:
    """A quarter or half of a year, or a half of a month, in the years it is read in."""
    g = m.groupdict()
    if kind == "zh_rel_quarter":  # 上季度, 本季度, 下一季度
        this = dt.date(ref.year, 3 * ((ref.month - 1) // 3) + 1, 1)
        start = cal.shift(this, "month", 3 * DIRECTION[g["which"] or ""])
        return "season", [cal.season_range(start.year, start.month)], 0
    if kind == "half_of_month":
        month = month_number(g["m"] or "")
        if month is None:
            return None
        second = _ORDINAL[(g["half"] or "").lower()] != 0
        ranges = [_half_month(y, month, second) for y in _years(g, ref, any_year)]
        return "week", ranges, 0
    if kind in ("q_year", "rel_q_year"):
        letter, n = (g["p"] or "").upper(), int(g["n"] or 0)
        if letter == "H" and not (n <= 2 and (g.get("y") or g.get("which"))):
            return None  # "H3", and "h1" with no year (a heading)
        timed = _Q_TIMED.search(m.string[max(0, m.start() - 24) : m.start()])
        if letter == "Q" and not (g.get("y") or g.get("which") or timed):
            return None  # "answer Q3", "For Q2, I picked B": a question's number
        if not g.get("y") and _Q_OF_THING.match(m.string, m.end()):
            return None  # "in Q1 of the survey": a question of something, not a quarter
        quarter, half = (n - 1, None) if letter == "Q" else (None, n - 1)
    else:
        quarter = _index(g.get("q") or g.get("qn"))
        half = _ORDINAL.get((g.get("half") or "").lower()) if g.get("half") else None
    if quarter is None and half is None:
        return None
    ranges = []
    for year in _years(g, ref, any_year):
        if quarter is not None:
            first = 3 * (quarter % 4) + 1
            ranges.append(cal.season_range(year, first))
        else:
            first = 1 if half == 0 else 7
            ranges.append((cal.month_range(year, first)[0], cal.month_range(year, first + 5)[1]))
    return ("season" if quarter is not None else "year"), ranges, 0


_Q_TIMED = re.compile(
    r"\b(?:in|by|during|until|till|since|before|after|through|throughout|from|to|early|late"
    r"|mid|(?:start|beginning|middle|end)\s+of)\s+(?:the\s+)?$",
    re.IGNORECASE,
)
"""What sets a lone ``Q3`` in time (``in Q3``, ``by Q4``); not ``of`` nor ``for`` (``the
answer of Q3``, ``For Q2, I picked B``)."""
_Q_OF_THING = re.compile(
    r"\s+of\s+(?:the|a|an|my|our|your|his|her|their|its|that|this)\s+"
    r"(?!(?:\w+\s+)?(?:year|fiscal|financial|calendar|school|academic|tax|season)\b)\w",
    re.IGNORECASE,
)
"""After a ``Q`` with no year: ``of`` a thing that is no year (``Q1 of the survey``, ``Q3
of this quiz``) makes it that thing's question; ``Q1 of the fiscal year`` stays a quarter."""


def _index(word: str | None) -> int | None:
    """A quarter's index, 0-3, from ``third``, ``3rd``, 三, 3; None for none."""
    if not word:
        return None
    word = word.lower()
    if word in _ORDINAL:
        return _ORDINAL[word] % 4
    n = count(word)
    return n - 1 if n and 1 <= n <= 4 else None


def _years(g: dict[str, str | None], ref: dt.date, any_year: bool) -> list[int]:
    if g.get("y"):
        return [int(g["y"] or 0)]
    if g.get("which"):
        return [ref.year + _YEARS[(g["which"] or "").lower()]]
    return list(ANY_YEAR) if any_year else [ref.year]


def _half_month(year: int, month: int, second: bool) -> cal.Range:
    first, last = cal.month_range(year, month)
    return (first + 15, last) if second else (first, first + 14)


_DAY_FOLLOWS = re.compile(
    r"\s*(?:$|[^\w\s]|(?:at|in|and|or|but|so|then|when|for|to|with|we|i|you|he|she|they|it"
    r"|my|our|is|was|will|would|are|were|because|as|if|after|before|around|from|until|till"
    r"|this|that|morning|afternoon|evening|night|please)\b)",
    re.IGNORECASE,
)
"""What may follow a day said alone (``on the 9th, we``): not a noun it counts (``floor``)."""


def day_of_month(kind: str, m: re.Match[str], ref: dt.date) -> Found | None:
    """A day of the month with no month: that day of the month said, or the nearest one the
    clause's tense points to."""
    g = m.groupdict()
    day = int(g["d"] or 0)
    if not 1 <= day <= 31:
        return None
    if kind in ("day_of_rel_month", "zh_rel_month_day"):
        which = (g["which"] or "").lower()
        month = cal.shift(ref.replace(day=1), "month", DIRECTION[which])
        found = date_or_none(month.year, month.month, day)
        return None if found is None else ("day", [cal.day_range(found)], 0)
    if kind == "bare_day" and not _DAY_FOLLOWS.match(m.string, m.end()):
        return None
    if _RECURRING.search(m.string, m.end(), m.end() + 40):
        return None  # "on the 1st and 15th of each month": no one day
    direction = leaning(m)
    days = [d for way in ((direction,) if direction else (-1, 1)) if (d := _next(ref, day, way))]
    if not days:
        return None
    nearest = min(days, key=lambda d: (abs((d - ref).days), d > ref))  # a tie: the past
    if kind != "zh_bare_day_range":
        return "day", [cal.day_range(nearest)], 0
    last = int(g["d2"] or 0)  # 3号到5号: to the 5th of that month, or of the next (28号到3号)
    month = nearest if last > day else cal.shift(nearest.replace(day=1), "month", 1)
    end = date_or_none(month.year, month.month, last)
    if end is None or not 0 < (end - nearest).days <= 31:
        return None
    grain = "week" if (end - nearest).days < 9 else "month"  # as ranges.day_range grains them
    return grain, [(nearest.toordinal(), end.toordinal())], 0


_RECURRING = re.compile(r"\b(?:each|every|a)\s+month\b|\bmonthly\b|\bof\s+the\s+month\b", re.I)


def _next(ref: dt.date, day: int, way: int) -> dt.date | None:
    """The day ``day`` of a month nearest ``ref`` on its side ``way`` (ref itself included):
    the 31st of the nearest month that has one."""
    start = ref.replace(day=1)
    if (way < 0 and day > ref.day) or (way > 0 and day < ref.day):
        start = cal.shift(start, "month", way)
    for step in range(3):
        month = cal.shift(start, "month", way * step)
        if (found := date_or_none(month.year, month.month, day)) is not None:
            return found
    return None


_QUANTITY_AFTER = re.compile(
    r"\s*\+?\s*(?:-\s*)?(?:meters?|metres?|m|km|kilomet(?:er|re)s?|miles?|mi|feet|ft|yards?"
    r"|steps?|people|persons?|users?|members?|employees?|students?|calories|kcal|words?"
    r"|pages?|points?|pts|dollars?|usd|euros?|eur|yuan|rmb|pounds?|lbs?|kg|kilos?|grams?|g"
    r"|ml|lit(?:er|re)s?|rpm|mph|watts?|w|hours?|hrs?|minutes?|mins?|seconds?|secs?|days"
    r"|times|pieces?|pcs|items?|units|copies|rows|lines|votes|likes|followers|views"
    r"|downloads|stars|bytes|kb|mb|gb|tb|px|pixels|dpi|hz|mhz|ghz|sq|square|cc|characters"
    r"|chars|tokens|entries|records|cars|tickets)\b",
    re.IGNORECASE,
)
_LABEL_BEFORE = re.compile(
    r"(?:\b(?:room|rm|flight|bus|route|line|model|version|ver|v|build|page|p|no|number|num"
    r"|ticket|issue|order|pr|error|code|port|gate|exit|apt|apartment|suite|unit|highway|hwy"
    r"|channel|track|level|chapter|ch|section|sec|table|seat|floor|pin|id|item|invoice"
    r"|account|case|batch|box|lot|booth|platform|terminal|train|episode|ep|ext|extension"
    r"|part|step|pid)\.?|#|№)\s*:?\s*$",
    re.IGNORECASE,
)


def not_a_year(m: re.Match[str]) -> bool:
    """A year said bare is a number when a unit counts it (``I ran 2024 meters``) or a label
    names it (``room 2012``, ``flight 2019``): no date."""
    if m.group(0)[:1].isalpha():
        return False  # "in 2024", "of 2012": set in time
    text = m.string
    return bool(
        _QUANTITY_AFTER.match(text, m.end())
        or _LABEL_BEFORE.search(text[max(0, m.start() - 16) : m.start()])
    )
