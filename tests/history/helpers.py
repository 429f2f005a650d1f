"""Reading the data dir's history with git itself, as a person would."""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from somnid.api.app import create_app
from somnid.config import Settings
from somnid.memory.clock import ManualClock
from tests.clients import TEST_TOKEN, app_client

LOCK_TRIES = 600  # a minute of 0.1 s pauses: far longer than any one git of somnid's


def git(data_dir: Path, *args: str) -> str:
    """Run git in ``data_dir`` as a person would (see :func:`git_call`); its output."""
    done = git_call(data_dir, *args)
    if done.returncode != 0:
        raise subprocess.CalledProcessError(done.returncode, done.args, done.stdout, done.stderr)
    return done.stdout


def git_call(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run git in ``data_dir``, trying again (as a person would) while somnid's own git
    holds the index's lock: its commits run in the background."""
    for _ in range(LOCK_TRIES):
        done = subprocess.run(["git", "-C", str(data_dir), *args], capture_output=True, text=True)
        if done.returncode == 0 or "index.lock" not in done.stderr:
            break
        time.sleep(0.1)
    return done


def committed(data_dir: Path) -> str:
    """The paths in HEAD, one a line ("" before the first commit). Not ``git ls-files``: that
    is git's index, which holds a file between somnid's ``git add`` and its commit (a file
    removed in between is never committed at all)."""
    done = subprocess.run(
        ["git", "-C", str(data_dir), "ls-tree", "-r", "--name-only", "HEAD"],
        capture_output=True, text=True,
    )  # fmt: skip
    return done.stdout if done.returncode == 0 else ""


def subjects(data_dir: Path) -> list[str]:
    """Commit subjects, newest first ([] before the first commit)."""
    done = subprocess.run(
        ["git", "-C", str(data_dir), "log", "--format=%s"], capture_output=True, text=True
    )
    return done.stdout.splitlines() if done.returncode == 0 else []


def wait_for(check: Callable[[], bool], timeout: float = 120.0) -> None:
    """Wait until ``check`` holds; the timeout caps a hang (a loaded machine is slow)."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.05)


def take_lock(lock: Path) -> bool:
    """Hold one of git's locks as another git would: only when no git of somnid's holds it
    (writing over a lock git holds would break the file it is writing)."""
    try:
        os.close(os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True


def tree_files(data_dir: Path) -> dict[str, bytes]:
    """Every memory file a revert should restore (not the logs, the journal, .git)."""
    out: dict[str, bytes] = {}
    for top in ("memory", "skills"):
        for path in sorted((data_dir / top).rglob("*")):
            rel = path.relative_to(data_dir).as_posix()
            if path.is_file() and not rel.startswith(("memory/session-log", "memory/dream-log")):
                out[rel] = path.read_bytes()
    return out


@contextlib.contextmanager
def history_client(
    data_dir: Path, clock: ManualClock, window_s: float, **settings: Any
) -> Iterator[TestClient]:
    """The real app on ``data_dir`` with history on (a batch window of ``window_s``), no
    embeddings, and a client that sends the token."""
    config = Settings(
        data_dir=data_dir, timezone="UTC", embed={"provider": "off"}, token=TEST_TOKEN,
        history={"batch_window_s": window_s}, **settings,
    )  # fmt: skip
    with app_client(create_app(config, clock=clock), config) as client:
        yield client
