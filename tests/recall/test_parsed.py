"""Rows and texts a search parsed are kept for the next, and never outlive a write."""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from somnid.config import Settings
from somnid.memory.clock import ManualClock
from somnid.memory.kinds import Kind
from somnid.recall.parsed import Parsed
from somnid.runtime import Runtime

START = dt.datetime(2026, 10, 3, 12, 0, tzinfo=dt.UTC)


def test_values_read_before_a_write_are_not_kept() -> None:
    cache: Parsed[str] = Parsed(limit=10)
    before = cache.generation
    cache.offer({1: "one"}, before)
    assert cache.lookup([1, 2]) == ({1: "one"}, [2])
    stale = cache.generation
    cache.clear()  # a write committed while a search was reading
    cache.offer({2: "old two"}, stale)
    assert cache.lookup([1, 2]) == ({}, [1, 2])
    cache.offer({2: "two"}, cache.generation)
    assert cache.lookup([2]) == ({2: "two"}, [])


def test_a_full_cache_starts_again() -> None:
    cache: Parsed[int] = Parsed(limit=3)
    cache.offer({1: 1, 2: 2}, cache.generation)
    cache.offer({3: 3, 4: 4}, cache.generation)
    assert cache.lookup([1, 2, 3, 4]) == ({3: 3, 4: 4}, [1, 2])


async def test_a_search_after_an_edit_sees_the_edit(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data", timezone="UTC", embed={"provider": "off"})
    async with Runtime.open(settings, clock=ManualClock(START)) as rt:
        await rt.memories.create(
            Kind.KNOWLEDGE,
            "deploy-window",
            description="when we deploy",
            body="Only Tuesday to Thursday.",
            fields={"project": "alpha"},
        )

        async def found(query: str, project: str) -> list[str]:
            hits = await rt.recall.search(query, limit=5, project=project)
            return [hit.name for hit in hits]

        assert await found("deploy tuesday", "alpha") == ["deploy-window"]
        assert await found("deploy tuesday", "beta") == []
        await rt.memories.update(
            Kind.KNOWLEDGE, "deploy-window", body="Tuesdays too.", fields={"project": "beta"}
        )
        # The row (its project) and the text read by the searches above are not used again.
        assert await found("deploy tuesday", "alpha") == []
        assert await found("deploy tuesday", "beta") == ["deploy-window"]
        assert await found("thursday", "beta") == []


async def test_the_second_pass_reuses_the_first_pass_rows(tmp_path: Path) -> None:
    """With entity bridging on, the second pass gets the rows the first read from it and
    reads only the new ones: both kinds of hit come back whole."""
    settings = Settings(
        data_dir=tmp_path / "data",
        timezone="UTC",
        embed={"provider": "off"},
        recall={"prf_weight": 0.3},
    )
    async with Runtime.open(settings, clock=ManualClock(START)) as rt:
        await rt.memories.create(Kind.KNOWLEDGE, "choir", body="卡罗琳加入了阿什福德合唱团")
        await rt.memories.create(Kind.KNOWLEDGE, "rehearsals", body="阿什福德的排练在周五晚上")
        hits = await rt.recall.search("卡罗琳加入了什么", limit=5)
        by_name = {hit.name: hit for hit in hits}
        assert hits[0].name == "choir"
        assert "bridge" in by_name["rehearsals"].components  # found through 阿什福德
        assert "bridge" in by_name["choir"].components  # its row came from the first pass
        assert by_name["choir"].path.endswith("knowledge/choir/SKILL.md")
        assert by_name["rehearsals"].path.endswith("knowledge/rehearsals/SKILL.md")


@contextlib.asynccontextmanager
async def _hike_and_cello(tmp_path: Path) -> AsyncIterator[Runtime]:
    """Entity bridging on, keywords only: a seed that names Marguerite, and an entry that
    only that name leads to."""
    settings = Settings(
        data_dir=tmp_path / "data",
        timezone="UTC",
        embed={"provider": "off"},
        recall={"prf_weight": 0.3},
    )
    async with Runtime.open(settings, clock=ManualClock(START)) as rt:
        await rt.memories.create(
            Kind.KNOWLEDGE, "hike", body="Went hiking with Marguerite up the ridge."
        )
        await rt.memories.create(Kind.KNOWLEDGE, "cello", body="Marguerite plays the cello.")
        await rt.index.wait_idle()
        yield rt


async def test_the_second_pass_finds_names_as_written(tmp_path: Path) -> None:
    """The index lower-cases its texts; the names bridged to are read from the entries as
    written (capitalised: "Marguerite", not "hiking" or "ridge")."""
    async with _hike_and_cello(tmp_path) as rt:
        hits = await rt.recall.search("who came hiking", limit=5)
        assert [hit.name for hit in hits] == ["hike", "cello"]
        assert "bridge" in hits[1].components  # found through "Marguerite" (and "Went")


async def test_a_seed_that_cannot_be_read_falls_back_to_the_index_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A seed's file gone or unreadable between the search and the read (an OSError, not a
    broken-file error): the search goes on with the index's text, which has no capitals."""
    async with _hike_and_cello(tmp_path) as rt:

        def unreadable(*_args: object) -> None:
            raise PermissionError("no access")

        monkeypatch.setattr(rt.recall._store, "read", unreadable)
        hits = await rt.recall.search("who came hiking", limit=5)
        assert [hit.name for hit in hits] == ["hike"]
