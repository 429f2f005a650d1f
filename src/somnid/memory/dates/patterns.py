"""Where dates are in text: one ordered list of patterns, English and Chinese, each with the
kind of date it finds. The first pattern to claim a stretch of text wins, so the finer and
longer phrases come first: ``the last week of July 2023`` before ``July 2023``, ``the day
before yesterday`` before ``yesterday``, ``去年夏天`` before ``去年``, ``上周末`` before ``上周``.

Kinds in :data:`RELATIVE` are read against a reference day (when the words were said);
the others name the calendar.
"""

from __future__ import annotations

import re

from somnid.memory.dates.words import COUNT, MONTH_WORD, WEEKDAY_WORD, ZH_COUNT

_ORD = r"(?:st|nd|rd|th)?"
_YEAR = r"(?P<y>(?:19|20)\d{2})"
ZH_MONTH_NUMBER = r"(?:\d{1,2}|十[一二]?|[一二三四五六七八九])"
"""A month's number in digits or Chinese numerals (五月, 十二月)."""
_ZH_MONTH = rf"(?:{_YEAR}\s*年\s*)?(?P<m>{ZH_MONTH_NUMBER})\s*月"
_NTH = r"(?P<nth>first|second|third|fourth|last|final)"
_PART_EN = (
    r"(?P<part>early|mid|middle\s+of|late|(?:the\s+)?(?:start|beginning|middle|end)\s+of"
    r"|(?:towards?|near|at)\s+the\s+(?:start|beginning|end)\s+of)"
)
_ISO = r"(?P<y>(?:19|20)\d{2})-(?P<m>\d{1,2})-(?P<d>\d{1,2})"
_HALF = r"(?P<half>first|second|latter|1st|2nd)\s+half"
_QUARTER = r"(?P<qn>first|second|third|fourth|last|final|1st|2nd|3rd|4th)\s+quarter"
_ZH_YEAR_PART = r"(?:(?P<half>上|下)半年|第?(?P<q>[一二三四1-4])\s*季度)"
_ZH_DAY_BEFORE = r"(?<![\d月年第.#号路街道巷弄座栋楼区层室间近每续A-Za-z])"
"""Not a day after a number, a street, a building, "each" or "the last" (人民路15号, 近7日)."""
_ZH_DAY_AFTER = (
    r"(?=$|[\s，。,.！？!?、；;：:）)」』]|的|上午|下午|晚上|早上|中午|凌晨|那天|当天"
    r"|左右|[要去来到回走出见开办放交发做给我你他她们就还也都才再在和跟与])"
)
"""A day is followed by a time, a verb, a pause or nothing (not 5号电池, 3号会议室, 3日后)."""
_TO = r"(?P<to>-|–|—|to|until|till|through|thru|and)"

