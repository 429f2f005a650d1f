"""``"\\ud800"`` is valid JSON but no text: every route refuses it with a 4xx where it would
be stored or searched, or reads it as ``?`` where an agent's tool call only cues a hint;
never a 500 (the tools, the action hint and an intention's id answered 500)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tests.api.problems import ResponseLike, assert_problem

SURROGATE = b"\\ud800"


def post(client: TestClient, path: str, body: bytes) -> ResponseLike:
    return client.post(path, content=body, headers={"content-type": "application/json"})


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("recall_memories", b'{"query": "deploy %s"}'),
        ("search_knowledge", b'{"query": "%s"}'),
        ("search_episodes", b'{"query": "x%s"}'),
        ("complete_intention", b'{"intention_id": "%s"}'),
        ("add_intention", b'{"what": "renew %s", "cue": "tls"}'),
    ],
)
def test_a_tool_refuses_it_and_names_the_field(client: TestClient, tool: str, args: bytes) -> None:
    answer = post(client, f"/v1/tools/{tool}", b'{"args": %s}' % (args % SURROGATE))
    problem = assert_problem(answer, 422, "invalid_arguments")
    field = args.split(b'"')[1].decode()
    assert problem["errors"] == [
        {"field": field, "message": "not valid Unicode: it holds a lone surrogate"}
    ]


def test_an_action_hint_reads_it_as_a_question_mark(client: TestClient) -> None:
    body = b'{"sessionId": "s", "toolName": "bash", "args": {"command": "ls %s deploy"}}'
    answer = post(client, "/v1/assoc/action", body % SURROGATE)
    assert answer.status_code == 200, answer.text


def test_a_name_holding_it_is_refused_not_cut(client: TestClient, data_dir: Path) -> None:
    answer = post(
        client, "/v1/memories/knowledge", b'{"name": "surr%s", "description": "d"}' % SURROGATE
    )
    assert_problem(answer, 400, "invalid_name")
    assert not (data_dir / "memory/knowledge/surr").exists()


@pytest.mark.parametrize("depth", [480, 900])
def test_tool_arguments_nested_hundreds_deep_are_a_4xx(client: TestClient, depth: int) -> None:
    # A probe: lists 479 deep or more ended the check for surrogates in a RecursionError.
    nested = b"[" * depth + b'"\\ud800"' + b"]" * depth
    answer = post(client, "/v1/tools/recall_memories", b'{"args": {"query": %s}}' % nested)
    assert 400 <= answer.status_code < 500, answer.text
    assert answer.json()["status"] == answer.status_code
