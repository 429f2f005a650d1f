"""When two memories say the same thing: content words and their overlap, the one rule
both dream modes use (the pipeline's checks and the agentic tools), below both.

Content words are lower-cased words of three or more letters (or digits), less stop words
and the verbs a third-person rewrite adds ("said", "mentioned"); Chinese text counts in
character bigrams. Words match on their first five letters, so "adopted" matches
"adopting", and a short plural on its singular ("dogs", "dog").

Mostly the same words is not yet the same memory: "the filing deadline is March 15" and
"the filing deadline is April 15" share all words but one. A memory restates another only
when it also brings no detail the other lacks (a number, a month or a weekday, a name) and
negates as often (``restates``): a changed detail is a correction, for the model to decide.
"""

from __future__ import annotations

import re

DUPLICATE_SIMILARITY = 0.7
"""Content-word overlap (Jaccard) at or above which two memories say the same thing."""
RELATED_SIMILARITY = 0.3
"""Overlap at or above which an existing memory is worth a decision by the model."""

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_CJK = re.compile(r"[\u3400-\u9fff]+")
_STOP = frozenset(
    """
    the and for are was were been being has have had his her hers him she they them
    their theirs our ours you your yours its this that these those with from into onto
    about over under after before then than there here what when where which who whom
    whose why how all any both each few more most other some such not only own same too
    very can will just don should now also but because while during between through
    again further once off out did does doing would could might must shall may get got
    getting let lets really much many like well yes okay sure thanks thank hey wow
    great good nice lot lots said says say saying mentioned mentions mention shared
    shares share talked talks talk told tells tell asked asks ask noted notes note
    stated states expressed expresses explained explains discussed discusses described
    describes revealed reveals added adds feels felt thinks thought wants wanted plans
    planned going gone went user agent conversation memory someone something
    """.split()  # noqa: SIM905
)


def content_words(text: str) -> set[str]:
    words: set[str] = set()
    for cjk in _CJK.findall(text):
        if len(cjk) == 1:
            words.add(cjk)
        words.update(cjk[i : i + 2] for i in range(len(cjk) - 1))
    for word in _WORD.findall(_CJK.sub(" ", _GROUPED.sub("", text).casefold())):
        if word in _NUMBER_WORDS:
            words.add(str(_NUMBER_WORDS[word]))  # "three" is "3"
        elif (len(word) >= 3 or word.isdigit()) and word not in _STOP:
            words.add(_stem(word))
    return words


def _stem(word: str) -> str:
    if 3 < len(word) <= 5 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]  # "dogs" is "dog": five letters would keep them apart
    return word[:5]


_NEGATION = re.compile(
    r"\b(?:not|no|never|none|nor|neither|nothing|nobody|\w+n't)\b"
    r"|不(?!过|论|同|久|少|断|仅|但)|没(?!关系)|别(?!人|的|处)|无(?!论)|未(?!来)"
)  # 不过 "but", 别人 "others", 未来 "future" are no negations


def carries(text: str, part: str) -> bool:
    """Whether ``text`` says every content word of ``part`` (names and numbers included),
    and each of its negations (stop words elsewhere: "does not eat meat" is not carried by
    "eats meat"): a rewrite that does not leaves something of ``part`` out."""
    if len(_NEGATION.findall(part.casefold())) > len(_NEGATION.findall(text.casefold())):
        return False
    return content_words(part) <= content_words(text)


_DIGITS = re.compile(r"\d+")
_GROUPED = re.compile(r"(?<=\d)[,'](?=\d{3}\b)")  # 1,200 is 1200
_CLOCK = re.compile(r"(\d+)(?::\d\d)?\s*([ap])\.?m\b", re.IGNORECASE)  # 3pm is not 3am
_CJK_NUMBER = re.compile(
    r"(?:星期|礼拜|周)[一二三四五六日天]"
    r"|[〇零一二两三四五六七八九十百千万亿]+(?=[月日号点个年岁次天周元块分位本只条张])"
)
_CAPITALISED = re.compile(r"\b[A-Z][^\W\d_]{2,}")
_NUMBER_WORDS = {
    word: number
    for number, words in enumerate(
        """zero; one first; two second; three third; four fourth; five fifth; six sixth;
        seven seventh; eight eighth; nine ninth; ten tenth; eleven eleventh; twelve twelfth
        dozen; thirteen; fourteen; fifteen; sixteen; seventeen; eighteen; nineteen; twenty
        twentieth""".split(";")  # noqa: SIM905
    )
    for word in words.split()
} | {"thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
     "ninety": 90, "hundred": 100, "thousand": 1000, "million": 1_000_000}  # fmt: skip
_TIME_NAMES = frozenset(
    """
    january february march april june july august september october november december
    monday tuesday wednesday thursday friday saturday sunday
    today tonight tomorrow yesterday morning afternoon evening night weekend half
    """.split()  # noqa: SIM905
)  # "may" is a month only capitalised (a verb else)


def details(text: str) -> set[str]:
    """What a memory states exactly: its numbers (``#15``, ``three`` as ``#3``, ``3pm`` as
    ``#3pm`` too), numbers and weekdays written in Chinese, month, weekday and day names,
    and capitalised words of three letters or more (names, places) other than stop words;
    words as ``content_words`` keeps them."""
    text = _GROUPED.sub("", text)
    found = {f"#{int(run)}" for run in _DIGITS.findall(text)}
    found.update(f"#{int(hour)}{half.lower()}m" for hour, half in _CLOCK.findall(text))
    found.update(f"#{run}" for run in _CJK_NUMBER.findall(text))
    for word in (w.casefold() for w in _WORD.findall(_CJK.sub(" ", text))):
        if word in _NUMBER_WORDS:
            found.add(f"#{_NUMBER_WORDS[word]}")
        elif word in _TIME_NAMES:
            found.add(_stem(word))
    for name in _CAPITALISED.findall(text):
        if (word := name.casefold()) not in _STOP:
            found.add(_stem(word))
    return found


def _said(text: str) -> set[str]:
    """Every word of ``text`` as ``content_words`` keeps them, short and stop words too."""
    return {_stem(word) for word in _WORD.findall(_CJK.sub(" ", text.casefold()))}


def same_details(new: str, old: str) -> bool:
    """Whether ``new`` brings no detail that ``old`` lacks and negates as often: what it
    says less is no change, a number, date or name of its own is."""
    if len(_NEGATION.findall(new.casefold())) != len(_NEGATION.findall(old.casefold())):
        return False
    return details(new) <= details(old) | content_words(old) | _said(old)


def restates(new: str, old: str) -> bool:
    """Whether ``new`` says what ``old`` says already: mostly the same content words and
    the same details."""
    return similarity(new, old) >= DUPLICATE_SIMILARITY and same_details(new, old)


def similarity(a: str, b: str) -> float:
    """Jaccard overlap of the content words of ``a`` and ``b``."""
    left, right = content_words(a), content_words(b)
    if not left or not right:
        return 1.0 if " ".join(a.split()).casefold() == " ".join(b.split()).casefold() else 0.0
    return len(left & right) / len(left | right)
