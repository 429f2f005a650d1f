"""Two machines in one test: data dirs, a shared bare remote, daemons that sync with it."""

from __future__ import annotations

import contextlib
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx

from tests.daemon import Daemon, start_daemon

MARKERS = ("<<<<<<<", ">>>>>>>")


def git(where: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(where), *args], capture_output=True, text=True, check=True
    )
    return done.stdout


def bare_remote(path: Path) -> Path:
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(path)], check=True)
    git(path, "config", "user.name", "tests")
    git(path, "config", "user.email", "tests@localhost")
    return path


def env(remote: Path | str, *more: tuple[str, str]) -> tuple[tuple[str, str], ...]:
    """A daemon that syncs with ``remote`` only when asked (the interval is an hour, no
    push after writes: each test says when a round runs); ``more`` overrides."""
    return (
        ("SOMNID_HISTORY__BATCH_WINDOW_S", "0.05"),
        ("SOMNID_SYNC__REMOTE", str(remote)),
        ("SOMNID_SYNC__INTERVAL_S", "3600"),
        ("SOMNID_SYNC__PUSH_AFTER_S", "0"),
        ("SOMNID_SYNC__TIMEOUT_S", "60"),
        *more,
    )


@contextlib.contextmanager
def machine(
    data: Path,
    remote: Path | str,
    *more: tuple[str, str],
    preexec: Callable[[], None] | None = None,
) -> Iterator[Daemon]:
    data.parent.mkdir(parents=True, exist_ok=True)
    with start_daemon(data, *env(remote, *more), preexec=preexec) as daemon:
        yield daemon


def sync(daemon: Daemon) -> dict[str, Any]:
    with daemon.client(timeout=120.0) as client:
        response = client.post("/v1/sync")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    assert body["lastError"] is None, body
    return body


def status(daemon: Daemon) -> dict[str, Any]:
    with daemon.client(timeout=60.0) as client:
        response = client.get("/v1/sync/status")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def write(daemon: Daemon, name: str, body: str, **fields: Any) -> None:
    with daemon.client(timeout=60.0) as client:
        response = client.post(
            "/v1/memories/knowledge", json={"name": name, "body": body, "fields": fields}
        )
    assert response.status_code == 201, response.text


def make_skill(daemon: Daemon, name: str) -> str:
    """A learned skill made through the API; its folder, relative to the data dir."""
    with daemon.client(timeout=60.0) as client:
        made = client.post("/v1/memories/skill", json={"name": name, "body": "x"})
    assert made.status_code == 201, made.text
    return f"skills/agent_learned_skills/{name}"


def patch(daemon: Daemon, name: str, **change: Any) -> None:
    with daemon.client(timeout=60.0) as client:
        response = client.patch(f"/v1/memories/knowledge/{name}", json=change)
    assert response.status_code == 200, response.text


def read(daemon: Daemon, name: str) -> dict[str, Any] | None:
    with daemon.client(timeout=60.0) as client:
        response = client.get(f"/v1/memories/knowledge/{name}")
    if response.status_code == 404:
        return None
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def indexed(daemon: Daemon) -> int:
    with daemon.client(timeout=60.0) as client:
        count: int = client.get("/v1/index/status").json()["counts"].get("knowledge", 0)
    return count


def wait_for(check: Callable[[], bool], what: str, timeout: float = 120.0) -> None:
    """Poll ``check``; the timeout caps a hang, it is no measure of speed."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.05)


def committed(daemon: Daemon) -> bool:
    """Every write of the daemon is in a commit (the batch window has passed)."""
    out = git(daemon.data_dir, "status", "--porcelain", "--", "memory", "skills")
    return out.strip() == ""


def memory_files(data: Path) -> dict[str, str]:
    out = {}
    for top in ("memory", "skills"):
        for path in sorted((data / top).rglob("*")):
            rel = path.relative_to(data).as_posix()
            if path.is_file() and not rel.startswith("memory/session-log"):
                out[rel] = path.read_text("utf-8", "replace")
    return out


def no_markers(data: Path) -> None:
    for rel, text in memory_files(data).items():
        assert not any(mark in text for mark in MARKERS), rel


def fsck(data: Path) -> None:
    done = subprocess.run(
        ["git", "-C", str(data), "fsck", "--no-progress"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


def health(base_url: str) -> bool:
    with contextlib.suppress(httpx.HTTPError):
        return httpx.get(f"{base_url}/v1/health", timeout=5.0).status_code == 200
    return False
