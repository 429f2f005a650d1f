"""The pending logs dreams pass by until they change, and why.

Each try at a log costs a model's time (and, on a paid endpoint, money), and a dream is
tried again every ``dream.idle_ms`` while nothing is consolidated. Two kinds of log would
take every try for ever, failing the same way each time:

- one that holds no turn somnid can read (written or broken by hand): passed by at once;
- one the model refused (HTTP 4xx: a filter on its words), or answered unusably even after
  one repair, :data:`TRIES` dreams in a row: passed by from then on.

Either is passed by only while the file is as it was (:func:`file_mark`): a person who edits
it, or a session that appends to it, puts it back in line. The marks are this process's: a
restart (a new model, a new endpoint) tries each log again.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from pathlib import Path

from somnid.sessions.transcript import file_mark

TRIES = 3
"""Dreams in a row that failed at a log, as it was, before later ones pass it by."""

UNREADABLE = "it holds no turn somnid can read"
Mark = tuple[int, int]


class PassedBy:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._failed: dict[str, tuple[Mark, int, str]] = {}  # stem: (mark, tries, last why)

    def note(
        self, unreadable: Mapping[str, Mark], failed: Mapping[str, str], paths: Mapping[str, Path]
    ) -> None:
        """A dream's outcome: ``unreadable`` logs (stem: their mark when read), ``failed``
        ones (stem: why), found at ``paths`` (blocking: reads each failed file's mark)."""
        marks = {stem: file_mark(paths[stem]) for stem in failed if stem in paths}
        with self._lock:
            for stem, mark in unreadable.items():
                self._failed[stem] = (mark, TRIES, UNREADABLE)
            for stem, mark in marks.items():
                before = self._failed.get(stem)
                tries = before[1] + 1 if before is not None and before[0] == mark else 1
                self._failed[stem] = (mark, tries, failed[stem])

    def passed(self, paths: Iterable[Path]) -> dict[str, str]:
        """Of ``paths``, the stems to pass by (unchanged since they failed :data:`TRIES`
        times), each with why; a changed one is forgotten (blocking: reads the marks)."""
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
                found[path.stem] = why if why == UNREADABLE else f"{why} ({tries} dreams in a row)"
        return found
