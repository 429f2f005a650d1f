"""The daily upkeep of memory: decay, retirement into the archive, intention expiry.

Runs once per maintenance pass (a dream always runs one; ``POST /v1/maintenance/decay`` runs
one on demand). Idempotent within a day. Broken files are skipped and reported, never touched.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from dataclasses import dataclass, field
from pathlib import Path

from somnid.errors import BeingWritten, BrokenFile, InvalidInput, NotFound
from somnid.memory.clock import Clock, local_date
from somnid.memory.entry import Entry, vitals_from_meta
from somnid.memory.intentions import intention_of
from somnid.memory.kinds import Kind
from somnid.memory.lifecycle import decay, should_retire
from somnid.services.memories import MemoryService
from somnid.store import frontmatter
from somnid.store.upkeep_clock import UpkeepClock

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Change:
    kind: Kind
    name: str
    score_before: float
    score_after: float


@dataclass(slots=True)
class DecayReport:
    day: dt.date
    decayed: list[Change] = field(default_factory=list)
    retired: list[Change] = field(default_factory=list)
    expired_intentions: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


class Maintenance:
    def __init__(
        self,
        memories: MemoryService,
        clock: Clock,
        *,
        retire_below: float,
        intention_expiry_days: int | None,
        upkeep_clock: Path | None = None,
    ) -> None:
        self.memories = memories
        self.clock = clock
        # Upkeep's own time (a jump of the wall clock is not days gone by), kept in the file.
        self.upkeep = UpkeepClock(clock, upkeep_clock) if upkeep_clock is not None else clock
        self.retire_below = retire_below
        self.intention_expiry_days = intention_expiry_days
        self._lock = asyncio.Lock()

    async def run(self, report: DecayReport | None = None) -> DecayReport:
        """One decay + retirement + expiry pass; passes never overlap. ``report`` (its day
        is set here) is filled as the pass goes: a pass cut short leaves in it what it did."""
        async with self._lock:
            now = self.upkeep.now()
            if report is None:
                report = DecayReport(day=now.date())
            report.day = now.date()
            memories = self.memories
            entries = await memories.scan((Kind.KNOWLEDGE, Kind.SKILL, Kind.EPISODE))
            for entry in entries:
                await self._decay_one(entry, now, report)
            if self.intention_expiry_days is not None:
                for entry in await memories.scan((Kind.INTENTION,)):
                    await self._maybe_expire(entry, now, report)
            report.skipped.extend(item.path for item in memories.broken())  # gone ones out
            return report

    async def _decay_one(self, entry: Entry, now: dt.datetime, report: DecayReport) -> None:
        tz = self.clock.tz
        before = entry.vitals(tz)
        salience = entry.text_field("salience") or None
        outcome: list[float] = []

        def apply(doc: frontmatter.Document) -> None:
            vitals = vitals_from_meta(doc.meta, tz)
            if vitals.last_decay is None:
                doc.meta["last_decay"] = now  # start the clock; nothing to catch up
                outcome.append(vitals.score)
                return
            after = decay(vitals, entry.kind, now.date(), salience)
            if after is not vitals:
                doc.meta["score"] = round(after.score, 4)
                doc.meta["last_decay"] = now
            outcome.append(after.score)

        def change() -> Change:
            score = outcome[-1] if outcome else before.score  # the last run is the one written
            return Change(entry.kind, entry.name, before.score, score)

        due = before.last_decay is None or decay(before, entry.kind, now.date(), salience)
        if due is before:
            updated = entry  # nothing to write (a write read and rendered each file: 7 ms)
        else:
            try:
                updated = await self.memories.mutate(
                    entry.kind, entry.name, apply, unless_etag=entry.etag, upkeep=True
                )
            except (BrokenFile, NotFound, BeingWritten):  # the next pass decays what was left
                return
            except InvalidInput as exc:
                return _skip(entry, report, exc)
            except asyncio.CancelledError:
                # Cut short (an agent starts): the write goes on to its end regardless
                # (MemoryService), so once it is in it counts like any other.
                await asyncio.shield(self.memories.drain())
                if change().score_after != before.score:
                    report.decayed.append(change())
                raise
            if change().score_after != before.score:
                report.decayed.append(change())
        if should_retire(updated.vitals(tz), entry.kind, self.retire_below):
            try:
                await self.memories.archive(entry.kind, entry.name, reason="retired", upkeep=True)
            except (BrokenFile, NotFound, BeingWritten):  # the next pass retires it
                return
            except InvalidInput as exc:
                return _skip(entry, report, exc)
            except asyncio.CancelledError:
                await asyncio.shield(self.memories.drain())
                if not await asyncio.shield(self.memories.exists(entry.kind, entry.name)):
                    report.retired.append(change())
                raise
            report.retired.append(change())

    async def _maybe_expire(self, entry: Entry, now: dt.datetime, report: DecayReport) -> None:
        """Expire an open intention only when its due date (or, without one, its creation) is
        more than ``intention_expiry_days`` in the past. A future due date never expires."""
        assert self.intention_expiry_days is not None
        tz = self.clock.tz
        if intention_of(entry, tz).status != "open":  # closed by hand: stays as it was
            return
        anchor = local_date(entry.field("due"), tz) or local_date(entry.meta.get("created"), tz)
        restored = local_date(entry.meta.get("restored_at"), tz)  # a person reopened it then
        if anchor is None or (restored is not None and restored > anchor):
            anchor = restored
        if anchor is None:
            return
        if (now.date() - anchor).days <= self.intention_expiry_days:
            return
        try:
            await self.memories.archive(entry.kind, entry.name, reason="expired", upkeep=True)
        except (BrokenFile, NotFound, BeingWritten):  # the next pass expires it
            return
        except InvalidInput as exc:
            return _skip(entry, report, exc)
        report.expired_intentions.append(entry.name)


def _skip(entry: Entry, report: DecayReport, why: InvalidInput) -> None:
    """An entry the pass cannot write (its file would not read back as written): left as it
    is and reported with the broken files; the pass goes on with the others."""
    log.warning("upkeep left %s as it is: %s", entry.path, why.detail)
    report.skipped.append(str(entry.path))
