"""Forget for real: purge an entry, with its past versions on request; secrets are scrubbed
from capture before they reach the disk."""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from somnid.api.app import create_app
from somnid.config import Settings
from somnid.errors import Unavailable
from somnid.history.git import Git, GitError
from somnid.history.purge import rewrite
from somnid.memory.clock import ManualClock
from somnid.memory.scrub import scrub
from somnid.services.memories import MemoryService
from tests.api.problems import assert_problem
from tests.clients import TEST_TOKEN, app_client
from tests.history.helpers import git

SECRET = "hunter2-0xDEADBEEF-secret"
AS_ANN = ("-c", "user.name=Ann", "-c", "user.email=ann@example.org")


@pytest.fixture
def client(data_dir: Path, clock: ManualClock) -> Iterator[TestClient]:
    settings = Settings(
        data_dir=data_dir,
        timezone="UTC",
        embed={"provider": "off"},
        token=TEST_TOKEN,
        # Commits come from the reads and the purges alone: a background commit of a hand
        # edit would take what a test's own git (stash, commit) is about to take.
        history={"batch_window_s": 60},
        capture={"scrub_patterns": [r"ACME-\d{6}"]},
    )
    with app_client(create_app(settings, clock=clock), settings) as test_client:
        yield test_client


def everything_in_git(data_dir: Path) -> str:
    """Every object git still holds, reachable or not, as text."""
    objects = git(data_dir, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)")
    return "".join(git(data_dir, "cat-file", "-p", sha) for sha in objects.split())


def leak(client: TestClient) -> None:
    client.post("/v1/memories/knowledge", json={"name": "keep", "body": "tea at five\n"})
    client.post("/v1/memories/knowledge", json={"name": "leak", "body": f"pw {SECRET}\n"})
    client.get("/v1/history")
    client.patch("/v1/memories/knowledge/leak", json={"body": f"still {SECRET} here\n"})
    client.get("/v1/history")
    client.post("/v1/memories/knowledge/leak/archive", json={})
    client.get("/v1/history")


def test_purge_with_history_leaves_no_trace_and_is_audited(
    client: TestClient, data_dir: Path
) -> None:
    leak(client)
    assert SECRET in everything_in_git(data_dir)
    url = "/v1/memories/knowledge/leak/purge"
    assert_problem(client.post(url), 400, "confirmation_required")
    assert_problem(client.post(url, params={"confirm": "keep"}), 400, "confirmation_required")

    done = client.post(url, params={"confirm": "leak", "history": "true"})
    assert done.status_code == 200, done.text
    # Rewritten: the purge's own commit is gone too. (How many commits were rebuilt
    # depends on whether keep and leak were written within one batch window.)
    assert done.json()["history"] is True and done.json()["commit"] is None
    # Its edit and its archive changed nothing else: dropped, and said so (a probe saw
    # "rewrote 0 commits" after 39 were gone).
    assert done.json()["droppedCommits"] >= 2
    assert not (data_dir / "memory/archived/leak").exists()
    assert SECRET not in everything_in_git(data_dir)  # no blob, commit or tree keeps it
    assert "leak" not in git(data_dir, "log", "--all", "--name-only", "--format=")
    assert git(data_dir, "fsck", "--no-progress", "--full") == ""
    # The other entry's history is whole.
    assert git(data_dir, "show", "HEAD:memory/knowledge/keep/SKILL.md").endswith("tea at five\n")
    assert any("knowledge/keep" in c["subject"] for c in client.get("/v1/history").json()["items"])
    assert client.post("/v1/recall", json={"query": SECRET}).json()["items"] == []

    audit = data_dir / "audit.log"
    assert stat.S_IMODE(os.stat(audit).st_mode) == 0o600
    [line] = audit.read_text().splitlines()
    assert '"action": "purge"' in line and '"name": "leak"' in line and '"history": true' in line
    assert f'"dropped_commits": {done.json()["droppedCommits"]}' in line
    assert_problem(client.post(url, params={"confirm": "leak"}), 404, "not_found")


