"""Start the real ``somnid serve`` in a child process on a free loopback port."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx

from somnid.server import daemon_file

RUN_MARK = "TESTS_SOMNID_RUN"
"""An environment variable the test session sets: every daemon it starts inherits it, so the
session can find the ones left running (tests/conftest.py). Not SOMNID_*: settings ignore it
and tests/cli/runner.py keeps it."""


def leftover_daemons(run: str) -> list[int]:
    """The pids of ``somnid serve`` processes of this test run still alive (orphans too)."""
    found = []
    mark = f"{RUN_MARK}={run}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            command = (entry / "cmdline").read_bytes().split(b"\0")
            environment = (entry / "environ").read_bytes().split(b"\0")
        except OSError:  # gone meanwhile, or not ours to read
            continue
        serving = b"serve" in command and any(part.endswith(b"somnid") for part in command)
        if serving and mark in environment:
            found.append(int(entry.name))
    return sorted(found)


def stop_leftovers(run: str) -> list[int]:
    """Kill this run's daemons still alive; their pids."""
    left = leftover_daemons(run)
    for pid in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    for pid in left:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)  # reap the ones that were our children
    return left


def read_token(data_dir: Path) -> str:
    env_token = os.environ.get("SOMNID_TOKEN")
    path = data_dir / "token"
    if path.exists():
        return path.read_text(encoding="utf-8").strip()
    if env_token:
        return env_token
    raise FileNotFoundError(f"no token in {path}")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Daemon:
    process: subprocess.Popen[bytes]
    base_url: str
    data_dir: Path
    log_path: Path

    @property
    def token(self) -> str:
        """The bearer token the daemon generated into its data dir (or was given)."""
        return read_token(self.data_dir)

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def client(self, timeout: float = 10.0) -> httpx.Client:
        return httpx.Client(base_url=self.base_url, timeout=timeout, headers=self.headers)

    def async_client(self, timeout: float = 10.0) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.base_url, timeout=timeout, headers=self.headers)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 120.0) -> int:
        if self.process.poll() is None:
            self.process.send_signal(sig)
        return self.process.wait(timeout=timeout)


def spawn(
    data_dir: Path,
    port: int,
    log_path: Path,
    *extra_env: tuple[str, str],
    preexec: Callable[[], None] | None = None,
) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "SOMNID_DATA_DIR": str(data_dir),
        "SOMNID_PORT": str(port),
        "SOMNID_HOST": "127.0.0.1",
        "SOMNID_EMBED__PROVIDER": "off",
        "SOMNID_TIMEZONE": "UTC",
        "XDG_CONFIG_HOME": str(data_dir.parent / "xdg-config"),
        **dict(extra_env),
    }
    log = log_path.open("ab")
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "somnid", "serve"],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            preexec_fn=preexec,
        )
    finally:
        log.close()


def wait_ready(
    process: subprocess.Popen[bytes],
    base_url: str,
    timeout: float = 120.0,
    data_dir: Path | None = None,
) -> None:
    """Wait until the daemon answers /v1/health; the timeout caps a hang (a loaded machine
    starts slowly, it is not broken). With ``data_dir``, the answer must be this process's
    (its ``daemon.json``): a free port picked for it may have gone to another test's daemon
    meanwhile, whose health answered while this one failed to bind."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"somnid exited early with status {process.returncode}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{base_url}/v1/health", timeout=1.0).status_code == 200 and (
                data_dir is None or _serving(data_dir, process.pid)
            ):
                return
        time.sleep(0.05)
    raise TimeoutError("somnid did not become ready")


def _serving(data_dir: Path, pid: int) -> bool:
    listening = daemon_file.read(data_dir, alive_only=False)
    return listening is not None and listening.pid == pid


PORT_TRIES = 3


@contextlib.contextmanager
def start_daemon(
    data_dir: Path, *extra_env: tuple[str, str], preexec: Callable[[], None] | None = None
) -> Iterator[Daemon]:
    """``preexec`` runs in the child before it starts (a lowered fd limit, say)."""
    for attempt in range(PORT_TRIES):
        port = free_port()
        base_url = f"http://127.0.0.1:{port}"
        log_path = data_dir.parent / f"somnid-{port}.log"
        process = spawn(data_dir, port, log_path, *extra_env, preexec=preexec)
        try:
            wait_ready(process, base_url, data_dir=data_dir)
            break
        except RuntimeError:
            taken = "address already in use" in log_path.read_text(errors="replace").lower()
            if not taken or attempt == PORT_TRIES - 1:
                raise  # else another test's daemon took the port: another one
    daemon = Daemon(process, base_url, data_dir, log_path)
    try:
        yield daemon
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)
