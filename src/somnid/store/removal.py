"""Removing an entry's path for good (a purge): its folder, or a profile's file, and
nothing else. The store calls it under its write lock."""

from __future__ import annotations

import errno
import logging
import os
import shutil
import stat
from pathlib import Path, PurePosixPath

from somnid.errors import BrokenFile, PreconditionFailed
from somnid.memory.entry import Entry
from somnid.memory.kinds import Kind
from somnid.store.atomic import ensure_dir, fsync_dir, storage_error
from somnid.store.layout import FOLDER_FILES, Layout
from somnid.store.safe import check_no_links, present

log = logging.getLogger(__name__)

Version = tuple[Kind, str, str | None]
"""A live entry as a client read it: kind, name, ETag (an If-Match); no ETag: that no live
entry has the name (If-None-Match: *)."""


def remove_entry_paths(layout: Layout, specs: list[str]) -> list[str]:
    """Delete each of ``specs`` (relative to the data dir) that holds an entry: an entry's
    folder with its entry file, or a profile's file. All or none: when one could not be
    deleted (a folder somnid may not change), nothing is, and StorageError says why. The
    ones deleted are returned."""
    paths = [(spec, path) for spec in specs if (path := _entry_at(layout, spec)) is not None]
    for _, path in paths:
        _check_removable(path)
    removed = []
    for spec, path in paths:
        try:
            if _is_folder(path):
                shutil.rmtree(path)
            else:
                path.unlink()
            fsync_dir(path.parent)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise storage_error(exc, path) from exc
        removed.append(spec)
    return removed


def set_aside(layout: Layout, rels: list[str], folder: str) -> list[tuple[str, str]]:
    """Copy each of ``rels`` (files relative to the data dir, under memory/ or skills/) to
    ``folder``/<its path> in the data dir, out of history's and sync's reach, before they
    are removed; (from, to) of each. One gone meanwhile is skipped; a link is copied as
    the link it is."""
    kept = []
    for rel in rels:
        source = layout.root / PurePosixPath(rel)
        target = layout.root / PurePosixPath(folder) / PurePosixPath(rel)
        if not os.path.lexists(source):
            continue
        check_no_links(layout.root, source.parent)
        ensure_dir(target.parent, within=layout.root)
        try:
            shutil.copy2(source, target, follow_symlinks=False)
            fsync_dir(target.parent)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise storage_error(exc, target) from exc
        kept.append((rel, str(layout.relative(target))))
    return kept


def _entry_at(layout: Layout, spec: str) -> Path | None:
    """``spec``'s path when an entry is there, reached without a link. Any other path
    (``memory/knowledge``, ``memory/../index``, from a purge line edited by hand; a folder
    of a person's files holding no entry file) is left as it is; one below a linked folder,
    which may lead out of the data dir, is BrokenFile before anything is removed."""
    path = layout.root / PurePosixPath(spec)
    if not layout.is_entry_path(path):
        log.warning("not removed, no entry's path: %r", spec)
        return None
    try:
        check_no_links(layout.root, path.parent)
    except BrokenFile as exc:  # all or none: a link on the way is a person's to fix first
        raise BrokenFile(f"{exc.detail}: nothing was removed") from None
    inside = [path / name for name in FOLDER_FILES] if _is_folder(path) else [path]
    if not any(present(file) for file in inside):
        return None
    return path


def _is_folder(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _raise(exc: OSError) -> None:
    raise storage_error(exc, Path(exc.filename or "."))


def _check_removable(path: Path) -> None:
    """StorageError (``read_only``) unless somnid may delete ``path``: write access to the
    folder holding it and, for a folder, to each folder within."""
    folders = [path.parent]
    if _is_folder(path):
        folders += [Path(top) for top, _dirs, _files in os.walk(path, onerror=_raise)]
    for folder in folders:
        if not os.access(folder, os.R_OK | os.W_OK | os.X_OK):
            denied = PermissionError(errno.EACCES, "permission denied", str(folder))
            raise storage_error(denied, folder)


def as_read(live: Entry | None, kind: Kind, name: str, etag: str | None) -> None:
    """PreconditionFailed unless the live entry is as the purge's caller read it: with that
    ETag (If-Match), or none at all where ``etag`` is None (If-None-Match: *)."""
    if (live.etag if live else None) == etag:
        return
    if live is None:
        raise PreconditionFailed(f"no live {kind.value} {name!r} to match")
    said = "changed since it was read" if etag else "is live: a purge would delete it too"
    raise PreconditionFailed(f"{kind.value} {name!r} {said}", etag=live.etag)
