"""What the file watcher watches, around folders it may not read.

The OS watch of a tree (inotify through ``watchfiles``) stops adding watches at the first
folder it may not enter (``chmod 000``, made with sudo), quietly with
``ignore_permission_denied``: every folder after it in the walk went unwatched. So the tree
is walked first. Without such a folder, each root is watched whole. With one, each folder on
the way to it is watched alone (its own files, and folders appearing in it), and every other
folder below those is watched whole.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True, slots=True)
class WatchPlan:
    whole: list[Path] = field(default_factory=list)
    """Folders watched with everything below them."""
    alone: list[Path] = field(default_factory=list)
    """Folders on the way to an unreadable one: watched without what is below them."""
    unreadable: list[Path] = field(default_factory=list)


def watch_plan(roots: list[Path]) -> WatchPlan:
    """Walk ``roots`` (blocking: a walk of every folder, as the OS watch makes anyway)."""
    present = [root for root in roots if root.is_dir()]
    unreadable: list[Path] = []
    for root in present:
        for _ in os.walk(root, onerror=lambda exc: _note_shut(exc, unreadable)):
            pass
    if not unreadable:
        return WatchPlan(whole=present)
    alone: set[Path] = set()
    for folder in unreadable:
        root = next(root for root in present if folder.is_relative_to(root))
        alone.update(p for p in folder.parents if p.is_relative_to(root))
    blocked = alone | set(unreadable)
    whole = [root for root in present if root not in blocked]  # a root with none of them
    for folder in sorted(alone):
        try:
            children = [Path(child.path) for child in os.scandir(folder) if _a_folder(child)]
        except OSError:
            continue  # gone since the walk: the next plan sees it
        whole.extend(child for child in children if child not in blocked)
    return WatchPlan(whole=sorted(whole), alone=sorted(alone), unreadable=sorted(unreadable))


def _a_folder(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _note_shut(exc: OSError, unreadable: list[Path]) -> None:
    """A walk's error: a folder it may not enter is left out; one gone meanwhile is not."""
    if isinstance(exc, PermissionError) and exc.filename:
        unreadable.append(Path(exc.filename))
