"""What history leaves out: a path that is no regular file (a FIFO, a link) or is larger
than the index reads (said once a path), an entry file that does not parse yet (half
saved, or broken by hand: committed once it is fixed), and a link or a submodule that
history holds but somnid never puts on disk (a person's, come with a sync): its absence is
no deletion."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

from somnid.errors import BrokenFile, SomnidError
from somnid.history.git import Git
from somnid.history.pathspecs import ON_COMMAND_LINE
from somnid.services.memories import MemoryService
from somnid.store.layout import Layout
from somnid.store.reader import MAX_FILE_BYTES

log = logging.getLogger(__name__)

UNMADE_MODES = frozenset({b"120000", b"160000"})  # a symbolic link, a submodule


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
        self.unmade: set[str] = set()  # links and submodules git holds, gone from disk

    def kept_out(self, rel: str) -> bool:
        """True for a path history leaves alone: not a regular file, or too large (said
        once a path), or one of :attr:`unmade`. Another path that is gone is a deletion,
        and is committed."""
        why = "a link or a submodule, never put on disk" if rel in self.unmade else None
        why = why or why_left_out(self.layout.root / rel)
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


def unmade_links(git: Git, gone: list[str]) -> set[str]:
    """Of the paths ``gone`` from disk, those git's index holds as a link or a submodule:
    a sync never writes them (docs/sync.md), so their absence is not a person's deletion.
    One ``git ls-files`` (all of it past :data:`ON_COMMAND_LINE` paths)."""
    if not gone:
        return set()
    asked = gone if len(gone) <= ON_COMMAND_LINE else []
    out = git.run("ls-files", "-s", "-z", "--", *asked)
    wanted, found = set(gone), set()
    for record in filter(None, out.split(b"\0")):
        info, _, raw = record.partition(b"\t")
        path = os.fsdecode(raw)
        if info.split(b" ", 1)[0] in UNMADE_MODES and path in wanted:
            found.add(path)
    return found
