"""The data dir is private: folders 0700, files 0600, whatever the umask.

Memories, session logs, the index and the token are one user's: no other local user may
read them. ``somnid serve`` sets the umask to 077 before it creates anything, and at start
takes group and other bits off whatever an older version, a copy or a hand edit left
looser (:func:`make_private`); ``somnid doctor`` lists such paths (:func:`loose_paths`).
Symbolic links are neither followed nor changed.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

PRIVATE_UMASK = 0o077
LOOSE_BITS = 0o077  # any group or other permission


def loose_paths(root: Path) -> list[Path]:
    """``root`` and every folder or file under it that group or others may use, top-down.

    One ``lstat`` per path and no object for a private one: the daemon walks the whole
    data dir before it listens, and the memory repo's ``.git`` alone holds a path per
    object (40k paths took 0.46 s through ``os.walk`` and ``Path``, 0.21 s this way)."""
    found: list[Path] = []
    if not root.is_dir():
        return found
    if _loose(root):
        found.append(root)
    folders = [str(root)]
    while folders:
        below: list[str] = []
        try:
            with os.scandir(folders.pop()) as listing:
                for item in listing:
                    try:
                        mode = item.stat(follow_symlinks=False).st_mode
                    except OSError:
                        continue  # vanished meanwhile
                    if stat.S_ISLNK(mode):
                        continue  # neither followed nor changed
                    if mode & LOOSE_BITS:
                        found.append(Path(item.path))
                    if stat.S_ISDIR(mode):
                        below.append(item.path)
        except OSError:
            continue  # unreadable or gone: doctor reports what it can read
        folders.extend(reversed(below))  # each folder's subfolders in listing order
    return found


def make_private(root: Path) -> list[Path]:
    """Take group and other bits off every path :func:`loose_paths` names; returns them."""
    repaired: list[Path] = []
    for path in loose_paths(root):
        try:
            mode = os.lstat(path).st_mode
            os.chmod(path, stat.S_IMODE(mode) & ~LOOSE_BITS)
        except OSError:
            continue  # vanished, or not ours: doctor still reports it
        repaired.append(path)
    return repaired


def _loose(path: Path) -> bool:
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return False
    if stat.S_ISLNK(mode):
        return False
    return bool(stat.S_IMODE(mode) & LOOSE_BITS)
