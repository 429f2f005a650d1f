"""Dates in queries and in memory text, English and Chinese, as day ranges."""

from __future__ import annotations

import datetime as dt

from somnid.recall.dates import memory_dates, query_time
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


def test_one_digit_numbers_stay_query_terms() -> None:
    assert query_terms("What happened on May 8, 2022?") == ["happened", "may", "8", "2022"]
    assert "a" not in query_terms("a b c 7")
