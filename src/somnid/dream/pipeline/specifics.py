"""What makes a memory worth keeping, and what a memory must never carry.

- **Vague**: a memory that says only that people talked ("Ann and Bo discuss their passion
  for life") is refused. What counts is the specific words a memory takes from its lines:
  content words that are not people's names nor the words a summary uses for talking and
  feeling ("discuss", "experience", "passion", "support"). A memory needs one (and no long
  summary around it), one that reports a conversation ("talked about", "shared") two: the
  name of a topic is not what was said of it.
- **Scaffolding**: the labels and ids of somnid's own prompts (``E1 (knowledge, …):``,
  ``L7``, ``NEW:``) never go into a memory: a label that opens the text is cut, one inside
  it refuses the memory.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from somnid.dream.pipeline.attribution import claim_words
from somnid.dream.similarity import content_words

LONG_CLAIM = 5
"""Content words past which one particular word does not make a memory specific."""

_GENERIC_TEXT = """
discuss discussion discussing conversation conversations chat chatting chatted talking
catch catching caught update updates experience experiences experienced passion passionate
interest interests interested life lives thing things feeling feelings feel hobby hobbies
journey topic topics various different each other together both enjoy enjoys enjoyed
enjoying love loves loved loving happy happiness excited exciting excitement grateful
gratitude proud pride inspired inspiring inspiration amazing wonderful awesome fun time
times day days recent recently new lately way ways help helps helped helping important
meaningful special kind people person friend friends support supports supported supportive
encourage encourages encouraged encouragement appreciate appreciates appreciated
appreciation care cares caring lot thoughts idea ideas opinion opinions reflect reflects
reflected reflection connect connection connections moment moments stuff positive
progress future past present current currently recently continue continues continued
plan plans planning planned hope hopes hoped hoping wish wishes wished goal goals
strength courage brave bravery continue continues continued others motivate motivated
motivation awareness kindness words take care bye later soon hello hear glad lovely
photo picture pic vibes cool fine
personal growth journey journeys relationship relationships similar same activity
activities aspect aspects someone everyone other others thing mutual respective
"""
GENERIC = frozenset(content_words(_GENERIC_TEXT))

_DATE = re.compile(r"\b\d{4}(-\d{2}){0,2}\b|\b\d+\b")
_TALK = re.compile(
    r"\b(talk|talks|talked|talking|discuss\w*|chat|chats|chatted|chatting|share|shares|shared|"
    r"sharing|catch(?:es)? up|caught up|convers\w*|exchang\w*|ask|asks|asked|asking|thank\w*|"
    r"congratulat\w*|greet\w*|said hello|wish|wishes|wished)\b|聊|谈|讨论|分享|问|感谢|祝",
    re.IGNORECASE,
)
_LEADING_LABEL = re.compile(
    r"^\s*(?:NEW|E\d{1,2}|L\d{1,4})\s*(?:\([^()]{0,80}\))?\s*[:：.\-–]\s*", re.IGNORECASE
)
_LABEL = re.compile(
    r"\bE\d{1,2}\b|\bL\d{1,4}\b|\bNEW:|\((?:knowledge|episode|skill|intention|profile)\b"
    r"|\blines? \d+\b|第\s*\d+\s*行"
    # The decision prompt's own words, when a model explains its merge inside the text.
    r"|\bexisting memor(?:y|ies)\b|\bseparate fact\b|已有记忆",
    re.IGNORECASE,
)


def specific_words(text: str, evidence: Iterable[str], speakers: Sequence[str]) -> set[str]:
    """The words of ``text`` that say something particular and come from its lines."""
    source: set[str] = set()
    for piece in evidence:
        source |= content_words(piece)
    return {w for w in claim_words(text, speakers) if w not in GENERIC and w in source}


def vague(text: str, evidence: Iterable[str], speakers: Sequence[str]) -> bool:
    """Whether ``text`` says too little of its lines to be worth keeping: nothing
    particular at all, or one particular word lost in a long summary."""
    claim = claim_words(text, speakers)
    words = specific_words(text, list(evidence), speakers)
    if not words:
        return True
    if _TALK.search(text):
        # A report that people talked must say of what, more than a topic's name.
        return len(words) < 2
    if _DATE.search(text):
        return False
    return len(words) == 1 and len(claim) >= LONG_CLAIM


def without_label(text: str) -> str:
    """``text`` without a prompt label at its start (``E1 (knowledge, 2023-05-08): …``)."""
    previous = None
    while previous != text:
        previous, text = text, _LEADING_LABEL.sub("", text, count=1)
    return text.strip()


def scaffolding(text: str) -> str | None:
    """The prompt label or id ``text`` carries, if any."""
    match = _LABEL.search(text)
    return match.group(0) if match else None
