"""Files and folders the daemon may not read (``chmod 000``, or made with sudo), against a
real daemon. They are broken files: reported, answered 409, skipped by listings, recall
and decay, and left alone; the file watcher goes on watching the rest.

Before: an unreadable file answered 500 on its own GET and on every listing, recall and
decay that met it, and was not reported; an unreadable folder at start-up stopped the file
watcher for good (hand edits everywhere went unseen, health "ok").

The daemon runs without the capabilities that let root read anything (``CAP_DAC_OVERRIDE``,
``CAP_DAC_READ_SEARCH``), so the file modes apply to it as to anyone else.
"""

from __future__ import annotations

import contextlib
import ctypes
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from somnid.memory.kinds import Kind
from somnid.store.layout import Layout
from tests.daemon import Daemon, start_daemon

HANG_S = 120.0  # a cap that only catches a hang
PR_CAPBSET_DROP = 24
CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH = 1, 2


def _as_anyone() -> None:
    """In the child before exec: root keeps no capability to pass file modes by (a user
    other than root never had one: the call fails, and nothing needs dropping)."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH):
        libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)


@contextlib.contextmanager
def _daemon(data: Path, *env: tuple[str, str]) -> Iterator[Daemon]:
    with start_daemon(data, *env, preexec=_as_anyone) as daemon:
        yield daemon
        assert daemon.stop() == 0


def _until(what: str, check: object) -> None:
    deadline = time.monotonic() + HANG_S
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def _broken(client: httpx.Client) -> dict[str, str]:
    answer = client.get("/v1/health")
    assert answer.status_code == 200, answer.text
    health = answer.json()
    return {item["path"]: item["reason"] for item in health["brokenFiles"]}


def _git(data: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(data), *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _synced(client: httpx.Client) -> bool:
    status = client.get("/v1/index/status").json()
    return bool(status["syncState"] == "ready" and status["lastReport"] is not None)


def _found(client: httpx.Client, query: str) -> set[str]:
    answer = client.post("/v1/recall", json={"query": query})
    assert answer.status_code == 200, answer.text
    return {item["name"] for item in answer.json()["items"]}


@pytest.mark.stress
def test_unreadable_files_and_folders_are_broken_files(tmp_path: Path) -> None:
    data = tmp_path / "data"
    layout = Layout(data)
    locked_file = layout.entry_file(Kind.KNOWLEDGE, "locked")
    locked_folder = layout.entry_file(Kind.KNOWLEDGE, "lockeddir").parent
    other = layout.entry_file(Kind.KNOWLEDGE, "other")
    # The creates' commit waits for the stop: it meets the files made unreadable meanwhile.
    batch = ("SOMNID_HISTORY__BATCH_WINDOW_S", "60")
    with _daemon(data, batch) as daemon, daemon.client(timeout=60) as client:
        for name, body in (("locked", "zebra one"), ("lockeddir", "zebra two"), ("other", "zebra")):
            made = client.post("/v1/memories/knowledge", json={"name": name, "body": body})
            assert made.status_code == 201, made.text
        locked_file.chmod(0)
        locked_folder.chmod(0)
        for name in ("locked", "lockeddir"):
            answer = client.get(f"/v1/memories/knowledge/{name}")
            assert answer.status_code == 409, answer.text
            assert answer.json()["code"] == "broken_file"
            assert (
                client.patch(f"/v1/memories/knowledge/{name}", json={"body": "x"}).status_code
                == 409
            )
        listed = client.get("/v1/memories", params={"kind": "knowledge"})
        assert listed.status_code == 200, listed.text
        assert {item["name"] for item in listed.json()["items"]} == {"other"}
        assert "other" in _found(client, "zebra")
        tool = client.post("/v1/tools/search_knowledge", json={"args": {"query": "zebra"}})
        assert tool.status_code == 200, tool.text
        assert client.post("/v1/maintenance/decay").status_code == 200
        broken = _broken(client)
        assert "not readable" in broken["memory/knowledge/locked/SKILL.md"]
        assert "memory/knowledge/lockeddir/SKILL.md" in broken
        assert locked_file.stat().st_mode & 0o777 == 0  # left alone
    # The batch was committed without what git could not read (it failed whole before).
    assert "Traceback" not in daemon.log()
    committed = _git(data, "ls-files", "memory/knowledge")
    assert "memory/knowledge/other/SKILL.md" in committed and "locked" not in committed

    # A restart with the folder still locked: the watcher sees the other entries' edits.
    with _daemon(data) as daemon, daemon.client(timeout=60) as client:
        _until("the first sync ran", lambda: _synced(client))  # the edit is the watcher's
        other.write_text(other.read_text().replace("zebra", "wildebeest"))
        _until("a hand edit reached recall", lambda: "other" in _found(client, "wildebeest"))
        assert client.get("/v1/health").json()["index"]["status"] == "ok"
        # An entry made by hand beside the locked folder is watched too, edits after its first
        # write included (the folder around it is watched alone, the new one whole).
        fresh = layout.entry_file(Kind.KNOWLEDGE, "fresh")
        fresh.parent.mkdir()
        fresh.write_text("---\nname: fresh\ndescription: made by hand\n---\naardvark\n")
        # An edit elsewhere while the watches are set up anew is caught up with.
        other.write_text(other.read_text().replace("wildebeest", "gnu"))
        _until("a new entry reached recall", lambda: "fresh" in _found(client, "aardvark"))
        _until(
            "an edit during the new plan reached recall", lambda: "other" in _found(client, "gnu")
        )
        fresh.write_text(fresh.read_text().replace("aardvark", "pangolin"))
        _until("its next edit reached recall", lambda: "fresh" in _found(client, "pangolin"))
        locked_file.chmod(0o644)
        locked_folder.chmod(0o755)
        assert client.get("/v1/memories/knowledge/locked").status_code == 200
        assert client.get("/v1/memories/knowledge/lockeddir").status_code == 200
        _until("the reports went", lambda: not _broken(client))
        _until("the edits are in history", lambda: not _git(data, "status", "--porcelain"))
        assert client.get("/v1/health").json()["history"]["status"] == "ok"
    assert "Traceback" not in daemon.log()


@pytest.mark.stress
def test_a_shut_kind_folder_hangs_no_write(tmp_path: Path) -> None:
    # With memory/episodes shut, every name in it looked taken: a create without a name
    # searched for a free one for ever, holding the store's write lock (every later write
    # hung).
    data = tmp_path / "data"
    with _daemon(data) as daemon, daemon.client(timeout=HANG_S) as client:
        assert (
            client.post("/v1/memories/knowledge", json={"name": "k", "body": "b"}).status_code
            == 201
        )
        made = client.post("/v1/memories/episode", json={"description": "first", "body": "x"})
        assert made.status_code == 201, made.text
        episodes = Layout(data).kind_dir(Kind.EPISODE)
        episodes.chmod(0)
        try:
            answer = client.post("/v1/memories/episode", json={"description": "d", "body": "x"})
            assert answer.status_code in (409, 503), answer.text  # refused, not hung
            assert answer.headers["content-type"].startswith("application/problem+json")
            patched = client.patch("/v1/memories/knowledge/k", json={"body": "still writes"})
            assert patched.status_code == 200, patched.text
        finally:
            episodes.chmod(0o700)


@pytest.mark.stress
def test_folders_read_but_not_entered_are_reported_and_answered_in_the_error_shape(
    tmp_path: Path,
) -> None:
    """A file probe: a folder that may be read but not entered (`chmod 600`: its names
    list, nothing of them does) made its entry vanish unreported and its create a 500; a
    kind folder so made emptied its listing without a word; `memory/intentions` or the
    session logs' folder so made answered 500 to every new intention or turn. And with
    `memory/` made read-only, health said storage ok while every write failed."""
    data = tmp_path / "data"
    layout = Layout(data)
    entry = layout.entry_file(Kind.KNOWLEDGE, "hidden").parent
    with _daemon(data) as daemon, daemon.client(timeout=60) as client:
        for name in ("hidden", "shown"):
            made = client.post("/v1/memories/knowledge", json={"name": name, "body": "zebra"})
            assert made.status_code == 201, made.text
        entry.chmod(0o600)
        again = client.post("/v1/memories/knowledge", json={"name": "hidden", "body": "new"})
        assert again.status_code == 409, again.text
        answer = client.get("/v1/memories/knowledge/hidden")
        assert answer.status_code == 409 and answer.json()["code"] == "broken_file"
        _until("reported", lambda: "memory/knowledge/hidden/SKILL.md" in _broken(client))
        entry.chmod(0o700)
        kinds = layout.kind_dir(Kind.KNOWLEDGE)
        kinds.chmod(0o600)
        listed = client.get("/v1/memories", params={"kind": "knowledge"})
        assert listed.status_code == 200 and listed.json()["items"] == []
        assert "a folder somnid may not read" in _broken(client)["memory/knowledge"]
        kinds.chmod(0o700)
        _until("back", lambda: "memory/knowledge" not in _broken(client))
        intentions = layout.kind_dir(Kind.INTENTION)
        intentions.chmod(0o600)
        made = client.post("/v1/intentions", json={"what": "water the plants"})
        assert made.status_code == 409 and made.json()["code"] == "broken_file", made.text
        intentions.chmod(0o700)
        assert client.post("/v1/intentions", json={"what": "water"}).status_code == 201
        said = {"messages": [{"role": "user", "text": "hello there"}]}
        client.post("/v1/sessions/s/messages", json=said)  # the folders are made
        layout.session_log_dir.chmod(0o600)
        turn = client.post("/v1/sessions/t/messages", json=said)
        assert turn.status_code == 503 and turn.json()["code"] == "storage_error", turn.text
        layout.session_log_dir.chmod(0o700)
        assert client.post("/v1/sessions/t/messages", json=said).status_code == 200
        folders = [p for p in layout.memory_dir.rglob("*") if p.is_dir()] + [layout.memory_dir]
        for folder in folders:
            folder.chmod(0o500)
        try:
            refused = client.post("/v1/memories/knowledge", json={"name": "ro", "body": "x"})
            assert refused.status_code == 503 and refused.json()["code"] == "read_only"
            storage = client.get("/v1/health").json()["storage"]
            assert storage["status"] == "degraded" and "read_only" in storage["detail"]
        finally:
            for folder in folders:
                folder.chmod(0o700)
        assert client.get("/v1/health").json()["storage"]["status"] == "ok"
    assert "Traceback" not in daemon.log()
