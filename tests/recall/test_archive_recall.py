"""Recall across memories and the conversation archive: a line a dream left out is still
found, after a memory that says the same, with its log, speaker and time; a setting turns
it off. Keyword mode (provider off): the lines are ranked by the query terms they hold."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from somnid.api.app import create_app
from somnid.config import Settings
from somnid.memory.clock import ManualClock
from somnid.memory.kinds import Kind
from somnid.runtime import Runtime
from somnid.sessions.records import Message
from somnid.tools.memory_tools import ToolContext
from tests.clients import app_client

SAID = dt.datetime(2026, 10, 3, 12, 0, tzinfo=dt.UTC)
LINES = [
    Message("user", "My sister Lena moved to Porto last spring.", speaker="Ann"),
    Message("agent", "Porto is lovely; does she like the river walks?"),
    Message("user", "The gateway certificate expires on the 14th, remind me."),
]


def settings_for(tmp_path: Path, **recall: Any) -> Settings:
    return Settings(
        data_dir=tmp_path / "data",
        timezone="UTC",
        embed={"provider": "off"},
        dream={"enabled": False},
        recall=recall,
    )


async def archive_a_session(rt: Runtime) -> str:
    """Say the lines, close the log and archive it as a dream would once it is processed."""
    await rt.sessions.append_messages("s1", LINES)
    await rt.sessions.close("s1")
    [pending] = await rt.sessions.pending_logs()
    await rt.sessions.mark_processed(pending.path)
    return pending.path.stem


async def test_an_archived_line_is_found_after_the_memory_that_says_the_same(
    tmp_path: Path,
) -> None:
    clock = ManualClock(SAID)
    async with Runtime.open(settings_for(tmp_path), clock=clock) as rt:
        stem = await archive_a_session(rt)
        await rt.memories.create(
            Kind.KNOWLEDGE, "lena-porto", description="Ann's sister Lena lives in Porto",
            body="Lena, Ann's sister, moved to Porto.",
        )  # fmt: skip
        tool = await rt.tools.call(
            "recall_memories", {"query": "Where did Ann's sister Lena move?"}, ToolContext("s2")
        )
        # Only the archive holds the certificate: the dream left it out.
        alone = await rt.tools.call(
            "recall_memories", {"query": "gateway certificate expires"}, ToolContext("s3")
        )
    text = tool.text
    assert "lena-porto" in text and f"log {stem}" in text
    assert text.index("lena-porto") < text.index(f"log {stem}")  # the memory first
    assert "user (Ann)" in text and "2026-10-03 12:00" in text  # who and when
    assert "gateway certificate expires on the 14th" in alone.text and not alone.is_error


async def test_the_route_returns_lines_and_the_setting_turns_them_off(tmp_path: Path) -> None:
    clock = ManualClock(SAID)
    async with Runtime.open(settings_for(tmp_path), clock=clock) as rt:
        await archive_a_session(rt)
    for archive, expected in ((True, 1), (False, 0)):
        settings = settings_for(tmp_path, archive=archive)
        with app_client(create_app(settings, clock=clock), settings) as client:
            body = client.post("/v1/recall", json={"query": "gateway certificate"}).json()
        assert len(body["lines"]) == expected, body
        if expected:
            [line] = body["lines"]
            assert line["role"] == "user" and line["speaker"] is None
            assert line["time"].startswith("2026-10-03T12:00")
            assert "gateway certificate" in line["text"] and line["log"].startswith("2026-10-03")
            assert "conversation archive" in body["markdown"]
