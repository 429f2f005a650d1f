"""The PostgreSQL index's watchdog on its own, over a socket pair: a use that outlives its
deadline has its socket shut down (so a blocked read wakes at once), one that ends in time
is never touched, and a use cut just as it ended is said to be cut."""

from __future__ import annotations

import select
import socket
from collections.abc import Iterator

import pytest

from somnid.recall.pg_watch import Watchdog

HANG_S = 60.0  # a cap for a hang, not a figure


class _Conn:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    def fileno(self) -> int:
        return self.sock.fileno()


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    ours, server = socket.socketpair()
    try:
        yield ours, server
    finally:
        ours.close()
        server.close()


def test_a_read_the_server_never_answers_wakes_at_the_deadline(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    ours, _server = pair  # the server holds its end open and says nothing
    ours.settimeout(HANG_S)
    dog = Watchdog()
    try:
        with dog.watch(_Conn(ours), 0.05) as ident:
            assert ours.recv(1) == b""  # woken: the socket was shut down under it
            assert dog.expired(ident)
    finally:
        dog.close()


def test_a_use_that_ends_in_time_keeps_its_socket(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    ours, server = pair
    dog = Watchdog()
    try:
        with dog.watch(_Conn(ours), HANG_S) as ident:
            server.sendall(b"x")
            assert ours.recv(1) == b"x"
        assert not dog.expired(ident)
        # A second, short watch fires while its use does no read (Python work, say); the
        # first one's entry (ended) does nothing.
        with dog.watch(_Conn(ours), 0.01) as second:
            readable, _, _ = select.select([ours], [], [], HANG_S)  # until it is shut
            assert readable
        assert not dog.expired(second)  # its mark goes with the use: read inside or never
        ours.settimeout(HANG_S)
        assert ours.recv(1) == b""  # but its socket was shut: the caller must drop it
    finally:
        dog.close()
