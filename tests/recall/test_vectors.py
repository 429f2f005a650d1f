"""The in-memory vector table: a large one is scanned in two halves at once, with the same
results as one scan (kinds, removed and recycled rows included)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from somnid.recall.vectors import SPLIT_ROWS, VectorTable

DIM = 16


def _filled(table: VectorTable, rows: int) -> None:
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((rows, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    for entry_id, vector in enumerate(vectors):
        table.put(entry_id, entry_id % 3, vector)
    for entry_id in range(0, rows, 7):  # holes, some filled again with new entries
        table.remove(entry_id)
    for entry_id in range(rows, rows + 50):
        table.put(entry_id, 1, vectors[entry_id % rows])


@pytest.mark.parametrize("rows", [SPLIT_ROWS - 1, SPLIT_ROWS, 3 * SPLIT_ROWS + 5])
def test_a_split_scan_finds_what_one_scan_finds(rows: int) -> None:
    whole = VectorTable(DIM)
    with ThreadPoolExecutor(1) as helper:
        split = VectorTable(DIM, helper)
        _filled(whole, rows)
        _filled(split, rows)
        query = np.ones(DIM, dtype=np.float32) / np.sqrt(DIM)
        for kinds in ([0, 1, 2], [1], [2]):
            expected = whole.search(query, kinds, 60)
            assert split.search(query, kinds, 60) == expected
            assert len(expected) == 60
    # After the helper is shut down (the index closing) a search still scans, whole.
    assert split.search(query, [0, 1, 2], 5) == whole.search(query, [0, 1, 2], 5)
