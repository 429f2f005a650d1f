"""Upkeep (a use noted, a score decayed) leaves alone a file someone else modified a moment
ago: a person writing it in place (``cat >``, a script) still has it open, and a rename over
it took the rest of what they wrote into the unlinked old file. Found by a probe: a recall
0.7 s into a two-second write kept only the first half.

The quiet time is an hour here and a settled file's age is set two hours back with
``os.utime``, so nothing here depends on how fast the machine is."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from somnid.errors import BeingWritten
from somnid.memory.clock import ManualClock
from somnid.memory.kinds import Kind
from somnid.services import memories as memories_service
from somnid.store.frontmatter import Document
from tests.store.test_store import START
from tests.stores import open_store

HOUR = 3600.0


def _stamp(doc: Document) -> None:
    doc.meta["score"] = 0.5


def _aged(path: Path, seconds: float) -> None:
    when = time.time() - seconds
    os.utime(path, (when, when))


def test_upkeep_yields_to_a_file_modified_a_moment_ago_by_someone_else(tmp_path: Path) -> None:
    store = open_store(tmp_path, ManualClock(START))
    path = tmp_path / store.create(Kind.KNOWLEDGE, "k", meta={"description": "d"}, body="b").path
    store.mutate(Kind.KNOWLEDGE, "k", _stamp, quiet_s=HOUR)  # its own write a moment ago: fine
    half = path.read_text() + "the first half of what a person types\n"
    path.write_text(half)
    with pytest.raises(BeingWritten):
        store.mutate(Kind.KNOWLEDGE, "k", lambda doc: doc.meta.update(score=0.4), quiet_s=HOUR)
    assert path.read_text() == half
    store.update(Kind.KNOWLEDGE, "k", body="a person's write through the API")  # not upkeep
    path.write_text(path.read_text() + "more\n")
    _aged(path, 2 * HOUR)  # settled
    store.mutate(Kind.KNOWLEDGE, "k", lambda doc: doc.meta.update(score=0.3), quiet_s=HOUR)
    assert "score: 0.3" in path.read_text() and "more" in path.read_text()
    _aged(path, -2 * HOUR)  # a clock far ahead wrote it (touch -d, rsync -t): no write now
    store.mutate(Kind.KNOWLEDGE, "k", lambda doc: doc.meta.update(score=0.2), quiet_s=HOUR)
    assert "score: 0.2" in path.read_text()


def test_a_recall_does_not_rewrite_a_file_being_written(client: TestClient, data_dir: Path) -> None:
    made = client.post(
        "/v1/memories/knowledge",
        json={"name": "capybara", "description": "capybara notes", "body": "about capybaras"},
    )
    assert made.status_code == 201, made.text
    path = data_dir / made.json()["path"]
    typed = path.read_text() + "FIRST HALF of the person's text\n"
    path.write_text(typed)  # still being written
    tool = client.post("/v1/tools/recall_memories", json={"args": {"query": "capybara notes"}})
    assert tool.status_code == 200 and "capybara" in tool.json()["result"], tool.text
    assert path.read_text() == typed  # no use noted over it
    _aged(path, 2 * HOUR)
    again = client.post("/v1/tools/recall_memories", json={"args": {"query": "capybara notes"}})
    assert again.status_code == 200, again.text
    assert "last_used" in path.read_text() and "FIRST HALF" in path.read_text()


def test_a_retirement_yields_to_a_file_being_written(
    client: TestClient, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A probe: decay had nothing to write (decayed today already), so no write checked the
    # quiet rule, and the retirement moved the file a person was writing in place: what
    # they wrote after it went into the moved-away file, lost.
    monkeypatch.setattr(memories_service, "UPKEEP_QUIET_S", HOUR)
    made = client.post("/v1/memories/episode", json={"name": "faint", "description": "d"})
    assert made.status_code == 201, made.text
    path = data_dir / made.json()["path"]
    path.write_text(path.read_text().replace("score: ", "score: 0.05 #", 1) + "PART ONE\n")
    decayed = client.post("/v1/maintenance/decay")
    assert decayed.status_code == 200, decayed.text
    assert path.is_file() and path.read_text().endswith("PART ONE\n")  # left for later
    _aged(path, 2 * HOUR)
    decayed = client.post("/v1/maintenance/decay")
    assert decayed.status_code == 200, decayed.text
    assert not path.exists()
    archived = client.get("/v1/memories/episode/faint", params={"archived": "true"})
    assert archived.status_code == 200 and "PART ONE" in archived.json()["body"]
