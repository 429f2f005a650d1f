"""Dates in queries and in memory text, English and Chinese, as day ranges."""

from __future__ import annotations

import datetime as dt
import itertools
import random

import pytest

from somnid.memory.dates import find_dates
from somnid.recall.dates import GRAIN_WEIGHT, Periods, memory_dates, query_time
from somnid.recall.passes import ASKS_WHEN_SHARE, boost_time
from somnid.recall.scorer import Scored
from somnid.recall.text import query_terms

TODAY = dt.date(2023, 10, 20)


def days(ranges: list[tuple[int, int]]) -> list[tuple[dt.date, dt.date]]:
    return [(dt.date.fromordinal(a), dt.date.fromordinal(b)) for a, b in ranges]


def first_span(query: str) -> tuple[str, list[tuple[dt.date, dt.date]]]:
    when = query_time(query, TODAY)
    assert when, f"no date read from {query!r}"
    _text, grain, ranges = when.spans[0]
    return grain, days(list(ranges))


def test_absolute_dates_in_english_and_chinese() -> None:
    day = dt.date(2022, 5, 8)
    for query in (
        "What did John organize on May 8, 2022?",
        "what happened on 8 May 2022",
        "2022年5月8日我们做了什么？",
        "the meeting of 2022-05-08",
    ):
        assert first_span(query) == ("day", [(day, day)]), query


def test_partial_dates_match_any_year_in_a_query() -> None:
    grain, ranges = first_span("Which city was Calvin in on October 3?")
    assert grain == "day"
    assert (dt.date(2023, 10, 3), dt.date(2023, 10, 3)) in ranges
    assert (dt.date(2019, 10, 3), dt.date(2019, 10, 3)) in ranges
    grain, ranges = first_span("我10月3日去了哪里")
    assert grain == "day" and (dt.date(2021, 10, 3), dt.date(2021, 10, 3)) in ranges
    assert first_span("what did we plan in October 2023") == (
        "month",
        [(dt.date(2023, 10, 1), dt.date(2023, 10, 31))],
    )


@pytest.mark.parametrize(
    ("query", "first", "last"),
    [
        ("Hal's party after 2023", "2024-01-01", "2024-12-31"),
        ("after 2024", "2025-01-01", "2025-12-31"),
        ("before 2025", "2024-01-01", "2024-12-31"),
        ("2024年之前", "2023-01-01", "2023-12-31"),
        ("before March 2023", "2023-02-01", "2023-02-28"),
        ("after June 2023", "2023-07-01", "2023-07-31"),
        ("after December 2022", "2023-01-01", "2023-01-31"),
        ("after summer 2023", "2023-09-01", "2023-11-30"),
        ("after May 5, 2023", "2023-05-06", "2023-05-12"),
    ],
)
def test_the_stretch_beside_a_calendar_period_is_the_period_beside_it(
    query: str, first: str, last: str
) -> None:
    # A probe: "after 2024" ran into 2026 by a day, "before 2025" missed 2024-01-01, "after
    # June 2024" missed July 31 (the stretch was as many days long as the period named).
    _grain, ranges = first_span(query)
    assert ranges == [(dt.date.fromisoformat(first), dt.date.fromisoformat(last))]


@pytest.mark.parametrize(
    "query",
    ["Gina's marathon after May 1850", "before June 2200", "in December 2150", "May 5, 1850",
     "2150年5月的事"],
)  # fmt: skip
def test_a_month_beside_a_year_out_of_reach_is_no_date(query: str) -> None:
    # A probe: the year was dropped and the month read as this year's, halving every
    # memory out of a month nobody asked about.
    assert not query_time(query, TODAY)
    assert find_dates(query, TODAY) == []


