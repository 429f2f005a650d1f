"""Removing an entry's path for good (a purge): its folder, or a profile's file, and
nothing else. The store calls it under its write lock."""

from __future__ import annotations

import logging
import shutil
from pathlib import PurePosixPath

from somnid.errors import PreconditionFailed
from somnid.memory.entry import Entry
from somnid.memory.kinds import Kind
from somnid.store.atomic import fsync_dir, storage_error
from somnid.store.layout import Layout

log = logging.getLogger(__name__)


def remove_entry_path(layout: Layout, spec: str) -> bool:
    """Delete ``spec`` (relative to the data dir) where it is an entry's folder or a
    profile's file; whether something was removed. Any other path (``memory/knowledge``,
    ``memory/../index``, from a purge line edited by hand) is left as it is."""
    path = layout.root / PurePosixPath(spec)
    if not layout.is_entry_path(path):
        log.warning("not removed, no entry's path: %r", spec)
        return False
    try:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()
        else:
            return False
        fsync_dir(path.parent)
    except OSError as exc:
        raise storage_error(exc, path) from exc
    return True


def as_read(live: Entry | None, kind: Kind, name: str, etag: str | None) -> None:
    """PreconditionFailed unless the live entry is as the purge's caller read it: with that
    ETag (If-Match), or none at all where ``etag`` is None (If-None-Match: *)."""
    if (live.etag if live else None) == etag:
        return
    if live is None:
        raise PreconditionFailed(f"no live {kind.value} {name!r} to match")
    said = "changed since it was read" if etag else "is live: a purge would delete it too"
    raise PreconditionFailed(f"{kind.value} {name!r} {said}", etag=live.etag)
