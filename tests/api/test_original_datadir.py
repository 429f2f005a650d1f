"""A data dir written by the original plugin opens as it is, quirks and all."""

from __future__ import annotations

import hashlib
from pathlib import Path

from fastapi.testclient import TestClient

from somnid.api.app import create_app
from somnid.config import Settings
from somnid.memory.clock import ManualClock
from tests.clients import app_client


def digest(root: Path) -> dict[str, str]:
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file()
        and path.name not in (".somnid.lock", ".gitignore")
        and not {"index", ".git"} & set(path.relative_to(root).parts)
    }  # the lock, the derived index and the history repository are somnid's own


def test_opens_without_touching_a_person_s_file(
    original_data_dir: Path, settings: Settings, clock: ManualClock
) -> None:
    before = digest(original_data_dir)
    with app_client(create_app(settings, clock=clock), settings) as client:
        health = client.get("/v1/health").json()
        assert health["status"] == "ok"
        assert health["brokenFiles"] == []
        assert health["pendingLogs"] == 1
        assert health["counts"] == {
            "knowledge": 2,
            "episode": 1,
            "intention": 2,
            "skill": 1,
            "profile": 3,
        }
        listing = client.get("/v1/memories", params={"archived": "true", "limit": 100}).json()
        names = {(item["kind"], item["name"], item["archived"]) for item in listing["items"]}
        assert ("knowledge", "old-build-flag", True) in names
        assert ("episode", "ep-20260920-080000", True) in names
        assert ("intention", "pi-20260901-001", True) in names
        assert ("profile", "default", False) in names
    assert digest(original_data_dir) == before


def test_quirky_files_read_correctly(original_data_dir: Path, client: TestClient) -> None:
    knowledge = client.get("/v1/memories/knowledge/python-venv-pitfall").json()
    assert knowledge["description"] == "用法: 总是用 venv 里的 python -m pip"
    assert knowledge["stability"] == 2 and knowledge["score"] == 0.74
    assert knowledge["created"] == "2026-09-20T00:00:00+00:00"  # a date alone, in the zone
    unverified = client.get("/v1/memories/knowledge/deploy-window").json()
    assert unverified["meta"]["ticket"] == "12-34"  # crashed the original parser
    skill = client.get("/v1/memories/skill/release-checklist").json()
    assert skill["type"] == "" and skill["description"].startswith("Before a release:")
    legacy_user = client.get("/v1/memories/profile/default").json()
    assert legacy_user["path"] == "memory/about_user.md"
    assert legacy_user["meta"]["name"] == "老王"


def test_legacy_default_profile_is_written_beside_not_over(
    original_data_dir: Path, client: TestClient
) -> None:
    legacy = (original_data_dir / "memory/about_user.md").read_bytes()
    response = client.patch("/v1/memories/profile/default", json={"body": "Prefers tables."})
    assert response.status_code == 200
    assert response.json()["path"] == "memory/users/default/about_user.md"
    assert response.json()["meta"]["name"] == "老王"
    assert (original_data_dir / "memory/about_user.md").read_bytes() == legacy
    again = client.get("/v1/memories/profile/default").json()
    assert again["body"] == "Prefers tables.\n"


def test_decay_reads_salience_from_body_bullets(
    original_data_dir: Path, client: TestClient
) -> None:
    # The clock stands at 2026-10-03; last_decay was 2026-10-01: two day-steps.
    report = client.post("/v1/maintenance/decay").json()
    after = {change["name"]: change["scoreAfter"] for change in report["decayed"]}
    assert round(after["ep-20261001-101500"], 6) == round(0.8 * 0.9**2, 6)  # salience high
    assert round(after["python-venv-pitfall"], 6) == round(0.74 * 0.95**2, 6)  # stability 2
    assert round(after["release-checklist"], 6) == round(0.6 * (1 - 0.1 / 1.5) ** 2, 6)
    assert [c["name"] for c in report["retired"]] == []
    # deploy-window: 0.3 * 0.9 = 0.27 after one day (last decay 2026-10-02): stays.
    assert round(after["deploy-window"], 6) == 0.27
    assert "pi-20261001-001" not in after  # intentions never decay
    text = (original_data_dir / "memory/episodes/ep-20261001-101500/SKILL.md").read_text()
    assert "- salience: high" in text  # the person's body is left as written
    assert "last_decay: 2026-10-03 12:00:00+00:00" in text


def test_archiving_beside_the_originals_archive(
    original_data_dir: Path, client: TestClient
) -> None:
    made = client.post("/v1/memories/knowledge", json={"name": "old-build-flag", "body": "again"})
    assert made.status_code == 201  # a live name may reuse an archived one
    archived = client.post("/v1/memories/knowledge/old-build-flag/archive").json()
    assert archived["name"] == "old-build-flag--2"
    first = (original_data_dir / "memory/archived/old-build-flag/SKILL.md").read_text()
    assert "No longer true since npm 10." in first
