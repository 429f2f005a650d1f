"""The staged consolidation, driven by somnid (see the package's docstring for the stages).

Per log: read it, window it, extract each window, check and reconcile each candidate, and
mark the log processed only once every window was answered. A window whose answer is still
unusable after one repair stops that log (it stays pending; what its earlier windows
yielded is kept, and the duplicate checks keep the next dream from writing it twice) and
the dream goes on with the next log. An LLM failure (unreachable, timeout) ends the dream:
the service reports it as interrupted. A log the model refuses (HTTP 4xx: a filter on its
words) stays pending and the dream goes on (its reason says so); two logs refused with no
answer between, or no request answered at all, is the endpoint's refusal (a key, a model's
name) when the endpoint then refuses a probe too: it ends the dream the same way.
"""

from __future__ import annotations

import asyncio
import logging
import math

from somnid.config import DreamSettings
from somnid.dream.ledger import Ledger
from somnid.dream.llm.base import ChatBackend, LLMRejected
from somnid.dream.loop import EventSink
from somnid.dream.pipeline import prompts
from somnid.dream.pipeline.ask import Asker
from somnid.dream.pipeline.attribution import name_words
from somnid.dream.pipeline.candidate import Candidate
from somnid.dream.pipeline.checks import anchor
from somnid.dream.pipeline.reading import read
from somnid.dream.pipeline.reconcile import Reconciler
from somnid.dream.pipeline.schemas import (
    Proposal,
    extraction_schema,
    read_extraction,
)
from somnid.dream.pipeline.windows import (
    Window,
    by_speaker,
    lines_of,
    log_user,
    render,
    speakers_of,
    windows_of,
)
from somnid.dream.pipeline.writer import Writer
from somnid.dream.result import DreamResult
from somnid.dream.similarity import restates
from somnid.dream.tools import DreamTools
from somnid.errors import BrokenFile, Conflict, InvalidInput, NotFound, PreconditionFailed
from somnid.memory.clock import Clock
from somnid.memory.scrub import scrub
from somnid.memory.text import one_line
from somnid.sessions.transcript import file_mark, read_log

log = logging.getLogger(__name__)

LINES_PER_MEMORY = 4
"""A window may propose one memory per this many spoken lines (and at most
dream.max_candidates): a dream keeps what matters of a conversation, in a quarter as many
entries as it has turns at most, not a restatement of every exchange. A short window may
propose up to two, one per two lines: a four-line chat can hold an event and a preference."""
MIN_SHARE = 0.5
"""A window of eight spoken lines or more is asked for at least half its limit: a small
model otherwise stops after the first item (what it proposes is checked all the same)."""
MIN_LINES = 8
LINES_PER_OWN_MEMORY = 1
"""A window of one person's lines may propose one memory per line shown: it shows only the
sentences in which they speak of themselves (see :func:`.windows.own_sentences`), each a
thing worth keeping more often than not. When every line was shown, one per two (two per
three measured no better on 5 conversations: coverage 0.405 against 0.39, for 2,131 tokens
a log against 1,849)."""
MIN_OWN_LINES = 4
MIN_OWN_SHARE = 0.75
"""A one-person window of four lines or more is asked for at least three quarters of its
limit: its lines are that person's own news (nothing else is shown), and the 1.5B model
stopped at the floor when it was half (3.5 memories a window for about 8 lines shown)."""


