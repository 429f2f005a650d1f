"""The configured embedder, built: the daemon's, and the one ``somnid serve`` starts loading
before it imports the daemon (``load_early``)."""

from __future__ import annotations

import logging
import os
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from somnid.config import EmbedSettings
from somnid.embed.base import Embedder, EmbedError

log = logging.getLogger(__name__)

# Texts per call when embed.batch_size is not set. Locally each text runs alone (its vector
# then depends on it only; see embed/onnx.py), ``embed.threads`` calls at once; a server is
# sent many texts per request, each request costing a round trip.
LOCAL_BATCH = 1
HTTP_BATCH = 32


def build_embedder(settings: EmbedSettings, models_dir: Path) -> Embedder | None:
    """The configured embedder, loaded. Blocking (may convert the default model once)."""
    if settings.provider == "off":
        return None
    if settings.provider == "http":
        from somnid.embed.http import HttpEmbedder

        if not settings.base_url or not settings.model or not settings.dim:
            raise EmbedError(
                "embed.provider = http needs embed.base_url, embed.model and embed.dim"
            )
        return HttpEmbedder(
            settings.base_url,
            settings.model,
            dim=settings.dim,
            api_key=os.environ.get(settings.api_key_env),
            batch_size=settings.batch_size or HTTP_BATCH,
        )
    from somnid.embed.e5convert import default_model_dir, install_default_model
    from somnid.embed.onnx import OnnxEmbedder

    model_dir = settings.model_dir
    if model_dir is None:
        model_dir = default_model_dir(models_dir)
        if not (model_dir / "model.onnx").is_file():
            log.info("converting the default embedding model into %s (once)", model_dir)

            def progress(stage: str, fraction: float) -> None:
                log.info("model install: %s %d%%", stage, round(fraction * 100))

            model_dir = install_default_model(models_dir, progress=progress)
    embedder = OnnxEmbedder.load(
        model_dir, threads=settings.threads, batch_size=settings.batch_size or LOCAL_BATCH
    )
    if settings.dim is not None and embedder.dim != settings.dim:
        raise EmbedError(f"model dimension {embedder.dim} differs from embed.dim {settings.dim}")
    return embedder


def model_at_hand(settings: EmbedSettings, models_dir: Path) -> bool:
    """A local model already installed: it loads in well under a second, with no
    conversion and no network."""
    if settings.provider != "local":
        return False
    from somnid.embed.e5convert import default_model_dir

    model_dir = settings.model_dir or default_model_dir(models_dir)
    return (model_dir / "model.onnx").is_file()


def load_early(settings: EmbedSettings, models_dir: Path) -> Future[Embedder | None] | None:
    """The configured model, loading in a thread from now on, if it is at hand (else None:
    a conversion or a remote model starts with the daemon, as before).

    ``somnid serve`` starts this before it imports the daemon, so the ONNX session is built
    beside those imports instead of after them. The thread is not a daemon thread: a start
    that fails meanwhile (the data dir locked, the port taken) exits once the load is over,
    never while it runs in native code."""
    if not model_at_hand(settings, models_dir):
        return None
    pool = ThreadPoolExecutor(1, thread_name_prefix="somnid-model-load")
    try:
        return pool.submit(build_embedder, settings, models_dir)
    finally:
        pool.shutdown(wait=False)
