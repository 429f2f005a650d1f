"""git refusing to commit (a stale index.lock, a full disk) and odd commit text: the writes
stay the writes they are, health says history is behind, and history reads never 500."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from somnid.memory.clock import ManualClock
from tests.api.problems import assert_problem
from tests.history.helpers import git, git_call, history_client, subjects, take_lock, wait_for


@pytest.fixture
def client(data_dir: Path, clock: ManualClock) -> Iterator[TestClient]:
    with history_client(data_dir, clock, 0.2) as test_client:
        yield test_client


def test_a_write_git_refused_is_committed_as_itself_once_it_takes_it(
    client: TestClient, data_dir: Path
) -> None:
    wait_for(lambda: bool(subjects(data_dir)))  # the start's commit is made
    lock = data_dir / ".git" / "index.lock"
    wait_for(lambda: take_lock(lock))  # another git, or one that was killed, holds the index
    made = client.post("/v1/memories/knowledge", json={"name": "under-lock", "description": "d"})
    assert made.status_code == 201, made.text
    wait_for(lambda: client.get("/v1/health").json()["history"]["status"] == "degraded")
    health = client.get("/v1/health").json()
    assert health["status"] == "degraded" and "index.lock" in health["history"]["detail"]
    # A listing commits what is pending first: it cannot, and says so rather than leave it out.
    assert_problem(client.get("/v1/history"), 503, "history_error")
    lock.unlink()
    wait_for(lambda: client.get("/v1/health").json()["history"]["status"] == "ok")
    items = client.get("/v1/history").json()["items"]
    changed = [c for c in items if any(ch["name"] == "under-lock" for ch in c["changes"])]
    assert [c["source"] for c in changed] == ["api"]
    assert not [s for s in subjects(data_dir) if s.startswith("Hand edit")]


def test_an_old_index_lock_no_git_holds_is_cleared_while_running(
    client: TestClient, data_dir: Path
) -> None:
    # A review: a lock the start left to a person's running git stayed once that git was
    # gone (it ended killed), history degraded until the next restart.
    wait_for(lambda: bool(subjects(data_dir)))
    lock = data_dir / ".git" / "index.lock"
    wait_for(lambda: take_lock(lock))  # as a killed git leaves it, an hour ago
    hour_ago = time.time() - 3600
    os.utime(lock, (hour_ago, hour_ago))
    made = client.post("/v1/memories/knowledge", json={"name": "after-lock", "description": "d"})
    assert made.status_code == 201, made.text
    assert client.get("/v1/history").status_code == 200  # committed: the lock was cleared
    assert not lock.exists()
    assert any("knowledge/after-lock" in s for s in subjects(data_dir))


def test_odd_bytes_in_a_commit_message_do_not_break_history(
    data_dir: Path, clock: ManualClock
) -> None:
    # Commits come from the reads alone: a background one would take the person's edit first.
    with history_client(data_dir, clock, 60) as client:
        made = client.post("/v1/memories/knowledge", json={"name": "k", "description": "one"})
        assert made.status_code == 201, made.text
        assert client.get("/v1/history").status_code == 200  # committed
        path = data_dir / made.json()["path"]
        path.write_text(path.read_text().replace("one", "two"))
        git(data_dir, "add", "memory")
        git(data_dir, "-c", "user.name=Ann", "-c", "user.email=ann@example.org",
            "commit", "-q", "-m", "evil\x1esplit\x1ffield message")  # fmt: skip
        check_odd_message(client)


def check_odd_message(client: TestClient) -> None:
    listed = client.get("/v1/history")
    assert listed.status_code == 200, listed.text
    newest = listed.json()["items"][0]
    assert newest["subject"] == "evil\x1esplit\x1ffield message"
    assert newest["source"] == "hand" and newest["author"] == "Ann"
    entry = client.get("/v1/history/entries/knowledge/k")
    assert entry.status_code == 200, entry.text


def test_a_gitignore_a_person_wrote_is_kept_beside_somnid_s(
    data_dir: Path, clock: ManualClock
) -> None:
    data_dir.mkdir(parents=True)
    (data_dir / ".gitignore").write_text("node_modules/\n")
    with history_client(data_dir, clock, 0.2) as client:
        assert client.get("/v1/health").status_code == 200
    assert (data_dir / ".gitignore.before-somnid").read_text() == "node_modules/\n"
    assert (data_dir / ".gitignore").read_text().startswith("# somnid keeps the history")


def test_nothing_is_committed_onto_a_detached_head(client: TestClient, data_dir: Path) -> None:
    wait_for(lambda: bool(subjects(data_dir)))
    made = client.post("/v1/memories/knowledge", json={"name": "before", "description": "d"})
    assert made.status_code == 201, made.text
    assert client.get("/v1/history").status_code == 200  # committed on main
    git(data_dir, "checkout", "-q", "--detach")
    made = client.post("/v1/memories/knowledge", json={"name": "detached", "description": "d"})
    assert made.status_code == 201, made.text
    wait_for(lambda: client.get("/v1/health").json()["history"]["status"] == "degraded")
    assert "detached" in client.get("/v1/health").json()["history"]["detail"]
    git(data_dir, "checkout", "-q", "main")
    wait_for(lambda: client.get("/v1/health").json()["history"]["status"] == "ok")
    assert "knowledge/detached" in git(data_dir, "log", "-1", "--name-only", "--format=", "main")
    assert (data_dir / made.json()["path"]).is_file()


def test_a_repository_a_person_made_on_master_is_put_on_main(
    data_dir: Path, clock: ManualClock
) -> None:
    # A review: somnid now commits only onto main, and a data dir a person had made a git
    # repository of (`git init`: master) refused every commit, `git checkout main` failing.
    data_dir.mkdir(parents=True)
    subprocess.run(["git", "-C", str(data_dir), "init", "-q", "-b", "master"], check=True)
    (data_dir / "notes.txt").write_text("mine\n")
    git(data_dir, "add", "notes.txt")
    git(data_dir, "-c", "user.name=Ann", "-c", "user.email=a@b", "commit", "-q", "-m", "mine")
    with history_client(data_dir, clock, 0.2) as client:
        made = client.post("/v1/memories/knowledge", json={"name": "k", "description": "d"})
        assert made.status_code == 201, made.text
        assert client.get("/v1/history").status_code == 200
        assert client.get("/v1/health").json()["history"]["status"] == "ok"
    assert git(data_dir, "symbolic-ref", "HEAD").strip() == "refs/heads/main"
    assert git(data_dir, "log", "-1", "--format=%s", "master").strip() == "mine"  # theirs, kept
    assert "knowledge/k" in git(data_dir, "log", "--name-only", "--format=", "main")


def test_nothing_is_committed_onto_a_person_s_branch(client: TestClient, data_dir: Path) -> None:
    # A re-probe: after `git checkout -b other` somnid committed the next write onto it.
    wait_for(lambda: bool(subjects(data_dir)))
    git(data_dir, "checkout", "-q", "-b", "other")
    made = client.post("/v1/memories/knowledge", json={"name": "on-other", "description": "d"})
    assert made.status_code == 201, made.text
    wait_for(lambda: client.get("/v1/health").json()["history"]["status"] == "degraded")
    assert "another branch" in client.get("/v1/health").json()["history"]["detail"]
    git(data_dir, "checkout", "-q", "main")
    wait_for(lambda: client.get("/v1/health").json()["history"]["status"] == "ok")
    assert "knowledge/on-other" in git(data_dir, "log", "-1", "--name-only", "--format=", "main")
    assert "on-other" not in git(data_dir, "log", "--name-only", "--format=", "other")


def test_nothing_is_staged_while_a_person_s_merge_waits_and_their_abort_loses_nothing(
    client: TestClient, data_dir: Path
) -> None:
    # A probe: somnid's `git add` during a person's stopped merge marked their conflict
    # resolved, and their `git merge --abort` took the writes staged meanwhile with it (an
    # acknowledged create gone from disk, a PATCH undone).
    wait_for(lambda: bool(subjects(data_dir)))
    made = client.post("/v1/memories/knowledge", json={"name": "k", "description": "one"})
    assert made.status_code == 201, made.text
    assert client.get("/v1/history").status_code == 200  # committed
    notes = data_dir / "memory" / "notes.txt"
    as_ann = ["-c", "user.name=Ann", "-c", "user.email=ann@example.org"]
    git(data_dir, "checkout", "-q", "-b", "other")
    notes.write_text("other\n")
    git(data_dir, "add", "memory/notes.txt")
    git(data_dir, *as_ann, "commit", "-q", "-m", "other")
    git(data_dir, "checkout", "-q", "main")
    notes.write_text("main\n")
    git(data_dir, "add", "memory/notes.txt")
    # Empty if somnid took the file first, as a hand edit: the merge conflicts all the same.
    git(data_dir, *as_ann, "commit", "-q", "--allow-empty", "-m", "main")
    stopped = git_call(data_dir, *as_ann, "merge", "other")
    assert stopped.returncode != 0 and (data_dir / ".git" / "MERGE_HEAD").exists()
    # Health says so before any write fails (a probe: `ok` while every write was a 503).
    held = client.get("/v1/health").json()
    assert held["status"] == "degraded" and held["history"]["status"] == "degraded", held
    assert "merge is under way" in held["history"]["detail"], held
    # A write while it waits is refused, never acknowledged: the abort resets the files
    # (a re-probe: a PATCH of the conflicted entry, answered 200, was undone by it).
    during = client.post("/v1/memories/knowledge", json={"name": "during", "description": "d"})
    assert_problem(during, 503, "git_under_way")
    patched = client.patch("/v1/memories/knowledge/k", json={"description": "two"})
    assert "merge" in assert_problem(patched, 503, "git_under_way")["detail"]
    hand = data_dir / "memory/knowledge/hand/SKILL.md"  # a hand edit meanwhile is not staged
    hand.parent.mkdir(parents=True)
    hand.write_text("---\ndescription: by hand\n---\n")
    # Reads go on (a review: a recall's noting of the use failed the recall), upkeep waits.
    recalled = client.post("/v1/tools/recall_memories", json={"args": {"query": "one"}})
    assert recalled.status_code == 200 and not recalled.json()["isError"], recalled.text
    assert client.post("/v1/maintenance/decay").status_code == 200
    wait_for(lambda: client.get("/v1/health").json()["history"]["status"] == "degraded")
    assert "merge" in client.get("/v1/health").json()["history"]["detail"]
    assert git(data_dir, "ls-files", "-u")  # the person's conflict is still theirs
    settled = client.delete(  # a sync conflict settled writes too (a review)
        "/v1/sync/conflicts", params={"path": "memory/knowledge/k/SKILL.conflict-0123456789ab.md"}
    )
    assert_problem(settled, 503, "git_under_way")
    git(data_dir, "merge", "--abort")
    wait_for(lambda: client.get("/v1/health").json()["history"]["status"] == "ok")
    during = client.post("/v1/memories/knowledge", json={"name": "during", "description": "d"})
    assert during.status_code == 201, during.text
    assert hand.is_file() and client.get("/v1/history").status_code == 200
    assert "knowledge/during" in git(data_dir, "log", "-3", "--name-only", "--format=", "main")


def test_a_start_leaves_the_index_lock_of_a_person_s_running_git(
    data_dir: Path, clock: ManualClock
) -> None:
    # A probe: somnid's start removed the index.lock of a person's `git commit -a` waiting
    # for its editor, committed their staged change as its own, and their commit failed.
    with history_client(data_dir, clock, 0.2) as client:
        made = client.post("/v1/memories/knowledge", json={"name": "k", "description": "one"})
        assert made.status_code == 201, made.text
        assert client.get("/v1/history").status_code == 200  # committed
    entry = data_dir / made.json()["path"]
    entry.write_text(entry.read_text().replace("one", "two"))
    go = data_dir.parent / "editor-may-end"
    editor = f"sh -c 'while [ ! -e {go} ]; do sleep 0.05; done; echo by hand > \"$1\"' editor"
    person = subprocess.Popen(
        ["git", "-c", "user.name=Ann", "-c", "user.email=ann@example.org",
         "commit", "-q", "-a"],
        cwd=data_dir, env={**os.environ, "GIT_EDITOR": editor}, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        lock = data_dir / ".git" / "index.lock"
        wait_for(lock.exists)
        with history_client(data_dir, clock, 0.2) as client:
            wait_for(lambda: client.get("/v1/health").json()["history"]["status"] == "degraded")
            assert lock.exists() and person.poll() is None
            go.write_text("")
            said = person.communicate(timeout=60)[0]
            assert person.returncode == 0, said
            wait_for(lambda: client.get("/v1/health").json()["history"]["status"] == "ok")
        assert git(data_dir, "log", "-1", "--format=%an").strip() == "Ann"
    finally:
        go.write_text("")
        person.communicate(timeout=60)


def test_a_nul_in_a_dream_s_trigger_stops_no_commit(client: TestClient, data_dir: Path) -> None:
    # A probe: the dream's commit message held the trigger, git refused the argument
    # ("embedded null byte"), and every commit after it failed until a restart.
    wait_for(lambda: bool(subjects(data_dir)))  # the start's commit is made
    slept = client.post("/v1/sleep/run", json={"trigger": "a\u0000b", "wait": True})
    assert slept.status_code == 200, slept.text
    made = client.post("/v1/memories/knowledge", json={"name": "after", "description": "d"})
    assert made.status_code == 201, made.text
    listed = client.get("/v1/history")
    assert listed.status_code == 200, listed.text
    assert any(s.startswith("Dream (ab") for s in subjects(data_dir))  # the NUL dropped
    assert any("knowledge/after" in s for s in subjects(data_dir))
    assert client.get("/v1/health").json()["history"]["status"] == "ok"
