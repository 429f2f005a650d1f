"""Vectors in memory: one float32 matrix, searched by brute-force dot product.

Rows are L2-normalised, so a dot product is the cosine. 100k × 384 is 150 MB and one
matrix-vector product (~7 ms on one core with the matrix in cache, ~20 ms just after an
embedding has pushed it out, ~10 ms in two halves at once); no approximate index is needed
at this scale.
Rows grow by doubling; removed rows are recycled; a search reads only the rows in use.

The product is ``np.einsum``, not ``@``: BLAS's threaded matrix-vector product took a flat
8 ms at any size here (its threads wake up late), and 8 ms again beside an embedding in
another thread. The scan is memory-bound: from ``SPLIT_ROWS`` rows on, a helper thread
(given by the owner) scans the second half while the caller scans the first.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from concurrent.futures import Executor

import numpy as np
import numpy.typing as npt

Vector = npt.NDArray[np.float32]

SPLIT_ROWS = 4096
"""From this many rows a search scans its two halves at once: just after an embedding (the
matrix out of cache), 10k rows took 1.6 ms whole and 1.2 ms split, 100k 19.7 and 10.1 ms on
a 2-core host; at 2k rows the hand-over costs what the split saves."""


class VectorTable:
    def __init__(self, dim: int, helper: Executor | None = None) -> None:
        self.dim = dim
        self._helper = helper  # scans the second half of a large table
        self._lock = threading.Lock()
        self._matrix = np.zeros((0, dim), dtype=np.float32)
        self._ids = np.full(0, -1, dtype=np.int64)
        self._kinds = np.zeros(0, dtype=np.int8)
        self._row_of: dict[int, int] = {}
        self._free: list[int] = []
        self._high = 0  # rows below this have been used; the rest are zeros

    def __len__(self) -> int:
        return len(self._row_of)

    def __contains__(self, entry_id: int) -> bool:
        return entry_id in self._row_of

    def put(self, entry_id: int, kind_code: int, vector: Vector) -> None:
        if vector.shape != (self.dim,):
            raise ValueError(f"vector of shape {vector.shape}, expected ({self.dim},)")
        with self._lock:
            row = self._row_of.get(entry_id)
            if row is None:
                row = self._free.pop() if self._free else self._grow()
                self._row_of[entry_id] = row
                self._high = max(self._high, row + 1)
            self._matrix[row] = vector
            self._ids[row] = entry_id
            self._kinds[row] = kind_code

    def set_kind(self, entry_id: int, kind_code: int) -> None:
        with self._lock:
            row = self._row_of.get(entry_id)
            if row is not None:
                self._kinds[row] = kind_code

    def _grow(self) -> int:
        used = len(self._ids)
        capacity = max(64, used * 2)
        matrix = np.zeros((capacity, self.dim), dtype=np.float32)
        matrix[:used] = self._matrix
        ids = np.full(capacity, -1, dtype=np.int64)
        ids[:used] = self._ids
        kinds = np.zeros(capacity, dtype=np.int8)
        kinds[:used] = self._kinds
        self._matrix, self._ids, self._kinds = matrix, ids, kinds
        self._free.extend(range(capacity - 1, used, -1))
        return used

    def remove(self, entry_id: int) -> None:
        with self._lock:
            row = self._row_of.pop(entry_id, None)
            if row is not None:
                self._ids[row] = -1
                self._kinds[row] = 0
                self._matrix[row] = 0.0
                self._free.append(row)

    def search(self, query: Vector, kind_codes: Iterable[int], k: int) -> list[tuple[int, float]]:
        """The ``k`` most similar entries of the given kinds: (entry id, cosine), best first."""
        wanted = np.zeros(128, dtype=bool)  # by kind code (0..127): a lookup, not np.isin
        wanted[np.fromiter(kind_codes, dtype=np.int8)] = True
        with self._lock:
            if not self._row_of:
                return []
            high = self._high
            sims = self._products(self._matrix[:high], query)
            valid = (self._ids[:high] >= 0) & wanted[self._kinds[:high]]
            sims = np.where(valid, sims, -np.inf)
            count = min(k, int(valid.sum()))
            if count <= 0:
                return []
            top = np.argpartition(-sims, count - 1)[:count]
            top = top[np.argsort(-sims[top], kind="stable")]
            return [(int(self._ids[row]), float(sims[row])) for row in top]

    def _products(self, matrix: Vector, query: Vector) -> Vector:
        """Each row's dot product with ``query``; a large matrix in two halves at once."""
        if self._helper is None or len(matrix) < SPLIT_ROWS:
            return _dot(matrix, query)
        half = len(matrix) // 2
        try:
            second = self._helper.submit(_dot, matrix[half:], query)
        except RuntimeError:  # the helper is shut down: the index is closing
            return _dot(matrix, query)
        first = _dot(matrix[:half], query)
        return np.concatenate([first, second.result()])

    def cosines(self, query: Vector, entry_ids: Iterable[int]) -> dict[int, float]:
        with self._lock:
            rows = [
                (entry_id, self._row_of[entry_id])
                for entry_id in entry_ids
                if entry_id in self._row_of
            ]
            if not rows:
                return {}
            sims = np.einsum("ij,j->i", self._matrix[[row for _, row in rows]], query)
            return {entry_id: float(sim) for (entry_id, _), sim in zip(rows, sims, strict=True)}

    def vectors_of(self, entry_ids: Iterable[int]) -> dict[int, Vector]:
        """Copies of the stored vectors of these entries (those that have one)."""
        with self._lock:
            return {
                entry_id: self._matrix[self._row_of[entry_id]].copy()
                for entry_id in entry_ids
                if entry_id in self._row_of
            }


def _dot(matrix: Vector, query: Vector) -> Vector:
    products: Vector = np.einsum("ij,j->i", matrix, query)
    return products
