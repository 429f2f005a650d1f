"""Whole dreams through the real daemon over the HTTP backends: somnid POSTs each chat to a
scripted server on 127.0.0.1 that answers in the callback shape (``{messages, tools}`` →
``{message, usage}``) or as an OpenAI ``/chat/completions`` endpoint."""

from __future__ import annotations

import contextlib
import re
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from somnid.dream.tools import TOOL_NAMES
from somnid.store import frontmatter
from somnid.store.atomic import TEMP_PREFIX
from tests.daemon import start_daemon
from tests.dream.fakes import tea_steps, tool_call
from tests.llm_server import GARBAGE, HANG, Answer, LLMServer, serve_llm

API_KEY = "sk-somnid-test-4c1f"
KEY_ENV = "SOMNID_TEST_DREAM_KEY"
MODEL = "scripted-7b"
CALLBACK_PATH = "/dream/llm"
TURNS = [
    {"role": "user", "text": "I only drink green tea, no sugar please."},
    {"role": "agent", "text": "Green tea without sugar, noted."},
]

Script = Callable[[list[dict[str, Any]], list[str]], Answer]


def consolidating(messages: list[dict[str, Any]], logs: list[str]) -> Answer:
    """The next step follows from how many tool results the request already holds."""
    done = sum(1 for m in messages if m.get("role") == "tool")
    log = logs[0]
    steps = [
        *tea_steps(log),
        tool_call("write_dream_log", content="Kept the tea preference; one reminder."),
    ]  # fmt: skip
    if done < len(steps):
        return steps[done]
    return {"role": "assistant", "content": "1 log done: 1 knowledge, 1 episode, 1 intention."}


def llm_server(script: Script) -> contextlib.AbstractContextManager[LLMServer]:
    """The shared scripted endpoint, handing ``script`` the logs the dream was given."""

    def answer(messages: list[dict[str, Any]]) -> Answer:
        return script(messages, re.findall(r"^- (\S+)$", str(messages[1]["content"]), re.MULTILINE))

    return serve_llm(answer)


def backend_env(backend: str, url: str) -> tuple[tuple[str, str], ...]:
    """The daemon's settings for ``backend`` against the scripted server at ``url``."""
    if backend == "callback":
        return (
            ("SOMNID_DREAM__MODE", "agentic"),
            ("SOMNID_DREAM__LLM", "callback"),
            ("SOMNID_DREAM__CALLBACK_URL", url + CALLBACK_PATH),
        )
    return (
        ("SOMNID_DREAM__MODE", "agentic"),
        ("SOMNID_DREAM__LLM", "openai"),
        ("SOMNID_DREAM__OPENAI__BASE_URL", url + "/v1"),
        ("SOMNID_DREAM__OPENAI__MODEL", MODEL),
        ("SOMNID_DREAM__OPENAI__API_KEY_ENV", KEY_ENV),
        (KEY_ENV, API_KEY),
    )


async def converse(client: httpx.AsyncClient, session: str = "t1") -> str:
    """Capture the tea conversation; answers the log's stem."""
    answer = await client.post(f"/v1/sessions/{session}/messages", json={"messages": TURNS})
    assert answer.status_code == 200, answer.text
    return Path(answer.json()["path"]).stem


async def dream(client: httpx.AsyncClient) -> dict[str, Any]:
    answer = await client.post("/v1/sleep/run", json={"trigger": "test", "wait": True})
    assert answer.status_code == 200, answer.text
    result: dict[str, Any] = answer.json()["result"]
    return result


@pytest.mark.parametrize("backend", ["callback", "openai"])
async def test_a_full_dream_over_an_http_backend(tmp_path: Path, backend: str) -> None:
    with (
        llm_server(consolidating) as llm,
        start_daemon(tmp_path / "data", *backend_env(backend, llm.url)) as daemon,
    ):
        async with daemon.async_client(timeout=30) as client:
            log = await converse(client)
            status = (await client.get("/v1/sleep/status")).json()
            assert status["llm"] == {"status": "ok", "detail": backend}
            assert status["pendingLogs"] == 1
            result = await dream(client)
            health = (await client.get("/v1/health")).json()
        daemon_log = daemon.log()

    assert (result["status"], result["reason"]) == ("deep_sleep", "done"), result
    assert result["logs"] == result["processed"] == [log]
    assert (result["created"], result["iterations"]) == (3, 7)
    per_call = 520 if backend == "openai" else 60
    assert result["tokens"]["total"] == 7 * per_call
    assert result["summary"].startswith("1 log done")
    assert health["pendingLogs"] == 0

    root = daemon.data_dir
    knowledge = frontmatter.parse((root / "memory/knowledge/tea-preference/SKILL.md").read_text())
    assert knowledge.meta["type"] == "preference" and "Green tea, no sugar." in knowledge.body
    [episode] = (root / "memory/episodes").glob("ep-*/SKILL.md")
    episode_meta = frontmatter.parse(episode.read_text()).meta
    assert episode_meta["source"] == log and episode_meta["salience"] == "low"
    [intention] = (root / "memory/intentions").glob("pi-*/INTENT.md")
    assert "Buy more green tea" in intention.read_text()
    assert not (root / f"memory/session-log/{log}.md").exists()
    archived = frontmatter.parse((root / f"memory/session-log/archived/{log}.md").read_text())
    assert archived.meta["status"] == "processed" and "dream_skipped" not in archived.meta
    assert "I only drink green tea, no sugar please." in archived.body

    journal_text = (root / result["journal"]).read_text()
    journal = frontmatter.parse(journal_text)
    assert journal.meta["status"] == "deep_sleep" and list(journal.meta["processed_logs"]) == [log]
    assert journal.meta["tokens"]["total"] == 7 * per_call
    assert "knowledge tea-preference" in journal_text and "intention pi-" in journal_text
    assert "Kept the tea preference; one reminder." in journal_text  # the model's notes
    assert "1 log done" in journal_text  # its summary

    # What went over the wire: every request carried the whole conversation so far, the
    # dream tools and the sampling settings (dream.max_tokens, temperature,
    # frequency_penalty); the model saw the log quoted, as data.
    assert len(llm.requests) == 7
    sampling = {"max_tokens": 1024, "temperature": 0.0, "frequency_penalty": 0.3}
    for request in llm.requests:
        if backend == "callback":
            assert request.path == CALLBACK_PATH
            assert set(request.body) == {"messages", "tools", "options"}
            assert request.body["options"] == sampling
            assert "authorization" not in {key.lower() for key in request.headers}
        else:
            assert request.path == "/v1/chat/completions"
            assert request.body["model"] == MODEL and request.body["tool_choice"] == "auto"
            assert {key: request.body[key] for key in sampling} == sampling
            assert request.headers["Authorization"] == f"Bearer {API_KEY}"
        names = [tool["function"]["name"] for tool in request.body["tools"]]
        assert names == list(TOOL_NAMES)
    last = llm.requests[-1].body["messages"]
    assert [m["role"] for m in last[:2]] == ["system", "user"]
    assert sum(m["role"] == "tool" for m in last) == 6
    assert API_KEY not in daemon_log
    assert list(root.rglob(f"{TEMP_PREFIX}*")) == []


