"""When the index cannot take writes (its disk full or failing), writes still land in the
files and are acknowledged; health says the index is behind, and a sync catches up by itself
once the index takes writes again."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from somnid.errors import StorageError
from somnid.recall.backend import Document
from somnid.recall.db import _storage_error
from somnid.recall.index import Index

WAIT_S = 60.0
SQLITE_IOERR_WRITE = 10 | (3 << 8)


def wait_for(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, "the condition never held"
        time.sleep(0.02)


def test_an_io_error_writing_the_index_is_a_storage_error() -> None:
    """What SQLite says when the index file cannot grow (a file size limit, a failing disk)."""
    error = sqlite3.OperationalError("disk I/O error")
    error.sqlite_errorcode = SQLITE_IOERR_WRITE
    mapped = _storage_error(error, Path("/data/index/index.sqlite"))
    assert isinstance(mapped, StorageError) and mapped.code == "storage_error"
    assert "disk I/O error" in mapped.detail


def test_writes_the_index_missed_are_caught_up_and_health_says_so_meanwhile(
    client: TestClient, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    failing = [True]
    real = Index.upsert_many

    def upsert_many(self: Index, docs: list[Document]) -> list[tuple[int, bool]]:
        if failing[0]:
            raise StorageError("the index could not be written (disk I/O error)")
        return real(self, docs)

    monkeypatch.setattr(Index, "upsert_many", upsert_many)
    for n in range(3):
        made = client.post(
            "/v1/memories/knowledge", json={"name": f"n{n}", "description": f"lorem {n}"}
        )
        assert made.status_code == 201, made.text
        assert (data_dir / made.json()["path"]).is_file()
    health = client.get("/v1/health").json()
    assert health["status"] == "degraded"
    assert health["index"]["status"] == "degraded"
    assert "disk I/O error" in health["index"]["detail"]

    failing[0] = False

    def caught_up() -> bool:
        found = client.post("/v1/recall", json={"query": "lorem"}).json()["items"]
        return len(found) == 3 and client.get("/v1/health").json()["status"] == "ok"

    wait_for(caught_up)
    assert client.get("/v1/health").json()["index"]["status"] == "ok"
