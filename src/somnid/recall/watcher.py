"""Hand edits reach the index: a watcher over memory/ and skills/ feeds the reconciler.

A changed entry file is reconciled alone. A folder that moved, appeared or vanished (the OS
reports one event for the whole folder) has every entry inside it reconciled. start() / stop().

A folder the daemon may not read (``chmod 000``, made with sudo) is left out of the watch
(the store reports it broken); before, it stopped the watcher for good at the next start,
and hand edits everywhere went unseen with health "ok". Should the watcher stop for another
reason (the inotify watch limit, say), it says so in ``failure`` (health shows it) and starts
again after a pause that doubles up to a minute, then ``on_restart`` catches up with the
edits made meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Awaitable, Callable
from pathlib import Path

import watchfiles

from somnid.recall.watch_plan import watch_plan
from somnid.store.atomic import TEMP_PREFIX
from somnid.store.layout import ENTRY_FILES
from somnid.store.safe import shut

log = logging.getLogger(__name__)

RESTART_FIRST_S = 1.0
RESTART_MAX_S = 60.0
IDLE_YIELD_MS = 5000
POLL_MS = 1000  # how often a folder the OS cannot watch for somnid is looked at
REPLAN_S = 60.0  # with a folder left out: how often to look whether it is readable now


def _any_folder(paths: list[str]) -> bool:
    return any(os.path.isdir(path) for path in paths)


def _any_opened(folders: list[Path]) -> bool:
    """Whether a folder left out as unreadable may be read now (or is gone)."""
    return not all(shut(folder) for folder in folders)


async def _first(*events: asyncio.Event) -> None:
    """Until one of ``events`` is set."""
    waits = [asyncio.ensure_future(event.wait()) for event in events]
    try:
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for wait in waits:
            wait.cancel()


def _relevant(change: watchfiles.Change, path: str) -> bool:
    name = Path(path).name
    return not name.startswith(TEMP_PREFIX) and not name.startswith(".somnid")


class Watcher:
    def __init__(
        self,
        roots: list[Path],
        on_file: Callable[[Path], Awaitable[None]],
        on_folder: Callable[[Path], Awaitable[None]],
        on_restart: Callable[[], Awaitable[object]] | None = None,
    ) -> None:
        self.roots = roots
        self.on_file = on_file
        self.on_folder = on_folder
        self.on_restart = on_restart
        self.failure: str | None = None
        """Why the watcher stopped, until it runs again."""
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.events = 0

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="somnid-watcher")

    async def stop(self) -> None:
        self._stop.set()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _run(self) -> None:
        delay, again, vanished = RESTART_FIRST_S, False, False
        while not self._stop.is_set():
            try:
                if await self._watch(again):
                    again, vanished = True, False  # the folders changed: watch them anew
                    continue
                return  # stopped
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                while isinstance(exc, ExceptionGroup):  # from a round of several watches
                    exc = exc.exceptions[0]
                if isinstance(exc, FileNotFoundError) and not vanished:
                    again = vanished = True  # a folder of the plan went before its watch
                    continue
                if self.failure is None:  # it ran since the last stop: back-off anew
                    delay = RESTART_FIRST_S
                self.failure = f"the file watcher stopped ({exc}); starting it again"
                log.warning("%s in %.0f s; hand edits show after that", self.failure, delay)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), delay)
                return
            delay, again = min(RESTART_MAX_S, delay * 2), True

    async def _watch(self, again: bool = False) -> bool:
        """One round of watching, until stopped (False) or until the folders to watch are
        to be planned again (True): a folder appeared beside an unreadable one, or one that
        was unreadable may be read now. A round planned ``again`` catches up, once its
        watches are set up, with what changed while there were none (a sync)."""
        plan = await asyncio.to_thread(watch_plan, self.roots)
        if not plan.whole and not plan.alone and not plan.polled:
            self.failure = None
            return False
        if plan.unreadable:
            shown = ", ".join(str(folder) for folder in plan.unreadable[:3])
            log.warning("the file watcher leaves out folders it may not read: %s", shown)
        if plan.unnamed:
            shown = ", ".join(repr(str(folder)) for folder in plan.unnamed[:3])
            log.warning("the file watcher leaves out folders whose names are not UTF-8: %s", shown)
        done = asyncio.Event()  # this round's end
        replan = False

        async def follow(paths: list[Path], recursive: bool, polled: bool = False) -> None:
            nonlocal replan
            async for changes in watchfiles.awatch(
                *paths,
                watch_filter=_relevant,
                stop_event=done,
                debounce=300,
                step=50,
                recursive=recursive,
                rust_timeout=IDLE_YIELD_MS,
                yield_on_timeout=True,  # an empty set now and then: the watch runs
                force_polling=polled,
                poll_delay_ms=POLL_MS,
            ):
                self.failure = None
                if not changes:
                    continue
                added = [path for c, path in changes if c is watchfiles.Change.added]
                if not recursive and added and await asyncio.to_thread(_any_folder, added):
                    replan = True  # a new folder beside an unreadable one: watch it whole
                try:
                    await self._handle(changes)
                except Exception as exc:  # a full disk, say: the next sync catches up
                    log.warning("could not index hand edits (they show after a sync): %s", exc)
                if replan:
                    done.set()

        async def until_done() -> None:
            nonlocal replan
            while not done.is_set() and not self._stop.is_set():
                wait = REPLAN_S if plan.unreadable else None
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(_first(self._stop, done), wait)
                if plan.unreadable:
                    opened = await asyncio.to_thread(_any_opened, plan.unreadable)
                    if opened:
                        replan = True
                        break
            replan = replan and not self._stop.is_set()
            done.set()

        async with asyncio.TaskGroup() as group:
            group.create_task(until_done())
            if plan.whole:
                group.create_task(follow(plan.whole, True))
            if plan.alone:
                group.create_task(follow(plan.alone, False))
            if plan.polled:
                group.create_task(follow(plan.polled, False, polled=True))
            if again:
                group.create_task(self._catch_up())
        return replan and not self._stop.is_set()

    async def _catch_up(self) -> None:
        """What changed between two rounds' watches: the new ones are set up in their first
        steps, which run before this one (tasks run in the order they were made)."""
        await asyncio.sleep(0)
        if self.on_restart is not None:
            try:
                await self.on_restart()
            except Exception as exc:  # the sync says its own failure
                log.warning("could not catch up with hand edits: %s", exc)

    async def _handle(self, changes: set[tuple[watchfiles.Change, str]]) -> None:
        self.events += len(changes)
        files: set[Path] = set()
        folders: set[Path] = set()
        for _change, raw in changes:
            path = Path(raw)
            if path.name in ENTRY_FILES:
                files.add(path)
            elif _a_folder_s_change(path):
                folders.add(path)
        for folder in sorted(folders):
            await self.on_folder(folder)
        for path in sorted(files):
            await self.on_file(path)


def _a_folder_s_change(path: Path) -> bool:
    """Whether a change at ``path`` (no entry file) may be an entry folder's: an entry's
    folder may be named ``notes.md``, moved or gone; a note beside an entry file, or a
    Markdown file appended to (a session log), is none."""
    return path.suffix != ".md" or not os.path.isfile(path)
