"""Holds on paths (a purge's) add up: each lets go of its own only."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from somnid.errors import Conflict
from somnid.memory.clock import ManualClock
from somnid.memory.kinds import Kind
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
