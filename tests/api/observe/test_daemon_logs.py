"""The real daemon: its stderr is a file, so it logs JSON lines carrying request ids, and
never the token (nor a secret in a query string); ``/metrics`` answers over the wire."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets

from somnid import __version__
from tests.api.observe.scrape import scrape
from tests.daemon import Daemon, start_daemon


def json_lines(daemon: Daemon) -> list[dict[str, Any]]:
    lines = [line for line in daemon.log().splitlines() if line.strip()]
    return [json.loads(line) for line in lines]  # every line is JSON: none is free text


def access_line(daemon: Daemon, rid: str) -> dict[str, Any]:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        found = [line for line in json_lines(daemon) if line.get("request_id") == rid]
        if found:
            assert len(found) == 1, found
            return found[0]
        time.sleep(0.05)
    raise AssertionError(f"no line for {rid}:\n{daemon.log()}")


def test_the_daemon_logs_json_with_request_ids(tmp_path: Path) -> None:
    with start_daemon(tmp_path / "data") as daemon, daemon.client() as client:
        token = daemon.token
        made = client.post(
            "/v1/memories/knowledge",
            json={"name": "port", "body": "7373"},
            headers={"X-Request-Id": "it-1"},
        )
        assert made.status_code == 201 and made.headers["x-request-id"] == "it-1"
        line = access_line(daemon, "it-1")
        assert line["logger"] == "somnid.access" and line["level"] == "info"
        assert (line["method"], line["route"], line["status"]) == (
            "POST",
            "/v1/memories/{kind}",
            201,
        )
        assert line["path"] == "/v1/memories/knowledge"

        refused = client.get(
            f"/v1/memories?access_token={token}", headers={"Authorization": "Bearer wrong-one"}
        )
        assert refused.status_code == 401
        made_up = refused.headers["x-request-id"]
        line = access_line(daemon, made_up)
        assert line["status"] == 401 and line["query"] == "access_token=[REDACTED]"

        found = scrape(client.get("/metrics"))
        assert found.value("somnid_build_info", version=__version__) == 1
        timed = {"method": "POST", "route": "/v1/memories/{kind}", "status": "201"}
        assert found.value("somnid_http_request_duration_seconds_count", **timed) == 1
        assert found.value("somnid_memory_files", kind="knowledge") == 1
    log = daemon.log()
    assert token not in log and "wrong-one" not in log
    assert any(line["logger"] == "somnid.runtime" for line in json_lines(daemon))


def test_log_format_text_is_honoured_and_mcp_requests_stay_quiet(tmp_path: Path) -> None:
    with (
        start_daemon(tmp_path / "data", ("SOMNID_LOG_FORMAT", "text")) as daemon,
        daemon.client() as client,
    ):
        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        answer = client.post(
            "/mcp",
            json=call,
            headers={"Accept": "application/json, text/event-stream", "X-Request-Id": "mcp-1"},
        )
        assert answer.status_code == 200 and answer.json()["result"]["tools"]
        deadline = time.monotonic() + 120
        while "mcp-1" not in daemon.log() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert daemon.stop() == 0
    lines = [line for line in daemon.log().splitlines() if line.strip()]
    assert any("mcp-1" in line for line in lines)
    for line in lines:
        assert not line.startswith("{"), line  # text, as configured, not JSON
    assert "Terminating session" not in daemon.log()


def test_a_bridge_token_in_the_query_leaves_every_line_json(tmp_path: Path) -> None:
    # uvicorn logs a websocket's path with its query, quoted: redacting the serialised line
    # ate the escaped quote (invalid JSON), and access%5Ftoken was not seen as a token.
    import asyncio

    import websockets

    with start_daemon(tmp_path / "data", ("SOMNID_LOG_LEVEL", "debug")) as daemon:
        token = daemon.token
        url = daemon.base_url.replace("http", "ws") + "/v1/llm/bridge"

        async def connect() -> None:
            for key in ("access_token", "access%5Ftoken"):
                async with websockets.connect(f"{url}?{key}={token}", open_timeout=5):
                    pass

        asyncio.run(connect())
        deadline = time.monotonic() + 120
        while daemon.log().count("WebSocket /v1/llm/bridge") < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert daemon.stop() == 0
    lines = json_lines(daemon)  # every line parses
    bridge = [line["msg"] for line in lines if "WebSocket /v1/llm/bridge" in line["msg"]]
    assert any("?access_token=[REDACTED]" in msg for msg in bridge), bridge
    assert any("?access%5Ftoken=[REDACTED]" in msg for msg in bridge), bridge
    assert token not in daemon.log()


def test_no_log_line_holds_the_token_or_a_query_secret(tmp_path: Path) -> None:
    with start_daemon(tmp_path / "data", ("SOMNID_LOG_LEVEL", "debug")) as daemon:
        token = daemon.token
        ws_url = daemon.base_url.replace("http", "ws") + "/v1/llm/bridge"

        async def bridge_with_query_token() -> None:
            async with websockets.connect(f"{ws_url}?access_token={token}", open_timeout=5):
                pass
            with pytest.raises(websockets.exceptions.InvalidStatus):
                async with websockets.connect(f"{ws_url}?access_token=wrong-secret-1234"):
                    pass

        asyncio.run(bridge_with_query_token())
        with httpx.Client(base_url=daemon.base_url, timeout=5) as client:
            client.get("/v1/health", params={"access_token": token})
            client.get("/v1/memories", params={"token": "another-secret-5678"})
        daemon.stop()
    log = daemon.log()
    assert "/v1/llm/bridge" in log or "WebSocket" in log or "connection" in log.lower()
    assert token not in log
    assert "wrong-secret-1234" not in log
    assert "another-secret-5678" not in log
