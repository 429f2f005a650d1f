"""Dates in text, in English and Chinese, as day ranges: for a query's time and a memory's.

Spans are found by patterns (a month name with a day and/or a year, ISO and numeric dates,
``2023年10月3日``, ``yesterday``, ``3 weeks ago``, ``上个月``, ``last summer``, ``去年夏天`` …)
and resolved by ``dateparser`` against a reference day (now for a query, the memory's ``when``
for its text); weekdays, weekends and seasons relative to a week or a year, which it does not
read, are worked out here. A date without a year (``October 3``) matches that day in any year
when it comes from a query, and the reference's year when it comes from a memory.

A range is a pair of proleptic ordinals (``date.toordinal()``), both ends inclusive, with a
*grain*: how precise it is (day 1.0, week 0.7, month 0.5, season 0.4, year 0.25).
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from dataclasses import dataclass
from typing import Any

from somnid.recall import periods
from somnid.recall.periods import MONTH_WORD as _MONTH_WORD
from somnid.recall.periods import SEASONS as _SEASONS
from somnid.recall.periods import ZH_SEASONS as _ZH_SEASONS
from somnid.recall.periods import month_number as _month_number
from somnid.recall.periods import month_range as _month_range

GRAIN_WEIGHT = {"day": 1.0, "weekend": 0.9, "week": 0.7, "month": 0.5, "season": 0.4, "year": 0.25}
ANY_YEAR = range(1970, 2100)

_ORD = r"(?:st|nd|rd|th)?"
_WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_ZH_WEEKDAY = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}
_ZH_DIGITS = {"零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7,
              "八": 8, "九": 9, "十": 10}  # fmt: skip
_NUMBER_WORDS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5,
                 "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10, "couple of": 2,
                 "few": 3}  # fmt: skip

_PATTERNS = [
    *periods.PATTERNS,  # parts of a month or season first: "the last week of July 2023"
    # 8 May 2023, 8th of May, May 8, 2022, May 8th, October 2023, October (not a bare "may")
    ("month", rf"\b(?:(?P<d1>\d{{1,2}}){_ORD}\s+(?:of\s+)?)?(?P<m>{_MONTH_WORD})\.?"
              rf"(?:\s+(?P<d2>\d{{1,2}}){_ORD}\b)?(?:,?\s+(?P<y>(?:19|20)\d{{2}}))?\b"),
    ("iso", r"\b(?P<y>(?:19|20)\d{2})[-/.](?P<m>\d{1,2})[-/.](?P<d>\d{1,2})\b"),
    ("zh_date", r"(?:(?P<y>(?:19|20)\d{2})\s*年\s*)?(?P<m>\d{1,2})\s*月"
                r"(?:\s*(?P<d>\d{1,2})\s*[日号])?"),
    ("zh_year", r"(?P<y>(?:19|20)\d{2})\s*年"),
    ("year", r"\b(?:in\s+|of\s+)?(?P<y>(?:19|20)\d{2})\b"),
    ("ago", r"\b(?P<n>\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|couple of|few)"
            r"\s+(?P<unit>day|week|month|year)s?\s+ago\b"),
    ("rel_weekday", r"\b(?P<which>last|this|next)\s+(?P<w>" + "|".join(_WEEKDAYS) + r")\b"),
    ("rel_season", r"\b(?P<which>last|this|next)\s+(?P<s>spring|summer|autumn|fall|winter)\b"),
    ("rel_unit", r"\b(?P<which>last|this|next|past)\s+(?P<unit>week|weekend|month|year)\b"),
    ("day_word", r"\b(?P<w>yesterday|today|tonight|tomorrow|last night|this morning)\b"),
    ("zh_ago", r"(?P<n>\d+|[一二两三四五六七八九十]+)\s*(?P<unit>天|周|星期|个月|年)前"),
    ("zh_season", r"(?P<which>去年|今年|明年)?(?P<s>[春夏秋冬])天"),
    ("zh_weekday", r"(?P<which>上|这|本|下)(?:个)?(?:周|星期|礼拜)(?P<w>[一二三四五六日天])"),
    ("zh_rel", r"(?P<w>昨天|前天|今天|明天|上周末|这周末|上周|本周|这周|下周"
               r"|上个月|这个月|本月|下个月|去年|今年|前年|明年)"),
]  # fmt: skip
_COMPILED = [(kind, re.compile(pattern, re.IGNORECASE)) for kind, pattern in _PATTERNS]


@dataclass(frozen=True, slots=True)
class DateRange:
    start: int  # ordinal, inclusive
    end: int  # ordinal, inclusive
    grain: str
    text: str

    @property
    def weight(self) -> float:
        return GRAIN_WEIGHT.get(self.grain, 0.25)

    def overlaps(self, start: int, end: int) -> bool:
        return self.start <= end and start <= self.end

    def describe(self) -> str:
        first, last = dt.date.fromordinal(self.start), dt.date.fromordinal(self.end)
        return first.isoformat() if first == last else f"{first.isoformat()}..{last.isoformat()}"


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

    def __bool__(self) -> bool:
        return bool(self.spans) or bool(self.bound) or self.until is not None

    def outside(self, ranges: list[tuple[int, int]], written: int | None) -> bool:
        """An entry's dates (``ranges``, its ``written`` day among them) fall outside the
        period the query bounds, or it was written after the query's reference point."""
        if self.until is not None and written is not None and written > self.until:
            return True
        if not self.bound or not ranges:
            return False
        return not any(s <= e2 and s2 <= e for s, e in self.bound for s2, e2 in ranges)

    def match(self, ranges: list[tuple[int, int]]) -> float:
        """The grain weight of the most precise span an entry's dates overlap; 0 if none."""
        best = 0.0
        for _text, grain, wanted in self.spans:
            weight = GRAIN_WEIGHT.get(grain, 0.25)
            if weight <= best:
                continue
            if any(s <= e2 and s2 <= e for s, e in wanted for s2, e2 in ranges):
                best = weight
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
        return "; ".join(parts)


