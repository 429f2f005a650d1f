"""History over HTTP with the real app: a commit per write batch, per tool call, per hand
edit; the diff per entry; revert, refused when a later change touched the entry."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from somnid.memory.clock import ManualClock
from tests.api.problems import assert_problem
from tests.history.helpers import committed, git, history_client, subjects, wait_for


@pytest.fixture
def window_s() -> float:
    return 0.3


@pytest.fixture
def client(data_dir: Path, clock: ManualClock, window_s: float) -> Iterator[TestClient]:
    with history_client(data_dir, clock, window_s) as test_client:
        yield test_client


LONG = 60.0
"""A batch window no machine is too slow for: the commit comes from a read (which commits
what is pending first), never from the window ending between two steps of the test."""


def history(client: TestClient, **params: str | int) -> list[dict[str, object]]:
    response = client.get("/v1/history", params=params)
    assert response.status_code == 200, response.text
    items: list[dict[str, object]] = response.json()["items"]
    return items


@pytest.mark.parametrize("window_s", [LONG])
def test_a_write_is_acknowledged_before_its_commit_then_git_log_shows_it(
    client: TestClient, data_dir: Path
) -> None:
    response = client.post(
        "/v1/memories/knowledge",
        json={"name": "tea", "body": "green\n"},
        headers={"X-Somnid-Session": "chat-7"},
    )
    assert response.status_code == 201
    # Acknowledged, not yet committed: the commit comes after the batch window.
    assert not any("knowledge/tea" in s for s in subjects(data_dir))
    history(client)
    log = git(data_dir, "log", "-1", "--format=%an|%ae|%B")
    assert log.startswith("POST /v1/memories/knowledge|api@somnid|")
    assert "Somnid-Session: chat-7" in log
    assert git(data_dir, "show", "HEAD:memory/knowledge/tea/SKILL.md").endswith("green\n")
    # The index, the token, the logs are not in history; .gitignore keeps them out.
    tracked = git(data_dir, "ls-files").splitlines()
    assert ".gitignore" in tracked
    assert all(p.startswith(("memory/", "skills/", ".gitignore")) for p in tracked)
    assert not any(p.startswith("memory/session-log") for p in tracked)
    assert git(data_dir, "fsck", "--no-progress") == ""


@pytest.mark.parametrize("window_s", [LONG])
def test_writes_within_the_window_are_one_commit_and_the_api_lists_them(
    client: TestClient,
) -> None:
    for name in ("a1", "a2", "a3"):
        assert client.post("/v1/memories/knowledge", json={"name": name}).status_code == 201
    [commit, *_] = history(client)  # the read commits what is pending first
    assert commit["source"] == "api"
    changes = commit["changes"]
    assert isinstance(changes, list)
    assert {(c["kind"], c["name"], c["status"]) for c in changes} == {
        ("knowledge", "a1", "added"),
        ("knowledge", "a2", "added"),
        ("knowledge", "a3", "added"),
    }


def test_a_tool_call_is_its_own_author_with_its_session(client: TestClient) -> None:
    response = client.post(
        "/v1/tools/add_intention",
        json={"args": {"what": "water the plants"}, "sessionId": "s-42"},
    )
    assert response.status_code == 200, response.text
    [commit, *_] = history(client)
    assert (commit["author"], commit["source"], commit["session"]) == (
        "add_intention",
        "tool",
        "s-42",
    )


def test_hand_edits_are_their_own_commit_and_broken_files_wait(
    client: TestClient, data_dir: Path
) -> None:
    client.post("/v1/memories/knowledge", json={"name": "hand", "body": "one\n"})
    history(client)
    path = data_dir / "memory/knowledge/hand/SKILL.md"
    path.write_text(path.read_text().replace("one", "two, by hand"))
    broken = data_dir / "memory/knowledge/broken/SKILL.md"
    broken.parent.mkdir()
    broken.write_text("---\ndescription: [unclosed\n---\nbody\n")
    wait_for(lambda: subjects(data_dir)[0].startswith("Hand edit"))
    log = git(data_dir, "log", "-1", "--format=%an|%ae", "--name-only")
    assert log.startswith("hand edit|hand@somnid")
    assert "memory/knowledge/hand/SKILL.md" in log
    assert "broken" not in git(data_dir, "ls-files")  # never a file that does not parse


def test_a_folder_no_request_can_name_is_still_history_s(
    client: TestClient, data_dir: Path
) -> None:
    # Left out of searches and lists (reported, to be renamed), it was left out of history
    # too, and so of sync: an entry made by hand, or by the original plugin under a raw
    # user id, was no longer backed up.
    for rel in ("memory/knowledge/my notes/SKILL.md", "memory/users/alice@corp.com/about_user.md"):
        (data_dir / rel).parent.mkdir(parents=True)
        (data_dir / rel).write_text("---\ndescription: made by hand\n---\n\nnotes\n")
    wait_for(lambda: "my notes" in git(data_dir, "ls-files", "-z", "memory"))
    tracked = git(data_dir, "ls-files", "-z", "memory").split("\0")
    wait_for(
        lambda: (
            "memory/users/alice@corp.com/about_user.md"
            in git(data_dir, "ls-files", "-z", "memory").split("\0")
        )
    )
    assert "memory/knowledge/my notes/SKILL.md" in tracked
    listed = [item["name"] for item in client.get("/v1/memories").json()["items"]]
    assert "my notes" not in listed


def test_a_commit_shows_its_diff_per_entry(client: TestClient) -> None:
    client.post("/v1/memories/knowledge", json={"name": "diffed", "body": "before\n"})
    history(client)
    client.patch("/v1/memories/knowledge/diffed", json={"body": "after\n"})
    [commit, *_] = history(client)
    response = client.get(f"/v1/history/{commit['id']}")
    assert response.status_code == 200
    [entry] = response.json()["entries"]
    assert entry["change"]["name"] == "diffed"
    assert "-before" in entry["diff"] and "+after" in entry["diff"]
    assert_problem(client.get("/v1/history/zzzz"), 422, "validation_error")
    assert_problem(client.get("/v1/history/abcdef12"), 404, "not_found")


def test_revert_restores_bytes_and_the_index_and_refuses_over_a_later_edit(
    client: TestClient, data_dir: Path
) -> None:
    client.post("/v1/memories/knowledge", json={"name": "pet", "body": "a cat named Tom\n"})
    history(client)
    path = data_dir / "memory/knowledge/pet/SKILL.md"
    before = path.read_bytes()
    client.patch("/v1/memories/knowledge/pet", json={"body": "a dog named Rex\n"})
    [edit, create, *_] = history(client)

    # The create is followed by the edit: reverting it would lose the edit.
    refused = client.post(f"/v1/history/{create['id']}/revert")
    assert_problem(refused, 409, "revert_conflict")
    assert refused.json()["entries"][0]["path"] == "memory/knowledge/pet/SKILL.md"
    assert path.read_text().endswith("a dog named Rex\n")

    done = client.post(f"/v1/history/{str(edit['id'])[:12]}/revert")
    assert done.status_code == 200, done.text
    assert done.json()["paths"] == ["memory/knowledge/pet/SKILL.md"]
    assert path.read_bytes() == before
    hits = client.post("/v1/recall", json={"query": "Tom cat"}).json()["items"]
    assert [hit["name"] for hit in hits] == ["pet"]
    assert client.post("/v1/recall", json={"query": "Rex dog"}).json()["items"] == []
    [revert, *_] = history(client)
    assert revert["reverts"] == edit["id"]
    # Reverting twice is refused: the revert itself is the later change.
    assert_problem(client.post(f"/v1/history/{edit['id']}/revert"), 409, "revert_conflict")


def test_a_commit_undone_whole_says_by_which_until_that_is_undone_too(client: TestClient) -> None:
    """The Dreams tab could not tell a reverted dream from one that stands: the list said
    nothing of reverts."""
    client.post("/v1/memories/knowledge", json={"name": "pet", "body": "a cat named Tom\n"})
    history(client)
    client.patch("/v1/memories/knowledge/pet", json={"body": "a dog named Rex\n"})
    [edit, *_] = history(client)
    assert edit["revertedBy"] is None
    undo = client.post(f"/v1/history/{edit['id']}/revert").json()["commit"]
    [revert, edited, *_] = history(client)
    assert (revert["id"], edited["id"], edited["revertedBy"]) == (undo, edit["id"], undo)
    assert client.get(f"/v1/history/{edit['id']}").json()["commit"]["revertedBy"] == undo
    # The revert reverted: the edit stands again, and the revert is the one undone.
    redo = client.post(f"/v1/history/{undo}/revert").json()["commit"]
    listed = {item["id"]: item["revertedBy"] for item in history(client)}
    assert (listed[edit["id"]], listed[undo], listed[redo]) == (None, redo, None)
    # An entry's own history says it too.
    page = client.get("/v1/history/entries/knowledge/pet").json()["items"]
    assert {item["commit"]["id"]: item["commit"]["revertedBy"] for item in page}[undo] == redo


def test_a_revert_never_puts_back_a_name_that_differs_only_in_case(
    client: TestClient, data_dir: Path
) -> None:
    # Reverting an archive brought `case-test` back beside `Case-Test`: two entries a
    # case-insensitive file system cannot hold, which a restore refuses.
    client.post("/v1/memories/knowledge", json={"name": "case test", "body": "old\n"})
    history(client)
    client.post("/v1/memories/knowledge/case-test/archive", json={})
    [archive, *_] = history(client)
    client.post("/v1/memories/knowledge", json={"name": "Case-Test", "body": "new\n"})
    history(client)
    for url in (
        f"/v1/history/{archive['id']}/revert",
        f"/v1/history/entries/knowledge/case-test/{archive['id']}/revert",
    ):
        refused = client.post(url)
        assert_problem(refused, 409, "conflict")
        assert refused.json()["name"] == "Case-Test"
    assert [p.name for p in (data_dir / "memory/knowledge").iterdir()] == ["Case-Test"]
    assert (data_dir / "memory/archived/case-test/SKILL.md").is_file()  # nothing moved


def test_a_revert_puts_back_only_memory(client: TestClient, data_dir: Path) -> None:
    """A commit made by hand that touched a file outside memory/ and skills/ (the token,
    say): reverting it leaves that file alone (it used to delete it)."""
    made = client.post("/v1/memories/knowledge", json={"name": "k", "body": "one"})
    assert made.status_code == 201
    wait_for(lambda: "memory/knowledge/k/SKILL.md" in git(data_dir, "ls-files"), timeout=120)
    secret = data_dir / "token-by-hand"
    secret.write_text("kept\n")

    def committed_by_hand() -> bool:
        # somnid's committer may hold git's index lock a moment: try again until it is free.
        try:
            git(data_dir, "add", "-f", "token-by-hand")
            git(data_dir, "-c", "user.name=me", "-c", "user.email=me@localhost",
                "commit", "-qm", "hand", "--", "token-by-hand")  # fmt: skip
        except subprocess.CalledProcessError:
            return False
        return True

    wait_for(committed_by_hand, timeout=120)
    sha = git(data_dir, "log", "-1", "--format=%H", "--", "token-by-hand").strip()
    refused = client.post(f"/v1/history/{sha}/revert")
    assert_problem(refused, 400, "invalid_input")
    assert "changed no memory entry" in refused.json()["detail"]
    assert secret.read_text() == "kept\n"


def test_a_fifo_or_an_oversize_file_stays_out_and_never_stops_a_commit(
    client: TestClient, data_dir: Path
) -> None:
    import os

    client.post("/v1/memories/knowledge", json={"name": "odd", "body": "one\n"})
    client.post("/v1/memories/knowledge", json={"name": "plain", "body": "one\n"})
    history(client)
    notes = data_dir / "memory/knowledge/odd/notes.txt"
    notes.write_text("tracked by a hand edit\n")
    wait_for(lambda: "memory/knowledge/odd/notes.txt" in committed(data_dir))
    notes.unlink()
    os.mkfifo(notes)  # where a tracked file was: git refuses to add it, and so every commit
    big = data_dir / "memory/knowledge/plain/big.bin"
    with big.open("wb") as out:
        out.truncate(9 * 1024 * 1024)  # over the index's 8 MB
    path = data_dir / "memory/knowledge/plain/SKILL.md"
    path.write_text(path.read_text().replace("one", "two, by hand"))
    wait_for(
        lambda: "two, by hand" in git(data_dir, "show", "HEAD:memory/knowledge/plain/SKILL.md")
    )
    assert subjects(data_dir)[0].startswith("Hand edit")
    # An API write to the folder holding the FIFO commits too.
    assert client.patch("/v1/memories/knowledge/odd", json={"body": "three\n"}).status_code == 200
    history(client)
    assert "three" in git(data_dir, "show", "HEAD:memory/knowledge/odd/SKILL.md")
    tracked = git(data_dir, "ls-files")
    assert "big.bin" not in tracked
    assert "memory/knowledge/odd/notes.txt" in tracked  # its last regular version stays


@pytest.mark.parametrize("window_s", [LONG])
def test_a_repository_inside_an_entry_folder_never_takes_another_writes_commit(
    client: TestClient, data_dir: Path
) -> None:
    """A folder holding a repository of its own is left out; the writes committed with it
    stay the API's (its spec, matching nothing git knew, made the commit take nothing, and
    the hand-edit sweep then took the other entry as a person's edit)."""
    folder = data_dir / "memory/knowledge/nested"
    folder.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    for name in ("nested", "plain"):
        made = client.post("/v1/memories/knowledge", json={"name": name, "body": "one\n"})
        assert made.status_code == 201, made.text
    items = history(client)
    assert "memory/knowledge/plain/SKILL.md" in git(data_dir, "ls-files")
    assert "memory/knowledge/nested" not in git(data_dir, "ls-files")
    plain = [i for i in items if "knowledge/plain" in str(i["subject"])]
    assert plain and plain[0]["source"] == "api", items


