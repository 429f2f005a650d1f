"""``GET /metrics`` on the real app: behind the token, in Prometheus text format, and moving
as requests, recalls, hints, embeddings and dreams happen."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from somnid import __version__
from somnid.api.app import create_app
from somnid.config import Settings
from somnid.embed.base import HashEmbedder, Matrix
from somnid.runtime import Runtime
from tests.api.observe.scrape import Scrape, scrape
from tests.api.problems import assert_problem
from tests.clients import TEST_TOKEN, app_client
from tests.dream.fakes import ScriptedLLM, tea_steps

HTTP = "somnid_http_request_duration_seconds"
CUE = "Install packages with the venv's pip"


class GatedEmbedder(HashEmbedder):
    """The hash embedder, holding passages back while its gate is shut."""

    def __init__(self) -> None:
        super().__init__(dim=64)
        self.gate = threading.Event()
        self.gate.set()

    def embed_passages(self, texts: Sequence[str]) -> Matrix:
        assert self.gate.wait(timeout=20), "the gate was never opened"
        return super().embed_passages(texts)


@pytest.fixture
def embedder() -> Iterator[GatedEmbedder]:
    gated = GatedEmbedder()
    yield gated
    gated.gate.set()  # never leave the worker's thread hanging at shutdown


@pytest.fixture
def client(tmp_path: Path, embedder: GatedEmbedder) -> Iterator[TestClient]:
    settings = Settings(
        data_dir=tmp_path / "data",
        timezone="UTC",
        embed={"provider": "off"},
        token=TEST_TOKEN,
        max_body_bytes=2048,
    )
    with app_client(create_app(settings, embedder=embedder), settings) as test_client:
        yield test_client


def metrics(client: TestClient) -> Scrape:
    return scrape(client.get("/metrics"))


def runtime_of(client: TestClient) -> Runtime:
    runtime: Runtime = client.app.state.runtime  # type: ignore[attr-defined]
    return runtime


def wait_for(client: TestClient, check: str, predicate: Callable[[Scrape], bool]) -> Scrape:
    """Scrape until ``predicate(scrape)`` holds (the embed worker runs behind)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        found = metrics(client)
        if predicate(found):
            return found
        time.sleep(0.05)
    raise AssertionError(f"never {check}:\n{found.text}")


def test_metrics_need_the_token(client: TestClient) -> None:
    wrong = client.get("/metrics", headers={"Authorization": "Bearer not-the-token"})
    assert_problem(wrong, 401, "unauthorized")
    token = client.headers.pop("Authorization")
    assert_problem(client.get("/metrics"), 401, "unauthorized")
    client.headers["Authorization"] = token
    found = metrics(client)
    assert found.value("somnid_build_info", version=__version__) == 1
    assert found.value("somnid_index_size_bytes") > 0
    assert found.value("process_resident_memory_bytes") > 0


def test_requests_are_timed_by_route_template(client: TestClient) -> None:
    before = metrics(client)
    answers = {
        ("POST", "/v1/memories/{kind}", 201): client.post(
            "/v1/memories/knowledge", json={"name": "port", "body": "7373"}
        ),
        ("GET", "/v1/memories/{kind}/{name}", 200): client.get("/v1/memories/knowledge/port"),
        ("GET", "/v1/memories/{kind}/{name}", 404): client.get("/v1/memories/knowledge/nope"),
        # refused before any route ran: still counted under the route it asked for
        ("GET", "/v1/memories/{kind}/{name}", 401): client.get(
            "/v1/memories/knowledge/port", headers={"Authorization": "Bearer wrong"}
        ),
        ("POST", "/v1/memories/{kind}", 413): client.post(
            "/v1/memories/knowledge", content=b"x" * 4096, headers={"Content-Type": "text/plain"}
        ),
        ("POST", "/v1/memories/{kind}", 415): client.post(
            "/v1/memories/knowledge", content=b"name=x", headers={"Content-Type": "text/plain"}
        ),
        ("DELETE", "/v1/recall", 405): client.delete("/v1/recall"),
        # any token is a method to the server; a client must not make series at will
        ("OTHER", "/v1/recall", 405): client.request("BREW", "/v1/recall"),
        ("GET", "unmatched", 404): client.get("/no/such/page"),
    }
    after = metrics(client)
    for (method, route, status), answer in answers.items():
        assert answer.status_code == status, answer.text
        labels = {"method": method, "route": route, "status": str(status)}
        moved = after.value(f"{HTTP}_count", **labels) - before.value(f"{HTTP}_count", **labels)
        assert moved == 1, (labels, after.text)
    routes = {labels["route"] for labels in after.labels(f"{HTTP}_count")}
    assert not {route for route in routes if "port" in route or "nope" in route or "such" in route}
    assert "BREW" not in {labels["method"] for labels in after.labels(f"{HTTP}_count")}
    # every series' buckets are cumulative, and the +Inf bucket is the count
    for labels in after.labels(f"{HTTP}_count"):
        series = {key: labels[key] for key in ("method", "route", "status")}
        buckets = sorted(
            (float(ls["le"]), value)
            for name, ls, value in after.samples
            if name == f"{HTTP}_bucket" and all(ls.get(k) == v for k, v in series.items())
        )
        counts = [value for _, value in buckets]
        assert counts == sorted(counts) and math.isinf(buckets[-1][0])
        assert counts[-1] == after.value(f"{HTTP}_count", **series) >= 1
        assert after.value(f"{HTTP}_sum", **series) > 0


