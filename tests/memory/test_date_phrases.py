"""Date phrases a probe found misread: ranges without "from", years to years, the middle of a
month or season, a month alone, 上上周, ISO times, decimals; and in queries, what is a
reference point and what bounds a side."""

from __future__ import annotations

import datetime as dt

import pytest

from somnid.memory.dates import find_dates
from somnid.recall.dates import query_time

WEDNESDAY = dt.date(2023, 10, 4)
SUNDAY = dt.date(2026, 12, 6)


def days(text: str, ref: dt.date | None = WEDNESDAY) -> list[tuple[str, str]]:
    return [
        (dt.date.fromordinal(a).isoformat(), dt.date.fromordinal(b).isoformat())
        for span in find_dates(text, ref)
        for a, b in span.ranges
    ]


def iso(day: int | None) -> str | None:
    return None if day is None else dt.date.fromordinal(day).isoformat()


@pytest.mark.parametrize(
    ("text", "first", "last"),
    [
        ("Jan-Mar 2023 was busy", "2023-01-01", "2023-03-31"),
        ("March to May 2023 I was in Oslo", "2023-03-01", "2023-05-31"),
        ("June 2023 to August 2023", "2023-06-01", "2023-08-31"),
        ("from 2020 to 2023 we lived there", "2020-01-01", "2023-12-31"),
        ("between 2019 and 2021", "2019-01-01", "2021-12-31"),
        ("the 2022-2023 season", "2022-01-01", "2023-12-31"),
        ("in 2023-24", "2023-01-01", "2024-12-31"),
        ("3月到5月我在奥斯陆", "2023-03-01", "2023-05-31"),
        ("从2022年3月到5月", "2022-03-01", "2022-05-31"),
        ("2022年11月至2023年2月", "2022-11-01", "2023-02-28"),
    ],
)
def test_a_range_of_months_or_years_is_every_day_between(text: str, first: str, last: str) -> None:
    assert days(text) == [(first, last)]


def test_what_is_not_a_range_of_years() -> None:
    # "and" joins two years only after "between"; a day is a day; a month of the dream's
    # own form (2023-11) is that month.
    assert days("2019 and 2021 were good years") == [
        ("2019-01-01", "2019-12-31"),
        ("2021-01-01", "2021-12-31"),
    ]
    assert days("on 2023-05-05 we met") == [("2023-05-05", "2023-05-05")]
    assert days("Last month (2023-11)", dt.date(2023, 12, 4)) == [("2023-11-01", "2023-11-30")] * 2
    assert days("the 2019-20 season") == [("2019-01-01", "2020-12-31")]


@pytest.mark.parametrize(
    ("text", "first", "last"),
    [
        ("the middle of May 2023", "2023-05-11", "2023-05-20"),
        ("in the middle of June 2023", "2023-06-11", "2023-06-20"),
        ("the middle of summer 2022", "2022-07-01", "2022-07-31"),
        ("mid summer 2022", "2022-07-01", "2022-07-31"),
        ("midsummer 2022", "2022-07-01", "2022-07-31"),
        ("middle of winter 2023", "2024-01-01", "2024-01-31"),
        ("early summer 2022", "2022-06-01", "2022-07-05"),
    ],
)
def test_the_middle_of_a_month_or_season_is_its_middle(text: str, first: str, last: str) -> None:
    assert days(text) == [(first, last)]


def test_a_month_alone_is_read_after_a_word_that_sets_it_in_time() -> None:
    assert days("She went to a support group in May") == [("2023-05-01", "2023-05-31")]
    assert days("since may") == [("2023-05-01", "2023-05-31")]
    assert days("we moved in october") == [("2023-10-01", "2023-10-31")]
    assert days("last August we sailed") == [("2023-08-01", "2023-08-31")]
    for text in (
        "May I ask you something?",
        "What did April tell me about the trip?",
        "August Wilson wrote plays",
        "What did Jun say?",
        "March forward with the plan",
        "a talk by June Carter",
    ):
        assert find_dates(text, WEDNESDAY) == [], text
    # With a day or a year a month is always a date.
    assert days("May 8, 2022") == [("2022-05-08", "2022-05-08")]
    assert days("June 2021") == [("2021-06-01", "2021-06-30")]


