"""A person removes an entry's folder while somnid writes it (a PATCH, a restore): the
answer is that the entry is gone (404), not a 500 or a storage error, and nothing is put
back or left behind. Before, a restore answered 500 (the stamp's read-back met no file)
and a PATCH 503 ``storage_error`` ("could not write …: No such file or directory").

The person's removal is made where it happens, between somnid's read and its write."""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

import somnid.store.memories as memories_module
from somnid.errors import NotFound
from somnid.memory.clock import ManualClock
from somnid.memory.kinds import Kind
from somnid.store.memories import MemoryStore
from tests.store.test_store import START
from tests.stores import open_store


@pytest.fixture
def store(tmp_path: Path) -> MemoryStore:
    return open_store(tmp_path, ManualClock(START))


def _removed_before_the_write(monkeypatch: pytest.MonkeyPatch) -> None:
    real: Callable[..., None] = getattr(memories_module, "write_atomic")  # noqa: B009

    def write(path: Path, data: bytes, **options: bool) -> None:
        shutil.rmtree(path.parent)
        real(path, data, **options)

    monkeypatch.setattr(memories_module, "write_atomic", write)


def test_a_patch_of_a_folder_removed_meanwhile_is_not_found(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.create(Kind.KNOWLEDGE, "k", meta={"description": "d"}, body="b")
    _removed_before_the_write(monkeypatch)
    with pytest.raises(NotFound):
        store.update(Kind.KNOWLEDGE, "k", body="new")
    assert store.health.check() == ("ok", None)
    assert not store.layout.entry_folder(Kind.KNOWLEDGE, "k").exists()


def test_a_restore_of_a_folder_removed_meanwhile_is_not_found(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    store.create(Kind.KNOWLEDGE, "k", meta={"description": "d"}, body="b")
    store.archive(Kind.KNOWLEDGE, "k", reason="test")
    _removed_before_the_write(monkeypatch)
    with caplog.at_level(logging.ERROR), pytest.raises(NotFound):
        store.restore(Kind.KNOWLEDGE, "k")
    assert not caplog.records  # no failed move back of what is not there
    assert store.health.check() == ("ok", None)
    for archived in (False, True):
        assert not store.layout.entry_folder(Kind.KNOWLEDGE, "k", archived=archived).exists()