@pytest.mark.parametrize("window_s", [LONG])
def test_editors_scratch_files_stay_out_of_history(client: TestClient, data_dir: Path) -> None:
    # Emacs's autosave (#SKILL.md#) and vim's write probe (4913) were committed with a hand
    # edit, moved with the entry on archive and kept in history; Emacs's lock (.#SKILL.md)
    # stayed untracked for ever.
    made = client.post("/v1/memories/knowledge", json={"name": "tea", "body": "green\n"})
    assert made.status_code == 201, made.text
    folder = data_dir / "memory" / "knowledge" / "tea"
    scratch = ["#SKILL.md#", ".#SKILL.md", "4913", ".SKILL.md.swo", ".SKILL.md.swp", "SKILL.md~"]
    for name in scratch:
        (folder / name).write_text("scratch\n")
    changed = client.patch("/v1/memories/knowledge/tea", json={"body": "black\n"})
    assert changed.status_code == 200, changed.text
    history(client)
    tracked = git(data_dir, "ls-files", "memory/knowledge/tea").splitlines()
    assert tracked == ["memory/knowledge/tea/SKILL.md"]
    # An entry may be named as vim's probe file is: its folder is history's.
    assert client.post("/v1/memories/knowledge", json={"name": "4913"}).status_code == 201
    history(client)
    assert git(data_dir, "ls-files", "memory/knowledge/4913") == "memory/knowledge/4913/SKILL.md\n"
    # So may one named as a temp file: `release.tmp` failed every later commit ("paths are
    # ignored"), and history and sync answered 503 until it was removed by hand.
    assert client.post("/v1/memories/knowledge", json={"name": "release.tmp"}).status_code == 201
    (data_dir / "memory/knowledge/release.tmp/SKILL.md.tmp").write_text("an editor's\n")
    history(client)
    tracked = git(data_dir, "ls-files", "memory/knowledge/release.tmp").splitlines()
    assert tracked == ["memory/knowledge/release.tmp/SKILL.md"]
    assert git(data_dir, "status", "--porcelain", "memory") == ""
    assert client.get("/v1/health").json()["history"]["status"] == "ok"


