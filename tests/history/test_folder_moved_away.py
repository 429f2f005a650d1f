"""memory/ moved away while somnid runs (to a backup, by a tool, by mistake): writes are
refused with 503 rather than begin a new, nearly empty memory in its place, health says so,
and history commits nothing meanwhile, so it never records every entry as deleted (which
sync would then carry to every machine). Put back, everything goes on; made again empty (a
person starting afresh), its entries' removal is committed as a hand edit."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from somnid.memory.clock import ManualClock
from tests.api.problems import assert_problem
from tests.history.helpers import git, history_client, subjects, wait_for


@pytest.fixture
def client(data_dir: Path, clock: ManualClock) -> Iterator[TestClient]:
    with history_client(data_dir, clock, 0.2) as test_client:
        yield test_client


def _deleted(data_dir: Path) -> list[str]:
    return git(data_dir, "log", "--diff-filter=D", "--name-only", "--format=").split()


def _storage(client: TestClient) -> dict[str, str | None]:
    storage: dict[str, str | None] = client.get("/v1/health").json()["storage"]
    return storage


def test_memory_moved_away_is_neither_remade_nor_committed_as_deleted(
    client: TestClient, data_dir: Path, tmp_path: Path
) -> None:
    for name in ("alpha", "beta"):
        made = client.post("/v1/memories/knowledge", json={"name": name, "description": "d"})
        assert made.status_code == 201, made.text
    skill = client.post("/v1/memories/skill", json={"name": "deploy", "description": "how"})
    assert skill.status_code == 201, skill.text
    wait_for(lambda: any("skill/deploy" in s for s in subjects(data_dir)))

    away = tmp_path / "backup"
    shutil.move(data_dir / "memory", away)
    wait_for(lambda: _storage(client)["status"] == "degraded")
    assert "memory/ is missing" in str(_storage(client)["detail"])
    made = client.post("/v1/memories/knowledge", json={"name": "gamma", "description": "d"})
    assert_problem(made, 503, "folder_missing")
    said = client.post(
        "/v1/sessions/s1/messages", json={"messages": [{"role": "user", "text": "hi"}]}
    )
    assert_problem(said, 503, "folder_missing")
    assert not (data_dir / "memory").exists()
    purged = client.post("/v1/memories/skill/deploy/purge", params={"confirm": "deploy"})
    assert_problem(purged, 503, "folder_missing")  # before anything is deleted
    # Its entries are not gone (a 404 would say so): the folder is away.
    for answer in (
        client.get("/v1/memories/knowledge/alpha"),
        client.patch("/v1/memories/knowledge/alpha", json={"description": "e"}),
        client.post("/v1/memories/knowledge/beta/archive"),
    ):
        assert_problem(answer, 503, "folder_missing")
    # somnid's own readers skip what is away: recall still answers, from skills/.
    recalled = client.post("/v1/recall", json={"query": "deploy how"})
    assert recalled.status_code == 200, recalled.text
    # A hand edit meanwhile (skills/ is still there) wakes history's sweep: it waits too.
    skill_file = data_dir / "skills/agent_learned_skills/deploy/SKILL.md"
    skill_file.write_text(skill_file.read_text() + "\nEdited while memory/ was away.\n")

    shutil.move(away, data_dir / "memory")
    wait_for(lambda: any(s.startswith("Hand edit: skill/deploy") for s in subjects(data_dir)))
    assert _deleted(data_dir) == []
    assert _storage(client) == {"status": "ok", "detail": None}
    assert client.get("/v1/memories/knowledge/alpha").status_code == 200
    made = client.post("/v1/memories/knowledge", json={"name": "gamma", "description": "d"})
    assert made.status_code == 201, made.text


def test_memory_made_again_empty_is_a_fresh_start_history_keeps_the_old(
    client: TestClient, data_dir: Path, tmp_path: Path
) -> None:
    made = client.post("/v1/memories/knowledge", json={"name": "old", "description": "d"})
    assert made.status_code == 201, made.text
    wait_for(lambda: any(s.startswith("POST /v1/memories/knowledge") for s in subjects(data_dir)))
    shutil.rmtree(data_dir / "memory")
    wait_for(lambda: _storage(client)["status"] == "degraded")
    (data_dir / "memory").mkdir()
    wait_for(lambda: "memory/knowledge/old/SKILL.md" in _deleted(data_dir))
    assert next(s for s in subjects(data_dir) if "knowledge/old" in s).startswith("Hand edit")
    made = client.post("/v1/memories/knowledge", json={"name": "new", "description": "d"})
    assert made.status_code == 201, made.text
    assert _storage(client) == {"status": "ok", "detail": None}


def test_an_empty_skills_folder_removed_holds_no_commit_back(
    client: TestClient, data_dir: Path
) -> None:
    # A review: any missing top folder stopped every commit; skills/, never used, holds
    # nothing history keeps.
    shutil.rmtree(data_dir / "skills")
    made = client.post("/v1/memories/knowledge", json={"name": "still", "description": "d"})
    assert made.status_code == 201, made.text
    wait_for(lambda: any("knowledge/still" in s for s in subjects(data_dir)))
    skill = client.post("/v1/memories/skill", json={"name": "s", "description": "d"})
    assert_problem(skill, 503, "folder_missing")  # made again only by a person (or a start)


def test_memory_moved_away_with_gits_index_gone_is_still_not_deleted(
    client: TestClient, data_dir: Path, tmp_path: Path
) -> None:
    # A review: history's files were looked for in git's index alone; without one (a
    # person removed it, a crash), memory/ away read as holding nothing, and was deleted.
    made = client.post("/v1/memories/knowledge", json={"name": "kept", "description": "d"})
    assert made.status_code == 201, made.text
    wait_for(lambda: any("knowledge/kept" in s for s in subjects(data_dir)))
    (data_dir / ".git/index").unlink()
    shutil.move(data_dir / "memory", tmp_path / "away")
    wait_for(lambda: _storage(client)["status"] == "degraded")
    skill = client.post("/v1/memories/skill", json={"name": "s", "description": "d"})
    assert skill.status_code == 201, skill.text  # skills/ is there: its write goes on
    assert_problem(client.get("/v1/history"), 503, "folder_missing")  # nothing committed
    shutil.move(tmp_path / "away", data_dir / "memory")
    wait_for(lambda: any("skill/s" in s for s in subjects(data_dir)))
    assert _deleted(data_dir) == []


def test_a_kind_s_folder_moved_away_is_neither_remade_nor_committed_as_deleted(
    client: TestClient, data_dir: Path, tmp_path: Path
) -> None:
    """An index probe: `mv memory/knowledge /tmp/x` committed every knowledge entry's
    deletion (sync would carry it to every machine), health said ok, the next create made
    a new, empty folder, and the folder put back landed inside it."""
    for name in ("alpha", "beta"):
        made = client.post("/v1/memories/knowledge", json={"name": name, "description": "d"})
        assert made.status_code == 201, made.text
    wait_for(lambda: any("knowledge/beta" in s for s in subjects(data_dir)))
    away = tmp_path / "knowledge"
    shutil.move(data_dir / "memory/knowledge", away)
    wait_for(lambda: _storage(client)["status"] == "degraded")
    assert "knowledge/ is missing" in str(_storage(client)["detail"])
    made = client.post("/v1/memories/knowledge", json={"name": "gamma", "description": "d"})
    assert_problem(made, 503, "folder_missing")
    assert_problem(client.get("/v1/memories/knowledge/alpha"), 503, "folder_missing")
    episode = client.post("/v1/memories/episode", json={"name": "walk", "description": "d"})
    assert episode.status_code == 201, episode.text  # the other kinds go on
    wait_for(lambda: _storage(client)["status"] == "degraded")
    shutil.move(away, data_dir / "memory/knowledge")
    wait_for(lambda: _storage(client) == {"status": "ok", "detail": None})
    assert client.get("/v1/memories/knowledge/alpha").status_code == 200
    assert client.post("/v1/memories/knowledge", json={"name": "gamma"}).status_code == 201
    wait_for(lambda: any("knowledge/gamma" in s for s in subjects(data_dir)))
    assert _deleted(data_dir) == []
    # A kind's folder history holds nothing of (git removes one with its last file, as a
    # sync's merge may) is not away: health ok, a read not found, the next write makes it.
    (data_dir / "memory/users").rmdir()
    assert _storage(client) == {"status": "ok", "detail": None}
    assert_problem(client.get("/v1/memories/profile/ou_1"), 404, "not_found")
    profile = client.post("/v1/memories/profile", json={"name": "ou_1", "body": "Ann."})
    assert profile.status_code == 201, profile.text
    # The skills' one kind folder alike (the review: with no other kind's folder beside it,
    # it was taken for a fresh start, made again, and every skill committed as deleted).
    skill = client.post("/v1/memories/skill", json={"name": "deploy", "description": "how"})
    assert skill.status_code == 201, skill.text
    wait_for(lambda: any("skill/deploy" in s for s in subjects(data_dir)))
    shutil.move(data_dir / "skills/agent_learned_skills", tmp_path / "skills-away")
    wait_for(lambda: _storage(client)["status"] == "degraded")
    again = client.post("/v1/memories/skill", json={"name": "other", "description": "d"})
    assert_problem(again, 503, "folder_missing")
    shutil.move(tmp_path / "skills-away", data_dir / "skills/agent_learned_skills")
    wait_for(lambda: _storage(client) == {"status": "ok", "detail": None})
    assert _deleted(data_dir) == []
