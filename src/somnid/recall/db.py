"""The SQLite file behind the index: schema, PRAGMAs, one writer, many readers.

Derived data only: deleting ``<data>/index/`` loses nothing; the next start rebuilds it.
A schema version change simply rebuilds it too.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from somnid.errors import IndexUnavailable, StorageError, Unavailable

log = logging.getLogger(__name__)

# 4: a question turn is one that is mostly a question; parts of periods are dated; the context
# holds three turns before.
SCHEMA_VERSION = 4

SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    id          INTEGER PRIMARY KEY,
    path        TEXT NOT NULL UNIQUE,
    kind        TEXT NOT NULL,
    name        TEXT NOT NULL,
    file_hash   TEXT NOT NULL,
    text_hash   TEXT NOT NULL,
    embed_hash  TEXT NOT NULL,
    embed_text  TEXT NOT NULL,
    score       REAL NOT NULL,
    project     TEXT,
    related     TEXT NOT NULL DEFAULT '',
    session     TEXT,
    day         INTEGER,
    asks        INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS entries_session ON entries(session, id);
CREATE TABLE IF NOT EXISTS dates (
    entry_id    INTEGER NOT NULL,
    start       INTEGER NOT NULL,
    end         INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS dates_entry ON dates(entry_id);
CREATE INDEX IF NOT EXISTS dates_start ON dates(start, end);
CREATE INDEX IF NOT EXISTS entries_kind_name ON entries(kind, name);
CREATE INDEX IF NOT EXISTS entries_embed_hash ON entries(embed_hash);
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(
    name, description, tags, body, context, far,
    tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TABLE IF NOT EXISTS vectors (
    embed_hash  TEXT NOT NULL,
    model       TEXT NOT NULL,
    vec         BLOB NOT NULL,
    PRIMARY KEY (embed_hash, model)
);
CREATE TABLE IF NOT EXISTS state (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"""


_SQLITE_READONLY = 8
_SQLITE_IOERR = 10
_SQLITE_FULL = 13


