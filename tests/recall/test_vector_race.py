"""A vector stored while the reconciler attaches one to a new entry is never lost.

The interleaving of the defect is forced, not hoped for: SQLite's progress handler on the
reconciler's reader connection runs the worker's ``store_vectors`` in another thread while
``attach_vector``'s read is under way (its snapshot already taken, so the read finds nothing).
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np

from somnid.memory.kinds import Kind
from somnid.recall.backend import Document
from somnid.recall.index import Index
from somnid.recall.text import IndexedText

DIM = 8


def _doc(path: str, text: IndexedText) -> Document:
    return Document(path, Kind.EPISODE, Path(path).stem, "etag-" + path, text, 0.5, None, ())


def test_a_vector_stored_during_attach_is_kept(tmp_path: Path) -> None:
    index = Index(tmp_path / "index.sqlite")
    try:
        index.use_model("hash", DIM)
        text = IndexedText("same", "the same words", "", "the same words", "the same words")
        vector = np.ones(DIM, dtype=np.float32) / np.sqrt(DIM)
        ((entry_id, changed),) = index.upsert_many([_doc("memory/episodes/a.md", text)])
        assert changed
        worker_done = threading.Event()

        def worker() -> None:
            index.store_vectors([(text.embed_hash, vector)])
            worker_done.set()

        started: list[threading.Thread] = []

        def in_the_middle_of_the_read() -> int:
            if not started:  # once: the worker stores the vector while attach reads
                thread = threading.Thread(target=worker)
                started.append(thread)
                thread.start()
                worker_done.wait(1.0)  # a fixed index makes the worker wait for attach
            return 0

        with index.db.reading() as conn:
            conn.set_progress_handler(in_the_middle_of_the_read, 1)
        try:
            index.attach_vector(entry_id, Kind.EPISODE, text.embed_hash)
        finally:
            with index.db.reading() as conn:
                conn.set_progress_handler(None, 1)
        for thread in started:
            thread.join(5.0)
        assert started and worker_done.is_set()
        assert index.vectors is not None
        assert entry_id in index.vectors, "the entry lost the vector stored meanwhile"
        assert index.count_missing_vectors() == 0
    finally:
        index.close()