def test_purge_takes_the_entrys_older_archived_copies_too(
    client: TestClient, data_dir: Path
) -> None:
    """Archived three times, the entry has copies under leak--2 and leak--3 (archived_from:
    leak): a purge for good left them, password and all, on disk and in history."""
    for number in range(3):
        body = {"name": "leak", "body": f"pw {SECRET}-{number}\n"}
        assert client.post("/v1/memories/knowledge", json=body).status_code == 201
        assert client.post("/v1/memories/knowledge/leak/archive").status_code == 200
    client.post("/v1/memories/knowledge", json={"name": "leak", "body": f"now {SECRET}-3\n"})
    client.post("/v1/memories/knowledge", json={"name": "leak-notes", "body": "another entry\n"})
    archived = data_dir / "memory/archived"
    assert {p.name for p in archived.iterdir()} >= {"leak", "leak--2", "leak--3"}
    broken = archived / "leak--3/SKILL.md"  # one a person broke: its name says whose it is
    broken.write_text(broken.read_text().replace("---\n", "---\ndescription: [\n", 1))
    done = client.post(
        "/v1/memories/knowledge/leak/purge", params={"confirm": "leak", "history": "true"}
    )
    assert done.status_code == 200, done.text
    assert not any(p.name.startswith("leak") for p in archived.iterdir())
    assert (data_dir / "memory/knowledge/leak-notes/SKILL.md").is_file()  # another entry: kept
    assert SECRET not in everything_in_git(data_dir)
    assert set(done.json()["removed"]) >= {"memory/archived/leak--2", "memory/archived/leak--3"}


def test_purge_with_history_never_deletes_a_person_s_branches_tags_or_stash(
    client: TestClient, data_dir: Path
) -> None:
    """A probe: the rewrite deleted every ref that reached the entry's first commit, a
    person's branch (with an entry of its own), tags and stash (an edit of another entry)
    among them, then pruned them for good."""
    leak(client)
    as_ann = ["-c", "user.name=Ann", "-c", "user.email=ann@example.org"]
    git(data_dir, "checkout", "-q", "-b", "mywork")
    own = data_dir / "memory/knowledge/branch-only/SKILL.md"
    own.parent.mkdir(parents=True)
    own.write_text("---\ndescription: mine\n---\nonly on my branch\n")
    git(data_dir, "add", "memory/knowledge/branch-only")
    git(data_dir, *as_ann, "commit", "-q", "-m", "mine")
    git(data_dir, "checkout", "-q", "main")
    git(data_dir, *as_ann, "tag", "-a", "v1", "-m", "t")
    keep = data_dir / "memory/knowledge/keep/SKILL.md"
    before = keep.read_text()
    keep.write_text(before + "stashed line\n")
    git(data_dir, *as_ann, "stash", "-q")
    refs = git(data_dir, "for-each-ref", "--format=%(refname) %(objectname)")
    url = "/v1/memories/knowledge/leak/purge"
    refused = client.post(url, params={"confirm": "leak", "history": "true"})
    assert_problem(refused, 409, "conflict")
    detail = refused.json()["detail"]
    assert all(ref in detail for ref in ("heads/mywork", "tags/v1", "stash")), detail
    assert git(data_dir, "for-each-ref", "--format=%(refname) %(objectname)") == refs
    assert (data_dir / "memory/archived/leak").is_dir()  # nothing purged
    # Once the person has let them go, the purge goes through, and nothing is left.
    git(data_dir, "branch", "-q", "-D", "mywork")
    git(data_dir, "tag", "-d", "v1")
    git(data_dir, "stash", "drop", "-q")
    done = client.post(url, params={"confirm": "leak", "history": "true"})
    assert done.status_code == 200, done.text
    assert SECRET not in everything_in_git(data_dir)


def test_a_commit_a_person_makes_during_a_purge_s_rewrite_is_rebuilt_not_dropped(
    tmp_path: Path,
) -> None:
    """A probe: the branch was moved over whatever HEAD was when the rewrite ended, so a
    person's commit made meanwhile vanished (and was pruned)."""
    repo = _two_entries(tmp_path)
    as_ann = AS_ANN

    @contextlib.contextmanager
    def pruning() -> Iterator[None]:  # the person commits just before the branch moves
        (tmp_path / "memory/knowledge/keep/SKILL.md").write_text("---\ndescription: e\n---\n")
        git(tmp_path, "add", "-A", "memory")
        git(tmp_path, *as_ann, "commit", "-q", "-m", "the person's own")
        yield

    rewrite(repo, ["memory/knowledge/leak"], pruning=pruning)
    assert git(tmp_path, "log", "--format=%s").split("\n")[:2] == ["the person's own", "keep"]
    assert "description: e" in git(tmp_path, "show", "HEAD:memory/knowledge/keep/SKILL.md")
    assert SECRET not in everything_in_git(tmp_path)


