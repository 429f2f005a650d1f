"""The derived index follows the files: API writes, hand edits, moves, deletions, restarts."""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import shutil
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from somnid.config import Settings
from somnid.embed.base import HashEmbedder, Matrix
from somnid.errors import IndexUnavailable
from somnid.memory.clock import ManualClock
from somnid.memory.entry import Entry
from somnid.memory.kinds import Kind
from somnid.recall import embedding, reconcile, system
from somnid.recall.index import Index
from somnid.runtime import Runtime
from somnid.store.memories import MemoryStore
from tests.stores import open_store

START = dt.datetime(2026, 10, 3, 12, 0, tzinfo=dt.UTC)


class CountingEmbedder(HashEmbedder):
    """The hash embedder, counting how many passages it was asked to embed."""

    def __init__(self) -> None:
        super().__init__(dim=64)
        self.passages = 0

    def embed_passages(self, texts: Sequence[str]) -> Matrix:
        self.passages += len(texts)
        return super().embed_passages(texts)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path / "data", timezone="UTC", embed={"provider": "off"})


async def names(rt: Runtime, query: str, kinds: tuple[Kind, ...] | None = None) -> list[str]:
    return [hit.name for hit in await rt.recall.search(query, kinds=kinds, limit=5)]


async def fill(rt: Runtime, kind: Kind, prefix: str, count: int) -> None:
    """``count`` entries ``<prefix>-<n>``, each with its own text."""
    for number in range(count):
        await rt.memories.create(
            kind,
            f"{prefix}-{number}",
            description=f"event {number}",
            body=f"something happened, number {number}",
        )


