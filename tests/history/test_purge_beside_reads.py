"""A purge that rewrites a long history keeps history reads answering (issue 26): a real
daemon, a history of a few hundred commits, the purge's rewrite held at its first rebuilt
commit by a ``git`` the test controls (a wrapper on the daemon's PATH that waits on a FIFO),
and meanwhile ``GET /v1/history`` and the other reads answer, and a revert or a second
purge is refused at once (409) rather than left hanging. The purge said up front how many
commits it goes through and how long they should take."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import subprocess
import threading
from pathlib import Path
from typing import Any

from tests.api.problems import assert_problem
from tests.daemon import start_daemon
from tests.history.helpers import git, wait_for

HISTORY = 300
SECRET_AT = HISTORY - 20  # the rewrite goes through the last 21 commits only: a quick test
SECRET = "s3cr3t-passphrase-0xFEED"


def entry(name: str, body: str) -> bytes:
    return (
        f"---\nname: {name}\ndescription: {name}\nstability: 1\nscore: 0.5\n"
        f"created: 2026-10-01\nlast_used: 2026-10-01\nlast_decay: 2026-10-01\n---\n\n{body}"
    ).encode()


def build_history(data: Path) -> None:
    """``HISTORY`` commits in one ``git fast-import`` (a second, not minutes): a note edited
    in each, the secret entry created at ``SECRET_AT`` and edited once more; the work tree
    as the last commit left it."""
    data.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "--initial-branch=main", str(data)], check=True)
    git(data, "config", "gc.auto", "0")
    stream = bytearray()
    files: dict[str, bytes] = {}
    for number in range(1, HISTORY + 1):
        changed = {"memory/knowledge/note/SKILL.md": entry("note", f"edit {number}\n")}
        if number == SECRET_AT:
            changed["memory/knowledge/leak/SKILL.md"] = entry("leak", f"pw {SECRET}\n")
        if number == SECRET_AT + 10:
            changed["memory/knowledge/leak/SKILL.md"] = entry("leak", f"still {SECRET}\n")
        files.update(changed)
        message = b"api: knowledge/note\n\nSomnid-Source: api\n"
        stream += b"commit refs/heads/main\n"
        stream += f"mark :{number}\n".encode()
        stream += f"author api <api@somnid> {1_790_000_000 + number} +0000\n".encode()
        stream += f"committer somnid <somnid@localhost> {1_790_000_000 + number} +0000\n".encode()
        stream += f"data {len(message)}\n".encode() + message
        if number > 1:
            stream += f"from :{number - 1}\n".encode()
        for path, data_bytes in changed.items():
            stream += f"M 100644 inline {path}\ndata {len(data_bytes)}\n".encode() + data_bytes
        stream += b"\n"
    subprocess.run(
        ["git", "-C", str(data), "fast-import", "--quiet"], input=bytes(stream), check=True
    )
    for path, data_bytes in files.items():
        target = data / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data_bytes)
    git(data, "read-tree", "HEAD")


def held_git(folder: Path) -> tuple[Path, Path, Path]:
    """A ``git`` that waits at its first ``commit-tree`` (the rewrite's first rebuilt
    commit) until the test writes a line into the FIFO; every other run is git itself.
    Returns the folder to put first on PATH, the FIFO and the file that says it waits."""
    real = shutil.which("git")
    assert real is not None
    bin_dir, fifo, waiting = folder / "bin", folder / "release", folder / "waiting"
    bin_dir.mkdir(parents=True)
    os.mkfifo(fifo)
    script = bin_dir / "git"
    script.write_text(
        "#!/bin/sh\n"
        'case " $* " in *" commit-tree "*)\n'
        f'  if [ ! -e "{waiting}" ]; then : > "{waiting}"; read line < "{fifo}"; fi;;\n'
        "esac\n"
        f'exec "{real}" "$@"\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return bin_dir, fifo, waiting


def release(fifo: Path) -> None:
    """Let the held git go on (nothing happens if nobody waits)."""
    with contextlib.suppress(OSError):  # ENXIO: no reader, nothing held
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        try:
            os.write(fd, b"go\n")
        finally:
            os.close(fd)


def test_history_reads_answer_while_a_long_purge_runs(tmp_path: Path) -> None:
    data = tmp_path / "data"
    build_history(data)
    bin_dir, fifo, waiting = held_git(tmp_path / "gate")
    env = (
        ("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}"),
        ("SOMNID_HISTORY__BATCH_WINDOW_S", "0.1"),
    )
    answer: dict[str, Any] = {}
    with start_daemon(data, *env) as daemon, daemon.client(timeout=120) as api:
        wait_for(lambda: api.get("/v1/history", params={"limit": 1}).json()["total"] >= HISTORY)
        assert api.get("/v1/history/purge").json() == {
            "running": False, "kind": None, "name": None, "history": False, "startedAt": None,
            "phase": None, "commits": 0, "done": 0, "estimatedSeconds": None,
            "remainingSeconds": None, "elapsedSeconds": 0.0,
        }  # fmt: skip

        before = int(git(data, "rev-list", "--count", "HEAD"))  # with somnid's start commit

        def purge() -> None:
            with daemon.client(timeout=600) as own:
                response = own.post(
                    "/v1/memories/knowledge/leak/purge",
                    params={"confirm": "leak", "history": "true"},
                )
                answer["status"], answer["body"] = response.status_code, response.json()

        worker = threading.Thread(target=purge)
        worker.start()
        try:
            wait_for(
                lambda: (
                    waiting.exists() and api.get("/v1/history/purge").json()["phase"] == "rewriting"
                )
            )
            status = api.get("/v1/history/purge").json()
            assert status["running"] and (status["kind"], status["name"]) == ("knowledge", "leak")
            # From the secret's first commit on, and the purge's own commit.
            assert status["commits"] == before - (SECRET_AT - 1) + 1
            assert status["done"] == 0 and status["estimatedSeconds"] > 0

            # A write meanwhile: acknowledged at once, its commit waits for the purge.
            created = api.post("/v1/memories/knowledge", json={"name": "tea", "body": "green\n"})
            assert created.status_code == 201, created.text
            # The purged name made again meanwhile: committed as the purge, it failed the
            # rewrite (git rm --cached), and the old text stayed in history.
            remade = api.post("/v1/memories/knowledge", json={"name": "leak", "body": "new\n"})
            assert_problem(remade, 409, "purge_running")
            page = api.get("/v1/history", params={"limit": 5})
            assert page.status_code == 200, page.text
            assert page.json()["total"] >= HISTORY
            newest = page.json()["items"][0]["id"]
            assert api.get(f"/v1/history/{newest}").status_code == 200
            notes = api.get("/v1/history/entries/knowledge/note", params={"limit": 3})
            assert notes.status_code == 200 and notes.json()["total"] == HISTORY
            # A change would wait for git behind the rewrite: refused at once instead.
            assert_problem(api.post(f"/v1/history/{newest}/revert"), 409, "purge_running")
            again = api.post("/v1/memories/knowledge/note/purge", params={"confirm": "note"})
            assert_problem(again, 409, "purge_running")
            assert worker.is_alive() and api.get("/v1/history/purge").json()["running"]
        finally:
            release(fifo)
            worker.join(timeout=600)
        assert answer["status"] == 200, answer
        remade = api.post("/v1/memories/knowledge", json={"name": "leak", "body": "new\n"})
        assert remade.status_code == 201, remade.text  # once the purge is done
        body = answer["body"]
        # The purge's own commit changed nothing but the entry: dropped.
        assert body["rewrittenCommits"] == before - (SECRET_AT - 1) and body["commit"] is None
        assert body["estimatedSeconds"] > 0 and body["seconds"] > 0
        assert api.get("/v1/history/purge").json()["running"] is False
        # The write made during the purge is committed after it.
        wait_for(
            lambda: any(
                change["name"] == "tea"
                for item in api.get("/v1/history", params={"limit": 3}).json()["items"]
                for change in item["changes"]
            )
        )
    every_object = subprocess.run(  # one git for all: a thousand `cat-file -p` take seconds
        ["git", "-C", str(data), "cat-file", "--batch-all-objects", "--batch"],
        capture_output=True, check=True,
    ).stdout  # fmt: skip
    assert b"edit 1\n" in every_object and SECRET.encode() not in every_object
    audit = (data / "audit.log").read_text()
    assert '"estimated_seconds":' in audit
    assert f'"rewritten_commits": {before - SECRET_AT + 1}' in audit
