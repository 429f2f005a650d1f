"""A rebuild reads every file again: the index ends equal to the files, vectors are kept by
content unless asked for, and recall answers throughout."""

from __future__ import annotations

from pathlib import Path

import pytest

from somnid.config import Settings
from somnid.memory.clock import ManualClock
from somnid.memory.kinds import Kind
from somnid.recall.index import Index
from somnid.runtime import Runtime
from tests.recall.test_index_lifecycle import START, CountingEmbedder, until


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path / "data", timezone="UTC", recall={"watch": False})


async def test_rebuild_reads_every_file_and_keeps_vectors_by_content(settings: Settings) -> None:
    embedder = CountingEmbedder()
    async with Runtime.open(settings, clock=ManualClock(START), embedder=embedder) as rt:
        for n in range(5):
            await rt.memories.create(
                Kind.KNOWLEDGE, f"fact-{n}", description=f"fact {n}", body=f"Body number {n}."
            )
        await rt.index.wait_idle()
        assert embedder.passages == 5
        ids = {row.path: row.id for row in rt.recall._index.rows()}
        # Behind the index's back (no watcher): one file gone, one new, one garbled FTS row.
        root = settings.data_dir
        (root / "memory/knowledge/fact-0/SKILL.md").unlink()
        (root / "memory/knowledge/fact-0").rmdir()
        new = root / "memory/knowledge/by-hand/SKILL.md"
        new.parent.mkdir()
        new.write_text("---\nname: by-hand\ndescription: written by hand\n---\nZebra crossing.\n")
        index = rt.recall._index
        assert isinstance(index, Index)
        with index.db.write() as conn:
            conn.execute("DELETE FROM fts")

        assert rt.recall.start_rebuild()
        assert not rt.recall.start_rebuild()  # one at a time

        def done() -> bool:
            rebuild = rt.recall.status().rebuild
            return rebuild is not None and rebuild.state == "done"

        await until(done)
        await rt.index.wait_idle()

        status = rt.recall.status()
        assert status.rebuild is not None
        assert (status.rebuild.state, status.rebuild.files, status.rebuild.done) == ("done", 5, 5)
        assert status.entries == 5 and status.vectors == 5 and status.pending == 0
        assert embedder.passages == 6  # only the new text was embedded
        rows = {row.path: row.id for row in rt.recall._index.rows()}
        assert "memory/knowledge/fact-0/SKILL.md" not in rows
        assert all(rows[path] == ids[path] for path in rows if path in ids)  # ids kept
        hits = await rt.recall.search("zebra", limit=3)
        assert [hit.name for hit in hits] == ["by-hand"]

        await rt.recall.rebuild(vectors=True)
        await rt.index.wait_idle()
        assert embedder.passages == 11  # every text again
        assert rt.recall.status().vectors == 5
