"""Logs read back as turns: what somnid wrote, and what the original plugin wrote."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

from fastapi.testclient import TestClient

from somnid.api.app import create_app
from somnid.config import Settings
from somnid.memory.clock import ManualClock
from somnid.sessions import read_log, recent_turns, session_turns
from somnid.sessions.transcript import ToolBlock, file_mark, parse_turns
from somnid.store.layout import Layout
from tests.clients import app_client
from tests.conftest import START

TRICKY = (
    "first line\n"
    "[agent] 2026-01-01T00:00:00 pretending to be a header\n"
    "\\[user] 2026-01-01T00:00:00\n"
    "  indented, and [brackets] inside\n"
    "\n"
    "after a blank line"
)


def test_what_is_written_reads_back(client: TestClient, data_dir: Path, clock: ManualClock) -> None:
    messages = [
        {"role": "user", "text": TRICKY, "speaker": "Alice Smith"},
        {"role": "agent", "text": "一句中文，带 ⏎ 符号"},
        {"role": "user", "text": "  padded  \r\n"},
    ]
    assert client.post("/v1/sessions/s/messages", json={"messages": messages}).status_code == 200
    clock.advance(dt.timedelta(seconds=5))
    client.post(
        "/v1/sessions/s/tool-calls",
        json={"call": "grep(\n  'x')", "result": "a\nb", "reason": "why", "error": "boom"},
    )
    client.post("/v1/sessions/s/tool-calls", json={"call": "ls()"})

    turns = session_turns(Layout(data_dir), "s", dt.UTC)
    assert [(t.role, t.speaker, t.text) for t in turns[:3]] == [
        ("user", "Alice Smith", TRICKY),
        ("agent", None, "一句中文，带 ⏎ 符号"),
        ("user", None, "padded"),
    ]
    assert {t.timestamp for t in turns[:3]} == {START}
    assert turns[3].timestamp == START + dt.timedelta(seconds=5)
    assert turns[3].tool == ToolBlock(
        call="grep(\n  'x')", result="a\nb", error="boom", reason="why"
    )
    assert turns[4].tool == ToolBlock(call="ls()", result="", error=None, reason=None)
    assert all(t.log == "2026-10-03_001" for t in turns)
    assert len(turns) == 5


def test_a_log_of_the_original_plugin(original_data_dir: Path) -> None:
    shanghai = dt.timezone(dt.timedelta(hours=8))
    log = read_log(original_data_dir / "memory/session-log/2026-10-02_001.md", shanghai)
    assert log.chat_id == "12-34"
    assert log.meta["message_count"] == 3
    user, agent, tool = log.turns
    assert (user.role, user.speaker, user.text) == ("user", None, "Who is on call next week?")
    assert user.timestamp == dt.datetime(2026, 10, 2, 9, 0, 5, tzinfo=shanghai)
    assert agent.text == "I don't know yet; I'll ask Alice."
    assert tool.tool == ToolBlock(
        call="list_intentions()",
        result="- [pi-20261001-001] 提醒用户续费域名（due 2026-12-15, high）",
        error=None,
        reason=None,
    )


def test_a_session_across_live_and_archived_logs(
    original_data_dir: Path, clock: ManualClock
) -> None:
    settings = Settings(data_dir=original_data_dir, timezone="UTC", embed={"provider": "off"})
    with app_client(create_app(settings, clock=clock), settings) as client:
        client.post(
            "/v1/sessions/12-34/messages",
            json={"messages": [{"role": "user", "text": "And the week after?"}]},
        )
    layout = Layout(original_data_dir)
    texts = [turn.text for turn in session_turns(layout, "12-34", dt.UTC, roles={"user"})]
    assert texts == ["Who is on call next week?", "And the week after?"]
    archived = session_turns(layout, "sess-1", dt.UTC)
    assert [turn.role for turn in archived] == ["user", "agent"]
    assert archived[1].text == "是 pytest 版本不兼容。"
    assert session_turns(layout, "nobody", dt.UTC) == []


def test_recent_turns_newest_first_with_a_cap(original_data_dir: Path) -> None:
    layout = Layout(original_data_dir)
    newest = recent_turns(layout, dt.UTC, limit=3, roles={"user", "agent"})
    assert [turn.text for turn in newest] == [
        "I don't know yet; I'll ask Alice.",
        "Who is on call next week?",
        "是 pytest 版本不兼容。",
    ]
    everything = recent_turns(layout, dt.UTC, limit=100)
    assert [turn.role for turn in everything] == ["tool", "agent", "user", "agent", "user"]
    assert recent_turns(layout, dt.UTC, limit=0) == []


def test_parsing_tolerates_odd_text() -> None:
    body = (
        "stray text before any header\n\n"
        "[user] not-a-time\nhello\n\n"
        "[agent] 2026-10-03T12:00:00\n\n"
    )
    turns = parse_turns(body, dt.UTC)
    assert [(t.role, t.text, t.timestamp) for t in turns] == [("user", "hello", None)]


def test_a_log_edited_with_its_mtime_put_back_is_marked_changed(tmp_path: Path) -> None:
    log = tmp_path / "2023-05-20_001.md"
    log.write_text("**user**: the code is 1234\n")
    info = log.stat()
    mark = file_mark(log)
    log.write_text("**user**: the code is XXXX\n")  # the same size, the mtime put back
    while log.stat().st_ctime_ns == info.st_ctime_ns:  # a kernel's coarse clock: a tick on
        log.write_text("**user**: the code is XXXX\n")
    os.utime(log, ns=(info.st_atime_ns, info.st_mtime_ns))
    assert file_mark(log) != mark
    assert file_mark(tmp_path / "gone.md") == (0, -1)