def test_a_year_less_date_just_past_new_year_is_ahead() -> None:
    december = dt.date(2023, 12, 20)
    assert days("We fly out on January 3.", december) == [("2024-01-03", "2024-01-03")]
    assert days("We met on December 3", december) == [("2023-12-03", "2023-12-03")]
    assert days("It was in June", december) == [("2023-06-01", "2023-06-30")]


def test_two_weeks_or_months_back_or_ahead_in_chinese() -> None:
    assert days("上上周我感冒了") == [("2023-09-18", "2023-09-24")]
    assert days("下下周开会") == [("2023-10-16", "2023-10-22")]
    assert days("上上个月") == [("2023-08-01", "2023-08-31")]
    assert days("上周") == [("2023-09-25", "2023-10-01")]


def test_an_iso_time_is_its_day() -> None:
    assert days("Deployed at 2023-05-05T10:30:00Z") == [("2023-05-05", "2023-05-05")]


def test_a_fraction_of_a_unit_is_not_its_whole_number() -> None:
    # "1.5 years ago" is not "5 years ago", "half a year ago" not "a year ago".
    assert days("It happened 1.5 years ago") == []
    assert days("2.5 weeks ago") == []
    assert days("half a year ago") == []
    assert days("2 weeks ago") == [("2023-09-17", "2023-09-23")]


def test_up_to_or_by_a_relative_day_is_no_reference_point() -> None:
    """ "What were you up to last weekend?" asks about the weekend; "as of" it would halve
    everything said after it."""
    when = query_time("What were you up to last weekend?", SUNDAY)
    assert when.until is None
    assert [(s[1], iso(s[2][0][0]), iso(s[2][0][1])) for s in when.spans] == [
        ("weekend", "2026-11-28", "2026-11-29")
    ]
    assert query_time("should I stop by tomorrow", SUNDAY).until is None
    # A calendar date is still a reference point, and a relative one after "as of".
    assert iso(query_time("where did Mel work up to 2023?", SUNDAY).until) == "2023-12-31"
    assert iso(query_time("as of last week, who led the team?", SUNDAY).until) == "2026-11-29"


def test_by_the_end_of_a_year_is_a_reference_point() -> None:
    when = query_time("Where did Ann live by the end of 2023?", SUNDAY)
    assert iso(when.until) == "2023-12-31" and not when.bound
    assert iso(query_time("截止到去年我在哪工作", SUNDAY).until) == "2025-12-31"


def test_chinese_sides_of_a_year() -> None:
    sued = query_time("2021年起诉了谁", SUNDAY)  # "sued in 2021": no "since"
    assert [iso(a) for a, _b in sued.bound] == ["2021-01-01"]
    since = query_time("2021年起我在哪工作", SUNDAY)
    assert iso(since.bound[0][0]) == "2021-01-01" and since.bound[0][1] > 800_000
    before = query_time("2023年前我在哪工作", SUNDAY)
    assert iso(before.bound[0][1]) == "2022-12-31"
    first_months = query_time("2023年前三个月我在哪", SUNDAY)  # the first three months
    assert iso(first_months.bound[0][1]) == "2023-12-31"


def test_a_weekday_reads_the_tense_of_its_own_clause_only() -> None:
    """An unpunctuated body is not one clause: a word 300 characters on says nothing of the
    weekday (and reading it made a long Chinese body quadratic)."""
    far = "I'm flying to Rome on Friday " + "and then " * 40 + "we went home"
    assert days(far) == [("2023-10-06", "2023-10-06")]
    assert days("I'm flying to Rome on Friday and we went home") == [("2023-09-29", "2023-09-29")]


def test_words_that_only_set_a_date_are_no_keywords() -> None:
    from somnid.recall.text import query_terms

    assert query_terms("Where did Ann work prior to 2020?") == ["ann", "work"]
    assert query_terms("What has Bob done since May?") == ["bob", "done", "may"]
    assert query_terms("two weeks ago") == []  # a relative day names another in every text


@pytest.mark.parametrize(
    ("text", "first", "last"),
    [
        ("what did we discuss in the last two weeks", "2023-09-20", "2023-10-04"),
        ("over the past 3 days", "2023-10-01", "2023-10-04"),
        ("the past few days", "2023-10-01", "2023-10-04"),
        ("过去三个月", "2023-07-04", "2023-10-04"),
        ("最近一周我们聊了什么", "2023-09-27", "2023-10-04"),
        ("近两年", "2021-10-04", "2023-10-04"),
    ],
)
def test_a_rolling_window_is_every_day_up_to_the_day_said(text: str, first: str, last: str) -> None:
    assert days(text) == [(first, last)]


