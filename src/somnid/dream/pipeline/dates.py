"""Relative time in what was said, made absolute against when it was said.

"Yesterday I met her in Boston", said on 2023-10-04, is stored as "Yesterday
(2023-10-03) I met her in Boston": a memory read months later must not depend on the day it
was read. English and Chinese, one rule for both:

- a day resolves to a date; a calendar week ("last week", 上周) to the week, named by the
  Monday that starts it (``week of 2023-09-25``), never to one day of it; a month ("next
  month", 下个月) to ``YYYY-MM``; a year to ``YYYY``; "N weeks ago" (N天前) to the day;
- a weekday said without last/next ("on Friday", 周五) is the one before the day it was
  said if the words around it speak of the past ("went", "was", 了, 过), else the one after
  it ("I'm flying on Friday", "let's meet on Friday", 周五要去): a plan is said of a day to
  come, a report of a day gone.

Vague expressions ("recently", "a while ago") are left as they are: there is nothing exact
to resolve them to.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass

_NUMBER_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "couple of": 2,
}  # fmt: skip
_ZH_DIGITS = {
    "一": 1,
    "二": 2,
    "两": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
}
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_ZH_WEEKDAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}


@dataclass(frozen=True, slots=True)
class Resolved:
    start: int
    end: int
    expression: str
    value: str
    """``YYYY-MM-DD``, ``week of YYYY-MM-DD``, ``YYYY-MM`` or ``YYYY``."""


def _day(ref: dt.date, days: int) -> str:
    return (ref + dt.timedelta(days=days)).isoformat()


def _week(ref: dt.date, weeks: int) -> str:
    monday = ref - dt.timedelta(days=ref.weekday()) + dt.timedelta(weeks=weeks)
    return f"week of {monday.isoformat()}"


def _month(ref: dt.date, months: int) -> str:
    index = ref.year * 12 + ref.month - 1 + months
    return f"{index // 12:04d}-{index % 12 + 1:02d}"


def _year(ref: dt.date, years: int) -> str:
    return f"{ref.year + years:04d}"


def _weekday(ref: dt.date, weekday: int, direction: int) -> str:
    """The named weekday before (-1), after (+1) or in the week of (0) ``ref``."""
    if direction == 0:
        return (ref - dt.timedelta(days=ref.weekday() - weekday)).isoformat()
    delta = (weekday - ref.weekday()) % 7 if direction > 0 else -((ref.weekday() - weekday) % 7)
    if delta == 0:
        delta = 7 * direction
    return (ref + dt.timedelta(days=delta)).isoformat()


def _count(word: str) -> int | None:
    word = word.lower().strip()
    if word.isdigit():
        return int(word) if 0 < int(word) < 1000 else None
    if word in _NUMBER_WORDS:
        return _NUMBER_WORDS[word]
    if word in _ZH_DIGITS:
        return _ZH_DIGITS[word]
    if word == "十":
        return 10
    if len(word) == 2 and word[0] == "十" and word[1] in _ZH_DIGITS:
        return 10 + _ZH_DIGITS[word[1]]
    if len(word) == 2 and word[1] == "十" and word[0] in _ZH_DIGITS:
        return 10 * _ZH_DIGITS[word[0]]
    return None


_SHIFT: dict[str, Callable[[dt.date, int], str]] = {
    "day": _day,
    "week": _week,
    "month": _month,
    "year": _year,
}
_NUM = r"(\d{1,3}|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|couple of)"
_ZH_NUM = r"(\d{1,3}|[一二两三四五六七八九十]{1,2})"
_UNIT = r"(day|week|month|year)s?"
_ZH_UNIT = {"天": "day", "日": "day", "周": "week", "星期": "week", "个星期": "week", "个月": "month", "月": "month", "年": "year"}  # fmt: skip

Rule = tuple[re.Pattern[str], Callable[[re.Match[str], dt.date], str | None]]

_RULES: list[Rule] = [
    (re.compile(r"\bthe day before yesterday\b", re.I), lambda m, r: _day(r, -2)),
    (re.compile(r"\bthe day after tomorrow\b", re.I), lambda m, r: _day(r, 2)),
    (re.compile(r"\b(yesterday|last night)\b", re.I), lambda m, r: _day(r, -1)),
    (re.compile(r"\btomorrow\b", re.I), lambda m, r: _day(r, 1)),
    (re.compile(r"\b(today|tonight|this (morning|afternoon|evening))\b", re.I), lambda m, r: _day(r, 0)),
    (
        re.compile(rf"\b{_NUM} {_UNIT} ago\b", re.I),
        lambda m, r: _shift(m.group(2), -(_count(m.group(1)) or 0), r),
    ),
    (
        re.compile(rf"\bin {_NUM} {_UNIT}\b", re.I),
        lambda m, r: _shift(m.group(2), _count(m.group(1)) or 0, r),
    ),
    (
        re.compile(r"\b(last|this|next) week\b", re.I),
        lambda m, r: _week(r, {"last": -1, "this": 0, "next": 1}[m.group(1).lower()]),
    ),
    (
        re.compile(r"\b(last|this|next) (month|year)\b", re.I),
        lambda m, r: _shift(m.group(2), {"last": -1, "this": 0, "next": 1}[m.group(1).lower()], r),
    ),
    (
        re.compile(r"\b(last|this|next) weekend\b", re.I),
        lambda m, r: _weekday(r, 5, 0)
        if m.group(1).lower() == "this"
        else _day(r - dt.timedelta(days=r.weekday()), 5 + 7 * (1 if m.group(1).lower() == "next" else -1)),
    ),
    (
        re.compile(rf"\b(last|this|next) ({'|'.join(_WEEKDAYS)})\b", re.I),
        lambda m, r: _weekday(
            r, _WEEKDAYS.index(m.group(2).lower()), {"last": -1, "this": 0, "next": 1}[m.group(1).lower()]
        ),
    ),
    (
        re.compile(rf"\b(on|this coming|coming) ({'|'.join(_WEEKDAYS)})\b", re.I),
        lambda m, r: _weekday(r, _WEEKDAYS.index(m.group(2).lower()), _tense(m)),
    ),
    (re.compile(r"前天"), lambda m, r: _day(r, -2)),
    (re.compile(r"后天"), lambda m, r: _day(r, 2)),
    (re.compile(r"昨天|昨晚|昨日"), lambda m, r: _day(r, -1)),
    (re.compile(r"明天|明晚|明日"), lambda m, r: _day(r, 1)),
    (re.compile(r"今天|今晚|今日|今早"), lambda m, r: _day(r, 0)),
    (re.compile(r"(上|下|这|本)(个)?(周|星期)([一二三四五六日天])"), lambda m, r: _weekday(
        r - dt.timedelta(weeks=1) if m.group(1) == "上" else r + dt.timedelta(weeks=1) if m.group(1) == "下" else r,
        _ZH_WEEKDAYS[m.group(4)],
        0,
    )),
    (re.compile(r"(上|下|这|本)(个)?(周|星期|礼拜)"), lambda m, r: _week(r, {"上": -1, "下": 1}.get(m.group(1), 0))),
    (re.compile(r"(?<![上下这本个])(周|星期|礼拜)([一二三四五六日天])"), lambda m, r: _weekday(r, _ZH_WEEKDAYS[m.group(2)], _tense(m))),
    (re.compile(r"(上|下|这|本)个?月"), lambda m, r: _month(r, {"上": -1, "下": 1}.get(m.group(1), 0))),
    (re.compile(r"前年"), lambda m, r: _year(r, -2)),
    (re.compile(r"去年"), lambda m, r: _year(r, -1)),
    (re.compile(r"今年"), lambda m, r: _year(r, 0)),
    (re.compile(r"明年"), lambda m, r: _year(r, 1)),
    (
        re.compile(rf"{_ZH_NUM}(天|个星期|星期|周|个月|年)(前|以前|之前|后|以后|之后)"),
        lambda m, r: _shift(
            _ZH_UNIT[m.group(2)],
            (_count(m.group(1)) or 0) * (-1 if m.group(3).endswith("前") else 1),
            r,
        ),
    ),
]  # fmt: skip


_PAST = re.compile(
    r"\b(went|was|were|did|had|got|saw|met|came|took|made|ago|yesterday|last)\b|\w{3,}ed\b"
    r"|了|过|已经|昨",
    re.I,
)
_FUTURE = re.compile(
    r"\b(will|'ll|going to|gonna|wanna|want to|plan|plans|planning|let's|lets|can't wait|"
    r"next|tomorrow|hope to|see you|meet|am|i'm|are|we're|is)\b|会|要|打算|准备|计划|将|想|明|见",
    re.I,
)


def _tense(match: re.Match[str]) -> int:
    """-1 when the clause around ``match`` speaks of the past, else +1 (see the module's
    docstring): the words before the expression count first, then those after it."""
    text = match.string
    start = max(text.rfind(mark, 0, match.start()) for mark in ".!?。！？;；") + 1
    ends = [i for mark in ".!?。！？;；" if (i := text.find(mark, match.end())) >= 0]
    clause = text[start : min(ends) if ends else len(text)]
    if _PAST.search(clause):
        return -1
    return 1 if _FUTURE.search(clause) else -1


def _shift(unit: str, amount: int, ref: dt.date) -> str | None:
    if amount == 0:
        return None
    key = unit.lower().rstrip("s")
    if key == "week" and abs(amount) >= 1:
        return _day(ref, 7 * amount)  # "two weeks ago": a day, not a week's Monday
    shift = _SHIFT.get(key)
    return shift(ref, amount) if shift else None


def resolve(text: str, ref: dt.date) -> list[Resolved]:
    """The relative expressions in ``text`` with their absolute values, in text order; an
    expression inside an earlier (longer) match is not counted twice."""
    found: list[Resolved] = []
    taken: list[tuple[int, int]] = []
    for pattern, value_of in _RULES:
        for match in pattern.finditer(text):
            start, end = match.span()
            if any(start < b and a < end for a, b in taken):
                continue
            value = value_of(match, ref)
            if value:
                taken.append((start, end))
                found.append(Resolved(start, end, match.group(0), value))
    return sorted(found, key=lambda item: item.start)


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
