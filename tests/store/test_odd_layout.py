"""A data dir a person rearranged: a file where somnid keeps a folder of entries is
reported and left alone; everything else answers."""

from __future__ import annotations

from pathlib import Path

from somnid.api.app import create_app
from somnid.config import Settings
from somnid.memory.clock import ManualClock
from tests.api.problems import assert_problem
from tests.clients import app_client


def test_a_file_where_a_kind_s_folder_belongs(
    settings: Settings, clock: ManualClock, data_dir: Path
) -> None:
    junk = data_dir / "memory" / "knowledge"
    junk.parent.mkdir(parents=True)
    junk.write_text("junk\n")
    with app_client(create_app(settings, clock=clock), settings) as client:
        health = client.get("/v1/health")
        assert health.status_code == 200, health.text
        assert health.json()["status"] == "degraded"
        assert "memory/knowledge" in {item["path"] for item in health.json()["brokenFiles"]}
        listed = client.get("/v1/memories")
        assert listed.status_code == 200, listed.text
        made = client.post("/v1/memories/knowledge", json={"name": "k", "description": "d"})
        assert_problem(made, 409, "broken_file")
        episode = client.post("/v1/memories/episode", json={"description": "still works"})
        assert episode.status_code == 201, episode.text
        assert client.post("/v1/index/sync").status_code == 200
        assert_problem(client.get("/v1/memories/knowledge/k"), 404, "not_found")
        assert junk.read_text() == "junk\n"
        junk.unlink()  # a person puts the folder back
        junk.mkdir()
        made = client.post("/v1/memories/knowledge", json={"name": "k", "description": "d"})
        assert made.status_code == 201, made.text
        # History's catch-up at start may have met the file turning into a folder under it
        # (git refused that commit: health says so until the next commit succeeds). A
        # history read commits what is noted now, so health is read after a commit.
        assert client.get("/v1/history").status_code == 200
        health = client.get("/v1/health").json()
        assert health["status"] == "ok" and health["brokenFiles"] == [], health


def test_an_entry_moved_under_another_kind_is_reported_not_lost_from_sight(
    settings: Settings, clock: ManualClock, data_dir: Path
) -> None:
    """An ops probe: `mv memory/knowledge/gamma memory/intentions/` left a SKILL.md where an
    INTENT.md belongs; the entry left every listing and recall, and doctor said every file
    reads."""
    with app_client(create_app(settings, clock=clock), settings) as client:
        assert client.post("/v1/memories/knowledge", json={"name": "gamma"}).status_code == 201
        moved = data_dir / "memory/intentions/gamma"
        moved.parent.mkdir(parents=True, exist_ok=True)
        (data_dir / "memory/knowledge/gamma").rename(moved)
        assert client.get("/v1/memories", params={"kind": "intention"}).json()["items"] == []
        health = client.get("/v1/health").json()
        [report] = [item for item in health["brokenFiles"] if "gamma" in item["path"]]
        assert report["path"] == "memory/intentions/gamma/SKILL.md"
        assert "INTENT.md, not SKILL.md" in report["reason"], report
        assert health["status"] == "degraded"
        moved.rename(data_dir / "memory/knowledge/gamma")  # put back
        assert client.get("/v1/memories/knowledge/gamma").status_code == 200
        health = client.get("/v1/health").json()
        assert not any("gamma" in item["path"] for item in health["brokenFiles"]), health
