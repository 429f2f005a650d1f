"""What of an entry is searched, and how text becomes index terms in Chinese and English.

SQLite's ``unicode61`` tokenizer splits on spaces and punctuation and ``porter`` stems
English; Chinese has no spaces, so runs of CJK characters are rewritten as overlapping
bigrams (``部署窗口`` → ``部署 署窗 窗口``) on both the document and the query side.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass

from somnid.memory.dates import find_dates, reference_stretch
from somnid.memory.entry import Entry
from somnid.memory.kinds import Kind

# CJK Unified Ideographs (+ extension A), Hiragana, Katakana, Hangul syllables.
_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af"
_CJK_RUN = re.compile(f"[{_CJK}]+")
# A run of CJK characters, or a word of anything else (``4月25日`` is 4, 月, 25, 日).
_WORD = re.compile(rf"[{_CJK}]+|[^\W_{_CJK}]+(?:['’][^\W_{_CJK}]+)?", re.UNICODE)
MAX_BODY_CHARS = 20_000
MAX_EMBED_CHARS = 2_000


def cjk_bigrams(text: str) -> str:
    """Rewrite every CJK run as space-separated overlapping bigrams; keep the rest."""

    def split(match: re.Match[str]) -> str:
        run = match.group(0)
        if len(run) < 2:
            return f" {run} "
        return " " + " ".join(run[i : i + 2] for i in range(len(run) - 1)) + " "

    return _CJK_RUN.sub(split, text)


def literal_forms(query: str) -> tuple[str, ...]:
    """The query as a literal hit holds it: as said, and with its Chinese or Japanese
    written as the keyword index keeps it (bigrams); without the second, no CJK query ever
    got the literal bonus on the SQLite index."""
    said = query.casefold()
    split = cjk_bigrams(said).strip()
    return (said,) if split == said else (said, split)


def is_in(needles: tuple[str, ...], text: str) -> bool:
    return any(needle in text for needle in needles)


# Function words that carry no topic in a question. Left out of keyword queries only;
# documents keep every word (a literal phrase still matches). Chinese queries are searched
# as bigrams, so the Chinese entries are bigrams.
_STOP_TEXT = """
a an and are as at be been being but by can could did do does doing for from had has have
having he her hers him his how i if in into is it its itself me my no nor not of on or our
ours she should so than that the their theirs them then there these they this those to too
us was we were what when where which while who whom why will with would you your yours
any some such just also very about after before again against all am both each few more
most other only own same up down out off over under until further once here during through
above below between let lets ll re ve don doesn didn isn wasn weren won wouldn shouldn couldn
since ago prior
什么 怎么 怎样 没有 为了 哪里 哪个 这个 那个 这些 那些 我们 你们 他们 她们 可以 一个 就是
还是 但是 因为 所以 如果 已经 的话 是不 不是 有没 吗
"""
STOP_WORDS = frozenset(_STOP_TEXT.split())
# Chinese function characters: particles, pronouns, question words, prepositions. A query's
# bigram that holds one straddles a word and the phrasing around it (是做什么工作的 → 是做,
# 么工, 作的): it matches a message asking or saying something the same way, never the
# answer, as English stop words would. Such bigrams are left out of keyword queries.
STOP_CHARS = frozenset(
    "的了是吗呢吧啊么什哪谁几我你他她它们在和与跟对把被给让也都就还又很太这那些个之一"
)


_CAPTION = re.compile(r"\s*\[[^\]]*\]\s*$")
_SPEAKER = re.compile(r"^[^\s:：]{1,40}[:：]\s*")
_QUESTION_END = re.compile(r"(?:[?？]|吗[。.!！]?|呢[。.!！]?)\s*$")
# A sentence and the marks that end it (the last one may have none).
_SENTENCE = re.compile(r"[^.!?。！？]+[.!?。！？]*|[.!?。！？]+")
MOSTLY = 0.4  # "Where did you two meet?" after a short lead-in is still an echo


def asks_question(body: str) -> bool:
    """The text is mostly a question (a speaker's ``name:`` and a trailing bracketed note,
    e.g. a photo caption, aside): its questions hold at least 40 % of its words. A turn
    asking what the query asks restates it rather than answering it; one that says
    something and then asks "How about you?" is a statement, and is not an echo."""
    text = _SPEAKER.sub("", _CAPTION.sub("", body.strip()), count=1)
    if not _QUESTION_END.search(text):
        return False
    asked = said = 0
    for sentence in _SENTENCE.findall(text):
        size = _size(sentence)
        said += size
        if _QUESTION_END.search(sentence):
            asked += size
    return asked >= MOSTLY * said


def _size(sentence: str) -> int:
    """Words, a CJK character counting as one."""
    return len(_WORD.findall(_CJK_RUN.sub(lambda m: " ".join(m.group(0)), sentence)))


_ANY_DAY = dt.date(2000, 1, 1)  # where reference points are, not which days: any day reads them


def query_terms(query: str, *, with_dates: bool = False) -> list[str]:
    """Distinct search terms of a query, in order: words (len ≥ 2, or a digit: the day of a
    date) and CJK bigrams.

    Stop words, and CJK bigrams holding a function character, are dropped unless nothing
    else is left. So are the dates the query names, in part: a reference point whole (``as
    of 2024``, ``截至5月``): the time a question stands at says nothing of what it asks, and
    an entry that merely names 2024 is no better an answer for it; of any other date its
    numerals (``9``, ``2022``, ``5月12日``): the time pass reads the date, and as keywords
    they match every text holding the same number. A date's names stay (``November``,
    ``summer``, ``Friday``): a text may say them (``last summer``); its other words go
    (``yesterday``, ``last week``, 上周, "the last week of", "the first half of"): they name
    another day in every text, and the time pass reads them. A question of nothing but a date
    and function words (``我5月12日做了什么``) has no terms: its date is all it asks by.
    ``with_dates`` keeps every date whole, for a search that reads no time."""
    text = query if with_dates else _keyword_text(query)
    terms = _terms(text)
    kept = [term for term in terms if _says(term)]
    return kept or ([] if text != query else terms)


_REFERENCE_WORD = re.compile(
    r"\b(?:as\s+of|by|until|till|up\s+(?:to|until))\b|截至|截止|为止", re.I
)
# A year alone is a date only beside a word of time; else it may be a number ("room 2012",
# "Windows 2000"), which stays a keyword.
_YEAR_ALONE = re.compile(r"(?:19|20)\d{2}")
# What of a relative date a text may say as such: the month, season or weekday it names.
_NAMED_TIME = re.compile(
    r"\b(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t|tember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?|spring|summer|autumn|fall"
    r"|winter|(?:mon|tues|wednes|thurs|fri|satur|sun)day)\b|[春夏秋冬][天季]"
    r"|(?:星期|礼拜|周)[一二三四五六日天]",
    re.IGNORECASE,
)
_TIME_BEFORE = re.compile(
    r"\b(?:in|of|since|before|after|until|till|by|from|during|for|to|and|between|year|"
    r"early|late|mid|end|start|summer|winter|spring|autumn|fall|as\s+of)\s+(?:the\s+)?$",
    re.IGNORECASE,
)


@functools.lru_cache(maxsize=512)
def _keyword_text(query: str) -> str:
    """``query`` as its keyword terms read it: see :func:`query_terms`."""
    spans = find_dates(query, _ANY_DAY, any_year=True)
    references = bool(_REFERENCE_WORD.search(query))  # the cheap look for one
    for span in reversed(spans):
        stretch = reference_stretch(query, span) if references else None
        if stretch is not None:
            start, end, kept = *stretch, ""
        else:
            start, end = span.start, span.end
            if _YEAR_ALONE.fullmatch(span.text) and not _TIME_BEFORE.search(query[:start]):
                continue  # a number, as likely as a year: a keyword still
            # Of a date, the time it names a text may say (May, summer, Friday): its other
            # words name a day in every text (yesterday, 上周; "the last week of", "the
            # first half of"), and its numbers any text holding them. 周三 has a numeral.
            kept = " ".join(_NAMED_TIME.findall(query[start:end]))
        query = f"{query[:start]} {kept} {query[end:]}"
    return query


def content_terms(text: str) -> set[str]:
    """The terms of ``query_terms`` as a set, stop words and function bigrams always left
    out (none is kept when nothing else is left), and a text's dates kept whole: what a
    text says, for counting."""
    words = set(_WORD.findall(text.casefold()))
    return {piece for word in words for piece in _pieces(word) if _says(piece)}


def _says(term: str) -> bool:
    """Not a stop word, nor a CJK bigram holding a function character."""
    return term not in STOP_WORDS and not _function_bigram(term)


def _function_bigram(term: str) -> bool:
    """A CJK bigram (or lone character) holding a function character (``STOP_CHARS``)."""
    return len(term) <= 2 and bool(_CJK_RUN.fullmatch(term)) and not STOP_CHARS.isdisjoint(term)


def _terms(query: str) -> list[str]:
    terms: dict[str, None] = {}  # a list's `in` made a query of 100k words take 100 s
    for word in _WORD.findall(query.casefold()):
        terms.update(dict.fromkeys(_pieces(word)))
    return list(terms)


def _pieces(word: str) -> list[str]:
    """A word's terms: a CJK run as its bigrams, another word whole (len ≥ 2, or a digit)."""
    if _CJK_RUN.fullmatch(word):
        return [word] if len(word) < 2 else [word[i : i + 2] for i in range(len(word) - 1)]
    return [word] if len(word) >= 2 or word.isdigit() else []


