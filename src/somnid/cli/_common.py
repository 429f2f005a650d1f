"""What every command shares: exit statuses, the one error a command raises, and output
helpers (a progress bar, aligned key/value lines)."""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TextIO

EXIT_OK = 0
EXIT_FAILED = 1  # the command ran and failed: an error answer, a FAIL from doctor
EXIT_USAGE = 2  # bad arguments or a bad configuration
EXIT_LOCKED = 3  # another somnid holds the data dir
EXIT_NOT_RUNNING = 4  # the command needs the daemon and none answers


class CliError(Exception):
    """A command's failure: one line for the person, and the exit status."""

    def __init__(self, message: str, status: int = EXIT_FAILED) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


def between(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: a whole number from ``low`` to ``high`` (the API's own bounds, so a
    number out of them is a bad argument, exit 2, not the daemon's 422, exit 1)."""

    def number(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value} is not from {low} to {high}")
        return value

    return number


class Progress:
    """A one-line progress bar on a terminal; on anything else (a log, a pipe) one line per
    stage and a last line, so captured output stays readable."""

    WIDTH = 30

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self._stage: str | None = None
        self._drawn = False
        self._pending: str | None = None  # the last state, not yet printed (no terminal)
        self._printed: str | None = None

    def update(self, stage: str, fraction: float | None, note: str = "") -> None:
        """``fraction`` None draws a bar without a figure (waiting, size not known yet)."""
        if self.tty:
            if fraction is None:
                bar, figure = "." * self.WIDTH, "   "
            else:
                fraction = min(max(fraction, 0.0), 1.0)
                filled = round(fraction * self.WIDTH)
                bar = "#" * filled + "." * (self.WIDTH - filled)
                figure = f"{fraction:4.0%}"
            line = f"{stage:<18} [{bar}] {figure} {note}".rstrip()
            self.stream.write(f"\r\x1b[2K{line}")
            self.stream.flush()
            self._drawn = True
        else:
            figure = "" if fraction is None else f" {min(max(fraction, 0.0), 1.0):.0%}"
            line = f"{stage}{figure} {note}".rstrip()
            if stage != self._stage:
                self._write_pending()  # the stage before, as it ended
                self._pending = line
                self._write_pending()
                self._printed = line
            else:
                self._pending = line if line != self._printed else None
        self._stage = stage

    def _write_pending(self) -> None:
        if self._pending is not None:
            self.stream.write(self._pending + "\n")
            self.stream.flush()
            self._pending = None

    def done(self, message: str = "") -> None:
        """End the bar's line (and print ``message`` under it)."""
        if self.tty and self._drawn:
            self.stream.write("\n")
            self._drawn = False
        self._write_pending()  # where the last stage ended
        if message:
            self.stream.write(message + "\n")
        self.stream.flush()
        self._stage = None


def fields(rows: Iterable[tuple[str, object]], indent: str = "  ") -> str:
    """``key   value`` lines with the values aligned."""
    items = [(key, "" if value is None else str(value)) for key, value in rows]
    width = max((len(key) for key, _ in items), default=0)
    return "\n".join(f"{indent}{key:<{width}}  {value}".rstrip() for key, value in items)


def size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"


def lock_holder(data_dir: Path, *, may_lock: bool = True) -> int | None:
    """The pid that holds the data-dir lock (-1 if unknown), or None when it is free.

    Read from ``/proc/locks``, never by taking the lock: a probe that held it for an instant
    could make a daemon starting at that instant exit 3, which systemd does not restart.
    Without ``/proc`` it is taken for an instant, unless ``may_lock`` is False (a message's
    wording is not worth that risk): then None.
    """
    from somnid.store.lock import LOCK_NAME, DataDirLock

    path = data_dir / LOCK_NAME
    try:
        info = path.stat()
        table = Path("/proc/locks").read_text()
    except FileNotFoundError:
        return None
    except OSError:  # no /proc: the lock itself is the only way to know
        if not may_lock:
            return None
        lock = DataDirLock(data_dir)
        try:
            lock.acquire()
        except Exception:
            return lock.holder_pid() or -1
        lock.release()
        return None
    key = f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino}"
    for line in table.splitlines():
        # "5: FLOCK  ADVISORY  WRITE 31255 fe:00:2204892 0 EOF"; waiters read "5: -> FLOCK ..."
        parts = line.split()
        if len(parts) >= 6 and parts[1] == "FLOCK" and parts[5] == key:
            pid = int(parts[4]) if parts[4].isdigit() else 0
            return pid if pid > 0 else -1
    return None


_UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def plain(text: str) -> str:
    """``text`` with the control characters a terminal would obey (an escape sequence that
    clears the screen, retitles the window or hides a line) written out as ``\\u001b``;
    line breaks and tabs kept. Valid in JSON's strings too."""
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


class PlainOutput:
    """A text stream that writes what it is given through :func:`plain`: a memory's text
    (its description, a file's name) reaches the terminal as text, never as a command."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        return self._stream.write(plain(text))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