@pytest.mark.parametrize(
    ("text", "read"),
    [
        ("yesterday 1500 people came", "yesterday"),
        ("last Friday, 3000 users signed up", "last Friday"),
        ("on Monday 0900 standup", "on Monday"),
        ("On May 5, 1200 people attended", "May 5"),
        ("May 12 at 1500 hours", "May 12"),
    ],
)
def test_a_count_beside_a_date_is_no_year_of_it(text: str, read: str) -> None:
    # A review: any four digits after any date were taken for a year out of reach, and
    # the date dropped from memories and queries alike.
    assert [span.text for span in find_dates(text, TODAY)] == [read]


def test_relative_times_are_resolved_against_today() -> None:
    yesterday = dt.date(2023, 10, 19)
    assert first_span("what did I eat yesterday") == ("day", [(yesterday, yesterday)])
    assert first_span("我昨天吃了什么") == ("day", [(yesterday, yesterday)])
    assert first_span("where did we go last summer") == (
        "season",
        [(dt.date(2023, 6, 1), dt.date(2023, 8, 31))],
    )
    assert first_span("去年夏天去了哪里") == (
        "season",
        [(dt.date(2022, 6, 1), dt.date(2022, 8, 31))],
    )
    friday = dt.date(2023, 10, 13)  # TODAY is a Friday: last Friday is a week before
    assert first_span("who called last Friday") == ("day", [(friday, friday)])
    assert first_span("上周五谁打来电话") == ("day", [(friday, friday)])
    grain, ranges = first_span("三天前开的会")
    assert grain == "day" and ranges == [(dt.date(2023, 10, 17), dt.date(2023, 10, 17))]


def test_words_that_only_look_like_dates_are_not_read_as_dates() -> None:
    assert not query_time("I may go to the party", TODAY)
    assert not query_time("how do I deploy the gateway", TODAY)


def test_memory_text_is_dated_by_the_memory_own_day() -> None:
    told = dt.date(2023, 10, 4)
    assert days(memory_dates("Yesterday I met Anna in Boston", told)) == [
        (dt.date(2023, 10, 3), dt.date(2023, 10, 3))
    ]
    # A day without a year is in the memory's year; relative ones need the memory's day.
    assert days(memory_dates("We moved on 3 October.", told)) == [
        (dt.date(2023, 10, 3), dt.date(2023, 10, 3))
    ]
    assert memory_dates("Yesterday I met Anna in Boston", None) == []
    assert days(memory_dates("Signed on 2021-03-04.", None)) == [
        (dt.date(2021, 3, 4), dt.date(2021, 3, 4))
    ]


def test_one_digit_numbers_stay_query_terms_but_a_dates_numerals_do_not() -> None:
    assert query_terms("Which of the 3 plans did room 7 pick?") == [
        "3",
        "plans",
        "room",
        "7",
        "pick",
    ]
    assert "a" not in query_terms("a b c 7")
    # The time pass reads a date; its numerals as keywords match every text holding the
    # number. Its words stay: a text may say "last summer".
    assert query_terms("What happened on May 8, 2022?") == ["happened", "may"]
    assert query_terms("What state did Joanna visit in summer 2021?") == [
        "state", "joanna", "visit", "summer"
    ]  # fmt: skip
    assert query_terms("2023年夏天我去了哪里？") == ["夏天"]
    assert query_terms("五月中旬的会议") == ["会议"]  # 中旬 ("mid-"): of a day in every month
    assert query_terms("我5月12日做了什么？") == []  # the date is all it asks by
    # A lone character a date leaves (到 of 3月到5月) is no term; a year alone, with no word
    # of time beside it, may be a number: it stays one.
    assert query_terms("3月到5月的项目") == ["项目"]
    # A part of a period says nothing a text must hold: "last" and "week" matched every
    # turn saying "last week", out of the period, above the one in it (a probe).
    assert query_terms("What happened the last week of May 2023?") == ["happened", "may"]
    assert query_terms("the first weekend of June, camping") == ["june", "camping"]
    assert query_terms("door code for room 2012") == ["door", "code", "room", "2012"]
    assert query_terms("Windows 2000 license key") == ["windows", "2000", "license", "key"]