BIGRAM_EVIDENCE = 0.5
"""What a keyword match on a CJK bigram says, against one on a whole word. A run's overlapping
bigrams are guesses at its words, and about half of them straddle two (我室友靠什么谋生 →
友靠): such a bigram is rare, so BM25 weighs it like a rare word, yet it matches by accident;
and a real word matches a message that only uses it ("靠死工资谋生太难" shares 谋生 with a
question about a job and says nothing of one)."""


def keyword_evidence(terms: Iterable[str]) -> float:
    """How much a query's keyword matches can say, 0–1: 1 when its terms are whole words (or
    numbers), ``BIGRAM_EVIDENCE`` when they are all CJK bigrams; the mean of the terms'."""
    shares = [BIGRAM_EVIDENCE if _CJK_RUN.search(term) else 1.0 for term in terms]
    return sum(shares) / len(shares) if shares else 1.0


def fts_query(terms: Iterable[str]) -> str:
    """An FTS5 MATCH expression: any of the terms, each quoted so nothing is syntax."""
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)


@dataclass(frozen=True, slots=True)
class IndexedText:
    """The searchable parts of an entry, and the text its vector is made from."""

    name: str
    description: str
    tags: str
    body: str
    embed_text: str

    @property
    def hash(self) -> str:
        digest = hashlib.sha256()
        for part in (self.name, self.description, self.tags, self.body, self.embed_text):
            digest.update(part.encode("utf-8"))
            digest.update(b"\x00")
        return digest.hexdigest()

    @property
    def fts_name(self) -> str:
        return cjk_bigrams(self.name)

    @property
    def fts_description(self) -> str:
        return cjk_bigrams(self.description)

    @property
    def fts_tags(self) -> str:
        return cjk_bigrams(self.tags)

    @property
    def fts_body(self) -> str:
        return cjk_bigrams(self.body)

    @property
    def embed_hash(self) -> str:
        return hashlib.sha256(self.embed_text.encode("utf-8")).hexdigest()


