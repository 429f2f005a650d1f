"""Dates that span: from one day, month or year to another (``between Aug 11 and Aug 15``,
``from May to July 2023``, ``2022-2023``, 3月到5月), and the years a year-less calendar date
is read in. Used by :mod:`somnid.memory.dates.reading`."""

from __future__ import annotations

import datetime as dt

from somnid.memory.dates import calendar as cal
from somnid.memory.dates.words import count, month_number

ANY_YEAR = range(1970, 2100)

Found = tuple[str, list[cal.Range], int]  # grain, ranges, around


def date_or_none(year: int, month: int, day: int) -> dt.date | None:
    try:
        return dt.date(year, month, day)
    except ValueError:
        return None


def years_of(
    year_text: str | None,
    month: int,
    day: int,
    ref: dt.date,
    any_year: bool,
    *,
    ahead: bool = False,
) -> list[int]:
    """The years a calendar date is read in: the one it names; every year for a question's
    year-less date; else, as a memory's "on 3 October", the reference's year, the year
    before when the date would be more than two months ahead of it, or, ``ahead`` (said of
    no past), the year after when that is at most two months ahead (``We fly out on
    January 3`` said on December 20)."""
    if year_text:
        return [int(year_text)]
    if any_year:
        return list(ANY_YEAR)
    if (month, day) > (ref.month, ref.day):
        return [ref.year - 1] if month - ref.month > 2 else [ref.year]
    if ahead and month + 12 - ref.month <= 2 and (month, day) < (ref.month, ref.day):
        return [ref.year + 1]
    return [ref.year]


def month_of(text: str | None) -> int:
    """A month's number, in digits or Chinese numerals (五, 十二); 0 for none."""
    return count(text or "") or 0


def long_range(kind: str, g: dict[str, str | None], ref: dt.date, any_year: bool) -> Found | None:
    """From one calendar day to another (``between 2023-05-01 and 2023-05-10``), or from
    the start of one month to the end of another (``from May to July 2023``); two years at
    most. ``and`` joins them only after ``between``."""
    if (g["to"] or "").lower() == "and" and (g.get("b") or "").lower() != "between":
        return None
    first_month, last_month = month_of(g["m"]), month_of(g["m2"])
    if kind == "month_range":
        if not g.get("b") and not (g["m"] or " ")[0].isupper():
            return None  # "may to …" with neither "from" nor a capital: not taken for dates
        first_month = month_number(g["m"] or "") or 0
        last_month = month_number(g["m2"] or "") or 0
    if not (1 <= first_month <= 12 and 1 <= last_month <= 12):
        return None
    ranges: list[cal.Range] = []
    if kind == "iso_range":
        start = date_or_none(int(g["y"] or 0), first_month, int(g["d"] or 0))
        end = date_or_none(int(g["y2"] or 0), last_month, int(g["d2"] or 0))
        if start is not None and end is not None:
            ranges.append((start.toordinal(), end.toordinal()))
    else:
        # The years as named: "from May 2022 to July 2023"; "from Nov to Feb 2024" (Nov of
        # 2023); "from Nov 2023 to Feb" (Feb of 2024); none named: the first month's year as
        # a date's, the last month's the same or the next.
        wraps = int(last_month < first_month)
        if g.get("y2"):  # 2022年11月至2023年2月
            years = [(int(g["y"] or 0) or int(g["y2"] or 0) - wraps, int(g["y2"] or 0))]
        elif kind == "zh_month_range" and g.get("y"):  # 2023年11月到2月: the first's year
            years = [(int(g["y"] or 0), int(g["y"] or 0) + wraps)]
        elif g.get("y1"):
            years = [(int(g["y1"] or 0), int(g["y"] or 0) or int(g["y1"] or 0) + wraps)]
        elif g.get("y"):
            years = [(int(g["y"] or 0) - wraps, int(g["y"] or 0))]
        else:
            years = [(y, y + wraps) for y in years_of(None, first_month, 1, ref, any_year)]
        for first_year, last_year in years:
            first = cal.month_range(first_year, first_month)[0]
            ranges.append((first, cal.month_range(last_year, last_month)[1]))
    ranges = [(a, b) for a, b in ranges if 0 <= b - a <= 731]
    if not ranges:
        return None
    days = ranges[0][1] - ranges[0][0] + 1
    grain = (
        "day" if days == 1 else "week" if days <= 9 else "month" if days <= 45
        else "season" if days <= 100 else "year"
    )  # fmt: skip
    return grain, ranges, 0


MAX_YEARS = 10
"""The longest "from … to …" of years read as one stretch."""


def year_range(g: dict[str, str | None]) -> Found | None:
    """From the start of one year to the end of another (``2022-2023``, ``2023-24``, ``from
    2020 to 2023``, ``between 2019 and 2021``): at most :data:`MAX_YEARS`. ``and`` joins them
    only after ``between``; two digits (``-24``) only after a dash."""
    to = (g["to"] or "").lower()
    if to == "and" and (g.get("b") or "").lower() != "between":
        return None
    first, last_text = int(g["y"] or 0), g["y2"] or ""
    if len(last_text) == 2:
        if to not in ("-", "–", "—"):
            return None
        last = first - first % 100 + int(last_text)
    else:
        last = int(last_text)
    if not 0 < last - first <= MAX_YEARS:
        return None
    return "year", [(cal.year_range(first)[0], cal.year_range(last)[1])], 0


MAX_RANGE_DAYS = 92
"""A longer "from … to …" is not read as one stretch of days (a season at most)."""


def day_range(kind: str, g: dict[str, str | None], ref: dt.date, any_year: bool) -> Found | None:
    """Every day from the first to the last (``between Aug 11 and Aug 15``, ``May 3-7``,
    ``8 to 14 May``, 8月11日到15日); a range into the next month or year (``Dec 28 - Jan 3``)
    too. ``and`` joins two days into a range only after ``between``."""
    if (g["to"] or "").lower() == "and" and not g.get("b"):
        return None  # "on Aug 11 and 15": two days
    if kind == "zh_day_range":
        first_month, last_month = month_of(g["m"]), month_of(g["m2"] or g["m"])
    elif kind == "day_range":
        first_month = month_number(g["m"] or "") or 0
        last_month = month_number(g["m2"] or "") or first_month
    else:  # day_range_dm: "8 to 14 May", "30 April to 2 May"
        if (g["m"] or "") == "may":
            return None  # "between 3 and 4 may come": the verb
        last_month = month_number(g["m"] or "") or 0
        first_month = month_number(g["m1"] or "") or last_month
    if not (1 <= first_month <= 12 and 1 <= last_month <= 12):
        return None
    first_day, last_day = int(g["d1"] or 0), int(g["d2"] or 0)
    ranges: list[cal.Range] = []
    for year in years_of(g.get("y") or g.get("y1"), first_month, first_day, ref, any_year):
        start = date_or_none(year, first_month, first_day)
        end = date_or_none(year + (last_month < first_month), last_month, last_day)
        if start is None or end is None or not 0 <= (end - start).days <= MAX_RANGE_DAYS:
            continue
        ranges.append((start.toordinal(), end.toordinal()))
    if not ranges:
        return None
    days = ranges[0][1] - ranges[0][0] + 1
    grain = "day" if days == 1 else "week" if days <= 9 else "month" if days <= 45 else "season"
    return grain, ranges, 0