PATTERNS: list[tuple[str, str]] = [
    # Parts of a month or a season: a week, a weekend, about a month of their own.
    ("nth_of_month", rf"\b(?:the\s+)?{_NTH}\s+(?P<unit>week(?:end)?)\s+(?:of|in)\s+"
                     rf"(?P<m>{MONTH_WORD})\.?(?:,?\s+{_YEAR})?\b"),
    ("part_of_season", rf"\b{_PART_EN}?\s*(?:the\s+)?(?P<s>spring|summer|autumn|fall|winter)"
                       rf"\s+(?:of\s+)?{_YEAR}\b"),
    ("part_of_month", rf"\b{_PART_EN}[\s-]+(?P<m>{MONTH_WORD})\.?(?:,?\s+{_YEAR})?\b"),
    ("zh_nth_of_month", rf"{_ZH_MONTH}(?:的|份的?)?(?P<nth>第一|第二|第三|最后一)个?"
                        r"(?P<unit>周末|周|星期|礼拜)"),
    ("zh_part_of_month", rf"{_ZH_MONTH}(?:份)?(?P<part>初|上旬|中旬|下旬|底|末)"),
    ("zh_season_year", rf"{_YEAR}\s*年\s*的?(?P<s>[春夏秋冬])(?:天|季)?(?P<part>初|末|底)?"),
    # Parts of a year, and a half of a month: "the first half of September", "Q3 2023",
    # "the third quarter of 2023", "H1 2023", "the second half of last year", 2023年上半年,
    # 去年第三季度, 一季度.
    ("half_of_month", rf"\b(?:the\s+)?{_HALF}\s+of\s+(?P<m>{MONTH_WORD})\.?(?:,?\s+{_YEAR})?\b"),
    ("quarter", rf"\b(?:the\s+)?{_QUARTER}\s+(?:of\s+)?(?:the\s+year\s+)?{_YEAR}\b"),
    ("half_year", rf"\b(?:the\s+)?{_HALF}\s+of\s+(?:the\s+year\s+)?{_YEAR}\b"),
    ("rel_q_year", r"\b(?P<p>[QH])(?P<n>[1-4])\s+(?:of\s+)?(?P<which>this|last|next)\s+year\b"),
    ("q_year", rf"\b(?P<p>[QH])(?P<n>[1-4])\b(?:,?\s*(?:of\s+)?{_YEAR}\b)?"),
    ("rel_year_part", rf"\b(?:the\s+)?(?:{_HALF}|{_QUARTER})\s+of\s+(?P<which>this|last|next)"
                      r"\s+year\b"),
    ("zh_rel_year_part", rf"(?P<which>前年|去年|今年|明年|后年)\s*的?\s*{_ZH_YEAR_PART}"),
    ("zh_rel_quarter", r"(?P<which>上|下|这|本)一?个?季度"),
    ("zh_year_part", rf"(?:{_YEAR}\s*年\s*的?\s*)?(?<![上下这本每])(?<!每一){_ZH_YEAR_PART}"),
    # A day of a month named by its distance from this one: "the 9th of next month", 下个月5号.
    ("day_of_rel_month", r"\b(?:on\s+)?the\s+(?P<d>\d{1,2})(?:st|nd|rd|th)\s+of\s+"
                         r"(?P<which>this|next|last)\s+month\b"),
    ("zh_rel_month_day", r"(?P<which>上上|下下|上|这|本|下)个?月份?的?\s*(?P<d>\d{1,2})\s*[日号]"),
    # Ranges of days: "between Aug 11 and Aug 15", "May 3-7, 2023", "8 to 14 May", 8月11日到15日.
    ("day_range", rf"\b(?:(?P<b>between)\s+)?(?P<m>{MONTH_WORD})\.?\s+(?P<d1>\d{{1,2}}){_ORD}"
                  rf"(?:,?\s+(?P<y1>(?:19|20)\d{{2}}))?\s*{_TO}\s*(?:(?P<m2>{MONTH_WORD})\.?\s+)?"
                  rf"(?P<d2>\d{{1,2}}){_ORD}\b(?:,?\s+{_YEAR}\b)?"),
    ("day_range_dm", rf"\b(?:(?P<b>between)\s+)?(?:the\s+)?(?P<d1>\d{{1,2}}){_ORD}"
                     rf"(?:\s+(?:of\s+)?(?P<m1>{MONTH_WORD})\.?)?\s*{_TO}\s*(?:the\s+)?"
                     rf"(?P<d2>\d{{1,2}}){_ORD}\s+(?:of\s+)?(?P<m>{MONTH_WORD})\b\.?"
                     rf"(?:,?\s+{_YEAR}\b)?"),
    ("zh_day_range", rf"{_ZH_MONTH}\s*(?P<d1>\d{{1,2}})\s*[日号]?\s*(?P<to>-|–|—|~|～|到|至)\s*"
                     r"(?:(?P<m2>\d{1,2})\s*月\s*)?(?P<d2>\d{1,2})\s*[日号]"),
    ("zh_month_range", rf"从?{_ZH_MONTH}\s*份?\s*(?P<to>-|–|—|~|～|到|至)\s*"
                       rf"(?:(?P<y2>(?:19|20)\d{{2}})\s*年\s*)?(?P<m2>{ZH_MONTH_NUMBER})\s*月份?"
                       r"(?!\s*\d)"),
    # From one calendar date or month to another: "between 2023-05-01 and 2023-05-10",
    # "from May to July 2023".
    ("iso_range", rf"\b(?:(?P<b>between|from)\s+)?{_ISO}\s*{_TO}\s*(?P<y2>(?:19|20)\d{{2}})-"
                  r"(?P<m2>\d{1,2})-(?P<d2>\d{1,2})\b"),
    ("month_range", rf"\b(?:(?P<b>between|from)\s+)?(?P<m>{MONTH_WORD})\.?"
                    rf"(?:\s+(?P<y1>(?:19|20)\d{{2}}))?\s*{_TO}\s*(?P<m2>{MONTH_WORD})\.?"
                    rf"(?:,?\s+{_YEAR})?\b"),
    # A month of a year named by its distance from this one: 去年五月, 明年3月.
    ("zh_rel_year_month", rf"(?P<which>前年|去年|今年|明年|后年)\s*的?\s*"
                          rf"(?P<m>{ZH_MONTH_NUMBER})\s*月(?:\s*(?P<d>\d{{1,2}})\s*[日号])?"),
    # A week or weekend named by a day of it (the dream writes "week of 2023-09-25").
    ("week_of", rf"\b(?P<unit>week(?:end)?)\s+of\s+{_ISO}\b"),
    # "the week of May 8", "the weekend of 6 May 2023".
    ("week_of_day", rf"\b(?P<unit>week(?:end)?)\s+of\s+(?:the\s+)?(?:(?P<d1>\d{{1,2}}){_ORD}\s+"
                    rf"(?:of\s+)?)?(?P<m>{MONTH_WORD})\.?(?:\s+(?P<d2>\d{{1,2}}){_ORD})?\b"
                    rf"(?:,?\s+{_YEAR})?\b"),
    # The calendar: 8 May 2023, 8th of May, May 8, 2022, May 8th, October 2023, October.
    ("month", rf"\b(?:(?P<d1>\d{{1,2}}){_ORD}\s+(?:of\s+)?)?(?P<m>{MONTH_WORD})\.?"
              rf"(?:\s+(?P<d2>\d{{1,2}}){_ORD}\b)?(?:,?\s+{_YEAR})?\b"),
    ("iso", r"\b(?P<y>(?:19|20)\d{2})[-/.](?P<m>\d{1,2})[-/.](?P<d>\d{1,2})(?:\b|(?=T\d))"),
    ("zh_date", rf"{_ZH_MONTH}(?:\s*(?P<d>\d{{1,2}})\s*[日号])?"),
    ("zh_year", rf"{_YEAR}\s*年"),
    # A month as the dream writes it (2023-11); from one year to another (2022-2023, 2023-24,
    # from 2020 to 2023, between 2019 and 2021).
    ("year_month", rf"\b(?:in\s+|of\s+)?{_YEAR}-(?P<m>0[1-9]|1[0-2])\b(?![-/.]\d)"),
    ("year_range", rf"\b(?:(?P<b>between|from)\s+)?(?:in\s+|of\s+)?{_YEAR}\s*{_TO}\s*"
                   r"(?P<y2>(?:19|20)\d{2}|\d{2})\b(?![-/.]\d)"),
    ("year", rf"(?<![$€£¥#])\b(?:in\s+|of\s+)?{_YEAR}\b"),
    # Relative to the day the words were said.
    ("day_word", r"\b(?P<w>the\s+day\s+before\s+yesterday|the\s+day\s+after\s+tomorrow"
                 r"|yesterday|last\s+night|tomorrow|today|tonight"
                 r"|this\s+(?:morning|afternoon|evening))\b"),
    # "1.5 years ago" is not 5 years ago, nor "half a year ago" a year ago.
    ("ago", rf"(?<![\d.,])(?<!half\s)\b(?P<n>{COUNT})\s+(?P<unit>day|week|month|year)s?\s+"
            r"(?P<dir>ago)\b"),
    # "in two weeks", not "twice in a week"; "in a day" is how long (the next day is "tomorrow").
    ("in_count", rf"(?<!once\s)(?<!twice\s)(?<!times\s)\b(?P<dir>in)\s+"
                 rf"(?!(?:a|an|one)\s+day\b)(?!\d+[.,]\d)(?!half\b)(?P<n>{COUNT})\s+(?P<unit>day|week|month|year)s?\b"),
    ("rel_weekday", rf"\b(?P<which>last|this|next)\s+(?P<w>{WEEKDAY_WORD})\b"),
    ("coming_weekday", rf"\b(?:this\s+)?coming\s+(?P<w>{WEEKDAY_WORD})\b"),
    ("bare_weekday", rf"\bon\s+(?P<w>{WEEKDAY_WORD})\b"),
    # A day of the month said alone: "on the 9th", 15号 (not "the 9th floor", 3号线, 3日游,
    # 人民路15号, 5号电池, 3日后: a day is followed by a time, a verb, a pause or nothing).
    ("bare_day", r"\bon\s+the\s+(?P<d>\d{1,2})(?:st|nd|rd|th)\b"),
    ("zh_bare_day_range", rf"{_ZH_DAY_BEFORE}(?P<d>\d{{1,2}})\s*[号日]?\s*(?:到|至|-|–|~|～)\s*"
                          rf"(?P<d2>\d{{1,2}})\s*[号日]{_ZH_DAY_AFTER}"),
    ("zh_bare_day", rf"{_ZH_DAY_BEFORE}(?P<d>\d{{1,2}})\s*[号日]{_ZH_DAY_AFTER}"),
    ("rel_season", r"\b(?P<which>last|this|next)\s+(?P<s>spring|summer|autumn|fall|winter)\b"),
    # Rolling windows up to the day said: "the last two weeks", 过去三个月.
    ("rolling", rf"\b(?:the\s+)?(?:last|past|previous)\s+"
                rf"(?P<n>{COUNT}|few|several|couple(?:\s+of)?)\s+(?P<unit>day|week|month|year)s\b(?!\s+of\b)"),
    ("twice_removed", r"\b(?:the\s+)?(?P<unit>week|weekend|month|year)\s+"
                      r"(?P<which>before\s+last|after\s+next)\b"),
    ("rel_unit", r"\b(?P<which>last|this|next|past)\s+(?P<unit>week|weekend|month|year)\b"),
    ("zh_day_word", r"(?P<w>大前天|大后天|前天|后天|昨天|昨晚|昨日|今天|今晚|今日|今早"
                    r"|明天|明晚|明日)"),
    ("zh_ago", rf"(?<![\d年])(?P<n>{ZH_COUNT})\s*(?P<unit>天|个星期|星期|周|个月|年)"
               r"(?P<dir>以前|之前|前|以后|之后|后)"),
    ("zh_season", r"(?P<which>去年|今年|明年)(?P<s>[春夏秋冬])天"),
    ("zh_weekday", r"(?P<which>上上|下下|上|这|本|下)个?(?:周|星期|礼拜)(?P<w>[一二三四五六日天])"),
    ("zh_weekend", r"(?P<which>上上|下下|上|这|本|下)个?周末"),
    ("zh_bare_weekday", r"(?<![上下这本个每])(?:周|星期|礼拜)(?P<w>[一二三四五六日天])"),
    ("zh_rolling", rf"(?:过去|最近|近)\s*(?P<n>{ZH_COUNT}|几)\s*"
                   r"(?P<unit>天|个星期|星期|周|个月|年)"),
    ("zh_rel_unit", r"(?P<which>上上|下下|上|这|本|下)个?(?P<unit>周(?!围)|星期|礼拜|月)"),
    ("zh_year_word", r"(?P<w>前年|去年|今年|明年|后年)"),
]  # fmt: skip

