"""The file watcher starts again after it stops (the inotify watch limit, say), says so in
health meanwhile, and catches up with the hand edits made while it was down. Before, it
logged once and stayed stopped: hand edits went unseen until a restart, health "ok".

The fault is put where the OS would raise it: the watch itself (``watchfiles.awatch``)."""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
import watchfiles
from fastapi.testclient import TestClient

from somnid.memory.kinds import Kind
from somnid.store.layout import Layout

HANG_S = 120.0  # a cap that only catches a hang


def _until(what: str, check: Any) -> None:
    deadline = time.monotonic() + HANG_S
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_a_stopped_watcher_starts_again_and_catches_up(
    monkeypatch: pytest.MonkeyPatch, settings: Any, client: TestClient
) -> None:
    real = watchfiles.awatch
    fixed = threading.Event()
    starts: list[float] = []

    def awatch(*paths: Any, **options: Any) -> AsyncIterator[Any]:
        starts.append(time.monotonic())
        if not fixed.is_set():
            raise OSError(28, "inotify watch limit reached")
        watch: AsyncIterator[Any] = real(*paths, **options)
        return watch

    monkeypatch.setattr(watchfiles, "awatch", awatch)
    made = client.post("/v1/memories/knowledge", json={"name": "note", "body": "zebra"})
    assert made.status_code == 201, made.text

    def index() -> dict[str, Any]:
        health = client.get("/v1/health").json()
        return dict(health["index"], status_of_all=health["status"])

    _until(
        "health says the watcher stopped", lambda: "watcher stopped" in (index()["detail"] or "")
    )
    assert index()["status"] == "degraded" and index()["status_of_all"] == "degraded"
    path = Layout(settings.data_dir).entry_file(Kind.KNOWLEDGE, "note")
    path.write_text(path.read_text().replace("zebra", "okapi"))  # while it is down
    fixed.set()

    def found(word: str) -> bool:
        items = client.post("/v1/recall", json={"query": word}).json()["items"]
        return "note" in {item["name"] for item in items}

    _until("the edit made while it was down is caught up", lambda: found("okapi"))
    _until("health is ok again", lambda: index()["status"] == "ok")
    path.write_text(path.read_text().replace("okapi", "quokka"))  # watched again
    _until("a later hand edit reaches recall", lambda: found("quokka"))
    assert len(starts) >= 2
