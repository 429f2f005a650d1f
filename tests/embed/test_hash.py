"""HashEmbedder: the deterministic stand-in for tests where the model does not matter."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from somnid.embed.base import Embedder, HashEmbedder


def test_is_an_embedder() -> None:
    embedder = HashEmbedder(64)
    assert isinstance(embedder, Embedder)
    assert (embedder.name, embedder.dim) == ("hash-64", 64)
    embedder.close()


def test_same_text_same_vector_across_instances() -> None:
    a = HashEmbedder(128).embed_passages(["the cat sat on the mat"])
    b = HashEmbedder(128).embed_queries(["the cat sat on the mat"])
    np.testing.assert_array_equal(a, b)


def test_similar_texts_score_higher() -> None:
    vectors = HashEmbedder(256).embed_passages(
        ["I moved to Berlin last spring", "Last spring I moved to Berlin", "peanut allergy"]
    )
    sims = vectors @ vectors.T
    assert sims[0, 1] > 0.5 > sims[0, 2]


def test_empty_input_and_empty_text() -> None:
    embedder = HashEmbedder(32)
    assert embedder.embed_passages([]).shape == (0, 32)
    (row,) = embedder.embed_passages([""])
    assert abs(float(np.linalg.norm(row)) - 1.0) < 1e-6


def test_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="dim"):
        HashEmbedder(0)
    with pytest.raises(TypeError):
        HashEmbedder(8).embed_passages("a bare string")


@given(st.lists(st.text(max_size=40), max_size=5))
def test_rows_are_unit_length(texts: list[str]) -> None:
    vectors = HashEmbedder(48).embed_passages(texts)
    assert vectors.shape == (len(texts), 48)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
