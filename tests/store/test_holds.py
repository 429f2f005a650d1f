"""Holds on paths (a purge's) add up: each lets go of its own only."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from somnid.errors import BeingWritten, Conflict
from somnid.memory.clock import ManualClock
from somnid.memory.kinds import Kind
from somnid.store.frontmatter import Document
from tests.stores import open_store


def test_two_holds_at_once_keep_each_other(tmp_path: Path) -> None:
    # A review: two purges at once; the one that ended first let go of the other's hold.
    store = open_store(tmp_path, ManualClock(dt.datetime(2026, 12, 7, tzinfo=dt.UTC)))
    with store.hold(["memory/knowledge/a"]):
        with store.hold(["memory/knowledge/b"]):
            pass
        with pytest.raises(Conflict):
            store.create(Kind.KNOWLEDGE, "a", meta={"description": "d"}, body="x")
        store.create(Kind.KNOWLEDGE, "b", meta={"description": "d"}, body="x")
    store.create(Kind.KNOWLEDGE, "a", meta={"description": "d"}, body="x")


def test_upkeep_leaves_a_held_entry_alone_where_a_write_is_refused(tmp_path: Path) -> None:
    # A probe: a recall's use noted on an entry under a purge was a 409, and the whole
    # recall_memories call failed with it; upkeep skips it as it skips a person's edit.
    store = open_store(tmp_path, ManualClock(dt.datetime(2026, 12, 7, tzinfo=dt.UTC)))
    made = store.create(Kind.KNOWLEDGE, "a", meta={"description": "d"}, body="x")
    with store.hold(["memory/knowledge/a"]):
        with pytest.raises(BeingWritten):
            store.mutate(Kind.KNOWLEDGE, "a", _touch, quiet_s=5.0)
        with pytest.raises(Conflict) as refused:
            store.mutate(Kind.KNOWLEDGE, "a", _touch)
        assert refused.value.code == "purge_running"
    assert store.read(Kind.KNOWLEDGE, "a").etag == made.etag


def _touch(doc: Document) -> None:
    doc.meta["score"] = 0.5


def test_a_retirement_leaves_an_entry_under_a_purge_alone(tmp_path: Path) -> None:
    # A review: the archive of a retirement refused with purge_running, and the whole
    # decay pass stopped on it.
    store = open_store(tmp_path, ManualClock(dt.datetime(2026, 12, 7, tzinfo=dt.UTC)))
    store.create(Kind.KNOWLEDGE, "a", meta={"description": "d"}, body="x")
    with store.hold(["memory/knowledge/a"]):
        with pytest.raises(BeingWritten):
            store.archive(Kind.KNOWLEDGE, "a", reason="retired", quiet_s=5.0)
        with pytest.raises(Conflict) as refused:
            store.archive(Kind.KNOWLEDGE, "a", reason="by hand")
        assert refused.value.code == "purge_running"
    assert store.archive(Kind.KNOWLEDGE, "a", reason="retired", quiet_s=5.0).name == "a"
