"""``<data dir>/daemon.json``: where the daemon that holds this data dir listens.

Written once the daemon listens (its URL, host, port and pid, mode 0600) and removed when
it stops, so the CLI finds a daemon started with ``--port`` without being told again. A
file left by a daemon that was killed names a pid that no longer runs: it is ignored.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from somnid.store.atomic import write_atomic

NAME = "daemon.json"


@dataclass(frozen=True, slots=True)
class Listening:
    url: str
    host: str
    port: int
    pid: int


def write(data_dir: Path, listening: Listening) -> None:
    body = {"url": listening.url, "host": listening.host, "port": listening.port,
            "pid": listening.pid}  # fmt: skip
    write_atomic(data_dir / NAME, (json.dumps(body) + "\n").encode())


def remove(data_dir: Path, pid: int) -> None:
    """Remove the file if it is still ``pid``'s."""
    found = read(data_dir, alive_only=False)
    if found is not None and found.pid == pid:
        with contextlib.suppress(OSError):
            (data_dir / NAME).unlink()


def read(data_dir: Path, *, alive_only: bool = True) -> Listening | None:
    """The running daemon's address, or None (no file, a broken one, a dead pid)."""
    try:
        raw = json.loads((data_dir / NAME).read_text("utf-8"))
        found = Listening(str(raw["url"]), str(raw["host"]), int(raw["port"]), int(raw["pid"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not 0 < found.port < 65536:
        return None
    if alive_only and not _alive(found.pid):
        return None
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process has that pid: not ours, but it runs
    return True
