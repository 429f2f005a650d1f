"""``/mcp`` on the real daemon, spoken to by the official MCP client over streamable HTTP."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.daemon import Daemon, start_daemon

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "curl", "version": "1"},
    },
}
ACCEPT = {"Accept": "application/json, text/event-stream"}


@pytest.fixture(scope="module")
def somnid(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    with start_daemon(tmp_path_factory.mktemp("mcp") / "data") as running:
        yield running


@contextlib.asynccontextmanager
async def mcp_client(
    daemon: Daemon, query: str = "", *, token: str | None = "", mode: str = "auto"
) -> AsyncIterator[Client]:
    """The SDK's client on ``/mcp``; ``token=None`` sends none, ``""`` the daemon's."""
    headers = {} if token is None else {"Authorization": f"Bearer {token or daemon.token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=10.0) as http:
        transport = streamable_http_client(f"{daemon.base_url}/mcp{query}", http_client=http)
        async with Client(transport, mode=mode) as client:
            yield client


def text_of(result: Any) -> str:
    [block] = result.content
    text: str = block.text
    return text


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_nine_tools_with_the_http_schemas(somnid: Daemon, mode: str) -> None:
    with somnid.client() as http:
        listed_over_http = http.get("/v1/tools").json()["tools"]
    async with mcp_client(somnid, mode=mode) as client:
        tools = (await client.list_tools()).tools
    assert len(tools) == 9
    assert [
        {"name": t.name, "description": t.description, "parameters": t.input_schema} for t in tools
    ] == [
        {"name": t["name"], "description": t["description"], "parameters": t["parameters"]}
        for t in listed_over_http
    ]


async def test_write_then_recall_and_the_file_is_on_disk(somnid: Daemon) -> None:
    with somnid.client() as http:
        made = http.post(
            "/v1/memories/knowledge",
            json={"name": "deploy window", "description": "when we deploy",
                  "body": "Deploys go out Tuesday to Thursday only, never on Friday."},
        )  # fmt: skip
        assert made.status_code == 201
    async with mcp_client(somnid, "?project=garden&sessionId=mcp-1") as client:
        added = await client.call_tool(
            "add_intention", {"what": "Water the tomatoes", "due": "2026-12-01", "cue": "garden"}
        )
        listed = await client.call_tool("list_intentions", {})
        recalled = await client.call_tool("recall_memories", {"query": "deploy on Friday"})
    assert not added.is_error, text_of(added)
    intention_id = text_of(added).split()[2].rstrip(":")
    assert f'[{intention_id}] "Water the tomatoes" (due 2026-12-01' in text_of(listed)
    assert "deploy-window" in text_of(recalled) and "never on Friday" in text_of(recalled)

    [path] = (somnid.data_dir / "memory" / "intentions").glob(f"{intention_id}/INTENT.md")
    text = path.read_text()
    assert text.startswith("---\n") and "project: garden" in text and "Water the tomatoes" in text
    async with mcp_client(somnid, "?project=elsewhere") as client:
        other = await client.call_tool("list_intentions", {})
    assert "Water the tomatoes" not in text_of(other)


async def test_bad_calls_are_tool_errors_and_the_daemon_carries_on(somnid: Daemon) -> None:
    with somnid.client() as http:
        over_http = http.post("/v1/tools/add_intention", json={"args": {"due": 5, "colour": 1}})
    assert over_http.status_code == 422
    async with mcp_client(somnid) as client:
        bad = await client.call_tool("add_intention", {"due": 5, "colour": 1})
        unknown = await client.call_tool("forget_everything", {})
        good = await client.call_tool("search_knowledge", {"query": "deploy"})
    assert bad.is_error and unknown.is_error and not good.is_error
    assert bad.structured_content == {
        "code": "invalid_arguments",
        "detail": over_http.json()["detail"],
        "errors": over_http.json()["errors"],
    }
    assert text_of(bad).startswith(over_http.json()["detail"])
    assert text_of(unknown) == "no tool named 'forget_everything'; tools/list lists them"
    async with mcp_client(somnid, "?project=" + "p" * 201) as client:
        too_long = await client.call_tool("list_intentions", {})
    assert too_long.is_error and "longer than 200" in text_of(too_long)
    with somnid.client() as http:
        assert http.get("/v1/health").json()["status"] == "ok"
    assert somnid.process.poll() is None


def test_the_door_asks_for_the_token(somnid: Daemon) -> None:
    url = f"{somnid.base_url}/mcp"
    none = httpx.post(url, json=INITIALIZE, headers=ACCEPT)
    wrong = httpx.post(url, json=INITIALIZE, headers={**ACCEPT, "Authorization": "Bearer nope"})
    right = httpx.post(url, json=INITIALIZE, headers={**ACCEPT, **somnid.headers})
    assert none.status_code == 401 and wrong.status_code == 401
    assert none.json()["code"] == "unauthorized" and none.json()["instance"] == "/mcp"
    assert right.status_code == 200 and right.headers["content-type"] == "application/json"
    assert right.json()["result"]["serverInfo"]["name"] == "somnid"
    assert "mcp-session-id" not in right.headers


async def test_a_client_without_the_token_cannot_connect(somnid: Daemon) -> None:
    with pytest.raises(ExceptionGroup) as raised:
        async with mcp_client(somnid, token=None, mode="legacy"):
            pass
    assert raised.group_contains(MCPError, match="error response")


def test_no_event_stream_and_no_sessions(somnid: Daemon) -> None:
    with somnid.client() as http:
        stream = http.get("/mcp", headers={"Accept": "text/event-stream"})
        ended = http.delete("/mcp")
        listed = http.get("/openapi.json").json()["paths"]
    assert stream.status_code == 405 and ended.status_code == 405
    assert stream.headers["allow"] == "POST"
    assert stream.json()["code"] == "method_not_allowed"
    assert "/mcp" not in listed


@pytest.mark.parametrize(
    ("message", "answers_to", "says"),
    [
        ({"id": {"a": 1}}, None, '"id" must be a string or an integer'),
        ({"id": True}, None, '"id" must be a string or an integer'),
        ({"id": 1.5}, None, '"id" must be a string or an integer'),
        ({"id": None}, None, '"id" must be a string or an integer'),
        ({"id": 7, "jsonrpc": "1.0"}, 7, '"jsonrpc" must be "2.0"'),
        ({"id": 8, "params": "text"}, 8, '"params" must be an object'),
        ({"id": "x", "method": 5}, "x", '"method" must be a string'),
    ],
)
def test_a_malformed_request_is_an_invalid_request_not_a_notification(
    somnid: Daemon, message: dict[str, Any], answers_to: object, says: str
) -> None:
    # The SDK read a request with an id of the wrong type as a notification: 202, no
    # answer, and the client waited for one forever.
    body = {"jsonrpc": "2.0", "method": "tools/list", **message}
    answer = httpx.post(f"{somnid.base_url}/mcp", json=body, headers={**ACCEPT, **somnid.headers})
    assert answer.status_code == 400
    assert answer.json() == {
        "jsonrpc": "2.0",
        "id": answers_to,
        "error": {"code": -32600, "message": f"Invalid Request: {says}"},
    }


@pytest.mark.parametrize(
    ("message", "code", "says"),
    [
        ({"id": 25, "error": "x"}, -32600, '"error" must be an object with an integer "code"'),
        ({"id": 26, "error": {"code": 1, "message": "x"}, "result": {}}, -32600, "not both"),
        ({"id": 27, "method": "tools/call"}, -32602, 'tools/call needs "params"'),
        ({"id": 28, "method": "tools/call", "params": {"name": 5}}, -32602, "needs"),
        (
            {"id": 29, "method": "tools/call", "params": {"name": "recall", "arguments": [1]}},
            -32602,
            "tools/call 'recall' must be an object",
        ),
    ],
)
def test_a_malformed_response_or_tool_call_says_what_is_wrong(
    somnid: Daemon, message: dict[str, Any], code: int, says: str
) -> None:
    # The SDK answered -32602 with a dump of its validation errors echoing the input, or
    # "Invalid request parameters" and nothing more.
    body = {"jsonrpc": "2.0", **message}
    answer = httpx.post(f"{somnid.base_url}/mcp", json=body, headers={**ACCEPT, **somnid.headers})
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert answer.json()["id"] == message["id"]
    assert error["code"] == code and says in error["message"], error


def test_a_batch_is_refused_and_good_messages_still_pass(somnid: Daemon) -> None:
    url, headers = f"{somnid.base_url}/mcp", {**ACCEPT, **somnid.headers}
    batch = httpx.post(url, json=[{"jsonrpc": "2.0", "id": 1, "method": "ping"}], headers=headers)
    assert batch.status_code == 400 and batch.json()["error"]["code"] == -32600
    ping = httpx.post(url, json={"jsonrpc": "2.0", "id": -1, "method": "ping"}, headers=headers)
    assert ping.status_code == 200 and ping.json() == {"jsonrpc": "2.0", "id": -1, "result": {}}
    told = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert httpx.post(url, json=told, headers=headers).status_code == 202
    broken = httpx.post(
        url, content=b"not json", headers={**headers, "content-type": "application/json"}
    )
    assert broken.status_code == 400 and broken.json()["error"]["code"] == -32700
    deep = b"[" * 100_000  # deeper than Python's json reads (the fuzz test found a 500)
    nested = httpx.post(url, content=deep, headers={**headers, "content-type": "application/json"})
    assert nested.status_code == 400 and nested.json()["id"] is None


def test_an_unknown_protocol_version_is_refused_with_the_ones_spoken(somnid: Daemon) -> None:
    # The SDK took any unknown version for its newest protocol and answered about the
    # `_meta` keys that protocol wants: a client could not tell what to send instead.
    url = f"{somnid.base_url}/mcp"
    listing = {"jsonrpc": "2.0", "id": 5, "method": "tools/list"}
    headers = {**ACCEPT, **somnid.headers}
    old = httpx.post(url, json=listing, headers={**headers, "MCP-Protocol-Version": "1999-01-01"})
    assert old.status_code == 400
    error = old.json()["error"]
    assert old.json()["id"] == 5 and error["code"] == -32600
    assert "'1999-01-01' is not spoken here" in error["message"]
    assert "2025-06-18" in error["data"]["supported"] and error["data"]["requested"] == "1999-01-01"
    known = httpx.post(url, json=listing, headers={**headers, "MCP-Protocol-Version": "2025-06-18"})
    assert known.status_code == 200 and known.json()["result"]["tools"]


def test_a_control_character_in_the_url_s_scope_is_a_tool_error(somnid: Daemon) -> None:
    call = {
        "jsonrpc": "2.0",
        "id": 6,
        "method": "tools/call",
        "params": {"name": "recall_memories", "arguments": {"query": "deploys"}},
    }
    answer = httpx.post(
        f"{somnid.base_url}/mcp?sessionId=a%01b", json=call, headers={**ACCEPT, **somnid.headers}
    )
    result = answer.json()["result"]
    assert result["isError"] is True
    assert result["structuredContent"]["code"] == "invalid_input"
    assert "sessionId in the /mcp URL holds a control character (0x1)" in text_of_json(result)


def text_of_json(result: dict[str, Any]) -> str:
    [block] = result["content"]
    text: str = block["text"]
    return text


def _listed_with(somnid: Daemon, query: str) -> dict[str, Any]:
    """The result of ``list_intentions`` called through ``/mcp?<query>``."""
    call = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "list_intentions", "arguments": {}},
    }
    answer = httpx.post(
        f"{somnid.base_url}/mcp?{query}", json=call, headers={**ACCEPT, **somnid.headers}
    )
    result: dict[str, Any] = answer.json()["result"]
    return result


def test_an_empty_scope_in_the_url_is_a_tool_error_not_every_project(somnid: Daemon) -> None:
    # A probe: /mcp?project= (a variable left unset) ran with no scope at all.
    result = _listed_with(somnid, "project=")
    assert result["isError"] is True
    assert "project in the /mcp URL is empty" in text_of_json(result)


def test_a_scope_given_twice_is_a_tool_error_not_one_of_them(somnid: Daemon) -> None:
    # A probe: /mcp?project=a&project=b silently took one of the two.
    result = _listed_with(somnid, "project=a&project=b")
    assert result["isError"] is True
    assert "project is given 2 times in the /mcp URL" in text_of_json(result)


def test_a_request_without_accept_accepts_the_answer(somnid: Daemon) -> None:
    # A probe: no Accept header (Python's urllib sends none) was 406 with the id dropped;
    # a request without one accepts anything (RFC 9110).
    listing = {"jsonrpc": "2.0", "id": 11, "method": "tools/list"}
    url = f"{somnid.base_url}/mcp"
    bare = httpx.Request("POST", url, json=listing, headers=somnid.headers)  # no Accept at all
    assert "accept" not in bare.headers
    with httpx.Client() as http:
        for answer in (http.send(bare), http.post(url, json=listing, headers=somnid.headers)):
            assert answer.status_code == 200, answer.text  # the second says Accept: */*
            assert answer.json()["id"] == 11 and answer.json()["result"]["tools"]
