"""The line ids a session has written, so that a client re-sending a line writes it once,
even when the re-send comes after a somnid restart.

The log is the durable record: each block that came with an id ends with the id line
(``<!-- id: … -->``, see :mod:`.transcript`), written in the same append as the block, so a
line on disk always has its id with it. At start :meth:`SeenIds.recall` reads the ids back
from the recent logs (bounded: :data:`RECALL_WINDOW`, :data:`MAX_RECALLED_LOGS`); while the
daemon runs they are kept in memory (the last :data:`MAX_SEEN_IDS`).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import quote

from somnid.errors import BrokenFile
from somnid.memory.scrub import scrub
from somnid.sessions import rewrite, transcript
from somnid.sessions.records import SkipReason
from somnid.store import frontmatter
from somnid.store.layout import Layout

MAX_SEEN_IDS = 100_000
"""Line ids remembered for de-duplication (all sessions together); oldest go first."""
RECALL_WINDOW = dt.timedelta(days=30)
"""At start, the ids of the logs (pending and archived) changed this recently are read back."""
MAX_RECALLED_LOGS = 500
"""…and of at most this many of them, the newest…"""
MAX_RECALLED_BYTES = 32 * 1024 * 1024
"""…together at most this large (the start waits for the read: about 3 s for 32 MiB on a
busy 2-core machine)."""

# Kept as written: the plugin's ids (``e:42``, ``u:<uuid>``) stay legible; space, ``%``,
# ``<``, ``>`` and the rest are percent-encoded, so an id line is one token and no id can
# close its HTML comment early.
_SAFE = ":/@+=,;!$&'()*"


def written_id(line_id: str, scrub_patterns: Sequence[str] = ()) -> str:
    """A client's line id as the log writes it and as it is compared. An id that looks like
    a secret to the capture scrubber is written as its digest: no secret reaches the disk,
    and the written id still matches the next re-send of it."""
    written = quote(line_id, safe=_SAFE)
    if scrub(written, scrub_patterns) != written:
        return "sha256-" + hashlib.sha256(line_id.encode("utf-8")).hexdigest()[:32]
    return written


class SeenIds:
    """The written ids (:func:`written_id`) per session, oldest first."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: dict[tuple[str, str], None] = {}  # insertion-ordered: oldest first

    def fresh(
        self, session_id: str, prepared: list[tuple[int, str | None, str]]
    ) -> tuple[list[str], list[tuple[int, SkipReason]]]:
        """The blocks whose id this session has not written yet (the caller holds the
        session's lock), and the duplicates as skips. An id twice in one batch counts once."""
        blocks: list[str] = []
        duplicates: list[tuple[int, SkipReason]] = []
        batch: set[str] = set()
        with self._lock:
            for index, line_id, block in prepared:
                seen = line_id is not None and (session_id, line_id) in self._seen
                if seen or line_id in batch:
                    duplicates.append((index, "duplicate"))
                    continue
                if line_id is not None:
                    batch.add(line_id)
                blocks.append(block)
        return blocks, duplicates

    def remember(self, session_id: str, line_ids: list[str | None]) -> None:
        with self._lock:
            for line_id in line_ids:
                if line_id is not None:
                    self._seen.pop((session_id, line_id), None)
                    self._seen[(session_id, line_id)] = None
            while len(self._seen) > MAX_SEEN_IDS:
                del self._seen[next(iter(self._seen))]

    def recall(
        self,
        layout: Layout,
        *,
        now: float | None = None,
        max_logs: int = MAX_RECALLED_LOGS,
        max_bytes: int = MAX_RECALLED_BYTES,
    ) -> int:
        """At start, before any capture: the ids written in the logs changed within
        :data:`RECALL_WINDOW` (live and archived; the newest ``max_logs``, and of those no
        more than ``max_bytes`` together, but always the newest one), read oldest first so
        that the newest are kept. Logs without ids, or without a ``chat_id``, give none.
        Answers how many ids. Blocks: call it in a thread."""
        since = (time.time() if now is None else now) - RECALL_WINDOW.total_seconds()
        recent: list[tuple[float, str, int, Path]] = []
        for path in [*transcript.live_files(layout), *transcript.archived_files(layout)]:
            try:
                stat = path.stat()
            except OSError:
                continue
            if stat.st_mtime >= since:
                recent.append((stat.st_mtime, path.name, stat.st_size, path))
        recent.sort(reverse=True)  # newest first, to choose; read oldest first
        chosen: list[Path] = []
        total = 0
        for _, _, size, path in recent[:max_logs]:
            total += size
            if total > max_bytes and chosen:
                break
            chosen.append(path)
        count = 0
        for path in reversed(chosen):
            try:  # the fast reader: only the chat_id and the id lines are wanted
                doc = frontmatter.parse(rewrite.read(layout.root, path), round_trip=False)
            except (OSError, UnicodeError, BrokenFile):
                continue  # moved meanwhile, or unreadable: nothing to recall from it
            chat_id = doc.meta.get("chat_id")
            if chat_id is None or not str(chat_id):
                continue
            turns = transcript.parse_turns(doc.body, dt.UTC)
            ids: list[str | None] = [turn.line_id for turn in turns if turn.line_id]
            self.remember(str(chat_id), ids)
            count += len(ids)
        return count
