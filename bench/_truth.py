"""Is what a dream wrote true about people? The dream benchmark's own checks, no LLM judge.

They are the benchmark's, not somnid's: they read the whole session (not the lines a memory
quotes) and LoCoMo's own per-session ``observation`` lists (fact, speaker, evidence turn),
and they are validated against memories labelled by hand (``bench/data/dream_labels.json``,
dev split only), with the agreement reported beside the figures.

- **Units.** A memory is a unit of what was stored: an episode or a knowledge entry (its own
  words: description and body without the quoted evidence and source lines), or one fact
  line of a person's entry or a profile.
- **Subject.** Who a unit is about: the first speaker it names, or both of a pair it opens
  with ("Ann and Bo …"); a line of a person's entry that names nobody is about that person.
- **Owner.** Whose the words are: each content word of a sentence (names and reporting
  verbs excluded) belongs to the speaker who said it first in the unit's session (a reply
  repeats the other's words; who brought them up is whose news it is). A sentence is
  **misattributed** when its subject brought up less of it than the other speaker did, by
  more than :data:`OWNER_MARGIN`, or one of a pair brought up none of it; a unit is when
  one of its sentences is. "Brought up" is the mean of the share of words a speaker said
  first and the share one turn of theirs holds (a question about a topic is not the news).
  A sentence that names nobody is about the one before it.
- **Vague.** Fewer than two content words of its session that are not names, not the words
  summaries use for talking and feeling.
- **Observation coverage.** An observation is stated by a unit of its session about its
  speaker when their content words (names and numbers excluded) meet at F1 >= :data:`COVER`,
  or in at least three words that are half of the unit's (a short memory of a long
  observation). A misattributed unit states none: it says them of the wrong person.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

OWNER_MARGIN = 0.1
COVER = 0.4
_SENTENCE = re.compile(r"(?<=[.!?])\s+")

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_STOP = frozenset(
    """
    the and for are was were has have had his her she they them their you your its this
    that with from into about what when where which who how all any some not but also
    been being will would could just very really much said says shared mentioned talked
    told asked felt feels went going him he our ours we us out one get got can did does
    discuss discussed discusses discussing express expressed expresses expressing share
    shares talk talks talking conversation chat chatted mention mentions tell tells ask
    asks photo picture pic shows showed show
    """.split()  # noqa: SIM905
)
_GENERIC = frozenset(
    """
    experience experiences passion passionate interest interests life lives thing things
    feeling feelings feel hobby hobbies journey topic topics various different each other
    together both enjoy enjoys enjoyed love loves loved happy excited grateful gratitude
    proud inspired inspiring inspiration amazing wonderful awesome fun time day recent
    recently new way help helped important meaningful special kind people person friend
    friends support supported supportive encourage encouraged encouragement appreciate
    appreciated care caring lot thoughts ideas reflect moment moments stuff positive
    progress future plans plan hope hopes wish goal goals growth relationship activity
    activities great good nice glad congratulate congratulates congratulated thanks thank
    strength courage continue others determined dreams dream chase keep work worth make
    making real impact hearing stories someone thing everyone sure always
    """.split()  # noqa: SIM905
)
_FACT_LINE = re.compile(r"^- (.*?)(?: \(\d{4}-\d{2}-\d{2}[^()]*\))?$")


def words(text: str, names: Iterable[str] = (), *, numbers: bool = True) -> set[str]:
    """Content words, cut to five letters ("adopted" ~ "adopting"), names excluded (and
    numbers, unless ``numbers``)."""
    skip = {n.casefold()[:5] for name in names for n in _WORD.findall(name)}
    found = set()
    for word in _WORD.findall(text.casefold()):
        if word.isdigit() and (len(word) == 4 or not numbers):
            continue  # years: a dream writes resolved dates the session spells otherwise
        if (len(word) >= 3 or word.isdigit()) and word not in _STOP:
            cut = word[:5]
            if cut not in skip and not any(len(cut) >= 3 and s.startswith(cut) for s in skip):
                found.add(cut)
    return found


_GENERIC_CUT = frozenset(w[:5] for w in _GENERIC)


@dataclass
class Unit:
    conversation: str
    sessions: list[int]
    text: str
    kind: str
    entry: str
    person: str | None = None
    """For a line of a person's entry: whose entry it is."""


@dataclass
class Judgement:
    subjects: tuple[str, ...]
    owners: dict[str, float]
    misattributed: bool
    vague: bool
    observations: list[str] = field(default_factory=list)
    """The evidence ids of the observations the unit states."""


def own_words(body: str) -> str:
    return "\n".join(
        line for line in body.split("\n") if not line.startswith(("> ", "Source: "))
    ).strip()


