"""Reads of the history repository beside its one pruner.

git reads (log, show, rev-list, cat-file) are safe beside every change somnid makes, commits
and a purge's rewrite alike: those only add objects and then move a ref. The one thing a
read must not meet is a prune, which deletes objects a read may be walking. So reads share
the repository and the end of a purge (update-ref, reflog expire, gc --prune) takes it alone
for its few seconds; a read arriving then waits for that step only, never for the rewrite.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator


class PruneGate:
    """Many readers or one pruner (who goes first once it asks: readers cannot starve it)."""

    def __init__(self) -> None:
        self._state = threading.Condition()
        self._readers = 0
        self._pruning = False

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        with self._state:
            while self._pruning:
                self._state.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._state:
                self._readers -= 1
                if not self._readers:
                    self._state.notify_all()

    @contextlib.contextmanager
    def pruning(self) -> Iterator[None]:
        """Alone with the repository (one pruner at a time: the caller holds the
        committer's lock)."""
        with self._state:
            self._pruning = True
            while self._readers:
                self._state.wait()
        try:
            yield
        finally:
            with self._state:
                self._pruning = False
                self._state.notify_all()
