"""The pending logs dreams pass by until they change, and why.

Each try at a log costs a model's time (and, on a paid endpoint, money), and a dream is
tried again every ``dream.idle_ms`` while nothing is consolidated. Two kinds of log would
take every try for ever, failing the same way each time:

- one that holds no turn somnid can read (written or broken by hand): passed by at once;
- one the model refused (HTTP 4xx: a filter on its words), or answered unusably even after
  one repair, in :data:`TRIES` dreams that consolidated another log (so the endpoint and
  the settings work: the failure is this log's own; a wrong model name or a cap on answers
  too low fails every log, and counts against none): passed by from then on.

Either is passed by only while the file is as it was when the dream that failed at it read
it (:func:`file_mark`): a person who edits it, or a session that appends to it, puts it back
in line. The marks are this process's (a restart, with a new model or endpoint, tries each
log again), and those of logs no longer pending are dropped.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Mapping
from pathlib import Path

from somnid.sessions.transcript import file_mark

TRIES = 3
"""Dreams that failed at a log, as it was, before later ones pass it by."""

UNREADABLE = "it holds no turn somnid can read"
Mark = tuple[int, int]


class PassedBy:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._failed: dict[str, tuple[Mark, int, str]] = {}  # stem: (mark, tries, last why)

    @staticmethod
    def marks(paths: Mapping[str, Path]) -> dict[str, Mark]:
        """The marks of the logs a dream is about to read (blocking)."""
        return {stem: file_mark(path) for stem, path in paths.items()}

    def note(
        self,
        unreadable: Mapping[str, Mark],
        failed: Mapping[str, str],
        marks: Mapping[str, Mark],
        consolidated: bool,
    ) -> None:
        """A dream's outcome: ``unreadable`` logs (stem: their mark when read); ``failed``
        ones (stem: why), whose ``marks`` were taken before the dream, counted only if it
        ``consolidated`` another log."""
        with self._lock:
            for stem, mark in unreadable.items():
                self._failed[stem] = (mark, TRIES, UNREADABLE)
            for stem, why in failed.items() if consolidated else ():
                if stem not in marks:
                    continue
                before = self._failed.get(stem)
                tries = before[1] + 1 if before is not None and before[0] == marks[stem] else 1
                self._failed[stem] = (marks[stem], tries, why)

    def passed(self, paths: Collection[Path]) -> dict[str, str]:
        """Of ``paths`` (the pending logs), the stems to pass by (unchanged since they
        failed :data:`TRIES` times), each with why; a changed one, and one no longer among
        ``paths``, is forgotten (blocking: reads the marks)."""
        stems = {path.stem for path in paths}
        with self._lock:
            for stem in [stem for stem in self._failed if stem not in stems]:
                del self._failed[stem]
        found: dict[str, str] = {}
        for path in paths:
            with self._lock:
                known = self._failed.get(path.stem)
            if known is None:
                continue
            mark, tries, why = known
            if file_mark(path) != mark:
                with self._lock:
                    if self._failed.get(path.stem) == known:
                        del self._failed[path.stem]
            elif tries >= TRIES:
                found[path.stem] = why if why == UNREADABLE else f"{why} ({tries} dreams)"
        return found