def _storage_error(exc: sqlite3.Error, path: Path) -> StorageError | None:
    """The StorageError a failed SQLite write stands for, if it is one (the primary
    result code is the low byte of the extended one)."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is None:
        return None
    if code & 0xFF == _SQLITE_FULL:
        return StorageError(f"no space left on the device holding {path}", code="disk_full")
    if code & 0xFF == _SQLITE_READONLY:
        return StorageError(f"the index is not writable: {path}", code="read_only")
    if code & 0xFF == _SQLITE_IOERR:  # a file over its size limit, a failing disk
        return StorageError(f"the index could not be written ({exc}): {path}")
    return None


def _configure(conn: sqlite3.Connection) -> None:
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA busy_timeout = 10000")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA temp_store = MEMORY")


_CORRUPT = (11, 26)  # SQLITE_CORRUPT ("disk image is malformed"), SQLITE_NOTADB
DAMAGED_SUFFIX = ".damaged"
"""Beside the index file once a query found it damaged: the next start sets it aside."""


def query_error(exc: sqlite3.Error) -> bool:
    """An error of the query itself (a full-text query SQLite cannot parse), not of the
    index: locked past the busy timeout, an I/O error, its tables gone."""
    code = getattr(exc, "sqlite_errorcode", 1) & 0xFF
    return code == 1 and "no such table" not in str(exc)


def unreadable(exc: sqlite3.Error) -> IndexUnavailable:
    """503 ``index_unavailable``, not a 500 nor an empty answer (an index probe: a search
    on an index truncated under it answered 200 with nothing, its status 500)."""
    return IndexUnavailable(f"the index could not be read ({exc}); `somnid status` says more")


def _corrupt(exc: sqlite3.Error) -> bool:
    return getattr(exc, "sqlite_errorcode", 0) & 0xFF in _CORRUPT  # extended codes too


def _migrate(conn: sqlite3.Connection) -> None:
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version not in (0, SCHEMA_VERSION):
        for table in ("entries", "dates", "fts", "vectors", "state"):
            conn.execute(f"DROP TABLE IF EXISTS {table}")
    conn.executescript(SCHEMA)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


class Database:
    """One writer connection behind a lock; a reader connection per thread."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._write_lock = threading.Lock()
        self._writer = self._open_writer()
        self._local = threading.local()
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        # Every use is counted so close() can wait for threads still inside a query: a
        # request cancelled at shutdown leaves its worker thread running, and closing a
        # connection under a running statement crashes the process.
        self._use = threading.Condition()
        self._active = 0
        self._closed = False
        self._inode = _inode(path)

    def _open_writer(self) -> sqlite3.Connection:
        """The writer, on a file with the current schema; a damaged file is set aside."""
        conn: sqlite3.Connection | None = None
        marker = self.path.with_name(self.path.name + DAMAGED_SUFFIX)
        try:
            if marker.exists():  # a query found it damaged before the last stop
                raise sqlite3.DatabaseError("a query found it damaged")
            conn = self._connect()
            _migrate(conn)
            return conn
        except sqlite3.DatabaseError as exc:
            if not _corrupt(exc) and not marker.exists():
                raise
            if conn is not None:
                conn.close()
            self._set_aside(exc)
            marker.unlink(missing_ok=True)
        conn = self._connect()
        _migrate(conn)
        return conn

    def _set_aside(self, exc: sqlite3.DatabaseError) -> None:
        """The file is no SQLite database, or a damaged one: it is derived, so it is moved
        aside (``<name>.corrupt``, the one before replaced) and made again; the first sync
        fills it from the files and the model embeds their texts again."""
        aside = self.path.with_name(self.path.name + ".corrupt")
        log.warning(
            "the index %s is damaged (%s): moved to %s and made again", self.path, exc, aside
        )
        with contextlib.suppress(FileNotFoundError):
            os.replace(self.path, aside)
        for suffix in ("-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path.with_name(self.path.name + suffix))

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        _configure(conn)
        return conn

    @contextlib.contextmanager
    def _using(self) -> Iterator[None]:
        with self._use:
            if self._closed:
                raise Unavailable("the index is closed (somnid is shutting down)")
            self._active += 1
        try:
            yield
        finally:
            with self._use:
                self._active -= 1
                self._use.notify_all()

    @contextlib.contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction (BEGIN IMMEDIATE ... COMMIT), serialised across threads.

        A full disk or a read-only file system raises StorageError (``disk_full``,
        ``read_only``) like a file write does. A transaction that fails, even at COMMIT,
        is rolled back: left open, it would make every later BEGIN fail, so the index
        would never take a write again once space returned."""
        with self._using(), self._write_lock:
            try:
                self._writer.execute("BEGIN IMMEDIATE")
                try:
                    yield self._writer
                    self._writer.execute("COMMIT")
                except BaseException:
                    self._rollback()
                    raise
            except sqlite3.Error as exc:
                self._if_damaged(exc)
                storage = _storage_error(exc, self.path)
                if storage is None:
                    raise
                raise storage from exc

    @property
    def removed(self) -> bool:
        """The file was deleted (or replaced) while open: what is written goes nowhere a
        start finds; the next start makes it again from the files."""
        now = _inode(self.path)
        return now != self._inode and now != (-1, -1)

    @property
    def damaged(self) -> bool:
        """A query found the file damaged: it is set aside and made again at next start."""
        return self.path.with_name(self.path.name + DAMAGED_SUFFIX).exists()

    def _if_damaged(self, exc: sqlite3.Error) -> None:
        """A damaged page met in use (not in the pages read at open): say so, and mark
        the file so the next start sets it aside. Raises IndexUnavailable for it."""
        if not _corrupt(exc):
            return
        marker = self.path.with_name(self.path.name + DAMAGED_SUFFIX)
        if not marker.exists():
            log.error(
                "the index %s is damaged (%s): restart somnid to make it again", self.path, exc
            )
            with contextlib.suppress(OSError):
                marker.touch()
        raise IndexUnavailable(
            "the index file is damaged; restart somnid: it is set aside and made again from"
            " the files (the files are whole)"
        ) from exc

    def _rollback(self) -> None:
        if self._writer.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                self._writer.execute("ROLLBACK")

    @contextlib.contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """This thread's reader connection; finish with the results inside the block."""
        with self._using():
            conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
            held: contextlib.AbstractContextManager[Any] = contextlib.nullcontext()
            if conn is None:
                try:
                    conn = self._connect()
                except sqlite3.OperationalError as exc:
                    if _inode(self.path) == self._inode:
                        raise unreadable(exc) from exc
                    # Deleted while somnid runs: a thread that had no connection yet could
                    # not open one ("unable to open database file", a search failed where
                    # the others answered). It reads through the writer's, which still
                    # holds the file, one at a time.
                    conn, held = self._writer, self._write_lock
                else:
                    self._local.conn = conn
                    with self._readers_lock:
                        self._readers.append(conn)
            with held:
                try:
                    yield conn
                except sqlite3.DatabaseError as exc:
                    self._if_damaged(exc)
                    if query_error(exc):
                        raise
                    raise unreadable(exc) from exc

    def fetchall(self, sql: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        with self.reading() as conn:
            return conn.execute(sql, params).fetchall()

    def fetchone(self, sql: str, params: Sequence[object] = ()) -> tuple[Any, ...] | None:
        with self.reading() as conn:
            row: tuple[Any, ...] | None = conn.execute(sql, params).fetchone()
            return row

    def count(self, sql: str, params: Sequence[object] = ()) -> int:
        row = self.fetchone(sql, params)
        return 0 if row is None or row[0] is None else int(row[0])

    def size_bytes(self) -> int:
        total = 0
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(OSError):
                total += Path(f"{self.path}{suffix}").stat().st_size
        return total

    def compact(self) -> None:
        """Rewrite the file without the free pages deleted rows left (their bytes stay in
        them), then empty the WAL, which holds the old pages too until a checkpoint."""
        with self._using(), self._write_lock:
            try:
                self._writer.execute("VACUUM")
                self._writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except sqlite3.Error as exc:
                storage = _storage_error(exc, self.path)
                if storage is None:
                    raise
                raise storage from exc

    def close(self, wait: float = 30.0) -> None:
        """Refuse new uses, wait for those under way, then close every connection."""
        with self._use:
            self._closed = True
            self._use.wait_for(lambda: self._active == 0, timeout=wait)
        with self._readers_lock:
            for conn in self._readers:
                with contextlib.suppress(sqlite3.Error):
                    conn.close()
            self._readers.clear()
        with self._write_lock:
            with contextlib.suppress(sqlite3.Error):
                self._writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self._writer.close()


def _inode(path: Path) -> tuple[int, int] | None:
    """The file's identity (None: there is none at ``path``)."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError:
        return (-1, -1)  # there, but not to be looked at now: not taken for deleted
    return info.st_dev, info.st_ino


@dataclass(frozen=True, slots=True)
class FileReport:
    """What ``somnid doctor`` reads of an index file while no daemon holds it."""

    check: str  # "ok", or what SQLite's quick_check found
    version: int
    entries: int
    unembedded: int  # texts that have no vector yet


def inspect_file(path: Path) -> FileReport:
    """Read ``path`` read-only (never created, never migrated). Raises sqlite3.Error."""
    conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    try:
        check = conn.execute("PRAGMA quick_check").fetchone()[0]
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        entries = conn.execute("SELECT COUNT(*) FROM entries").fetchone()[0]
        unembedded = conn.execute(
            "SELECT COUNT(DISTINCT embed_hash) FROM entries"
            " WHERE embed_hash NOT IN (SELECT embed_hash FROM vectors)"
        ).fetchone()[0]
    finally:
        conn.close()
    return FileReport(str(check), int(version), int(entries), int(unembedded))
