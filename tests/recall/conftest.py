"""The PostgreSQL server the postgres index's tests share (one per session, started on
first use). Where it cannot start, those tests skip, and the summary says why."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.recall.pg_server import PgServer

_SKIPPED: list[str] = []


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    try:
        server = PgServer()
        server.init()
    except Exception as exc:  # no wheel for this platform, no useradd, no runuser, ...
        reason = f"embedded PostgreSQL could not start: {exc}"
        _SKIPPED.append(reason)
        pytest.skip(reason)
    try:
        yield server
    finally:
        server.destroy()


@pytest.fixture
def pg_dsn(pg_server: PgServer) -> str:
    """A fresh database on the session's server."""
    return pg_server.new_database()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _SKIPPED:
        terminalreporter.write_sep("=", "postgres index tests skipped")
        for reason in dict.fromkeys(_SKIPPED):
            terminalreporter.write_line(reason)