def units_of(
    conversation: str, entries: Sequence[dict[str, Any]], stems: dict[str, int]
) -> list[Unit]:
    """The units of what a dream stored for one conversation."""
    units: list[Unit] = []
    for entry in entries:
        meta = entry.get("meta") or {}
        body = str(entry.get("body") or "")
        sources = re.findall(r"^Source: session log (\S+?),", body, re.M)
        sources = sources or [str(meta.get("source") or "")]
        sessions = sorted({stems[s] for s in sources if s in stems})
        kind = str(entry.get("kind"))
        name = f"{kind}/{entry.get('name')}"
        if meta.get("type") in ("person", "identity") or kind == "profile":
            person = str(meta.get("about") or meta.get("user_id") or "") or None
            top = own_words(body).split("\n## ")[0]
            for line in top.split("\n"):
                match = _FACT_LINE.match(line.strip())
                if match and line.strip().startswith("- "):
                    units.append(Unit(conversation, sessions, match[1], kind, name, person))
            continue
        text = f"{entry.get('description', '')} {own_words(body)}".strip()
        description = str(entry.get("description") or "")
        rest = own_words(body)
        if rest.startswith(description.rstrip("…")):
            text = rest  # the pipeline's body begins with its description: once is enough
        units.append(Unit(conversation, sessions, " ".join(text.split()), kind, name))
    return units


def subjects_of(text: str, speakers: Sequence[str], person: str | None = None) -> tuple[str, ...]:
    places = []
    for speaker in speakers:
        match = re.search(rf"\b{re.escape(speaker)}\b", text, re.I)
        if match:
            places.append((match.start(), speaker))
    places.sort()
    if not places:
        return (person,) if person else ()
    first_at, first = places[0]
    if len(places) > 1 and first_at <= 12:
        second_at, second = places[1]
        between = text[first_at + len(first) : second_at]
        if second_at - first_at <= len(first) + 12 and re.search(r"\band\b|&", between):
            return (first, second)
    if person and person not in {s for _, s in places} and first_at > 0:
        return (person,)  # "- Went to Paris with Bo" in Ann's entry: Ann's line
    return (first,)


def _owners(
    words_of: set[str], turns: Sequence[tuple[str, str]], speakers: Sequence[str]
) -> dict[str, float]:
    """For each speaker, how much ``words_of`` is theirs: the mean of the share they said
    first in ``turns`` and the share one turn of theirs holds (a reply repeats the other's
    words; a question about a topic is not the answer to it)."""
    first: dict[str, str] = {}
    best = dict.fromkeys(speakers, 0.0)
    for speaker, text in turns:
        theirs = words(text, speakers) & words_of
        for word in theirs:
            first.setdefault(word, speaker)
        if words_of and speaker in best:
            best[speaker] = max(best[speaker], len(theirs) / len(words_of))
    said = [first[w] for w in words_of if w in first]
    return {
        s: ((said.count(s) / len(said) if said else 0.0) + best.get(s, 0.0)) / 2 for s in speakers
    }


def judge(
    unit: Unit,
    turns: Sequence[tuple[str, str]],
    speakers: Sequence[str],
    observations: Sequence[tuple[str, str, str]],
) -> Judgement:
    """``turns``: (speaker, text) of the unit's sessions in order; ``observations``:
    (speaker, fact, evidence id) of those sessions."""
    mine = words(unit.text, speakers)
    subjects = subjects_of(unit.text, speakers, unit.person)
    misattributed = not subjects
    owners: dict[str, float] = {}
    previous = subjects
    for sentence in _SENTENCE.split(unit.text):
        named = subjects_of(sentence, speakers) if previous else ()
        about = named or previous
        if not about or not words(sentence, speakers):
            continue
        owners = _owners(words(sentence, speakers), turns, speakers)
        best = max(owners.values(), default=0.0)
        if any(owners.get(s, 0.0) < best - OWNER_MARGIN or owners.get(s, 0.0) == 0.0
               for s in about):  # fmt: skip
            misattributed = True
        previous = about
    session_words: set[str] = set()
    for _, text in turns:
        session_words |= words(text, speakers)
    specific = {w for w in mine & session_words if w not in _GENERIC_CUT}
    plain = words(unit.text, speakers, numbers=False)
    stated = []
    for speaker, fact, evidence in observations:
        if misattributed or speaker not in subjects:  # said of the wrong person: not stated
            continue
        theirs = words(fact, speakers, numbers=False)
        common = len(theirs & plain)
        if not common:
            continue
        f1 = 2 * common / (len(theirs) + len(plain))
        if f1 >= COVER or (common >= 3 and common * 2 >= len(plain)):
            stated.append(evidence)
    return Judgement(subjects, owners, misattributed, len(specific) < 2, stated)


def agreement(pairs: Iterable[tuple[bool, bool]]) -> float | None:
    listed = list(pairs)
    return round(sum(a == b for a, b in listed) / len(listed), 3) if listed else None
