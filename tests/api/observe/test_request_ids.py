"""Request ids and the access log: taken from the client when sane, made up otherwise, sent
back on every answer (refusals and a 500 too), and in each line logged while serving."""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from somnid.api.exporter import Exporter
from somnid.api.observe import Observe
from somnid.logs import JsonFormatter
from somnid.memory.scrub import redact_query
from tests.api.problems import assert_problem
from tests.clients import BASE_URL

MADE_UP = re.compile(r"[0-9a-f]{16}")


class Lines:
    """JSON lines the formatter wrote for the loggers under watch."""

    def __init__(self, stream: io.StringIO) -> None:
        self.stream = stream

    def all(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.stream.getvalue().splitlines()]

    def access(self) -> list[dict[str, Any]]:
        return [line for line in self.all() if line["logger"] == "somnid.access"]


@pytest.fixture
def lines() -> Iterator[Lines]:
    """somnid's log records, formatted as the daemon would on a pipe."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("somnid")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield Lines(stream)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def test_a_sane_id_is_kept_and_any_other_replaced(client: TestClient, lines: Lines) -> None:
    kept = client.get("/v1/memories", headers={"X-Request-Id": "agent-7.turn_3-a"})
    assert kept.status_code == 200 and kept.headers["x-request-id"] == "agent-7.turn_3-a"
    for insane in ("x" * 65, "has space", "semi;colon", "", "a/b", '"quoted"'):
        answer = client.get("/v1/memories", headers={"X-Request-Id": insane})
        assert MADE_UP.fullmatch(answer.headers["x-request-id"]), insane
    made = {client.get("/v1/memories").headers["x-request-id"] for _ in range(5)}
    assert len(made) == 5 and all(MADE_UP.fullmatch(rid) for rid in made)
    line = next(a for a in lines.access() if a.get("request_id") == "agent-7.turn_3-a")
    assert line["level"] == "info" and line["route"] == "/v1/memories"
    assert (line["method"], line["path"], line["status"]) == ("GET", "/v1/memories", 200)
    assert line["duration_ms"] >= 0 and line["msg"].startswith("GET /v1/memories 200 ")


def test_refusals_carry_an_id_too(client: TestClient, lines: Lines) -> None:
    refusals = [
        (client.get("/v1/memories", headers={"Authorization": "Bearer no"}), 401),
        (client.get("/v1/memories", headers={"Host": "evil.example"}), 403),
        (client.get("/v1/memories", headers={"Origin": "https://evil.example"}), 403),
        (client.post("/v1/recall", content=b"x" * (2 << 20)), 413),
        (client.post("/v1/recall", content=b"q", headers={"Content-Type": "text/plain"}), 415),
        (client.get("/v1/nowhere"), 404),
    ]
    for answer, status in refusals:
        assert answer.status_code == status
        rid = answer.headers["x-request-id"]
        logged = [a for a in lines.access() if a.get("request_id") == rid]
        assert [a["status"] for a in logged] == [status]


def test_health_probes_log_at_debug_and_tokens_never(client: TestClient, lines: Lines) -> None:
    token = client.headers["Authorization"].removeprefix("Bearer ")
    client.get("/v1/health")
    client.get(f"/v1/memories?limit=5&access_token={token}")
    client.get(f"/v1/memories?access%5Ftoken={token}")
    client.get("/v1/memories", headers={"Authorization": "Bearer a-wrong-token"})
    access = lines.access()
    health = next(a for a in access if a["route"] == "/v1/health")
    assert health["level"] == "debug"
    queried = [a for a in access if "query" in a]
    assert [a["query"] for a in queried] == [
        "limit=5&access_token=[REDACTED]",
        "access%5Ftoken=[REDACTED]",
    ]
    text = json.dumps(lines.all())
    assert token not in text and "a-wrong-token" not in text


def test_redact_query() -> None:
    assert redact_query("") == ""
    assert redact_query("project=web&limit=3") == "project=web&limit=3"
    assert redact_query("access_token=s3cret&x=1") == "access_token=[REDACTED]&x=1"
    assert redact_query("a=access_token&access+token=x") == "a=access_token&access+token=x"
    assert redact_query("access_token&access_token=") == (
        "access_token=[REDACTED]&access_token=[REDACTED]"
    )


def _boom(request: Request) -> JSONResponse:
    raise RuntimeError("a bug")


async def _handler(request: Request, exc: Exception) -> JSONResponse:
    logging.getLogger("somnid.api.errors").error("unexpected error", exc_info=exc)
    return JSONResponse({"never": "sent"}, status_code=500)


def test_an_unexpected_error_is_answered_with_its_id(lines: Lines) -> None:
    """A 500 comes from outside every middleware; the id must reach it all the same."""
    app = Starlette(
        routes=[Route("/boom", _boom)],
        middleware=[Middleware(Observe, exporter=Exporter("test"))],
        exception_handlers={Exception: _handler},
    )
    with TestClient(app, base_url=BASE_URL, raise_server_exceptions=False) as client:
        answer = client.get("/boom", headers={"X-Request-Id": "crash-1"})
    body = assert_problem(answer, 500, "internal_error")
    assert answer.headers["x-request-id"] == "crash-1" and "never" not in body
    assert answer.headers["connection"] == "close"  # the server drops the socket after it
    logged = [line for line in lines.all() if line.get("request_id") == "crash-1"]
    assert {line["logger"] for line in logged} == {"somnid.api.errors", "somnid.access"}
    assert "RuntimeError: a bug" in next(a["exc"] for a in logged if "exc" in a)
    assert next(a["status"] for a in logged if a["logger"] == "somnid.access") == 500
