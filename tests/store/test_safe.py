"""Odd files where an entry's file belongs, against a real daemon: a FIFO is a broken entry
that never wedges the daemon, a symlinked entry folder is never followed."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.daemon import start_daemon


@pytest.mark.stress
def test_a_fifo_is_a_broken_entry_and_never_wedges_the_daemon(tmp_path: Path) -> None:
    with start_daemon(tmp_path / "data", ("SOMNID_SHUTDOWN_TIMEOUT_S", "5")) as daemon:
        with daemon.client() as client:
            made = client.post("/v1/memories/skill", json={"name": "plumb", "body": "pipes"})
            assert made.status_code == 201
            other = client.post("/v1/memories/knowledge", json={"name": "n", "body": "first"})
            skill_file = daemon.data_dir / made.json()["path"]
            other_file = daemon.data_dir / other.json()["path"]

            def indexed(word: str) -> bool:
                hits = client.post("/v1/recall", json={"query": word}, timeout=30)
                return any(h["name"] == "n" for h in hits.json()["items"])

            def broken() -> bool:
                health = client.get("/v1/health", timeout=30).json()
                return any("plumb" in item["path"] for item in health["brokenFiles"])

            # The watcher is up once it has seen a hand edit (never a guessed second).
            other_file.write_text(other_file.read_text().replace("first", "watched"))
            _until(lambda: indexed("watched"), "the watcher never saw a hand edit")
            skill_file.unlink()
            os.mkfifo(skill_file)
            _until(broken, "the FIFO never showed as a broken file")
            other_file.write_text(other_file.read_text().replace("watched", "zanzibar"))
            _until(lambda: indexed("zanzibar"), "hand edits are no longer indexed")
            got = client.get("/v1/memories/skill/plumb", timeout=30)
            assert got.status_code == 409 and got.json()["code"] == "broken_file", got.text
        # A FIFO read on shutdown would block for ever: the daemon stops by itself, in its
        # budget (the budget's wall-clock figure is measured in bench/, not here).
        daemon.process.send_signal(signal.SIGTERM)
        assert daemon.process.wait(timeout=120) == 0, daemon.log()


def _until(check: Callable[[], bool], what: str, timeout: float = 120.0) -> None:
    """Wait for ``check`` (a cap for a hang, not a figure: a loaded machine is slow)."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_a_symlinked_entry_folder_is_never_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    with start_daemon(tmp_path / "data") as daemon, daemon.client() as client:
        made = client.post("/v1/memories/skill", json={"name": "real", "body": "mine"})
        folder = (daemon.data_dir / made.json()["path"]).parent
        outside.mkdir()
        (outside / "SKILL.md").write_text("---\nname: evil\ndescription: d\n---\nsecret\n")
        before = (outside / "SKILL.md").read_bytes()
        os.symlink(outside, folder.parent / "evil")
        read = client.get("/v1/memories/skill/evil")
        assert read.json()["code"] == "broken_file", read.text
        patch = client.patch("/v1/memories/skill/evil", json={"body": "pwned"})
        assert patch.json()["code"] == "broken_file", patch.text
        archive = client.post("/v1/memories/skill/evil/archive")
        assert archive.json()["code"] == "broken_file", archive.text
        create = client.post("/v1/memories/skill", json={"name": "evil", "body": "x"})
        assert create.status_code in (409, 422), create.text
        assert client.get("/v1/memories/skill/real").status_code == 200
    assert (outside / "SKILL.md").read_bytes() == before
    assert sorted(p.name for p in outside.iterdir()) == ["SKILL.md"]
