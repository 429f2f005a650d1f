"""Connections against a real daemon: half-open ones do not stop it, a stalled request is
dropped after its header (or body) deadline."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from tests.daemon import start_daemon


def _lowered_fd_limit() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))


@pytest.mark.stress
def test_half_open_connections_do_not_stop_the_daemon(tmp_path: Path) -> None:
    with start_daemon(tmp_path / "data", preexec=_lowered_fd_limit) as daemon:
        port = int(daemon.base_url.rsplit(":", 1)[1])
        sockets: list[socket.socket] = []
        try:
            for _ in range(60):
                sock = socket.create_connection(("127.0.0.1", port), timeout=5)
                sock.sendall(b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Half: ")
                sockets.append(sock)
            # No wait needed: the listen queue is first in, first out, so the daemon takes
            # the 60 half-open connections before the client's. The time-outs only end a hang.
            with daemon.client(timeout=60) as client:
                for number in range(3):
                    assert client.get("/v1/health").status_code == 200
                    made = client.post(
                        "/v1/memories/knowledge", json={"name": f"k{number}", "body": "flood"}
                    )
                    assert made.status_code == 201
                    assert client.post("/v1/recall", json={"query": "flood"}).status_code == 200
        finally:
            for sock in sockets:
                sock.close()
        with daemon.client(timeout=60) as client:
            assert client.get("/v1/health").status_code == 200
        daemon.stop()
    log = daemon.log()
    lines = log.splitlines()
    assert len(lines) < 200, f"{len(lines)} log lines"
    # The flood never took every descriptor: an accept that fails for want of one pauses
    # accepting for a second, and a write meanwhile in a worker thread fails (the old flake).
    assert "out of system resource" not in log


@pytest.mark.stress
def test_a_stalled_request_is_dropped_after_the_header_timeout(tmp_path: Path) -> None:
    # Headers and body each get a second. (With the body's 30 s default, a half-sent body
    # was dropped in time only when the guard's 401 happened to close the connection first.)
    env = (("SOMNID_HEADER_TIMEOUT_S", "1"), ("SOMNID_BODY_TIMEOUT_S", "1"))
    with start_daemon(tmp_path / "data", *env) as daemon:
        port = int(daemon.base_url.rsplit(":", 1)[1])
        # The daemon closes each connection (recv reads its end) before the defaults would
        # have (10 s for headers, 30 s for a body): the settings took effect. No tighter
        # figure: a loaded machine takes longer than a second to notice one.
        with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
            sock.sendall(b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            started = time.monotonic()
            while sock.recv(4096):
                pass
            assert time.monotonic() - started < 10
        with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
            head = b"POST /v1/recall HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n"
            sock.sendall(head + b'{"query"')
            started = time.monotonic()
            while sock.recv(4096):
                pass
            assert time.monotonic() - started < 30