@functools.cache
def _parser() -> Any:
    from dateparser.date import DateDataParser  # ~40 ms to import; only when a date is seen

    return DateDataParser(
        languages=["en", "zh"],
        settings={"PREFER_DATES_FROM": "past", "RETURN_AS_TIMEZONE_AWARE": False},
    )


def warm_up() -> None:
    """Load the parser and its language data (the first parse takes ~70 ms)."""
    _resolve_with_library("3 days ago", dt.date(2020, 1, 10))


def _resolve_with_library(text: str, ref: dt.date) -> tuple[dt.date, str] | None:
    parser = _parser()
    base = dt.datetime(ref.year, ref.month, ref.day, 12)
    parser._settings.RELATIVE_BASE = base
    try:
        data = parser.get_date_data(text)
    except (ValueError, OverflowError):  # pragma: no cover - the library's own limits
        return None
    finally:
        parser._settings.RELATIVE_BASE = None
    if data is None or data.date_obj is None:
        return None
    return data.date_obj.date(), str(data.period or "day")


def _zh_number(text: str) -> int | None:
    if text.isdigit():
        return int(text)
    if text == "十":
        return 10
    if text.startswith("十"):
        return 10 + _ZH_DIGITS.get(text[1:], 0)
    if "十" in text:
        tens, _, ones = text.partition("十")
        return _ZH_DIGITS.get(tens, 0) * 10 + (_ZH_DIGITS.get(ones, 0) if ones else 0)
    return _ZH_DIGITS.get(text)


