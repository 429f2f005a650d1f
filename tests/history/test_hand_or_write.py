"""A write of somnid's own is never taken for a hand edit: its file is on disk a moment
before the write is announced, and a sweep for hand edits in that moment (the watcher saw
an earlier file) used to commit it as "Hand edit" (seen in CI: the UI's entry history
showed an API edit under the hand edit's name)."""

from __future__ import annotations

import asyncio
import gc
import threading
from pathlib import Path

import pytest

from somnid.config import Settings
from somnid.history.committer import Committer
from somnid.memory.clock import ManualClock
from somnid.memory.entry import Entry
from somnid.memory.kinds import Kind
from somnid.runtime import Runtime
from somnid.services.memories import MemoryService
from somnid.store import frontmatter
from tests.clients import TEST_TOKEN
from tests.conftest import START
from tests.history.helpers import subjects


def settings_of(data: Path) -> Settings:
    return Settings(
        data_dir=data, timezone="UTC", embed={"provider": "off"}, token=TEST_TOKEN,
        history={"batch_window_s": 0.3},
    )  # fmt: skip


def hold_announcements(
    memories: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> tuple[asyncio.Event, asyncio.Event]:
    """Writes stop between their file and its announcement: the first event is set when a
    write's file is on disk, the second lets it go on."""
    on_disk, go_on = asyncio.Event(), asyncio.Event()
    announce = memories.notify

    async def held(entry: Entry | None, path: str) -> None:
        on_disk.set()
        await go_on.wait()
        await announce(entry, path)

    monkeypatch.setattr(memories, "notify", held)
    return on_disk, go_on


async def test_a_write_on_disk_before_its_announcement_is_not_a_hand_edit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    settings = settings_of(data)
    async with Runtime.open(settings, clock=ManualClock(START)) as rt:
        memories, committer = rt.memories, rt.history.committer
        assert committer is not None
        await committer.flush()  # after the commit of what changed while somnid was down
        await memories.create(Kind.KNOWLEDGE, "vpn", body="port 1194\n")
        await committer.flush()

        on_disk, go_on = hold_announcements(memories, monkeypatch)
        write = asyncio.create_task(memories.update(Kind.KNOWLEDGE, "vpn", body="port 443\n"))
        await on_disk.wait()
        assert (data / "memory/knowledge/vpn/SKILL.md").read_text().endswith("port 443\n")
        committer.hand_edited()  # the watcher heard a file change
        await committer.flush()  # a sweep while the write is on disk and unannounced
        go_on.set()
        await write
        monkeypatch.undo()
        await committer.flush()  # the write's own commit
        committer.hand_edited()
        await committer.flush()  # the sweep put off: nothing is left for it

    made = subjects(data)
    assert not any(subject.startswith("Hand edit") for subject in made), made
    assert made[:2] == ["somnid: knowledge/vpn"] * 2, made  # the update, the create


async def test_a_write_under_way_at_start_is_not_in_the_start_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The start's commit (what changed while somnid was down) ran in the background and
    could meet a first write on disk before its announcement: CI saw the create committed
    as "Changes not yet in history when somnid started". It waits the write out; a flush
    waits for it."""
    data = tmp_path / "data"
    settings = settings_of(data)
    may_start = asyncio.Event()
    commit_start = Committer._commit_start

    async def held_start(self: Committer) -> None:
        await may_start.wait()
        await commit_start(self)

    monkeypatch.setattr(Committer, "_commit_start", held_start)
    async with Runtime.open(settings, clock=ManualClock(START)) as rt:
        memories, committer = rt.memories, rt.history.committer
        assert committer is not None
        on_disk, go_on = hold_announcements(memories, monkeypatch)
        write = asyncio.create_task(memories.create(Kind.KNOWLEDGE, "vpn", body="port 1194\n"))
        await on_disk.wait()
        may_start.set()  # the start's commit runs while the write is on disk, unannounced
        flushed = asyncio.create_task(committer.flush())
        await asyncio.sleep(0)
        assert not flushed.done()  # a flush waits for the start's commit
        go_on.set()
        await write
        await flushed
        await committer.flush()

    made = subjects(data)
    assert made[0] == "somnid: knowledge/vpn", made
    assert all("knowledge/vpn" not in subject for subject in made[1:]), made


async def test_a_write_whose_caller_is_cancelled_is_still_announced(tmp_path: Path) -> None:
    """A dream cut short (or a request the shutdown ends) is cancelled while its write runs
    in a worker thread; the thread writes on. Unannounced, the file was committed as a hand
    edit (seen at 100k: an upkeep pass's archive after its dream's commit)."""
    data = tmp_path / "data"
    async with Runtime.open(settings_of(data), clock=ManualClock(START)) as rt:
        memories, committer = rt.memories, rt.history.committer
        assert committer is not None
        await committer.flush()
        await memories.create(Kind.KNOWLEDGE, "vpn", body="port 1194\n")
        await committer.flush()

        in_thread, go_on = threading.Event(), threading.Event()

        def slow(doc: frontmatter.Document) -> None:
            in_thread.set()
            go_on.wait(120)  # a cap for a hang
            doc.meta["score"] = 0.3

        write = asyncio.create_task(memories.mutate(Kind.KNOWLEDGE, "vpn", slow))
        assert await asyncio.to_thread(in_thread.wait, 120)
        write.cancel()
        with pytest.raises(asyncio.CancelledError):
            await write
        assert memories.writing  # still somnid's write: a sweep now waits for it
        committer.hand_edited()
        await committer.flush()
        go_on.set()
        await memories.drain()
        assert not memories.writing
        assert (await memories.get(Kind.KNOWLEDGE, "vpn")).meta["score"] == 0.3
        await committer.flush()  # the write's own commit
        committer.hand_edited()
        await committer.flush()  # nothing is left for a sweep

    made = subjects(data)
    assert not any(subject.startswith("Hand edit") for subject in made), made
    assert made[:2] == ["somnid: knowledge/vpn"] * 2, made


async def test_a_failed_write_whose_caller_is_cancelled_is_not_reported_as_lost(
    tmp_path: Path,
) -> None:
    """Nobody is left to take the error of a write whose caller went away: it is logged, not
    left to asyncio's "Task exception was never retrieved" when the task is collected."""
    data = tmp_path / "data"
    unretrieved: list[dict[str, object]] = []
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda _loop, context: unretrieved.append(context))
    try:
        async with Runtime.open(settings_of(data), clock=ManualClock(START)) as rt:
            memories = rt.memories
            before = await memories.create(Kind.KNOWLEDGE, "vpn", body="port 1194\n")
            in_thread, go_on = threading.Event(), threading.Event()

            def failing(doc: frontmatter.Document) -> None:
                in_thread.set()
                go_on.wait(120)  # a cap for a hang
                raise ValueError("the change could not be made")

            write = asyncio.create_task(memories.mutate(Kind.KNOWLEDGE, "vpn", failing))
            assert await asyncio.to_thread(in_thread.wait, 120)
            write.cancel()
            with pytest.raises(asyncio.CancelledError):
                await write
            go_on.set()
            await memories.drain()
            assert not memories.writing
            assert (await memories.get(Kind.KNOWLEDGE, "vpn")).etag == before.etag
            del write
            gc.collect()
    finally:
        loop.set_exception_handler(None)
    assert unretrieved == []