def span_of(query: str) -> tuple[str, tuple[dt.date, dt.date]]:
    """The grain and the range (the first year's, for a phrase without a year)."""
    when = query_time(query, TODAY)
    assert when.spans, f"no date read from {query!r}"
    _text, grain, ranges = when.spans[0]
    first, last = ranges[0] if len(ranges) == 1 else ranges[TODAY.year - 1970]
    return grain, (dt.date.fromordinal(first), dt.date.fromordinal(last))


def test_parts_of_a_month_or_season_are_their_own_span_in_english_and_chinese() -> None:
    last_week = ("week", (dt.date(2023, 7, 25), dt.date(2023, 7, 31)))
    assert span_of("What did Jon do in the last week of July 2023?") == last_week
    assert span_of("2023年7月的最后一周他做了什么") == last_week
    first_weekend = ("weekend", (dt.date(2023, 5, 6), dt.date(2023, 5, 7)))  # Sat 6, Sun 7
    assert span_of("where were we the first weekend of May") == first_weekend
    assert span_of("5月的第一个周末我们在哪") == first_weekend
    end_of_summer = ("month", (dt.date(2023, 7, 28), dt.date(2023, 8, 31)))
    assert span_of("a trip towards the end of summer 2023") == end_of_summer
    assert span_of("2023年夏末的旅行") == end_of_summer
    assert span_of("plans for summer 2022") == (
        "season",
        (dt.date(2022, 6, 1), dt.date(2022, 8, 31)),
    )
    late_june = ("week", (dt.date(2023, 6, 21), dt.date(2023, 6, 30)))
    assert span_of("what happened in late June 2023") == late_june
    assert span_of("2023年6月底发生了什么") == late_june
    assert span_of("in early March 2022")[1] == (dt.date(2022, 3, 1), dt.date(2022, 3, 10))


def test_calendar_dates_bound_the_search_and_relative_ones_do_not() -> None:
    october = query_time("What setback did Melanie face in October 2023?", TODAY)
    oct_1, oct_31 = dt.date(2023, 10, 1).toordinal(), dt.date(2023, 10, 31).toordinal()
    assert october.bound == ((oct_1, oct_31),)
    assert october.outside([(oct_31 + 5, oct_31 + 5)], oct_31 + 5)
    assert not october.outside([(oct_1 + 3, oct_1 + 3)], oct_1 + 3)
    assert not october.outside([], None)  # an entry with no date keeps its place
    # Said in November about a day in October: inside.
    assert not october.outside([(oct_31 + 9, oct_31 + 9), (oct_1, oct_1)], oct_31 + 9)
    zh = query_time("她2023年10月遇到了什么挫折", TODAY)
    assert zh.bound == ((oct_1, oct_31),)
    assert not query_time("what did I eat yesterday", TODAY).bound
    assert not query_time("我上周做了什么", TODAY).bound
    # "the week before August 3, 2023": up to that day, from a month before it.
    before = query_time("What did John do the week before August 3, 2023?", TODAY)
    aug_3 = dt.date(2023, 8, 3).toordinal()
    assert before.bound == ((aug_3 - 31, aug_3),)


def test_as_of_and_by_name_a_reference_point_not_an_event_date() -> None:
    may_31 = dt.date(2023, 5, 31).toordinal()
    for query in (
        "What was Jon's job as of May 2023?",
        "How many books had Ann read by May 2023?",
        "截至2023年5月他在哪里工作",
        "到2023年5月为止她读了几本书",
    ):
        when = query_time(query, TODAY)
        assert when.until == may_31, query
        assert not when.spans and not when.bound, query  # no event in May is asked for
        assert when.outside([(may_31 + 1, may_31 + 1)], may_31 + 1)  # said after it
        assert not when.outside([(may_31 - 40, may_31 - 40)], may_31 - 40)
        assert "as of 2023-05-31" in when.describe()
    # 到 alone is "to": a date after it is an event's.
    went = query_time("我2023年5月到北京出差", TODAY)
    assert went.until is None and went.bound


