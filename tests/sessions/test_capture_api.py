"""Session capture through the real app: lazy logs, their lines, caps, close, numbering."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from fastapi.testclient import TestClient

from somnid.api.app import create_app
from somnid.config import Settings
from somnid.memory.clock import ManualClock
from somnid.store import frontmatter
from tests.api.problems import assert_problem
from tests.clients import app_client
from tests.conftest import START


def log_dir(data_dir: Path) -> Path:
    return data_dir / "memory" / "session-log"


def read(path: Path) -> frontmatter.Document:
    return frontmatter.parse(path.read_text("utf-8"))


def say(client: TestClient, session: str, *messages: dict[str, Any]) -> dict[str, Any]:
    response = client.post(f"/v1/sessions/{session}/messages", json={"messages": list(messages)})
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def user(text: str, **extra: Any) -> dict[str, Any]:
    return {"role": "user", "text": text, **extra}


def agent(text: str, **extra: Any) -> dict[str, Any]:
    return {"role": "agent", "text": text, **extra}


@pytest.fixture
def small_client(data_dir: Path, clock: ManualClock) -> Iterator[TestClient]:
    settings = Settings(
        data_dir=data_dir,
        timezone="UTC",
        embed={"provider": "off"},
        capture={"max_message_chars": 100, "log_max_bytes": 4096},
    )
    with app_client(create_app(settings, clock=clock), settings) as test_client:
        yield test_client


def test_a_log_opens_at_the_first_message_with_its_front_matter(
    client: TestClient, data_dir: Path
) -> None:
    assert list(log_dir(data_dir).glob("*.md")) == []
    answer = say(
        client,
        "chat-7",
        user("Who is on call?", userId="alice", chatType="dsh", speaker="Alice"),
        agent("Bob, from Monday.\nI asked him."),
    )
    assert answer == {
        "sessionId": "chat-7",
        "path": "memory/session-log/2026-10-03_001.md",
        "written": 2,
        "truncated": 0,
        "skipped": [],
        "messageCount": 2,
    }
    doc = read(data_dir / answer["path"])
    assert dict(doc.meta) == {
        "session_id": "2026-10-03_001",
        "chat_id": "chat-7",
        "user": "alice",
        "chat_type": "dsh",
        "start_time": START,
        "status": "pending",
    }
    assert doc.body == (
        "[user:Alice] 2026-10-03T12:00:00+00:00\nWho is on call?\n\n"
        "[agent] 2026-10-03T12:00:00+00:00\nBob, from Monday.\nI asked him.\n\n"
    )


def test_a_batch_lands_in_order_and_empty_messages_are_skipped(
    client: TestClient, data_dir: Path
) -> None:
    answer = say(client, "s", user("one"), agent("  \n "), user("two"), agent(""), agent("three"))
    assert answer["written"] == 3
    assert answer["skipped"] == [{"index": 1, "reason": "empty"}, {"index": 3, "reason": "empty"}]
    body = read(data_dir / answer["path"]).body
    assert [line for line in body.splitlines() if line and not line.startswith("[")] == [
        "one",
        "two",
        "three",
    ]
    only_empty = say(client, "other", user(" "))
    assert only_empty["path"] is None and only_empty["written"] == 0
    assert len(list(log_dir(data_dir).glob("*.md"))) == 1  # nothing opened for nothing


def test_long_messages_are_cut_with_a_visible_marker(
    small_client: TestClient, data_dir: Path
) -> None:
    answer = say(small_client, "s", user("a" * 250), agent("b" * 100))
    assert answer["truncated"] == 1
    body = read(data_dir / answer["path"]).body
    assert f"{'a' * 100} …(truncated, 250 chars)\n" in body
    assert f"\n{'b' * 100}\n" in body


def test_tool_calls_are_one_line_per_field_and_results_are_short(
    client: TestClient, data_dir: Path
) -> None:
    first = client.post(
        "/v1/sessions/s/tool-calls",
        json={
            "call": 'search(query="deploy")',
            "result": "line one\nline two\r\n" + "x" * 400,
            "reason": "the user asked\nabout deploys",
        },
    )
    assert first.status_code == 200, first.text
    failed = client.post(
        "/v1/sessions/s/tool-calls", json={"call": "read(path=x)", "error": "NotFound: x"}
    )
    assert failed.json()["messageCount"] == 2
    body = read(data_dir / first.json()["path"]).body
    blocks = body.split("\n\n")
    lines = blocks[0].split("\n")
    assert lines[:3] == [
        "[tool] 2026-10-03T12:00:00+00:00",
        "reason: the user asked ⏎ about deploys",
        'call: search(query="deploy")',
    ]
    assert lines[3].startswith("result: line one ⏎ line two ⏎ xxx")
    assert lines[3].endswith(" …(truncated, 422 chars)")
    assert len(lines) == 4
    assert blocks[1] == "[tool] 2026-10-03T12:00:00+00:00\ncall: read(path=x)\nerror: NotFound: x"


def test_a_tool_call_that_names_no_call_is_skipped_as_empty(
    client: TestClient, data_dir: Path
) -> None:
    # A probe: `call: " "` wrote a block that said nothing was called.
    for call in (" ", "\n\t", "\r\n"):
        blank = client.post("/v1/sessions/s/tool-calls", json={"call": call, "result": "ok"})
        assert blank.status_code == 200, blank.text
        assert blank.json()["written"] == 0 and blank.json()["path"] is None, blank.text
        assert blank.json()["skipped"] == [{"index": 0, "reason": "empty"}], blank.text
    assert not (data_dir / "memory/session-log").exists() or not any(
        (data_dir / "memory/session-log").glob("*.md")
    )


def test_close_finalises_and_the_next_message_opens_a_new_log(
    client: TestClient, data_dir: Path, clock: ManualClock
) -> None:
    say(client, "s", user("hi"), agent("hello"))
    client.post("/v1/sessions/s/tool-calls", json={"call": "noop()", "result": "ok"})
    clock.advance(dt.timedelta(minutes=20))
    closed = client.post("/v1/sessions/s/close")
    assert closed.json() == {
        "sessionId": "s",
        "path": "memory/session-log/2026-10-03_001.md",
        "part": 1,
        "messageCount": 3,
    }
    doc = read(data_dir / "memory/session-log/2026-10-03_001.md")
    assert list(doc.meta) == [
        "session_id",
        "chat_id",
        "user",
        "start_time",
        "end_time",
        "message_count",
        "status",
    ]
    assert doc.meta["end_time"] == START + dt.timedelta(minutes=20)
    assert doc.meta["message_count"] == 3
    assert doc.meta["status"] == "pending"
    assert doc.body.count("\n\n") == 3  # the entries are all still there

    again = client.post("/v1/sessions/s/close")
    assert again.json() == {"sessionId": "s", "path": None, "part": 0, "messageCount": 0}
    later = say(client, "s", user("back again"))
    assert later["path"] == "memory/session-log/2026-10-03_002.md"
    assert later["messageCount"] == 1
    new = read(data_dir / later["path"])
    assert new.meta["session_id"] == "2026-10-03_002" and "end_time" not in new.meta
    assert "back again" not in (data_dir / "memory/session-log/2026-10-03_001.md").read_text()


def test_closing_a_session_that_never_wrote_creates_nothing(
    client: TestClient, data_dir: Path
) -> None:
    answer = client.post("/v1/sessions/never/close")
    assert answer.status_code == 200
    assert answer.json()["path"] is None
    assert list(log_dir(data_dir).iterdir()) == []


def test_numbers_are_never_reused_archived_ones_included(
    client: TestClient, data_dir: Path
) -> None:
    archive = log_dir(data_dir) / "archived"
    archive.mkdir(parents=True)
    (archive / "2026-10-03_007.md").write_text("---\nstatus: processed\n---\n")
    (archive / "2026-10-02_031.md").write_text("---\nstatus: processed\n---\n")
    (log_dir(data_dir) / "2026-10-03_002.md").write_text("---\nstatus: pending\n---\n")
    assert say(client, "a", user("x"))["path"] == "memory/session-log/2026-10-03_008.md"
    assert say(client, "b", user("y"))["path"] == "memory/session-log/2026-10-03_009.md"


def test_the_day_in_the_name_follows_the_clock_in_its_zone(data_dir: Path) -> None:
    shanghai = ManualClock(
        dt.datetime(2026, 10, 3, 20, 0, tzinfo=dt.UTC).astimezone(ZoneInfo("Asia/Shanghai"))
    )
    settings = Settings(data_dir=data_dir, timezone="Asia/Shanghai", embed={"provider": "off"})
    with app_client(create_app(settings, clock=shanghai), settings) as client:
        first = say(client, "s", user("late in UTC, early next day in Shanghai"))
        assert first["path"] == "memory/session-log/2026-10-04_001.md"
        assert "\n[user] 2026-10-04T04:00:00+08:00\n" in "\n" + read(data_dir / first["path"]).body
        client.post("/v1/sessions/s/close")
        shanghai.advance(dt.timedelta(days=1))
        assert say(client, "s", user("a day on"))["path"] == "memory/session-log/2026-10-05_001.md"


def test_close_all_closes_every_open_log(client: TestClient, data_dir: Path) -> None:
    for session in ("a", "b", "c"):
        say(client, session, user(f"hello from {session}"))
    client.post("/v1/sessions/b/close")
    answer = client.post("/v1/sessions/close-all").json()
    assert answer["closed"] == 2
    assert sorted(answer["paths"]) == [
        "memory/session-log/2026-10-03_001.md",
        "memory/session-log/2026-10-03_003.md",
    ]
    for path in log_dir(data_dir).glob("*.md"):
        assert read(path).meta["message_count"] == 1
    assert client.post("/v1/sessions/close-all").json() == {"closed": 0, "paths": []}


def test_rollover_links_the_parts_and_loses_nothing(
    small_client: TestClient, data_dir: Path
) -> None:
    sent = [f"message {number} " + "z" * 80 for number in range(120)]
    for start in range(0, len(sent), 3):
        say(small_client, "long", *(user(text) for text in sent[start : start + 3]))
    small_client.post("/v1/sessions/long/tool-calls", json={"call": "last()"})
    small_client.post("/v1/sessions/long/close")

    parts = sorted(log_dir(data_dir).glob("*.md"))
    assert len(parts) >= 4
    docs = [read(path) for path in parts]
    seen: list[str] = []
    total = 0
    for number, (path, doc) in enumerate(zip(parts, docs, strict=True), start=1):
        meta = doc.meta
        assert meta["chat_id"] == "long" and meta["status"] == "pending"
        assert meta.get("part", 1) == number
        if number > 1:
            assert meta["continues"] == parts[number - 2].stem
        if number < len(parts):
            assert meta["continued_by"] == parts[number].stem
            assert "total_message_count" not in meta
        assert "end_time" in meta
        entries = doc.body.count("\n\n")
        assert meta["message_count"] == entries
        total += entries
        assert path.stat().st_size <= 4096 + 200  # the cap, plus the finalised keys
        seen += [line for line in doc.body.splitlines() if line.startswith("message ")]
    assert docs[-1].meta["total_message_count"] == total == len(sent) + 1
    assert seen == sent


@pytest.mark.parametrize(
    ("session", "status", "code"),
    [
        ("a%0Ab", 400, "invalid_input"),
        ("a%00b", 400, "invalid_input"),
        ("a%1Bb", 400, "invalid_input"),
        ("a%E2%80%A8b", 400, "invalid_input"),
        ("x" * 201, 422, "validation_error"),
    ],
)
def test_bad_session_ids_are_refused(
    client: TestClient, data_dir: Path, session: str, status: int, code: str
) -> None:
    for route, body in (
        ("messages", {"messages": [user("x")]}),
        ("tool-calls", {"call": "x()"}),
        ("close", None),
    ):
        assert_problem(client.post(f"/v1/sessions/{session}/{route}", json=body), status, code)
    assert list(log_dir(data_dir).iterdir()) == []


@pytest.mark.parametrize("session", ["..\\..\\evil", "C:evil", "会话 1", "x" * 200, "close-all"])
def test_a_session_id_is_only_ever_data(client: TestClient, data_dir: Path, session: str) -> None:
    answer = say(client, session, user("hi"))
    assert answer["path"] == "memory/session-log/2026-10-03_001.md"
    assert read(data_dir / answer["path"]).meta["chat_id"] == session
    assert client.post(f"/v1/sessions/{session}/close").json()["path"] == answer["path"]


@pytest.mark.parametrize(
    "body",
    [
        {"role": "user", "text": "a single object is not the shape"},
        {"messages": []},
        {"messages": [user("x")] * 501},
        {"messages": [{"role": "system", "text": "x"}]},
        {"messages": [{"role": "user"}]},
        {"messages": [user("x", mood="happy")]},
        {"messages": [user("x", userId="")]},
        {"messages": [user("x", speaker="s" * 201)]},
        {"messages": "hi"},
    ],
)
def test_bad_message_bodies_are_refused(client: TestClient, data_dir: Path, body: object) -> None:
    assert_problem(client.post("/v1/sessions/s/messages", json=body), 422, "validation_error")
    assert list(log_dir(data_dir).iterdir()) == []


def test_other_bad_bodies(client: TestClient, data_dir: Path) -> None:
    raw = client.post(
        "/v1/sessions/s/messages", content=b"{nope", headers={"content-type": "application/json"}
    )
    assert_problem(raw, 400, "invalid_json")
    for body in ({}, {"call": ""}, {"call": "x", "result": 3}, {"call": "x", "extra": 1}):
        assert_problem(client.post("/v1/sessions/s/tool-calls", json=body), 422, "validation_error")
    control = client.post("/v1/sessions/s/messages", json={"messages": [user("x", userId="a\nb")]})
    assert_problem(control, 400, "invalid_input")
    assert list(log_dir(data_dir).iterdir()) == []


def test_capture_disabled_writes_nothing(data_dir: Path, clock: ManualClock) -> None:
    settings = Settings(
        data_dir=data_dir, timezone="UTC", embed={"provider": "off"}, capture={"enabled": False}
    )
    with app_client(create_app(settings, clock=clock), settings) as client:
        answer = say(client, "s", user("hi"), agent("hello"))
        assert answer == {
            "sessionId": "s",
            "path": None,
            "written": 0,
            "truncated": 0,
            "skipped": [{"index": 0, "reason": "disabled"}, {"index": 1, "reason": "disabled"}],
            "messageCount": 0,
        }
        tool = client.post("/v1/sessions/s/tool-calls", json={"call": "x()"}).json()
        assert tool["skipped"] == [{"index": 0, "reason": "disabled"}]
        assert client.post("/v1/sessions/s/close").json()["path"] is None
        assert client.post("/v1/sessions/close-all").json()["closed"] == 0
        assert_problem(client.post("/v1/sessions/a%00/close"), 400, "invalid_input")
    assert list(log_dir(data_dir).iterdir()) == []


def test_shutdown_closes_open_logs(settings: Settings, clock: ManualClock, data_dir: Path) -> None:
    with app_client(create_app(settings, clock=clock), settings) as client:
        say(client, "left-open", user("bye"))
        health = client.get("/v1/health").json()
        assert health["pendingLogs"] == 1
    doc = read(log_dir(data_dir) / "2026-10-03_001.md")
    assert doc.meta["message_count"] == 1 and doc.meta["status"] == "pending"


def test_a_message_keeps_the_time_it_was_said(client: TestClient, data_dir: Path) -> None:
    answer = client.post(
        "/v1/sessions/replay/messages",
        json={
            "messages": [
                {"role": "user", "text": "Said in May.", "timestamp": "2023-05-08T13:56:00+02:00"},
                {"role": "agent", "text": "Naive: in the configured zone.",
                 "timestamp": "2023-05-08T14:00:00"},
                {"role": "user", "text": "No time: the arrival time."},
            ]
        },
    )  # fmt: skip
    assert answer.status_code == 200, answer.text
    text = (data_dir / answer.json()["path"]).read_text()
    assert "[user] 2023-05-08T11:56:00+00:00\nSaid in May." in text
    assert "[agent] 2023-05-08T14:00:00+00:00\nNaive" in text
    assert "[user] 2026-" in text


@pytest.mark.parametrize(
    "bad",
    [
        "yesterday", "2023-13-40T00:00:00", "", 1683554160, True,
        # Inside the years somnid reads as sent, outside once kept in UTC: accepted, then
        # read back as no time at all (year 1, year 9999).
        "0002-01-01T00:00:00+14:00", "9998-12-31T23:59:59-14:00",
    ],
)  # fmt: skip
def test_a_timestamp_that_is_not_iso_8601_is_refused(client: TestClient, bad: object) -> None:
    answer = client.post(
        "/v1/sessions/replay/messages",
        json={"messages": [{"role": "user", "text": "hi", "timestamp": bad}]},
    )
    assert answer.status_code == 422, answer.text
    body = answer.json()
    assert body["code"] == "validation_error"
    assert "timestamp" in answer.text


def test_a_line_re_sent_with_its_id_is_written_once(client: TestClient, data_dir: Path) -> None:
    first = say(client, "again", user("Hello once.", id="m1"), agent("Hi.", id="m2"))
    assert first["written"] == 2
    # The answer was lost: the client sends the batch again, with one new line and an id twice.
    again = say(
        client, "again", user("Hello once.", id="m1"), agent("Hi.", id="m2"),
        user("New.", id="m3"), user("New.", id="m3"), user("No id."), user("No id."),
    )  # fmt: skip
    assert again["written"] == 3
    assert again["skipped"] == [
        {"index": 0, "reason": "duplicate"},
        {"index": 1, "reason": "duplicate"},
        {"index": 3, "reason": "duplicate"},
    ]
    # All duplicates: nothing written, the log named all the same.
    only = say(client, "again", user("Hello once.", id="m1"))
    assert only["written"] == 0 and only["path"] == first["path"] and only["messageCount"] == 5
    # Another session may use the same id.
    assert say(client, "other", user("Hello once.", id="m1"))["written"] == 1
    text = (data_dir / first["path"]).read_text()
    assert text.count("Hello once.") == 1 and text.count("New.") == 1 and text.count("No id.") == 2


def test_a_tool_call_keeps_its_call_time_and_is_written_once(
    client: TestClient, data_dir: Path
) -> None:
    call = {"call": "ls()", "result": "a b", "id": "t1", "timestamp": "2026-10-03T11:59:30Z"}
    first = client.post("/v1/sessions/tools/tool-calls", json=call)
    assert first.status_code == 200, first.text
    second = client.post("/v1/sessions/tools/tool-calls", json=call).json()
    assert second["written"] == 0 and second["skipped"] == [{"index": 0, "reason": "duplicate"}]
    text = (data_dir / first.json()["path"]).read_text()
    assert text.count("call: ls()") == 1
    assert "[tool] 2026-10-03T11:59:30+00:00\ncall: ls()" in text
    bad = client.post("/v1/sessions/tools/tool-calls", json={"call": "x", "timestamp": "soon"})
    assert bad.status_code == 422 and "timestamp" in bad.text
