"""Who a memory is about, decided by somnid from the lines it rests on.

A small model writes one person's facts about the other, or about "A and B", and cites a
greeting ("Hey Ann!") or the other's question as evidence. So the words that name people
never count as evidence (a name in a line says the line mentions a person, not what they
did), and a memory belongs to the speakers whose own lines say what it says:

- its **subject** is who the text names first (both, for "Ann and Bo …"); a text that
  names no speaker is about the speaker whose lines say most of it;
- every subject must **own** it: its own cited lines hold at least :data:`OWN_SHARE` of
  the memory's content words, and no less than another speaker's lines do;
- a subject that does not is a **misattribution**: "Ann and Bo …" where only Bo's lines
  say it becomes Bo's (the pair is split, the text keeps Bo); a swapped subject is refused.

The quoted evidence is pruned to the lines that say something of the memory: the
subject's own lines first, then the lines they answer that add content words. Plain
functions over text; no model, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from somnid.dream.similarity import content_words

OWN_SHARE = 0.4
"""A subject's own lines must say at least this share of a memory's content words."""
ROLE_WORDS = frozenset({"user", "agent", "assistant", "tool", "default"})


@dataclass(frozen=True, slots=True)
class Spoken:
    """One evidence line: who said it, and what."""

    speaker: str
    text: str


@dataclass(frozen=True, slots=True)
class Attribution:
    subjects: tuple[str, ...]
    """Who the memory is about, as the speakers are named in the log."""
    owned: float
    """The share of the memory's content words the subjects' own lines say."""
    lines: tuple[int, ...]
    """Indices of the evidence lines that say something of the memory, subject's first."""
    text: str
    """The memory's text, with a pair that only one of them owns cut to that one."""
    problem: str | None = None
    """``misattributed`` (the named person's lines do not say it), or None."""


def name_words(speakers: Sequence[str]) -> set[str]:
    """The content-word forms of the speakers' names (and their parts): never evidence."""
    words: set[str] = set()
    for speaker in speakers:
        words |= content_words(speaker)
    return words


def _is_name_word(word: str, names: set[str]) -> bool:
    # "Mel" in a greeting is Melanie: a prefix of three letters or more of a name.
    return word in names or any(len(word) >= 3 and name.startswith(word) for name in names)


def claim_words(text: str, speakers: Sequence[str]) -> set[str]:
    """The content words of ``text`` that are not people's names."""
    names = name_words(speakers)
    return {w for w in content_words(text) if not _is_name_word(w, names)}


def _mentions(text: str, speaker: str, aliases: tuple[str, ...] = ()) -> int | None:
    """Where ``text`` first names ``speaker`` (by the whole name, its first word, or one of
    its ``aliases``: "the user" for the log's own user, "the agent" for the agent)."""
    forms = set(aliases)
    if speaker.casefold() not in ROLE_WORDS and speaker.strip():
        forms |= {speaker.strip(), speaker.strip().split()[0]}
    best: int | None = None
    for form in forms:
        if re.fullmatch(r"[\u3400-\u9fff]+", form):
            found = text.find(form)
            at = found if found >= 0 else None
        else:
            match = re.search(rf"(?<![^\W_]){re.escape(form)}(?![^\W_])", text, re.IGNORECASE)
            at = match.start() if match else None
        if at is not None and (best is None or at < best):
            best = at
    return best


USER_ALIASES = ("the user", "user", "用户")
AGENT_ALIASES = ("the agent", "the assistant", "agent", "assistant", "智能体", "助手")
Aliases = Mapping[str, tuple[str, ...]]


_PAIR = re.compile(
    r"^\s*(?:both\s+)?(\S+(?:\s\S+)?)\s+(?:and|&|和|与|跟)\s*(\S+(?:\s\S+)?)\b", re.I
)