async def until(predicate: object, seconds: float = 120.0) -> None:
    """Wait for the condition; the cap only ends a hang (a loaded machine is slow, and the
    watcher took over 10 s on one running the whole check)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        result = predicate() if callable(predicate) else predicate
        if asyncio.iscoroutine(result):
            result = await result
        if result:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("condition not met in time")


async def _typed_and_found(rt: Runtime, path: Path, text: str, query: str) -> bool:
    await asyncio.to_thread(path.write_text, text)
    for _ in range(20):
        if await names(rt, query):
            return True
        await asyncio.sleep(0.05)
    return False


async def test_api_writes_are_indexed_at_once(settings: Settings) -> None:
    async with Runtime.open(settings, clock=ManualClock(START)) as rt:
        await rt.memories.create(
            Kind.KNOWLEDGE,
            "deploy-window",
            description="when we deploy",
            body="Only Tuesday to Thursday.",
        )
        await rt.memories.create(
            Kind.KNOWLEDGE, "部署窗口", description="部署时间", body="周一和周五禁止部署"
        )
        assert await names(rt, "deploy tuesday") == ["deploy-window"]
        assert await names(rt, "禁止部署") == ["部署窗口"]
        await rt.memories.update(Kind.KNOWLEDGE, "deploy-window", body="Wednesdays only.")
        assert await names(rt, "tuesday") == []
        assert await names(rt, "wednesdays") == ["deploy-window"]
        await rt.memories.archive(Kind.KNOWLEDGE, "deploy-window")
        assert await names(rt, "wednesdays") == []


async def test_hand_edits_moves_and_deletions_are_noticed(settings: Settings) -> None:
    async with Runtime.open(settings, clock=ManualClock(START)) as rt:
        await rt.index.wait_idle()
        folder = settings.data_dir / "memory/knowledge/by-hand"
        folder.mkdir()
        typed = "---\nname: by-hand\ndescription: typed in vim\n---\n\nzebra crossing\n"
        # Typed again until seen: the watcher's watch is set up a moment after the start,
        # and an edit made before it is never reported (failed once in a loaded check).
        await until(lambda: _typed_and_found(rt, folder / "SKILL.md", typed, "zebra"))
        assert await names(rt, "zebra") == ["by-hand"]
        (folder / "SKILL.md").write_text("---\nname: by-hand\n---\n\ngiraffe neck\n")
        await until(lambda: _async_equal(names(rt, "giraffe"), ["by-hand"]))
        assert await names(rt, "zebra") == []
        folder.rename(settings.data_dir / "memory/knowledge/moved")
        await until(lambda: _async_equal(names(rt, "giraffe"), ["moved"]))
        shutil.rmtree(settings.data_dir / "memory/knowledge/moved")
        await until(lambda: _async_equal(names(rt, "giraffe"), []))


async def test_an_entry_folder_named_as_a_markdown_file_is_followed(settings: Settings) -> None:
    # The watcher took every path ending in .md for a note, never a folder: `w7` renamed to
    # `w7.md` left the index, and `notes.md` moved to the archive stayed in it as live.
    async with Runtime.open(settings, clock=ManualClock(START)) as rt:
        await rt.memories.create(Kind.KNOWLEDGE, "w7", description="zebra crossing")
        await rt.memories.create(Kind.KNOWLEDGE, "notes.md", description="giraffe neck")
        await rt.index.wait_idle()
        knowledge = settings.data_dir / "memory/knowledge"
        (knowledge / "probe").mkdir()  # a hand edit seen: the watcher is watching
        # Typed again until seen: the watch is set up a moment after the start, and an edit
        # made before it is never reported (failed once in a fresh-clone check).
        typed = "---\ndescription: okapi\n---\n\nokapi\n"
        await until(lambda: _typed_and_found(rt, knowledge / "probe/SKILL.md", typed, "okapi"))
        assert await names(rt, "okapi") == ["probe"]
        (knowledge / "w7").rename(knowledge / "w7.md")
        await until(lambda: _async_equal(names(rt, "zebra"), ["w7.md"]))
        (settings.data_dir / "memory/archived").mkdir(exist_ok=True)
        (knowledge / "notes.md").rename(settings.data_dir / "memory/archived/notes.md")
        await until(lambda: _async_equal(names(rt, "giraffe"), []))
        assert rt.index.status().entries == 2


async def _async_equal(awaitable: object, expected: object) -> bool:
    return bool(await awaitable == expected)  # type: ignore[misc]


async def test_restart_reembeds_nothing_and_a_deleted_index_is_rebuilt(settings: Settings) -> None:
    first = CountingEmbedder()
    async with Runtime.open(settings, clock=ManualClock(START), embedder=first) as rt:
        await fill(rt, Kind.EPISODE, "ep", 30)
        await rt.index.wait_idle()
        status = rt.index.status()
        assert (status.vectors, status.pending) == (30, 0)
        for number in range(5):  # reinforcement rewrites files but not their text
            await rt.memories.record_usage(Kind.EPISODE, f"ep-{number}")
        await rt.memories.archive(Kind.EPISODE, "ep-0")
        await rt.memories.restore(Kind.EPISODE, "ep-0")
        await rt.index.wait_idle()
    assert first.passages == 30

    second = CountingEmbedder()
    async with Runtime.open(settings, clock=ManualClock(START), embedder=second) as rt:
        await rt.index.wait_idle()
        assert rt.index.status().vectors == 30
        assert rt.index.last_report is not None and rt.index.last_report.unchanged == 30
    assert second.passages == 0

    shutil.rmtree(settings.data_dir / "index")
    third = CountingEmbedder()
    async with Runtime.open(settings, clock=ManualClock(START), embedder=third) as rt:
        await rt.index.wait_idle()
        assert rt.index.status().vectors == 30
        assert await names(rt, "number 7", (Kind.EPISODE,)) != []
    assert third.passages == 30


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
async def test_a_damaged_index_file_is_set_aside_and_made_again(
    settings: Settings, damage: str
) -> None:
    # The daemon's start ended in a traceback (file is not a database / database disk
    # image is malformed) and exit 1, which systemd restarts for ever.
    async with Runtime.open(settings, clock=ManualClock(START), embedder=CountingEmbedder()) as rt:
        await fill(rt, Kind.EPISODE, "ep", 30)
        await rt.index.wait_idle()
    path = settings.data_dir / "index" / "index.sqlite"
    if damage == "garbage":
        path.write_bytes(bytes(range(256)) * 20)
    else:
        os.truncate(path, 8192)
    async with Runtime.open(settings, clock=ManualClock(START), embedder=CountingEmbedder()) as rt:
        await rt.index.wait_idle()
        assert rt.index.status().vectors == 30
        assert await names(rt, "number 7", (Kind.EPISODE,)) != []
    assert (path.parent / "index.sqlite.corrupt").is_file()


async def test_damage_met_in_use_is_said_and_the_next_start_makes_the_index_again(
    settings: Settings,
) -> None:
    # Damage beyond the pages read at open failed every query, after every restart too.
    async with Runtime.open(settings, clock=ManualClock(START), embedder=CountingEmbedder()) as rt:
        await fill(rt, Kind.EPISODE, "ep", 30)
        await rt.index.wait_idle()
    path = settings.data_dir / "index" / "index.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        size = conn.execute("PRAGMA page_size").fetchone()[0]
        [root] = conn.execute(
            "SELECT rootpage FROM sqlite_master WHERE name = 'entries'"
        ).fetchone()
    with path.open("r+b") as file:  # the entries table's first page, its header kept whole
        file.seek((root - 1) * size + 12)
        file.write(bytes(range(256)) * (size // 256 - 1))
    async with Runtime.open(settings, clock=ManualClock(START), embedder=CountingEmbedder()) as rt:
        with pytest.raises(IndexUnavailable, match="the index file is damaged"):
            await rt.index.sync()
        info = await asyncio.to_thread(rt.recall.describe_index)
        assert info.error is not None and "restart somnid" in info.error
    async with Runtime.open(settings, clock=ManualClock(START), embedder=CountingEmbedder()) as rt:
        await rt.index.wait_idle()
        assert rt.index.status().vectors == 30
        assert await names(rt, "number 7", (Kind.EPISODE,)) != []
        assert (await asyncio.to_thread(rt.recall.describe_index)).error is None
    assert (path.parent / "index.sqlite.corrupt").is_file()


def test_an_index_that_cannot_be_read_is_unavailable_not_a_blank_answer(tmp_path: Path) -> None:
    """An index probe: the index file truncated while somnid ran, a search answered 200
    with nothing: every error of the query was taken for one FTS5 could not parse."""
    _store, index, _reconciler = _lynxes(tmp_path, 1)
    assert index.keyword_search(["lynx"], (Kind.KNOWLEDGE,), 10)
    bad = "SELECT rowid, 1.0 FROM fts WHERE fts MATCH ?"
    assert index._ranked(bad, ('"unbalanced AND (',)) == []  # the query's own error: no match
    with sqlite3.connect(tmp_path / "index.sqlite") as conn:
        conn.execute("DROP TABLE fts")
    with pytest.raises(IndexUnavailable, match="the index could not be read"):
        index.keyword_search(["lynx"], (Kind.KNOWLEDGE,), 10)
    index.close()


async def test_an_index_deleted_while_running_is_said_and_made_again_at_the_next_start(
    settings: Settings,
) -> None:
    # `rm -r index/` under a running daemon, then a rebuild: it said "index rebuilt: 30
    # entries" into the deleted file, and health said nothing until a restart.
    async with Runtime.open(settings, clock=ManualClock(START), embedder=CountingEmbedder()) as rt:
        await fill(rt, Kind.EPISODE, "ep", 30)
        await rt.index.wait_idle()
        shutil.rmtree(settings.data_dir / "index")
        info = await asyncio.to_thread(rt.recall.describe_index)
        assert info.error is not None and "deleted while somnid ran" in info.error
        with pytest.raises(IndexUnavailable, match="restart somnid"):
            await rt.index.rebuild()
        await names(rt, "number 7", (Kind.EPISODE,))  # answers, as well as it can
    async with Runtime.open(settings, clock=ManualClock(START), embedder=CountingEmbedder()) as rt:
        await rt.index.wait_idle()
        assert rt.index.status().vectors == 30
        assert (await asyncio.to_thread(rt.recall.describe_index)).error is None
        assert await names(rt, "number 7", (Kind.EPISODE,)) != []


async def test_an_index_of_an_older_reading_is_read_again_once_its_vectors_kept(
    settings: Settings,
) -> None:
    """A release that reads files differently (a date phrase now understood) derives every
    row again at the next start, without embedding anything again; then never again."""
    first = CountingEmbedder()
    async with Runtime.open(settings, clock=ManualClock(START), embedder=first) as rt:
        await rt.memories.create(Kind.KNOWLEDGE, "ferry", body="We took the ferry in May 2023.")
        await fill(rt, Kind.EPISODE, "ep", 5)
        await rt.index.wait_idle()
    index = Index(settings.data_dir / "index/index.sqlite")
    try:  # what an older reading left: no date read from "in May", another stamp
        index.set_state(reconcile.READING_KEY, "an older reading")
        with index.db.write() as conn:
            conn.execute("DELETE FROM dates")
    finally:
        index.close()
    second = CountingEmbedder()
    async with Runtime.open(settings, clock=ManualClock(START), embedder=second) as rt:
        await rt.index.wait_idle()
        report = rt.index.last_report
        assert report is not None and (report.updated, report.unchanged) == (6, 0)
        assert rt.index.status().vectors == 6
    assert second.passages == 0
    index = Index(settings.data_dir / "index/index.sqlite")
    try:
        [row] = [r for r in index.rows() if r.name == "ferry"]
        assert index.dates_of([row.id]).get(row.id)  # "in May 2023", read again
    finally:
        index.close()
    third = CountingEmbedder()
    async with Runtime.open(settings, clock=ManualClock(START), embedder=third) as rt:
        await rt.index.wait_idle()
        assert rt.index.last_report is not None and rt.index.last_report.unchanged == 6
    assert third.passages == 0


def _lynxes(tmp_path: Path, count: int) -> tuple[MemoryStore, Index, reconcile.Reconciler]:
    """A store of ``count`` entries about a lynx, indexed by a full sync."""
    store = open_store(tmp_path / "data", ManualClock(START))
    index = Index(tmp_path / "index.sqlite")
    reconciler = reconcile.Reconciler(store, index, ManualClock(START))
    for number in range(count):
        store.create(Kind.KNOWLEDGE, f"lynx-{number}", meta={"description": "a lynx"}, body="b")
    reconciler.full()
    return store, index, reconciler


def test_rows_read_again_keep_answering_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each row is derived again in place: a search in the middle of the re-read finds every
    entry (emptying the index first left keyword search blank until the end)."""
    _store, index, reconciler = _lynxes(tmp_path, 5)
    index.set_state(reconcile.READING_KEY, "an older reading")
    monkeypatch.setattr(reconcile, "SYNC_BATCH", 2)
    found: list[int] = []
    apply = reconcile.Reconciler._apply_many

    def counting(self: reconcile.Reconciler, entries: list[Entry]) -> list[bool]:
        found.append(len(index.keyword_search(["lynx"], (Kind.KNOWLEDGE,), 10)))
        return apply(self, entries)

    monkeypatch.setattr(reconcile.Reconciler, "_apply_many", counting)
    report = reconciler.full()
    index.close()
    assert report.updated == 5 and found == [5, 5, 5]


