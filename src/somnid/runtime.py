"""The composition root: opens every long-lived part in one order and closes them in reverse.

Start-up: lock the data dir -> lay out its folders -> open the store -> build the
services (crash leftovers are swept in the background, see RecallSystem). Shut-down
runs the same list backwards; one failing closer does not stop the others. Nothing here
knows about HTTP.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import Future
from dataclasses import dataclass, field

from somnid import __version__
from somnid.config import Settings
from somnid.dream.journal import reopenable_logs_of
from somnid.dream.llm.bridge import BridgeHub
from somnid.dream.llm.factory import build_backend
from somnid.dream.schedule import Activity, SleepScheduler
from somnid.dream.service import Dreamer
from somnid.dream.tools import DreamTools
from somnid.embed.base import Embedder
from somnid.history.service import History
from somnid.history.watching import follow
from somnid.memory.clock import Clock, SystemClock, resolve_timezone
from somnid.recall.assoc import Associator
from somnid.recall.system import RecallSystem
from somnid.services.conversation import search_conversation
from somnid.services.intentions import Intentions
from somnid.services.maintenance import Maintenance
from somnid.services.memories import MemoryService
from somnid.services.prompt import PromptBuilder
from somnid.services.recall_service import RecallService
from somnid.services.status import StatusService
from somnid.sessions.logs import SessionLogs
from somnid.sessions.service import SessionService
from somnid.store.atomic import ensure_dir
from somnid.store.layout import Layout
from somnid.store.lock import DataDirLock
from somnid.store.memories import MemoryStore
from somnid.sync.remote import machine_id
from somnid.sync.service import SyncService
from somnid.tools.memory_tools import MemoryTools, ToolContext
from somnid.tools.registry import ToolRegistry
from somnid.tools.seen import SeenTracker

log = logging.getLogger(__name__)

DREAM_NOW_WAIT_S = 60.0


class AwakeHooks:
    """What the memory tools need from the rest of the daemon: conversation logs, dreams."""

    def __init__(
        self,
        settings: Settings,
        layout: Layout,
        clock: Clock,
        sessions: SessionService,
        dreamer: Dreamer,
    ) -> None:
        self.settings = settings
        self.layout = layout
        self.clock = clock
        self.sessions = sessions
        self.dreamer = dreamer

    async def conversation(self, ctx: ToolContext, query: str, limit: int) -> str:
        return await asyncio.to_thread(
            search_conversation,
            self.layout,
            self.clock.tz,
            self.clock.now(),
            session_id=ctx.session_id,
            query=query,
            limit=limit,
            budget=self.settings.tools.conversation_char_budget,
            lang=self.settings.prompt_lang,
        )

    async def dream(self, ctx: ToolContext) -> str:
        """Close open logs and dream; answer with the result, or that it goes on behind."""
        closed = await self.sessions.close_all()
        started, task = self.dreamer.start("dream_now")
        if task is None:
            return "Could not start a dream."
        done, _ = await asyncio.wait({task}, timeout=DREAM_NOW_WAIT_S)
        prefix = f"Closed {len(closed)} open session log(s). "
        if not done:
            return prefix + "The dream goes on in the background; memory updates when it ends."
        result = task.result()
        if not started:
            return prefix + "A dream was already running; it has now finished."
        return prefix + (
            f"Dream {result.status} ({result.reason}): {len(result.processed)} logs processed, "
            f"{result.created} memories created, {result.updated} updated, "
            f"{result.archived} archived."
        )


@dataclass
class Runtime:
    settings: Settings
    clock: Clock
    layout: Layout
    lock: DataDirLock
    memories: MemoryService
    maintenance: Maintenance
    recall: RecallSystem
    recaller: RecallService  # the one door to recall, handed to routes, tools and dreams
    status: StatusService
    sessions: SessionService
    intentions: Intentions
    prompt: PromptBuilder
    seen: SeenTracker
    tools: ToolRegistry
    bridge: BridgeHub
    dreamer: Dreamer
    scheduler: SleepScheduler
    history: History
    sync: SyncService
    version: str = __version__
    _closers: list[Callable[[], Awaitable[None]]] = field(default_factory=list)

    @property
    def index(self) -> RecallSystem:
        """The index side of recall: ``sync()``, ``wait_idle()``, ``status()``."""
        return self.recall

    @property
    def assoc(self) -> Associator:
        return self.recall.assoc

    @classmethod
    @contextlib.asynccontextmanager
    async def open(
        cls,
        settings: Settings,
        *,
        clock: Clock | None = None,
        lock: DataDirLock | None = None,
        embedder: Embedder | None = None,
        model_load: Future[Embedder | None] | None = None,
    ) -> AsyncIterator[Runtime]:
        """Open everything; ``embedder`` replaces the configured one (tests, benchmarks);
        ``model_load`` is the configured one loading already (``load_early``)."""
        clock = clock or SystemClock(resolve_timezone(settings.timezone))
        machine = machine_id(settings.data_dir)
        # Synced, the files this machine adds carry its id (two machines, two names).
        layout = Layout(settings.data_dir, machine if settings.sync.remote else None)
        ensure_dir(layout.root)
        lock = lock or DataDirLock(layout.root)
        owns_lock = not lock.held
        if owns_lock:
            lock.acquire()
        try:
            for folder in layout.skeleton():
                ensure_dir(folder)
            store = MemoryStore(layout, clock)
            memories = MemoryService(store, clock)
            maintenance = Maintenance(
                memories,
                clock,
                retire_below=settings.memory.retire_below,
                intention_expiry_days=settings.memory.intention_expiry_days,
                upkeep_clock=layout.upkeep_clock,
            )
            recall = RecallSystem(settings, store, clock, embedder, model_load)
            memories.subscribe(recall.entry_changed)
            sessions = SessionService(SessionLogs(layout, clock, settings.capture))
            await sessions.start()
            recaller = RecallService(recall, sessions.archived_lines)
            status = StatusService(memories, recall, sessions)
            intentions = Intentions(memories, clock)
            prompt = PromptBuilder(store, intentions, clock, settings.inject, settings.prompt_lang)
            seen = SeenTracker(settings.assoc.max_sessions)
            bridge = BridgeHub(request_timeout_s=settings.dream.request_timeout_s)
            dream_tools = DreamTools(
                memories, recall, sessions, maintenance, layout, clock, settings.prompt_lang,
                intentions=intentions, recaller=recaller,
            )  # fmt: skip
            dreamer = Dreamer(
                settings.dream, settings.prompt_lang, clock, layout, sessions, maintenance,
                recall, dream_tools, build_backend(settings.dream, bridge),
            )  # fmt: skip
            await dreamer.recall_last()
            activity = Activity(clock)
            scheduler = SleepScheduler(settings.dream, clock, activity, dreamer, sessions)
            history = History.build(settings, layout, memories, clock, lambda: dreamer.sleeping)

            async def reopen(dream_id: str) -> list[str]:
                stems = await asyncio.to_thread(reopenable_logs_of, layout, dream_id)
                return await sessions.reopen_processed(stems)

            sync = SyncService(
                settings.sync, layout, memories, clock, history, machine,
                lambda: dreamer.sleeping,
            )  # fmt: skip
            history.reopen_logs = reopen
            history.forget_deleted = lambda: asyncio.to_thread(recall.forget_deleted)
            history.scrub_logs = sessions.scrub
            if history.committer is not None:
                memories.held_by = history.committer.git.under_way  # a person's merge waits
                store.history_holds = history.committer.holds  # a kind's folder moved away
                history.committer.away = store.away
                dreamer.on_finished.append(history.committer.dream_finished)
                if recall.watcher is not None:
                    follow(history.committer, recall.watcher)
            dreamer.before.append(sync.before_dream)
            dreamer.on_finished.append(sync.after_dream)
            awake = AwakeHooks(settings, layout, clock, sessions, dreamer)
            tools = ToolRegistry(
                MemoryTools(
                    memories, recaller, intentions, clock, seen, awake.conversation, awake.dream
                )
            )
            sessions.on_capture = tools.on_call = activity.touch  # agents at work, unreported
            runtime = cls(
                settings, clock, layout, lock, memories, maintenance, recall, recaller,
                status, sessions, intentions, prompt, seen, tools, bridge, dreamer, scheduler,
                history, sync,
            )  # fmt: skip
            # Health's counts, taken beside the model's load and history's first git status
            # (whose threads read the same folders first: at 100k a cold count took less
            # than half as long beside it as before it), so the first probe need not count.
            counted = asyncio.create_task(status.count_first())
            try:
                await recall.start()
                runtime._closers.append(recall.stop)
                await history.start()  # commits behind: a write never waits for its commit
                runtime._closers.append(history.stop)
                # Before history's last commit: writes whose callers were cancelled (a dream
                # cut short) finish and are announced, so the commit takes them as theirs.
                runtime._closers.append(memories.drain)
                await sync.start()  # after history: it syncs history's repository
                runtime._closers.append(sync.stop)
            finally:
                await counted
            # Closers run in reverse: the scheduler stops first, then the dream and the
            # bridge, then open session logs are finalised, and recall stops last.
            runtime._closers.append(sessions.stop)
            recaller.start()  # after the sessions' own start, and stopped before theirs
            runtime._closers.append(recaller.stop)
            runtime._closers.append(bridge.close)
            runtime._closers.append(dreamer.stop)
            scheduler.start()
            runtime._closers.append(scheduler.stop)
            log.info("somnid %s serving %s", __version__, layout.root)
            try:
                yield runtime
            finally:
                await runtime._close()
        finally:
            if owns_lock:
                lock.release()

    async def _close(self) -> None:
        for closer in reversed(self._closers):
            try:
                await closer()
            except Exception:
                log.exception("error while shutting down")
