"""An entry moved away while a request reads it (a concurrent archive or restore, a person's
hand) is not found: 404, never a 500. A restore into the empty folder a hand-deleted entry
leaves takes it; into a folder holding a person's files, 409, and the files stay."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from somnid.store import reader, safe
from tests.api.problems import assert_problem


@pytest.fixture
def moved_on_read(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[Path]:
    """Every entry file in ``moves`` is moved out of the store right after the lookup found
    it, before it is read: as an archive running between the two would move it."""
    moves: list[Path] = []
    original = safe.present

    def present(path: Path) -> Any:
        found = original(path)
        if path in moves:
            moves.remove(path)
            shutil.move(path.parent, tmp_path / f"elsewhere-{len(moves)}-{path.parent.name}")
        return found

    monkeypatch.setattr(reader, "present", present)
    return moves


def test_an_entry_moved_away_while_it_is_read_or_changed_is_not_found(
    client: TestClient, data_dir: Path, moved_on_read: list[Path]
) -> None:
    for name in ("read-me", "patch-me", "archive-me", "put-me"):
        made = client.post("/v1/memories/knowledge", json={"name": name, "description": "d"})
        assert made.status_code == 201, made.text
    folder = data_dir / "memory/knowledge"
    moved_on_read.extend(folder / name / "SKILL.md" for name in ("read-me", "patch-me"))
    moved_on_read.extend(folder / name / "SKILL.md" for name in ("archive-me", "put-me"))
    assert_problem(client.get("/v1/memories/knowledge/read-me"), 404, "not_found")
    patched = client.patch("/v1/memories/knowledge/patch-me", json={"description": "new"})
    assert_problem(patched, 404, "not_found")
    assert_problem(client.post("/v1/memories/knowledge/archive-me/archive"), 404, "not_found")
    put = client.put("/v1/memories/knowledge/put-me", json={"description": "x", "body": "y"})
    assert_problem(put, 404, "not_found")
    assert not moved_on_read  # each was moved, as meant
    assert client.get("/v1/memories").status_code == 200


def test_a_restore_takes_an_empty_leftover_folder_and_refuses_a_persons_files(
    client: TestClient, data_dir: Path
) -> None:
    for name in ("alpha", "beta"):
        client.post("/v1/memories/knowledge", json={"name": name, "description": "d"})
        archived = client.post(f"/v1/memories/knowledge/{name}/archive")
        assert archived.status_code == 200, archived.text
    live = data_dir / "memory/knowledge"
    (live / "alpha").mkdir()  # what deleting alpha's SKILL.md by hand would have left
    restored = client.post("/v1/memories/knowledge/alpha/restore")
    assert restored.status_code == 200, restored.text
    assert (live / "alpha/SKILL.md").is_file()
    (live / "beta").mkdir()
    (live / "beta/notes.txt").write_text("a person's notes\n")
    refused = client.post("/v1/memories/knowledge/beta/restore")
    assert_problem(refused, 409, "conflict")
    assert (live / "beta/notes.txt").read_text() == "a person's notes\n"
    assert (data_dir / "memory/archived/beta/SKILL.md").is_file()
    assert os.listdir(live / "beta") == ["notes.txt"]
