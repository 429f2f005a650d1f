"""The index as the CLI sees it while no daemon runs: ``somnid doctor`` reads the file,
``somnid reindex`` rebuilds it. The CLI's one door into recall/ besides the daemon's API."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable

from somnid.config import Settings
from somnid.errors import Unavailable
from somnid.memory.clock import Clock
from somnid.recall.backend import INDEXED_KINDS, BackendInfo
from somnid.recall.db import SCHEMA_VERSION, FileReport, inspect_file
from somnid.recall.pg_db import PgDatabase
from somnid.recall.system import INDEX_FILE, RecallSystem
from somnid.store.layout import Layout
from somnid.store.memories import MemoryStore

__all__ = [
    "INDEXED_KINDS",
    "INDEX_FILE",
    "SCHEMA_VERSION",
    "BackendInfo",
    "FileReport",
    "describe_index",
    "indexed_files",
    "inspect_file",
    "open_for_rebuild",
]


def indexed_files(layout: Layout, clock: Clock) -> int:
    """How many entry files the index should hold (broken ones included)."""
    store = MemoryStore(layout, clock)
    return sum(1 for kind in INDEXED_KINDS for _ in store.files(kind))


def describe_index(settings: Settings) -> BackendInfo:
    """The configured index's backend, server and extension, read without changing
    anything (no file made, no schema made)."""
    config = settings.index
    if config.backend == "sqlite":
        path = Layout(settings.data_dir).index_dir / INDEX_FILE
        return BackendInfo("sqlite", sqlite3.sqlite_version, "fts5", str(path))
    if config.dsn is None:
        return BackendInfo("postgres", None, None, "(no index.dsn)", False, "index.dsn is unset")
    try:
        db = PgDatabase(config.dsn, connect_timeout=config.connect_timeout_s, migrate=False)
    except Unavailable as exc:
        return BackendInfo("postgres", None, None, "(psycopg missing)", False, exc.detail)
    try:
        version, vector = db.server()
    except Unavailable as exc:
        return BackendInfo("postgres", None, None, db.location, False, exc.detail)
    finally:
        db.close()
    return BackendInfo("postgres", version, f"vector {vector}" if vector else None, db.location)


def index_file_problem(settings: Settings) -> str | None:
    """Why the SQLite index file (or its WAL) cannot be used, in one line; else None. A
    folder or another non-file there, or a file somnid may not write (``chmod 444``,
    ``chattr +i``): SQLite fails at the first write (a probe: a start ended in a traceback,
    checkpoints failed unseen, the WAL grew). The index is derived: moved away, it is made
    again from the files."""
    if settings.index.backend != "sqlite":
        return None
    folder = Layout(settings.data_dir).index_dir
    for name in (INDEX_FILE, f"{INDEX_FILE}-wal", f"{INDEX_FILE}-shm"):
        path = folder / name
        if not os.path.lexists(path):
            continue
        if path.is_symlink() or not path.is_file():
            why = "is not a file"
        elif not os.access(path, os.R_OK | os.W_OK):
            why = "is not writable for somnid"
        else:
            continue
        return (
            f"{path} {why}: move it away (or make it writable); the index is derived and "
            "made again from the files"
        )
    if folder.is_dir() and not os.access(folder, os.W_OK | os.X_OK):
        return f"{folder} is not writable for somnid: make it writable (chmod u+rwx)"
    return None


def open_for_rebuild(settings: Settings, clock: Clock, tell: Callable[[str], None]) -> RecallSystem:
    """A recall system on the data dir, for an offline rebuild: an index file SQLite
    cannot read is deleted first (it is derived; the rebuild makes it again), and ``tell``
    says so."""
    layout = Layout(settings.data_dir)
    store = MemoryStore(layout, clock)
    try:
        return RecallSystem(settings, store, clock)
    except sqlite3.DatabaseError as exc:
        tell(f"the index cannot be read ({exc}): deleting it, it is rebuilt from the files")
        for suffix in ("", "-wal", "-shm"):
            (layout.index_dir / f"{INDEX_FILE}{suffix}").unlink(missing_ok=True)
        return RecallSystem(settings, store, clock)
