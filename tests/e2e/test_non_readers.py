"""Clients that ask for large answers and never read them (issue 26, break 1).

A socket that pipelines requests for the Swagger bundle (1.5 MB) and never reads fills the
kernel's buffers on both sides (a 4 KB receive buffer here, at most a few MB of send buffer
on the daemon's side), after which the daemon's write waits on a reader that never reads.
Such connections held every slot of the connection cap for as long as they stayed open:
health, create and recall were refused until the sockets closed.
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx

from tests.daemon import Daemon, start_daemon

BUNDLE = "/docs/assets/swagger-ui-bundle.js"
TCP_ESTABLISHED = 1


def _lowered_fd_limit() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))  # a cap of 16 connections


def _port(daemon: Daemon) -> int:
    return int(daemon.base_url.rsplit(":", 1)[1])


def _non_reader(port: int, path: str = BUNDLE, pipelined: int = 20) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connect: no growth
    sock.settimeout(5)
    sock.connect(("127.0.0.1", port))
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode() * pipelined)
    return sock


@contextlib.contextmanager
def _non_readers(
    port: int, count: int, paths: tuple[str, ...] = (BUNDLE,)
) -> Iterator[list[socket.socket]]:
    sockets: list[socket.socket] = []
    try:
        for number in range(count):
            with contextlib.suppress(OSError):  # a refused or evicted one is no matter
                sockets.append(_non_reader(port, paths[number % len(paths)]))
        yield sockets
    finally:
        for sock in sockets:
            sock.close()


def _has_answer(sock: socket.socket) -> bool:
    """Whether the daemon has begun to answer on ``sock`` (bytes waiting, unread)."""
    try:
        return bool(sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT))
    except OSError:  # nothing yet, or reset by the daemon
        return False


def _answered(sockets: list[socket.socket], at_least: int, cap: float = 30.0) -> bool:
    deadline = time.monotonic() + cap
    while time.monotonic() < deadline:
        if sum(_has_answer(sock) for sock in sockets) >= at_least:
            return True
        time.sleep(0.05)
    return False


def _tcp_state(sock: socket.socket) -> int:
    return sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 1)[0]


def _closed_by_daemon(sock: socket.socket, cap: float) -> bool:
    deadline = time.monotonic() + cap
    while time.monotonic() < deadline:
        if _tcp_state(sock) != TCP_ESTABLISHED:
            return True
        time.sleep(0.05)
    return False


def _owner_is_served(daemon: Daemon, cap: float = 120.0) -> None:
    """Health, a create and a recall answer while the non-readers hold their sockets
    (retried within a generous cap: a loaded machine is slow, not locked out)."""
    deadline = time.monotonic() + cap
    done: list[str] = []
    failures: list[str] = []
    knowledge = {"name": "k", "body": "b"}
    steps: list[tuple[str, Callable[[httpx.Client], httpx.Response], int]] = [
        ("health", lambda c: c.get("/v1/health"), 200),
        ("create", lambda c: c.post("/v1/memories/knowledge", json=knowledge), 201),
        ("recall", lambda c: c.post("/v1/recall", json={"query": "b"}), 200),
    ]  # fmt: skip
    for name, call, status in steps:
        while True:
            try:
                with daemon.client(timeout=5) as client:
                    answer = call(client)
                assert answer.status_code == status, answer.text
                done.append(name)
                break
            except httpx.HTTPError as exc:
                failures.append(f"{name}: {exc!r}")
                assert time.monotonic() < deadline, f"served {done}; failures {failures[-3:]}"
                time.sleep(0.2)


def test_non_readers_do_not_lock_the_owner_out(tmp_path: Path) -> None:
    with start_daemon(tmp_path / "data", preexec=_lowered_fd_limit) as daemon:
        port = _port(daemon)
        # The bundle (1.5 MB) stalls a write mid-answer; the contract (80 kB) mostly sits
        # whole in the kernel's buffers, its connection then waiting for its next request.
        with _non_readers(port, 48, (BUNDLE, "/openapi.json")) as sockets:
            # A cap's worth are being answered: their answers wait on them to read.
            assert _answered(sockets, at_least=16)
            _owner_is_served(daemon)
        with daemon.client(timeout=30) as client:
            assert client.get("/v1/health").status_code == 200
        daemon.stop()
    assert "out of system resource" not in daemon.log()


def test_a_connection_that_does_not_read_its_answer_is_closed(tmp_path: Path) -> None:
    with start_daemon(tmp_path / "data", ("SOMNID_WRITE_TIMEOUT_S", "1")) as daemon:
        with _non_readers(_port(daemon), 1) as (sock,):
            assert _answered([sock], at_least=1)
            assert _closed_by_daemon(sock, cap=30.0)
        # A reader that reads gets the whole of every answer it asked for.
        with daemon.client(timeout=10) as client:
            assert len(client.get(BUNDLE).content) > 1_000_000
        daemon.stop()
