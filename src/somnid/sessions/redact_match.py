"""Where a purge's phrases are in a log's line, and the line with them replaced: as said, as
tools write them, their start right before a cut, and in the bytes of a log saved in another
encoding.

Each phrase is looked for in its :func:`spellings`. A start of one (at least
:data:`CUT_MIN` characters, from a word's start) that ends right before a cut (``…``: a
tool's result kept to 300 characters, an answer's shortened line) is found too: the rest
was cut off, and what is left may hold the secret. A log a person saved in another
encoding keeps its bytes that are no UTF-8 as surrogates; such a line is searched as bytes
too, for each phrase's exact bytes in a few legacy encodings (read as text, a GBK letter's
second byte may start the next letter's UTF-8; and "any byte" for a letter, a first try,
blanked unrelated text and backtracked for seconds a line).

The spans found are merged, so a phrase inside another, or one that holds a ``…`` of its
own, is replaced once, whole.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import AnyStr

from somnid.memory.text import has_surrogate

CUT = "\u2026"
"""What a shortened text ends with (``…``; the tool fields' ``…(truncated, N chars)``)."""
CUT_MIN = 8
"""The shortest start of a phrase taken before a cut: fewer letters say little, and a
``…`` a person typed after a common word would blank it."""
LEGACY = ("cp1252", "latin-1", "cp1251", "gbk", "big5", "shift_jis", "euc-jp", "euc-kr")
"""Encodings a log may have been saved in by hand, whose bytes a phrase's letters match."""


def spellings(wanted: list[str]) -> list[str]:
    """Each phrase as a log may hold it: as said, and as JSON and somnid's quoted answers
    write it (``"`` as ``\\"``, ``\\`` doubled; non-ASCII as ``\\u00e9`` too): a tool call's
    arguments and its quoted result kept a purged intention's text whole (a probe)."""
    found: dict[str, None] = {}
    for phrase in wanted:
        found[phrase] = None
        found[json.dumps(phrase, ensure_ascii=False)[1:-1]] = None
        found[json.dumps(phrase)[1:-1]] = None
    return sorted(found, key=len, reverse=True)


@dataclass(frozen=True)
class Matcher:
    wanted: tuple[str, ...]
    plain: re.Pattern[str]
    starts: dict[str, tuple[str, ...]]
    """Lower-cased spellings by their first :data:`CUT_MIN` characters."""
    longest: int

    @functools.cached_property
    def legacy(self) -> re.Pattern[bytes] | None:
        """Each spelling's bytes in each legacy encoding that holds it and writes it
        otherwise than UTF-8 (made when a log with such bytes is met). Case counts: a byte
        of ASCII's letters may be half of another encoding's letter."""
        found: dict[bytes, None] = {}
        for spelling in spellings(list(self.wanted)):
            for codec in LEGACY:
                try:
                    raw = spelling.encode(codec)
                except UnicodeEncodeError:
                    continue
                if raw != spelling.encode("utf-8"):
                    found[raw] = None
        if not found:
            return None
        return re.compile(b"|".join(re.escape(raw) for raw in sorted(found, key=len, reverse=True)))

    def redact(self, line: str, mark: str) -> tuple[str, int]:
        """``line`` with what is found replaced by ``mark``; how many places. A line that
        holds bytes of another encoding (as surrogates) is searched as its bytes too."""
        spans = self._spans(line)
        if not has_surrogate(line):
            return _replaced(line, spans, mark), len(spans)
        raw = line.encode("utf-8", "surrogateescape")
        at = _byte_offsets(line)
        in_bytes = [(at[start], at[end]) for start, end in spans]
        if self.legacy is not None:
            in_bytes.extend(match.span() for match in self.legacy.finditer(raw))
        merged = _merged(in_bytes)
        out = _replaced(raw, merged, mark.encode("utf-8"))
        return out.decode("utf-8", "surrogateescape"), len(merged)

    def _spans(self, line: str) -> list[tuple[int, int]]:
        found = [match.span() for match in self.plain.finditer(line) if match.end() > match.start()]
        if CUT in line:
            found.extend(self._cut_starts(line))
        return _merged(found)

    def _cut_starts(self, line: str) -> Iterator[tuple[int, int]]:
        at = line.find(CUT)
        while at >= 0:
            end = len(line[:at].rstrip())
            first = max(0, end - self.longest)
            tail = line[first:end]
            low = tail.lower()
            if len(low) != len(tail):  # a letter whose lower case is longer (İ): as written
                low = tail
            for i in range(len(tail) - CUT_MIN + 1):
                if tail[i].isalnum() and first + i > 0 and line[first + i - 1].isalnum():
                    continue  # not where a word starts
                rest = low[i:]
                options = self.starts.get(rest[:CUT_MIN], ())
                if any(len(option) > len(rest) and option.startswith(rest) for option in options):
                    yield first + i, end  # the longest start: the first found
                    break
            at = line.find(CUT, at + 1)


@functools.lru_cache(maxsize=4)
def matcher(wanted: tuple[str, ...]) -> Matcher:
    """The matcher of ``wanted`` (kept: a scrub asks for each log)."""
    every = spellings(list(wanted))
    plain = re.compile("|".join(re.escape(s) for s in every), re.IGNORECASE)
    starts: dict[str, list[str]] = {}
    for spelling in every:
        low = spelling.lower()
        if len(low) > CUT_MIN:
            starts.setdefault(low[:CUT_MIN], []).append(low)
    longest = max((len(s) for s in every), default=0)
    return Matcher(wanted, plain, {k: tuple(v) for k, v in starts.items()}, longest)


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def _replaced(text: AnyStr, spans: list[tuple[int, int]], mark: AnyStr) -> AnyStr:
    parts: list[AnyStr] = []
    last = 0
    for start, end in spans:
        parts.extend((text[last:start], mark))
        last = end
    parts.append(text[last:])
    return text[:0].join(parts)


def _byte_offsets(line: str) -> list[int]:
    """Each character's offset in the line's bytes (and the end's)."""
    offsets, at = [0], 0
    for ch in line:
        at += len(ch.encode("utf-8", "surrogateescape"))
        offsets.append(at)
    return offsets
