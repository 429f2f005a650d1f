"""The folders a write must find, never make (:meth:`Layout.kept`), and when one is away.

memory/, skills/ and each kind's folder, made at start. One a person moves away while
somnid runs is not made again by a write: a new, nearly empty one in its place and history
recorded every entry of it as deleted (sync took that to every machine), and the folder put
back then landed inside the new one (a probe). A write there is refused (503
``folder_missing``), history commits nothing, health says so, until it is back.

Not away, and made again by the next write as at start: a kind's folder that history holds
no file of (git removes a folder with its last file: a sync that brought the archiving of
every entry of a kind), and every kind's folder of a top a person made again (a fresh start:
the top's identity, its inode, is not the one seen at start, or memory/ holds none of its
kinds' folders; the entries' removal is then committed as a hand edit, and history keeps
them).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from somnid.store.atomic import ensure_dir
from somnid.store.layout import Layout

_seen: dict[Path, tuple[int, int] | None] = {}
"""Each top's identity as somnid last made or found it (per data dir, this process)."""


def note_tops(layout: Layout) -> None:
    """Take each top's identity (at start, and once a fresh start is made)."""
    for top in layout.tops():
        _seen[top] = _identity(top)


def _identity(folder: Path) -> tuple[int, int] | None:
    try:
        info = os.stat(folder)
    except OSError:
        return None
    return info.st_dev, info.st_ino


def made_again(layout: Layout, top: Path) -> bool:
    """Whether ``top`` is there, but not the folder somnid saw: another identity, or none
    of its several kinds' folders left (a file system may give a folder removed and made
    again at once its old inode)."""
    now = _identity(top)
    if now is None:
        return False
    if _seen.get(top) != now:
        return True
    kinds = [folder for folder in layout.kept() if top in folder.parents]
    return len(kinds) > 1 and not any(os.path.lexists(folder) for folder in kinds)


def moved_away(layout: Layout, folder: Path, holds: Callable[[Path], bool]) -> bool:
    """Whether kept ``folder`` is away: nothing at it (a file there is a broken layout,
    reported as such); a top always, a kind's folder when its top is the one seen at start
    and history holds files of it."""
    if os.path.lexists(folder):
        return False
    if folder in layout.tops():
        return True
    top = layout.top_of(folder.parent)
    return top is not None and not made_again(layout, top) and holds(folder)


def away(layout: Layout, path: Path, holds: Callable[[Path], bool]) -> Path | None:
    """The outermost kept folder holding ``path`` that is away."""
    holding = [f for f in layout.kept() if path == f or f in path.parents]
    missing = [f for f in holding if moved_away(layout, f, holds)]
    return min(missing, key=lambda folder: len(folder.parts), default=None)


def kept_folder(layout: Layout, path: Path, holds: Callable[[Path], bool]) -> Path | None:
    """The innermost kept folder holding ``path``, made first when it may be: the write
    refuses one that is away."""
    kept = layout.top_of(path)
    if kept is None or kept in layout.tops() or os.path.lexists(kept):
        return kept
    top = layout.top_of(kept.parent)
    if top is None or not top.is_dir() or moved_away(layout, kept, holds):
        return kept
    if made_again(layout, top):  # a fresh start: every kind's folder, as a start makes them
        for folder in layout.kept():
            if top in folder.parents:
                ensure_dir(folder, within=top)
        note_tops(layout)
    else:
        ensure_dir(kept, within=top)
    return kept