def asked(spoken: int, one_person: bool, max_candidates: int) -> tuple[int, int]:
    """How many memories a window may propose, and how many it is asked for at least."""
    if one_person:
        limit = min(max_candidates, max(1, -(-spoken // LINES_PER_OWN_MEMORY)))
        return limit, math.ceil(limit * MIN_OWN_SHARE) if spoken >= MIN_OWN_LINES else 0
    short = max(1, min(2, spoken // 2))
    limit = min(max_candidates, max(short, spoken // LINES_PER_MEMORY))
    return limit, math.ceil(limit * MIN_SHARE) if spoken >= MIN_LINES else 0


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
        self._seen: list[str] = []

    async def run(self, result: DreamResult, ledger: Ledger) -> None:
        self.tools.bind(ledger)
        asker = Asker(self.backend, self.settings, self.lang, result, self.emit)
        writer = Writer(self.tools, ledger, self.lang)
        reconciler = Reconciler(self.tools, self.clock, self.lang, asker, writer)
        self._seen = []
        left: list[str] = []
        refused: list[LLMRejected] = []
        refusals: dict[str, str] = {}
        try:
            answered = -1  # the model's answers when the last refusal came
            for stem in result.logs:
                level = asker.level
                try:
                    done = not self._spent(result) and await self._log(
                        stem, asker, reconciler, result, ledger
                    )
                except LLMRejected as exc:
                    # Refused at every level (at once: a 4xx is never retried): a filter on
                    # this log's words, or the endpoint itself (a key, a model's name). The
                    # log stays pending and the next goes on at the level found before.
                    refused.append(exc)
                    # Two in a row with nothing answered between: the endpoint's (a key
                    # revoked, a model unloaded) if it now refuses a probe too, else each
                    # log's own words (two logs of one topic, both filtered).
                    if answered == result.llm_calls and await self.backend.probe() is not None:
                        raise
                    answered = result.llm_calls
                    log.warning("dream: the model refused session log %s: %s", stem, exc)
                    # Shown by the status and the journal: as a dream's reason is.
                    refusals[stem] = f"the model refused it: {one_line(scrub(str(exc)))[:300]}"
                    self.emit({"type": "log_left", "log": stem, "window": 0, "why": str(exc)})
                    asker.level, done = level, False
                if not done:
                    left.append(stem)
            if refused and not result.llm_calls and await self.backend.probe() is not None:
                raise refused[0]  # nothing answered, and the endpoint refuses a probe too
            ledger.failed |= refusals  # each log's own, the endpoint's refusal ruled out
        finally:
            # Also when an LLM failure ends the dream: its journal says what it got done.
            result.summary = self._summary(result, ledger)
        result.status = "deep_sleep"
        result.reason = "done" if not left else f"partial: {len(left)} log(s) left pending"
        if refused:
            result.reason += f"; {len(refused)} refused by the model ({refused[0]})"
        if left and self._spent(result):
            result.reason = f"budget: {len(left)} log(s) left pending"

    @staticmethod
    def _summary(result: DreamResult, ledger: Ledger) -> str:
        counts = result.candidates
        abandoned = result.tokens.get("abandoned", 0)
        return (
            f"{len(ledger.processed_logs)} of {len(result.logs)} logs consolidated in "
            f"{result.stages} stages; {counts.get('proposed', 0)} memories proposed, "
            f"{counts.get('added', 0)} added, {counts.get('merged', 0)} merged, "
            f"{counts.get('superseded', 0)} superseded; refused: "
            f"{counts.get('ungrounded', 0)} ungrounded, "
            f"{counts.get('misattributed', 0)} about the wrong person, "
            f"{counts.get('vague', 0)} vague, {counts.get('scaffolding', 0)} carrying a "
            f"prompt's label, {counts.get('copied_example', 0)} copying an example, "
            f"{counts.get('duplicate', 0) + counts.get('known', 0)} already known, "
            f"{counts.get('unwritable', 0)} the store refused; "
            f"{counts.get('trimmed', 0)} sentences trimmed, {counts.get('split', 0)} split."
            + (f" {abandoned} tokens spent on requests that timed out." if abandoned else "")
        )

    async def _log(
        self, stem: str, asker: Asker, reconciler: Reconciler, result: DreamResult, ledger: Ledger
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
        if transcript.unreadable:  # marked processed, it would be archived unread
            log.warning("dream: session log %s holds no turn somnid can read: left", stem)
            ledger.add_left(stem)
            ledger.unreadable[stem] = file_mark(found.path)
            self.emit({"type": "log_left", "log": stem, "window": 0})
            return False
        user = log_user(transcript)
        windows = windows_of(stem, lines_of(transcript), self.settings.window_tokens)
        self.emit({"type": "log", "log": stem, "windows": len(windows)})
        has_agent = any(turn.role == "agent" for turn in transcript.turns)
        for window in windows:
            if self._spent(result):
                self.emit({"type": "log_left", "log": stem, "window": window.number})
                return False
            for part in by_speaker(window) if self.settings.by_speaker else [window]:
                proposals = await self._extract(part, len(windows), user, asker)
                if proposals is None:
                    ledger.failed[stem] = "the model's answer stayed unusable after a repair"
                    self.emit({"type": "log_left", "log": stem, "window": window.number})
                    return False
                if not await self._still_dreamable(stem):  # marked never to be dreamed
                    ledger.add_left(stem)  # meanwhile: nothing more of it is written, and
                    self.emit({"type": "log_left", "log": stem, "window": window.number})
                    return False  # the next sleep archives it unread
                result.stages += 1
                for proposal in proposals:
                    await self._consider(proposal, part, user, has_agent, reconciler, result)
        if not await self._still_dreamable(stem):
            ledger.add_left(stem)
            self.emit({"type": "log_left", "log": stem, "window": len(windows)})
            return False
        await self.tools.sessions.mark_processed(found.path)
        ledger.add_processed(stem)
        self.emit({"type": "processed", "log": stem})
        return True

    async def _still_dreamable(self, stem: str) -> bool:
        """The log is still pending and not marked ``dream: false`` (a person may mark its
        session while the model reads it: what it then answers is not written)."""
        pending = await self.tools.sessions.pending_logs()
        return any(p.path.stem == stem and p.dream for p in pending)

    async def _extract(
        self, window: Window, parts: int, user: str, asker: Asker
    ) -> list[Proposal] | None:
        spoken = sum(1 for line in window.lines if line.role != "tool")
        ids = window.ids
        lines = render(window, self.clock.tz)
        limit, floor = asked(spoken, window.speaker is not None, self.settings.max_candidates)
        if window.speaker is not None:
            prompt = prompts.focus(
                self.lang, part=window.number, parts=parts, speaker=window.speaker,
                others=list(window.others), lines=lines, limit=limit,
            )  # fmt: skip
            system = prompts.focus_system(self.lang)
        else:
            prompt = prompts.extraction(
                self.lang, part=window.number, parts=parts, user=user, lines=lines, limit=limit
            )
            system = prompts.extraction_system(self.lang)
        return await asker.ask(
            "extract",
            prompt,
            extraction_schema(ids, limit, floor, [window.speaker] if window.speaker else
                              speakers_of(window)),
            lambda raw: read_extraction(raw, ids, limit),
            system=system,
        )  # fmt: skip

    async def _consider(
        self,
        proposal: Proposal,
        window: Window,
        user: str,
        window_has_agent: bool,
        reconciler: Reconciler,
        result: DreamResult,
    ) -> None:
        result.count("proposed")
        anchored = self._anchored(proposal, window, speakers_of(window))
        reading = read(anchored, window, user, window_has_agent, self.clock.tz)
        result.count("trimmed", reading.trimmed)
        result.count("split", reading.split)
        if reading.refusal is not None:
            result.count(reading.refusal)
            self._emit(reading.refusal, proposal, proposal.kind, proposal.text, [])
            return
        for candidate in reading.candidates:
            if any(restates(candidate.text, seen) for seen in self._seen):
                outcome = "duplicate"
            else:
                outcome = await self._placed(reconciler, candidate, window_has_agent)
            result.count(outcome)
            self._emit(outcome, proposal, candidate.kind, candidate.text, candidate.about)
            if outcome in ("added", "merged", "superseded"):
                self._seen.append(candidate.text)

    @staticmethod
    async def _placed(reconciler: Reconciler, candidate: Candidate, window_has_agent: bool) -> str:
        """The candidate placed, or ``unwritable`` when the store refuses its one write (a
        name a person's folder holds, a case twin, a file broken by hand): that one memory
        is left, not the log, which would fail the same way in every later dream."""
        try:
            return await reconciler.place(candidate, window_has_agent)
        except (InvalidInput, Conflict, PreconditionFailed, BrokenFile, NotFound) as exc:
            log.warning("dream: a %s memory could not be written: %s", candidate.kind, exc)
            return "unwritable"

    def _emit(
        self, outcome: str, proposal: Proposal, kind: str, text: str, about: list[str]
    ) -> None:
        self.emit(
            {"type": "candidate", "kind": kind, "outcome": outcome, "text": text[:300],
             "about": about, "evidence": list(proposal.evidence), "who": proposal.who}
        )  # fmt: skip

    def _spent(self, result: DreamResult) -> bool:
        """The dream's token budget is used up: what is left waits for the next dream."""
        return result.tokens.get("total", 0) >= self.settings.token_budget

    @staticmethod
    def _anchored(proposal: Proposal, window: Window, speakers: list[str]) -> Proposal:
        """The proposal with the lines its text rests on as evidence: the cited ones, or
        their near neighbours when the cited ones do not say it (names never count)."""
        ids = window.ids
        texts = [line.text for line in window.lines]
        cited = [ids.index(line_id) for line_id in proposal.evidence]
        chosen = anchor(proposal.text, cited, texts, ignore=name_words(speakers))
        if chosen == cited:
            return proposal
        return Proposal(proposal.kind, proposal.text, tuple(ids[i] for i in chosen), proposal.who)
