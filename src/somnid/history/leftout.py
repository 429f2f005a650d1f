"""What history leaves out: a path that is no regular file (a FIFO, a link) or is larger
than the index reads (said once a path), and an entry file that does not parse yet (half
saved, or broken by hand: committed once it is fixed)."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

from somnid.errors import BrokenFile, SomnidError
from somnid.services.memories import MemoryService
from somnid.store.layout import Layout
from somnid.store.reader import MAX_FILE_BYTES

log = logging.getLogger(__name__)


def why_left_out(path: Path) -> str | None:
    """Why history leaves the file at ``path`` out (not a regular file, too large,
    unreadable), or None: it is committed (a path that is gone is a deletion)."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"unreadable ({exc.strerror})"
    if stat.S_ISREG(info.st_mode) and info.st_size <= MAX_FILE_BYTES:
        return None
    big = f"larger than {MAX_FILE_BYTES // (1024 * 1024)} MB"
    return big if stat.S_ISREG(info.st_mode) else "not a regular file"


class LeftOut:
    def __init__(self, layout: Layout, memories: MemoryService) -> None:
        self.layout = layout
        self.memories = memories
        self._said: set[str] = set()  # paths left out of history, said in the log once

    def kept_out(self, rel: str) -> bool:
        """True for a path history leaves alone: not a regular file, or too large (said
        once a path). A path that is gone is a deletion, and is committed."""
        why = why_left_out(self.layout.root / rel)
        if why is None:
            self._said.discard(rel)
            return False
        if rel not in self._said:
            self._said.add(rel)
            log.warning("history: leaving %s out: %s", rel, why)
        return True

    def whole(self, rel: str) -> bool:
        """False for an entry file that does not parse (half saved, or broken by hand)."""
        path = self.layout.root / rel
        if not path.is_file() or self.layout.classify(path) is None:
            return True
        try:
            self.memories.read_path(path)
        except BrokenFile as exc:
            log.warning("history: not committing %s until it parses: %s", rel, exc.detail)
            return False
        except (OSError, SomnidError):
            return False
        return True
