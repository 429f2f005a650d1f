"""The words of dates, English and Chinese: months, weekdays, seasons, counts.

One vocabulary for every reader of dates (recall's and the dream's): a word read here means
the same wherever it is read.
"""

from __future__ import annotations

MONTHS = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
_MONTH_ABBR = {name[:3]: i for i, name in enumerate(MONTHS, start=1)}
_MONTH_ABBR["sept"] = 9
MONTH_WORD = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
WEEKDAY_WORD = "(?:" + "|".join(WEEKDAYS) + ")"
ZH_WEEKDAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}

SEASONS = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}
"""The month each season starts in (the northern hemisphere's meteorological seasons)."""
ZH_SEASONS = {"春": 3, "夏": 6, "秋": 9, "冬": 12}
SEASON_NAMES = {3: "spring", 6: "summer", 9: "autumn", 12: "winter"}

NUMBER_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "couple of": 2,
    "few": 3,
}  # fmt: skip
COUNT = r"(?:\d{1,3}|" + "|".join(NUMBER_WORDS) + ")"
ZH_COUNT = r"(?:\d{1,3}|[零一二两三四五六七八九十]{1,3})"
_ZH_DIGITS = {"零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7,
              "八": 8, "九": 9}  # fmt: skip

DIRECTION = {"last": -1, "past": -1, "this": 0, "next": 1, "上": -1, "这": 0, "本": 0, "下": 1,
             "上上": -2, "下下": 2}  # fmt: skip
"""Which way a relative word points from the day it is said: back, the same, ahead."""


def month_number(word: str) -> int | None:
    """1-12 for an English month name or abbreviation (``Sept.``), else None."""
    word = word.lower().rstrip(".")
    return _MONTH_ABBR.get(word[:4]) or _MONTH_ABBR.get(word[:3])


def count(word: str) -> int | None:
    """A count in digits, English words (``a``, ``couple of``, ``few``) or Chinese numerals
    up to 99 (``三``, ``十二``, ``二十``, ``两``); None when it is none of those."""
    word = " ".join(word.lower().split())
    if word.isdigit():
        return int(word)
    if word in NUMBER_WORDS:
        return NUMBER_WORDS[word]
    if word == "十":
        return 10
    if "十" in word:
        tens, _, ones = word.partition("十")
        if (tens and tens not in _ZH_DIGITS) or (ones and ones not in _ZH_DIGITS):
            return None
        return (_ZH_DIGITS[tens] if tens else 1) * 10 + (_ZH_DIGITS[ones] if ones else 0)
    return _ZH_DIGITS.get(word)
