"""The model loading before the daemon's imports (``load_early``): started only for a model
at hand, handed to the runtime, its result or its error taken as a load of its own."""

from __future__ import annotations

import datetime as dt
import shutil
from concurrent.futures import Future
from pathlib import Path

import numpy as np

from somnid.config import EmbedSettings, Settings
from somnid.embed.base import Embedder, EmbedError, HashEmbedder
from somnid.embed.loading import load_early
from somnid.embed.onnx import OnnxEmbedder
from somnid.memory.clock import ManualClock
from somnid.memory.kinds import Kind
from somnid.runtime import Runtime
from tests.daemon import start_daemon

START = dt.datetime(2026, 10, 3, 12, 0, tzinfo=dt.UTC)


class ClosingEmbedder(HashEmbedder):
    def __init__(self) -> None:
        super().__init__(dim=64)
        self.closed = False

    def close(self) -> None:
        self.closed = True


def _done(
    result: Embedder | None = None, error: Exception | None = None
) -> Future[Embedder | None]:
    future: Future[Embedder | None] = Future()
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)
    return future


def test_nothing_loads_early_unless_a_local_model_is_installed(tmp_path: Path) -> None:
    models = tmp_path / "models"
    assert load_early(EmbedSettings(provider="off"), models) is None
    http = EmbedSettings(provider="http", base_url="http://127.0.0.1:9/v1", model="m", dim=8)
    assert load_early(http, models) is None
    # Not installed: the daemon converts it later, with its progress in the log; nothing
    # here starts a conversion.
    assert load_early(EmbedSettings(provider="local"), models) is None
    assert not models.exists()
    assert load_early(EmbedSettings(provider="local", model_dir=tmp_path / "none"), models) is None


def test_an_installed_model_loads_early_as_it_would_later(
    e5_int8_dir: Path, int8_embedder: OnnxEmbedder, tmp_path: Path
) -> None:
    future = load_early(EmbedSettings(provider="local", model_dir=e5_int8_dir), tmp_path)
    assert future is not None
    early = future.result(timeout=120)
    assert isinstance(early, OnnxEmbedder)
    try:
        texts = ["the billing service timed out again", "我去年春天搬到了柏林"]
        assert np.allclose(early.embed_queries(texts), int8_embedder.embed_queries(texts))
    finally:
        early.close()


async def test_the_runtime_uses_the_early_model_and_closes_it(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data", timezone="UTC", embed={"provider": "local"})
    early = ClosingEmbedder()
    async with Runtime.open(settings, clock=ManualClock(START), model_load=_done(early)) as rt:
        status = rt.index.status()
        assert (status.embed_state, status.model) == ("ready", "hash-64")
        await rt.memories.create(
            Kind.KNOWLEDGE, "deploy-window", description="Deploys", body="Fridays only."
        )
        await rt.index.wait_idle()
        outcome = await rt.recall.run("when do we deploy", limit=3)
        assert outcome.mode == "hybrid"
        assert [hit.name for hit in outcome.hits][:1] == ["deploy-window"]
        assert not early.closed
    assert early.closed  # the daemon's own model, unlike one handed in


async def test_an_early_load_that_failed_leaves_keyword_recall_and_says_why(
    tmp_path: Path,
) -> None:
    settings = Settings(data_dir=tmp_path / "data", timezone="UTC", embed={"provider": "local"})
    failed = _done(error=EmbedError("model file /x/model.onnx is invalid: truncated"))
    async with Runtime.open(settings, clock=ManualClock(START), model_load=failed) as rt:
        await rt.memories.create(
            Kind.KNOWLEDGE, "deploy-window", description="Deploys", body="Fridays only."
        )
        status = rt.index.status()
        assert status.embed_state == "failed"
        assert status.embed_error is not None and "truncated" in status.embed_error
        outcome = await rt.recall.run("deploy fridays", limit=3)
        assert outcome.mode == "keyword"
        assert [hit.name for hit in outcome.hits] == ["deploy-window"]


async def test_a_model_handed_in_wins_over_an_early_load(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data", timezone="UTC", embed={"provider": "local"})
    given, early = ClosingEmbedder(), ClosingEmbedder()
    given.name = "hash-given"
    opened = Runtime.open(
        settings, clock=ManualClock(START), embedder=given, model_load=_done(early)
    )
    async with opened as rt:
        assert rt.index.status().model == "hash-given"
        assert early.closed  # loaded for nothing: closed at once, not kept for the run
    assert not given.closed  # handed in: its maker closes it


async def test_an_early_load_still_running_is_closed_when_it_ends_if_unused(
    tmp_path: Path,
) -> None:
    settings = Settings(data_dir=tmp_path / "data", timezone="UTC", embed={"provider": "local"})
    given, early = ClosingEmbedder(), ClosingEmbedder()
    pending: Future[Embedder | None] = Future()
    async with Runtime.open(settings, clock=ManualClock(START), embedder=given, model_load=pending):
        assert not early.closed
        pending.set_result(early)  # the load ends while the daemon runs on the given model
        assert early.closed
    failed: Future[Embedder | None] = Future()
    async with Runtime.open(settings, clock=ManualClock(START), embedder=given, model_load=failed):
        failed.set_exception(EmbedError("the model file is truncated"))  # nothing to close
    assert not given.closed


def test_serve_answers_with_the_model_loaded_from_its_first_answer(
    tmp_path: Path, e5_int8_dir: Path
) -> None:
    env = (("SOMNID_EMBED__PROVIDER", "local"), ("SOMNID_EMBED__MODEL_DIR", str(e5_int8_dir)))
    with start_daemon(tmp_path / "data", *env) as daemon, daemon.client(timeout=60) as client:
        status = client.get("/v1/index/status").json()
        assert (status["embedState"], status["model"]) == ("ready", "multilingual-e5-small-int8")
        assert daemon.stop() == 0


def test_serve_with_a_broken_model_file_still_serves_and_says_why(
    tmp_path: Path, e5_int8_dir: Path
) -> None:
    broken = tmp_path / "broken-model"
    shutil.copytree(e5_int8_dir, broken)
    (broken / "model.onnx").write_bytes(b"not an onnx graph")
    env = (("SOMNID_EMBED__PROVIDER", "local"), ("SOMNID_EMBED__MODEL_DIR", str(broken)))
    with start_daemon(tmp_path / "data", *env) as daemon, daemon.client(timeout=60) as client:
        status = client.get("/v1/index/status").json()
        assert status["embedState"] == "failed"
        assert "model" in status["embedError"]
        made = client.post("/v1/memories/knowledge", json={"name": "k", "body": "deploy fridays"})
        assert made.status_code == 201
        found = client.post("/v1/recall", json={"query": "deploy fridays", "limit": 3})
        assert found.status_code == 200, found.text
        assert found.json()["mode"] == "keyword"
        assert daemon.stop() == 0