def named_subjects(
    text: str, speakers: Sequence[str], aliases: Aliases | None = None
) -> tuple[str, ...]:
    """The speakers a text is about: the first one it names, or the two of a text that
    opens with a pair ("Ann and Bo went …", "Ann 和 Bo …")."""
    places = sorted(
        (at, speaker)
        for speaker in dict.fromkeys(speakers)
        if (at := _mentions(text, speaker, (aliases or {}).get(speaker, ()))) is not None
    )
    if not places:
        return ()
    first_at, first = places[0]
    if len(places) > 1 and first_at <= 12:
        second_at, second = places[1]
        between = text[first_at:second_at].casefold()
        if second_at - first_at <= len(first) + 12 and re.search(r"\band\b|&|和|与|跟", between):
            return (first, second)
    return (first,)


_OPENER_WORDS = (
    "the a an this that these those it its he she they we you his her their our your my "
    "there here in on at when after before during since while if as for to with from by "
    "some many most all every each one both later recently today yesterday tomorrow now "
    "then also once what who how why where which because although though however currently "
    "meanwhile finally eventually usually sometimes often always never still just even maybe "
    "perhaps unfortunately luckily fortunately sadly happily apparently actually basically "
    "overall initially soon earlier originally despite unless until so but and or yet thanks "
    "according i i'm i'll i've i'd i’m i’ll i’ve i’d"
)
_OPENERS = frozenset(_OPENER_WORDS.split())
"""Words a sentence opens with that name nobody."""
_OPENING = re.compile(r"\s*([^\W\d_][\w'’-]*)")


def third_party(text: str, speakers: Sequence[str], lines: Sequence[str]) -> str | None:
    """The name ``text`` opens with when no speaker goes by it: "Bob keeps bees" in a talk
    between Alice and the agent. A capitalised first word is a name when a line writes it
    capitalised inside a sentence ("my neighbour Bob"), or when no line has it at all."""
    match = _OPENING.match(text)
    if match is None or not match.group(1)[0].isupper():
        return None
    word = re.sub(r"['’]s$", "", match.group(1))
    if len(word) < 2 or word.casefold() in _OPENERS:
        return None
    names = name_words(speakers)
    if any(_is_name_word(w, names) for w in content_words(word)):
        return None
    inside = re.compile(rf"[^\s.!?:\"“]\s+{re.escape(word)}(?![^\W_])")
    if any(inside.search(line) for line in lines):
        return word
    # A word no line has is a name only in a sentence that names no speaker: "Because of a
    # new job, Ann is moving" is Ann's, whatever its first word.
    if named_subjects(text, speakers):
        return None
    anywhere = re.compile(rf"(?<![^\W_]){re.escape(word)}(?![^\W_])", re.IGNORECASE)
    return None if any(anywhere.search(line) for line in lines) else word


def said_of(name: str, text: str, evidence: Sequence[Spoken], speakers: Sequence[str]) -> bool:
    """Whether the cited lines that name ``name`` say what ``text`` says of them: at least
    :data:`OWN_SHARE` of its other content words ("Bob keeps bees in Lyon" is not said by
    "my neighbour Bob hates them", though the same talk says who keeps bees)."""
    words = claim_words(text, speakers) - content_words(name)
    if not words:
        return True
    naming = re.compile(rf"(?<![^\W_]){re.escape(name)}(?![^\W_])", re.IGNORECASE)
    lines = [line for line in evidence if naming.search(line.text)]
    return _share(words, lines, name_words(speakers)) >= OWN_SHARE


def whose_words(text: str, evidence: Sequence[Spoken], speakers: Sequence[str]) -> str | None:
    """The speaker whose own cited lines say the most of ``text`` (None on a tie or with no
    line): "I will remember that Clara visits next week" is the agent's words, though the
    user's line says Clara visits."""
    names, words = name_words(speakers), claim_words(text, speakers)
    by_speaker: dict[str, list[Spoken]] = {}
    for line in evidence:
        by_speaker.setdefault(line.speaker, []).append(line)
    shares = sorted(((_share(words, lines, names), who) for who, lines in by_speaker.items()))
    if not shares or (len(shares) > 1 and shares[-1][0] == shares[-2][0]):
        return None
    return shares[-1][1]


