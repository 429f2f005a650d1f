"""Logs marked ``dream: false`` never reach a model: a dream archives them unread (status
``processed``, ``dream_skipped: true``) and says so in its result and journal."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from somnid.api.app import create_app
from somnid.config import Settings
from somnid.memory.clock import ManualClock
from somnid.runtime import Runtime
from somnid.sessions.records import Message
from somnid.store import frontmatter
from tests.clients import app_client
from tests.dream.fakes import AGENTIC, ScriptedLLM, call, say

START = dt.datetime(2026, 10, 3, 22, 0, tzinfo=dt.UTC)
SECRET = "My bank PIN is 4921, keep it between us."


@pytest.fixture
async def runtime(tmp_path: Path) -> AsyncIterator[Runtime]:
    settings = Settings(
        data_dir=tmp_path / "data", timezone="UTC", embed={"provider": "off"}, dream=AGENTIC
    )
    async with Runtime.open(settings, clock=ManualClock(START)) as rt:
        yield rt


async def conversation(rt: Runtime, session: str, text: str, *, close: bool = True) -> str:
    appended = await rt.sessions.append_messages(session, [Message("user", text)])
    assert appended.path is not None
    if close:
        await rt.sessions.close(session)
    return Path(appended.path).stem


def meta(rt: Runtime, relative: str) -> dict[str, Any]:
    return dict(frontmatter.parse((rt.layout.root / relative).read_text()).meta)


def seen_by_model(llm: ScriptedLLM) -> str:
    return json.dumps(llm.requests, ensure_ascii=False, default=str)


async def test_a_never_dream_log_is_archived_unread(runtime: Runtime) -> None:
    private = await conversation(runtime, "private", SECRET)
    work = await conversation(runtime, "work", "The deploy window is Tuesday to Thursday.")
    still_private = await conversation(runtime, "private", "And my PIN hint.", close=False)
    marked = await runtime.sessions.mark_no_dream("private")
    assert [p.stem for p in marked.paths] == [private, still_private]
    runtime.dreamer.settings.max_logs = 1  # a marked log takes no place among the offered
    llm = ScriptedLLM(
        [call("read_session_log", log=work), call("mark_log_processed", log=work), say("ok")]
    )
    runtime.dreamer.backend = llm

    result = await runtime.dreamer.run("test")

    assert result.status == "deep_sleep", result
    assert result.logs == result.processed == [work]
    assert result.skipped_logs == [private, still_private]  # the dream closed the open one
    text = seen_by_model(llm)
    assert private not in text and still_private not in text and "PIN" not in text
    for stem in (private, still_private):
        archived = meta(runtime, f"memory/session-log/archived/{stem}.md")
        assert archived["status"] == "processed" and archived["dream_skipped"] is True
        assert archived["dream"] is False
        assert not (runtime.layout.session_log_dir / f"{stem}.md").exists()
    assert SECRET in (runtime.layout.session_log_archive / f"{private}.md").read_text()
    assert "dream_skipped" not in meta(runtime, f"memory/session-log/archived/{work}.md")
    assert result.journal is not None
    journal = (runtime.layout.root / result.journal).read_text()
    assert list(frontmatter.parse(journal).meta["skipped_logs"]) == [private, still_private]
    assert f"## Skipped: never dream these (archived unread)\n- {private}\n" in journal
    assert await runtime.sessions.pending_logs() == []


async def test_only_never_dream_logs_asks_no_model_but_leaves_a_journal(
    runtime: Runtime,
) -> None:
    private = await conversation(runtime, "private", SECRET)
    await runtime.sessions.mark_no_dream("private")
    llm = ScriptedLLM([])
    runtime.dreamer.backend = llm
    result = await runtime.dreamer.run("test")
    assert (result.status, result.reason) == ("skipped", "no_pending_logs")
    assert result.skipped_logs == [private] and result.logs == []
    assert llm.requests == []
    assert result.journal is not None
    assert meta(runtime, result.journal)["skipped_logs"] == [private]


async def test_without_an_llm_marked_logs_are_archived_and_the_rest_wait(
    runtime: Runtime,
) -> None:
    private = await conversation(runtime, "private", SECRET)
    work = await conversation(runtime, "work", "something for a real dream")
    await runtime.sessions.mark_no_dream("private")
    runtime.dreamer.backend = None
    result = await runtime.dreamer.run("idle")
    assert result.status == "maintenance" and result.skipped_logs == [private]
    assert [p.path.stem for p in await runtime.sessions.pending_logs()] == [work]


async def test_a_log_marked_while_a_dream_runs_is_refused_to_the_model(
    runtime: Runtime,
) -> None:
    private = await conversation(runtime, "private", SECRET)

    def mark_then_read(messages: list[dict[str, Any]]) -> dict[str, Any]:
        runtime.sessions.logs.mark_no_dream("private")  # the user asks as the dream begins
        return call("read_session_log", log=private)

    llm = ScriptedLLM([mark_then_read, call("mark_log_processed", log=private), say("ok")])
    runtime.dreamer.backend = llm
    result = await runtime.dreamer.run("test")
    assert result.logs == [private] and result.processed == []
    assert "marked never to be dreamed" in llm.requests[1][-1]["content"]
    assert "PIN" not in seen_by_model(llm)
    [pending] = await runtime.sessions.pending_logs()
    assert pending.path.stem == private and pending.dream is False
    # the next dream archives it unread
    runtime.dreamer.backend = ScriptedLLM([])
    assert (await runtime.dreamer.run("test")).skipped_logs == [private]


def test_the_dream_result_over_http(tmp_path: Path) -> None:
    settings = Settings(
        data_dir=tmp_path / "data", timezone="UTC", embed={"provider": "off"}, dream={"llm": "off"}
    )
    with app_client(create_app(settings, clock=ManualClock(START)), settings) as client:
        say_it = {"messages": [{"role": "user", "text": SECRET}]}
        path = client.post("/v1/sessions/p/messages", json=say_it).json()["path"]
        assert client.post("/v1/sessions/p/no-dream").json()["paths"] == [path]
        result = client.post("/v1/sleep/run", json={"wait": True}).json()["result"]
        assert result["status"] == "maintenance"
        assert result["skippedLogs"] == [Path(path).stem]
        assert client.get("/v1/sleep/status").json()["pendingLogs"] == 0