def _two_entries(tmp_path: Path) -> Git:
    repo = Git(tmp_path)
    repo.open()
    for name, text in (("leak", SECRET), ("keep", "tea")):
        path = tmp_path / f"memory/knowledge/{name}/SKILL.md"
        path.parent.mkdir(parents=True)
        path.write_text(f"---\ndescription: d\n---\n{text}\n")
        git(tmp_path, "add", "-A", "memory")
        git(tmp_path, *AS_ANN, "commit", "-q", "-m", name)
    return repo


@pytest.mark.parametrize("meanwhile", ["another branch", "detached"])
def test_a_purge_ends_when_the_person_leaves_the_branch_while_it_runs(
    tmp_path: Path, meanwhile: str
) -> None:
    """A review: the branch moved only from HEAD's commit; with HEAD on another branch (or
    detached) the two never met, and the rewrite spun for ever holding history's lock."""
    repo = _two_entries(tmp_path)

    @contextlib.contextmanager
    def pruning() -> Iterator[None]:
        if meanwhile == "detached":
            git(tmp_path, "checkout", "-q", "--detach")
        else:
            git(tmp_path, "checkout", "-q", "-b", "experiment")
            git(tmp_path, *AS_ANN, "commit", "-q", "--allow-empty", "-m", "theirs")
        yield

    rewrite(repo, ["memory/knowledge/leak"], pruning=pruning)
    assert "leak" not in git(tmp_path, "log", "--name-only", "--format=", "main")
    if meanwhile != "detached":  # their branch kept as it is, its index theirs
        assert "theirs" in git(tmp_path, "log", "-1", "--format=%s", "experiment")
        assert git(tmp_path, "status", "--porcelain", "--", "memory") == ""


def test_a_purge_fails_cleanly_when_a_person_s_merge_waits_at_its_end(tmp_path: Path) -> None:
    """A re-probe: a purge ending under a person's stopped merge wiped their conflict."""
    repo = _two_entries(tmp_path)
    before = git(tmp_path, "rev-parse", "main")

    @contextlib.contextmanager
    def pruning() -> Iterator[None]:
        (tmp_path / ".git/MERGE_HEAD").write_text(before)
        yield

    with pytest.raises(GitError, match="merge is under way"):
        rewrite(repo, ["memory/knowledge/leak"], pruning=pruning)
    assert git(tmp_path, "rev-parse", "main") == before  # nothing moved, nothing lost


def test_a_purge_that_cannot_move_the_branch_says_so_at_once(tmp_path: Path) -> None:
    repo = _two_entries(tmp_path)
    before = git(tmp_path, "rev-parse", "main")

    @contextlib.contextmanager
    def pruning() -> Iterator[None]:  # another git holds the branch's lock
        (tmp_path / ".git/refs/heads/main.lock").write_text("")
        yield

    with pytest.raises(GitError, match="could not move main"):
        rewrite(repo, ["memory/knowledge/leak"], pruning=pruning)
    assert git(tmp_path, "rev-parse", "main") == before


def test_an_older_stash_holding_the_entry_refuses_the_purge_and_survives_it(
    client: TestClient, data_dir: Path
) -> None:
    """A review: only the newest stash was looked at, and every reflog was expired, the
    stash's older entries (a person's saved work) with them."""
    leak(client)
    keep = data_dir / "memory/knowledge/keep/SKILL.md"
    keep.write_text(keep.read_text() + "older stash\n")
    git(data_dir, *AS_ANN, "stash", "-q")
    url = "/v1/memories/knowledge/leak/purge"
    # Both stashes were made after the entry: each holds its past; the refusal names both.
    keep.write_text(keep.read_text() + "newer stash\n")
    git(data_dir, *AS_ANN, "stash", "-q")
    refused = client.post(url, params={"confirm": "leak", "history": "true"})
    assert_problem(refused, 409, "conflict")
    assert "stash@{0}" in refused.json()["detail"] and "stash@{1}" in refused.json()["detail"]
    assert len(git(data_dir, "stash", "list").splitlines()) == 2