@pytest.mark.parametrize("window_s", [LONG])
def test_an_entry_folder_swapped_for_a_link_leaves_history_working(
    client: TestClient, data_dir: Path, tmp_path: Path
) -> None:
    # git refused every commit naming a path below the link ("beyond a symbolic link"):
    # history answered 503 for as long as the link stayed. And reads served the entry
    # through the link from the reader's cache.
    for name in ("stale", "other"):
        made = client.post("/v1/memories/knowledge", json={"name": name, "body": f"{name}\n"})
        assert made.status_code == 201, made.text
    assert client.get("/v1/memories/knowledge/stale").status_code == 200  # cached
    history(client)
    folder = data_dir / "memory" / "knowledge" / "stale"
    away = tmp_path / "stale-away"
    folder.rename(away)
    folder.symlink_to(away, target_is_directory=True)
    # A hand edit's commit names the path below the link; a write beside it goes on.
    assert client.patch("/v1/memories/knowledge/other", json={"body": "two\n"}).status_code == 200
    wait_for(lambda: client.get("/v1/history").status_code == 200 and git_clean_of(data_dir))
    assert client.get("/v1/health").json()["history"]["status"] == "ok"
    answer = client.get("/v1/memories/knowledge/stale")
    assert answer.status_code == 409 and answer.json()["code"] == "broken_file", answer.text
    assert git(data_dir, "show", "HEAD:memory/knowledge/other/SKILL.md").endswith("two\n")


