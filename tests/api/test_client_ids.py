"""Ids and labels a client sends (sessions, users, projects) and names in a path: each is
read as the one value it says, or refused with a 4xx. Two different paths never name one
session, and an empty project or list of kinds is no filter that quietly means another."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tests.api.problems import assert_problem


@pytest.mark.parametrize("path", ["%FF%FE", "%FE%FF", "ok%C3", "%ED%A0%80"])
def test_a_path_whose_escapes_are_not_utf8_is_refused(
    client: TestClient, data_dir: Path, path: str
) -> None:
    # The server read each such byte as U+FFFD: %FF%FE and %FE%FF were one session.
    answer = client.post(
        f"/v1/sessions/{path}/messages", json={"messages": [{"role": "user", "text": "hi"}]}
    )
    assert_problem(answer, 400, "invalid_input")
    assert "not UTF-8" in answer.json()["detail"]
    assert_problem(client.get(f"/v1/memories/knowledge/{path}"), 400, "invalid_input")
    assert not any((data_dir / "session-log").glob("**/*.md"))


def test_a_query_whose_escapes_are_not_utf8_is_refused(client: TestClient) -> None:
    # /mcp?userId=%FF and %FE were one user.
    answer = client.post("/mcp?userId=%FF", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert_problem(answer, 400, "invalid_input")
    assert client.get("/v1/memories?text=caf%C3%A9").status_code == 200


def test_a_path_in_utf8_escapes_still_names_its_session(client: TestClient) -> None:
    answer = client.post(
        "/v1/sessions/caf%C3%A9/messages", json={"messages": [{"role": "user", "text": "hi"}]}
    )
    assert answer.status_code == 200, answer.text
    assert answer.json()["sessionId"] == "café"


@pytest.mark.parametrize(
    ("route", "body"),
    [
        ("/v1/assoc/thought", {"sessionId": "a\u0001b", "cue": "deploy"}),
        ("/v1/assoc/thought", {"sessionId": "a\u2028b", "cue": "deploy"}),
        ("/v1/assoc/action", {"sessionId": "a\nb", "toolName": "shell"}),
        ("/v1/assoc/thought", {"sessionId": "s", "cue": "deploy", "project": "x\u0085"}),
        ("/v1/tools/recall_memories", {"args": {"query": "x"}, "sessionId": "a\u0000"}),
        ("/v1/tools/recall_memories", {"args": {"query": "x"}, "userId": "u\tv"}),
        ("/v1/prompt", {"speakerUserId": "a\u001b[31m"}),
        ("/v1/prompt", {"participantUserIds": ["ok", "b\rc"]}),
    ],
)
def test_a_control_character_in_an_id_is_refused(
    client: TestClient, route: str, body: dict[str, object]
) -> None:
    # Capture refused them; hints, tools and the prompt kept them.
    answer = client.post(route, json=body)
    assert_problem(answer, 422, "validation_error")
    assert "control character" in answer.text


@pytest.mark.parametrize(
    ("route", "body", "field"),
    [
        ("/v1/recall", {"query": "deploys", "project": ""}, "body.project"),
        ("/v1/recall", {"query": "deploys", "kinds": []}, "body.kinds"),
        ("/v1/assoc/thought", {"sessionId": "s", "cue": "x", "project": ""}, "body.project"),
        ("/v1/assoc/thought", {"sessionId": "", "cue": "x"}, "body.sessionId"),
        ("/v1/tools/recall_memories", {"args": {"query": "x"}, "project": ""}, "body.project"),
        ("/v1/prompt", {"speakerUserId": ""}, "body.speakerUserId"),
        ("/v1/intentions", {"what": "renew", "project": ""}, "body.project"),
    ],
)
def test_an_empty_id_or_filter_is_refused_not_read_as_another(
    client: TestClient, route: str, body: dict[str, object], field: str
) -> None:
    # `project: ""` filtered to the memories of no project; `kinds: []` searched the default
    # kinds; neither is what it says.
    answer = client.post(route, json=body)
    assert_problem(answer, 422, "validation_error")
    assert [e["field"] for e in answer.json()["errors"]] == [field]


def test_ids_that_are_printable_pass(client: TestClient) -> None:
    answer = client.post(
        "/v1/assoc/thought", json={"sessionId": "会话 1 · ok", "cue": "deploy", "project": "网店"}
    )
    assert answer.status_code == 200, answer.text
    answer = client.post(
        "/v1/recall", json={"query": "deploy", "project": "网店", "kinds": ["skill"]}
    )
    assert answer.status_code == 200, answer.text
