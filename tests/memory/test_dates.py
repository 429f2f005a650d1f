"""The one reading of dates (somnid.memory.dates): the same rule in English and Chinese, and
the same days for recall's reading and the dream's written values."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import pytest

from somnid.memory.dates import absolutise, find_dates

WEDNESDAY = dt.date(2023, 10, 4)
SUNDAY = dt.date(2023, 10, 1)


def days(text: str, ref: dt.date | None = WEDNESDAY) -> list[tuple[str, str]]:
    return [
        (dt.date.fromordinal(a).isoformat(), dt.date.fromordinal(b).isoformat())
        for span in find_dates(text, ref)
        for a, b in span.ranges
    ]


def written(text: str, ref: dt.date = WEDNESDAY) -> list[str]:
    return absolutise(text, ref)[1]


@pytest.mark.parametrize(
    ("en", "zh", "value"),
    [
        ("We met last week", "我们上周见过", "week of 2023-09-25"),
        ("I start next month", "我下个月开始", "2023-11"),
        ("Busy this month", "这个月很忙", "2023-10"),
        ("We moved this year", "我们今年搬家了", "2023"),
        ("the day before yesterday", "前天", "2023-10-02"),
        ("the day after tomorrow", "后天", "2023-10-06"),
        ("three days ago it rained", "三天前下过雨", "2023-10-01"),
        ("I'll be back in two weeks", "我两周后回来", "2023-10-18"),
        ("We're going next weekend", "我们下周末去", "weekend of 2023-10-14"),
        ("I went to the museum on Friday", "我周五去了博物馆", "2023-09-29"),
        ("I'm flying to Rome on Friday", "我周五要飞去罗马", "2023-10-06"),
        ("We'll go next summer", "我们明年夏天去", "summer 2024"),
    ],
)
def test_one_rule_in_english_and_chinese(en: str, zh: str, value: str) -> None:
    assert written(en) == written(zh) == [value]
    assert days(en) == days(zh)


def test_last_weekend_said_on_a_sunday_is_the_weekend_before() -> None:
    """Recall read the weekend that Sunday ends, the dream the one before: the one before it
    is right (the weekend a Sunday ends is "this weekend")."""
    before = [("2023-09-23", "2023-09-24")]
    assert days("We hiked last weekend", SUNDAY) == days("我们上周末去爬山了", SUNDAY) == before
    assert written("We hiked last weekend", SUNDAY) == ["weekend of 2023-09-23"]
    assert written("我们上周末去爬山了", SUNDAY) == ["weekend of 2023-09-23"]
    assert days("this weekend", SUNDAY) == days("这周末", SUNDAY) == [("2023-09-30", "2023-10-01")]


def test_this_month_and_this_year_resolve_in_both_languages() -> None:
    """The dream left "this month" / "this year" as they were but wrote 这个月 / 今年; recall
    read 本月 but not 这个月 or 前年."""
    assert written("this month and this year") == ["2023-10", "2023"]
    assert written("这个月和今年") == ["2023-10", "2023"]
    assert days("这个月") == days("本月") == days("this month") == [("2023-10-01", "2023-10-31")]
    assert days("前年") == [("2021-01-01", "2021-12-31")]


def test_a_season_is_its_three_months_and_a_bare_season_word_no_date() -> None:
    """The dream wrote 去年夏天 as the year 2022 and "last summer" not at all; recall read
    both as the summer. A season word alone ("I like winter", 我喜欢冬天) is no date."""
    # Said in October: "last summer" is the latest one over, 去年夏天 last year's.
    assert written("last summer we went to the sea") == ["summer 2023"]
    assert written("去年夏天我们去了海边") == ["summer 2022"]
    assert days("summer 2022") == [("2022-06-01", "2022-08-31")]
    assert written("I like winter") == written("我喜欢冬天") == []


def test_the_written_values_read_back_as_the_same_days() -> None:
    for text in ("We hiked last weekend", "我们上周末去爬山了", "We met last week", "上周见过"):
        [(done, values)] = [absolutise(text, WEDNESDAY)]
        relative = days(text)
        assert [d for d in days(done, None) if d in relative] == relative, (done, values)


def test_this_coming_friday_is_always_ahead() -> None:
    assert written("We went shopping, and this coming Friday we go again") == ["2023-10-06"]


def test_words_that_only_look_like_dates() -> None:
    for text in (
        "Rome wasn't built in a day",
        "I swim twice in a week",
        "在这周围有很多餐厅",
        "我每周五都去游泳",
        "I may go",
    ):
        assert find_dates(text, WEDNESDAY) == [], text


def test_without_a_reference_day_only_dates_with_a_year_are_read() -> None:
    assert days("Yesterday, on 3 October", None) == []
    assert days("Signed on 2021-03-04, the week of 2021-03-01", None) == [
        ("2021-03-04", "2021-03-04"),
        ("2021-03-01", "2021-03-07"),
    ]


@pytest.mark.parametrize(
    ("text", "first", "last"),
    [
        ("We were away between Aug 11 and Aug 15, 2023", "2023-08-11", "2023-08-15"),
        ("the festival runs May 3-7, 2023", "2023-05-03", "2023-05-07"),
        ("from August 11 to 15 I was in Rome", "2023-08-11", "2023-08-15"),
        ("we stayed 8 to 14 May 2023", "2023-05-08", "2023-05-14"),
        ("between the 2nd and the 5th of September", "2023-09-02", "2023-09-05"),
        ("Dec 28, 2022 – Jan 3 in Lisbon", "2022-12-28", "2023-01-03"),
        ("我8月11日到15日在罗马", "2023-08-11", "2023-08-15"),
        ("从2022年12月28日至1月3日", "2022-12-28", "2023-01-03"),
        ("9月2号-5号出差", "2023-09-02", "2023-09-05"),
    ],
)
def test_a_range_of_days_is_every_day_between(text: str, first: str, last: str) -> None:
    assert days(text) == [(first, last)]


def test_what_is_not_a_range_of_days() -> None:
    # "and" without "between" joins two things said of one day, not a range.
    assert days("on Aug 11 and 15 we met") == [("2023-08-11", "2023-08-11")]
    # A time of day after a date, or a range longer than a season.
    assert days("the call on May 3 - 4pm") == [("2023-05-03", "2023-05-03")]
    assert days("from Jan 1 to Jun 30, 2023")[0] == ("2023-01-01", "2023-01-01")
    # An end before the start in the same month.
    assert days("Aug 15-11, 2023")[0] == ("2023-08-15", "2023-08-15")


def test_a_year_before_1000_is_written_in_four_digits() -> None:
    # `%Y` wrote year 1 as "1": "Last month (1-12)", dates ['1-12', '1'], no ISO date.
    ref = dt.date(2, 1, 3)
    assert absolutise("last month", ref) == ("last month (0001-12)", ["0001-12"])
    assert absolutise("last year", ref) == ("last year (0001)", ["0001"])
    assert absolutise("yesterday", ref)[1] == ["0002-01-02"]


@pytest.mark.parametrize(
    ("text", "valid"),
    [
        ("hiking as of 2023-02-30", "hiking as of 2023-02-28"),
        ("February 30, 2023", "February 28, 2023"),
        ("on the 30th of February 2023", "on the 28th of February 2023"),
        ("2023/04/31", "2023/04/30"),
        ("2023-13-01", "2023-12-01"),
        ("2023年2月30日", "2023年2月28日"),
    ],
)
def test_a_day_the_calendar_has_not_is_no_date_not_its_year(text: str, valid: str) -> None:
    """An API probe: "as of 2023-02-30" was read as "as of 2023-12-31", ten months wider."""
    ref = dt.date(2024, 1, 1)
    assert find_dates(text, ref) == []
    assert find_dates(text, ref, any_year=True) == []
    assert [span.grain for span in find_dates(valid, ref)] == ["day"]


def _needs(node: Any, wanted: Callable[[int], bool]) -> bool:
    """Whether every match of a parsed regex (``re._parser``) takes a character ``wanted``
    holds for: a conservative reading (a lookaround, a class of categories, any character:
    no)."""
    from re import _constants as c

    if isinstance(node, list) or hasattr(node, "data"):
        return any(_needs(item, wanted) for item in node)
    op, av = node
    if op is c.LITERAL:
        return wanted(av)
    if op is c.IN:
        members = [item for item in av if item[0] is not c.NEGATE]
        if len(members) != len(av):
            return False
        return all(
            wanted(arg) if kind is c.LITERAL
            else kind is c.RANGE and all(wanted(ch) for ch in range(arg[0], arg[1] + 1))
            for kind, arg in members
        )  # fmt: skip
    if op is c.BRANCH:
        return all(_needs(branch, wanted) for branch in av[1])
    if op is c.SUBPATTERN:
        return _needs(av[-1], wanted)
    if op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT):
        return av[0] >= 1 and _needs(av[2], wanted)
    return False


def test_every_chinese_pattern_needs_a_chinese_character() -> None:
    # A text without one is read by the others alone (a fifth of a 10k index build).
    from re import _parser

    from somnid.memory.dates.patterns import COMPILED, HAS_CHINESE, WITHOUT_CHINESE

    def chinese(code: int) -> bool:
        return bool(HAS_CHINESE.match(chr(code)))

    chinese_kinds = {kind for kind, _ in COMPILED} - {kind for kind, _ in WITHOUT_CHINESE}
    assert len(chinese_kinds) >= 20
    for kind, pattern in COMPILED:
        if kind in chinese_kinds:
            assert _needs(_parser.parse(pattern.pattern, pattern.flags), chinese), kind
    assert not _needs(_parser.parse(r"\d+年?", 0), chinese)  # the reading can say no
    assert _needs(_parser.parse(r"(?:\d+\s*)?(?:年|[月日])", 0), chinese)
