"""Durable file operations: a write is all or nothing, and survives a crash once acknowledged.

write: unique temp file in the target's folder -> write -> fsync -> rename -> fsync folder.
A crash at any point leaves either the old file or the new one, plus at most a temp file
whose name starts with ``.somnid-tmp-`` (removed by :func:`sweep_temp_files` at start-up).

A write that changes a file somnid read first (``expected``) replaces only the version it
read. A person's editor may save (a rename of its own) while the new bytes are written and
synced: a plain rename would then put back the version before their save, and their words
would be gone. On Linux the two files are exchanged in one step (``renameat2`` with
``RENAME_EXCHANGE``) and the one taken out is looked at: not the version read, it is put
back and nothing is written. Elsewhere the file is looked at just before the rename.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import logging
import os
import secrets
from collections.abc import Callable
from pathlib import Path

from somnid.errors import StorageError

log = logging.getLogger(__name__)

TEMP_PREFIX = ".somnid-tmp-"
FileVersion = tuple[int, int, int]
"""A file's inode, size and modification time (ns): a save by any editor changes one."""
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2
_NO_EXCHANGE = (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EXDEV)


class Superseded(Exception):
    """The file changed or went after it was read; nothing was written."""


def version_of(info: os.stat_result) -> FileVersion:
    return (info.st_ino, info.st_size, info.st_mtime_ns)


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def storage_error(exc: OSError, path: Path) -> StorageError:
    if exc.errno == errno.ENOSPC:
        error = StorageError(f"no space left on the device holding {path}", code="disk_full")
    elif exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        error = StorageError(f"the data dir is not writable: {path}", code="read_only")
    else:
        error = StorageError(f"could not write {path}: {exc.strerror or exc}")
    error.where = path
    return error


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
    expected: FileVersion | None = None,
) -> None:
    """Replace ``path`` with ``data`` atomically and durably.

    ``expected``: only the file of that version is replaced; Superseded if it is not there
    (changed or removed since it was read).

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
            ours = version_of(os.fstat(fd))
        finally:
            os.close(fd)
        if exclusive:
            # link() fails if the target exists: no window where another file is clobbered.
            os.link(tmp, path)
            os.unlink(tmp)
        elif expected is not None:
            _replace_version(tmp, path, expected, ours)
        else:
            os.replace(tmp, path)
        fsync_dir(path.parent)
    except _Stranded:
        raise  # the temp file holds a person's version: not discarded
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


class _Stranded(StorageError):
    pass


def _replace_version(tmp: Path, path: Path, expected: FileVersion, ours: FileVersion) -> None:
    """Rename ``tmp`` (``ours``) over ``path`` if ``path`` is the ``expected`` version; else
    Superseded, with the newest version a person saved at ``path``."""
    try:
        exchanged = _exchange(tmp, path)
    except FileNotFoundError:
        raise Superseded from None  # removed since it was read
    if not exchanged:
        try:
            found = version_of(os.lstat(path))
        except FileNotFoundError:
            raise Superseded from None
        if found != expected:
            raise Superseded
        os.replace(tmp, path)
        return
    if version_of(os.lstat(tmp)) == expected:
        os.unlink(tmp)  # the version read, replaced
        return
    try:
        _exchange(tmp, path)  # theirs back where it was; ours at tmp, discarded
        if version_of(os.lstat(tmp)) != ours:  # saved again between the two swaps: newer
            os.replace(tmp, path)
    except OSError as exc:
        kept = path.with_name(f"{path.name}.kept-{secrets.token_hex(4)}")
        with contextlib.suppress(OSError):  # a temp name would be swept at the next start
            os.rename(tmp, kept)
            tmp = kept
        log.error("a newer %s is kept as %s: it could not be put back (%s)", path, tmp, exc)
        raise _Stranded(f"{path} changed while it was written; its new version is {tmp}") from exc
    raise Superseded


@functools.cache
def _renameat2() -> Callable[..., int] | None:
    try:
        call = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):  # not glibc ≥ 2.28 or musl: the check before the rename
        return None
    call.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint)
    call.restype = ctypes.c_int
    return call


def _exchange(first: Path, second: Path) -> bool:
    """Swap two paths in one step; False where the system or file system cannot."""
    call = _renameat2()
    if call is None:
        return False
    if call(_AT_FDCWD, os.fsencode(first), _AT_FDCWD, os.fsencode(second), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in _NO_EXCHANGE:
        return False
    raise OSError(code, os.strerror(code), str(second))


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
