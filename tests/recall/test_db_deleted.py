"""The index file deleted under a running somnid (`rm -r index/`): every thread still reads
what it held, a thread that had no connection yet too."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

from somnid.recall.db import Database


def test_a_thread_without_a_connection_reads_a_deleted_index_through_the_writer(
    tmp_path: Path,
) -> None:
    db = Database(tmp_path / "index" / "index.sqlite")
    try:
        with db.write() as conn:
            conn.execute("INSERT INTO state (key, value) VALUES ('k', 'v')")
        assert db.fetchall("SELECT value FROM state") == [("v",)]  # this thread's reader
        shutil.rmtree(tmp_path / "index")
        found: list[object] = []
        fresh = threading.Thread(
            target=lambda: found.append(db.fetchall("SELECT value FROM state"))
        )
        fresh.start()
        fresh.join()
        # It failed: "unable to open database file" (a search failed where others answered).
        assert found == [[("v",)]]
    finally:
        db.close()
