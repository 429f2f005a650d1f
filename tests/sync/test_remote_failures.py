"""A remote that is down or refuses the push never stops writes: the status says why and
the next sync catches up. A SIGKILL in the middle of a sync leaves a repository git fsck
accepts, and a daemon that starts and syncs."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import httpx
import pytest

from somnid.history.git import Git
from somnid.sync.remote import Remote, SyncError
from tests.cli.runner import daemon_env, somnid
from tests.daemon import Daemon
from tests.sync.helpers import (
    bare_remote,
    fsck,
    git,
    machine,
    memory_files,
    no_markers,
    read,
    status,
    sync,
    write,
)


def _refused(daemon: Daemon) -> dict[str, object]:
    with daemon.client(timeout=120.0) as client:
        response = client.post("/v1/sync")
    assert response.status_code == 503, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    problem: dict[str, object] = response.json()
    assert problem["code"] == "sync_failed", problem
    return problem


def test_a_remote_that_is_down_or_refuses_only_delays(tmp_path: Path) -> None:
    missing = tmp_path / "not-yet"
    with machine(tmp_path / "a" / "data", missing) as a:
        write(a, "written-while-down", "still here\n")
        problem = _refused(a)
        assert str(missing) in str(problem["detail"])
        said = status(a)
        assert said["state"] == "failed" and said["lastError"], said
        assert read(a, "written-while-down") is not None  # writes go on
        write(a, "also-while-down", "and this\n")

        # The command line says it too: `somnid sync` fails with git's reason, status and
        # doctor show the last error.
        env = daemon_env(a, SOMNID_SYNC__REMOTE=str(missing))
        ran = somnid(env, "sync")
        assert ran.returncode == 1 and "not-yet" in ran.stderr, ran
        shown = somnid(env, "status")
        assert shown.returncode == 0 and "failed: could not fetch" in shown.stdout, shown
        doctor = somnid(env, "doctor", "--json")
        [finding] = [f for f in json.loads(doctor.stdout)["findings"] if f["check"] == "sync"]
        assert finding["level"] == "WARN" and "failed" in finding["message"], finding

        # The remote is back but refuses the push: a repository with main checked out
        # (git's default refuses to update it). Fetching works; the push is refused.
        subprocess.run(["git", "init", "-q", "-b", "main", str(missing)], check=True)
        git(missing, "config", "user.name", "tests")
        git(missing, "config", "user.email", "tests@localhost")
        git(missing, "commit", "-q", "--allow-empty", "-m", "the remote's start")
        problem = _refused(a)
        assert "refused the push" in str(problem["detail"]), problem
        assert status(a)["ahead"] > 0

        git(missing, "config", "receive.denyCurrentBranch", "updateInstead")  # it takes it
        done = sync(a)  # the next round catches up
        assert done["state"] == "idle" and (done["ahead"], done["behind"]) == (0, 0)
        for name in ("written-while-down", "also-while-down"):
            assert (missing / f"memory/knowledge/{name}/SKILL.md").is_file()


def test_a_password_in_the_remote_url_is_never_shown(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Not in the error, not in the status, not in the log (git's own words quote it)."""
    url = "http://me:s3cret-pw@127.0.0.1:9/memory.git"  # port 9: nothing listens
    data = tmp_path / "data"
    data.mkdir()
    git_ = Git(data)
    git_.open()
    remote = Remote(git_, url, timeout_s=60.0)
    assert remote.shown == "http://me:***@127.0.0.1:9/memory.git"
    with pytest.raises(SyncError) as failed:
        remote.fetch()
    assert "127.0.0.1:9" in failed.value.detail
    with pytest.raises(SyncError) as refused:
        remote.push("0" * 40)
    for text in (failed.value.detail, refused.value.detail, caplog.text):
        assert "s3cret-pw" not in text


