"""Which live logs wait for a dream, read once per version of each file.

Health, the sleep status and every dream's tool calls ask; each asked every live log's
front-matter anew: 1.7-2.8 s a health check with 6,400 pending logs (a probe, with no LLM to
dream them). A log's state is kept with what tells its file changed (its inode, size, mtime
and ctime: a log is appended to, or written anew) and read again only then.
"""

from __future__ import annotations

import threading
from pathlib import Path

from somnid.errors import BrokenFile
from somnid.sessions import rewrite
from somnid.sessions.records import is_pending, wants_dream
from somnid.store import frontmatter

Mark = tuple[int, int, int, int]


class PendingStates:
    def __init__(self, root: Path) -> None:
        self.root = root
        self._known: dict[Path, tuple[Mark, bool, bool]] = {}
        self._lock = threading.Lock()

    def of(self, paths: list[Path]) -> list[tuple[Path, bool]]:
        """Of ``paths`` (live logs, in order), those whose ``status`` is not
        ``processed``, each with whether it may be dreamed. A file whose front-matter cannot
        be read counts as pending: it is work to do, not lost. Blocking."""
        found: list[tuple[Path, bool]] = []
        known: dict[Path, tuple[Mark, bool, bool]] = {}
        for path in paths:
            try:
                info = path.stat()
            except FileNotFoundError:
                continue
            except OSError:
                found.append((path, True))
                continue
            mark = (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
            with self._lock:
                kept = self._known.get(path)
            if kept is None or kept[0] != mark:
                state = _read(self.root, path)
                if state is None:
                    continue  # gone since its stat
                kept = (mark, *state)
            known[path] = kept
            if kept[1]:
                found.append((path, kept[2]))
        with self._lock:
            self._known = known  # logs gone or moved are let go
        return found


def _read(root: Path, path: Path) -> tuple[bool, bool] | None:
    """(pending, may be dreamed), or None if the file is gone."""
    try:
        # Only read: the fast reader (a dream asks for every tool call it makes).
        doc = frontmatter.parse(rewrite.read(root, path), round_trip=False)
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, BrokenFile):
        return True, True
    return is_pending(doc.meta), wants_dream(doc.meta)
