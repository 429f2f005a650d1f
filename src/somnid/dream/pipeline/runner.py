"""The staged consolidation, driven by somnid (see the package's docstring for the stages).

Per log: read it, window it, extract each window, check and reconcile each candidate, and
mark the log processed only once every window was answered. A window whose answer is still
unusable after one repair stops that log (it stays pending; what its earlier windows
yielded is kept, and the duplicate checks keep the next dream from writing it twice) and
the dream goes on with the next log. An LLM failure (unreachable, timeout) ends the dream:
the service reports it as interrupted.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import math
from dataclasses import dataclass

from somnid.config import DreamSettings
from somnid.dream.ledger import Ledger
from somnid.dream.llm.base import ChatBackend
from somnid.dream.loop import EventSink
from somnid.dream.pipeline import prompts
from somnid.dream.pipeline.ask import Asker
from somnid.dream.pipeline.candidate import Candidate, candidate_of
from somnid.dream.pipeline.checks import (
    DUPLICATE_SIMILARITY,
    GROUNDED_SHARE,
    RELATED_SIMILARITY,
    anchor,
    copies_placeholder,
    first_person,
    grounded_share,
    similarity,
)
from somnid.dream.pipeline.schemas import (
    Decision,
    Proposal,
    decision_schema,
    extraction_schema,
    read_decision,
    read_extraction,
)
from somnid.dream.pipeline.windows import Window, lines_of, log_user, render, windows_of
from somnid.dream.pipeline.writer import Writer, kind_of
from somnid.dream.result import DreamResult
from somnid.dream.tools import DreamTools
from somnid.errors import NotFound
from somnid.memory.clock import Clock, to_datetime
from somnid.memory.entry import Entry
from somnid.memory.kinds import Kind
from somnid.services.recall_service import RecallService
from somnid.sessions.transcript import read_log

log = logging.getLogger(__name__)

NEIGHBOURS = 3
DUPLICATE_COSINE = 0.97
"""Query-to-entry cosine (multilingual-e5) at or above which a candidate restates an entry."""
RELATED_COSINE = 0.9
"""Cosine at or above which an entry is close enough to ask the model about."""
SAME_MEANING = 0.95
"""Cosine of two memories' own texts (passage vectors) at or above which they say the same
thing in other words: a small model restates one event in a template ("X and Y shared their
experiences about …") that word overlap does not catch. An event said so of the same day is
a duplicate. (A fact so close is close by search vector too: the model decides, as it may
correct the other.)"""
LINES_PER_MEMORY = 4
"""A window may propose one memory per this many spoken lines (and at most
dream.max_candidates): a dream keeps what matters of a conversation, in a quarter as many
entries as it has turns at most, not a restatement of every exchange. A short window may
propose up to two, one per two lines: a four-line chat can hold an event and a preference."""
MIN_SHARE = 0.5
"""A window of eight spoken lines or more is asked for at least half its limit: a small
model otherwise stops after the first item (what it proposes is checked all the same)."""
MIN_LINES = 8
RECONCILED = (Kind.KNOWLEDGE, Kind.SKILL)
"""What a fact, a preference or a procedure may be merged into or supersede. Episodes are
what happened once, each on its day: a new one is never merged into another, only checked
for being the same one again."""


@dataclass(slots=True)
class _Neighbour:
    label: str
    entry: Entry
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


class PipelineDream:
    def __init__(
        self,
        settings: DreamSettings,
        lang: str,
        clock: Clock,
        tools: DreamTools,
        backend: ChatBackend,
        emit: EventSink,
    ) -> None:
        self.settings = settings
        self.lang = lang
        self.clock = clock
        self.tools = tools
        self.backend = backend
        self.emit = emit
        self._recall = RecallService(tools.recall)
        self._seen: list[str] = []

    async def run(self, result: DreamResult, ledger: Ledger) -> None:
        self.tools.bind(ledger)
        asker = Asker(self.backend, self.settings, self.lang, result, self.emit)
        writer = Writer(self.tools, ledger, self.lang)
        self._seen = []
        left: list[str] = []
        for stem in result.logs:
            if self._spent(result) or not await self._log(stem, asker, writer, result, ledger):
                left.append(stem)
        result.status = "deep_sleep"
        result.reason = "done" if not left else f"partial: {len(left)} log(s) left pending"
        if left and self._spent(result):
            result.reason = f"budget: {len(left)} log(s) left pending"
        counts = result.candidates
        result.summary = (
            f"{len(ledger.processed_logs)} of {len(result.logs)} logs consolidated in "
            f"{result.stages} stages; {counts.get('proposed', 0)} memories proposed, "
            f"{counts.get('added', 0)} added, {counts.get('merged', 0)} merged, "
            f"{counts.get('superseded', 0)} superseded; refused: "
            f"{counts.get('ungrounded', 0)} ungrounded, {counts.get('copied_example', 0)} "
            f"copying an example, {counts.get('duplicate', 0) + counts.get('known', 0)} "
            "already known."
        )

    async def _log(
        self, stem: str, asker: Asker, writer: Writer, result: DreamResult, ledger: Ledger
    ) -> bool:
        pending = await self.tools.sessions.pending_logs()
        found = next((p for p in pending if p.path.stem == stem), None)
        if found is None or found.open or not found.dream:
            return False
        try:
            transcript = await asyncio.to_thread(read_log, found.path, self.clock.tz)
        except (OSError, UnicodeError) as exc:
            log.warning("dream: session log %s cannot be read: %s", stem, exc)
            return False
        user = log_user(transcript)
        windows = windows_of(stem, lines_of(transcript), self.settings.window_tokens)
        self.emit({"type": "log", "log": stem, "windows": len(windows)})
        has_agent = any(turn.role == "agent" for turn in transcript.turns)
        for window in windows:
            if self._spent(result):
                self.emit({"type": "log_left", "log": stem, "window": window.number})
                return False
            proposals = await self._extract(window, len(windows), user, asker)
            if proposals is None:
                self.emit({"type": "log_left", "log": stem, "window": window.number})
                return False
            result.stages += 1
            for proposal in proposals:
                await self._consider(proposal, window, user, has_agent, asker, writer, result)
        await self.tools.sessions.mark_processed(found.path)
        ledger.add_processed(stem)
        self.emit({"type": "processed", "log": stem})
        return True

    async def _extract(
        self, window: Window, parts: int, user: str, asker: Asker
    ) -> list[Proposal] | None:
        spoken = sum(1 for line in window.lines if line.role != "tool")
        short = max(1, min(2, spoken // 2))
        limit = min(self.settings.max_candidates, max(short, spoken // LINES_PER_MEMORY))
        ids = window.ids
        prompt = prompts.extraction(
            self.lang,
            part=window.number,
            parts=parts,
            user=user,
            lines=render(window, self.clock.tz),
            limit=limit,
        )
        floor = math.ceil(limit * MIN_SHARE) if spoken >= MIN_LINES else 0
        return await asker.ask(
            "extract",
            prompt,
            extraction_schema(ids, limit, floor),
            lambda raw: read_extraction(raw, ids, limit),
            system=prompts.extraction_system(self.lang),
        )

    async def _consider(
        self,
        proposal: Proposal,
        window: Window,
        user: str,
        window_has_agent: bool,
        asker: Asker,
        writer: Writer,
        result: DreamResult,
    ) -> None:
        result.count("proposed")
        proposal = self._anchored(proposal, window)
        candidate = candidate_of(proposal, window, self.clock.tz, user)
        if candidate.kind == "about_user" and not candidate.about_own_user:
            candidate.kind = "fact"  # about someone else: never into this user's profile
        if candidate.kind == "about_agent" and not window_has_agent:
            candidate.kind = "fact"  # no agent spoke here: people talking among themselves
        if first_person(candidate.text) and len(candidate.actors) == 1:
            candidate.text = f"{candidate.actors[0]}: {candidate.text}"
        outcome = self._refusal(candidate)
        if outcome is None:
            outcome = await self._place(candidate, asker, writer, result)
        result.count(outcome)
        self.emit({"type": "candidate", "kind": candidate.kind, "outcome": outcome})
        if outcome in ("added", "merged", "superseded"):
            self._seen.append(candidate.text)

    def _spent(self, result: DreamResult) -> bool:
        """The dream's token budget is used up: what is left waits for the next dream."""
        return result.tokens.get("total", 0) >= self.settings.token_budget

    @staticmethod
    def _anchored(proposal: Proposal, window: Window) -> Proposal:
        """The proposal with the lines its text rests on as evidence (somnid's reading, not
        the model's, when the cited lines do not ground it but a neighbour does)."""
        ids = window.ids
        texts = [f"{line.speaker} {line.text}" for line in window.lines]
        cited = [ids.index(line_id) for line_id in proposal.evidence]
        chosen = anchor(proposal.text, cited, texts)
        if chosen == cited:
            return proposal
        return Proposal(proposal.kind, proposal.text, tuple(ids[i] for i in chosen))

    def _refusal(self, candidate: Candidate) -> str | None:
        if copies_placeholder(candidate.text) is not None:
            return "copied_example"
        if grounded_share(candidate.text, candidate.evidence_texts) < GROUNDED_SHARE:
            return "ungrounded"
        if any(similarity(candidate.text, seen) >= DUPLICATE_SIMILARITY for seen in self._seen):
            return "duplicate"
        return None

    async def _place(
        self, candidate: Candidate, asker: Asker, writer: Writer, result: DreamResult
    ) -> str:
        kind = kind_of(candidate)
        if kind is Kind.PROFILE:
            return "added" if await writer.profile_line(candidate) else "duplicate"
        if kind is Kind.INTENTION:
            if await self.tools.open_intention_like(candidate.text) is not None:
                return "duplicate"
            await writer.add(candidate)
            return "added"
        if kind is Kind.EPISODE:
            neighbours = await self._neighbours(candidate, (Kind.EPISODE,))
            same_day = [n for n in neighbours if _same_day(n.entry, candidate, self.clock.tz)]
            if _duplicate(neighbours) or await self._same_meaning(candidate, same_day):
                return "duplicate"
            await writer.add(candidate)
            return "added"
        neighbours = await self._neighbours(candidate, RECONCILED)
        if _duplicate(neighbours):
            return "duplicate"
        related = [
            n
            for n in neighbours
            if n.similarity >= RELATED_SIMILARITY or n.cosine >= RELATED_COSINE
        ]
        if not related:
            await writer.add(candidate)
            return "added"
        decision = await self._decide(candidate, related, asker)
        if decision is None or decision.action == "add":
            await writer.add(candidate)
            return "added"
        if decision.action == "known":
            return "known"
        target = next(n.entry for n in related if n.label == decision.target)
        evidence = [*candidate.evidence_texts, _entry_text(target)]
        if grounded_share(decision.text, evidence) < GROUNDED_SHARE:
            await writer.add(candidate)  # the merged text strays: keep what is grounded
            return "added"
        try:
            if decision.action == "merge":
                await writer.merge(target, candidate, decision.text)
                return "merged"
            await writer.supersede(target, candidate, decision.text)
            return "superseded"
        except NotFound:  # the entry went meanwhile (a person archived it)
            await writer.add(candidate)
            return "added"

    async def _same_meaning(
        self, candidate: Candidate, neighbours: list[_Neighbour]
    ) -> list[_Neighbour]:
        """The neighbours whose own text says what the candidate says in other words (none
        while the embedding model is not loaded)."""
        if not neighbours:
            return []
        texts = [candidate.text, *(_entry_text(n.entry) for n in neighbours)]
        meanings = await self._recall.meanings(texts)
        if meanings is None:
            return []
        first = meanings[0]
        return [
            n
            for n, other in zip(neighbours, meanings[1:], strict=True)
            if float(first @ other) >= SAME_MEANING
        ]

    async def _neighbours(self, candidate: Candidate, kinds: tuple[Kind, ...]) -> list[_Neighbour]:
        recalled = await self._recall.find(candidate.text, kinds=kinds, limit=NEIGHBOURS)
        neighbours: list[_Neighbour] = []
        for found in recalled.found:
            label = f"E{len(neighbours) + 1}"
            cosine = float(found.hit.components.get("cosine", 0.0))
            text = _entry_text(found.entry)
            neighbours.append(
                _Neighbour(label, found.entry, similarity(candidate.text, text), cosine)
            )
        return neighbours

    async def _decide(
        self, candidate: Candidate, related: list[_Neighbour], asker: Asker
    ) -> Decision | None:
        labels = [n.label for n in related]
        existing = "\n".join(
            f"{n.label} ({n.entry.kind.value}{_when(n.entry)}): {_entry_text(n.entry)[:600]}"
            for n in related
        )
        prompt = prompts.decision(self.lang, new=candidate.text, existing=existing)
        decision = await asker.ask(
            "decide", prompt, decision_schema(labels), lambda raw: read_decision(raw, labels)
        )
        if decision is not None:
            asker.result.stages += 1
        return decision


def _duplicate(neighbours: list[_Neighbour]) -> bool:
    """A stored entry says it already: the same content words, or the same search vector."""
    return any(
        n.similarity >= DUPLICATE_SIMILARITY or n.cosine >= DUPLICATE_COSINE for n in neighbours
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
    value = entry.meta.get("when") or entry.meta.get("created")
    return f", {str(value)[:10]}" if value else ""
