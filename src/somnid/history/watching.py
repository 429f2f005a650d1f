"""History hears the file watcher: what it reports that no write of somnid's explains is a
hand edit, committed as one; so is what changed while no watch ran (its catch-up)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Protocol

from somnid.history.committer import Committer


class WatcherLike(Protocol):
    on_file: Callable[[Path], Awaitable[None]]
    on_folder: Callable[[Path], Awaitable[None]]
    on_restart: Callable[[], Awaitable[object]] | None


def follow(committer: Committer, watcher: WatcherLike) -> None:
    """Hear the watcher's hand edits too (after the index has reconciled them)."""
    on_file, on_folder, on_restart = watcher.on_file, watcher.on_folder, watcher.on_restart

    async def file_changed(path: Path) -> None:
        await on_file(path)
        committer.hand_edited()

    async def folder_changed(path: Path) -> None:
        await on_folder(path)
        committer.hand_edited()

    async def caught_up() -> None:  # edits made while no watch ran: a sweep takes them
        if on_restart is not None:
            await on_restart()
        committer.hand_edited()

    watcher.on_file, watcher.on_folder = file_changed, folder_changed
    watcher.on_restart = caught_up
