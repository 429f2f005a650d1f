"""Run ``python -m somnid`` as a person would: a child process with its own environment,
pointed at a data dir and a port; on a pseudo-terminal where the output is for a person."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from tests.daemon import Daemon

_DROPPED = ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "XDG_CONFIG_HOME", "XDG_DATA_HOME")


def cli_env(data_dir: Path, port: int, **extra: str) -> dict[str, str]:
    """The environment tests/daemon.py gives its daemon, so the CLI finds that daemon."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("SOMNID_") and key not in _DROPPED
    }
    env.update(
        SOMNID_DATA_DIR=str(data_dir),
        SOMNID_PORT=str(port),
        SOMNID_HOST="127.0.0.1",
        SOMNID_EMBED__PROVIDER="off",
        SOMNID_TIMEZONE="UTC",
        XDG_CONFIG_HOME=str(data_dir.parent / "xdg-config"),
        HOME=str(data_dir.parent / "home"),
    )
    env.update(extra)
    return env


def daemon_env(daemon: Daemon, **extra: str) -> dict[str, str]:
    port = urlsplit(daemon.base_url).port
    assert port is not None
    return cli_env(daemon.data_dir, port, **extra)


def somnid(
    env: dict[str, str], *args: str, timeout: float = 60.0, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "somnid", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        stdin=subprocess.DEVNULL,
    )


@dataclass
class TerminalRun:
    returncode: int
    screen: str  # stdout and stderr as the terminal received them, control codes and all


def somnid_on_terminal(env: dict[str, str], *args: str, timeout: float = 60.0) -> TerminalRun:
    """Like :func:`somnid`, with stdout and stderr on a pseudo-terminal."""
    master, slave = os.openpty()
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "somnid", *args],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=slave,
            stderr=slave,
        )
    finally:
        os.close(slave)
    chunks: list[bytes] = []
    try:
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        returncode = process.wait(timeout=timeout)
    finally:
        os.close(master)
        if process.poll() is None:
            process.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=5)
    return TerminalRun(returncode, b"".join(chunks).decode(errors="replace"))
