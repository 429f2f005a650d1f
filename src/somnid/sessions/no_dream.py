"""Sessions never to be dreamed ("never dream this"), kept across restarts.

A session marked so writes ``dream: false`` into its pending logs, and every log it opens
later starts with it. Its logs are archived unread at the next sleep; from then on no log
holds the flag, yet the session may come back after a restart. So the sessions marked are
kept in ``<data dir>/no-dream.json`` too (the data dir, not the memory repository: it is
this machine's, and not synced): written atomically before the logs are marked, read at
start. At most :data:`MAX_SESSIONS`, the longest unmarked dropped first.

This module is the file's one owner. A file that cannot be read (a person broke it) is
reported in the log and left as it is; the sessions of the pending logs still count, and
the next mark moves it aside (``no-dream.json.broken-<time>``) and writes a new one.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Iterable
from pathlib import Path

from somnid.errors import BrokenFile, InvalidInput, StorageError
from somnid.sessions.records import check_session_id
from somnid.store.atomic import write_atomic
from somnid.store.safe import read_regular

MAX_FILE_BYTES = 16 * 1024 * 1024
"""Above what :data:`MAX_SESSIONS` ids of at most 200 characters (800 bytes) take."""

log = logging.getLogger(__name__)

FILE_NAME = "no-dream.json"
MAX_SESSIONS = 10_000
"""Sessions remembered as "never dream this" (for the logs they open later); oldest go first."""


class NoDreamSessions:
    def __init__(self, root: Path, limit: int = MAX_SESSIONS) -> None:
        self.path = root / FILE_NAME
        self._limit = limit
        self._lock = threading.Lock()
        self._ids: dict[str, None] = {}  # insertion-ordered: the oldest is dropped first
        self._readable = True

    def __contains__(self, session_id: object) -> bool:
        with self._lock:
            return session_id in self._ids

    def load(self, pending: Iterable[str]) -> int:
        """At start: the sessions the file keeps, then those of pending logs marked
        ``dream: false`` (added to the file when it lacks them). Answers how many."""
        kept = self._read()
        with self._lock:
            self._add(kept)
            self._add(pending)
            changed = list(self._ids) != kept
            count = len(self._ids)
        if changed and self._readable:
            try:
                self._save()
            except StorageError as exc:  # the start goes on; each mark tries again
                log.warning("%s could not be written: %s", self.path, exc.detail)
        return count

    def add(self, session_id: str) -> None:
        """Mark ``session_id``, durably: on disk before this returns."""
        with self._lock:
            self._add([session_id])
        self._save()

    def _add(self, ids: Iterable[str]) -> None:
        for session_id in ids:
            self._ids.pop(session_id, None)
            self._ids[session_id] = None
        while len(self._ids) > self._limit:
            del self._ids[next(iter(self._ids))]

    def _read(self) -> list[str]:
        try:  # a regular file of a bounded size: a FIFO or a link to /dev/zero hangs nothing
            raw = read_regular(self.path.parent, self.path, MAX_FILE_BYTES)[0]
        except FileNotFoundError:
            return []
        except (OSError, BrokenFile) as exc:
            self._broken(str(exc))
            return []
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            self._broken(f"not JSON: {exc}")
            return []
        ids = data.get("sessions") if isinstance(data, dict) else None
        if not isinstance(ids, list) or not all(_session_id(i) for i in ids):
            self._broken('not {"sessions": [<session id>, …]}')
            return []
        return ids

    def _broken(self, why: str) -> None:
        self._readable = False
        log.warning(
            "%s cannot be read (%s): left as it is; sessions marked never to be dreamed are "
            "known from their pending logs only until the next mark rewrites it",
            self.path,
            why,
        )

    def _save(self) -> None:
        with self._lock:
            if not self._readable and self.path.exists():  # kept beside, not written over
                aside = self.path.with_name(f"{FILE_NAME}.broken-{int(time.time())}")
                os.replace(self.path, aside)
                log.warning("%s could not be read: moved to %s", self.path, aside.name)
            data = {"sessions": list(self._ids)}
            write_atomic(self.path, (json.dumps(data, ensure_ascii=False) + "\n").encode())
            self._readable = True


def _session_id(value: object) -> bool:
    """A session id as a client may give one (what capture takes): else the file is broken."""
    if not isinstance(value, str):
        return False
    try:
        check_session_id(value)
    except InvalidInput:
        return False
    return True
