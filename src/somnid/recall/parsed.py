"""What searches read from the SQLite index and parsed, kept by entry id for the next search.

A search reads the rows of ~100 candidates and the texts of some; parsing them again for
every query was a fifth of a search at LoCoMo size. Any write to the index empties the cache
and starts a new generation: a search that read before the write cannot put its now stale
values back, since it offers them under the generation it read in.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Generic, TypeVar

V = TypeVar("V")


class Parsed(Generic[V]):
    """Values by entry id, at most ``limit`` of them (when full it starts again empty)."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._values: dict[int, V] = {}
        self._generation = 0
        self._lock = threading.Lock()

    @property
    def generation(self) -> int:
        """Take this before reading the index; offer what was read under it."""
        return self._generation

    def lookup(self, ids: Iterable[int]) -> tuple[dict[int, V], list[int]]:
        """The values held, and the ids that must be read."""
        values = self._values
        found: dict[int, V] = {}
        missing: list[int] = []
        for entry_id in ids:
            value = values.get(entry_id)
            if value is None:
                missing.append(entry_id)
            else:
                found[entry_id] = value
        return found, missing

    def offer(self, values: dict[int, V], generation: int) -> None:
        """Keep ``values`` read under ``generation``, unless the index was written since."""
        with self._lock:
            if generation != self._generation:
                return
            if len(self._values) + len(values) > self._limit:
                self._values = {}
            self._values.update(values)

    def clear(self) -> None:
        """The index was written (call after the commit, also when it failed)."""
        with self._lock:
            self._generation += 1
            self._values = {}