def test_a_tag_of_a_tree_or_a_worktree_refuses_a_purge_with_history(
    client: TestClient, data_dir: Path, tmp_path: Path
) -> None:
    """A re-probe: a tag of a tree or a blob, and a worktree's own HEAD, kept the secret
    reachable while the purge answered done."""
    leak(client)
    url = "/v1/memories/knowledge/leak/purge"
    first = git(data_dir, "rev-list", "--reverse", "HEAD").split()[1]
    git(data_dir, "tag", "treetag", f"{first}^{{tree}}")
    refused = client.post(url, params={"confirm": "leak", "history": "true"})
    assert "tags/treetag (a tree)" in assert_problem(refused, 409, "conflict")["detail"]
    git(data_dir, "tag", "-d", "treetag")
    git(data_dir, "worktree", "add", "-q", "--detach", str(tmp_path / "wt"), "HEAD")
    refused = client.post(url, params={"confirm": "leak", "history": "true"})
    assert "other worktree" in assert_problem(refused, 409, "conflict")["detail"]
    git(data_dir, "worktree", "remove", "--force", str(tmp_path / "wt"))
    done = client.post(url, params={"confirm": "leak", "history": "true"})
    assert done.status_code == 200, done.text
    assert SECRET not in everything_in_git(data_dir)


def test_a_purge_with_history_takes_the_past_of_copies_gone_from_disk(
    client: TestClient, data_dir: Path
) -> None:
    """A re-probe: the copies archived again (u--2) were purged alone, without history; a
    later purge of u with history found them on no disk and left their past in history."""
    for number in range(2):
        body = {"name": "u", "body": f"{SECRET}-{number}\n"}
        assert client.post("/v1/memories/knowledge", json=body).status_code == 201
        assert client.post("/v1/memories/knowledge/u/archive").status_code == 200
    assert (data_dir / "memory/archived/u--2").is_dir()
    alone = client.post(
        "/v1/memories/knowledge/u/purge",
        params={"confirm": "u"},
        headers={"If-None-Match": "*"},
    )
    assert alone.status_code == 200, alone.text
    assert (
        client.post("/v1/memories/knowledge", json={"name": "u", "body": "new\n"}).status_code
        == 201
    )
    done = client.post("/v1/memories/knowledge/u/purge", params={"confirm": "u", "history": "true"})
    assert done.status_code == 200, done.text
    assert SECRET not in everything_in_git(data_dir)


def test_purge_without_history_keeps_the_past_versions(client: TestClient, data_dir: Path) -> None:
    leak(client)
    done = client.post("/v1/memories/knowledge/leak/purge", params={"confirm": "leak"})
    assert done.status_code == 200, done.text
    assert done.json()["commit"] is not None
    assert not (data_dir / "memory/archived/leak").exists()
    assert SECRET in git(data_dir, "log", "-p")  # archive-like: still in the past
    assert git(data_dir, "log", "-1", "--format=%s").startswith("Purge knowledge/leak")


def test_purge_with_if_match_deletes_only_the_version_read(
    client: TestClient, data_dir: Path
) -> None:
    # A probe: a purge sent with a stale If-Match deleted for good all the same (archive,
    # with the same ETag, answered 412).
    made = client.post("/v1/memories/knowledge", json={"name": "rp", "body": "first\n"})
    read = made.headers["etag"]
    client.patch("/v1/memories/knowledge/rp", json={"body": "second\n"}).raise_for_status()
    stale = client.post(
        "/v1/memories/knowledge/rp/purge", params={"confirm": "rp"}, headers={"If-Match": read}
    )
    problem = assert_problem(stale, 412, "precondition_failed")
    assert "changed since it was read" in problem["detail"]
    assert (data_dir / "memory/knowledge/rp/SKILL.md").read_text().endswith("second\n")
    current = client.get("/v1/memories/knowledge/rp").headers["etag"]
    done = client.post(
        "/v1/memories/knowledge/rp/purge", params={"confirm": "rp"}, headers={"If-Match": current}
    )
    assert done.status_code == 200, done.text
    assert not (data_dir / "memory/knowledge/rp").exists()
    # Nothing live to match: 412, and the archived copies stay.
    client.post("/v1/memories/knowledge", json={"name": "old", "body": "x\n"})
    etag = client.post("/v1/memories/knowledge/old/archive", json={}).headers.get("etag", '"x"')
    gone = client.post(
        "/v1/memories/knowledge/old/purge", params={"confirm": "old"}, headers={"If-Match": etag}
    )
    assert_problem(gone, 412, "precondition_failed")
    assert (data_dir / "memory/archived/old").exists()