def _found(
    kind: str, m: re.Match[str], ref: dt.date, any_year: bool
) -> tuple[str, list[tuple[int, int]]] | None:
    g = m.groupdict()
    text = m.group(0)
    if kind in _PERIOD_KINDS:
        years = list(ANY_YEAR) if any_year else [ref.year]
        return periods.found_period(kind, m, years)
    if kind == "month":
        month = _month_number(g["m"])
        day_text = g["d1"] or g["d2"]
        if month is None:
            return None
        if g["m"].lower() == "may" and not (day_text or g["y"]):
            return None  # "may" the verb
        if not (day_text or g["y"] or g["m"][0].isupper()):
            return None  # "march on", a lower-case month alone: not taken for a date
        return _day_or_month(text, g["y"], month, day_text, ref, any_year)
    if kind in ("iso", "zh_date"):
        month = int(g["m"])
        if not 1 <= month <= 12:
            return None
        return _day_or_month(text, g["y"], month, g["d"], ref, any_year)
    if kind in ("zh_year", "year"):
        year = int(g["y"])
        return "year", [(dt.date(year, 1, 1).toordinal(), dt.date(year, 12, 31).toordinal())]
    if kind == "ago":
        n = g["n"].lower()
        count = int(n) if n.isdigit() else _NUMBER_WORDS.get(n, 1)
        return _library(f"{count} {g['unit']}s ago", ref, g["unit"].lower())
    if kind == "zh_ago":
        zh_count = _zh_number(g["n"])
        unit = {"天": "day", "周": "week", "星期": "week", "个月": "month", "年": "year"}[g["unit"]]
        return None if zh_count is None else _library(f"{zh_count} {unit}s ago", ref, unit)
    if kind == "rel_weekday":
        return "day", [
            periods.weekday_range(ref, _WEEKDAYS.index(g["w"].lower()), g["which"].lower())
        ]
    if kind == "zh_weekday":
        which = {"上": "last", "下": "next"}.get(g["which"], "this")
        return "day", [periods.weekday_range(ref, _ZH_WEEKDAY[g["w"]], which, week_based=True)]
    if kind == "rel_season":
        return "season", [periods.last_season(ref, _SEASONS[g["s"].lower()], g["which"].lower())]
    if kind == "zh_season":
        return "season", [periods.last_season(ref, _ZH_SEASONS[g["s"]], g["which"] or "this")]
    if kind == "rel_unit":
        which, unit = g["which"].lower(), g["unit"].lower()
        if unit == "weekend":
            return "weekend", [periods.weekend_range(ref, which)]
        if which == "past":
            span = {"week": 7, "month": 31, "year": 365}[unit]
            return unit, [(ref.toordinal() - span, ref.toordinal())]
        return _library(f"{which} {unit}", ref, unit)
    if kind == "day_word":
        word = g["w"].lower()
        offset = {"yesterday": -1, "last night": -1, "tomorrow": 1}.get(word, 0)
        day = ref + dt.timedelta(days=offset)
        return "day", [(day.toordinal(), day.toordinal())]
    if kind == "zh_rel":
        word = g["w"]
        if word in ("上周末", "这周末"):
            return "weekend", [periods.weekend_range(ref, "last" if word == "上周末" else "this")]
        return _library(word, ref, None)
    return None


def _library(
    text: str, ref: dt.date, grain: str | None
) -> tuple[str, list[tuple[int, int]]] | None:
    resolved = _resolve_with_library(text, ref)
    if resolved is None:
        return None
    day, period = resolved
    if "ago" in text and grain is not None:
        # "3 weeks ago" is around that day, not the whole week or month
        slack = {"day": 0, "week": 3, "month": 10, "year": 120}[grain]
        return grain, [(day.toordinal() - slack, day.toordinal() + slack)]
    grain = grain or period
    return grain, [periods.period_range(day, grain)]


def _day_or_month(
    text: str, year_text: str | None, month: int, day_text: str | None, ref: dt.date, any_year: bool
) -> tuple[str, list[tuple[int, int]]] | None:
    day = int(day_text) if day_text else None
    if day is not None and not 1 <= day <= 31:
        return None
    if year_text:
        years: list[int] = [int(year_text)]
    elif any_year:
        years = list(ANY_YEAR)
    else:  # a memory's "on 3 October": the reference's year, or the year before if ahead
        year = ref.year
        if (month, day or 1) > (ref.month, ref.day) and (month - ref.month) > 2:
            year -= 1
        years = [year]
    ranges: list[tuple[int, int]] = []
    for year in years:
        if day is None:
            ranges.append(_month_range(year, month))
            continue
        try:
            ordinal = dt.date(year, month, day).toordinal()
        except ValueError:
            continue
        ranges.append((ordinal, ordinal))
    if not ranges:
        return None
    return ("day" if day is not None else "month"), ranges


