"""A small tmpfs of the test's own, to fill up or to turn read-only under a running daemon.

Mounting needs root (the tests run as root here and in CI); where it is refused the caller
skips with the reason. Every mount is undone in ``finally``, even after a failure.
"""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, check=False, timeout=30)


@contextlib.contextmanager
def tmpfs(where: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` (``"8m"``) mounted at ``where``; skips the test if it cannot be.
    (Every mount here is refused without root: the test skips, saying why.)"""
    where.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mounted = _run("mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(where))
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip() or mounted.returncode}")
    try:
        yield where
    finally:
        if _run("umount", str(where)).returncode != 0:
            _run("umount", "-l", str(where))  # still busy: detach it now, free it when idle


@contextlib.contextmanager
def read_only(where: Path) -> Iterator[None]:
    """``where`` read-only until the block ends, under a running daemon.

    A file system with files open for writing (the daemon's index and lock) refuses
    ``remount,ro``; so a read-only bind mount of ``where`` goes over it. Everything opened
    by path from then on (every memory file, log and temp file) meets EROFS; files opened
    before stay as they were. Ending the block takes the bind mount away: writable again.
    """
    if os.geteuid() != 0:
        pytest.skip("mounting needs root")
    bound = _run("mount", "--bind", str(where), str(where))
    if bound.returncode != 0:
        pytest.skip(f"cannot bind-mount here: {bound.stderr.strip() or bound.returncode}")
    try:
        done = _run("mount", "-o", "remount,bind,ro", str(where))
        assert done.returncode == 0, done.stderr
        yield
    finally:
        if _run("umount", str(where)).returncode != 0:
            _run("umount", "-l", str(where))


def fill(where: Path, *, leave: int = 0) -> Path:
    """Fill the file system holding ``where`` with one file, leaving about ``leave`` bytes
    free (0: every byte taken). Returns the file, to remove when space should return."""
    number = 1
    while (where / f"filler-{number}.bin").exists():
        number += 1
    filler = where / f"filler-{number}.bin"
    chunk = b"\0" * 65536
    with filler.open("wb", buffering=0) as handle:
        while True:
            free = os.statvfs(where).f_bavail * os.statvfs(where).f_frsize
            want = free - leave
            if want <= 0:
                break
            try:
                handle.write(chunk[: min(len(chunk), want)])
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                break
    return filler


def free_bytes(where: Path) -> int:
    stat = os.statvfs(where)
    return stat.f_bavail * stat.f_frsize
