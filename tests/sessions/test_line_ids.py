"""Line ids are kept in the session log itself (an HTML comment line ending the block), so a
re-send is written once across a somnid restart or crash; readers and dreams never see them."""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from somnid.config import CaptureSettings, Settings
from somnid.memory.clock import ManualClock
from somnid.runtime import Runtime
from somnid.sessions import SessionLogs, read_log, session_turns
from somnid.sessions.records import Message, ToolCall
from somnid.sessions.seen import RECALL_WINDOW, SeenIds, written_id
from somnid.sessions.transcript import list_logs, message_block, parse_turns
from somnid.store.layout import Layout
from tests.conftest import START
from tests.daemon import Daemon, start_daemon
from tests.dream.fakes import AGENTIC, ScriptedLLM, call, say
from tests.dream.pipeline.fakes import ScriptedJSON
from tests.stores import made_layout

FORGED = "<!-- id: m1 -->"
"""A message line that looks like an id line: written escaped, read back as text."""


def send(daemon: Daemon, session: str, *lines: tuple[str, str]) -> dict[str, Any]:
    messages = [{"role": "user", "text": text, "id": line_id} for line_id, text in lines]
    with daemon.client() as client:
        answer = client.post(f"/v1/sessions/{session}/messages", json={"messages": messages})
    assert answer.status_code == 200, answer.text
    result: dict[str, Any] = answer.json()
    return result


def send_tool(daemon: Daemon, session: str, line_id: str) -> dict[str, Any]:
    with daemon.client() as client:
        answer = client.post(
            f"/v1/sessions/{session}/tool-calls",
            json={"call": "ls()", "result": "a b", "id": line_id},
        )
    assert answer.status_code == 200, answer.text
    result: dict[str, Any] = answer.json()
    return result


def duplicates(answer: dict[str, Any]) -> list[int]:
    return [skip["index"] for skip in answer["skipped"] if skip["reason"] == "duplicate"]