def find_dates(text: str, ref: dt.date, *, any_year: bool = False) -> list[DateRange]:
    """Every date span in ``text`` (non-overlapping, first pattern wins), resolved against
    ``ref``; a day or month without a year gets one range per year when ``any_year``."""
    return [
        DateRange(s, e, grain, span)
        for span, grain, ranges in _spans(text, ref, any_year)
        for s, e in ranges
    ]


def _spans(text: str, ref: dt.date, any_year: bool) -> list[tuple[str, str, list[tuple[int, int]]]]:
    return [
        (span, grain, ranges) for _s, _e, _k, span, grain, ranges in _located(text, ref, any_year)
    ]


Located = tuple[int, int, str, str, str, list[tuple[int, int]]]  # start, end, kind, text, …


def _located(text: str, ref: dt.date, any_year: bool) -> list[Located]:
    if not text or not _MAY_HAVE_DATE.search(text):
        return []
    taken: list[tuple[int, int]] = []
    spans: list[Located] = []
    for kind, pattern in _COMPILED:
        for m in pattern.finditer(text):
            if any(m.start() < e and s < m.end() for s, e in taken):
                continue
            found = _found(kind, m, ref, any_year)
            if found is None:
                continue
            taken.append((m.start(), m.end()))
            spans.append((m.start(), m.end(), kind, m.group(0).strip(), found[0], found[1]))
    spans.sort(key=lambda item: item[0])
    return spans


_MAY_HAVE_DATE = re.compile(
    r"\d|yesterday|today|tonight|tomorrow|last|this|next|past|ago|night|morning|"
    r"jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|[年月周昨前今明去春夏秋冬]",
    re.IGNORECASE,
)


def query_time(query: str, today: dt.date) -> TimeQuery:
    """The time a query asks about, relative to ``today``: the spans it names, the period
    its calendar dates bound, and a reference point (``as of``, ``by``, ``截至``), which is
    not the time of an event and so is no span."""
    spans: list[tuple[str, str, tuple[tuple[int, int], ...]]] = []
    bound: list[tuple[int, int]] = []
    until: int | None = None
    for start, end, kind, text, grain, ranges in _located(query, today, any_year=True):
        if periods.is_reference(query, start, end):
            # The latest reading not after today (a month without a year: the last one).
            past = [e for _s, e in ranges if e <= today.toordinal()] or [ranges[0][1]]
            until = max(past) if until is None else min(until, max(past))
            continue
        spans.append((text, grain, tuple(ranges)))
        if kind in _CALENDAR_KINDS:
            # "the week before August 3": the month up to the day; "after": the month from it.
            widen = _AROUND.search(query[max(0, start - 8) : start])
            for first, last in ranges:
                if widen is not None and widen[1].lower() == "before":
                    first -= 31
                elif widen is not None:
                    last += 31
                bound.append((first, last))
    return TimeQuery(tuple(spans), tuple(bound), until)


# Spans that name the calendar (not "yesterday", "3 weeks ago", "last summer": a question's
# relative time is often relative to a moment the asker has in mind, not to the clock).
_PERIOD_KINDS = frozenset(kind for kind, _ in periods.PATTERNS)
_CALENDAR_KINDS = frozenset({"month", "iso", "zh_date", "zh_year", "year", *_PERIOD_KINDS})
_AROUND = re.compile(r"\b(before|after)\s+(?:the\s+)?$", re.IGNORECASE)


def memory_dates(text: str, when: dt.date | None) -> list[tuple[int, int]]:
    """The days a memory's text speaks of: absolute ones, and relative ones (``yesterday``,
    ``last Friday``) resolved against the memory's own date; none of the relative ones
    without one."""
    if when is None:
        spans = [s for s in _spans(text, dt.date.today(), any_year=False) if _absolute(s[0])]
    else:
        spans = _spans(text, when, any_year=False)
    return [r for _text, _grain, ranges in spans for r in ranges]


def _absolute(span: str) -> bool:
    return bool(re.search(r"(?:19|20)\d{2}", span))
