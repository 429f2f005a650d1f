"""sd_notify: what the daemon tells systemd, heard on a datagram socket the test binds."""

from __future__ import annotations

import os
import secrets
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from somnid.notify import Watchdog, notify
from tests.daemon import start_daemon


@pytest.fixture
def listener(tmp_path: Path) -> Iterator[tuple[socket.socket, str]]:
    """A socket in the abstract namespace, as systemd may hand out (``@name``)."""
    name = f"somnid-test-{secrets.token_hex(6)}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind("\0" + name)
        sock.settimeout(120.0)  # a cap for a hang: a loaded machine starts slowly
        yield sock, "@" + name


def messages(sock: socket.socket, until: str, timeout: float = 120.0) -> list[str]:
    """Datagrams until one holds the line ``until``."""
    got: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got.append(sock.recv(4096).decode())
        if until in got[-1].splitlines():
            return got
    raise AssertionError(f"no {until!r} in {got}")


def test_notify_sends_one_datagram_to_a_path_socket(tmp_path: Path) -> None:
    path = tmp_path / "notify"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(str(path))
        assert notify("READY=1", "STATUS=two\nlines", environ={"NOTIFY_SOCKET": str(path)})
        assert sock.recv(4096) == b"READY=1\nSTATUS=two lines"


def test_notify_is_a_no_op_outside_systemd(tmp_path: Path) -> None:
    assert not notify("READY=1", environ={})
    assert not notify("READY=1", environ={"NOTIFY_SOCKET": "vsock:2:1234"})
    # A socket that is gone is logged, never raised: the daemon serves regardless.
    assert not notify("READY=1", environ={"NOTIFY_SOCKET": str(tmp_path / "gone")})


def test_watchdog_pings_at_half_the_interval_and_only_for_this_process(tmp_path: Path) -> None:
    path = tmp_path / "notify"
    env = {"NOTIFY_SOCKET": str(path), "WATCHDOG_USEC": "2000000"}
    assert Watchdog(env).interval == 1.0
    assert not Watchdog({**env, "WATCHDOG_PID": str(os.getpid() + 1)}).active
    assert not Watchdog({"WATCHDOG_USEC": "2000000"}).active
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(str(path))
        sock.setblocking(False)
        dog = Watchdog(env)
        dog.tick()
        dog.tick()  # within the interval: no second ping
        assert sock.recv(100) == b"WATCHDOG=1"
        with pytest.raises(BlockingIOError):
            sock.recv(100)


def test_the_daemon_says_ready_once_serving_and_stopping_on_sigterm(
    tmp_path: Path, listener: tuple[socket.socket, str]
) -> None:
    sock, address = listener
    env = (("NOTIFY_SOCKET", address), ("WATCHDOG_USEC", "400000"))
    with start_daemon(tmp_path / "data", *env) as daemon:
        started = messages(sock, "READY=1")
        assert started[0].startswith("STATUS=starting")
        ready = started[-1].splitlines()
        assert ready[1] == f"STATUS=serving {daemon.base_url} from {daemon.data_dir}"
        # READY came after the port was open: it answers at once.
        assert httpx.get(f"{daemon.base_url}/v1/health").status_code == 200
        # The event loop keeps the watchdog fed (at half of WatchdogSec; the rate is the
        # loop's, not a figure to hold a loaded machine to): ping after ping.
        for _ in range(3):
            assert "WATCHDOG=1" in messages(sock, "WATCHDOG=1")[-1]
        assert daemon.stop() == 0
        stopping = messages(sock, "STOPPING=1")[-1].splitlines()
        assert stopping[1] == "STATUS=stopping: draining requests (up to 10 s)"