def _share(words: set[str], lines: Sequence[Spoken], names: set[str]) -> float:
    if not words:
        return 0.0
    said: set[str] = set()
    for line in lines:
        said |= {w for w in content_words(line.text) if not _is_name_word(w, names)}
    return len(words & said) / len(words)


def attribute(
    text: str,
    evidence: Sequence[Spoken],
    speakers: Sequence[str],
    *,
    default: tuple[str, ...] = (),
    aliases: Aliases | None = None,
) -> Attribution:
    """Who ``text`` is about and whether their own ``evidence`` lines say it.

    ``speakers`` are everyone who speaks in the window (their names are not evidence);
    ``evidence`` the lines the memory cites; ``default`` whom a text that names nobody is
    about ("She adopted a dog" after a sentence about Ann)."""
    names = name_words(speakers)
    words = claim_words(text, speakers)
    by_speaker: dict[str, list[Spoken]] = {}
    for line in evidence:
        by_speaker.setdefault(line.speaker, []).append(line)
    shares = {who: _share(words, lines, names) for who, lines in by_speaker.items()}
    named = named_subjects(text, speakers, aliases) or default
    if not named:
        # No speaker named ("The dog is called Rex"): the speaker whose lines say most.
        owner = max(shares, key=lambda who: shares[who], default=None)
        named = (owner,) if owner is not None else ()
    best = max(shares.values(), default=0.0)
    owning = [who for who in named if shares.get(who, 0.0) >= max(OWN_SHARE, best - 0.2)]
    if not owning:
        return Attribution(named, max((shares.get(w, 0.0) for w in named), default=0.0),
                           tuple(range(len(evidence))), text, "misattributed")  # fmt: skip
    result_text = text
    if len(named) == 2 and len(owning) == 1:
        cut = _cut_pair(text, named, owning[0])
        if cut is None:
            return Attribution(named, shares.get(owning[0], 0.0), tuple(range(len(evidence))),
                               text, "misattributed")  # fmt: skip
        result_text = cut
    subjects = tuple(owning)
    owned = _share(words, [line for line in evidence if line.speaker in subjects], names)
    return Attribution(subjects, owned, _saying(words, evidence, subjects, names), result_text)


def _cut_pair(text: str, pair: tuple[str, ...], owner: str) -> str | None:
    """ "Ann and Bo went hiking" as "Bo went hiking", when only Bo's lines say it. None
    where that would not read right: the pair is not where the text opens, or its verb
    is one whose form depends on the number ("discuss" / "discusses")."""
    match = _PAIR.match(text)
    if match is None:
        return None
    rest = re.sub(r"^(both|each|together)\b\s*", "", text[match.end() :].lstrip(), flags=re.I)
    verb, _, tail = rest.partition(" ")
    singular = _SINGULAR.get(verb.casefold())
    if singular is not None:
        rest = f"{singular} {tail}"
    elif not (verb.casefold().endswith("ed") or verb.casefold() in _NUMBERLESS):
        return None
    return f"{owner} {rest}".strip()


_SINGULAR = {"are": "is", "were": "was", "have": "has"}
_NUMBERLESS = frozenset(
    ["went", "had", "did", "got", "made", "took", "saw", "met", "said", "told", "found", "gave"]
)


def _saying(
    words: set[str], evidence: Sequence[Spoken], subjects: tuple[str, ...], names: set[str]
) -> tuple[int, ...]:
    """The evidence lines that say something of the memory: the subjects' lines that add
    content words, then any other line that adds words they do not (the question a
    subject answers), in line order. A line that adds nothing is not quoted."""
    chosen: list[int] = []
    covered: set[str] = set()
    order = sorted(range(len(evidence)), key=lambda i: evidence[i].speaker not in subjects)
    for i in order:
        said = {w for w in content_words(evidence[i].text) if not _is_name_word(w, names)}
        adds = (said & words) - covered
        if adds:
            chosen.append(i)
            covered |= adds
    return tuple(sorted(chosen))