COMPILED = [(kind, re.compile(pattern, re.IGNORECASE)) for kind, pattern in PATTERNS]
WITHOUT_CHINESE = [(kind, pattern) for kind, pattern in COMPILED if not kind.startswith("zh_")]
"""The patterns that can match a text without a Chinese character: every ``zh_`` pattern
needs one (a test reads each pattern's parse to be sure). An English text was read by
all 55, a fifth of a first index build's time at 10,000 entries."""
HAS_CHINESE = re.compile(r"[\u3400-\u9fff]")

CALENDAR = frozenset(
    {
        "nth_of_month",
        "part_of_season",
        "part_of_month",
        "zh_nth_of_month",
        "zh_part_of_month",
        "zh_season_year",
        "day_range",
        "day_range_dm",
        "zh_day_range",
        "iso_range",
        "month_range",
        "zh_month_range",
        "week_of",
        "week_of_day",
        "month",
        "iso",
        "zh_date",
        "zh_year",
        "year_month",
        "year_range",
        "year",
        "half_of_month",
        "quarter",
        "half_year",
        "q_year",
        "zh_year_part",
    }
)
"""Kinds that name the calendar (a year-less one is read in the reference's year)."""
RELATIVE = frozenset(kind for kind, _ in PATTERNS) - CALENDAR
"""Kinds read against the day the words were said."""
PARTS = frozenset(
    {"nth_of_month", "part_of_season", "part_of_month", "zh_nth_of_month", "zh_part_of_month",
     "zh_season_year"}
)  # fmt: skip
"""Parts of a month or a season (their own grain, not the whole month or year)."""
RANGES = frozenset({"day_range", "day_range_dm", "zh_day_range"})
"""From one day to another (``between Aug 11 and Aug 15``): every day between is meant."""