@pytest.mark.parametrize(
    ("said", "moved_on"),
    [
        ("! refs/heads/main [rejected] (fetch first)", True),
        ("error: cannot lock ref 'refs/heads/main': is at 1a2b but expected 3c4d", True),
        ("error: failed to update ref 'refs/heads/main'", True),
        ("remote: permission denied", False),
    ],
)
def test_a_push_the_remote_moved_past_is_tried_again_not_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, said: str, moved_on: bool
) -> None:
    """Another machine's push that landed between the remote's answer and this one's update
    is said as a ref git could not lock or update: fetch, merge and push again (False),
    like a rejection; any other refusal is an error."""
    data = tmp_path / "data"
    data.mkdir()
    git_ = Git(data)
    git_.open()
    remote = Remote(git_, str(tmp_path / "remote.git"), timeout_s=60.0)
    monkeypatch.setattr(remote, "_call", lambda *args: (1, said))
    if moved_on:
        assert remote.push("0" * 40) is False
    else:
        with pytest.raises(SyncError, match="refused the push"):
            remote.push("0" * 40)


SYNC_GIT = (
    " fetch ", " push ", " merge-tree ", " merge-base ", " commit-tree ", " read-tree ",
    " diff-tree ", " ls-tree ", " cat-file ", " update-ref ", " update-index ", "somnid.sync",
)  # fmt: skip
"""What a sync runs (the committer runs status, add, diff, commit, rev-parse, ls-files)."""


def _git_children(pid: int) -> list[str]:
    """The command lines of ``pid``'s children that are a sync's git (or merge driver)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        if parent == pid and any(verb in f" {cmdline}" for verb in SYNC_GIT):
            found.append(cmdline)
    return found


def _post_sync(daemon: Daemon) -> None:
    with daemon.client(timeout=120.0) as client, contextlib.suppress(httpx.HTTPError):
        client.post("/v1/sync")


def test_sigkill_during_a_sync_leaves_a_repository_that_syncs(tmp_path: Path) -> None:
    remote = bare_remote(tmp_path / "remote.git")
    a_data, b_data = tmp_path / "a" / "data", tmp_path / "b" / "data"
    with machine(b_data, remote) as b:  # the other machine, pushing things to pull
        for number in range(12):
            write(b, f"from-b-{number}", f"entry {number}\n")
        sync(b)
        # The remote holds a push in its pre-receive hook while the gate exists: a sync's
        # git is then still running when the poll below looks, however slow the machine
        # (it once missed every short git of six rounds at load 9).
        gate = tmp_path / "gate"
        gate.touch()
        hook = remote / "hooks" / "pre-receive"
        hook.write_text(
            f"#!/bin/sh\ni=0\nwhile [ -e '{gate}' ] && [ $i -lt 6000 ]; do\n"
            "  sleep 0.05; i=$((i + 1))\ndone\n"
        )
        hook.chmod(0o755)
        caught, mine = 0, []
        for round_ in range(6):
            with machine(a_data, remote, preexec=os.setsid) as a:
                write(a, f"from-a-{round_}", "mine\n")
                mine.append(f"from-a-{round_}")
                worker = threading.Thread(target=_post_sync, args=(a,))
                worker.start()
                # Kill somnid and its git child together the moment a sync's git runs.
                deadline = time.monotonic() + 120.0
                while worker.is_alive() and not _git_children(a.process.pid):
                    assert time.monotonic() < deadline, "the sync never ended"
                    time.sleep(0.001)
                if worker.is_alive():
                    os.killpg(a.process.pid, signal.SIGKILL)
                    a.process.wait(timeout=60)
                    caught += 1
                worker.join(timeout=120)
            fsck(a_data)
            if caught:
                break
            write(b, f"more-from-b-{round_}", "more\n")  # something new to pull
            sync(b)
        assert caught, "no sync was caught with a git running"
        gate.unlink()
        hook.unlink()
        with machine(a_data, remote) as a:
            sync(a)
            fsck(a_data)
            no_markers(a_data)
            assert read(a, "from-b-11") is not None
        sync(b)
        for name in mine:  # every acknowledged write of a's, killed or not
            assert read(b, name) is not None, name
    assert memory_files(a_data) == memory_files(b_data)
