"""The line ids a session has written, so that a client re-sending after a lost answer
writes a line once. Kept while the daemon runs, not across a restart."""

from __future__ import annotations

import threading

from somnid.sessions.records import SkipReason

MAX_SEEN_IDS = 100_000
"""Line ids remembered for de-duplication (all sessions together); oldest go first."""


class SeenIds:
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
                    self._seen[(session_id, line_id)] = None
            while len(self._seen) > MAX_SEEN_IDS:
                del self._seen[next(iter(self._seen))]