MAY_HAVE_DATE = re.compile(
    r"\d|day|night|tomorrow|morning|afternoon|evening|week|month|year|last|this|next|past|"
    r"ago|coming|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|spring|summer|autumn|fall|"
    r"winter|"
    r"[年月周昨前今明去春夏秋冬后星礼季]",
    re.IGNORECASE,
)
"""A cheap first look: text without any of these holds no date."""


# A year the patterns do not read (they take 1900-2099): right after the date ("May 1850"),
# or after a comma when nothing follows it ("May 5, 1850."; "May 5, 1200 people" is a count).
_YEAR_AFTER = re.compile(
    r"(?:\s+(?:of\s+)?|,\s*(?=\d{4}(?:\s*[.,;:!?)]|\s*$)))(?!(?:19|20)\d\d)\d{4}\b(?![:.]\d)"
)
_YEAR_BEFORE = re.compile(r"(?<!\d)(?!(?:19|20)\d\d)\d{4}\s*年\s*的?\s*$")


def year_beside(text: str, m: re.Match[str]) -> bool:
    """Whether a date that could name a year and names none has one beside it that the
    patterns do not read (May 1850, 2150年5月): not this year's May; the whole is no date
    somnid reads. A date that names no year by its nature (yesterday, on Monday) never."""
    groups = m.re.groupindex
    if not any(group in groups for group in ("y", "y1", "y2")):
        return False
    if any(m.group(group) for group in ("y", "y1", "y2") if group in groups):
        return False
    return bool(_YEAR_AFTER.match(text, m.end()) or _YEAR_BEFORE.search(text, 0, m.start()))