def _listish(value: object) -> list[str]:
    if value is None:
        return []
    if isinstance(value, list | tuple):
        return [str(item).strip() for item in value if str(item).strip()]
    text = str(value).strip().strip("[]")
    return [part.strip().strip("'\"") for part in re.split(r"[,，、]", text) if part.strip()]


def related_names(entry: Entry) -> list[str]:
    return _listish(entry.field("related"))


def indexed_text(entry: Entry) -> IndexedText:
    """What is searched. Score, stability and dates are left out on purpose: reinforcement
    and decay rewrite them daily and must never cause re-embedding."""
    name_words = re.sub(r"[-_.]+", " ", entry.name)
    description = entry.description
    tag_parts = [*_listish(entry.field("tags")), entry.entry_type]
    for key in ("applies_when", "cue", "outcome", "actors"):
        value = entry.field(key)
        if value not in (None, ""):
            tag_parts.append(str(value))
    tags = " ".join(part for part in tag_parts if part)
    body = entry.body[:MAX_BODY_CHARS]
    if entry.kind is Kind.EPISODE:
        embed = f"{description}\n{body}"
    else:
        embed = f"{name_words}\n{description}\n{body}"
    return IndexedText(name_words, description, tags, body, embed.strip()[:MAX_EMBED_CHARS])
