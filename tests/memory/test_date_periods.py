"""Quarters, halves, a day of the month said alone, and years that are numbers: read as the
days they mean, written out by a dream in a form read back as the same days, and, in a
question, bounding the search as other calendar dates do."""

from __future__ import annotations

import datetime as dt

import pytest

from somnid.memory.dates import absolutise, find_dates
from somnid.recall.dates import query_time
from somnid.recall.text import query_terms

SATURDAY = dt.date(2023, 5, 20)


def days(text: str, ref: dt.date = SATURDAY) -> list[tuple[str, str]]:
    return [
        (dt.date.fromordinal(a).isoformat(), dt.date.fromordinal(b).isoformat())
        for span in find_dates(text, ref)
        for a, b in span.ranges
    ]


@pytest.mark.parametrize(
    ("text", "first", "last"),
    [
        ("Was the first half of September 2022 a good month?", "2022-09-01", "2022-09-15"),
        ("the second half of May was quiet", "2023-05-16", "2023-05-31"),
        ("Q3 2023 revenue", "2023-07-01", "2023-09-30"),
        ("in Q4 we shipped it", "2023-10-01", "2023-12-31"),
        ("the third quarter of 2022", "2022-07-01", "2022-09-30"),
        ("H2 2022 was slow", "2022-07-01", "2022-12-31"),
        ("the first half of 2021", "2021-01-01", "2021-06-30"),
        ("the first half of last year", "2022-01-01", "2022-06-30"),
        ("the last quarter of this year", "2023-10-01", "2023-12-31"),
        ("2022年上半年很忙", "2022-01-01", "2022-06-30"),
        ("去年下半年", "2022-07-01", "2022-12-31"),
        ("今年第三季度", "2023-07-01", "2023-09-30"),
        ("一季度的销售不错", "2023-01-01", "2023-03-31"),
        ("上季度的收入", "2023-01-01", "2023-03-31"),
        ("下一季度", "2023-07-01", "2023-09-30"),
        ("本季度", "2023-04-01", "2023-06-30"),
        ("Our release is planned for Q1 of next year", "2024-01-01", "2024-03-31"),
        ("in Q4, 2022", "2022-10-01", "2022-12-31"),
        ("in Q2 of the fiscal year", "2023-04-01", "2023-06-30"),
        ("by Q3 of the year", "2023-07-01", "2023-09-30"),
    ],
)
def test_a_quarter_or_half_is_its_months(text: str, first: str, last: str) -> None:
    assert days(text) == [(first, last)]


@pytest.mark.parametrize(
    ("text", "day"),
    [
        ("I paid the rent on the 9th.", "2023-05-09"),  # the past: this month's, gone
        ("I paid the rent on the 25th.", "2023-04-25"),  # the past: last month's
        ("We fly out on the 25th, can't wait", "2023-05-25"),  # a plan: this month's, ahead
        ("We will meet on the 9th", "2023-06-09"),  # a plan: next month's
        ("See you on the 30th!", "2023-05-30"),
        ("Rent due on the 9th", "2023-05-09"),  # neither way: the nearer 9th
        ("Rent due on the 2nd", "2023-06-02"),  # neither way: the nearer 2nd
        ("今天是15号", "2023-05-15"),
        ("I went there on the 31st", "2023-03-31"),  # April has none
        ("the 15th of next month", "2023-06-15"),
        ("下个月5号开会", "2023-06-05"),
        ("这个月15号", "2023-05-15"),
        ("本月15日", "2023-05-15"),
        ("上个月3号", "2023-04-03"),
        ("我25号要去北京", "2023-05-25"),
        ("15号开会", "2023-06-15"),
        ("我10号去了医院", "2023-05-10"),
    ],
)
def test_a_day_of_the_month_alone_is_the_one_the_clause_means(text: str, day: str) -> None:
    assert days(text)[-1:] == [(day, day)]


def test_chinese_days_alone_from_one_to_another() -> None:
    assert days("我要3号到5号去北京") == [("2023-06-03", "2023-06-05")]  # a plan: June's
    assert days("28号到3号出差了") == [("2023-04-28", "2023-05-03")]  # gone: into May
    assert days("10日至12日开会了") == [("2023-05-10", "2023-05-12")]


@pytest.mark.parametrize(
    "text",
    [
        "on the 9th floor",
        "on the 3rd try",
        "answer Q3 please",
        "an h1 heading",
        "the first quarter of the game",
        "坐3号线",
        "3日游",
        "10日元",
        "I ran 2024 meters",
        "2000 people came",
        "room 2012",
        "flight 2019 was delayed",
        "see ticket #2021",
        # a review's: an address, a label, a duration, each quarter, a quiz's question
        "他住在人民路15号",
        "A座12号",
        "买了一包5号电池",
        "在3号会议室开会",
        "2号航站楼",
        "3日后见",
        "5日内完成",
        "近7日销量",
        "每一季度",
        "The answer of Q3 was wrong",
        "For Q2, I picked option B",
        "In Q1 of the survey, most answered yes",
        "in Q3 of this quiz I guessed",
        "I get paid on the 1st and 15th of each month",
    ],
)
def test_what_counts_or_labels_is_no_date(text: str) -> None:
    assert days(text) == []


def test_a_year_set_in_time_or_standing_alone_is_still_a_year() -> None:
    assert days("in 2012 we moved") == [("2012-01-01", "2012-12-31")]
    assert days("2023 was great") == [("2023-01-01", "2023-12-31")]
    assert days("the 2023 results") == [("2023-01-01", "2023-12-31")]


def test_a_dream_writes_them_out_in_forms_read_back_as_the_same_days() -> None:
    ref = dt.date(2023, 10, 4)
    for said in ("the first half of last year", "the third quarter of last year", "上个月3号"):
        written, values = absolutise(said, ref)
        assert len(values) == 1, said
        [span] = [s for s in find_dates(written, ref) if not s.relative]
        assert span.ranges == find_dates(said, ref)[0].ranges, (said, written)
    assert absolutise("I paid it on the 9th.", ref)[1] == ["2023-09-09"]  # gone: September


def test_a_question_s_quarter_bounds_the_search() -> None:
    asked = query_time("What did we ship in Q3 2023?", dt.date(2026, 12, 6))
    inside = dt.date(2023, 8, 1).toordinal()
    outside = dt.date(2023, 11, 1).toordinal()
    assert not asked.outside([(inside, inside)], inside)
    assert asked.outside([(outside, outside)], outside)
    # a quarter without a year is that quarter in any year
    asked = query_time("What did we ship in Q3?", dt.date(2026, 12, 6))
    july = dt.date(2019, 7, 5).toordinal()
    assert not asked.outside([(july, july)], july)
    assert asked.outside([(outside, outside)], outside)
    # a number is no date: nothing is bounded
    assert not query_time("what is the key for room 2012?", dt.date(2026, 12, 6)).bound


def test_an_ordinal_s_suffix_is_no_keyword() -> None:
    assert query_terms("the meeting on the 9th") == ["meeting"]
    assert query_terms("What did I do on 3rd May?") == ["may"]
