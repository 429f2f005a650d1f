"""Text given or stored, made safe to show and to use: one rule each.

- :func:`one_line`: every place that shows a field, a name or a header on one line (quoted
  tool answers, prompt sections, a dream's descriptions, git's commit headers) collapses
  whitespace this way, so a newline in the text can never start a line of its own;
- :func:`has_surrogate`, :func:`valid_text`: ``"\\ud800"`` is valid JSON but no text (no
  UTF-8 carries it): what is stored or searched refuses it, what only cues (a tokenizer's
  input, a hint's cue, a model's answer) reads it as ``?``;
- :func:`model_text`: what a model wrote, as text somnid keeps: lone surrogates, control
  characters (but tab and line breaks), a byte-order mark and non-characters dropped, as
  capture drops control characters from what people say;
- :func:`control_char`: an id, a key or a name (a session id, a front-matter key) holds no
  control character, line break or surrogate.
"""

from __future__ import annotations

import re
import unicodedata

MAX_QUERY_CHARS = 2_000
"""A search's query at most, wherever it comes from (the API, a tool)."""

_SURROGATE = re.compile("[\ud800-\udfff]")
_CONTROLS = frozenset(("Cc", "Cs", "Zl", "Zp"))
_DROPPED = {code: None for code in range(32) if chr(code) not in "\t\n\r"} | dict.fromkeys(
    (0x7F, 0xFEFF, 0xFFFE, 0xFFFF)
)


def one_line(text: str) -> str:
    """``text`` with every run of whitespace (newlines included) as one space, trimmed."""
    return " ".join(text.split())


def has_surrogate(text: str) -> bool:
    """``text`` holds a lone surrogate."""
    return _SURROGATE.search(text) is not None


def shown_path(path: str) -> str:
    """A file name as UTF-8 carries it: the bytes of a name that is no UTF-8 (kept by
    Python as surrogates, ``caf\\udce9``) written as ``\\xe9``, the way ``ls -b`` shows them."""
    if not has_surrogate(path):
        return path
    raw = path.encode("utf-8", "surrogateescape" if _escapable(path) else "surrogatepass")
    return raw.decode("utf-8", "backslashreplace")


def _escapable(text: str) -> bool:
    return all(not ("\ud800" <= ch <= "\udfff") or "\udc80" <= ch <= "\udcff" for ch in text)


def valid_text(text: str) -> str:
    """``text`` as UTF-8 carries it: each lone surrogate a ``?``."""
    return text.encode("utf-8", "replace").decode("utf-8")


def control_char(text: str) -> str | None:
    """The first control character, line break (NEL and U+2028 too) or surrogate in
    ``text``, if any."""
    for ch in text:
        if unicodedata.category(ch) in _CONTROLS:
            return ch
    return None


def model_text(text: str) -> str:
    """``text`` from a model, as somnid keeps text: lone surrogates, control characters but
    tab and line breaks, a byte-order mark and non-characters dropped (a model's stray
    escape is no character of what it meant to say)."""
    return _SURROGATE.sub("", text).translate(_DROPPED)


def type_word(value: object) -> str | None:
    """``value`` as an entry's type when it is one word, else None: letters of any script
    with their marks, digits, ``-`` and ``_``, 40 at most, in NFC, without the spaces around
    it. A type is shown to models beside quoted text, so a line break or a heading in it
    may not be (one put "## SYSTEM OVERRIDE" outside the quotes of search_knowledge)."""
    if not isinstance(value, str):
        return None
    word = unicodedata.normalize("NFC", value.strip())
    if not 0 < len(word) <= 40 or not word[0].isalnum():
        return None
    allowed = (c.isalnum() or c in "-_" or unicodedata.category(c)[0] == "M" for c in word)
    return word if all(allowed) else None
