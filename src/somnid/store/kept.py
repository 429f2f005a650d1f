"""The folder a write must find, never make: see :meth:`Layout.kept`.

A kind's folder that history holds no file of is made again, as at start: git removes a
folder with its last file (a sync that brought the archiving of every entry of a kind), and
nothing of it can be recorded as deleted; so is one of a top a person made again empty (a
fresh start). One whose files history holds, missing beside the other kinds' folders, was
moved away by a person: a write there is refused (503 ``folder_missing``) until it is back.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from somnid.store.atomic import ensure_dir
from somnid.store.layout import Layout


def kept_folder(layout: Layout, path: Path, holds: Callable[[Path], bool]) -> Path | None:
    """The innermost kept folder holding ``path``, made first when it may be."""
    kept = layout.top_of(path)
    if kept is None or kept in layout.tops() or kept.is_dir() or not kept.parent.is_dir():
        return kept
    top = layout.top_of(kept.parent)
    if layout.moved_away(kept):
        if not holds(kept):
            ensure_dir(kept, within=top)
        return kept  # else refused by the write: the folder is away
    for folder in layout.kept():  # a fresh start makes every kind's folder, as a start does
        if top is not None and top in folder.parents:
            ensure_dir(folder, within=top)
    return kept
