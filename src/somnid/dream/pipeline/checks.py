"""somnid's own checks on what a model proposes: grounded in its evidence, no copied
placeholder, not a duplicate. Plain functions over text; no model, no I/O.

Content words are lower-cased words of three or more letters (or digits), less stop words
and the verbs a third-person rewrite adds ("said", "mentioned"); Chinese text counts in
character bigrams. Words match on their first five letters, so "adopted" matches
"adopting", and a short plural on its singular ("dogs", "dog").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from somnid.dream.pipeline.prompts import PLACEHOLDERS

GROUNDED_SHARE = 0.65
"""A candidate needs at least this share of its content words in its evidence."""
DUPLICATE_SIMILARITY = 0.7
"""Content-word overlap (Jaccard) at or above which two memories say the same thing."""
RELATED_SIMILARITY = 0.3
"""Overlap at or above which an existing memory is worth a decision by the model."""

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_CJK = re.compile(r"[\u3400-\u9fff]+")
_PLACEHOLDER = re.compile(r"<[^<>\n]{1,40}>")
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
    for word in _WORD.findall(_CJK.sub(" ", text.casefold())):
        if (len(word) >= 3 or word.isdigit()) and word not in _STOP:
            if 3 < len(word) <= 5 and word.endswith("s") and not word.endswith("ss"):
                word = word[:-1]  # "dogs" is "dog": five letters would keep them apart
            words.add(word[:5])
    return words


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


def similarity(a: str, b: str) -> float:
    """Jaccard overlap of the content words of ``a`` and ``b``."""
    left, right = content_words(a), content_words(b)
    if not left or not right:
        return 1.0 if " ".join(a.split()).casefold() == " ".join(b.split()).casefold() else 0.0
    return len(left & right) / len(left | right)


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
