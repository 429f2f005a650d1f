"""SIGKILL during a commit (somnid and its git child alike) leaves a repository that
``git fsck`` accepts, and no acknowledged write is lost: the next start commits it."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from tests.daemon import read_token, start_daemon
from tests.history.helpers import git

ENV = (("SOMNID_HISTORY__BATCH_WINDOW_S", "0.02"),)


def _write_until_killed(base_url: str, token: str, prefix: str, acked: list[str]) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=base_url, headers=headers, timeout=5.0) as client:
        for number in range(10_000):
            name = f"{prefix}-{number}"
            try:
                response = client.post(
                    "/v1/memories/knowledge", json={"name": name, "body": f"{name}\n"}
                )
            except httpx.HTTPError:
                return
            if response.status_code == 201:
                acked.append(name)


def _wait_for(condition: Callable[[], bool], what: str, timeout: float = 120.0) -> None:
    """Wait for ``condition`` (polled), however slow the machine; fail saying ``what``."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.005)


def test_sigkill_during_commits_loses_nothing(tmp_path: Path) -> None:
    """Each round waits for what it needs (writes acknowledged, then git's index lock
    held), never for a time: a slow machine only makes the rounds longer."""
    data = tmp_path / "data"
    acked: list[str] = []
    caught_in_commit = 0
    for round_ in range(6):
        if round_ >= 3 and caught_in_commit:
            break
        with start_daemon(data, *ENV, preexec=os.setsid) as daemon:
            writer = threading.Thread(
                target=_write_until_killed,
                args=(daemon.base_url, read_token(data), f"r{round_}", acked),
            )
            before = len(acked)
            writer.start()
            want = before + 8
            _wait_for(lambda: len(acked) >= want, "8 writes acknowledged in this round")  # noqa: B023
            lock = data / ".git" / "index.lock"
            with contextlib.suppress(AssertionError):
                _wait_for(lock.exists, "git holding its index lock", timeout=10.0)
            caught_in_commit += lock.exists()
            os.killpg(daemon.process.pid, signal.SIGKILL)  # somnid and its git child
            daemon.process.wait(timeout=60)
            writer.join(timeout=60)
    assert caught_in_commit >= 1, "never killed while git held its index lock"
    assert len(acked) > 20
    (data / ".git" / "index.lock").write_text("")  # a stale lock for sure, as git leaves it

    with start_daemon(data, *ENV) as daemon, daemon.client() as client:
        assert client.get("/v1/history", params={"limit": 1}).status_code == 200
        tracked = set(git(data, "ls-tree", "-r", "--name-only", "HEAD").splitlines())
        missing = [n for n in acked if f"memory/knowledge/{n}/SKILL.md" not in tracked]
        assert missing == []
        assert git(data, "status", "--porcelain") == ""
        # Objects a killed commit wrote but never referenced are dangling: garbage git's gc
        # collects, not damage (fsck reports them as information and exits 0).
        assert git(data, "fsck", "--no-progress", "--full", "--strict", "--no-dangling") == ""
        for name in acked:
            assert (data / f"memory/knowledge/{name}/SKILL.md").read_text().endswith(f"{name}\n")
