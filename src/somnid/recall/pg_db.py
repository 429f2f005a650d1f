"""The PostgreSQL server behind the ``postgres`` index: schema, connections, outages.

One writer connection behind a lock and a reader connection per thread, like the SQLite
file (``recall/db.py``). A connection that fails is dropped and made again on next use, so
the index heals by itself when the server comes back; meanwhile every call raises
:class:`~somnid.errors.IndexUnavailable`:

- a use of a connection that outlives ``query_timeout`` is cut (:mod:`.pg_watch`): a
  stopped server never hangs a request;
- for :data:`RETRY_AFTER_S` after the server was found unreachable (a connect failed, or a
  use ran out of time), calls fail at once instead of each waiting out a timeout;
- what the server refuses (a role without the rights the schema needs, a DSN libpq cannot
  read) is unavailable too, with the server's reason; tables dropped by hand are made
  again on the next use.

The DSN's password is never logged nor shown: keep it in a pgpass file.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from somnid.errors import IndexUnavailable, StorageError, Unavailable
from somnid.memory.scrub import is_secret_name
from somnid.recall.pg_watch import Watchdog

try:  # the ``postgres`` extra
    import psycopg
    from psycopg import conninfo
except ImportError:  # pragma: no cover - checked at open
    psycopg = None  # type: ignore[assignment]

SCHEMA_VERSION = 3  # 2: terms carry their row's kind and length; 3: ... in their key
SCHEMA_LOCK = 0x534F4D4E  # an advisory lock: two daemons creating the schema at once
RETRY_AFTER_S = 5.0
"""After the server was found unreachable, calls fail at once for this long."""
MAINTENANCE_TIMEOUT_S = 900.0
"""The cap of a use that may rightly take long (a vacuum, a model's column and index over
every row): it only ends a hang."""

# Every table in one schema; rows carry the daemons (sources) that derived them.
SCHEMA = """
CREATE EXTENSION IF NOT EXISTS vector;
CREATE SCHEMA IF NOT EXISTS somnid;
CREATE TABLE IF NOT EXISTS somnid.meta (key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE IF NOT EXISTS somnid.entries (
    id          bigserial PRIMARY KEY,
    path        text NOT NULL,
    file_hash   text NOT NULL,
    kind        text NOT NULL,
    name        text NOT NULL,
    text_hash   text NOT NULL,
    embed_hash  text NOT NULL,
    embed_text  text NOT NULL,
    score       real NOT NULL,
    project     text,
    related     text[] NOT NULL DEFAULT '{}',
    session     text,
    day         integer,
    asks        boolean NOT NULL DEFAULT false,
    search_text text NOT NULL,
    body        text NOT NULL,
    terms_len   integer NOT NULL,
    sources     text[] NOT NULL,
    UNIQUE (path, file_hash)
);
CREATE INDEX IF NOT EXISTS entries_session ON somnid.entries (session, id);
CREATE INDEX IF NOT EXISTS entries_name ON somnid.entries (name);
CREATE INDEX IF NOT EXISTS entries_embed_hash ON somnid.entries (embed_hash);
CREATE TABLE IF NOT EXISTS somnid.terms (
    term      text NOT NULL,
    entry_id  bigint NOT NULL REFERENCES somnid.entries (id) ON DELETE CASCADE,
    kind      smallint NOT NULL,
    row_len   integer NOT NULL,
    n0 smallint NOT NULL, n1 smallint NOT NULL, n2 smallint NOT NULL,
    n3 smallint NOT NULL, n4 smallint NOT NULL, n5 smallint NOT NULL,
    PRIMARY KEY (term, entry_id) INCLUDE (kind, row_len, n0, n1, n2, n3, n4, n5)
);
CREATE INDEX IF NOT EXISTS terms_entry ON somnid.terms (entry_id);
CREATE TABLE IF NOT EXISTS somnid.dates (
    entry_id  bigint NOT NULL REFERENCES somnid.entries (id) ON DELETE CASCADE,
    first_day integer NOT NULL,
    last_day  integer NOT NULL
);
CREATE INDEX IF NOT EXISTS dates_entry ON somnid.dates (entry_id);
CREATE INDEX IF NOT EXISTS dates_days ON somnid.dates (first_day, last_day);
CREATE TABLE IF NOT EXISTS somnid.vectors (
    embed_hash text NOT NULL,
    model      text NOT NULL,
    vec        halfvec NOT NULL,
    PRIMARY KEY (embed_hash, model)
);
CREATE TABLE IF NOT EXISTS somnid.state (
    source text NOT NULL,
    key    text NOT NULL,
    value  text NOT NULL,
    PRIMARY KEY (source, key)
);
"""
_REFUSALS: tuple[type[Exception], ...] = (
    (psycopg.errors.InsufficientPrivilege, psycopg.errors.UndefinedFile,
     psycopg.errors.FeatureNotSupported)
    if psycopg is not None else ()
)  # fmt: skip
"""What the server refuses for want of a right or an extension: unavailable until a person
grants it. Other errors of a statement (a bad value) are raised as they are: retried, they
would fail the same way for ever."""
Params = Sequence[object] | Mapping[str, object]
T = TypeVar("T")
TABLES = ("entries", "terms", "dates", "vectors", "state", "meta")


def redact(dsn: str) -> str:
    """The DSN without its secrets (``password``, ``sslpassword``: the fields
    :func:`somnid.memory.scrub.is_secret_name` names), for health, doctor and the log.
    libpq reads the DSN (key=value or URL form)."""
    if psycopg is None:
        return "(psycopg is not installed)"
    try:
        params = conninfo.conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return "(an unreadable DSN)"
    kept = {
        key: value
        for key, value in params.items()
        if value is not None and not is_secret_name(key, in_query=False)
    }
    return conninfo.make_conninfo("", **kept)


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _refused(exc: BaseException) -> IndexUnavailable:
    return IndexUnavailable(
        f"the PostgreSQL index refused a request ({_first_line(exc)}); recall answers again"
        " once the server allows it (see docs/operations.md), and writes still land in the"
        " files"
    )


def _unreachable(exc: BaseException) -> IndexUnavailable:
    first = _first_line(exc)
    return IndexUnavailable(
        f"the PostgreSQL index is unreachable ({first}); recall answers again once it is"
        " back, and writes still land in the files",
    )


class PgDatabase:
    """Connections to one server; every use maps a lost server to IndexUnavailable."""

    def __init__(
        self,
        dsn: str,
        *,
        connect_timeout: float = 3.0,
        query_timeout: float = 15.0,
        ef_search: int = 100,
        migrate: bool = True,
    ) -> None:
        """``migrate=False`` (doctor) leaves the server as it is: no schema is made.
        ``query_timeout``: a use of a connection (a query, a transaction) cut after it."""
        if psycopg is None:
            raise Unavailable(
                "index.backend = postgres needs psycopg: pip install 'somnid[postgres]'",
                code="index_unavailable",
            )
        self.dsn = dsn
        self.location = redact(dsn)
        self._timeout = max(1, round(connect_timeout))
        self._query_timeout = query_timeout
        self._watchdog = Watchdog()
        self._down_until = 0.0
        self._down: IndexUnavailable | None = None
        self._ef_search = ef_search
        self._write_lock = threading.Lock()
        self._writer: psycopg.Connection[Any] | None = None
        self._local = threading.local()
        self._all: list[psycopg.Connection[Any]] = []
        self._all_lock = threading.Lock()
        self._closed = False
        self._migrates = migrate
        self._migrated = not migrate
        self.on_schema: Callable[[psycopg.Connection[Any]], None] | None = None
        """Run in the schema's transaction each time it is made (the index's vectors)."""

    def _check_up(self) -> None:
        """Fail at once while the server was found unreachable lately."""
        down = self._down
        if down is not None and time.monotonic() < self._down_until:
            raise IndexUnavailable(down.detail)

    def _went_down(self, exc: IndexUnavailable) -> IndexUnavailable:
        self._down, self._down_until = exc, time.monotonic() + RETRY_AFTER_S
        return exc

    def _refused_or_down(self, exc: IndexUnavailable, began: float) -> IndexUnavailable:
        """A connection that failed at once (refused, a server shutting down or starting
        up) says so again as quickly: the next call tries anew (a restart's last refusal
        failed every call for 5 s after the server was back). One that waited out its
        time-out makes the next calls fail at once for a while (:meth:`_went_down`)."""
        if time.monotonic() - began < self._timeout / 2:
            return exc
        return self._went_down(exc)

    def _connect(self) -> psycopg.Connection[Any]:
        if self._closed:
            raise Unavailable("the index is closed (somnid is shutting down)")
        self._check_up()
        began = time.monotonic()
        try:
            conn = psycopg.connect(self.dsn, autocommit=True, connect_timeout=self._timeout)
        except psycopg.OperationalError as exc:
            raise self._refused_or_down(_unreachable(exc), began) from exc
        except psycopg.Error as exc:  # a DSN libpq cannot read
            raise _refused(exc) from exc
        try:
            conn.execute(f"SET hnsw.ef_search = {int(self._ef_search)}")
            conn.execute("SET hnsw.iterative_scan = relaxed_order")
        except psycopg.errors.UndefinedObject:  # no pgvector yet: the schema makes it
            pass
        except psycopg.OperationalError as exc:
            conn.close()
            raise self._refused_or_down(_unreachable(exc), began) from exc
        with self._all_lock:
            if self._closed:  # closed meanwhile (a thread left running at shutdown)
                conn.close()
                raise Unavailable("the index is closed (somnid is shutting down)")
            self._all.append(conn)
        return conn

    def _ensure_schema(self, conn: psycopg.Connection[Any], forget: Callable[[], None]) -> None:
        """Make the schema on first use, and again after its tables were found gone."""
        if not self._migrated:
            with (
                self._watchdog.watch(conn, self._query_timeout) as ident,
                self._guard(conn, forget, ident),
            ):
                self._migrate(conn)
            self._migrated = True

    def _drop(self, conn: psycopg.Connection[Any]) -> None:
        with contextlib.suppress(Exception):
            conn.close()
        with self._all_lock, contextlib.suppress(ValueError):
            self._all.remove(conn)

    @contextlib.contextmanager
    def _guard(
        self, conn: psycopg.Connection[Any], forget: Callable[[], None], watch: int
    ) -> Iterator[None]:
        try:
            yield
            if self._watchdog.expired(watch):  # cut just as it ended: its socket is shut
                self._drop(conn)
                forget()
        except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
            self._drop(conn)
            forget()
            # A server that crashed may have lost its last commits, the schema's included.
            self._migrated = not self._migrates
            if isinstance(exc, psycopg.errors.DiskFull):
                raise StorageError(
                    "the index's server has no space left", code="disk_full"
                ) from exc
            if self._watchdog.expired(watch):  # the server holds the socket, silent
                late = TimeoutError(f"no answer within {self._query_timeout:g} s")
                raise self._went_down(_unreachable(late)) from exc
            # A connection lost (the server restarted since): the next use connects again
            # at once, and only a connect that fails opens the window.
            raise _unreachable(exc) from exc
        except (psycopg.errors.UndefinedTable, psycopg.errors.InvalidSchemaName) as exc:
            self._migrated = not self._migrates  # dropped by hand: made again next time
            raise IndexUnavailable(
                "the PostgreSQL index's tables are gone (dropped by hand?); they are made"
                " again on the next use, and a full sync fills them from the files"
            ) from exc
        except _REFUSALS as exc:  # a role without the rights, no pgvector: the server's reason
            raise _refused(exc) from exc

    @contextlib.contextmanager
    def write(self, timeout: float | None = None) -> Iterator[psycopg.Connection[Any]]:
        """A transaction on the writer connection, serialised across threads, cut after
        ``timeout`` (default: the query timeout)."""
        with self._write_lock:
            self._check_up()
            if self._writer is None or self._writer.closed:
                self._writer = self._connect()
            conn = self._writer

            def forget() -> None:
                self._writer = None

            self._ensure_schema(conn, forget)
            with (
                self._watchdog.watch(conn, timeout or self._query_timeout) as ident,
                self._guard(conn, forget, ident),
                conn.transaction(),
            ):
                yield conn

    @contextlib.contextmanager
    def reading(self, timeout: float | None = None) -> Iterator[psycopg.Connection[Any]]:
        """This thread's reader connection (autocommit), its use cut after ``timeout``
        (default: the query timeout)."""
        self._check_up()
        conn: psycopg.Connection[Any] | None = getattr(self._local, "conn", None)
        if conn is None or conn.closed:
            conn = self._local.conn = self._connect()

        def forget() -> None:
            self._local.conn = None

        self._ensure_schema(conn, forget)
        with (
            self._watchdog.watch(conn, timeout or self._query_timeout) as ident,
            self._guard(conn, forget, ident),
        ):
            yield conn

    def fetchall(self, sql: str, params: Params = ()) -> list[tuple[Any, ...]]:
        return self._read(lambda conn: conn.execute(sql, params, prepare=True).fetchall())

    def fetchone(self, sql: str, params: Params = ()) -> tuple[Any, ...] | None:
        return self._read(lambda conn: conn.execute(sql, params, prepare=True).fetchone())

    def _read(self, run: Callable[[psycopg.Connection[Any]], T], timeout: float | None = None) -> T:
        """``run`` on this thread's reader; once more on a new connection if the one it had
        was lost (a server restarted since this thread last read: every thread's old
        connection fails once, and a read is safe to repeat)."""
        reused = getattr(self._local, "conn", None) is not None
        try:
            with self.reading(timeout) as conn:
                return run(conn)
        except IndexUnavailable:
            if not reused:
                raise
        with self.reading(timeout) as conn:
            return run(conn)

    def count(self, sql: str, params: Params = ()) -> int:
        row = self.fetchone(sql, params)
        return 0 if row is None or row[0] is None else int(row[0])

    def _migrate(self, conn: psycopg.Connection[Any]) -> None:
        """Create the schema (once, whoever comes first); a newer schema version drops the
        tables: they are derived, every daemon fills them again from its files."""
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
            exists = conn.execute("SELECT to_regclass('somnid.meta')").fetchone()
            if exists is not None and exists[0] is not None:
                found = conn.execute(
                    "SELECT value FROM somnid.meta WHERE key = 'schema'"
                ).fetchone()
                if found is not None and found[0] != str(SCHEMA_VERSION):
                    for table in TABLES:
                        conn.execute(f"DROP TABLE IF EXISTS somnid.{table} CASCADE")
            try:
                conn.execute(SCHEMA)
            except psycopg.errors.FeatureNotSupported as exc:  # pragma: no cover
                raise Unavailable(
                    f"the PostgreSQL server has no pgvector: {exc}", code="index_unavailable"
                ) from exc
            if self.on_schema is not None:  # made again (dropped by hand): the model's column
                self.on_schema(conn)
            conn.execute(
                "INSERT INTO somnid.meta (key, value) VALUES ('schema', %s)"
                " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (str(SCHEMA_VERSION),),
            )

    def server(self, timeout: float | None = None) -> tuple[str, str | None]:
        """(server version, pgvector's version; ``… available`` while not yet created)."""
        sql = (
            "SELECT current_setting('server_version'), coalesce("
            " (SELECT extversion FROM pg_extension WHERE extname = 'vector'),"
            " (SELECT default_version || ' available' FROM pg_available_extensions"
            "  WHERE name = 'vector'))"
        )
        found = self._read(lambda conn: conn.execute(sql).fetchone(), timeout)
        assert found is not None
        return str(found[0]), None if found[1] is None else str(found[1])

    def close(self) -> None:
        self._watchdog.close()
        with self._all_lock:
            self._closed = True
            conns, self._all = list(self._all), []
        for conn in conns:
            with contextlib.suppress(Exception):
                conn.close()
