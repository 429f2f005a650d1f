"""The blocking writer on its own: moved logs, restarts, the pending set, races with close."""

from __future__ import annotations

import datetime as dt
import os
import random
import threading
from pathlib import Path

import pytest

from somnid.config import CaptureSettings
from somnid.errors import Unavailable
from somnid.memory.clock import ManualClock
from somnid.sessions import Message, SessionLogs, ToolCall, rewrite, session_turns
from somnid.store import frontmatter
from somnid.store.atomic import write_atomic
from somnid.store.layout import Layout
from tests.conftest import START
from tests.stores import made_layout


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    return made_layout(tmp_path / "data")


def open_logs(layout: Layout, **capture: object) -> SessionLogs:
    return SessionLogs(layout, ManualClock(START), CaptureSettings.model_validate(capture))


def said(text: str) -> list[Message]:
    return [Message("user", text)]


def meta_of(path: Path) -> dict[str, object]:
    return dict(frontmatter.parse(path.read_text("utf-8")).meta)


def test_a_log_moved_away_is_never_recreated_or_appended_to(layout: Layout) -> None:
    """The original's bug 1: after a dream archived an open log, the next append re-created
    the old path without a header."""
    logs = open_logs(layout)
    first = layout.root / str(logs.append_messages("s", said("before the dream")).path)
    archived = layout.session_log_archive / first.name
    archived.parent.mkdir(parents=True)
    os.rename(first, archived)
    archived_text = archived.read_text()

    second = logs.append_messages("s", said("after the dream"))
    assert second.path is not None and second.path.name == "2026-10-03_002.md"
    assert not first.exists()
    assert archived.read_text() == archived_text
    meta = meta_of(layout.root / str(second.path))
    assert meta["part"] == 2 and meta["continues"] == "2026-10-03_001"
    turns = session_turns(layout, "s", dt.UTC)
    assert [turn.text for turn in turns] == ["before the dream", "after the dream"]
    assert logs.close("s").message_count == 1