def test_a_resend_after_a_restart_is_written_once(tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = [("e:1", "Deploys are on Tuesdays."), ("e:2", FORGED), ("u:9 b>c", "Odd id.")]
    with start_daemon(data) as daemon:
        assert send(daemon, "s", *first)["written"] == 3
        assert send_tool(daemon, "s", "e:3")["written"] == 1
        assert daemon.stop(signal.SIGTERM) == 0, daemon.log()  # closes (rewrites) the log
    with start_daemon(data) as daemon:
        again = send(daemon, "s", *first, ("e:4", "New after the restart."))
        assert (again["written"], duplicates(again)) == (1, [0, 1, 2])
        assert duplicates(send_tool(daemon, "s", "e:3")) == [0]
        assert duplicates(send(daemon, "s", ("e:4", "New after the restart."))) == [0]
        # Another session may use the same ids.
        assert send(daemon, "other", first[0])["written"] == 1

    turns = session_turns(Layout(data), "s", dt.UTC)
    texts = [turn.tool.call if turn.tool else turn.text for turn in turns]
    assert texts == [
        "Deploys are on Tuesdays.",
        FORGED,
        "Odd id.",
        "ls()",
        "New after the restart.",
    ]
    assert [turn.line_id for turn in turns] == ["e:1", "e:2", "u:9%20b%3Ec", "e:3", "e:4"]


def test_a_resend_after_a_crash_is_written_once(tmp_path: Path) -> None:
    """What a SIGKILL leaves is what was appended and fsynced: a log never closed. A new
    writer on the same folder (the next start) reads the ids back from it."""
    layout = made_layout(tmp_path / "data")
    capture = CaptureSettings()
    crashed = SessionLogs(layout, ManualClock(START), capture)
    crashed.append_messages("s", [Message("user", "Said just before the crash.", id="e:5")])
    crashed.append_tool("s", ToolCall("ls()", id="e:6"))

    restarted = SessionLogs(layout, ManualClock(START), capture)
    assert restarted.recall() == (0, 2)
    again = restarted.append_messages("s", [Message("user", "Said …", id="e:5")])
    assert (again.written, again.skipped) == (0, [(0, "duplicate")])
    assert restarted.append_tool("s", ToolCall("ls()", id="e:6")).skipped == [(0, "duplicate")]
    assert [turn.line_id for turn in session_turns(layout, "s", dt.UTC)] == ["e:5", "e:6"]


@pytest.fixture
async def runtime(tmp_path: Path) -> AsyncIterator[Runtime]:
    settings = Settings(
        data_dir=tmp_path / "data", timezone="UTC", embed={"provider": "off"}, dream=AGENTIC
    )
    async with Runtime.open(settings, clock=ManualClock(START)) as rt:
        yield rt


async def test_the_reader_and_a_dream_never_see_the_ids(runtime: Runtime) -> None:
    said = [
        Message("user", "I moved to Lisbon last week.", id="line-7f3a"),
        Message("agent", f"Noted.\n{FORGED}\n\\<!-- id: m2 -->", id="line-8c1d"),
    ]
    appended = await runtime.sessions.append_messages("chat", said)
    await runtime.sessions.append_tool("chat", ToolCall("recall(q)", "none", id="line-9e2b"))
    await runtime.sessions.close("chat")
    assert appended.path is not None
    path = runtime.layout.root / appended.path
    raw = path.read_text()
    assert "<!-- id: line-7f3a -->\n\n[agent]" in raw and "\n\\" + FORGED + "\n" in raw

    turns = read_log(path, dt.UTC).turns
    assert [turn.text for turn in turns[:2]] == [said[0].text, said[1].text]
    assert [turn.line_id for turn in turns] == ["line-7f3a", "line-8c1d", "line-9e2b"]
    assert turns[2].tool is not None and turns[2].tool.result == "none"

    stem = path.stem
    llm = ScriptedLLM(
        [call("read_session_log", log=stem), call("mark_log_processed", log=stem), say("ok")]
    )
    runtime.dreamer.backend = llm
    result = await runtime.dreamer.run("test")
    assert result.processed == [stem], result
    seen = json.dumps(llm.requests, ensure_ascii=False)
    assert "Lisbon" in seen
    assert not any(line_id in seen for line_id in ("line-7f3a", "line-8c1d", "line-9e2b"))
    assert seen.count("<!--") == 2  # the agent's two lines that only look like id lines


async def test_a_pipeline_dream_never_sees_the_ids(tmp_path: Path) -> None:
    settings = Settings(
        data_dir=tmp_path / "data",
        timezone="UTC",
        embed={"provider": "off"},
        dream={"by_speaker": False},
    )
    async with Runtime.open(settings, clock=ManualClock(START)) as rt:
        said = [
            Message("user", "I moved to Lisbon last week.", id="line-7f3a"),
            Message("agent", "Noted, Lisbon it is.", id="line-8c1d"),
        ]
        await rt.sessions.append_messages("chat", said)
        await rt.sessions.close("chat")
        llm = ScriptedJSON(lambda request: json.dumps({"memories": []}))
        rt.dreamer.backend = llm
        result = await rt.dreamer.run("test")
    assert result.mode == "pipeline" and len(result.processed) == 1, result
    seen = json.dumps([request.messages for request in llm.requests], ensure_ascii=False)
    assert "moved to Lisbon" in seen
    assert "<!--" not in seen and "line-7f3a" not in seen and "line-8c1d" not in seen


def test_old_logs_without_ids_still_read(original_data_dir: Path) -> None:
    layout = Layout(original_data_dir)
    logs = list_logs(layout)
    assert logs
    for log_file in logs:
        turns = read_log(log_file.path, dt.UTC).turns
        assert all(turn.line_id is None for turn in turns)
    # What somnid wrote before it wrote ids reads the same.
    body = "[user] 2026-10-03T12:00:00+00:00\nhello\n\n[agent] 2026-10-03T12:00:04+00:00\nhi\n\n"
    assert [(t.text, t.line_id) for t in parse_turns(body, dt.UTC)] == [
        ("hello", None),
        ("hi", None),
    ]
    assert SeenIds().recall(layout) == 0


def test_recall_reads_back_only_the_recent_logs(tmp_path: Path) -> None:
    layout = made_layout(tmp_path / "data")
    layout.session_log_archive.mkdir(parents=True)
    when = START

    def log(folder: Path, name: str, chat: str, *ids: str, age: dt.timedelta) -> None:
        blocks = "".join(message_block("user", f"text {i}", when, line_id=i) for i in ids)
        path = folder / name
        path.write_text(f"---\nchat_id: {chat}\nstatus: pending\n---\n\n{blocks}")
        stamp = time.time() - age.total_seconds()
        os.utime(path, (stamp, stamp))

    log(layout.session_log_dir, "2026-10-03_001.md", "a", "e:1", "e:2", age=dt.timedelta(0))
    log(layout.session_log_archive, "2026-10-02_001.md", "b", "e:1", age=dt.timedelta(days=1))
    old = RECALL_WINDOW + dt.timedelta(days=1)
    log(layout.session_log_dir, "2026-01-01_001.md", "c", "e:1", age=old)
    broken = layout.session_log_dir / "2026-10-03_002.md"
    broken.write_text("---\nchat_id: [broken\n---\n")
    stamp = time.time() - 2 * 86400
    os.utime(broken, (stamp, stamp))

    seen = SeenIds()
    assert seen.recall(layout) == 3
    prepared: list[tuple[int, str | None, str]] = [(0, "e:1", "x"), (1, "e:3", "y")]
    assert seen.fresh("a", prepared) == (["y"], [(0, "duplicate")])
    assert seen.fresh("b", prepared) == (["y"], [(0, "duplicate")])
    assert seen.fresh("c", prepared) == (["x", "y"], [])  # older than the window

    newest = (layout.session_log_dir / "2026-10-03_001.md").stat().st_size
    assert SeenIds().recall(layout, max_logs=1) == 2
    assert SeenIds().recall(layout, max_bytes=newest + 10) == 2
    assert SeenIds().recall(layout, max_bytes=1) == 2  # the newest log is always read


def test_written_ids() -> None:
    assert written_id("e:42") == "e:42"
    assert written_id("u:7c9e-4f1a") == "u:7c9e-4f1a"
    assert written_id("a b-->c") == "a%20b--%3Ec"
    assert written_id("记忆") == "%E8%AE%B0%E5%BF%86"
    secret = written_id("password=hunter2hunter2")
    assert secret.startswith("sha256-") and "hunter2" not in secret
    assert secret == written_id("password=hunter2hunter2")
    assert written_id("deploy-42", [r"deploy-\d+"]).startswith("sha256-")
    with pytest.raises(ValueError, match="not a written line id"):
        message_block("user", "x", START, line_id="a b")