def test_a_write_while_a_full_sync_reads_is_never_undone_by_its_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An index probe: a full sync (a rebuild, the first after an upgrade) read a file,
    then a write and its own reconcile landed, then the sync's batch wrote the older text
    over the newer row (or brought an archived entry's row back), until the next sync."""
    store, index, reconciler = _lynxes(tmp_path, 4)
    index.set_state(reconcile.READING_KEY, "an older reading")  # the next sync reads all
    root = store.layout.root
    read = store.read_path
    raced: set[str] = set()

    def racing(path: Path, **kwargs: object) -> Entry | None:
        entry = read(path, **kwargs)  # type: ignore[arg-type]
        name = path.parent.name
        if name in ("lynx-1", "lynx-2") and name not in raced:
            raced.add(name)
            if name == "lynx-1":  # written meanwhile, and reconciled at once
                store.update(Kind.KNOWLEDGE, name, body="ocelot now")
            else:  # archived meanwhile
                store.archive(Kind.KNOWLEDGE, name, reason="by hand")
            reconciler.path(path)
        return entry

    monkeypatch.setattr(store, "read_path", racing)
    reconciler.full()
    rows = {row.path: row.file_hash for row in index.rows()}
    written = root / "memory/knowledge/lynx-1/SKILL.md"
    now = store.read_path(written)
    assert now is not None and rows["memory/knowledge/lynx-1/SKILL.md"] == now.etag
    assert index.keyword_search(["ocelot"], (Kind.KNOWLEDGE,), 10)
    assert "memory/knowledge/lynx-2/SKILL.md" not in rows
    index.close()


async def test_changes_while_stopped_are_found_at_start(settings: Settings) -> None:
    async with Runtime.open(settings, clock=ManualClock(START)) as rt:
        await rt.memories.create(Kind.KNOWLEDGE, "kept", body="alpha")
        await rt.memories.create(Kind.KNOWLEDGE, "gone", body="beta")
        await rt.memories.create(Kind.KNOWLEDGE, "edited", body="gamma")
        await rt.index.wait_idle()  # the first sync done: the index's reading is stamped
    root = settings.data_dir / "memory/knowledge"
    shutil.rmtree(root / "gone")
    path = root / "edited/SKILL.md"
    path.write_text(path.read_text().replace("gamma", "delta"))
    (root / "new").mkdir()
    (root / "new/SKILL.md").write_text("epsilon\n")
    (root / "broken").mkdir()
    (root / "broken/SKILL.md").write_text("---\nname: [\n---\nzeta\n")
    async with Runtime.open(settings, clock=ManualClock(START)) as rt:
        await rt.index.wait_idle()
        report = rt.index.last_report
        assert report is not None
        assert (report.added, report.updated, report.removed, report.broken) == (1, 1, 1, 1)
        assert await names(rt, "beta") == []
        assert await names(rt, "gamma") == []
        assert await names(rt, "delta") == ["edited"]
        assert await names(rt, "epsilon") == ["new"]
        assert await names(rt, "zeta") == []


async def test_keywords_answer_while_vectors_are_missing(settings: Settings) -> None:
    async with Runtime.open(settings, clock=ManualClock(START)) as rt:
        await rt.memories.create(Kind.KNOWLEDGE, "k", body="kiwi fruit")
        assert not rt.recall.vectors_ready
        hits = await rt.recall.search("kiwi")
        assert [h.name for h in hits] == ["k"] and hits[0].score == 1.2  # best + literal
        assert rt.assoc.evaluate(hits).reason == "fired"  # the gate itself is pure ...
        decision = await rt.assoc.thought("s1", "tell me about kiwi fruit")
        assert decision.reason == "silent"  # ... but no hint fires without vectors


async def test_wait_idle_returns_with_embeddings_off(settings: Settings) -> None:
    async with Runtime.open(settings, clock=ManualClock(START)) as rt:
        await rt.memories.create(Kind.KNOWLEDGE, "k", body="kiwi")
        await asyncio.wait_for(rt.index.wait_idle(), 5)


async def test_crash_leftovers_are_swept_but_live_temp_files_are_not(settings: Settings) -> None:
    import os

    folder = settings.data_dir / "memory/knowledge/k"
    folder.mkdir(parents=True)
    stale = folder / ".somnid-tmp-0123456789abcdef"
    stale.write_text("half a file from a crash")
    os.utime(stale, (1_000_000_000, 1_000_000_000))
    fresh = folder / ".somnid-tmp-fedcba9876543210"
    fresh.write_text("a write in flight")
    os.utime(fresh, (4_000_000_000, 4_000_000_000))
    async with Runtime.open(settings, clock=ManualClock(START)) as rt:
        await rt.index.wait_idle()
        assert not stale.exists() and fresh.exists()


async def test_rewrites_of_front_matter_do_not_send_the_worker_scanning(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each look for texts without a vector scans every entry (~0.15 s at 100k). A decay
    pass rewrites every file's score and no text: it must not cause one look per write."""
    asks: list[int] = []
    missing = Index.missing_vectors

    def counted(index: Index, limit: int) -> list[tuple[str, str]]:
        asks.append(limit)
        return missing(index, limit)

    monkeypatch.setattr(Index, "missing_vectors", counted)
    clock = ManualClock(START)
    embedder = CountingEmbedder()
    async with Runtime.open(settings, clock=clock, embedder=embedder) as rt:
        await fill(rt, Kind.KNOWLEDGE, "fact", 20)
        await rt.index.wait_idle()
        before = len(asks)
        for number in range(5):
            await rt.memories.record_usage(Kind.KNOWLEDGE, f"fact-{number}")
        clock.advance(dt.timedelta(days=3))
        report = await rt.maintenance.run()
        assert len(report.decayed) == 20  # twenty files rewritten, no text changed
        await rt.index.wait_idle()
        assert len(asks) == before
        assert embedder.passages == 20

        await rt.memories.update(Kind.KNOWLEDGE, "fact-3", body="a new body for fact three")
        await rt.index.wait_idle()
        assert len(asks) > before  # a text changed: the worker looked, and embedded it
        assert embedder.passages == 21


async def test_an_unreachable_index_does_not_hold_the_start_for_the_model(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the index's server down, the model waits for it, and the start waited the whole
    model wait (~12 s to a first answer). Here that wait is an hour: the start must end as
    soon as the index is found away, the model still waiting."""
    monkeypatch.setattr(system, "MODEL_FIRST_S", 3600.0)
    away = {"yes": True}
    use_model = Index.use_model

    def unreachable(self: Index, model: str, dim: int) -> None:
        if away["yes"]:
            raise IndexUnavailable("the server is away")
        use_model(self, model, dim)

    monkeypatch.setattr(Index, "use_model", unreachable)
    async with Runtime.open(settings, clock=ManualClock(START), embedder=CountingEmbedder()) as rt:
        assert rt.index.status().embed_state != "ready"  # it waits, the daemon does not
        away["yes"] = False
        await rt.index.wait_idle()
        assert rt.index.status().embed_state == "ready"


async def test_vectors_no_text_uses_are_dropped_and_a_purge_leaves_none(
    settings: Settings,
) -> None:
    # A probe: every edit's old vector stayed for ever (7 -> 19 MB in ten minutes of
    # edits, through restarts), a purged entry's among them. They go at a full sync (a
    # start) and with a purge; not as they come (a restore would embed its text again).
    def stored() -> int:
        with sqlite3.connect(settings.data_dir / "index" / system.INDEX_FILE) as conn:
            return int(conn.execute("SELECT count(*) FROM vectors").fetchone()[0])

    embedder = CountingEmbedder()
    async with Runtime.open(settings, clock=ManualClock(START), embedder=embedder) as rt:
        await fill(rt, Kind.KNOWLEDGE, "kept", 3)
        await rt.memories.create(Kind.KNOWLEDGE, "vpn", description="vpn", body="port 0")
        await rt.index.wait_idle()
        for number in range(1, 6):
            await rt.memories.update(Kind.KNOWLEDGE, "vpn", body=f"port {number}")
            await rt.index.wait_idle()
        # Kept while the daemon runs: an entry archived and restored keeps its vector, an
        # embedding pass between them (a review: the pass dropped it) notwithstanding.
        assert embedder.passages == 9 and stored() == 9
        await rt.memories.archive(Kind.KNOWLEDGE, "kept-1")
        await rt.memories.create(Kind.KNOWLEDGE, "other", description="o", body="other text")
        await rt.index.wait_idle()
        await rt.memories.restore(Kind.KNOWLEDGE, "kept-1")
        await rt.index.wait_idle()
        assert embedder.passages == 10 and stored() == 10
        await rt.history.purge(Kind.KNOWLEDGE, "other", confirm="other", history=False)
        await rt.history.purge(Kind.KNOWLEDGE, "vpn", confirm="vpn", history=False)
        assert stored() == 3  # a purge leaves no vector of any text no entry uses
        await rt.memories.update(Kind.KNOWLEDGE, "kept-0", body="changed once more")
        await rt.index.wait_idle()
        assert stored() == 4
    async with Runtime.open(settings, clock=ManualClock(START), embedder=embedder) as rt:
        await rt.index.wait_idle()  # the start's full sync drops what no entry uses
        assert stored() == 3 and rt.index.status().vectors == 3


async def test_a_long_running_daemon_drops_unused_vectors_now_and_then(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A review: dropped only at a start and a purge, a daemon running for weeks kept every
    # edit's old vector until its next start. After a pass, at most every DROP_EVERY_S.
    monkeypatch.setattr(embedding, "DROP_EVERY_S", 0.0)

    def stored() -> int:
        with sqlite3.connect(settings.data_dir / "index" / system.INDEX_FILE) as conn:
            return int(conn.execute("SELECT count(*) FROM vectors").fetchone()[0])

    async with Runtime.open(settings, clock=ManualClock(START), embedder=HashEmbedder(64)) as rt:
        await rt.memories.create(Kind.KNOWLEDGE, "vpn", description="vpn", body="port 0")
        await rt.index.wait_idle()
        for number in range(1, 4):
            await rt.memories.update(Kind.KNOWLEDGE, "vpn", body=f"port {number}")
            await rt.index.wait_idle()
        assert stored() == 1
