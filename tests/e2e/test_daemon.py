"""The real daemon: uvicorn in a child process on a free loopback port, spoken to over HTTP."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from somnid.memory.kinds import Kind
from somnid.store import frontmatter
from somnid.store.atomic import TEMP_PREFIX
from tests.daemon import (
    RUN_MARK,
    Daemon,
    free_port,
    leftover_daemons,
    spawn,
    start_daemon,
    stop_leftovers,
    wait_ready,
)


def test_health_create_and_hand_edit(daemon: Daemon) -> None:
    with daemon.client() as client:
        health = client.get("/v1/health").json()
        assert health["status"] == "ok" and health["dataDir"] == str(daemon.data_dir)
        made = client.post("/v1/memories/knowledge", json={"name": "port", "body": "7373"})
        assert made.status_code == 201
        path = daemon.data_dir / made.json()["path"]
        path.write_text(path.read_text().replace("7373", "7474"))
        assert client.get("/v1/memories/knowledge/port").json()["body"] == "7474\n"
        docs = client.get("/docs")
        assert docs.status_code == 200 and "swagger" in docs.text.lower()


def test_head_of_a_stream_ends_and_the_connection_goes_on(daemon: Daemon) -> None:
    """HEAD of the sleep events stream: headers, then the answer is over (the stream held
    a keep-alive connection, and the client's next request waited behind it)."""
    with daemon.client(timeout=60) as client:
        head = client.head("/v1/sleep/events")
        assert head.status_code == 200 and head.content == b""
        assert head.headers["content-type"].startswith("text/event-stream")
        assert client.get("/v1/health").status_code == 200  # the same connection
        got = client.get("/v1/memories")
        head = client.head("/v1/memories")
        assert (
            head.content == b"" and head.headers["content-length"] == got.headers["content-length"]
        )


def test_second_daemon_on_the_same_dir_exits_at_once(daemon: Daemon, tmp_path: Path) -> None:
    log = tmp_path / "second.log"
    second = spawn(daemon.data_dir, free_port(), log)
    try:
        status = second.wait(timeout=60)  # it exits by itself; the budget is a hang's bound
    finally:
        if second.poll() is None:  # a failed test leaves no daemon running
            second.kill()
            second.wait(timeout=10)
    assert status == 3
    assert "already using the data dir" in log.read_text()
    with daemon.client() as client:
        assert client.get("/v1/health").status_code == 200  # the first one is unharmed


@pytest.mark.stress
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_signal_during_writes_loses_nothing_acknowledged(tmp_path: Path, sig: int) -> None:
    acknowledged: list[tuple[str, str]] = []
    lock = threading.Lock()
    stop = threading.Event()

    with start_daemon(tmp_path / "data") as daemon:

        def writer(worker: int) -> None:
            with daemon.client(timeout=5) as client:
                for number in range(10_000):
                    if stop.is_set():
                        return
                    name = f"w{worker}-{number}"
                    body = f"payload {worker} {number} " + "x" * 2000
                    try:
                        response = client.post(
                            "/v1/memories/knowledge", json={"name": name, "body": body}
                        )
                    except httpx.HTTPError:
                        return
                    if response.status_code == 201:
                        with lock:
                            acknowledged.append((name, body))
                    elif response.status_code >= 500:
                        return

        threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        # The signal lands mid-stream once enough writes went through, however slow the
        # machine is (the shutdown budget's wall-clock bound is measured in bench/).
        deadline = time.monotonic() + 120
        while len(acknowledged) <= 20:
            assert time.monotonic() < deadline, "fewer than 21 writes in 120 s"
            time.sleep(0.01)
        status = daemon.stop(sig, timeout=60)
        stop.set()
        for thread in threads:
            thread.join(timeout=60)

    assert status == 0, daemon.log()
    assert len(acknowledged) > 20
    root = tmp_path / "data"
    assert not (root / "daemon.json").exists()  # shut down, not killed
    assert list(root.rglob(f"{TEMP_PREFIX}*")) == []
    for name, body in acknowledged:
        text = (root / "memory/knowledge" / name / "SKILL.md").read_text()
        assert frontmatter.parse(text).body == body + "\n"
    for path in (root / "memory/knowledge").rglob("SKILL.md"):
        frontmatter.parse(path.read_text())  # every file on disk parses, acknowledged or not


def test_under_nohup_a_hangup_is_outlived(tmp_path: Path) -> None:
    """`nohup somnid serve &` means to outlive the terminal: SIGHUP, ignored there, is not
    taken for a stop."""

    def ignore_hangups() -> None:
        signal.signal(signal.SIGHUP, signal.SIG_IGN)

    def masks() -> dict[str, int]:
        lines = Path(f"/proc/{daemon.process.pid}/status").read_text().splitlines()
        return {
            k: int(v, 16)
            for k, _, v in (line.partition(":\t") for line in lines)
            if k in ("SigIgn", "SigCgt")
        }

    hangup = 1 << (signal.SIGHUP - 1)
    with start_daemon(tmp_path / "data", preexec=ignore_hangups) as daemon:
        # Ready, so its handlers are set: the kernel still drops a hangup, none is caught.
        assert masks()["SigIgn"] & hangup and not masks()["SigCgt"] & hangup, masks()
        daemon.process.send_signal(signal.SIGHUP)
        with daemon.client() as client:
            assert client.post("/v1/memories/knowledge", json={"name": "k"}).status_code == 201
        assert daemon.stop() == 0


def test_restart_keeps_everything(tmp_path: Path) -> None:
    with start_daemon(tmp_path / "data") as daemon, daemon.client() as client:
        for kind in Kind:
            name = "about_me" if kind is Kind.PROFILE else f"{kind.value}-1"
            assert client.post(f"/v1/memories/{kind.value}", json={"name": name}).status_code == 201
        daemon.stop()
    with start_daemon(tmp_path / "data") as daemon, daemon.client() as client:
        counts = client.get("/v1/health").json()["counts"]
        assert counts == {kind.value: 1 for kind in Kind}


def test_bad_config_exits_with_a_message(tmp_path: Path) -> None:
    config = tmp_path / "bad.toml"
    config.write_text("[assoc]\ntreshold = 1\n")
    result = subprocess.run(
        [sys.executable, "-m", "somnid", "--config", str(config), "serve"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert "treshold" in result.stderr and "Traceback" not in result.stderr


def test_a_daemon_a_test_left_running_is_found_and_stopped(tmp_path: Path) -> None:
    """The session's guard (tests/conftest.py) finds every daemon of this run still alive,
    an orphan too, and kills it."""
    port = free_port()
    left = spawn(tmp_path / "data", port, tmp_path / "left.log")
    try:
        wait_ready(left, f"http://127.0.0.1:{port}", timeout=120)
        run = os.environ[RUN_MARK]
        assert left.pid in leftover_daemons(run)
        assert leftover_daemons("another-run") == []
        assert left.pid in stop_leftovers(run)
        left.wait(timeout=60)  # already reaped by stop_leftovers: gone either way
        assert left.pid not in leftover_daemons(run)
    finally:
        if left.poll() is None:
            left.kill()
            left.wait(timeout=10)
