"""Opening files under the data dir without trusting what is there.

A hand (or another local user) can put anything where an entry's file belongs: a FIFO
that blocks every reader for good, a device, a symbolic link out of the data dir, a file of
a gigabyte. somnid reads only regular files, never follows a link below the data dir's
root (the root itself may be one), opens without blocking (``O_NONBLOCK``, ``O_NOFOLLOW``)
and looks at the size before it reads. Anything else is :class:`BrokenFile`: reported, and
left alone.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from somnid.errors import BrokenFile

_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISLNK, "a symbolic link"),
)


def what_is(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def check_no_links(root: Path, path: Path) -> None:
    """Refuse ``path`` if it, or any folder between ``root`` and it, is a symbolic link."""
    try:
        parts = path.relative_to(root).parts
    except ValueError:
        raise BrokenFile(f"{path} is outside the data dir") from None
    probe = root
    for part in parts:
        probe = probe / part
        try:
            mode = os.lstat(probe).st_mode
        except FileNotFoundError:
            return  # the rest does not exist yet: nothing to follow
        except PermissionError:  # a folder on the way may be read but not entered (chmod 600)
            where = probe.parent.relative_to(root) if probe.parent != root else Path(".")
            why = f"{where} is a folder somnid may not enter; nothing is written in it"
            raise BrokenFile(why) from None
        if stat.S_ISLNK(mode):
            raise BrokenFile(
                f"{probe.relative_to(root)} is a symbolic link; somnid does not follow links"
            )


def present(path: Path) -> bool:
    """Whether something other than a folder is at ``path``, without following a link:
    a FIFO or a link where a file belongs is there, to be reported as broken."""
    try:
        return not stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def shut(folder: Path | str) -> bool:
    """Whether ``folder`` is a folder somnid may not enter (``chmod 000``, made with sudo):
    its entry is there, to be reported as broken. False when the folder cannot even be
    looked at (the one holding it is shut): nothing can be told of it, and a name is not
    taken for it (a create's search for a free name would never end)."""
    try:
        if not stat.S_ISDIR(os.lstat(folder).st_mode):
            return False
    except OSError:
        return False
    try:
        os.scandir(folder).close()
        os.stat(os.path.join(folder, "."))  # entering it: read (r) is not search (x)
    except PermissionError:
        return True
    except OSError:
        return False
    return False


def enterable(folder: Path | str) -> bool:
    """Whether what is in ``folder`` can be looked at: a folder read but not searched
    (``chmod 600``) lists its names and nothing of them (each would seem to vanish)."""
    try:
        os.stat(os.path.join(folder, "."))
    except PermissionError:
        return False
    except OSError:
        return True  # gone, or no folder: for the caller's own reading to find
    return True


def read_regular(root: Path, path: Path, max_bytes: int) -> tuple[bytes, os.stat_result]:
    """The bytes of the regular file ``path`` under ``root``, and its stat.

    Raises BrokenFile for anything that is not a regular file reached without a link, that
    is larger than ``max_bytes`` (checked before reading), or that somnid may not read (a
    ``chmod 000``); FileNotFoundError if gone."""
    try:
        return _read_regular(root, path, max_bytes)
    except PermissionError as exc:
        raise BrokenFile(f"not readable: {exc.strerror or 'permission denied'}") from None


def _read_regular(root: Path, path: Path, max_bytes: int) -> tuple[bytes, os.stat_result]:
    check_no_links(root, path)
    mode = os.lstat(path).st_mode
    if not stat.S_ISREG(mode):
        raise BrokenFile(f"{what_is(mode)}, not a regular file")
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)  # what was opened, should it have been swapped since the lstat
        if not stat.S_ISREG(info.st_mode):
            raise BrokenFile(f"{what_is(info.st_mode)}, not a regular file")
        if info.st_size > max_bytes:
            raise BrokenFile(f"file is larger than {max_bytes} bytes")
        chunks: list[bytes] = []
        left = max_bytes + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > max_bytes:  # it grew while we read
        raise BrokenFile(f"file is larger than {max_bytes} bytes")
    return data, info


def read_text(root: Path, path: Path, max_bytes: int, *, errors: str = "strict") -> str:
    """:func:`read_regular`, decoded as UTF-8 (UnicodeDecodeError unless ``errors``)."""
    return read_regular(root, path, max_bytes)[0].decode("utf-8", errors=errors)


def open_append(path: Path) -> int:
    """``path`` opened for appending, only if it is a regular file reached without a link:
    opening a FIFO for writing blocks until someone reads it. Raises BrokenFile for
    anything else, FileNotFoundError if gone; the caller closes the descriptor."""
    mode = os.lstat(path).st_mode
    if not stat.S_ISREG(mode):
        raise BrokenFile(f"{what_is(mode)}, not a regular file")
    flags = os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENXIO):  # swapped for a link or a FIFO since
            raise BrokenFile("not a regular file") from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise BrokenFile("not a regular file")
    return fd
