"""Doctor beside a running daemon whose index file was deleted: it says what the daemon says
and what to do, not a PostgreSQL server's advice, and not "not built yet"."""

from __future__ import annotations

import shutil

from tests.cli.runner import daemon_env, somnid
from tests.daemon import Daemon
from tests.history.helpers import wait_for


def test_doctor_says_the_index_was_deleted_under_the_daemon(daemon: Daemon) -> None:
    with daemon.client() as client:
        assert client.post("/v1/memories/knowledge", json={"name": "a", "body": "x"}).is_success
        wait_for(lambda: client.get("/v1/index/status").json()["syncState"] == "ready")
        shutil.rmtree(daemon.data_dir / "index")
        wait_for(lambda: client.get("/v1/health").json()["index"]["status"] == "degraded")
    doctor = somnid(daemon_env(daemon), "doctor")
    assert doctor.returncode == 1, doctor.stdout
    backend = doctor.stdout.split("FAIL  backend", 1)[1].split("\n", 2)
    assert "the index file was deleted while somnid ran: restart somnid" in backend[0]
    assert "PostgreSQL" not in backend[1], backend
    assert "not built yet" not in doctor.stdout
