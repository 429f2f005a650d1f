"""HttpEmbedder against a small OpenAI-compatible server running in a thread on 127.0.0.1."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

from somnid.embed.base import Embedder, EmbedError, HashEmbedder
from somnid.embed.http import HttpEmbedder

DIM = 16


@dataclass
class Behaviour:
    """What the server does; tests set it, the handler reads it."""

    dim: int = DIM
    statuses: list[int] = field(default_factory=list)  # served (then dropped) before a 200
    retry_after: str | None = None
    reverse_order: bool = False
    requests: list[dict[str, Any]] = field(default_factory=list)
    auth: list[str | None] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    behaviour: Behaviour


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_POST(self) -> None:
        behaviour = self.server.behaviour
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with behaviour.lock:
            behaviour.requests.append(body)
            behaviour.auth.append(self.headers.get("Authorization"))
            status = behaviour.statuses.pop(0) if behaviour.statuses else 200
        if self.path != "/v1/embeddings":
            status = 404
        if status != 200:
            self._send(status, {"error": {"message": f"status {status}"}})
            return
        # Unnormalised vectors (scaled x3) so the client's normalisation is observable.
        vectors = HashEmbedder(behaviour.dim).embed_passages(body["input"]) * 3.0
        data = [
            {"object": "embedding", "index": i, "embedding": v.tolist()}
            for i, v in enumerate(vectors)
        ]
        if behaviour.reverse_order:
            data.reverse()
        self._send(200, {"object": "list", "data": data, "model": body["model"]})

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        raw = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        if status != 200 and self.server.behaviour.retry_after is not None:
            self.send_header("Retry-After", self.server.behaviour.retry_after)
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, format: str, *args: Any) -> None:
        return None


@pytest.fixture
def server() -> Iterator[tuple[str, Behaviour]]:
    httpd = _Server(("127.0.0.1", 0), _Handler)
    httpd.behaviour = Behaviour()
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", httpd.behaviour
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def _embedder(base_url: str, **kwargs: Any) -> HttpEmbedder:
    options: dict[str, Any] = {"dim": DIM, "backoff": 0.01, "timeout": 5.0, **kwargs}
    return HttpEmbedder(base_url, "test-model", **options)


def test_embeds_normalises_and_sends_key_and_prefixes(server: tuple[str, Behaviour]) -> None:
    url, behaviour = server
    embedder = _embedder(url, api_key="sk-test", query_prefix="q: ", passage_prefix="p: ")
    try:
        assert isinstance(embedder, Embedder)
        passages = embedder.embed_passages(["hello world", "你好世界"])
        queries = embedder.embed_queries(["hello world"])
    finally:
        embedder.close()
    reference = HashEmbedder(DIM)
    np.testing.assert_allclose(
        passages, reference.embed_passages(["p: hello world", "p: 你好世界"]), atol=1e-6
    )
    np.testing.assert_allclose(queries, reference.embed_passages(["q: hello world"]), atol=1e-6)
    assert behaviour.requests[0] == {
        "model": "test-model",
        "input": ["p: hello world", "p: 你好世界"],
    }
    assert behaviour.auth == ["Bearer sk-test", "Bearer sk-test"]
    assert embedder.name == "test-model"


def test_no_key_no_header_and_empty_input_sends_nothing(server: tuple[str, Behaviour]) -> None:
    url, behaviour = server
    embedder = _embedder(url)
    try:
        assert embedder.embed_queries([]).shape == (0, DIM)
        assert not behaviour.requests
        embedder.embed_queries(["x"])
    finally:
        embedder.close()
    assert behaviour.auth == [None]


def test_batches_and_restores_order(server: tuple[str, Behaviour]) -> None:
    url, behaviour = server
    behaviour.reverse_order = True
    texts = [f"text number {i}" for i in range(5)]
    embedder = _embedder(url, batch_size=2)
    try:
        vectors = embedder.embed_passages(texts)
    finally:
        embedder.close()
    assert [len(r["input"]) for r in behaviour.requests] == [2, 2, 1]
    np.testing.assert_allclose(vectors, HashEmbedder(DIM).embed_passages(texts), atol=1e-6)


def test_retries_once_after_503(server: tuple[str, Behaviour]) -> None:
    url, behaviour = server
    behaviour.statuses = [503]
    embedder = _embedder(url)
    try:
        vectors = embedder.embed_passages(["retry me"])
    finally:
        embedder.close()
    assert len(behaviour.requests) == 2
    np.testing.assert_allclose(vectors, HashEmbedder(DIM).embed_passages(["retry me"]), atol=1e-6)


def test_honours_retry_after_on_429(server: tuple[str, Behaviour]) -> None:
    url, behaviour = server
    behaviour.statuses = [429]
    behaviour.retry_after = "0"
    embedder = _embedder(url)
    try:
        assert embedder.embed_passages(["slow down"]).shape == (1, DIM)
    finally:
        embedder.close()
    assert len(behaviour.requests) == 2


def test_persistent_failure_gives_a_clear_error(server: tuple[str, Behaviour]) -> None:
    url, behaviour = server
    behaviour.statuses = [503] * 10
    embedder = _embedder(url, max_retries=2)
    try:
        with pytest.raises(EmbedError, match=r"after 3 attempts.*HTTP 503"):
            embedder.embed_passages(["never"])
    finally:
        embedder.close()
    assert len(behaviour.requests) == 3


def test_client_error_is_not_retried(server: tuple[str, Behaviour]) -> None:
    url, behaviour = server
    behaviour.statuses = [400]
    embedder = _embedder(url, api_key="sk-secret")
    try:
        with pytest.raises(EmbedError, match="HTTP 400") as info:
            embedder.embed_passages(["bad"])
    finally:
        embedder.close()
    assert len(behaviour.requests) == 1
    assert "sk-secret" not in str(info.value)


def test_dimension_mismatch(server: tuple[str, Behaviour]) -> None:
    url, behaviour = server
    behaviour.dim = 8
    embedder = _embedder(url)
    try:
        with pytest.raises(EmbedError, match=r"8-d embeddings.*expected 16"):
            embedder.embed_passages(["wrong size"])
    finally:
        embedder.close()


def test_connection_refused_is_retried_then_reported() -> None:
    with socket.socket() as probe:  # a loopback port with nobody listening
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    embedder = _embedder(f"http://127.0.0.1:{port}/v1", max_retries=1)
    try:
        with pytest.raises(EmbedError, match=r"after 2 attempts.*ConnectError"):
            embedder.embed_queries(["anyone there?"])
    finally:
        embedder.close()