def test_parts_of_periods_in_a_memory_are_read_against_its_year() -> None:
    told = dt.date(2023, 9, 2)
    assert days(memory_dates("We went camping in the last week of August.", told)) == [
        (dt.date(2023, 8, 25), dt.date(2023, 8, 31))
    ]
    assert days(memory_dates("我们8月的最后一周去露营了。", told)) == [
        (dt.date(2023, 8, 25), dt.date(2023, 8, 31))
    ]


def test_recall_reads_dates_as_the_dream_writes_them() -> None:
    """One reading for both (somnid.memory.dates): recall read "the day before yesterday" as
    yesterday, 后天 and 这个月 not at all, and "last weekend" said on a Sunday as the weekend
    that day ends; and it reads the dream's written values back as the same days."""
    told = dt.date(2023, 10, 4)
    for text in ("It rained the day before yesterday", "前天下过雨"):
        assert days(memory_dates(text, told)) == [(dt.date(2023, 10, 2), dt.date(2023, 10, 2))]
    assert days(memory_dates("后天见", told)) == [(dt.date(2023, 10, 6), dt.date(2023, 10, 6))]
    october = [(dt.date(2023, 10, 1), dt.date(2023, 10, 31))]
    assert days(memory_dates("这个月很忙", told)) == days(memory_dates("busy this month", told))
    assert days(memory_dates("这个月很忙", told)) == october
    sunday = dt.date(2023, 10, 1)
    weekend_before = [(dt.date(2023, 9, 23), dt.date(2023, 9, 24))]
    assert days(memory_dates("We hiked last weekend", sunday)) == weekend_before
    assert days(memory_dates("我们上周末去爬山了", sunday)) == weekend_before
    assert days(memory_dates("We hiked (weekend of 2023-09-23)", None)) == weekend_before
    assert days(memory_dates("去年夏天 (summer 2022)", None)) == [
        (dt.date(2022, 6, 1), dt.date(2022, 8, 31))
    ]
    # A weekday said bare points the way its clause does, in both languages.
    friday = [(dt.date(2023, 9, 29), dt.date(2023, 9, 29))]
    assert days(memory_dates("I won the tournament on Friday!", told)) == friday
    assert days(memory_dates("我周五赢了比赛！", told)) == friday


def test_a_question_for_a_time_is_read_in_english_and_chinese() -> None:
    for query in (
        "When did Melanie paint a sunrise?",
        "What year did Nate get his turtles?",
        "她什么时候去的海边",
        "你哪一年搬到上海的",
    ):
        when = query_time(query, TODAY)
        assert when.asks_when and when, query
        assert not when.spans and not when.bound, query  # it asks for a time, names none
        assert "asks when" in when.describe()
    for query in ("Where did Melanie paint?", "她在哪里画画", "I paint when it rains"):
        assert not query_time(query, TODAY).asks_when, query


def test_a_question_for_a_time_lifts_the_entries_that_name_one() -> None:
    """Asked "when", a turn that says when (a day its text names) is lifted; one that only
    was written on a day, or names none, is not."""
    told = dt.date(2023, 5, 8)
    day = told.toordinal()
    entries = {
        1: memory_dates("We adopted the dog last week!", told),
        2: memory_dates("今天天气不错", told),  # today: only the day it was written
        3: memory_dates("The dog is lovely.", told),
    }
    for query in ("When did Ann adopt the dog?", "安什么时候领养了狗？"):
        scored = [Scored(i, 1.0, 0.0) for i in entries]
        ranked = boost_time(
            scored, query_time(query, TODAY), entries, dict.fromkeys(entries, day), 0.3
        )
        assert [s.entry_id for s in ranked] == [1, 2, 3]
        assert ranked[0].score == pytest.approx(1.0 + 0.3 * ASKS_WHEN_SHARE)
        assert [s.score for s in ranked[1:]] == [1.0, 1.0]


