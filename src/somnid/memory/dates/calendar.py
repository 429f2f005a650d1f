"""The calendar as day ranges: months, seasons, weeks, weekends, the parts of them a phrase can
name, and the days relative words point to from a reference day.

A range is a pair of proleptic ordinals (``date.toordinal()``), both ends inclusive. A week
runs Monday to Sunday; a weekend is its Saturday and Sunday; a season is three months from
the month it starts in (winter 2023: December 2023 to February 2024).
"""

from __future__ import annotations

import datetime as dt

Range = tuple[int, int]


def day_range(day: dt.date) -> Range:
    return day.toordinal(), day.toordinal()


def month_range(year: int, month: int) -> Range:
    first = dt.date(year, month, 1)
    nxt = dt.date(year + (month == 12), month % 12 + 1, 1)
    return first.toordinal(), nxt.toordinal() - 1


def year_range(year: int) -> Range:
    return dt.date(year, 1, 1).toordinal(), dt.date(year, 12, 31).toordinal()


def season_range(year: int, month: int) -> Range:
    """The three months from ``month``."""
    start = dt.date(year, month, 1)
    last_month = month + 2
    end_year, end_month = year + (last_month > 12), (last_month - 1) % 12 + 1
    return start.toordinal(), month_range(end_year, end_month)[1]


def week_range(day: dt.date) -> Range:
    """The Monday-to-Sunday week ``day`` is in."""
    monday = day - dt.timedelta(days=day.weekday())
    return monday.toordinal(), monday.toordinal() + 6


def period_range(day: dt.date, grain: str) -> Range:
    """The calendar ``grain`` (day, week, month, year) that holds ``day``."""
    if grain == "week":
        return week_range(day)
    if grain == "month":
        return month_range(day.year, day.month)
    if grain == "year":
        return year_range(day.year)
    return day_range(day)


def shift(day: dt.date, unit: str, amount: int) -> dt.date:
    """``day`` moved by ``amount`` days, weeks, months or years (a month or year later on a
    day it lacks: its last day, as 31 January + 1 month is 28 or 29 February)."""
    if unit == "day":
        return day + dt.timedelta(days=amount)
    if unit == "week":
        return day + dt.timedelta(weeks=amount)
    months = amount * (12 if unit == "year" else 1)
    index = day.year * 12 + day.month - 1 + months
    year, month = divmod(index, 12)
    last = dt.date.fromordinal(month_range(year, month + 1)[1]).day
    return dt.date(year, month + 1, min(day.day, last))


def weekday(ref: dt.date, weekday: int, direction: int, *, coming: bool = False) -> dt.date:
    """The named weekday before (-1), after (+1) or in the week of (0) ``ref``; before and
    after are strict: ``last Friday`` said on a Friday is a week back. ``coming``: said at
    the weekend, ``this`` + a working day is the one ahead (``this Friday`` on a Sunday, of
    a plan or a question, not of a report)."""
    if direction == 0:
        if coming and ref.weekday() >= 5 and weekday < 5:
            return ref + dt.timedelta(days=(weekday - ref.weekday()) % 7)
        return ref + dt.timedelta(days=weekday - ref.weekday())
    if direction < 0:
        return ref - dt.timedelta(days=(ref.weekday() - weekday) % 7 or 7)
    return ref + dt.timedelta(days=(weekday - ref.weekday()) % 7 or 7)


def weekday_of_week(ref: dt.date, weekday: int, weeks: int) -> dt.date:
    """The named weekday of the calendar week ``weeks`` from ``ref``'s (上周五: -1)."""
    monday = ref - dt.timedelta(days=ref.weekday())
    return monday + dt.timedelta(days=7 * weeks + weekday)


def weekend_range(ref: dt.date, direction: int) -> Range:
    """The weekend of ``ref``'s week (0), of the week before (-1) or after (+1). ``last
    weekend`` said on a Sunday is the one before: the one that day ends is ``this weekend``."""
    saturday = weekday_of_week(ref, 5, direction)
    return saturday.toordinal(), saturday.toordinal() + 1


def season_from(ref: dt.date, month: int, direction: int) -> Range:
    """``this``: the season in ``ref``'s year; ``last``: the latest one over before ``ref``;
    ``next``: the first to begin after it."""
    today = ref.toordinal()
    year = ref.year
    if direction > 0:
        while season_range(year, month)[0] <= today:
            year += 1
    elif direction < 0:
        while season_range(year, month)[1] >= today:
            year -= 1
    return season_range(year, month)


def part_of_month(year: int, month: int, third: int) -> Range:
    """The first ten days (0), the next ten (1) or the rest (2) of a month."""
    first, last = month_range(year, month)
    if third == 0:
        return first, first + 9
    if third == 1:
        return first + 10, first + 19
    return first + 20, last


def nth_week(year: int, month: int, nth: int, *, weekend: bool) -> Range:
    """The nth (or last, -1) week of a month: seven days from the 1st, the 8th … (the last:
    the month's last seven); the nth weekend: its nth Saturday and the Sunday after."""
    first, last = month_range(year, month)
    if weekend:
        saturday = first + (5 - dt.date.fromordinal(first).weekday()) % 7
        if nth < 0:
            saturday += 7 * ((last - saturday) // 7)
        else:
            saturday += 7 * nth
        return saturday, saturday + 1
    if nth < 0:
        return last - 6, last
    start = first + 7 * nth
    return start, min(start + 6, last)