def test_recall_hints_and_the_index_move(client: TestClient, embedder: GatedEmbedder) -> None:
    deadline = time.monotonic() + 120
    while client.get("/v1/index/status").json()["embedState"] != "ready":
        assert time.monotonic() < deadline, "the embedder never loaded"
        time.sleep(0.05)
    empty = metrics(client)
    assert empty.value("somnid_index_entries", kind="knowledge") == 0
    embedder.gate.clear()
    made = client.post(
        "/v1/memories/knowledge",
        json={"name": "venv-pip", "description": CUE, "body": "Never pip into system Python."},
    )
    assert made.status_code == 201
    waiting = wait_for(client, "pending", lambda s: s.value("somnid_index_pending_embeddings") == 1)
    assert waiting.value("somnid_index_entries", kind="knowledge") == 1
    assert waiting.value("somnid_memory_files", kind="knowledge") == 1
    assert waiting.value("somnid_index_vectors") == 0
    embedder.gate.set()
    before = wait_for(client, "embedded", lambda s: s.value("somnid_index_vectors") == 1)
    assert before.value("somnid_index_pending_embeddings") == 0
    assert before.value("somnid_index_size_bytes") >= empty.value("somnid_index_size_bytes")

    assert client.post("/v1/recall", json={"query": "pip"}).status_code == 200
    cue = {"sessionId": "s-1", "cue": CUE}
    assert client.post("/v1/assoc/thought", json=cue).json()["decision"] == "fired"
    assert client.post("/v1/assoc/thought", json=cue).json()["decision"] == "habituated"
    short = {"sessionId": "s-2", "cue": "pip"}
    assert client.post("/v1/assoc/thought", json=short).json()["decision"] == "silent"
    after = metrics(client)

    def moved(name: str, **labels: str) -> float:
        return after.value(name, **labels) - before.value(name, **labels)

    assert moved("somnid_hints_total", outcome="fired") == 1
    assert moved("somnid_hints_total", outcome="habituated") == 1
    assert moved("somnid_hints_total", outcome="silent") == 1
    assert moved("somnid_hints_total", outcome="ambiguous") == 0
    # the recall and the two hints that searched (a cue too short never does)
    assert moved("somnid_recall_duration_seconds_count") == 3
    assert moved("somnid_recall_duration_seconds_sum") > 0
    assert after.value("somnid_recall_duration_seconds_bucket", le="+Inf") == after.value(
        "somnid_recall_duration_seconds_count"
    )


def test_dreams_and_their_tokens_are_counted(client: TestClient) -> None:
    turns = [
        {"role": "user", "text": "I only drink green tea, never with sugar."},
        {"role": "agent", "text": "Green tea, no sugar: noted."},
    ]
    assert client.post("/v1/sessions/chat-1/messages", json={"messages": turns}).status_code == 200
    closed = client.post("/v1/sessions/chat-1/close").json()
    log = Path(closed["path"]).stem
    llm = ScriptedLLM(list(tea_steps(log)))
    runtime_of(client).dreamer.backend = llm
    runtime_of(client).dreamer.settings.mode = "agentic"  # the script calls tools
    before = metrics(client)
    dreamt = client.post("/v1/sleep/run", json={"wait": True}).json()["result"]
    assert dreamt["status"] == "deep_sleep" and dreamt["processed"] == [log]
    nothing_left = client.post("/v1/sleep/run", json={"wait": True}).json()["result"]
    assert nothing_left["status"] == "skipped"
    after = metrics(client)

    def moved(name: str, **labels: str) -> float:
        return after.value(name, **labels) - before.value(name, **labels)

    assert moved("somnid_dreams_total", outcome="deep_sleep") == 1
    assert moved("somnid_dreams_total", outcome="skipped") == 1
    assert moved("somnid_dreams_total", outcome="maintenance") == 0
    asked = len(llm.requests)  # every chat costs the scripted model 100 + 25 tokens
    assert asked >= len(tea_steps(log))
    assert moved("somnid_dream_tokens_total", kind="prompt") == dreamt["tokens"]["prompt"]
    assert moved("somnid_dream_tokens_total", kind="prompt") == 100 * asked
    assert moved("somnid_dream_tokens_total", kind="completion") == 25 * asked
    assert after.value("somnid_sleeping") == 0
    assert after.value("somnid_session_logs_pending") == 0