def test_before_last_and_after_next() -> None:
    assert days("the weekend before last") == [("2023-09-23", "2023-09-24")]
    assert days("the year before last") == [("2021-01-01", "2021-12-31")]
    assert days("the week after next") == [("2023-10-16", "2023-10-22")]
    assert days("the month before last") == [("2023-08-01", "2023-08-31")]


def test_the_week_of_a_named_day() -> None:
    assert days("the week of May 8, 2023") == [("2023-05-08", "2023-05-14")]
    assert days("the weekend of 6 May 2023") == [("2023-05-06", "2023-05-07")]


def test_a_sum_of_money_is_no_year() -> None:
    assert days("it costs $2024 now") == []
    assert days("about €2023 a month") == []
    assert days("in 2023 it cost $2024") == [("2023-01-01", "2023-12-31")]


def test_this_friday_said_at_the_weekend_is_the_coming_one() -> None:
    assert days("what's on this Friday?", SUNDAY) == [("2026-12-11", "2026-12-11")]
    # A report is of the week gone: "I started the new job this Monday", said on a Saturday.
    saturday = dt.date(2026, 12, 5)
    assert days("I started the new job this Monday.", saturday) == [("2026-11-30", "2026-11-30")]
    assert days("this Friday", dt.date(2026, 12, 5)) == [("2026-12-11", "2026-12-11")]
    assert days("this Friday") == [("2023-10-06", "2023-10-06")]  # said on a Wednesday
    assert days("this Monday") == [("2023-10-02", "2023-10-02")]
    assert days("这周五", SUNDAY) == [("2026-12-04", "2026-12-04")]  # the calendar week


def test_since_as_a_reason_is_no_side_of_a_date() -> None:
    reason = query_time("since 2023 was a bad year, what did we cut?", SUNDAY)
    assert [(iso(a), iso(b)) for a, b in reason.bound] == [("2023-01-01", "2023-12-31")]
    side = query_time("what did we cut since 2023?", SUNDAY)
    assert iso(side.bound[0][0]) == "2023-01-01" and side.bound[0][1] > 800_000


def test_what_a_review_found_misread_after_the_first_fixes() -> None:
    # 前 and 起 inside words: 前往 "go to", 前后 "around", 前端; 起 before 至今, 在, 每.
    went = query_time("我5月前往日本做了什么", SUNDAY)  # May of any year, not "before May"
    assert went.bound and all(a > 700_000 for a, _b in went.bound)
    around = query_time("2023年前后我在哪里工作", SUNDAY)
    assert [(iso(a), iso(b)) for a, b in around.bound] == [("2023-01-01", "2023-12-31")]
    for text in ("2020年起至今我换了几份工作", "2021年起在北京工作的时候"):
        assert query_time(text, SUNDAY).bound[0][1] > 800_000, text  # every day since
    # Months in a list, after "for"; a capitalised month alone that is no name.
    both = query_time("what did I do in March and April", SUNDAY)
    assert len(both.spans) == 2
    assert days("in March, April and May") == [
        ("2023-03-01", "2023-03-31"),
        ("2023-04-01", "2023-04-30"),
        ("2023-05-01", "2023-05-31"),
    ]
    assert days("booked a trip for October") == [("2023-10-01", "2023-10-31")]
    assert days("a gift for April's birthday") == []  # hers
    assert days("October's rain") == [("2023-10-01", "2023-10-31")]
    assert days("October was busy") == [("2023-10-01", "2023-10-31")]
    assert days("In June Alice moved") == [("2023-06-01", "2023-06-30")]
    # A Chinese range's year is its first month's.
    assert days("2023年11月到2月") == [("2023-11-01", "2024-02-29")]
    # A report of January, said in December, is the January gone.
    december = dt.date(2026, 12, 20)
    assert days("On January 3 I started the new job.", december) == [("2026-01-03", "2026-01-03")]
    # "the last 2 weeks of July" is a part of July, not the last two weeks.
    assert ("2023-09-20", "2023-10-04") not in days("the last 2 weeks of July")
    # 2011-12: an academic year, not December 2011.
    assert days("during the 2011-12 academic year") == [("2011-01-01", "2012-12-31")]