def test_a_log_archived_while_its_close_rewrites_it_is_not_put_back(
    layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A crash test: a dream archived a log between the close's read of it and its write,
    and the write put it back beside the archived copy: every line twice, the copy pending
    again (`tests/stress/test_crash.py`, "a text written twice")."""
    logs = open_logs(layout)
    live = layout.root / str(logs.append_messages("s", said("said once")).path)
    archived = layout.session_log_archive / live.name
    read = rewrite.read

    def read_then_archived(root: Path, path: Path) -> str:
        text = read(root, path)
        if path == live and live.exists():  # the dream moves it right after the read
            archived.parent.mkdir(parents=True, exist_ok=True)
            os.rename(live, archived)
        return text

    monkeypatch.setattr(rewrite, "read", read_then_archived)
    logs.close("s")
    assert not live.exists()
    assert archived.read_text().count("said once") == 1


def test_a_log_replaced_in_place_is_left_alone(layout: Layout) -> None:
    logs = open_logs(layout)
    path = layout.root / str(logs.append_messages("s", said("one")).path)
    doc = frontmatter.parse(path.read_text())
    doc.meta["status"] = "processed"
    write_atomic(path, frontmatter.render(doc).encode())  # a dream marks it, not yet moved
    processed = path.read_text()

    nxt = logs.append_tool("s", ToolCall("x()", "y"))
    assert nxt.path is not None and nxt.path.name == "2026-10-03_002.md"
    assert path.read_text() == processed
    logs.close("s")
    assert path.read_text() == processed  # closing does not touch it either


@pytest.mark.parametrize("rewritten", ["---\nsession_id: bro", "---\nedited: by hand\n---\n"])
def test_a_log_rewritten_in_place_keeping_its_inode_is_left_alone(
    layout: Layout, rewritten: str
) -> None:
    """An editor that saves in place, or ``>``: the same inode, other bytes. Appended to,
    the next turn was glued onto a front-matter cut short and could not be read."""
    logs = open_logs(layout)
    path = layout.root / str(logs.append_messages("s", said("first")).path)
    with path.open("r+") as handle:  # in place: the inode stays
        handle.truncate(0)
        handle.write(rewritten)

    nxt = logs.append_messages("s", said("second"))
    assert nxt.path is not None and nxt.path.name == "2026-10-03_002.md"
    assert path.read_text() == rewritten
    turns = session_turns(layout, "s", dt.UTC)
    assert [turn.text for turn in turns][-1] == "second"
    logs.close("s")
    assert path.read_text() == rewritten


def test_pending_logs_oldest_first_with_their_open_state(layout: Layout) -> None:
    logs = open_logs(layout)
    layout.session_log_dir.mkdir(parents=True)
    (layout.session_log_dir / "2026-09-30_012.md").write_text("---\nstatus: processed\n---\n")
    (layout.session_log_dir / "2026-10-01_002.md").write_text("no front-matter at all\n")
    (layout.session_log_dir / "2026-10-01_010.md").write_text("---\nbad: [\n---\n")
    (layout.session_log_dir / ".hidden.md").write_text("---\n---\n")
    logs.append_messages("a", said("a"))
    logs.append_messages("b", said("b"))
    logs.close("a")
    pending = [(p.path.name, p.open) for p in logs.pending_logs()]
    assert pending == [
        ("2026-10-01_002.md", False),
        ("2026-10-01_010.md", False),
        ("2026-10-03_001.md", False),
        ("2026-10-03_002.md", True),
    ]
    assert logs.is_open(layout.session_log_dir / "2026-10-03_002.md")
    assert not logs.is_open(layout.session_log_dir / "2026-10-03_001.md")


def test_a_restart_leaves_crashed_logs_pending_and_opens_new_ones(layout: Layout) -> None:
    crashed = open_logs(layout)
    crashed.append_messages("s", said("just before the crash"))
    restarted = open_logs(layout)
    [pending] = restarted.pending_logs()
    assert not pending.open
    meta = meta_of(pending.path)
    assert meta["status"] == "pending" and "end_time" not in meta
    again = restarted.append_messages("s", said("after the restart"))
    assert again.path is not None and again.path.name == "2026-10-03_002.md"
    assert "part" not in meta_of(layout.root / str(again.path))
    assert restarted.close_all()[0].path == again.path
    assert "end_time" not in meta_of(pending.path)  # not ours to finalise


def test_stop_closes_everything_and_refuses_new_entries(layout: Layout) -> None:
    logs = open_logs(layout)
    path = layout.root / str(logs.append_messages("s", said("x")).path)
    assert [closed.path for closed in logs.stop()] == [layout.relative(path)]
    assert meta_of(path)["message_count"] == 1
    with pytest.raises(Unavailable):
        logs.append_messages("s", said("too late"))
    with pytest.raises(Unavailable):
        logs.append_tool("t", ToolCall("x()"))
    assert logs.close("s").path is None


def test_a_file_someone_else_made_does_not_lose_its_number(layout: Layout) -> None:
    logs = open_logs(layout)
    logs.append_messages("a", said("a"))
    taken = layout.session_log_dir / "2026-10-03_002.md"
    taken.write_text("a person's notes\n")
    assert str(logs.append_messages("b", said("b")).path).endswith("2026-10-03_003.md")
    assert taken.read_text() == "a person's notes\n"


def test_appends_and_closes_racing_lose_nothing(layout: Layout) -> None:
    """32 threads over 4 sessions, closing them at random: every acknowledged message is in
    exactly one log of its session, in the order it was sent, and every closed log is
    finalised with the right count."""
    logs = open_logs(layout, log_max_bytes=4096)
    sessions = [f"s{number}" for number in range(4)]
    acknowledged: dict[str, list[str]] = {session: [] for session in sessions}
    guard = threading.Lock()
    barrier = threading.Barrier(32)

    def writer(worker: int) -> None:
        session = sessions[worker % 4]
        rng = random.Random(worker)
        barrier.wait()
        for number in range(25):
            text = f"w{worker:02d} n{number:02d} " + "p" * rng.randrange(10, 200)
            logs.append_messages(session, said(text))
            with guard:
                acknowledged[session].append(text)
            if rng.random() < 0.1:
                logs.close(session)

    threads = [threading.Thread(target=writer, args=(worker,)) for worker in range(32)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    logs.close_all()

    for session in sessions:
        texts = [turn.text for turn in session_turns(layout, session, dt.UTC)]
        assert sorted(texts) == sorted(acknowledged[session])
        for worker in range(session_number := int(session[1:]), 32, 4):
            mine = [text.split(" ")[1] for text in texts if text.startswith(f"w{worker:02d} ")]
            assert mine == [f"n{number:02d}" for number in range(25)], session_number
    for path in layout.session_log_dir.glob("*.md"):
        doc = frontmatter.parse(path.read_text())
        assert doc.meta["message_count"] == doc.body.count("\n\n")
        assert "end_time" in doc.meta
    assert logs.pending_logs() and not any(p.open for p in logs.pending_logs())


def test_one_s_own_scrub_patterns_touch_only_what_was_said(layout: Layout) -> None:
    # The whole written block was scrubbed: `\d{4}` took every timestamp's year and `user`
    # the role, so the line was no longer read as the user's, nor found by a search.
    logs = open_logs(layout, scrub_patterns=[r"\d{4}", "user"])
    said = [Message("user", "My PIN is 1234. The user said hi."), Message("agent", "ok noted")]
    path = layout.root / str(logs.append_messages("s", said).path)
    logs.append_tool("s", ToolCall("lookup(user=1999)", "found user 2000", reason="for the user"))
    logs.close("s")
    text = path.read_text("utf-8")
    assert f"[user] {START:%Y}-" in text and f"[agent] {START:%Y}-" in text
    assert "My PIN is [REDACTED]. The [REDACTED] said hi." in text
    assert "call: lookup([REDACTED]=[REDACTED])" in text and "reason: for the [REDACTED]" in text
    turns = session_turns(layout, "s", dt.UTC)
    assert [turn.role for turn in turns] == ["user", "agent", "tool"]
    assert all(turn.timestamp is not None and turn.timestamp.year == START.year for turn in turns)


@pytest.mark.parametrize("pattern", ["", "x*", r"\b", "a|"])
def test_a_scrub_pattern_that_matches_nothing_at_all_is_refused(pattern: str) -> None:
    # Each put a mark between every two characters of the log.
    with pytest.raises(ValueError, match="matches an empty string"):
        CaptureSettings.model_validate({"scrub_patterns": [pattern]})
