"""A pipeline dream end to end: a real daemon, messages with their times through the capture
API, and the OpenAI-compatible backend speaking to a scripted endpoint on 127.0.0.1."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

from somnid.store import frontmatter
from tests.cli.runner import daemon_env, somnid
from tests.daemon import start_daemon
from tests.llm_server import HANG, Answer, Fault, serve_llm


def _extract(messages: list[dict[str, Any]]) -> Answer:
    prompt = str(messages[1]["content"])
    if "\n2 [" not in prompt:
        return {"role": "assistant", "content": '{"memories": []}'}
    memories = [
        {
            "evidence": ["L1"],
            "kind": "event",
            "text": "Ann moved to Lisbon yesterday and started at the harbour office.",
        }
    ]
    # Wrapped in prose once, as small models do, and the line named by its id, not its
    # number, as a model without the grammar may: somnid must still read it.
    return {"role": "assistant", "content": "Here you go:\n" + json.dumps({"memories": memories})}


def test_a_pipeline_dream_over_the_openai_wire(tmp_path: Path) -> None:
    with (
        serve_llm(_extract) as llm,
        start_daemon(tmp_path / "data", *llm.env(mode="pipeline")) as daemon,
    ):
        with daemon.client(timeout=30) as client:
            answer = client.post(
                "/v1/sessions/chat-1/messages",
                json={
                    "messages": [
                        {"role": "user", "speaker": "Ann", "timestamp": "2023-10-04T18:30:00+00:00",
                         "text": "Yesterday I moved to Lisbon and started at the harbour office."},
                        {"role": "agent", "timestamp": "2023-10-04T18:31:00+00:00",
                         "text": "Congratulations on the move to Lisbon!"},
                    ]
                },
            )  # fmt: skip
            assert answer.status_code == 200, answer.text
            status = client.get("/v1/sleep/status").json()
            assert status["llm"]["status"] == "ok", status
            result = client.post("/v1/sleep/run", json={"wait": True}).json()["result"]
        assert result["status"] == "deep_sleep", result
        assert result["mode"] == "pipeline"
        assert result["candidates"]["added"] == 1 and result["stages"] == 1
        assert result["tokens"]["total"] == 520 and result["llmCalls"] == 1
        [episode] = list((tmp_path / "data/memory/episodes").glob("*/SKILL.md"))
        meta = frontmatter.parse(episode.read_text()).meta
        assert str(meta["when"]).startswith("2023-10-04 18:30")
        assert meta["actors"] == "Ann"
        assert "yesterday (2023-10-03)" in str(meta["description"])
    [chat] = [r for r in llm.requests if r.path.endswith("/chat/completions")]
    body = chat.body
    assert body["response_format"]["type"] == "json_schema"
    schema = body["response_format"]["json_schema"]["schema"]
    enum = schema["properties"]["memories"]["items"]["properties"]["evidence"]["items"]["enum"]
    assert enum == [1, 2]
    assert (body["max_tokens"], body["temperature"], body["frequency_penalty"]) == (1024, 0.0, 0.3)
    assert "tools" not in body


def test_a_window_that_times_out_is_abandoned_counted_and_waits(tmp_path: Path) -> None:
    """An endpoint that never answers: the request's timeout is scaled with its tokens
    (here the floor, 1 s), the request is abandoned with its connection closed, what it
    cost is counted, the journal still has its summary, and the log waits for the next
    dream."""
    with (
        serve_llm(lambda messages: HANG) as llm,
        start_daemon(
            tmp_path / "data",
            *llm.env(timeout_s=1.0, mode="pipeline"),
            ("SOMNID_DREAM__REQUEST_TIMEOUT_PER_1K_TOKENS_S", "0.01"),
        ) as daemon,
        daemon.client(timeout=60) as client,
    ):
        said = {"role": "user", "speaker": "Ann", "text": "I moved to Lisbon yesterday."}
        client.post("/v1/sessions/chat-1/messages", json={"messages": [said]})
        result = client.post("/v1/sleep/run", json={"wait": True}).json()["result"]
        assert llm.abandoned.wait(30), "the timed-out request's connection stayed open"
        assert result["status"] == "interrupted", result
        assert "no answer within 1 s" in result["reason"]
        assert result["tokens"]["abandoned"] > 0
        assert result["tokens"]["total"] == result["tokens"]["abandoned"]
        assert result["processed"] == [] and result["pendingAfter"] == 1
        journal = frontmatter.parse((tmp_path / "data" / result["journal"]).read_text())
        assert journal.meta["status"] == "interrupted"
        assert "0 of 1 logs consolidated" in journal.body
        assert "tokens spent on requests that timed out" in journal.body


def _filtering(messages: list[dict[str, Any]]) -> Answer:
    if "FORBIDDEN" in str(messages[-1]["content"]):
        return Fault(status=400, body=b'{"error": {"message": "the prompt was flagged"}}')
    return {"role": "assistant", "content": '{"memories": []}'}


def test_a_log_the_endpoint_keeps_refusing_is_shown_as_passed_by(tmp_path: Path) -> None:
    def say(client: httpx.Client, session: str, text: str) -> None:
        said = {"messages": [{"role": "user", "speaker": "Ann", "text": text}]}
        assert client.post(f"/v1/sessions/{session}/messages", json=said).status_code == 200
        assert client.post(f"/v1/sessions/{session}/close").status_code == 200

    with (
        serve_llm(_filtering) as llm,
        start_daemon(tmp_path / "data", *llm.env(mode="pipeline")) as daemon,
        daemon.client(timeout=30) as client,
    ):
        say(client, "filtered", "FORBIDDEN words about the harbour office.")
        for n in range(3):
            say(client, f"chat-{n}", f"I moved to Lisbon, day {n}.")
            result = client.post("/v1/sleep/run", json={"wait": True}).json()["result"]
            assert result["passedBy"] == {} and len(result["processed"]) == 1, result
        status = client.get("/v1/sleep/status").json()
        [(stem, why)] = status["passedBy"].items()
        assert why.startswith("the model refused it: POST http://127.0.0.1:"), why
        assert why.endswith('HTTP 400: {"error": {"message": "the prompt was flagged"}} (3 dreams)')
        assert status["pendingLogs"] == 1
        shown = somnid(daemon_env(daemon), "status")
        assert f"passed by     {stem}: the model refused it" in shown.stdout, shown.stdout
