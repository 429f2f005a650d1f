"""What each session has been shown by the memory tools, so later searches bring news.

A recall keeps its best results even if they were shown before (they may be the answer),
then fills the rest with entries not yet shown. Compaction forgets a session's record, so
memories compacted out of the context can come back. Bounded: the least recently active
sessions are forgotten first.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")

BLIND_TOP = 3


class SeenTracker:
    def __init__(self, max_sessions: int = 10_000) -> None:
        self.max_sessions = max_sessions
        self._seen: collections.OrderedDict[str, set[str]] = collections.OrderedDict()

    def _session(self, session_id: str) -> set[str]:
        seen = self._seen.get(session_id)
        if seen is None:
            seen = self._seen[session_id] = set()
            while len(self._seen) > self.max_sessions:
                self._seen.popitem(last=False)
        else:
            self._seen.move_to_end(session_id)
        return seen

    def select(
        self,
        session_id: str | None,
        ranked: Sequence[T],
        limit: int,
        key: Callable[[T], str],
        *,
        mark: bool = True,
    ) -> list[T]:
        """The top ``BLIND_TOP`` as ranked, then unseen ones, up to ``limit``; marks them
        seen (``mark``: a caller that shows only some of them marks those with :meth:`saw`)."""
        if session_id is None:
            return list(ranked[:limit])
        seen = self._session(session_id)
        chosen = list(ranked[: min(BLIND_TOP, limit)])
        for item in ranked[len(chosen) :]:
            if len(chosen) >= limit:
                break
            if key(item) not in seen:
                chosen.append(item)
        if mark:
            seen.update(key(item) for item in chosen)
        return chosen

    def saw(self, session_id: str | None, keys: Sequence[str]) -> None:
        """Mark ``keys`` as shown to the session."""
        if session_id is not None:
            self._session(session_id).update(keys)

    def forget(self, session_id: str) -> bool:
        return self._seen.pop(session_id, None) is not None

    def shown(self, session_id: str) -> set[str]:
        return set(self._seen.get(session_id, set()))