def test_a_range_of_days_bounds_the_search_to_every_day_between() -> None:
    aug_11, aug_15 = dt.date(2023, 8, 11).toordinal(), dt.date(2023, 8, 15).toordinal()
    for query in (
        "What did we do between Aug 11 and Aug 15, 2023?",
        "Where was Mia from August 11 to 15, 2023?",
        "2023年8月11日到15日我们做了什么",
    ):
        when = query_time(query, TODAY)
        assert when.bound == ((aug_11, aug_15),), query
        assert not when.outside([(aug_11 + 2, aug_11 + 2)], aug_11 + 2), query  # Aug 13
        assert when.outside([(aug_15 + 1, aug_15 + 1)], aug_15 + 1), query
        assert when.match([(aug_11 + 3, aug_11 + 3)]) == GRAIN_WEIGHT["week"], query
    # Without a year: the same days in every year.
    grain, ranges = first_span("what happened between Aug 11 and Aug 15?")
    assert grain == "week" and (dt.date(2021, 8, 11), dt.date(2021, 8, 15)) in ranges


def _touches(wanted: list[tuple[int, int]], ranges: list[tuple[int, int]]) -> bool:
    return any(s <= e2 and s2 <= e for s, e in wanted for s2, e2 in ranges)


def test_periods_tell_overlap_as_comparing_every_pair_does() -> None:
    # Ranges that overlap, nest, touch end to start and lie apart, in any order.
    rng = random.Random(5)
    for _ in range(2000):
        starts = rng.sample(range(0, 20), rng.randrange(0, 8))
        wanted = [(a, a + rng.randrange(0, 3)) for a in starts]
        ranges = [(a, a + rng.randrange(0, 2)) for a in rng.sample(range(-3, 25), rng.randrange(3))]
        assert Periods.of(wanted).touch(ranges) == _touches(wanted, ranges), (wanted, ranges)


def test_the_time_pass_matches_and_bounds_as_every_pair_would() -> None:
    # A day in any year is one range per year: the query's spans and bound are long lists.
    for query in (
        "What did Ann do on May 7?",
        "In 2023, what did she do on May 7?",  # the coarser span first
        "What happened in the last week of July 2023, or in the summer?",
        "as of June 2022, what had Bob planned for May 7?",
        "2023年7月最后一周她做了什么？",
    ):
        when = query_time(query, TODAY)
        assert when, query
        for a in range(TODAY.toordinal() - 900, TODAY.toordinal() + 30, 2):
            ranges = [(a, a + 2), (a + 300, a + 300)]
            # Each of the entry's ranges meets a span no more precisely than its own length.
            best = max(
                (
                    min(GRAIN_WEIGHT[g], 0.9 if found == (a, a + 2) else 1.0)
                    for _t, g, wanted in when.spans
                    for found in ranges
                    if _touches(list(wanted), [found])
                ),
                default=0.0,
            )
            assert when.match(ranges) == best, (query, a)
            outside = bool(when.bound) and not _touches(list(when.bound), ranges)
            assert when.outside(ranges, None) == outside, (query, a)


def test_an_entry_meets_a_query_no_more_precisely_than_its_own_dates() -> None:
    """ "in 2023" against "June 27, 2023" is a year's match, not a day's."""
    when = query_time("the garden fence on June 27, 2023", TODAY)
    day = dt.date(2023, 6, 27).toordinal()
    year = (dt.date(2023, 1, 1).toordinal(), dt.date(2023, 12, 31).toordinal())
    summer = (dt.date(2023, 6, 1).toordinal(), dt.date(2023, 8, 31).toordinal())
    assert when.match([(day, day)]) == GRAIN_WEIGHT["day"]
    assert when.match([summer]) == GRAIN_WEIGHT["season"]
    assert when.match([year]) == GRAIN_WEIGHT["year"]
    assert when.match([year, (day, day)]) == GRAIN_WEIGHT["day"]


D = dt.date


