"""Logs read before, kept by what tells a file changed, within a bound on their size.

``search_recent_conversation`` read and parsed every log on every call: 4-7 s with a year's
1,500 logs (a probe). A log is written anew (a new inode) or appended to (a new size) on
every change, and a person's edit moves its mtime and ctime: a file whose inode, size, mtime
and ctime are as they were is as it was. What is kept is bounded by the files' sizes
(:data:`MAX_BYTES`), the least recently read dropped first.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Generic, TypeVar

T = TypeVar("T")

MAX_BYTES = 32 * 1024 * 1024
"""Of files kept (their parsed turns take a few times that): a year of logs, or so."""


class ReadCache(Generic[T]):
    def __init__(self, max_bytes: int = MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self._known: OrderedDict[tuple[Path, Hashable], tuple[tuple[int, ...], T]]
        self._known = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def read(self, path: Path, how: Hashable, read: Callable[[], T]) -> T:
        """``read()``'s answer for ``path`` (read ``how``), kept until the file changes.
        Raises what ``path.stat()`` and ``read`` raise."""
        info = path.stat()
        mark = (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
        key = (path, how)
        with self._lock:
            known = self._known.get(key)
            if known is not None and known[0] == mark:
                self._known.move_to_end(key)
                return known[1]
        value = read()
        with self._lock:
            old = self._known.pop(key, None)
            if old is not None:
                self._bytes -= old[0][1]
            if info.st_size <= self.max_bytes:
                self._known[key] = (mark, value)
                self._bytes += info.st_size
            while self._bytes > self.max_bytes and self._known:
                _key, (dropped, _value) = self._known.popitem(last=False)
                self._bytes -= dropped[1]
        return value
