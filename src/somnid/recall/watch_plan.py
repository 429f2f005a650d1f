"""What the file watcher watches, around folders it may not read.

The OS watch of a tree (inotify through ``watchfiles``) stops adding watches at the first
folder it may not enter (``chmod 000``, made with sudo), quietly with
``ignore_permission_denied``: every folder after it in the walk went unwatched. So the tree
is walked first. Without such a folder, each root is watched whole. With one, each folder on
the way to it is watched alone (its own files, and folders appearing in it), and every other
folder below those is watched whole.

A folder whose name is not UTF-8 (made by hand, or copied from another system) is left out
the same way: ``watchfiles`` cannot give its path to Python, and stopped the whole watch
for as long as it was there (a probe: hand edits everywhere went unseen). Its parent is
polled instead (``polled``): an OS watch reports even a read of the folder (git's status
reads it), a poll only a change. Renamed, it shows there, and the plan is made again.

A symbolic link to a folder is left out as well, its parent watched alone: the OS watch of
a tree follows links, so a link to ``/usr`` under ``memory/`` made 15k watches outside the
data dir (a probe), and somnid reads no entry through a link (it reports the link).
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
    unnamed: list[Path] = field(default_factory=list)
    """Folders left out for a name that is not UTF-8 (not looked at again: a rename is an
    event in the parent's watch)."""
    polled: list[Path] = field(default_factory=list)
    """Of ``alone``, the parents of ``unnamed``: polled, not watched by the OS."""
    linked: list[Path] = field(default_factory=list)
    """Symbolic links to folders: not followed (their parents are watched alone)."""


def watch_plan(roots: list[Path]) -> WatchPlan:
    """Walk ``roots`` (blocking: a walk of every folder, as the OS watch makes anyway)."""
    present = [root for root in roots if root.is_dir()]
    unreadable: list[Path] = []
    unnamed: list[Path] = []
    linked: list[Path] = []
    for root in present:
        for top, folders, _files in os.walk(root, onerror=lambda e: _note_shut(e, unreadable)):
            for name in [name for name in folders if not _utf8(name)]:
                folders.remove(name)
                unnamed.append(Path(top) / name)
            for name in [name for name in folders if os.path.islink(os.path.join(top, name))]:
                folders.remove(name)  # os.walk lists a link to a folder, and enters none
                linked.append(Path(top) / name)
    if not unreadable and not unnamed and not linked:
        return WatchPlan(whole=present)
    alone: set[Path] = set()
    for folder in (*unreadable, *unnamed, *linked):
        root = next(root for root in present if folder.is_relative_to(root))
        alone.update(p for p in folder.parents if p.is_relative_to(root))
    blocked = alone | set(unreadable) | set(unnamed) | set(linked)
    whole = [root for root in present if root not in blocked]  # a root with none of them
    for folder in sorted(alone):
        try:
            children = [Path(child.path) for child in os.scandir(folder) if _a_folder(child)]
        except OSError:
            continue  # gone since the walk: the next plan sees it
        whole.extend(child for child in children if child not in blocked)
    polled = sorted({folder.parent for folder in unnamed})
    alone -= set(polled)
    return WatchPlan(
        sorted(whole), sorted(alone), sorted(unreadable), sorted(unnamed), polled, sorted(linked)
    )


def _utf8(name: str) -> bool:
    try:
        name.encode("utf-8")  # a byte that is no UTF-8 is a lone surrogate here
    except UnicodeEncodeError:
        return False
    return True


def _a_folder(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _note_shut(exc: OSError, unreadable: list[Path]) -> None:
    """A walk's error: a folder it may not enter is left out; one gone meanwhile is not."""
    if isinstance(exc, PermissionError) and exc.filename:
        unreadable.append(Path(exc.filename))