@pytest.mark.parametrize(
    ("query", "bound"),
    [
        # A range of calendar days or months: every day between, and only those.
        ("bicycle between 2023-05-01 and 2023-05-10", (D(2023, 5, 1), D(2023, 5, 10))),
        ("bicycle from May to July 2023", (D(2023, 5, 1), D(2023, 7, 31))),
        ("from November to February 2023", (D(2022, 11, 1), D(2023, 2, 28))),
        ("from May 2022 to July 2023", (D(2022, 5, 1), D(2023, 7, 31))),
        ("from Nov 2022 to Feb", (D(2022, 11, 1), D(2023, 2, 28))),
        # One side of a date: every day on it, not the date itself.
        ("bicycle before 2024", (D.min, D(2023, 12, 31))),
        ("bicycle prior to May 2023", (D.min, D(2023, 4, 30))),
        ("bicycle since 2023", (D(2023, 1, 1), D.max)),
        ("bicycle after June 2023", (D(2023, 7, 1), D.max)),
        ("what happened after summer 2023", (D(2023, 9, 1), D.max)),
        ("5月以来我读了哪些书", (D(2023, 5, 1), D.max)),  # the latest May not after today
        ("2023年之前她骑自行车吗", (D.min, D(2022, 12, 31))),
        ("2023年以来她骑自行车吗", (D(2023, 1, 1), D.max)),
        # A stretch next to a date, with its unit: as before (the month before it).
        ("the week before August 3, 2023", (D(2023, 7, 3), D(2023, 8, 3))),
    ],
)
def test_a_range_or_a_side_of_a_date_bounds_the_search(
    query: str, bound: tuple[dt.date, dt.date]
) -> None:
    when = query_time(query, TODAY)
    assert days(list(when.bound)) == [bound], when.describe()


def test_a_side_of_a_date_lifts_the_stretch_next_to_it_not_the_date() -> None:
    when = query_time("bicycle before 2024", TODAY)
    in_2023, in_2024 = D(2023, 6, 1).toordinal(), D(2024, 6, 1).toordinal()
    assert when.match([(in_2023, in_2023)]) > 0 and when.match([(in_2024, in_2024)]) == 0
    assert when.outside([(in_2024, in_2024)], None) and not when.outside([(in_2023, in_2023)], None)


def test_chinese_months_in_numerals_and_a_month_of_last_year() -> None:
    assert first_span("去年五月我们去了哪里") == ("month", [(D(2022, 5, 1), D(2022, 5, 31))])
    assert first_span("2023年五月3日") == ("day", [(D(2023, 5, 3), D(2023, 5, 3))])
    grain, ranges = first_span("十二月的聚会")
    assert grain == "month" and (D(2022, 12, 1), D(2022, 12, 31)) in ranges


def test_as_of_a_year_is_a_reference_point_and_no_keyword() -> None:
    """The year's pattern takes "of 2024": "as of 2024" was read as an event in 2024."""
    when = query_time("kayak as of 2024", TODAY)
    assert not when.spans and when.until == D(2024, 12, 31).toordinal()
    assert query_terms("kayak as of 2024") == ["kayak"]
    assert query_terms("budget report for 2024") == ["budget", "report"]  # the year: time's
    assert query_terms("made by hand") == ["made", "hand"]
    assert query_terms("what did I watch till 2023") == ["watch"]  # nor the word that makes it
    assert "截至" not in query_terms("截至2023年5月我住在哪里")


def test_a_range_of_months_in_a_memory_is_read_from_its_own_day() -> None:
    """ "from Nov to Feb" said on 2023-11-02 is this winter, not the last one."""
    assert days(memory_dates("We travel from Nov to Feb.", D(2023, 11, 2))) == [
        (D(2023, 11, 1), D(2024, 2, 29))
    ]


def test_a_body_of_many_dates_has_each_read_once() -> None:
    """Spans taken are found by bisection (8000 compared each with all took 3 s; the time is
    bench matter): each date once, a finer pattern's stretch never read twice."""
    body = "去年五月, in the last week of July 2023 we met. " * 4000
    spans = [s for s in find_dates(body, D(2023, 6, 1)) if s.text]
    assert [s.text for s in spans[:2]] == ["去年五月", "the last week of July 2023"]
    assert len(spans) == 8000
    assert all(a.end <= b.start for a, b in itertools.pairwise(spans))
