"""Nothing is lost while both machines write and sync at once: every acknowledged write is
in both data dirs at the end (or listed as a conflict), and no file holds conflict markers."""

from __future__ import annotations

import threading
from pathlib import Path

import httpx

from tests.daemon import Daemon
from tests.sync.helpers import bare_remote, fsck, machine, memory_files, no_markers, read, sync

WRITES = 12


def _writer(daemon: Daemon, prefix: str, acked: list[str], shared: list[str]) -> None:
    with daemon.client(timeout=120.0) as client:
        for number in range(WRITES):
            name = f"{prefix}-{number}"
            answer = client.post("/v1/memories/knowledge", json={"name": name, "body": "x\n"})
            assert answer.status_code == 201, answer.text
            acked.append(name)
            tag = f"{prefix}{number}"  # one entry both change, a key each: tags merge
            answer = client.patch("/v1/memories/knowledge/shared", json={"fields": {prefix: tag}})
            assert answer.status_code == 200, answer.text
            shared.append(tag)


def _syncing(daemons: tuple[Daemon, Daemon], stop: threading.Event, rounds: list[int]) -> None:
    with daemons[0].client(timeout=120.0) as a, daemons[1].client(timeout=120.0) as b:
        while not stop.is_set():
            for client in (a, b):
                answer = client.post("/v1/sync")
                assert answer.status_code == 200, answer.text
                rounds.append(1)


def test_writes_and_syncs_at_once_lose_nothing(tmp_path: Path) -> None:
    remote = bare_remote(tmp_path / "remote.git")
    with (
        machine(tmp_path / "a" / "data", remote) as a,
        machine(tmp_path / "b" / "data", remote) as b,
    ):
        with a.client() as client:
            created = client.post("/v1/memories/knowledge", json={"name": "shared", "body": "s\n"})
            assert created.status_code == 201
        sync(a)
        sync(b)
        acked: dict[str, list[str]] = {"a": [], "b": []}
        tags: dict[str, list[str]] = {"a": [], "b": []}
        stop, rounds = threading.Event(), list[int]()
        syncer = threading.Thread(target=_syncing, args=((a, b), stop, rounds))
        writers = [
            threading.Thread(target=_writer, args=(daemon, key, acked[key], tags[key]))
            for key, daemon in (("a", a), ("b", b))
        ]
        syncer.start()
        for thread in writers:
            thread.start()
        for thread in writers:
            thread.join(timeout=300)
        stop.set()
        syncer.join(timeout=300)
        assert len(acked["a"]) == len(acked["b"]) == WRITES and rounds
        sync(a)
        sync(b)
        sync(a)
        for daemon in (a, b):
            for name in acked["a"] + acked["b"]:
                assert read(daemon, name) is not None, (daemon.base_url, name)
            shared = read(daemon, "shared")
            assert shared is not None
            assert (shared["meta"]["a"], shared["meta"]["b"]) == (
                f"a{WRITES - 1}",
                f"b{WRITES - 1}",
            ), shared["meta"]
            no_markers(daemon.data_dir)
            fsck(daemon.data_dir)
        assert memory_files(a.data_dir) == memory_files(b.data_dir)
        with httpx.Client(base_url=a.base_url, headers=a.headers) as client:
            assert client.get("/v1/sync/status").json()["conflicts"] == []
