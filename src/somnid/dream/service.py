"""Sleep: one dream at a time, over the oldest pending session logs.

A dream closes open logs first, archives the logs marked ``dream: false`` unread (status
``processed``, ``dream_skipped: true``), consolidates the others (``dream.mode``: the
staged pipeline somnid drives, :mod:`somnid.dream.pipeline`, or the agentic tool loop,
:mod:`somnid.dream.agentic`), always runs decay and retirement once, writes its journal
itself, and lets the index catch up. A dream that leaves every log it was given pending is
``interrupted``, never ``deep_sleep``. Without a reachable LLM it still sleeps: a
maintenance sleep runs decay, retirement and index upkeep (and archives ``dream: false``
logs) and leaves the other logs pending.
Cancelling (a user turn starts) stops it within a second, aborting an LLM call in flight;
logs already marked processed stay processed, the rest wait for the next dream.

Result statuses: ``deep_sleep`` (a dream ran), ``maintenance`` (no LLM: upkeep only),
``skipped`` (nothing to do, or one is already running), ``interrupted``, ``error``.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import datetime as dt
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from somnid.config import DreamSettings
from somnid.dream.agentic import AgenticDream
from somnid.dream.journal import JournalEntry, last_result, write_journal
from somnid.dream.ledger import Ledger
from somnid.dream.llm.answer_json import cleaned
from somnid.dream.llm.base import ChatBackend, LLMError
from somnid.dream.passed_by import Mark, PassedBy
from somnid.dream.pipeline.runner import PipelineDream
from somnid.dream.result import DreamResult
from somnid.dream.tools import DreamTools
from somnid.errors import StorageError, Unavailable
from somnid.memory.clock import Clock
from somnid.memory.scrub import scrub
from somnid.memory.text import model_text, one_line
from somnid.provenance import DREAM, DreamRecord, acting
from somnid.recall.system import RecallSystem
from somnid.services.maintenance import DecayReport, Maintenance
from somnid.sessions.records import PendingLog
from somnid.sessions.service import SessionService
from somnid.store.layout import Layout

log = logging.getLogger(__name__)

MAX_EVENTS_QUEUED = 1000


class Events:
    """Fan-out of dream events to Server-Sent-Events listeners."""

    def __init__(self) -> None:
        self._queues: set[asyncio.Queue[dict[str, Any]]] = set()
        self.closed = False

    def publish(self, event: dict[str, Any]) -> None:
        """Hand ``event`` to every listener, its text as UTF-8 carries it (a lone surrogate
        a model wrote ended every stream with an encoding error)."""
        event = cleaned(event)
        for queue in list(self._queues):
            with contextlib.suppress(asyncio.QueueFull):
                queue.put_nowait(event)

    def close(self) -> None:
        """End every stream (shutdown): listeners get a final ``closing`` event."""
        self.closed = True
        for queue in list(self._queues):
            while True:  # make room: the last word must get through
                try:
                    queue.put_nowait({"type": "closing"})
                    break
                except asyncio.QueueFull:
                    queue.get_nowait()

    @contextlib.asynccontextmanager
    async def subscribe(self) -> AsyncIterator[asyncio.Queue[dict[str, Any]]]:
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue(MAX_EVENTS_QUEUED)
        self._queues.add(queue)
        try:
            yield queue
        finally:
            self._queues.discard(queue)


DREAM_STATUSES = ("deep_sleep", "maintenance", "skipped", "interrupted", "error")
TOKEN_KINDS = ("prompt", "completion", "cached")


@dataclass(slots=True)
class DreamStats:
    """Totals since start: sleeps by result status, and the tokens dreams used (``cached``
    tokens are part of ``prompt``)."""

    runs: collections.Counter[str] = field(
        default_factory=lambda: collections.Counter(dict.fromkeys(DREAM_STATUSES, 0))
    )
    tokens: collections.Counter[str] = field(
        default_factory=lambda: collections.Counter(dict.fromkeys(TOKEN_KINDS, 0))
    )

    def add(self, result: DreamResult) -> None:
        self.runs[result.status] += 1
        for kind in TOKEN_KINDS:
            self.tokens[kind] += result.tokens.get(kind, 0)


__all__ = ["DreamResult", "DreamStats", "Dreamer", "Events"]


class Dreamer:
    def __init__(
        self,
        settings: DreamSettings,
        lang: str,
        clock: Clock,
        layout: Layout,
        sessions: SessionService,
        maintenance: Maintenance,
        recall: RecallSystem,
        tools: DreamTools,
        backend: ChatBackend | None,
    ) -> None:
        self.settings = settings
        self.lang = lang
        self.clock = clock
        self.layout = layout
        self.sessions = sessions
        self.maintenance = maintenance
        self.recall = recall
        self.tools = tools
        self.backend = backend
        self.events = Events()
        self.stats = DreamStats()
        self.last: DreamResult | None = None
        self._task: asyncio.Task[DreamResult] | None = None
        self._current: DreamResult | None = None
        self._ledger: Ledger | None = None
        self.passed_by = PassedBy()
        self._upkeep: DecayReport | None = None  # a sleep's pass without a dream's ledger
        self._probed: str | None = None  # why the last probe failed ("" once it worked)
        # Told of each finished dream, after its journal (the history commits it).
        self.on_finished: list[Callable[[DreamRecord], Awaitable[None]]] = []
        self.before: list[Callable[[], Awaitable[None]]] = []
        """Run before a dream reads anything (sync: pull what other machines learnt)."""

    @property
    def sleeping(self) -> bool:
        return self._task is not None and not self._task.done()

    def llm_status(self) -> tuple[str, str | None]:
        """The LLM as last seen, without asking it (for health): ``off``, ``unavailable``
        (not configured or connected, or the last probe failed) or ``ok``."""
        if self.backend is None:
            return "off", "dream.llm = off: sleep runs maintenance only"
        if not self.backend.available():
            return "unavailable", f"{self.backend.name}: not connected"
        if self._probed:
            return "unavailable", f"{self.backend.name}: {self._probed}"
        return "ok", self.backend.name

    async def probe_llm(self) -> tuple[str, str | None]:
        """The LLM as it answers now: a real probe (cached for a few seconds)."""
        if self.backend is not None and self.backend.available():
            try:
                self._probed = await self.backend.probe() or ""
            except Exception as exc:  # a probe never takes a status page down
                self._probed = f"probe failed: {type(exc).__name__}"
        return self.llm_status()

    async def recall_last(self) -> None:
        """At start: the last dream from its journal, so the status shows it after a restart."""
        if self.last is None:
            self.last = await asyncio.to_thread(last_result, self.layout)

    def start(self, trigger: str) -> tuple[bool, asyncio.Task[DreamResult] | None]:
        """Start a dream in the background; (False, running task) if one is running."""
        if self._task is not None and not self._task.done():
            return False, self._task
        self._task = asyncio.create_task(self._dream(trigger), name="somnid-dream")
        return True, self._task

    async def run(self, trigger: str) -> DreamResult:
        started, task = self.start(trigger)
        if not started:
            return DreamResult("skipped", "already_running", trigger)
        assert task is not None
        return await self.outcome(task, trigger)

    async def outcome(self, task: asyncio.Task[DreamResult], trigger: str) -> DreamResult:
        """The result of a dream's ``task``, waited for without cancelling it; a dream
        cancelled before it began (a cancel right after the start) is ``interrupted``, not
        an error of the caller's (it answered 503 "shutting down")."""
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            if not task.cancelled():
                raise  # the caller itself is cancelled
            return DreamResult("interrupted", "cancelled", trigger, mode=self.settings.mode)

    async def cancel(self) -> bool:
        """Interrupt the running dream; returns once it has stopped (within a second)."""
        task = self._task
        if task is None or task.done():
            return False
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await asyncio.wait_for(asyncio.shield(task), timeout=5)
        return True

    async def stop(self) -> None:
        await self.cancel()

    async def _dream(self, trigger: str) -> DreamResult:
        # Every write of the dream's task is the dream's, whoever started it (the task
        # would otherwise inherit the actor of the request that did).
        for hook in self.before:
            await hook()
        with acting(DREAM):
            return await self._dream_as_dreamer(trigger)

    async def _dream_as_dreamer(self, trigger: str) -> DreamResult:
        trigger = one_line(model_text(trigger))  # a line of the commit's message, as is reason
        now = self.clock.now()
        began = time.monotonic()
        result = DreamResult(
            "skipped", trigger=trigger, mode=self.settings.mode, started=now.isoformat()
        )
        self._current = result
        self.events.publish({"type": "started", "trigger": trigger, "at": now.isoformat()})
        try:
            await self.sessions.close_all()  # a dream never reads a log still being written
            pending = [p for p in await self.sessions.pending_logs() if not p.open]
            await self._skip_no_dream([p for p in pending if not p.dream], result)
            dreamable = [p for p in pending if p.dream]
            # A log no turn of which could be read, or one the model failed at in several
            # dreams, waits for a person: passed by until it changes (dream.passed_by).
            passed = await asyncio.to_thread(self.passed_by.passed, [p.path for p in dreamable])
            result.passed_by = passed
            dreamable = [p for p in dreamable if p.path.stem not in passed]
            result.logs = [p.path.stem for p in dreamable[: self.settings.max_logs]]
            status, reason = await self.probe_llm() if result.logs else self.llm_status()
            if status != "ok":
                await self._maintenance(result, f"no_llm: {reason}")
            elif not result.logs:
                await self._maintenance(result, "no_pending_logs")
                result.status = "skipped"
            else:
                # Each log as the dream reads it: a failure counts for that version.
                given = {p.path.stem: p.path for p in dreamable if p.path.stem in result.logs}
                await self._deep_sleep(result, await asyncio.to_thread(PassedBy.marks, given))
        except asyncio.CancelledError:
            result.status, result.reason = "interrupted", result.reason or "cancelled"
        except LLMError as exc:
            result.status, result.reason = "interrupted", f"llm: {exc}"
        except (StorageError, Unavailable) as exc:
            # A full or read-only disk, a person's git merge waiting in the data dir: what
            # was written is whole, the rest waits (its logs stay pending).
            log.warning("dream interrupted: %s", exc.detail)
            result.status, result.reason = "interrupted", f"storage: {exc.code}: {exc.detail}"
        except Exception as exc:  # a dream must never take the daemon down
            log.exception("dream failed")
            result.status, result.reason = "error", f"{type(exc).__name__}: {exc}"
        finally:
            # The reason may quote an endpoint's error (which may echo the key sent) or a
            # model's words; it goes to the journal, the status and history's message.
            result.reason = one_line(model_text(scrub(result.reason)))
            result.finished = self.clock.now().isoformat()
            result.seconds = round(time.monotonic() - began, 3)
            await self._finished(result)
        return result

    async def _finished(self, result: DreamResult) -> None:
        """Finish the dream (journal, history's commit, status, the ``finished`` event) to
        the end, whatever is cancelled meanwhile: a second cancel that came while the first
        was being handled lost the result, the event and the commit."""
        finishing = asyncio.ensure_future(self._finish(result))
        while not finishing.done():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(finishing)
        finishing.result()

    async def _skip_no_dream(self, logs: list[PendingLog], result: DreamResult) -> None:
        """Archive the logs marked ``dream: false`` as processed without reading them, the
        way a dream marks a log it consolidated (with ``dream_skipped: true``). One that
        cannot be moved stays pending, and is still never shown to a model."""
        for pending in logs:
            try:
                await self.sessions.mark_processed(pending.path, skipped=True)
            except Exception:
                log.exception("could not archive session log %s (dream: false)", pending.path.name)
                continue
            result.skipped_logs.append(pending.path.stem)

    async def _maintenance(self, result: DreamResult, reason: str) -> None:
        report = self._upkeep = DecayReport(day=self.clock.now().date())
        try:
            await self.maintenance.run(report)
        finally:  # cut short (an agent starts): the journal and commit say what it did
            self._count_decay(result, report)
        result.status, result.reason = "maintenance", reason  # ``_finish`` syncs once

    def _count_decay(self, result: DreamResult, report: DecayReport) -> None:
        result.decayed = len(report.decayed)
        result.retired = len(report.retired)

    async def _deep_sleep(self, result: DreamResult, marks: dict[str, Mark]) -> None:
        assert self.backend is not None
        ledger = Ledger()
        self._ledger = ledger
        try:
            if self.settings.mode == "agentic":
                agentic = AgenticDream(
                    self.settings, self.lang, self.clock, self.layout, self.tools,
                    self.backend, self.events.publish,
                )  # fmt: skip
                await agentic.run(result, ledger)
            else:
                pipeline = PipelineDream(
                    self.settings, self.lang, self.clock, self.tools, self.backend,
                    self.events.publish,
                )  # fmt: skip
                await pipeline.run(result, ledger)
        finally:
            failed, done = ledger.failed, bool(ledger.processed_logs)
            self.passed_by.note(ledger.unreadable, failed, marks, consolidated=done)
            # Decay and retirement run once per dream, whether or not the model asked.
            if ledger.decay is None:
                with contextlib.suppress(Exception):
                    ledger.decay = await asyncio.shield(self.maintenance.run())
        if result.status == "deep_sleep" and not ledger.processed_logs:
            # Nothing the dream was given got consolidated: that is no deep sleep.
            result.status = "interrupted"
            result.reason = f"no_log_processed: {result.reason or 'the model gave nothing usable'}"

    async def waiting(self) -> tuple[int, dict[str, str]]:
        """How many pending logs a dream would take or archive (all but those it passes
        by), and those it passes by, with why."""
        pending = await self.sessions.pending_logs()
        dreamable = [p.path for p in pending if p.dream and not p.open]
        passed = await asyncio.to_thread(self.passed_by.passed, dreamable)
        return sum(1 for p in pending if p.path.stem not in passed), passed

    async def _finish(self, result: DreamResult) -> None:
        ledger = self._ledger
        if ledger is not None:
            result.processed = list(ledger.processed_logs)
            result.created = len(ledger.created)
            result.updated = len(ledger.updated)
            result.archived = len(ledger.archived)
            for outcome, lines in (
                ("profile", ledger.profiles),
                ("profile_refused", ledger.refused_profiles),
            ):
                if lines:  # identity changes, and those the gate refused (profile_gate)
                    result.candidates[outcome] = len(lines)
            if ledger.decay is not None:
                self._count_decay(result, ledger.decay)
        with contextlib.suppress(Exception):
            result.pending_after = sum(1 for p in await self.sessions.pending_logs() if p.dreamable)
        journaled = result.status != "skipped" or bool(result.skipped_logs)
        if journaled:
            try:
                path = await asyncio.shield(asyncio.to_thread(self._write_journal, result, ledger))
                result.journal = str(self.layout.relative(path))
            except Exception:
                log.exception("could not write the dream journal")
        # History takes the journal now, with the dream's writes: in the sync below, a
        # sweep for hand edits would take it for one.
        for hook in self.on_finished:  # history: one commit for the dream
            with contextlib.suppress(Exception):
                await hook(result.record())
        # (A sleep "skipped" for want of logs still ran its upkeep pass.)
        if (journaled or self._upkeep is not None) and result.reason != "cancelled":
            # One full sync, a safety net (12 s at 100k). A cut-short dream skips it: an
            # agent is starting, or the daemon stops. Every write of the dream reached the
            # index as it was made; the next dream's sync, or the next start's, is the net.
            with contextlib.suppress(Exception):
                await asyncio.shield(self.recall.sync())
        self._ledger = self._upkeep = None
        self.stats.add(result)
        self.last = result
        self._current = None
        self.events.publish({"type": "finished", "status": result.status, "reason": result.reason})
        log.info(
            "dream %s (%s): %d logs processed", result.status, result.reason, len(result.processed)
        )

    def _write_journal(self, result: DreamResult, ledger: Ledger | None) -> Path:
        entry = JournalEntry(
            trigger=result.trigger,
            status=result.status,
            started=dt.datetime.fromisoformat(result.started)
            if result.started
            else self.clock.now(),
            finished=self.clock.now(),
            processed_logs=list(result.processed),
            skipped_logs=list(result.skipped_logs),
            passed_by=[f"{stem}: {why}" for stem, why in result.passed_by.items()],
            tokens=dict(result.tokens),
            iterations=result.iterations,
            tool_calls=result.tool_calls,
            mode=result.mode,
            llm_calls=result.llm_calls,
            stages=result.stages,
            candidates=dict(result.candidates),
            seconds=result.seconds,
            pending_after=result.pending_after,
            reason=result.reason,
            summary=result.summary,
        )
        if ledger is not None:
            entry.created = [f"{kind} {name} ({path})" for kind, name, path in ledger.created]
            entry.updated = [f"{kind} {name} ({path})" for kind, name, path in ledger.updated]
            entry.archived = [f"{kind} {name} ({path})" for kind, name, path in ledger.archived]
            entry.profiles = list(ledger.profiles)
            entry.refused_profiles = list(ledger.refused_profiles)
            entry.notes = "\n\n".join(ledger.notes)
        decay = ledger.decay if ledger is not None and ledger.decay else self._upkeep
        if decay is not None:  # a sleep without a model wrote "0 entries decayed" here
            entry.decayed = len(decay.decayed)
            entry.retired = [f"{c.kind.value} {c.name}" for c in decay.retired]
        return write_journal(self.layout, entry)

    def status(self) -> dict[str, Any]:
        current = self._current
        return {
            "sleeping": self.sleeping,
            "trigger": current.trigger if current else None,
            "since": current.started if current else None,
        }