def test_capture_scrubs_secrets_before_the_disk(client: TestClient, data_dir: Path) -> None:
    text = (
        "my key is sk-proj-abcdefghijklmnopqrstuvwx and db postgres://bob:s3cretpass@db/x, "
        "password=opensesame1 and order ACME-123456"
    )
    response = client.post(
        "/v1/sessions/chat-1/messages", json={"messages": [{"role": "user", "text": text}]}
    )
    assert response.status_code == 200, response.text
    written = "".join(p.read_text() for p in (data_dir / "memory/session-log").glob("*.md"))
    for secret in ("sk-proj-abcdefghij", "s3cretpass", "opensesame1", "ACME-123456"):
        assert secret not in written
    assert "postgres://bob:[REDACTED]@db/x" in written
    assert "password=[REDACTED]" in written


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaA\n-----END OPENSSH PRIVATE KEY-----", ""),
        ("Authorization: Bearer abcdefghijklmnop123", "Authorization: Bearer "),
        ("ghp_" + "a" * 36, ""),
        ("AKIAABCDEFGHIJKLMNOP", ""),
        ('"api_key": "zzzzzzzzzzzz"', '"api_key": "'),
    ],
)
def test_the_obvious_secrets(text: str, kept: str) -> None:
    assert scrub(text) == kept + "[REDACTED]" + ('"' if text.endswith('"') else "")


def test_ordinary_text_is_left_alone() -> None:
    text = "The token ring network and my password manager; see https://example.org/a:b@c"
    assert scrub(text) == text


def test_doctor_says_when_git_is_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from somnid.cli.doctor_checks import Context
    from somnid.cli.doctor_history import history_check
    from somnid.history.service import off_reason

    settings = Settings(data_dir=tmp_path / "data", embed={"provider": "off"})
    monkeypatch.setenv("PATH", str(tmp_path))  # no git on the PATH
    [finding] = history_check(Context(settings, None))  # type: ignore[arg-type]
    assert finding.level == "WARN" and "git binary is missing" in finding.message
    assert off_reason(settings) is not None


def test_purge_of_an_archived_copy_never_takes_a_live_namesake(
    client: TestClient, data_dir: Path
) -> None:
    # The browser checked for a live namesake, then purged: one made in between went too.
    # With If-None-Match: * the daemon checks as it deletes.
    client.post("/v1/memories/knowledge", json={"name": "kites", "body": "old\n"})
    client.post("/v1/memories/knowledge/kites/archive").raise_for_status()
    client.post("/v1/memories/knowledge", json={"name": "kites", "body": "live\n"})
    only = {"If-None-Match": "*"}
    purge = "/v1/memories/knowledge/kites/purge"
    refused = client.post(purge, params={"confirm": "kites"}, headers=only)
    problem = assert_problem(refused, 412, "precondition_failed")
    assert "a purge would delete it too" in problem["detail"]
    assert (data_dir / "memory/knowledge/kites/SKILL.md").exists()
    assert (data_dir / "memory/archived/kites/SKILL.md").exists()
    both = {**only, "If-Match": refused.headers.get("etag", '"x"')}
    assert_problem(
        client.post(purge, params={"confirm": "kites"}, headers=both), 400, "invalid_input"
    )
    client.post("/v1/memories/knowledge/kites/archive").raise_for_status()  # now kites--2
    done = client.post(purge, params={"confirm": "kites"}, headers=only)
    assert done.status_code == 200, done.text
    assert not list((data_dir / "memory/archived").glob("kites*"))


def test_purge_leaves_no_copy_in_the_index_files(client: TestClient, data_dir: Path) -> None:
    # The index's WAL (and its free pages, its full-text segments) held the text until the
    # next checkpoint.
    leak(client)
    assert client.post("/v1/recall", json={"query": "hunter2"}).status_code == 200
    done = client.post("/v1/memories/knowledge/leak/purge", params={"confirm": "leak"})
    assert done.status_code == 200, done.text
    index_files = [p for p in (data_dir / "index").rglob("*") if p.is_file()]
    assert index_files
    for path in index_files:
        assert SECRET.encode() not in path.read_bytes(), path.name
    found = client.post("/v1/recall", json={"query": "tea"}).json()
    assert [item["name"] for item in found["items"]] == ["keep"]


def test_a_purge_done_while_the_index_is_unreachable_answers_done(
    client: TestClient, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A PostgreSQL index down after the files and history were purged: the purge stands
    (503 told the client a destructive call failed that had succeeded; a retry said 404)."""
    leak(client)

    async def unreachable(self: MemoryService, entry: object, path: str) -> None:
        raise Unavailable("the index is unreachable", code="index_unavailable")

    monkeypatch.setattr(MemoryService, "notify", unreachable)
    done = client.post(
        "/v1/memories/knowledge/leak/purge", params={"confirm": "leak", "history": "true"}
    )
    assert done.status_code == 200, done.text
    assert not (data_dir / "memory/knowledge/leak").exists()
    assert SECRET not in everything_in_git(data_dir)
