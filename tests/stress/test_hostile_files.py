"""A hostile local user against a real daemon: what they can put in the data dir (FIFOs,
symbolic links in and out of it, a file of a gigabyte, loose file modes) and how they can
hold its sockets (slow and half-open clients). somnid starts, reports what is broken,
leaves it alone, writes nothing outside its data dir, keeps answering, and stops in its
written budget. (The HTTP surface's hostile input is ``test_hostile.py``.)
"""

from __future__ import annotations

import hashlib
import os
import signal
import socket
import stat
import time
from pathlib import Path

from tests.daemon import Daemon, start_daemon

HANG_S = 120.0  # a cap that only catches a hang
SHUTDOWN_S = 5
HEADER_S = 1.5
GIGABYTE = 1 << 30

# rel path (under the data dir) -> how it is made
FIFOS = ["memory/knowledge/fifo-entry/SKILL.md", "memory/session-log/2026-01-01_001.md"]
LINKS_OUT = {  # a file or folder of the data dir that links to the decoys outside
    "memory/knowledge/link-out/SKILL.md": "decoy/outside.md",
    "memory/knowledge/folder-link": "decoy/entry",
    "memory/session-log/2026-01-02_001.md": "decoy/outside.md",
}
HUGE = "memory/knowledge/huge/SKILL.md"
BROKEN = {"fifo-entry", "link-out", "folder-link", "huge"}


def _hashes(folder: Path) -> dict[str, str]:
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def _plant(root: Path) -> Path:
    data = root / "data"
    decoy = root / "decoy"
    (decoy / "entry").mkdir(parents=True)
    (decoy / "outside.md").write_text("---\nname: link-out\n---\n\nnobody writes here\n")
    (decoy / "entry" / "SKILL.md").write_text("---\nname: folder-link\n---\n\nnor here\n")
    for rel in FIFOS:
        (data / rel).parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(data / rel)
    for rel, target in LINKS_OUT.items():
        (data / rel).parent.mkdir(parents=True, exist_ok=True)
        (data / rel).symlink_to(root / target)
    (data / HUGE).parent.mkdir(parents=True)
    with (data / HUGE).open("wb") as handle:
        handle.truncate(GIGABYTE)  # sparse: a gigabyte to read, no disk
    loose = data / "memory/knowledge/loose/SKILL.md"
    loose.parent.mkdir(parents=True)
    loose.write_text("---\nname: loose\ndescription: loose modes\n---\n\nread by all\n")
    for path in [data, *data.rglob("*")]:
        if not path.is_symlink():
            os.chmod(path, 0o755 if path.is_dir() else 0o644)
    return decoy


def _peak_rss_mb(daemon: Daemon) -> float:
    status = Path(f"/proc/{daemon.process.pid}/status").read_text()
    line = next(line for line in status.splitlines() if line.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024


def _loose_modes(data: Path) -> list[str]:
    """Every path under ``data`` that others may read or write. The daemon's own git runs
    beside the walk (its first commit), so a file may vanish between listing and lstat
    (a ``tmp_obj_`` renamed into place): what is gone is not loose."""
    paths = [data] + [
        Path(folder, name) for folder, dirs, files in os.walk(data) for name in dirs + files
    ]
    loose = []
    for path in paths:
        try:
            mode = path.lstat().st_mode
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(mode) or stat.S_ISFIFO(mode) or not stat.S_IMODE(mode) & 0o077:
            continue
        loose.append(f"{path.relative_to(data)} {stat.S_IMODE(mode):o}")
    return loose


def _slow_clients(port: int) -> list[socket.socket]:
    """Five that trickle a request head, five that stop in the body, ten half-open."""
    sockets = []
    for number in range(20):
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        if number < 5:
            sock.sendall(b"GET /v1/health HTTP/1.1\r\n")
        elif number < 10:
            head = b"POST /v1/recall HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n"
            sock.sendall(head + b'{"que')
        else:
            sock.sendall(b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Half: ")
        sockets.append(sock)
    return sockets


def test_hostile_files_and_sockets_never_wedge_the_daemon(tmp_path: Path) -> None:
    decoy = _plant(tmp_path)
    before = _hashes(decoy)
    env = [
        ("SOMNID_SHUTDOWN_TIMEOUT_S", str(SHUTDOWN_S)),
        ("SOMNID_HEADER_TIMEOUT_S", str(HEADER_S)),
        ("SOMNID_BODY_TIMEOUT_S", str(HEADER_S)),
    ]
    with start_daemon(tmp_path / "data", *env) as daemon:
        data = daemon.data_dir
        assert _loose_modes(data) == [], "modes are repaired at start"
        assert "repaired the modes of" in daemon.log()
        port = int(daemon.base_url.rsplit(":", 1)[1])
        with daemon.client(timeout=10) as client:
            client.post("/v1/index/sync")
            health = client.get("/v1/health").json()
            broken = {item["path"].split("/")[2] for item in health["brokenFiles"]}
            assert BROKEN <= broken, health["brokenFiles"]
            assert health["status"] == "degraded"
            for name in sorted(BROKEN):
                path = f"/v1/memories/knowledge/{name}"
                for method, body in (("GET", None), ("PATCH", {"body": "x"}), ("PUT", None)):
                    payload = body if method != "PUT" else {"description": "d", "body": "y"}
                    answer = client.request(method, path, json=payload)
                    assert answer.status_code == 409, (method, name, answer.text)
                    assert answer.json()["code"] == "broken_file"
                archived = client.post(f"{path}/archive")
                assert archived.status_code in (404, 409), (name, archived.text)
            assert client.get("/v1/memories/knowledge/loose").status_code == 200
            assert _peak_rss_mb(daemon) < 600, "the gigabyte file was read"

            sockets = _slow_clients(port)
            try:
                for sock in sockets[:5]:
                    sock.sendall(b"H")  # still trickling
                # Served beside them (no bound in seconds: they are dropped within 1.5 s
                # anyway, and a loaded machine is slow, not broken).
                assert client.get("/v1/health").status_code == 200
                said = {"messages": [{"role": "user", "text": "still here"}]}
                assert client.post("/v1/sessions/s1/messages", json=said).status_code == 200
                slept = client.post("/v1/sleep/run", json={"wait": True}, timeout=30)
                assert slept.status_code == 200, slept.text
                # Every slow client is dropped once its deadline passes.
                deadline = time.monotonic() + HEADER_S * 2 + HANG_S  # a cap on a hang only
                for sock in sockets:
                    sock.settimeout(max(0.1, deadline - time.monotonic()))
                    while sock.recv(4096):
                        pass
            finally:
                for sock in sockets:
                    sock.close()
            assert client.get("/v1/health").status_code == 200
        # It stops on its own (its shutdown deadline ends what the hostile files hold); how
        # fast is the machine's business, the wait's cap only catches a hang.
        daemon.process.send_signal(signal.SIGTERM)
        assert daemon.process.wait(timeout=SHUTDOWN_S + HANG_S) == 0
    assert _hashes(decoy) == before, "a file outside the data dir changed"
    for rel in FIFOS:
        assert stat.S_ISFIFO(os.lstat(tmp_path / "data" / rel).st_mode), rel
    for rel in LINKS_OUT:
        assert (tmp_path / "data" / rel).is_symlink(), rel
    errors = [line for line in daemon.log().splitlines() if '"level": "error"' in line]
    assert errors == []
