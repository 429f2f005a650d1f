"""somnid's reading of one proposal: what of it is true, about whom, on which lines.

A small model's memory often joins a true sentence to one its lines never said, or one
person's fact to the other's ("John volunteers at the shelter and wants to go into
politics", where the shelter is Maria's). So a proposal is read a sentence at a time:

1. a label the model copied from a prompt is cut (``E1 (knowledge, …):``); a placeholder
   or an id inside the text refuses it (``copied_example``, ``scaffolding``);
2. each sentence must be said by the cited lines (``ungrounded`` otherwise; names never
   count) and owned by the person it is about (``misattributed`` otherwise, see
   :mod:`.attribution`); a sentence that names nobody is about the one before it. A
   sentence in a speaker's own first person ("I …") is that speaker's, if the model named
   them as ``who`` and their lines say it, unless (with an agent in the log) another
   speaker's cited lines say more of it (the agent's "I will remember that Clara visits" is
   not the user's); a sentence that opens with someone who does not speak here must be
   said on a line naming them;
3. the sentences that hold are kept (those that do not are counted as ``trimmed``), and
   grouped by whom they are about: two people's facts become two memories (``split``);
4. each memory must say something particular (``vague`` otherwise, see :mod:`.specifics`),
   and, read from one person's lines, something particular of theirs: a memory whose
   particular words the other person said first is a reply to the other's news
   (``misattributed``: "Caroline says the charity race sounds great" of Melanie's race).

Plain functions; no model, no I/O.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field

from somnid.dream.pipeline.attribution import (
    AGENT_ALIASES,
    USER_ALIASES,
    Spoken,
    attribute,
    claim_words,
    named_subjects,
    said_of,
    third_party,
    whose_words,
)
from somnid.dream.pipeline.candidate import Candidate, candidate_of
from somnid.dream.pipeline.checks import GROUNDED_SHARE, copies_placeholder, first_person
from somnid.dream.pipeline.schemas import Proposal
from somnid.dream.pipeline.specifics import scaffolding, specific_words, vague, without_label
from somnid.dream.pipeline.windows import Line, Window, speakers_of
from somnid.memory.dates import absolutise

_SENTENCES = re.compile(r"(?<=[.!?。！？])\s+|(?<=[。！？])")
MAX_SPLIT = 2
"""A proposal becomes at most this many memories (one per person it is about)."""


@dataclass(slots=True)
class Reading:
    candidates: list[Candidate] = field(default_factory=list)
    refusal: str | None = None
    """Why nothing of the proposal is kept, when nothing is."""
    trimmed: int = 0
    """Sentences cut because their lines do not say them, or say them of someone else."""
    split: int = 0
    """Memories beyond the first that the proposal became (one per person)."""


@dataclass(slots=True)
class _Sentence:
    text: str
    subjects: tuple[str, ...]
    lines: tuple[int, ...]


PERSON_KINDS = frozenset({"event", "fact", "preference", "plan", "todo", "about_user"})
"""Kinds that are about a person (or a person's plan), and so must name one."""


def sentences(text: str) -> list[str]:
    return [part.strip() for part in _SENTENCES.split(text) if part and part.strip()]


def clauses(text: str, speakers: list[str]) -> list[str]:
    """The sentences of ``text``, with a sentence that goes on about another speaker cut
    there ("Ann started yoga and Bo took up kickboxing": two facts, two people)."""
    names = [re.escape(s.split()[0]) for s in speakers if s.strip() and s.casefold() != "tool"]
    if not names:
        return sentences(text)
    cut = re.compile(
        rf",?\s+(?:and|but|while|whereas|或|而)\s+(?=(?:{'|'.join(names)})\b)", re.IGNORECASE
    )
    found: list[str] = []
    for sentence in sentences(text):
        parts = [p.strip() for p in cut.split(sentence) if p.strip()]
        found += (
            [p if p[-1] in ".!?。！？" else f"{p}." for p in parts] if len(parts) > 1 else parts
        )
    return found


_STATE = re.compile(
    r"^\s*(?:\S+\s){0,2}?(?:is|are|has|have|loves|likes|enjoys|prefers|wants|works|lives|owns|"
    r"believes|values|cares|hopes|dreams|feels|finds|knows|speaks|plays|collects|volunteers|"
    r"studies|teaches|was passionate|is passionate)\b",
    re.IGNORECASE,
)
_FUTURE = re.compile(
    r"^\s*(?:\S+\s){0,2}?(?:will|plans|intends|is going to|are going to|is planning|"
    r"are planning|is about to|agreed to|decided to|wants to go|is looking forward to)\b",
    re.IGNORECASE,
)


_HABIT = re.compile(r"^\s*(?:often |usually |always |also |still )?(?!was\b)[a-z]{2,}[^s\W]s\b")
"""A verb in the simple present ("writes", "keeps"): what someone does, not did."""


def settled_kind(kind: str, text: str, subjects: tuple[str, ...]) -> str:
    """The kind a person's memory is, read from its verb where the model said only
    "event" (small models say it of nearly everything): "Ann works as a nurse" is a
    lasting fact, "Ann will fly to Rome on Friday" a plan, "Ann flew to Rome" an event."""
    if kind != "event" or not subjects:
        return kind
    rest = text
    for subject in subjects:
        at = rest.casefold().find(subject.casefold())
        if at == 0:
            rest = rest[len(subject) :]
    rest = re.sub(r"^\s*(?:and\s+\S+\s+)?", "", rest)
    if _FUTURE.match(rest):
        return "plan"
    if _STATE.match(rest) or _HABIT.match(rest):
        return "fact"
    return kind


def read(proposal: Proposal, window: Window, user: str, has_agent: bool, tz: dt.tzinfo) -> Reading:
    """The memories ``proposal`` holds once somnid has checked it against ``window``."""
    text = without_label(proposal.text)
    if copies_placeholder(text) is not None:
        return Reading(refusal="copied_example")
    if scaffolding(text) is not None:
        return Reading(refusal="scaffolding")
    speakers = speakers_of(window)
    aliases = _aliases(window)
    lines = [line for line_id in proposal.evidence if (line := window.line(line_id))]
    spoken = [line for line in lines if line.role != "tool"] or lines
    evidence = [Spoken(line.speaker, line.text) for line in spoken]
    said = claim_words(" ".join(line.text for line in lines), speakers)
    said |= claim_words(" ".join(day for line in lines for day in _dates(line, tz)), [])
    kept: list[_Sentence] = []
    problems: list[str] = []
    previous: tuple[str, ...] = ()
    person_kind = proposal.kind in PERSON_KINDS
    heard = [line.text for line in (*window.lines, *window.context)]
    for sentence in clauses(text, speakers):
        owned = False  # labelled with whose first person it is (a role word no check names)
        if sentence.endswith(("?", "？")):
            problems.append("ungrounded")  # a question the model copied says nothing
            continue
        if first_person(sentence) and not named_subjects(sentence, speakers, aliases):
            owner = proposal.who if proposal.who in {line.speaker for line in spoken} else None
            best = whose_words(sentence, evidence, speakers) if has_agent else None
            if owner is not None and best is not None:
                # Whoever said it so, in their own first person: a small model copies the
                # agent's "I will remember …" as the user's; the agent's echo ("Noted: you
                # will visit Clara") is not its own. Not between people: replies echo.
                mine = [line.text for line in evidence if line.speaker == best]
                owner = best if any(first_person(text) for text in mine) else owner
            if owner is None:
                problems.append("misattributed")
                continue
            sentence, owned = f"{owner}: {sentence}", True
        words = claim_words(sentence, speakers)
        if words and len(words & said) / len(words) < GROUNDED_SHARE:
            problems.append("ungrounded")
            continue
        other = third_party(sentence, speakers, heard)
        if other is not None and not said_of(other, sentence, evidence, speakers):
            problems.append("misattributed")  # of someone who is not speaking here
            continue
        if (
            not kept
            and person_kind
            and not owned
            and not named_subjects(sentence, speakers, aliases)
        ):
            # What happened, or what someone is like, says who. A sentence that names
            # nobody is the words of whoever's lines say it ("Nate: Let's watch …"), if
            # the model said it was theirs; else it is no memory of anyone.
            owners = attribute(sentence, evidence, speakers, aliases=aliases).subjects
            if not owners or (proposal.who is not None and proposal.who != owners[0]):
                problems.append("misattributed")
                continue
            sentence = f"{owners[0]}: {sentence}"
        found = attribute(sentence, evidence, speakers, default=previous, aliases=aliases)
        if found.problem is not None:
            problems.append(found.problem)
            continue
        kept.append(_Sentence(found.text, found.subjects, found.lines))
        previous = found.subjects
    if not kept:
        return Reading(refusal=problems[0] if problems else "ungrounded")
    groups: dict[tuple[str, ...], list[_Sentence]] = {}
    for held in kept:
        groups.setdefault(held.subjects, []).append(held)
    reading = Reading(trimmed=len(problems))
    refusals: list[str] = []
    for subjects, group in list(groups.items())[:MAX_SPLIT]:
        body = " ".join(s.text for s in group)
        quoted = sorted({i for s in group for i in s.lines}) or list(range(len(spoken)))
        ids = [spoken[i].id for i in quoted] + [line.id for line in lines if line.role == "tool"]
        candidate = candidate_of(
            Proposal(proposal.kind, body, tuple(dict.fromkeys(ids))), window, tz, user
        )
        candidate.kind = settled_kind(candidate.kind, body, subjects)
        candidate.about = list(subjects)
        candidate.actors = list(dict.fromkeys([*subjects, *candidate.actors]))
        if candidate.kind == "about_user" and not candidate.about_own_user:
            candidate.kind = "fact"  # about someone else: never into this user's profile
        if candidate.kind == "about_agent" and not has_agent:
            candidate.kind = "fact"  # no agent spoke here: people talking among themselves
        if vague(candidate.text, candidate.evidence_texts, speakers):
            refusals.append("vague")
            continue
        if window.context and _echoes(candidate, window.context, speakers):
            refusals.append("misattributed")
            continue
        reading.candidates.append(candidate)
    if not reading.candidates:
        reading.refusal = refusals[0] if refusals else "vague"
    reading.split = max(0, len(reading.candidates) - 1)
    return reading


def _aliases(window: Window) -> dict[str, tuple[str, ...]]:
    """How a memory names the log's own user ("the user") and the agent ("the agent")."""
    found: dict[str, tuple[str, ...]] = {}
    for line in (*window.lines, *window.context):
        if line.own_user:
            found[line.speaker] = USER_ALIASES
        elif line.role == "agent":
            found[line.speaker] = AGENT_ALIASES
    return found


def _echoes(candidate: Candidate, context: tuple[Line, ...], speakers: list[str]) -> bool:
    """Whether what ``candidate`` says particularly was someone else's first: the subject
    only answered it ("Caroline says the charity race sounds great" of Melanie's race).
    What a person's reply repeats is the other's fact, not theirs."""
    words = specific_words(candidate.text, candidate.evidence_texts, speakers)
    if not words:
        return False
    first: dict[str, str] = {}
    for line in context:
        if line.role == "tool":
            continue
        for word in claim_words(line.text, speakers) & words:
            first.setdefault(word, line.speaker)
    theirs = sum(1 for word in words if first.get(word) in candidate.about)
    return theirs * 2 < len(words)


def _dates(line: Line, tz: dt.tzinfo) -> list[str]:
    """The days a line's relative dates stand for ("yesterday" said on 2023-05-08)."""
    if line.when is None:
        return []
    return absolutise(line.text, line.when.astimezone(tz).date())[1]
