"""Durable file operations: a write is all or nothing, and survives a crash once acknowledged.

write: unique temp file in the target's folder -> write -> fsync -> rename -> fsync folder.
A crash at any point leaves either the old file or the new one, plus at most a temp file
whose name starts with ``.somnid-tmp-`` (removed by :func:`sweep_temp_files` at start-up).
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
from pathlib import Path

from somnid.errors import StorageError

TEMP_PREFIX = ".somnid-tmp-"


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def storage_error(exc: OSError, path: Path) -> StorageError:
    if exc.errno == errno.ENOSPC:
        return StorageError(f"no space left on the device holding {path}", code="disk_full")
    if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return StorageError(f"the data dir is not writable: {path}", code="read_only")
    return StorageError(f"could not write {path}: {exc.strerror or exc}")


def _write_all(fd: int, data: bytes) -> None:
    """Write every byte (os.write may write fewer), then fsync."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
    os.fsync(fd)


def append_durably(fd: int, data: bytes, size: int, path: Path) -> None:
    """Append all of ``data`` to ``fd`` (opened O_APPEND, ``size`` bytes long) and fsync;
    on failure cut the file back to ``size``, so a half-written line never stays."""
    try:
        _write_all(fd, data)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, size)
        raise storage_error(exc, path) from exc


def ensure_dir(path: Path, *, within: Path | None = None) -> None:
    """Create ``path`` and any missing parents, syncing each new folder into its parent.

    ``within`` (memory/ or skills/, an ancestor of ``path``) is never made again: one that is
    gone was moved or deleted by a person while somnid ran, and a write would begin a new,
    nearly empty memory in its place (history then recorded every entry as deleted)."""
    missing: list[Path] = []
    probe = path
    while not probe.exists():
        if probe == within:
            raise folder_missing(within)
        missing.append(probe)
        probe = probe.parent
    try:
        for folder in reversed(missing):
            with contextlib.suppress(FileExistsError):
                folder.mkdir(mode=0o700)
            fsync_dir(folder.parent)
    except OSError as exc:
        if within is not None and not within.is_dir():  # moved away meanwhile
            raise folder_missing(within) from exc
        raise storage_error(exc, path) from exc


def folder_missing(folder: Path) -> StorageError:
    return StorageError(
        f"{folder.name}/ is missing from the data dir ({folder}): moved or deleted while "
        "somnid runs. Nothing is written there nor committed to history until it is back; "
        "to start afresh, make the folder again, empty",
        code="folder_missing",
    )


def write_atomic(
    path: Path,
    data: bytes,
    *,
    exclusive: bool = False,
    mode: int = 0o600,
    make_dirs: bool = True,
    within: Path | None = None,
) -> None:
    """Replace ``path`` with ``data`` atomically and durably.

    ``exclusive`` refuses to replace an existing file (the caller holds the store lock, so
    checking then linking is race-free within the process; across processes the data-dir
    lock keeps us alone). Without ``make_dirs`` a folder that is not there is not made: a
    change to an entry a person removed meanwhile must not bring it back; ``within`` is never
    made (:func:`ensure_dir`).
    """
    if make_dirs:
        ensure_dir(path.parent, within=within)
    tmp = path.parent / f"{TEMP_PREFIX}{secrets.token_hex(8)}"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        try:
            _write_all(fd, data)
        finally:
            os.close(fd)
        if exclusive:
            # link() fails if the target exists: no window where another file is clobbered.
            os.link(tmp, path)
            os.unlink(tmp)
        else:
            os.replace(tmp, path)
        fsync_dir(path.parent)
    except FileExistsError:
        _discard(tmp)
        raise
    except OSError as exc:
        _discard(tmp)
        if within is not None and not within.is_dir():  # moved away meanwhile
            raise folder_missing(within) from exc
        raise storage_error(exc, path) from exc
    except BaseException:
        _discard(tmp)
        raise


def _discard(tmp: Path) -> None:
    with contextlib.suppress(OSError):
        tmp.unlink()


def move_atomic(source: Path, target: Path, *, within: Path | None = None) -> None:
    """Rename a file or folder; refuses to overwrite an existing target; ``within`` is never
    made (:func:`ensure_dir`)."""
    ensure_dir(target.parent, within=within)
    if target.exists():
        raise FileExistsError(str(target))
    try:
        os.rename(source, target)
        fsync_dir(target.parent)
        if source.parent != target.parent:
            fsync_dir(source.parent)
    except OSError as exc:
        raise storage_error(exc, target) from exc


def sweep_temp_files(root: Path, *, older_than: float | None = None) -> list[Path]:
    """Remove temp files a crash left behind; returns what was removed.

    ``older_than`` (a time.time() value) spares newer files, so a sweep may run while the
    daemon already writes: its own temp files are younger than its start."""
    removed: list[Path] = []
    if not root.exists():
        return removed
    for folder, _dirs, files in os.walk(root):
        for name in files:
            if not name.startswith(TEMP_PREFIX):
                continue
            tmp = Path(folder) / name
            with contextlib.suppress(OSError):
                if older_than is not None and tmp.stat().st_mtime >= older_than:
                    continue
                tmp.unlink()
                removed.append(tmp)
    return removed
