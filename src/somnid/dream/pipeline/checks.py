"""somnid's own checks on what a model proposes: grounded in its evidence, no copied
placeholder, not a duplicate. Plain functions over text; no model, no I/O.

Content words and the similarity of two memories are :mod:`somnid.dream.similarity`'s.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from somnid.dream.pipeline.prompts import PLACEHOLDERS
from somnid.dream.similarity import content_words

GROUNDED_SHARE = 0.65
"""A candidate needs at least this share of its content words in its evidence."""
_PLACEHOLDER = re.compile(r"<[^<>\n]{1,40}>")


def grounded_share(text: str, evidence: Iterable[str]) -> float:
    """The share of ``text``'s content words found in ``evidence`` (1.0 for no words)."""
    words = content_words(text)
    if not words:
        return 1.0
    source: set[str] = set()
    for piece in evidence:
        source |= content_words(piece)
    return len(words & source) / len(words)


def copies_placeholder(text: str) -> str | None:
    """The prompt placeholder ``text`` copies, if any."""
    folded = text.casefold()
    for placeholder in PLACEHOLDERS:
        if placeholder.casefold() in folded:
            return placeholder
    match = _PLACEHOLDER.search(text)
    return match.group(0) if match else None


def first_person(text: str) -> bool:
    """Written as the speaker would say it ("I went…"), not about them."""
    return bool(re.search(r"(^|[\s\"'(])(I|I'm|I've|I'd|my|me)\b", text)) or text.startswith("我")


ANCHOR_REACH = 2
"""How far from a cited line a better one may be found: small models often cite the line
next to the one they paraphrase. No further: lines picked from all over a window by word
overlap could stitch a claim no one made, and a line that shares a word with a claim is not
a line that says it."""
MAX_ANCHORS = 6


def anchor(
    text: str, cited: Sequence[int], lines: Sequence[str], *, ignore: set[str] | None = None
) -> list[int]:
    """The lines (indices into ``lines``) that ``text`` rests on: the cited ones when they
    ground it; else the fewest among the cited ones and their near neighbours that ground
    it, chosen greedily by how many of the text's content words each adds. Otherwise the
    cited ones, for the grounding check to refuse. Words in ``ignore`` (people's names)
    count for nothing."""
    skip = ignore or set()
    words = content_words(text) - skip
    if not words or not cited:
        return list(cited)

    def share(chosen: Iterable[int]) -> float:
        said: set[str] = set()
        for i in chosen:
            said |= content_words(lines[i])
        return len(words & said) / len(words)

    if share(cited) >= GROUNDED_SHARE:
        return list(cited)
    near = {
        j
        for i in cited
        for j in range(i - ANCHOR_REACH, i + ANCHOR_REACH + 1)
        if 0 <= j < len(lines)
    }
    chosen = _greedy(words, near, lines, MAX_ANCHORS, cited[0])
    if chosen and share(chosen) >= GROUNDED_SHARE:
        return chosen
    return list(cited)


def _greedy(
    words: set[str], pool: set[int], lines: Sequence[str], most: int, first: int
) -> list[int]:
    """Up to ``most`` lines of ``pool``, each adding the most of ``words`` not yet covered
    (the nearest to ``first`` on a tie), in line order."""
    line_words = {j: content_words(lines[j]) for j in pool}
    chosen: list[int] = []
    covered: set[str] = set()
    while len(chosen) < most:
        best = max(
            (j for j in pool if j not in chosen),
            key=lambda j: (len((line_words[j] & words) - covered), -abs(j - first)),
            default=None,
        )
        if best is None or not (line_words[best] & words) - covered:
            break
        chosen.append(best)
        covered |= line_words[best] & words
    return sorted(chosen)
