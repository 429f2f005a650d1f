"""The upkeep benchmark's store and pass: a day's decay on every entry, history settled."""

from __future__ import annotations

import asyncio
from pathlib import Path

from bench._stores import generate_entries, write_store
from bench.upkeep import YESTERDAY, decayed_yesterday, floor, upkeep


def test_every_entry_last_decayed_yesterday_and_nothing_else_moved() -> None:
    entries = generate_entries(40, seed=3)
    steady = decayed_yesterday(entries)
    for before, after in zip(entries, steady, strict=True):
        meta = dict(after.meta)
        assert meta["last_decay"] == meta["last_used"] == YESTERDAY.isoformat()
        assert {k: v for k, v in after.meta if k not in ("last_decay", "last_used")} == {
            k: v for k, v in before.meta if k not in ("last_decay", "last_used")
        }
        assert (after.name, after.body) == (before.name, before.body)


def test_the_pass_decays_or_retires_every_entry_and_history_takes_it_all(
    tmp_path: Path,
) -> None:
    entries = decayed_yesterday(generate_entries(30, seed=1))
    write_store(tmp_path / "data", entries)
    result = asyncio.run(upkeep(tmp_path / "data", None))
    decaying = sum(1 for entry in entries if entry.kind.decays)
    assert result["rewritten"] == decaying > 0  # a retired entry decayed first
    assert result["commits"] >= 1 and result["history_error"] is None
    write_store(tmp_path / "copy", entries)
    assert floor(tmp_path / "copy")["files"] == len(entries)
