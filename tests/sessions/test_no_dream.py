"""Never dream this: a session's pending logs get ``dream: false``, closed and open, its
later parts and logs keep it, and nothing else is touched."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from somnid.api.app import create_app
from somnid.config import CaptureSettings, Settings
from somnid.errors import Conflict
from somnid.memory.clock import ManualClock
from somnid.sessions import Message, SessionLogs
from somnid.sessions.records import is_pending, wants_dream
from somnid.store import frontmatter
from somnid.store.atomic import write_atomic
from somnid.store.layout import Layout
from tests.api.problems import assert_problem
from tests.clients import app_client
from tests.conftest import START
from tests.stores import made_layout


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    return made_layout(tmp_path / "data")


def open_logs(layout: Layout, **capture: object) -> SessionLogs:
    return SessionLogs(layout, ManualClock(START), CaptureSettings.model_validate(capture))


def said(text: str) -> list[Message]:
    return [Message("user", text)]


def doc_of(path: Path) -> frontmatter.Document:
    return frontmatter.parse(path.read_text("utf-8"))


def written(logs: SessionLogs, session: str, text: str) -> Path:
    appended = logs.append_messages(session, said(text))
    assert appended.path is not None
    return logs.layout.root / str(appended.path)


def test_the_sessions_pending_logs_are_marked_and_nothing_else(layout: Layout) -> None:
    logs = open_logs(layout)
    archived = written(logs, "s", "archived by an earlier dream")
    logs.close("s")
    logs.mark_processed(archived)
    first = written(logs, "s", "a first conversation")
    logs.close("s")
    processed = written(logs, "s", "processed, not yet moved")
    logs.close("s")
    doc = doc_of(processed)
    doc.meta["status"] = "processed"
    write_atomic(processed, frontmatter.render(doc).encode())
    other = written(logs, "other", "another session")
    logs.close("other")
    still_open = written(logs, "s", "the conversation goes on")
    untouched = {
        path: path.read_bytes()
        for path in (*layout.session_log_archive.glob("*.md"), processed, other)
    }
    before = {path: doc_of(path) for path in (first, still_open)}

    marked = logs.mark_no_dream("s")

    assert marked.paths == [layout.relative(first), layout.relative(still_open)]
    assert marked.open == layout.relative(still_open)
    assert {path: path.read_bytes() for path in untouched} == untouched
    for path, old in before.items():
        new = doc_of(path)
        assert new.body == old.body
        keys = list(old.meta)
        assert list(new.meta) == [*keys[:-1], "dream", "status"]  # just before status
        assert new.meta["dream"] is False and new.meta["status"] == "pending"
        assert {k: new.meta[k] for k in keys} == {k: old.meta[k] for k in keys}
    flags = {p.path.name: (p.open, p.dream) for p in logs.pending_logs()}
    assert flags == {first.name: (False, False), other.name: (False, True),
                     still_open.name: (True, False)}  # fmt: skip

    # The open log is still the session's: appends go on in it, and closing keeps the flag.
    assert written(logs, "s", "and on") == still_open
    closed = logs.close("s")
    assert closed.path == layout.relative(still_open) and closed.message_count == 2
    meta = doc_of(still_open).meta
    assert meta["dream"] is False and meta["message_count"] == 2 and "end_time" in meta

    again = {path: path.read_bytes() for path in (first, still_open)}
    assert logs.mark_no_dream("s").paths == marked.paths  # idempotent
    assert {path: path.read_bytes() for path in again} == again


def test_later_parts_and_new_logs_of_the_session_keep_the_flag(layout: Layout) -> None:
    logs = open_logs(layout, log_max_bytes=4096)
    first = written(logs, "s", "x" * 3000)
    written(logs, "plain", "a session nobody marked")
    assert logs.mark_no_dream("s").open == layout.relative(first)
    second = written(logs, "s", "y" * 3000)  # past the cap: a new part
    assert second != first
    meta = doc_of(second).meta
    assert meta["part"] == 2 and meta["continues"] == first.stem and meta["dream"] is False
    logs.close("s")
    third = written(logs, "s", "after a close (a dream closes open logs itself)")
    assert "part" not in doc_of(third).meta and doc_of(third).meta["dream"] is False
    logs.close_all()
    assert [p.path for p in logs.pending_logs() if p.dream] == [
        layout.session_log_dir / "2026-10-03_002.md"
    ]


def test_an_open_log_moved_away_is_not_recreated(layout: Layout) -> None:
    logs = open_logs(layout)
    first = written(logs, "s", "before a dream took it")
    layout.session_log_archive.mkdir(parents=True)
    os.rename(first, layout.session_log_archive / first.name)
    marked = logs.mark_no_dream("s")
    assert marked.paths == [] and marked.open == layout.relative(first)
    assert not first.exists()
    nxt = written(logs, "s", "the session continues in a new part")
    assert doc_of(nxt).meta["dream"] is False and doc_of(nxt).meta["part"] == 2


def test_logs_from_the_original_plugin_and_broken_ones(layout: Layout) -> None:
    layout.session_log_dir.mkdir(parents=True)
    numeric = layout.session_log_dir / "2026-09-30_001.md"
    numeric.write_text("---\nchat_id: 12345\nstatus: pending\n---\n\n[user] 2026-09-30 10:00\nhi\n")
    broken = layout.session_log_dir / "2026-09-30_002.md"
    broken.write_text("---\nchat_id: 12345\nstatus: [\n---\nhi\n")
    logs = open_logs(layout)
    assert logs.mark_no_dream("12345").paths == [layout.relative(numeric)]
    assert doc_of(numeric).meta["dream"] is False
    assert broken.read_text() == "---\nchat_id: 12345\nstatus: [\n---\nhi\n"


@pytest.mark.parametrize(
    ("value", "dream"),
    [(False, False), ("no", False), (" OFF ", False), ("false", False), (True, True),
     ("yes", True), (None, True), (0, True)],
)  # fmt: skip
def test_what_counts_as_dream_false(value: object, dream: bool) -> None:
    assert wants_dream({"dream": value}) is dream
    assert wants_dream({}) is True


def test_marking_never_puts_back_a_log_a_dream_is_moving(layout: Layout) -> None:
    """A dream archiving logs while the session is marked: every log ends up archived
    exactly once; none is re-created among the pending by a rewrite racing the move."""
    logs = open_logs(layout)
    paths = []
    for number in range(40):
        paths.append(written(logs, "s", f"conversation {number}"))
        logs.close("s")
    start = threading.Barrier(2)

    def dream() -> None:
        start.wait()
        for path in paths:
            logs.mark_processed(path)

    def mark() -> None:
        start.wait()
        for _ in range(20):
            logs.mark_no_dream("s")

    threads = [threading.Thread(target=dream), threading.Thread(target=mark)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert list(layout.session_log_dir.glob("*.md")) == []
    archived = sorted(path.name for path in layout.session_log_archive.glob("*.md"))
    assert archived == sorted(path.name for path in paths)
    for path in layout.session_log_archive.glob("*.md"):
        assert doc_of(path).meta["status"] == "processed"


# -- the route ----------------------------------------------------------------------------


def test_the_route(client: TestClient, data_dir: Path) -> None:
    sessions = "/v1/sessions"
    empty = client.post(f"{sessions}/quiet/no-dream")
    assert empty.status_code == 200
    assert empty.json() == {"sessionId": "quiet", "paths": [], "openLog": None}
    say = {"messages": [{"role": "user", "text": "please forget this conversation"}]}
    first = client.post(f"{sessions}/s/messages", json=say).json()["path"]
    client.post(f"{sessions}/s/close")
    second = client.post(f"{sessions}/s/messages", json=say).json()["path"]
    answer = client.post(f"{sessions}/s/no-dream").json()
    assert answer == {"sessionId": "s", "paths": [first, second], "openLog": second}
    for path in (first, second):
        assert doc_of(data_dir / path).meta["dream"] is False
    # A session marked before it wrote anything: its first log opens marked.
    later = client.post(f"{sessions}/quiet/messages", json=say).json()["path"]
    assert doc_of(data_dir / later).meta["dream"] is False
    assert_problem(client.post(f"{sessions}/{'x' * 201}/no-dream"), 422, "validation_error")
    assert_problem(client.post(f"{sessions}/a%0Ab/no-dream"), 400, "invalid_input")


def test_a_skip_survives_a_restart(settings: Settings, clock: ManualClock, data_dir: Path) -> None:
    say = {"messages": [{"role": "user", "text": "please forget this conversation"}]}
    with app_client(create_app(settings, clock=clock), settings) as client:
        client.post("/v1/sessions/s/messages", json=say).raise_for_status()
        client.post("/v1/sessions/s/no-dream").raise_for_status()
    # somnid restarted (its open logs were closed): the session's next log is still marked.
    with app_client(create_app(settings, clock=clock), settings) as client:
        again = client.post("/v1/sessions/s/messages", json=say).json()["path"]
        other = client.post("/v1/sessions/t/messages", json=say).json()["path"]
    assert doc_of(data_dir / again).meta["dream"] is False
    assert "dream" not in doc_of(data_dir / other).meta


def test_the_flag_outlives_its_logs_across_a_restart(layout: Layout) -> None:
    # A probe: once every marked log was archived (a sleep skips them), a restart forgot the
    # session, and its next log, secrets and all, was dreamed.
    logs = open_logs(layout)
    marked = written(logs, "secret", "the alarm code is GECKO-3141")
    logs.mark_no_dream("secret")
    logs.close("secret")
    logs.mark_processed(marked)  # archived unread: no pending log holds the flag now
    assert not logs.pending_logs()
    restarted = open_logs(layout)
    assert restarted.recall()[0] == 1
    again = written(restarted, "secret", "and the safe is behind the painting")
    other = written(restarted, "open", "an ordinary conversation")
    assert doc_of(again).meta["dream"] is False
    assert "dream" not in doc_of(other).meta


def test_a_broken_list_is_reported_and_kept_beside_the_new_one(
    layout: Layout, caplog: pytest.LogCaptureFixture
) -> None:
    logs = open_logs(layout)
    logs.mark_no_dream("first")
    kept = layout.root / "no-dream.json"
    kept.write_text('{"sessions": ["first", ')  # broken by hand
    restarted = open_logs(layout)
    assert restarted.recall()[0] == 0
    assert "cannot be read" in caplog.text
    assert kept.read_text() == '{"sessions": ["first", '  # left as it is until a mark
    restarted.mark_no_dream("second")
    [aside] = layout.root.glob("no-dream.json.broken-*")
    assert aside.read_text() == '{"sessions": ["first", '
    assert "second" in kept.read_text()
    assert open_logs(layout).recall()[0] == 1


@pytest.mark.parametrize(
    "content",
    [
        '{"sessions": ["a", "\\ud800", "a"]}',  # a lone surrogate: no text to write back
        '{"sessions": ["ok", "with\\nnewline"]}',
        '{"sessions": ["' + "x" * 201 + '"]}',
        '{"sessions": [5]}',
    ],
)
def test_an_id_capture_would_refuse_makes_the_list_broken_not_the_start(
    layout: Layout, content: str
) -> None:
    # A review: {"sessions": ["a", "\ud800", "a"]} failed the start (writing it back
    # raised), and with ["\ud800"] every mark answered 500 before marking the logs.
    layout.root.mkdir(parents=True, exist_ok=True)
    (layout.root / "no-dream.json").write_text(content)
    logs = open_logs(layout)
    assert logs.recall()[0] == 0
    assert (layout.root / "no-dream.json").read_text() == content
    logs.mark_no_dream("later")
    assert open_logs(layout).recall()[0] == 1


def test_a_fifo_in_the_list_s_place_hangs_nothing(layout: Layout) -> None:
    layout.root.mkdir(parents=True, exist_ok=True)
    os.mkfifo(layout.root / "no-dream.json")
    assert open_logs(layout).recall()[0] == 0  # read as broken, not waited on


def test_one_owner_archives_logs_and_says_what_is_pending(layout: Layout) -> None:
    """The sessions package archives a processed log and is the one rule of "pending":
    health, the dream and "never dream this" count the same logs."""
    logs = open_logs(layout)
    done = written(logs, "s", "consolidated")
    logs.close("s")
    still_open = written(logs, "t", "a session still writing")
    by_hand = layout.session_log_dir / "notes.md"
    by_hand.write_text("no front-matter at all")  # work to do, not lost
    with pytest.raises(Conflict):
        logs.mark_processed(still_open)  # a session still writes to it
    target, note = logs.mark_processed(done)
    assert (target, note) == (layout.session_log_archive / done.name, "")
    assert doc_of(target).meta["status"] == "processed" and not done.exists()
    names = [p.path.name for p in logs.pending_logs()]
    assert sorted(names) == sorted([still_open.name, by_hand.name])
    assert [p.dreamable for p in logs.pending_logs() if p.path == still_open] == [False]
    assert is_pending({}) and is_pending({"status": "pending"})
    assert not is_pending({"status": "processed"})


def test_a_link_swapped_in_for_a_log_is_archived_as_it_is_never_followed(
    layout: Layout, tmp_path: Path
) -> None:
    """Between a dream's read and its mark, a local user swaps the log for a link to a file
    outside the data dir: the link is moved as it is, and what it points to is neither read
    into the archive nor rewritten."""
    logs = open_logs(layout)
    done = written(logs, "s", "consolidated")
    logs.close("s")
    secret = tmp_path / "secret.md"
    secret.write_text("---\nstatus: pending\n---\nsomeone else's notes\n")
    done.unlink()
    done.symlink_to(secret)
    target, note = logs.mark_processed(done)
    assert "symbolic link" in note and "moved as it is" in note
    assert target.is_symlink() and not done.exists()
    assert secret.read_text() == "---\nstatus: pending\n---\nsomeone else's notes\n"