@pytest.mark.parametrize("backend", ["callback", "openai"])
async def test_garbage_or_silence_from_the_llm_interrupts_the_dream(
    tmp_path: Path, backend: str
) -> None:
    """An answer that is not JSON, then an endpoint that never answers (past
    ``dream.request_timeout_s`` = 1 s): each dream ends ``interrupted`` at once and the
    log waits, untouched, for the next one."""
    failure = GARBAGE

    def failing(messages: list[dict[str, Any]], logs: list[str]) -> Answer:
        if not any(m.get("role") == "tool" for m in messages):
            return tool_call("read_session_log", log=logs[0])
        return failure

    with llm_server(failing) as llm:
        env = (*backend_env(backend, llm.url), ("SOMNID_DREAM__REQUEST_TIMEOUT_S", "1"))
        with start_daemon(tmp_path / "data", *env) as daemon:
            async with daemon.async_client(timeout=30) as client:
                log = await converse(client)
                live = daemon.data_dir / f"memory/session-log/{log}.md"

                # Each ends the dream (not retried, not waited out); how fast is a figure
                # for bench/, not a bound a loaded machine must meet here.
                # A loaded machine can miss the 1 s time-out on the first call (the log's
                # read): that dream stops short of the garbage and leaves the log pending.
                while True:
                    before = len(llm.requests)
                    garbage = await dream(client)
                    if not (
                        "no answer within" in garbage["reason"] and len(llm.requests) - before < 2
                    ):
                        break
                assert len(llm.requests) - before == 2  # final: no retry
                assert garbage["status"] == "interrupted", garbage
                assert garbage["reason"].startswith("llm: ") and "invalid JSON" in garbage["reason"]

                failure = HANG
                before = len(llm.requests)
                began = time.monotonic()
                silence = await dream(client)
                took = time.monotonic() - began
                assert took >= 1.0, took  # the whole time-out waited, never less
                assert silence["status"] == "interrupted", silence
                assert "no answer within 1 s" in silence["reason"]
                assert len(llm.requests) - before <= 2  # final: no retry

                for result in (garbage, silence):
                    assert result["logs"] == [log] and result["processed"] == []
                    journal = frontmatter.parse((daemon.data_dir / result["journal"]).read_text())
                    assert journal.meta["status"] == "interrupted"
                status = (await client.get("/v1/sleep/status")).json()
                assert status["sleeping"] is False and status["pendingLogs"] == 1
                assert frontmatter.parse(live.read_text()).meta["status"] == "pending"
                assert (await client.get("/v1/health")).status_code == 200


@pytest.mark.parametrize("backend", ["callback", "openai"])
async def test_sleep_status_probes_the_llm_for_real(tmp_path: Path, backend: str) -> None:
    """/v1/sleep/status said ``ok`` while nothing listened (issue 12): it probes now. Nothing
    on the port: unavailable, and a sleep runs maintenance only; a live endpoint: ok."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}"
    with start_daemon(tmp_path / "data", *backend_env(backend, closed)) as daemon:
        async with daemon.async_client(timeout=30) as client:
            await converse(client)
            llm = (await client.get("/v1/sleep/status")).json()["llm"]
            assert llm["status"] == "unavailable", llm
            assert (
                llm["detail"].startswith(f"{backend}: GET {closed}") and "failed" in llm["detail"]
            )
            run = await client.post("/v1/sleep/run", json={"wait": True})
            result = run.json()["result"]
            assert result["status"] == "maintenance" and result["reason"].startswith("no_llm")
    with (
        llm_server(consolidating) as live,
        start_daemon(tmp_path / "data", *backend_env(backend, live.url)) as daemon,
    ):
        async with daemon.async_client(timeout=30) as client:
            llm = (await client.get("/v1/sleep/status")).json()["llm"]
            assert llm == {"status": "ok", "detail": backend}
    assert live.count == 0  # probing is a GET, never a chat
