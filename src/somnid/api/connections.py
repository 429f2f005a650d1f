"""uvicorn's h11 protocol with deadlines and a connection limit.

uvicorn waits for a request's headers and body for ever, and accepts connections until the
process runs out of file descriptors: 45 sockets that each sent half a request made health
time out. Here each connection has ``header_timeout`` seconds to send a request's headers
(counted from when it opens, or from its last answer) and ``body_timeout`` seconds more for
the body; then it is closed. At most ``max_connections`` are open, never more than a quarter
of the file limit, and the listen backlog is small (an eighth of it), so bursts of accepts
(asyncio accepts up to the backlog per loop turn, a few turns before any connection is seen
here) never take the descriptors the files, the index, git and the logs need; one more
connection evicts the
connection that has waited longest for a request instead of being refused, so a flood of
half-open sockets cannot keep a health probe out.
"""

from __future__ import annotations

import asyncio
import logging
import resource
import time
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger(__name__)


UVICORN_BACKLOG = 2048


def _soft_file_limit() -> int | None:
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return None if soft == resource.RLIM_INFINITY else soft


def connection_limit(wanted: int) -> int:
    """``wanted``, but at most a quarter of the soft file limit: the rest for sockets
    accepted but not yet counted (the backlog's bursts) and for files, index, git, logs."""
    soft = _soft_file_limit()
    return wanted if soft is None else max(4, min(wanted, soft // 4))


def accept_backlog() -> int:
    """The listen backlog: asyncio accepts up to this many sockets in one go, each an fd
    before :class:`GuardedH11` sees it (and evicts an idle one)."""
    soft = _soft_file_limit()
    return UVICORN_BACKLOG if soft is None else max(4, min(UVICORN_BACKLOG, soft // 8))


class GuardedH11(H11Protocol):
    header_timeout: float = 10.0
    body_timeout: float = 30.0
    max_connections: int = 256

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        self._phase = ""  # what the deadline waits for: "head" or "body"
        self._waiting_since = 0.0

    @classmethod
    def configured(
        cls, *, header_timeout: float, body_timeout: float, max_connections: int
    ) -> type[GuardedH11]:
        """A subclass with these limits (uvicorn takes a protocol class, not an instance)."""
        attrs = {
            "header_timeout": header_timeout,
            "body_timeout": body_timeout,
            "max_connections": connection_limit(max_connections),
        }
        return type("SomnidH11", (cls,), attrs)

    # -------------------------------------------------------------- connections

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        if len(self.connections) >= self.max_connections and not self._evict_one():
            transport.close()  # every connection is busy with a request: no room
            return
        super().connection_made(transport)
        self._await_head()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if self.transport is not None:  # None: refused in connection_made
            super().connection_lost(exc)

    def _evict_one(self) -> bool:
        """Close the connection that has waited longest for a request's head or body."""
        waiting = [
            conn
            for conn in self.connections
            if isinstance(conn, GuardedH11) and conn._deadline is not None
        ]
        if not waiting:
            return False
        oldest = min(waiting, key=lambda conn: conn._waiting_since)
        log.debug("too many connections: closing %s, idle longest", oldest.client)
        oldest._close()
        return True

    # -------------------------------------------------------------- deadlines

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._follow()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._follow()

    def _follow(self) -> None:
        """Arm the deadline that fits where the request stands."""
        if self.transport.is_closing() or self.transport.get_protocol() is not self:
            self._disarm()  # closed, or handed to the websocket protocol
            return
        state = self.conn.their_state
        if state is h11.IDLE and (self.cycle is None or self.cycle.response_complete):
            if self._deadline is None:
                self._await_head()
        elif state is h11.SEND_BODY:
            if self._phase != "body":
                self._arm("body", self.body_timeout)
        else:
            self._disarm()  # the request is in: the app has it

    def _await_head(self) -> None:
        self._arm("head", self.header_timeout)

    def _arm(self, phase: str, seconds: float) -> None:
        self._disarm()
        self._phase = phase
        self._waiting_since = time.monotonic()
        self._deadline = self.loop.call_later(seconds, self._expire)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        self._phase = ""

    def _expire(self) -> None:
        self._deadline = None
        log.debug("closing %s: no complete request %s in time", self.client, self._phase)
        self._close()

    def _close(self) -> None:
        self._disarm()
        if self.cycle is not None and not self.cycle.response_complete:
            self.cycle.disconnected = True
            self.cycle.message_event.set()
        self.transport.close()
