"""The CLI sends the token only to a listener that proves it holds it (issue 14).

A squatter on somnid's port (another user's process, while somnid is down) answered like
somnid and received the token with the first request. Here a fake server on a loopback
port, that names the right data dir and even relays challenges to the real somnid on its
own port, never sees the token, and the CLI says why.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from somnid.security import CHALLENGE_HEADER, PROOF_HEADER
from tests.cli.runner import cli_env, daemon_env, somnid
from tests.daemon import Daemon, start_daemon


class Squatter(ThreadingHTTPServer):
    """Answers every request as somnid's health would, for ``data_dir``; keeps the headers
    it was sent. With ``relay_to``, asks that somnid for the proof of each challenge."""

    def __init__(self, data_dir: Path, relay_to: str | None = None) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.data_dir = data_dir
        self.relay_to = relay_to
        self.seen: list[dict[str, str]] = []

    @property
    def port(self) -> int:
        return int(self.server_address[1])


class _Handler(BaseHTTPRequestHandler):
    server: Squatter

    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        self._answer()

    def _answer(self) -> None:
        self.server.seen.append({key.lower(): value for key, value in self.headers.items()})
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        body = json.dumps(
            {"status": "ok", "version": "0.1.0", "dataDir": str(self.server.data_dir)}
        ).encode()
        self.send_response(200)
        challenge = self.headers.get(CHALLENGE_HEADER)
        if challenge and self.server.relay_to:
            real = httpx.get(
                f"{self.server.relay_to}/v1/health",
                headers={CHALLENGE_HEADER: challenge},
                timeout=120,  # a loaded machine is slow, not absent
            )
            self.send_header(PROOF_HEADER, real.headers[PROOF_HEADER])
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


def _serving(server: Squatter) -> Iterator[Squatter]:
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def real(tmp_path: Path) -> Iterator[Daemon]:
    with start_daemon(tmp_path / "data") as daemon:
        yield daemon


def _no_token_reached(squatter: Squatter, token: str) -> None:
    assert squatter.seen, "the CLI never asked the squatter anything"
    for headers in squatter.seen:
        assert "authorization" not in headers, headers
        assert token not in json.dumps(headers)


def test_a_squatter_on_the_port_never_gets_the_token(real: Daemon) -> None:
    token = real.token
    for relay in (None, real.base_url):  # no proof at all; the real somnid's proof
        squatter = Squatter(real.data_dir, relay_to=relay)
        for running in _serving(squatter):
            env = cli_env(real.data_dir, running.port)
            for command in (["status"], ["recall", "deploy"]):
                answer = somnid(env, *command)
                assert answer.returncode == 1, (command, answer.stdout, answer.stderr)
                assert "could not prove it holds the token" in answer.stderr, answer.stderr
                assert "the token was not sent" in answer.stderr
            _no_token_reached(running, token)

    # Another data dir's daemon is told apart before any token goes out.
    squatter = Squatter(real.data_dir.parent / "elsewhere")
    for running in _serving(squatter):
        answer = somnid(cli_env(real.data_dir, running.port), "recall", "deploy")
        assert answer.returncode == 1 and "not sent" in answer.stderr, answer.stderr
        assert "serves" in answer.stderr
        _no_token_reached(running, token)

    # The real one proves itself, and is sent the token.
    answer = somnid(daemon_env(real), "recall", "deploy")
    assert answer.returncode == 0, answer.stderr


class Squatter6(Squatter):
    address_family = socket.AF_INET6

    def __init__(self, port: int, data_dir: Path, relay_to: str) -> None:
        ThreadingHTTPServer.__init__(self, ("::1", port), _Handler)
        self.data_dir = data_dir
        self.relay_to = relay_to
        self.seen = []


def test_a_relay_on_the_ipv6_loopback_never_gets_the_token(real: Daemon) -> None:
    """Another user listens on [::1]:PORT (somnid binds 127.0.0.1 only) and relays each
    challenge to somnid on 127.0.0.1:PORT. The proof names the address the connection
    reached, as somnid's socket saw it: 127.0.0.1 is not ::1, so no token goes out."""
    port = int(real.base_url.rsplit(":", 1)[1])
    try:
        relay = Squatter6(port, real.data_dir, relay_to=real.base_url)
    except OSError as exc:
        pytest.skip(f"no IPv6 loopback here: {exc}")
    for running in _serving(relay):
        env = {**cli_env(real.data_dir, port), "SOMNID_HOST": "::1"}
        answer = somnid(env, "recall", "deploy")
        assert answer.returncode == 1, (answer.stdout, answer.stderr)
        assert "could not prove it holds the token" in answer.stderr, answer.stderr
        _no_token_reached(running, real.token)


class _Trickler:
    """Sends an answer's head, then its body a byte at a time: each byte within httpx's
    per-read time-out, so only a bound on the whole answer ends the wait."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.sock.getsockname()[1])
        self.stop = threading.Event()

    def serve(self) -> None:
        self.sock.settimeout(0.2)
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            threading.Thread(target=self._trickle, args=(conn,), daemon=True).start()

    def _trickle(self, conn: socket.socket) -> None:
        with conn:
            try:
                conn.recv(65536)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n")
                while not self.stop.wait(0.5):
                    conn.sendall(b" ")
            except OSError:
                pass


def test_a_listener_that_trickles_its_answer_does_not_hold_a_command(tmp_path: Path) -> None:
    trickler = _Trickler()
    thread = threading.Thread(target=trickler.serve, daemon=True)
    thread.start()
    try:
        env = cli_env(tmp_path / "data", trickler.port)
        for command in (["status"], ["recall", "deploy"]):
            answer = somnid(env, *command, timeout=120)  # the cap only ends a hang
            assert answer.returncode == 1, (command, answer.stdout, answer.stderr)
            assert "no whole answer to a health probe" in answer.stderr, answer.stderr
    finally:
        trickler.stop.set()
        thread.join()
        trickler.sock.close()