def git_clean_of(data_dir: Path) -> bool:
    """Nothing of ``other`` waits for a commit."""
    return git(data_dir, "status", "--porcelain", "memory/knowledge/other") == ""


@pytest.mark.parametrize("window_s", [LONG])
def test_a_file_broken_within_a_write_s_batch_waits_for_its_fix(
    client: TestClient, data_dir: Path
) -> None:
    # The batch took the file as it was at its commit: a person's broken YAML went into
    # history under the API's name, where a broken hand edit waits for its fix.
    made = client.post("/v1/memories/knowledge", json={"name": "conc", "body": "narwhal\n"})
    assert made.status_code == 201, made.text
    path = data_dir / made.json()["path"]
    good = path.read_text()
    path.write_text(good.replace("description:", "description: [broken by hand\nx:"))
    history(client)  # commits what is pending
    assert "conc" not in git(data_dir, "ls-files", "memory/knowledge")
    path.write_text(good.replace("narwhal", "narwhal, mended"))
    # A history read commits what is pending, the fix once the watcher has seen it.
    wait_for(lambda: bool(history(client)) and "conc" in committed(data_dir))
    assert "mended" in git(data_dir, "show", "HEAD:memory/knowledge/conc/SKILL.md")


@pytest.mark.parametrize("window_s", [LONG])
def test_a_revert_brings_a_skill_s_script_back_executable(
    client: TestClient, data_dir: Path
) -> None:
    # Reverting the skill's archive wrote its script back 0600 and committed it 100644,
    # which the next sync carried to every machine.
    assert client.post("/v1/memories/skill", json={"name": "deploy-helper"}).status_code == 201
    script = data_dir / "skills/agent_learned_skills/deploy-helper/run.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o700)
    assert client.patch("/v1/memories/skill/deploy-helper", json={"body": "x"}).status_code == 200
    history(client)  # commits what is pending: the folder, script included
    assert "100755" in git(data_dir, "ls-files", "-s", "skills")
    assert client.post("/v1/memories/skill/deploy-helper/archive").status_code == 200
    archive = history(client, limit=1)[0]["id"]
    assert client.post(f"/v1/history/{archive}/revert").status_code == 200
    assert script.stat().st_mode & 0o100
    history(client)
    assert git(data_dir, "ls-files", "-s", str(script.relative_to(data_dir))).startswith("100755")
