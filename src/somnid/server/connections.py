"""uvicorn's h11 protocol with deadlines and a connection limit.

uvicorn waits for a request's headers and body for ever, and accepts connections until the
process runs out of file descriptors: 45 sockets that each sent half a request made health
time out. Here each connection has ``header_timeout`` seconds to send a request's headers
(counted from when it opens, or from its last answer) and ``body_timeout`` seconds more for
the body; then it is closed. An answer the client does not read has a deadline too: a
connection whose writes stay paused (the kernel's buffers full, the client not reading)
for ``write_timeout`` seconds is dropped, its unsent bytes with it. At most
``max_connections`` are open, never more than a quarter of the file limit, and the listen
backlog is small (an eighth of it), so bursts of accepts (asyncio accepts up to the backlog
per loop turn, a few turns before any connection is seen here) never take the descriptors
the files, the index, git and the logs need. One more connection evicts the connection that
has waited longest on its client, for a request or for it to read an answer, instead of
being refused: neither half-open sockets nor sockets that pipeline requests for large
answers and never read them (300 of them each asking for the Swagger bundle twenty times
held every slot) can keep a health probe or the owner's writes out. When no connection
waits on its client, the one busy longest is evicted, a stream (an answer begun and not
ended: ``GET /v1/sleep/events`` a client left open, whose client reconnects) before a
request still waiting on the app. 256 such streams held every slot, and a client that
opens one per page view leaves them open. Only when no stream is open is a request cut
(its answer lost; a write the app had not yet read the body of is not made).

A connection is dropped with an abort (and a reset, ``SO_LINGER`` 0) when bytes of its
answer are still waiting: a plain close would keep the socket, and its slot, until a
client that never reads had read them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import resource
import secrets
import socket
import struct
import time
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from somnid.api.errors import PROBLEM_JSON, problem_body
from somnid.api.observe import HEADER

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
    write_timeout: float = 30.0
    max_connections: int = 256

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        self._phase = ""  # what the deadline waits for: "head" or "body"
        self._waiting_since = 0.0
        self._write_deadline: asyncio.TimerHandle | None = None
        self._stalled_since = 0.0  # when writes paused (the client not reading)
        self._busy_since: float | None = None  # when the app took the request being served

    @classmethod
    def configured(
        cls,
        *,
        header_timeout: float,
        body_timeout: float,
        max_connections: int,
        write_timeout: float = 30.0,
    ) -> type[GuardedH11]:
        """A subclass with these limits (uvicorn takes a protocol class, not an instance)."""
        attrs = {
            "header_timeout": header_timeout,
            "body_timeout": body_timeout,
            "write_timeout": write_timeout,
            "max_connections": connection_limit(max_connections),
        }
        return type("SomnidH11", (cls,), attrs)

    # -------------------------------------------------------------- connections

    def send_400_response(self, msg: str) -> None:
        """A request h11 cannot parse, answered in the API's one error shape (uvicorn's
        own answer is plain text) and the connection closed."""
        detail = f"not an HTTP/1.1 request somnid can read: {msg.rstrip('.').lower()}"
        body = json.dumps(problem_body(400, "bad_request", detail)).encode()
        headers = [
            (b"content-type", PROBLEM_JSON.encode()),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
            (HEADER.encode(), secrets.token_hex(8).encode()),  # as every answer has one
        ]
        with contextlib.suppress(h11.LocalProtocolError):  # an answer had already begun
            for event in (
                h11.Response(status_code=400, headers=headers, reason=b"Bad Request"),
                h11.Data(data=body),
                h11.EndOfMessage(),
            ):
                self.transport.write(self.conn.send(event) or b"")
        self.transport.close()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        if len(self.connections) >= self.max_connections and not self._evict_one():
            transport.close()  # every connection is busy with a request: no room
            return
        super().connection_made(transport)
        self._await_head()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self._write_resumed()
        if self.transport is not None:  # None: refused in connection_made
            super().connection_lost(exc)

    def _evict_one(self) -> bool:
        """Close a WebSocket that waits for its client's reply to its close; else the
        connection that has waited longest on its client (for a request's head or body, or
        for it to read an answer); when none waits, the one busy longest."""
        for conn in self.connections:
            # A client that never answers a close holds its slot for the close timeout (10
            # s): a handshake loop with the token (each new bridge host closes the one
            # before) locked every client out, health too (a probe).
            transport = getattr(conn, "transport", None)
            closed = not isinstance(conn, GuardedH11) and getattr(conn, "close_sent", False)
            if closed and transport is not None:
                log.debug("too many connections: closing a WebSocket closed on our side")
                transport.abort()
                return True
        guarded = [conn for conn in self.connections if isinstance(conn, GuardedH11)]
        waiting = [(since, c) for c in guarded if (since := c._waited_since()) is not None]
        if waiting:
            _since, oldest = min(waiting, key=lambda pair: pair[0])
            log.debug("too many connections: closing %s, waited longest", oldest.client)
            oldest._close()
            return True
        busy = [(since, c) for c in guarded if (since := c._busy_for_since()) is not None]
        if not busy:
            return False
        # A stream (its answer begun, not ended) before a request still waiting on the app
        # (a dream run with "wait", a write): its client reconnects, and nothing is cut.
        streaming = [(since, c) for since, c in busy if c._answering()]
        _since, oldest = min(streaming or busy, key=lambda pair: pair[0])
        log.debug("too many connections: closing %s, busy longest", oldest.client)
        oldest._close()
        return True

    def _waited_since(self) -> float | None:
        """Since when this connection waits on its client, or None while it is busy."""
        if self.transport is None:
            return None
        if self.transport.is_closing() and self._write_deadline is None:
            return None  # on its way out
        times = [
            *([self._waiting_since] if self._deadline is not None else []),
            *([self._stalled_since] if self._write_deadline is not None else []),
        ]
        return min(times) if times else None

    def _answering(self) -> bool:
        cycle = self.cycle
        return cycle is not None and cycle.response_started and not cycle.response_complete

    def _busy_for_since(self) -> float | None:
        """Since when the app has held this connection's request, or None."""
        if self.transport is None or self.transport.is_closing():
            return None
        return self._busy_since

    # -------------------------------------------------------------- readers that do not read

    def pause_writing(self) -> None:
        super().pause_writing()
        self._watch_writes()

    def _watch_writes(self) -> None:
        """Give what is buffered for the client ``write_timeout`` seconds to go out."""
        if self._write_deadline is None:
            self._stalled_since = time.monotonic()
            self._write_deadline = self.loop.call_later(self.write_timeout, self._write_expired)

    def resume_writing(self) -> None:
        super().resume_writing()
        self._write_resumed()

    def _write_resumed(self) -> None:
        if self._write_deadline is not None:
            self._write_deadline.cancel()
            self._write_deadline = None

    def _write_expired(self) -> None:
        self._write_deadline = None
        if self.transport.get_write_buffer_size() == 0 and not self.flow.write_paused:
            return  # it went out
        log.debug("closing %s: its answer waited %s s to be read", self.client, self.write_timeout)
        self._close()

    # -------------------------------------------------------------- deadlines

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._follow()

    def on_response_complete(self) -> None:
        if self.transport.get_write_buffer_size() > 0:
            # Still on its way (an answer under the pause mark, or a close that waits for
            # it to be sent): the client has write_timeout seconds to take it.
            self._watch_writes()
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
            if self._busy_since is None:
                self._busy_since = time.monotonic()
            return
        self._busy_since = None

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
        """Close now; with a reset and the unsent bytes dropped if an answer is waiting
        (a plain close would hold the socket until the client read them)."""
        self._disarm()
        self._write_resumed()
        if self.cycle is not None and not self.cycle.response_complete:
            self.cycle.disconnected = True
            self.cycle.message_event.set()
        if self.transport.get_write_buffer_size() == 0 and not self.flow.write_paused:
            self.transport.close()
            return
        sock = self.transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):  # a reset, and the kernel's copy freed too
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.transport.abort()
