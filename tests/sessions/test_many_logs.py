"""Many logs waiting (a probe: 6,400 with no LLM to dream them): every health check read
each live log's front-matter anew (1.7-2.8 s), every new session listed both folders as
paths (150-540 ms), and a start read every live log with the writer's YAML reader (19 s).
What is read once is read once, and read again when its file changes."""

from __future__ import annotations

import asyncio
import concurrent.futures
import datetime as dt
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from somnid.config import CaptureSettings
from somnid.memory.clock import ManualClock
from somnid.sessions import Message, SessionLogs, pending, transcript
from somnid.sessions import service as service_module
from somnid.sessions.read_cache import ReadCache
from somnid.sessions.service import SessionService
from somnid.store import frontmatter
from somnid.store.layout import Layout
from tests.conftest import START
from tests.stores import made_layout


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    return made_layout(tmp_path / "data")


def counting(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[object]:
    calls: list[object] = []
    real = getattr(module, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


def test_a_log_s_state_is_read_again_only_once_it_changed(
    layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    logs = SessionLogs(layout, ManualClock(START), CaptureSettings())
    for number in range(5):
        logs.append_messages(f"s{number}", [Message("user", "hello")])
        logs.close(f"s{number}")
    reads = counting(monkeypatch, pending, "_read")
    assert len(logs.pending_logs()) == 5 and len(reads) == 5
    assert len(logs.pending_logs()) == 5 and len(reads) == 5  # nothing changed: none read
    logs.mark_no_dream("s2")
    states = {p.path.name: p.dream for p in logs.pending_logs()}
    assert len(reads) == 6 and list(states.values()).count(False) == 1
    first = transcript.live_files(layout)[0]
    doc = frontmatter.parse(first.read_text("utf-8"))
    doc.meta["status"] = "processed"  # a person's edit, the size unchanged or not
    first.write_text(frontmatter.render(doc), "utf-8")
    assert first.name not in {p.path.name for p in logs.pending_logs()}
    transcript.live_files(layout)[1].unlink()
    assert len(logs.pending_logs()) == 3


def test_a_new_log_s_number_lists_the_folders_once_a_day(
    layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = ManualClock(START)
    logs = SessionLogs(layout, clock, CaptureSettings())
    listed = counting(monkeypatch, transcript, "highest_number")
    for number in range(4):
        logs.append_messages(f"s{number}", [Message("user", "hello")])
    assert len(listed) == 1
    # A log nobody told of took the next number: the writer takes the one after.
    stem = transcript.live_files(layout)[-1].stem
    day, last = stem.rsplit("_", 1)
    taken = layout.session_log_dir / f"{day}_{int(last) + 1:03d}.md"
    taken.write_text("---\nstatus: pending\n---\n", "utf-8")
    logs.append_messages("s9", [Message("user", "hello")])
    stems = {p.stem for p in transcript.live_files(layout)}
    assert {taken.stem, f"{day}_{int(last) + 2:03d}"} <= stems
    clock.advance(dt.timedelta(days=1))
    logs.append_messages("s10", [Message("user", "hello")])
    assert len(listed) == 2


def test_a_start_reads_the_logs_with_the_fast_reader(
    layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    logs = SessionLogs(layout, ManualClock(START), CaptureSettings())
    logs.append_messages("quiet", [Message("user", "hello")])
    logs.mark_no_dream("quiet")
    logs.stop()
    parsed = counting(monkeypatch, frontmatter, "parse")
    again = SessionLogs(layout, ManualClock(START), CaptureSettings())
    assert again.recall()[0] == 1  # the never-dream session, known again
    assert parsed and all(call == {"round_trip": False} for call in parsed), parsed
    assert again.never_dreamed("quiet")


def test_logs_read_are_kept_within_a_bound_on_their_size(tmp_path: Path) -> None:
    """A review: kept by their number (4,096), a year of logs could all stay in memory."""
    cache: ReadCache[str] = ReadCache(max_bytes=100)
    reads: list[str] = []

    def read(path: Path) -> str:
        reads.append(path.name)
        return path.read_text()

    first, second = tmp_path / "a.md", tmp_path / "b.md"
    first.write_text("x" * 60)
    second.write_text("y" * 60)
    for path in (first, first, second, first):
        cache.read(path, "how", lambda path=path: read(path))  # type: ignore[misc]
    assert reads == ["a.md", "b.md", "a.md"]  # both would be 120 bytes: the older went
    before = first.stat().st_mtime_ns
    first.write_text("z" * 60)  # in place, the same size: its times tell
    os.utime(first, ns=(before + 10**9, before + 10**9))  # a clock's tick is coarser
    assert cache.read(first, "how", lambda: read(first)) == "z" * 60
    assert reads[-1] == "a.md" and len(reads) == 4


async def test_a_stop_ends_a_read_of_the_archive_at_its_next_file(
    layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A review: a stop right after a start waited for the start's whole read of the
    archive (seconds for a year of logs) before the pool it runs on let go."""
    clock = ManualClock(START)
    logs = SessionLogs(layout, clock, CaptureSettings())
    for number in range(3):
        logs.append_messages(f"s{number}", [Message("user", f"line {number}")])
        logs.close(f"s{number}")
    for waiting in logs.pending_logs():
        logs.mark_processed(waiting.path)
    service = SessionService(logs)
    await service.start()
    loop = asyncio.get_running_loop()
    stopping = threading.Event()
    real_stop, real_turns = logs.stop, transcript.log_turns
    read: list[str] = []
    stopped: list[concurrent.futures.Future[None]] = []

    def stop() -> Any:
        stopping.set()
        return real_stop()

    def turns(path: Path, *args: Any, **kwargs: Any) -> Any:
        read.append(path.stem)
        if not stopped:  # the daemon is told to stop while the first log is read
            stopped.append(asyncio.run_coroutine_threadsafe(service.stop(), loop))
            assert stopping.wait(60)
        return real_turns(path, *args, **kwargs)

    monkeypatch.setattr(logs, "stop", stop)
    monkeypatch.setattr(service_module, "log_turns", turns)
    await service.archived_lines()
    await asyncio.wrap_future(stopped[0])
    assert len(read) == 1
