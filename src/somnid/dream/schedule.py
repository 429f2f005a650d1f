"""When to sleep: hosts report their agents' activity; a coalesced job decides.

A dream starts when no agent is running and either every known agent has been idle for
``dream.idle_ms``, or ``dream.max_interval_ms`` has passed since the last dream; and at
least ``dream.min_pending_logs`` logs wait; and the time is outside every quiet window.
Reports expire when a host goes quiet (it may have died; a dead host does not keep the
daemon awake forever). Open logs are closed only when a dream actually starts, so an idle
check never splits a live conversation. After a dream that made no progress the next try
waits ``idle_ms``, and twice as long after each further one, up to ``max_interval_ms``.
An agent turning ``running`` cancels the dream at once.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from apscheduler.schedulers.asyncio import AsyncIOScheduler

from somnid.config import DreamSettings
from somnid.dream.quiet import QuietWindow
from somnid.dream.service import Dreamer
from somnid.memory.clock import Clock
from somnid.sessions.service import SessionService

JOB_ID = "dream-tick"
TICK_SECONDS = 15
REPORT_TTL = dt.timedelta(minutes=30)


@dataclass(slots=True)
class Report:
    host_id: str
    agent_id: str
    status: str
    at: dt.datetime


class Activity:
    """The last report of every (host, agent), and when anything last ran."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.reports: dict[tuple[str, str], Report] = {}
        self.last_running = clock.now()  # a fresh daemon counts as just active

    def report(self, host_id: str, agent_id: str, status: str) -> None:
        now = self.clock.now()
        self.reports[(host_id, agent_id)] = Report(host_id, agent_id, status, now)
        if status == "running":
            self.last_running = now

    def touch(self) -> None:
        """An agent was at work without a report (it captured a turn, called a tool): the
        idle time counts from now, so no idle dream cuts a live conversation's log."""
        self.last_running = self.clock.now()

    def live(self) -> list[Report]:
        cutoff = self.clock.now() - REPORT_TTL
        for key in [k for k, r in self.reports.items() if r.at < cutoff]:
            del self.reports[key]
        return list(self.reports.values())

    def running(self) -> bool:
        return any(report.status == "running" for report in self.live())

    def idle_since(self) -> dt.datetime:
        """Since when no agent has run (the last running report, or the last report of an
        agent still running when it expired)."""
        return self.last_running


@dataclass(frozen=True, slots=True)
class Eligibility:
    eligible: bool
    reason: str
    next_eligible: dt.datetime | None


class SleepScheduler:
    def __init__(
        self,
        settings: DreamSettings,
        clock: Clock,
        activity: Activity,
        dreamer: Dreamer,
        sessions: SessionService,
    ) -> None:
        self.settings = settings
        self.clock = clock
        self.activity = activity
        self.dreamer = dreamer
        self.sessions = sessions
        self.windows = [QuietWindow.parse(text) for text in settings.quiet_windows]
        self.last_dream: dt.datetime | None = None
        self.not_before: dt.datetime | None = None
        self.fruitless = 0
        """Dreams in a row that consolidated nothing (an endpoint down, a log refused)."""
        self._scheduler: AsyncIOScheduler | None = None

    def start(self) -> None:
        if not self.settings.enabled:
            return
        scheduler = AsyncIOScheduler(
            job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": TICK_SECONDS},
            # The tick is an interval: no zone of the machine's is needed. Without one the
            # scheduler asked tzlocal, which refuses a POSIX TZ (``JST-9``, ``UTC0``, common in
            # containers), and the daemon did not start (a probe).
            timezone=dt.UTC,
        )
        scheduler.add_job(self.tick, "interval", seconds=TICK_SECONDS, id=JOB_ID)
        scheduler.start()
        self._scheduler = scheduler

    async def stop(self) -> None:
        if self._scheduler is not None:
            self._scheduler.shutdown(wait=False)
            self._scheduler = None

    async def on_report(self, host_id: str, agent_id: str, status: str) -> bool:
        """Record a report; an agent starting to run interrupts a dream. True if it did."""
        self.activity.report(host_id, agent_id, status)
        if status == "running" and self.dreamer.sleeping:
            return await self.dreamer.cancel()
        return False

    async def eligibility(self) -> Eligibility:
        now = self.clock.now()
        if not self.settings.enabled:
            return Eligibility(False, "disabled", None)
        if self.dreamer.sleeping:
            return Eligibility(False, "sleeping", None)
        if self.activity.running():
            return Eligibility(False, "an agent is running", None)
        if any(window.contains(now) for window in self.windows):
            return Eligibility(False, "quiet window", None)
        idle_at = self.activity.idle_since() + dt.timedelta(milliseconds=self.settings.idle_ms)
        due_at = idle_at
        if self.last_dream is not None:
            interval = dt.timedelta(milliseconds=self.settings.max_interval_ms)
            due_at = min(idle_at, self.last_dream + interval)
        if self.not_before is not None:
            due_at = max(due_at, self.not_before)
        if now < due_at:
            return Eligibility(False, "not idle long enough", due_at)
        pending, _ = await self.dreamer.waiting()  # not those dreams pass by (dream.passed_by)
        if pending < max(1, self.settings.min_pending_logs) and self.last_dream is not None:
            # Upkeep still runs at least every max_interval, logs or not.
            interval = dt.timedelta(milliseconds=self.settings.max_interval_ms)
            if now < self.last_dream + interval:
                return Eligibility(False, f"{pending} pending logs", self.last_dream + interval)
        return Eligibility(True, "idle", now)

    async def tick(self) -> None:
        verdict = await self.eligibility()
        if not verdict.eligible:
            return
        started = self.clock.now()
        result = await self.dreamer.run("idle")
        self.last_dream = started
        progressed = bool(result.processed) or result.status == "maintenance"
        if progressed and result.status != "interrupted":
            self.fruitless, self.not_before = 0, None
        else:  # each fruitless dream waits twice the one before, up to max_interval_ms
            self.fruitless += 1
            wait = self.settings.idle_ms * 2 ** min(self.fruitless - 1, 20)
            wait = min(wait, max(self.settings.idle_ms, self.settings.max_interval_ms))
            self.not_before = self.clock.now() + dt.timedelta(milliseconds=wait)
