"""Hand edits reach the index: a watcher over memory/ and skills/ feeds the reconciler.

A changed entry file is reconciled alone. A folder that moved, appeared or vanished (the OS
reports one event for the whole folder) has every entry inside it reconciled. start() / stop().
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path

import watchfiles

from somnid.store.atomic import TEMP_PREFIX
from somnid.store.layout import ENTRY_FILES

log = logging.getLogger(__name__)


def _relevant(change: watchfiles.Change, path: str) -> bool:
    name = Path(path).name
    return not name.startswith(TEMP_PREFIX) and not name.startswith(".somnid")


class Watcher:
    def __init__(
        self,
        roots: list[Path],
        on_file: Callable[[Path], Awaitable[None]],
        on_folder: Callable[[Path], Awaitable[None]],
    ) -> None:
        self.roots = roots
        self.on_file = on_file
        self.on_folder = on_folder
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
        roots = [str(root) for root in self.roots if root.is_dir()]
        if not roots:
            return
        try:
            async for changes in watchfiles.awatch(
                *roots,
                watch_filter=_relevant,
                stop_event=self._stop,
                debounce=300,
                step=50,
                recursive=True,
            ):
                try:
                    await self._handle(changes)
                except Exception as exc:  # a full disk, say: the next sync catches up
                    log.warning("could not index hand edits (they show after a sync): %s", exc)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("the file watcher stopped; hand edits show after the next sync")

    async def _handle(self, changes: set[tuple[watchfiles.Change, str]]) -> None:
        self.events += len(changes)
        files: set[Path] = set()
        folders: set[Path] = set()
        for _change, raw in changes:
            path = Path(raw)
            if path.name in ENTRY_FILES:
                files.add(path)
            elif path.suffix != ".md":
                folders.add(path)
        for folder in sorted(folders):
            await self.on_folder(folder)
        for path in sorted(files):
            await self.on_file(path)
