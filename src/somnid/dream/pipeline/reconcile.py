"""Where a checked candidate goes: reconciled with what memory already holds, then written.

An event is checked against the episodes only for being the same one again (an episode is
what happened once, on its day). A fact is reconciled with the knowledge entries of its own
(the model decides among the close ones: add, merge, supersede, known); one about a single
person that adds to none is a line of that person's entry, reconciled with its lines the
same way. Intentions are the agent's to keep: only a log where an agent speaks holds one.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from somnid.dream import items
from somnid.dream.pipeline import people, prompts
from somnid.dream.pipeline.ask import Asker
from somnid.dream.pipeline.attribution import Spoken, attribute, claim_words
from somnid.dream.pipeline.candidate import Candidate
from somnid.dream.pipeline.checks import GROUNDED_SHARE, copies_placeholder
from somnid.dream.pipeline.schemas import Decision, decision_schema, read_decision
from somnid.dream.pipeline.specifics import scaffolding, without_label
from somnid.dream.pipeline.writer import PersonFact, Writer, kind_of
from somnid.dream.similarity import (
    DUPLICATE_SIMILARITY,
    RELATED_SIMILARITY,
    restates,
    same_details,
    similarity,
)
from somnid.dream.tools import DreamTools
from somnid.errors import NotFound
from somnid.memory.clock import Clock, to_datetime
from somnid.memory.entry import Entry
from somnid.memory.kinds import Kind

NEIGHBOURS = 3
DUPLICATE_COSINE = 0.97
"""Query-to-entry cosine (multilingual-e5) at or above which a candidate restates an entry."""
RELATED_COSINE = 0.9
"""Cosine at or above which an entry is close enough to ask the model about."""
RELATED_PERSON_COSINE = 0.9
"""Passage cosine of a new fact and a line of the person's entry at or above which the
model is asked whether it adds to that line, corrects it, or is known."""
SAME_MEANING = 0.95
"""Cosine of two memories' own texts (passage vectors) at or above which they say the same
thing in other words: a small model restates one event in a template ("X and Y shared their
experiences about …") that word overlap does not catch. An event said so of the same day is
a duplicate. (A fact so close is close by search vector too: the model decides, as it may
correct the other.)"""
RECONCILED = (Kind.KNOWLEDGE, Kind.SKILL)
"""What a fact, a preference or a procedure may be merged into or supersede. Episodes are
what happened once, each on its day: a new one is never merged into another, only checked
for being the same one again."""


@dataclass(slots=True)
class _Neighbour:
    label: str
    entry: Entry
    text: str
    similarity: float
    cosine: float


def _entry_text(entry: Entry) -> str:
    """What an entry says, without the quotes and sources the pipeline adds, and without
    its description again when the body begins with it (as the pipeline writes entries: a
    doubled text reads further from a restatement of it than the text itself)."""
    body = " ".join(
        line for line in entry.body.split("\n") if not line.startswith(("Source: ", "> "))
    ).strip()
    description = entry.description.strip()
    if not description or " ".join(body.split()).startswith(" ".join(description.split())):
        return " ".join(body.split())
    return f"{description} {body}".strip()


class Reconciler:
    """Places the candidates of one dream (the model asked through ``asker``, the memories
    written through ``writer``)."""

    def __init__(
        self, tools: DreamTools, clock: Clock, lang: str, asker: Asker, writer: Writer
    ) -> None:
        self.tools = tools
        self.clock = clock
        self.lang = lang
        self.asker = asker
        self.writer = writer
        self._recall = tools.recaller

    async def place(self, candidate: Candidate, has_agent: bool) -> str:
        """Write ``candidate`` where it belongs; the outcome, as counted."""
        return await self._place(candidate, has_agent, self.asker, self.writer)

    async def _place(
        self, candidate: Candidate, has_agent: bool, asker: Asker, writer: Writer
    ) -> str:
        if candidate.kind in ("todo", "plan"):
            # An intention is for the agent to keep: only a log where an agent speaks holds
            # one (its user asked, or it said it would). People's plans among themselves are
            # events to come (an episode dated when they are to happen), never a reminder
            # resident in the agent's prompt that nobody asked for.
            candidate.kind = "todo" if has_agent else "plan"
        kind = kind_of(candidate)
        if kind is Kind.PROFILE:
            return await writer.profile_line(candidate)
        person = candidate.kind in ("fact", "preference") and len(candidate.about) == 1
        if person and candidate.about_own_user:
            # What the log's own user is like goes to their profile, as about_user does.
            return await writer.profile_line(candidate)
        if kind is Kind.INTENTION:
            if await self.tools.open_intention_like(candidate.text) is not None:
                return "duplicate"
            await writer.add(candidate)
            return "added"
        if kind is Kind.EPISODE:
            neighbours = await self._neighbours(candidate, (Kind.EPISODE,))
            same_day = [n for n in neighbours if _same_day(n.entry, candidate, self.clock.tz)]
            if _duplicate(candidate, neighbours) or await self._same_meaning(candidate, same_day):
                return "duplicate"
            await writer.add(candidate)
            return "added"
        # A fact is first reconciled with the entries of its own (a person's or an
        # earlier dream's); one about a person that adds to none is a line of theirs.
        neighbours = [
            n
            for n in await self._neighbours(candidate, RECONCILED)
            if n.entry.entry_type != people.PERSON_TYPE
        ]
        if _duplicate(candidate, neighbours):
            return "duplicate"
        related = [
            n
            for n in neighbours
            if n.similarity >= RELATED_SIMILARITY or n.cosine >= RELATED_COSINE
        ]
        decision = await self._decide(candidate, related, asker) if related else None
        if decision is None or decision.action == "add":
            if person:
                return await self._person_fact(candidate, asker, writer)
            await writer.add(candidate)
            return "added"
        if decision.action == "known":
            return "known"
        target = next(n.entry for n in related if n.label == decision.target)
        text = self._decided_text(decision.text, candidate, [_entry_text(target)])
        if text is None or items.merge_refused(target):
            # The merged text strays (keep what is grounded), or a person keeps the entry
            # (auto_merge: false): nothing is merged into it nor archived; the new beside it.
            await writer.add(candidate)
            return "added"
        try:
            if decision.action == "merge" or not items.from_a_log(target):
                # A person's entry is corrected in place (their sections kept, the
                # correction after them), never retired on one model's word.
                await writer.merge(target, candidate, text)
                return "merged"
            await writer.supersede(target, candidate, text)
            return "superseded"
        except NotFound:  # the entry went meanwhile (a person archived it)
            await writer.add(candidate)
            return "added"

    def _decided_text(self, text: str, candidate: Candidate, older: list[str]) -> str | None:
        """A merged or corrected text the model wrote, if it may be stored: no label, the
        same person (or people) as the candidate, and grounded in the candidate's lines
        and the older text. None when it strays."""
        text = without_label(text)
        if not text or scaffolding(text) is not None or copies_placeholder(text) is not None:
            return None
        people = list(dict.fromkeys([*candidate.actors, *candidate.about]))
        found = attribute(
            text,
            [*(Spoken(line.speaker, line.text) for line in candidate.lines),
             *(Spoken(candidate.about[0], old) for old in older if candidate.about)],
            people,
        )  # fmt: skip
        if found.problem is not None or set(found.subjects) - set(candidate.about):
            return None
        words = claim_words(text, people)
        source = claim_words(" ".join([*candidate.evidence_texts, *older]), people)
        if words and len(words & source) / len(words) < GROUNDED_SHARE:
            return None
        return found.text

    async def _person_fact(self, candidate: Candidate, asker: Asker, writer: Writer) -> str:
        """A lasting fact about one person: a line of their entry, added, merged into the
        line it adds to, or superseding the line it corrects (the model decides which,
        among the lines close to it)."""
        person = candidate.about[0]
        facts = await writer.person_facts(person)
        close = [
            (at, fact, similarity(candidate.text, fact))
            for at, fact in facts
            if similarity(candidate.text, fact) >= RELATED_SIMILARITY
        ]
        if any(restates(candidate.text, fact) for _, fact, _ in close):
            return "duplicate"
        meanings = await self._recall.meanings([candidate.text, *(f for _, f in facts)])
        if meanings is not None and facts:
            first = meanings[0]
            cosines = [float(first @ other) for other in meanings[1:]]
            if any(
                cos >= SAME_MEANING and same_details(candidate.text, fact)
                for (_, fact), cos in zip(facts, cosines, strict=True)
            ):
                return "duplicate"
            close += [
                (at, fact, cos)
                for (at, fact), cos in zip(facts, cosines, strict=True)
                if cos >= RELATED_PERSON_COSINE and all(at != c[0] for c in close)
            ]
        close = sorted(close, key=lambda c: -c[2])[:NEIGHBOURS]
        if not close:
            return await writer.person_fact(candidate, PersonFact("add"))
        labels = [f"E{number}" for number in range(1, len(close) + 1)]
        existing = "\n".join(
            f"{label}: {fact}" for label, (_, fact, _) in zip(labels, close, strict=True)
        )
        decision = await self._ask_decision(candidate, labels, existing, asker)
        if decision is None or decision.action == "add":
            return await writer.person_fact(candidate, PersonFact("add"))
        if decision.action == "known":
            return "known"
        number = int(decision.target.removeprefix("E")) - 1
        at, fact, _ = close[number]
        text = self._decided_text(decision.text, candidate, [fact])
        if text is None:
            return await writer.person_fact(candidate, PersonFact("add"))
        return await writer.person_fact(candidate, PersonFact(decision.action, at, fact, text))

    async def _same_meaning(
        self, candidate: Candidate, neighbours: list[_Neighbour]
    ) -> list[_Neighbour]:
        """The neighbours whose own text says what the candidate says in other words (none
        while the embedding model is not loaded)."""
        if not neighbours:
            return []
        texts = [candidate.text, *(n.text for n in neighbours)]
        meanings = await self._recall.meanings(texts)
        if meanings is None:
            return []
        first = meanings[0]
        return [
            n
            for n, other in zip(neighbours, meanings[1:], strict=True)
            if float(first @ other) >= SAME_MEANING and same_details(candidate.text, n.text)
        ]

    async def _neighbours(self, candidate: Candidate, kinds: tuple[Kind, ...]) -> list[_Neighbour]:
        recalled = await self._recall.find(candidate.text, kinds=kinds, limit=NEIGHBOURS)
        neighbours: list[_Neighbour] = []
        for found in recalled.found:
            label = f"E{len(neighbours) + 1}"
            cosine = float(found.hit.components.get("cosine", 0.0))
            text = _entry_text(found.entry)
            neighbours.append(
                _Neighbour(label, found.entry, text, similarity(candidate.text, text), cosine)
            )
        return neighbours

    async def _decide(
        self, candidate: Candidate, related: list[_Neighbour], asker: Asker
    ) -> Decision | None:
        existing = "\n".join(
            f"{n.label}: {_entry_text(n.entry)[:600]}{_when(n.entry)}" for n in related
        )
        return await self._ask_decision(candidate, [n.label for n in related], existing, asker)

    async def _ask_decision(
        self, candidate: Candidate, labels: list[str], existing: str, asker: Asker
    ) -> Decision | None:
        prompt = prompts.decision(self.lang, new=candidate.text, existing=existing)
        decision = await asker.ask(
            "decide", prompt, decision_schema(labels), lambda raw: read_decision(raw, labels)
        )
        if decision is not None:
            asker.result.stages += 1
        return decision


def _duplicate(candidate: Candidate, neighbours: list[_Neighbour]) -> bool:
    """A stored entry says it already: the same content words or the same search vector,
    and no detail of the candidate's own (a changed date or number is a correction)."""
    return any(
        (n.similarity >= DUPLICATE_SIMILARITY or n.cosine >= DUPLICATE_COSINE)
        and same_details(candidate.text, n.text)
        for n in neighbours
    )


def _same_day(entry: Entry, candidate: Candidate, tz: dt.tzinfo) -> bool:
    """Whether a stored episode happened on the candidate's day (an event said again the
    same day is the same event; on another day it may be another time of it)."""
    if candidate.when is None:
        return True
    value = entry.meta.get("when")
    when = to_datetime(value, tz) if value is not None else None
    if when is None:
        return True
    return when.astimezone(tz).date() == candidate.when.astimezone(tz).date()


def _when(entry: Entry) -> str:
    """When what an entry says was said (the conversation's day, not the day it was
    written): shown after the text, never as a label the model could copy before it."""
    value = entry.meta.get("when") or entry.meta.get("observed")
    return f" [{str(value)[:10]}]" if value else ""
