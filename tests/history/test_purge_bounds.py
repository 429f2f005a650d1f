"""A purge deletes an entry and nothing else, all of it or none of it: never through a
link to outside the data dir, never a folder holding no entry, never the files first and
then a 503 because git could not take the commit, never half of an entry's copies. And
git reads the files while no write moves them (a history read raced archives: 503)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from somnid.errors import Conflict
from somnid.history import service as history_service
from somnid.history import staging
from somnid.history.git import GitError
from somnid.memory.clock import ManualClock
from somnid.memory.kinds import Kind
from tests.api.problems import assert_problem
from tests.history.helpers import history_client, subjects, take_lock, wait_for


@pytest.fixture
def client(data_dir: Path, clock: ManualClock) -> Iterator[TestClient]:
    with history_client(data_dir, clock, 0.1) as test_client:
        yield test_client


def _make(client: TestClient, name: str, body: str = "b") -> None:
    made = client.post("/v1/memories/knowledge", json={"name": name, "body": body})
    assert made.status_code == 201, made.text


def _purge(client: TestClient, name: str, **params: str) -> Any:
    url = f"/v1/memories/knowledge/{name}/purge"
    return client.post(url, params={"confirm": name, **params})


def _audited(data_dir: Path) -> str:
    audit = data_dir / "audit.log"
    return audit.read_text() if audit.exists() else ""


def test_a_purge_never_deletes_through_a_link(
    client: TestClient, data_dir: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    (outside / "photos").mkdir(parents=True)
    (outside / "photos" / "SKILL.md").write_text("---\nname: photos\n---\nprecious\n")
    knowledge = data_dir / "memory/knowledge"
    knowledge.rename(data_dir / "memory/knowledge.real")
    knowledge.symlink_to(outside)
    assert_problem(_purge(client, "photos"), 409, "broken_file")
    assert (outside / "photos" / "SKILL.md").read_text().endswith("precious\n")


def test_a_purge_with_a_copy_behind_a_link_removes_nothing(
    client: TestClient, data_dir: Path, tmp_path: Path
) -> None:
    # A review: with memory/archived a link, the live entry went and the copy stayed (200).
    _make(client, "x", "first")
    assert client.post("/v1/memories/knowledge/x/archive", json={}).status_code == 200
    _make(client, "x", "second")
    archived = data_dir / "memory/archived"
    archived.rename(tmp_path / "archived")
    archived.symlink_to(tmp_path / "archived")
    assert_problem(_purge(client, "x"), 409, "broken_file")
    assert client.get("/v1/memories/knowledge/x").status_code == 200
    assert (tmp_path / "archived/x/SKILL.md").is_file()


def test_a_folder_holding_no_entry_is_not_purged(client: TestClient, data_dir: Path) -> None:
    drafts = data_dir / "memory/knowledge/drafts"
    drafts.mkdir(parents=True)
    (drafts / "notes.md").write_text("a person's notes\n")
    assert_problem(_purge(client, "drafts"), 404, "not_found")
    assert (drafts / "notes.md").read_text() == "a person's notes\n"


@pytest.mark.parametrize("held", ["index.lock", "HEAD.lock", "refs/heads/main.lock"])
def test_a_purge_git_cannot_commit_deletes_nothing(
    client: TestClient, data_dir: Path, held: str
) -> None:
    _make(client, "secret", "pw zebra42")
    wait_for(lambda: any("knowledge/secret" in s for s in subjects(data_dir)))
    lock = data_dir / ".git" / held
    wait_for(lambda: take_lock(lock))
    assert_problem(_purge(client, "secret"), 503, "history_error")
    assert client.get("/v1/memories/knowledge/secret").status_code == 200
    assert "secret" not in _audited(data_dir)
    lock.unlink()
    assert _purge(client, "secret").status_code == 200
    assert '"name": "secret"' in _audited(data_dir)
    assert subjects(data_dir)[0] == "Purge knowledge/secret"


def test_a_purge_that_cannot_remove_every_path_removes_none(
    client: TestClient, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An archived copy in a folder somnid may not change (chmod 555, as a user other than
    # root sees it): the live entry was deleted, the copy stayed, and the answer was 503.
    _make(client, "x")
    assert client.post("/v1/memories/knowledge/x/archive", json={}).status_code == 200
    _make(client, "x")
    stuck = data_dir / "memory/archived/x"
    real_access = os.access
    monkeypatch.setattr(
        os, "access", lambda path, mode: Path(path) != stuck and real_access(path, mode)
    )
    assert_problem(_purge(client, "x"), 503, "read_only")
    assert client.get("/v1/memories/knowledge/x").status_code == 200
    assert (stuck / "SKILL.md").is_file()


def test_an_archive_while_a_purge_begins_is_refused_not_left_behind(
    client: TestClient, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A probe: live x and an archived x; archiving x while its purge listed the copies
    # moved it to archived/x--2, which the purge never deleted (and answered 200).
    _make(client, "x", "first")
    assert client.post("/v1/memories/knowledge/x/archive", json={}).status_code == 200
    _make(client, "x", "second")
    raced: list[str] = []
    listed = history_service.History._archived_copies

    async def listing_then_archive(self: Any, kind: Kind, name: str) -> list[str]:
        copies: list[str] = await listed(self, kind, name)
        try:
            await self.memories.archive(kind, name, reason="archived as the purge begins")
            raced.append("archived")
        except Conflict as exc:
            raced.append(exc.code)
        return copies

    monkeypatch.setattr(history_service.History, "_archived_copies", listing_then_archive)
    done = _purge(client, "x")
    assert done.status_code == 200, done.text
    assert raced == ["purge_running"]
    archived = data_dir / "memory/archived"
    assert not [p.name for p in archived.iterdir() if p.name.startswith("x")]
    assert "second" not in "".join(p.read_text() for p in data_dir.rglob("SKILL.md"))


def test_a_file_moved_while_git_reads_it_is_read_again(
    client: TestClient, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A probe: archives and restores racing a history read or a purge made git's add fail
    # ("unable to stat", "could not open directory"): 503 for half of the reads.
    added = staging._add
    raced: list[str] = []

    def add(git: Any, specs: list[str], env: dict[str, str]) -> list[str]:
        if "knowledge/k" in str(specs) and len(raced) < 2:  # twice in a row
            raced.append("raced")
            raise GitError(
                "git add failed (128): error: unable to stat just-written file "
                "memory/knowledge/k/SKILL.md: No such file or directory"
            )
        result: list[str] = added(git, specs, env)
        return result

    monkeypatch.setattr(staging, "_add", add)
    _make(client, "k")
    assert client.get("/v1/history").status_code == 200
    assert raced == ["raced", "raced"]
    assert any("knowledge/k" in s for s in subjects(data_dir))
