"""The calendar under :mod:`somnid.recall.dates`: months, seasons, weeks and weekends as day
ranges (absolute, or relative to a reference day), the parts of them a phrase can name, and
the words that make a date a reference point.

* **parts of a period** (en + zh): ``the last week of July 2023``, ``the first weekend of
  May``, ``early``/``mid``/``late``/``the end of`` a month, ``towards the end of summer
  2023``, ``summer 2023``, ``2023年7月的最后一周``, ``7月的第一个周末``, ``7月底``,
  ``2023年夏末``, ``2023年夏天``. Each is a range of its own grain (a week, a weekend, about
  a month), not the whole month or year the phrase holds.
* **reference points**: ``as of``, ``by``, ``until``, ``up to``, ``截至``, ``到…为止`` before a
  date say *when the question stands*, not when the event was: what was true then may have
  been said any time before it, and nothing said after it counts.

A range is a pair of proleptic ordinals, both ends inclusive. Without a year a part of a
month is one range per year in ``years`` (a query's "the first weekend of May" in any year).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence

MONTHS = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
_MONTH_ABBR = {name[:3]: i for i, name in enumerate(MONTHS, start=1)}
_MONTH_ABBR["sept"] = 9
MONTH_WORD = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
SEASONS = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}
ZH_SEASONS = {"春": 3, "夏": 6, "秋": 9, "冬": 12}

Ranges = list[tuple[int, int]]

# Which part of a month: "the last week of", "the first weekend of", "early", "the end of" …
_NTH = r"(?P<nth>first|second|third|fourth|last|final)"
_PART_EN = (
    r"(?P<part>early|mid|middle\s+of|late|(?:the\s+)?(?:start|beginning|middle|end)\s+of"
    r"|(?:towards?|near|at)\s+the\s+(?:start|beginning|end)\s+of)"
)
_YEAR = r"(?P<y>(?:19|20)\d{2})"
_ZH_MONTH = rf"(?:{_YEAR}\s*年\s*)?(?P<m>\d{{1,2}})\s*月"

PATTERNS: list[tuple[str, str]] = [
    ("nth_of_month", rf"\b(?:the\s+)?{_NTH}\s+(?P<unit>week(?:end)?)\s+(?:of|in)\s+"
                     rf"(?P<m>{MONTH_WORD})\.?(?:,?\s+{_YEAR})?\b"),
    ("part_of_season", rf"\b{_PART_EN}?\s*(?:the\s+)?(?P<s>spring|summer|autumn|fall|winter)"
                       rf"\s+(?:of\s+)?{_YEAR}\b"),
    ("part_of_month", rf"\b{_PART_EN}[\s-]+(?P<m>{MONTH_WORD})\.?(?:,?\s+{_YEAR})?\b"),
    ("zh_nth_of_month", rf"{_ZH_MONTH}(?:的|份的?)?(?P<nth>第一|第二|第三|最后一)个?"
                        r"(?P<unit>周末|周|星期|礼拜)"),
    ("zh_part_of_month", rf"{_ZH_MONTH}(?:份)?(?P<part>初|上旬|中旬|下旬|底|末)"),
    ("zh_season_year", rf"{_YEAR}\s*年\s*的?(?P<s>[春夏秋冬])(?:天|季)?(?P<part>初|末|底)?"),
]  # fmt: skip

# A word that makes the date after it a reference point.
REFERENCE_BEFORE = re.compile(
    r"(?:\bas\s+of|\bby|\buntil|\btill|\bup\s+(?:to|until)|截至|截止到?|到)\s*(?:the\s+)?$",
    re.IGNORECASE,
)
_ZH_UNTIL_AFTER = re.compile(r"^\s*(?:为止|以前|之前)")


def month_number(word: str) -> int | None:
    return _MONTH_ABBR.get(word.lower().rstrip(".")[:4]) or _MONTH_ABBR.get(word.lower()[:3])


def month_range(year: int, month: int) -> tuple[int, int]:
    first = dt.date(year, month, 1)
    nxt = dt.date(year + (month == 12), month % 12 + 1, 1)
    return first.toordinal(), nxt.toordinal() - 1


def season_range(year: int, month: int) -> tuple[int, int]:
    """The three months from ``month`` (winter 2023: December 2023 to February 2024)."""
    start = dt.date(year, month, 1)
    last_month = month + 2
    end_year, end_month = year + (last_month > 12), (last_month - 1) % 12 + 1
    return start.toordinal(), month_range(end_year, end_month)[1]


def is_reference(text: str, start: int, end: int) -> bool:
    """The date at ``text[start:end]`` is a reference point (``as of May 2023``,
    ``截至2023年5月``, ``到5月为止``), not the time of an event."""
    before = text[max(0, start - 12) : start]
    if not REFERENCE_BEFORE.search(before):
        return False
    if before.rstrip().endswith("到"):  # 到 alone is "to" (went to …): only 到 … 为止
        return bool(_ZH_UNTIL_AFTER.match(text[end:]))
    return True


def found_period(
    kind: str, m: re.Match[str], years: Sequence[int] | None
) -> tuple[str, Ranges] | None:
    """The grain and ranges of a part-of-a-period phrase; ``years`` is used when the phrase
    names no year (None: it is not read without one)."""
    g = m.groupdict()
    year_list = [int(g["y"])] if g.get("y") else list(years or [])
    if not year_list:
        return None
    if kind in ("nth_of_month", "zh_nth_of_month"):
        month = month_number(g["m"]) if kind == "nth_of_month" else int(g["m"])
        if month is None or not 1 <= month <= 12:
            return None
        weekend = g["unit"].lower() in ("weekend", "周末")
        nth = _nth(g["nth"])
        grain = "weekend" if weekend else "week"
        return grain, [_nth_week(y, month, nth, weekend=weekend) for y in year_list]
    if kind in ("part_of_month", "zh_part_of_month"):
        month = month_number(g["m"]) if kind == "part_of_month" else int(g["m"])
        if month is None or not 1 <= month <= 12:
            return None
        third = _third(g["part"])
        return "week", [_part_of_month(y, month, third) for y in year_list]
    if kind in ("part_of_season", "zh_season_year"):
        season = g["s"].lower()
        start_month = SEASONS.get(season) or ZH_SEASONS[g["s"]]
        first, last = season_range(year_list[0], start_month)
        part = (g.get("part") or "").lower()
        if not part:
            return "season", [(first, last)]
        if _third(part) == 0:
            return "month", [(first, first + 34)]
        return "month", [(last - 34, last)]
    return None


def _nth(word: str) -> int:
    """first 0 … fourth 3; last -1."""
    word = word.lower()
    order = {"first": 0, "second": 1, "third": 2, "fourth": 3, "第一": 0, "第二": 1, "第三": 2}
    return order.get(word, -1)


def _third(part: str) -> int:
    """Which third of a period a part names: 0 the start, 1 the middle, 2 the end."""
    part = " ".join(part.lower().split())
    if part in ("early", "初", "上旬") or part.endswith(("start of", "beginning of")):
        return 0
    if part in ("mid", "中旬") or part.startswith("middle"):
        return 1
    return 2


def _part_of_month(year: int, month: int, third: int) -> tuple[int, int]:
    first, last = month_range(year, month)
    if third == 0:
        return first, first + 9
    if third == 1:
        return first + 10, first + 19
    return first + 20, last


def _nth_week(year: int, month: int, nth: int, *, weekend: bool) -> tuple[int, int]:
    """The nth (or last) week of a month: seven days from the 1st, the 8th … (the last:
    the month's last seven); the nth weekend: its nth Saturday and the Sunday after."""
    first, last = month_range(year, month)
    if weekend:
        first_day = dt.date.fromordinal(first)
        saturday = first + (5 - first_day.weekday()) % 7
        if nth < 0:
            saturday += 7 * ((last - saturday) // 7)
        else:
            saturday += 7 * nth
        return saturday, saturday + 1
    if nth < 0:
        return last - 6, last
    start = first + 7 * nth
    return start, min(start + 6, last)


def period_range(day: dt.date, grain: str) -> tuple[int, int]:
    if grain == "week":
        monday = day - dt.timedelta(days=day.weekday())
        return monday.toordinal(), monday.toordinal() + 6
    if grain == "month":
        return month_range(day.year, day.month)
    if grain == "year":
        return dt.date(day.year, 1, 1).toordinal(), dt.date(day.year, 12, 31).toordinal()
    return day.toordinal(), day.toordinal()


def last_season(ref: dt.date, month: int, which: str) -> tuple[int, int]:
    """``this``/今年: the season of the reference's year; ``last``: the latest one over
    before the reference; 去年: last year's; ``next``/明年: the first to begin after it."""
    today = ref.toordinal()
    if which in ("去年", "今年", "明年"):
        return season_range(ref.year + {"去年": -1, "今年": 0, "明年": 1}[which], month)
    if which == "this":
        return season_range(ref.year, month)
    if which == "next":
        year = ref.year
        while season_range(year, month)[0] <= today:
            year += 1
        return season_range(year, month)
    year = ref.year
    while season_range(year, month)[1] >= today:
        year -= 1
    return season_range(year, month)


def weekday_range(
    ref: dt.date, weekday: int, which: str, *, week_based: bool = False
) -> tuple[int, int]:
    if week_based:  # 上周五: Friday of the previous calendar week
        monday = ref - dt.timedelta(days=ref.weekday())
        shift = {"last": -7, "next": 7}.get(which, 0)
        day = monday + dt.timedelta(days=shift + weekday)
    else:
        delta = (ref.weekday() - weekday) % 7 or 7
        if which == "last":
            day = ref - dt.timedelta(days=delta)
        elif which == "next":
            day = ref + dt.timedelta(days=(weekday - ref.weekday()) % 7 or 7)
        else:
            day = ref + dt.timedelta(days=weekday - ref.weekday())
    return day.toordinal(), day.toordinal()


def weekend_range(ref: dt.date, which: str) -> tuple[int, int]:
    saturday = ref - dt.timedelta(days=ref.weekday()) + dt.timedelta(days=5)
    if which in ("last", "past") and saturday >= ref:
        saturday -= dt.timedelta(days=7)
    elif which == "next":
        saturday += dt.timedelta(days=7)
    return saturday.toordinal(), saturday.toordinal() + 1
