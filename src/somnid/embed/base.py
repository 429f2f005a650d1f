"""The embedder contract, its error type, and a deterministic hashing embedder for tests."""

from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

__all__ = ["EmbedError", "Embedder", "HashEmbedder", "normalize_rows", "text_list"]

Matrix = npt.NDArray[np.float32]


class EmbedError(Exception):
    """An embedder cannot do its job: bad model directory, remote failure, wrong dimension."""


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit-length vectors.

    Every method blocks (ONNX inference, HTTP calls); async callers run them in a thread.
    Both embed methods return a float32 array of shape ``[len(texts), dim]`` whose rows are
    L2-normalised; an empty input gives shape ``[0, dim]``. Queries and passages may be
    encoded differently (E5 prefixes), so callers must use the right one.
    """

    name: str
    dim: int

    def embed_passages(self, texts: Sequence[str]) -> Matrix:
        """Vectors for stored texts (memories, documents)."""
        ...

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        """Vectors for search queries."""
        ...

    def close(self) -> None:
        """Release sessions, connections and threads. Idempotent."""
        ...


@runtime_checkable
class MeasuresPassages(Protocol):
    """An embedder that says how long each text is for its model, in tokens, without
    embedding it: a caller with many texts puts those of like length in one batch."""

    def passage_lengths(self, texts: Sequence[str]) -> list[int]:
        """Tokens the model sees for each text as a passage (prefix and specials included,
        after truncation)."""
        ...


def text_list(texts: Sequence[str]) -> list[str]:
    """``texts`` as a list, refusing a bare string (which would embed one vector per char)."""
    if isinstance(texts, str):
        raise TypeError("expected a sequence of texts, got a single str")
    out = list(texts)
    for text in out:
        if not isinstance(text, str):
            raise TypeError(f"expected str, got {type(text).__name__}")
    return out


def normalize_rows(matrix: npt.NDArray[np.floating]) -> Matrix:
    """Return ``matrix`` as float32 with every row scaled to unit L2 norm (zero rows stay zero)."""
    out = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    result: Matrix = out / np.maximum(norms, np.float32(1e-12))
    return result


class HashEmbedder:
    """A deterministic embedder for tests where the model is irrelevant.

    Each text is NFKC-normalised and lower-cased, framed with boundary marks, and cut into
    character n-grams; each n-gram is hashed (BLAKE2b, so stable across processes) to a
    bucket whose count it raises. Equal texts give equal vectors and texts sharing n-grams
    score higher cosine than unrelated ones. Queries and passages are embedded the same way.
    """

    def __init__(self, dim: int = 256, *, ngram_sizes: Sequence[int] = (2, 3, 4)) -> None:
        if dim < 1:
            raise ValueError("dim must be positive")
        if not ngram_sizes or min(ngram_sizes) < 1:
            raise ValueError("ngram_sizes must be positive")
        self.dim = dim
        self.name = f"hash-{dim}"
        self._sizes = tuple(ngram_sizes)

    def embed_passages(self, texts: Sequence[str]) -> Matrix:
        return self._embed(texts)

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        return self._embed(texts)

    def close(self) -> None:
        return None

    def _embed(self, texts: Sequence[str]) -> Matrix:
        items = text_list(texts)
        out = np.zeros((len(items), self.dim), dtype=np.float32)
        for row, text in enumerate(items):
            self._accumulate(out[row], text)
        return normalize_rows(out)

    def _accumulate(self, row: Matrix, text: str) -> None:
        framed = "\x02" + unicodedata.normalize("NFKC", text).lower() + "\x03"
        for size in self._sizes:
            for start in range(max(len(framed) - size + 1, 1)):
                gram = framed[start : start + size].encode("utf-8")
                digest = hashlib.blake2b(gram, digest_size=8).digest()
                # Unsigned counts: a row can never cancel out to zero.
                row[int.from_bytes(digest, "little") % self.dim] += 1.0
