"""Deadlines on the PostgreSQL index's connections: a server that stopped answering (a
``SIGSTOP``, a network partition that leaves the socket open) never hangs a request.

libpq waits on its socket for as long as the server keeps it open, and a statement
timeout is the server's own, so neither helps when the server itself is stuck. Each use
of a connection is watched here: one thread holds the deadlines, and a use that outlives
its deadline has its socket shut down, which wakes libpq at once with "server closed the
connection". The connection is then dropped like any lost one, and the caller gets
:class:`~somnid.errors.IndexUnavailable` naming the time it waited.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import os
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any


class Watchdog:
    """Shuts down the socket of a connection whose use outlived its deadline."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Any]] = []
        self._live: set[int] = set()
        self._expired: set[int] = set()
        self._ids = itertools.count()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False

    @contextlib.contextmanager
    def watch(self, conn: Any, seconds: float) -> Iterator[int]:
        """Watch ``conn`` for ``seconds``; yields the watch's id (see :meth:`expired`)."""
        ident = next(self._ids)
        with self._cond:
            self._live.add(ident)
            heapq.heappush(self._heap, (time.monotonic() + seconds, ident, conn))
            if self._thread is None and not self._closed:
                self._thread = threading.Thread(target=self._run, name="somnid-pg-watch")
                self._thread.daemon = True
                self._thread.start()
            self._cond.notify()
        try:
            yield ident
        finally:
            with self._cond:
                self._live.discard(ident)
                self._expired.discard(ident)  # read by the use's own handler, or never

    def expired(self, ident: int) -> bool:
        """Whether the watch ``ident`` ran out of time (and its socket was shut down)."""
        with self._cond:
            found = ident in self._expired
            self._expired.discard(ident)
            return found

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()

    def _run(self) -> None:
        with self._cond:
            while not self._closed:
                while self._heap and self._heap[0][1] not in self._live:
                    heapq.heappop(self._heap)  # its use ended in time
                if not self._heap:
                    self._cond.wait()
                    continue
                left = self._heap[0][0] - time.monotonic()
                if left > 0:
                    self._cond.wait(left)
                    continue
                _, ident, conn = heapq.heappop(self._heap)
                self._live.discard(ident)
                self._expired.add(ident)
                # Shut under the lock: the use it watched cannot end (and the connection
                # go to the next use) between the check and the shut.
                _shut(conn)


def _shut(conn: Any) -> None:
    """Shut the connection's socket down under libpq's feet (a duplicate of its descriptor:
    the socket is shared, libpq's own descriptor stays libpq's to close)."""
    with contextlib.suppress(Exception):
        duplicate = os.dup(conn.fileno())
        with socket.socket(fileno=duplicate) as sock:
            sock.shutdown(socket.SHUT_RDWR)
