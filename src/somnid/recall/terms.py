"""Keyword terms as SQLite FTS5 makes them, for a backend that keeps its own term counts.

FTS5's ``porter unicode61 remove_diacritics 2`` tokenizer splits on everything that is not
a letter or a digit, folds case and diacritics, and stems English with the original Porter
algorithm. The PostgreSQL index stores what this module counts and ranks with FTS5's BM25
(:func:`bm25_sql`), so both backends rank keyword hits alike. CJK text arrives already cut
into bigrams by :mod:`somnid.recall.text`. Pure.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable

import snowballstemmer

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
_ASCII_WORD = re.compile(r"[a-z]+")
K1, B = 1.2, 0.75  # FTS5's bm25() constants
COLUMNS = 6  # name, description, tags, body, context, far


@functools.cache
def _stemmer() -> snowballstemmer.Stemmer:
    return snowballstemmer.stemmer("porter")


@functools.lru_cache(maxsize=65_536)
def _stem(token: str) -> str:
    # FTS5's porter leaves tokens under 3 characters and non-ASCII ones as they are.
    if len(token) < 3 or not _ASCII_WORD.fullmatch(token):
        return token
    return str(_stemmer().stemWord(token))


def _fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def tokens(text: str) -> list[str]:
    """The terms of a text, in order, as FTS5 indexes them."""
    return [_stem(token) for token in _TOKEN.findall(_fold(text))]


def query_tokens(terms: Iterable[str]) -> list[str]:
    """The distinct index terms of a keyword query's terms (a term may hold several)."""
    return list(dict.fromkeys(token for term in terms for token in tokens(term)))


def term_counts(columns: Iterable[str]) -> tuple[dict[str, list[int]], int]:
    """Each term's count in each of the six columns, and the row's length in terms."""
    counts: dict[str, list[int]] = {}
    length = 0
    for column, text in enumerate(columns):
        for token in tokens(text):
            length += 1
            counts.setdefault(token, [0] * COLUMNS)[column] += 1
    return counts, length
