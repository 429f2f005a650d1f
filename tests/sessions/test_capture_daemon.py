"""Capture against the real daemon: 32 concurrent writers over HTTP, rollover, shutdown, and
a FIFO in place of a session log that never blocks."""

from __future__ import annotations

import datetime as dt
import os
import signal
import stat
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from somnid.sessions import session_turns
from somnid.store import frontmatter
from somnid.store.layout import Layout
from tests.daemon import Daemon, start_daemon

WRITERS = 32
PER_WRITER = 30


@pytest.fixture
def small_logs_daemon(tmp_path: Path) -> Iterator[Daemon]:
    with start_daemon(tmp_path / "data", ("SOMNID_CAPTURE__LOG_MAX_BYTES", "4096")) as running:
        yield running


def run_writers(daemon: Daemon, session_of: Callable[[int], str]) -> dict[int, list[str]]:
    """Each writer sends its messages one request at a time (every third request a batch of
    two, every fifth a tool call); returns what each had acknowledged, in order."""
    acknowledged: dict[int, list[str]] = {worker: [] for worker in range(WRITERS)}
    failures: list[str] = []
    barrier = threading.Barrier(WRITERS)

    def writer(worker: int) -> None:
        try:
            write(worker)
        except Exception as exc:  # a time-out, a reset: the test fails saying so
            failures.append(f"writer {worker}: {exc!r}")

    def write(worker: int) -> None:
        session = session_of(worker)
        with daemon.client(timeout=120) as client:
            barrier.wait()
            number = 0
            while number < PER_WRITER:
                texts = [f"w{worker:02d} n{number:03d} " + "t" * (20 + 7 * number)]
                if number % 3 == 0 and number + 1 < PER_WRITER:
                    texts.append(f"w{worker:02d} n{number + 1:03d} batched")
                if number % 5 == 4:
                    body = {"call": f"w{worker:02d} n{number:03d}()", "result": "ok"}
                    response = client.post(f"/v1/sessions/{session}/tool-calls", json=body)
                    texts = [body["call"]]
                else:
                    messages = [{"role": "user", "text": text} for text in texts]
                    response = client.post(
                        f"/v1/sessions/{session}/messages", json={"messages": messages}
                    )
                if response.status_code != 200:
                    failures.append(response.text)
                    return
                acknowledged[worker].extend(texts)
                number += len(texts)

    threads = [threading.Thread(target=writer, args=(worker,)) for worker in range(WRITERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()  # a hang is pytest-timeout's to end
    assert failures == []
    return acknowledged


def texts_of(daemon: Daemon, session: str) -> list[str]:
    turns = session_turns(Layout(daemon.data_dir), session, dt.UTC)
    return [turn.tool.call if turn.tool else turn.text for turn in turns]


def check_order(texts: list[str], acknowledged: list[str], worker: int) -> None:
    mine = [text for text in texts if text.startswith(f"w{worker:02d} ")]
    assert mine == acknowledged, f"writer {worker}"


def test_many_writers_to_one_session_across_rollovers(small_logs_daemon: Daemon) -> None:
    acknowledged = run_writers(small_logs_daemon, lambda worker: "shared")
    with small_logs_daemon.client() as client:
        closed = client.post("/v1/sessions/shared/close").json()
    texts = texts_of(small_logs_daemon, "shared")
    everything = [text for texts_of_one in acknowledged.values() for text in texts_of_one]
    assert len(everything) == WRITERS * PER_WRITER
    assert sorted(texts) == sorted(everything)  # each acknowledged entry exactly once
    for worker, sent in acknowledged.items():
        check_order(texts, sent, worker)

    parts = sorted((small_logs_daemon.data_dir / "memory/session-log").glob("*.md"))
    assert len(parts) > 10
    previous: str | None = None
    counted = 0
    for path in parts:
        doc = frontmatter.parse(path.read_text())
        assert doc.meta.get("continues") == previous
        assert doc.meta["message_count"] == doc.body.count("\n\n")
        counted += doc.meta["message_count"]
        previous = path.stem
    assert closed["path"] == f"memory/session-log/{parts[-1].name}"
    assert closed["part"] == len(parts)
    assert doc.meta["total_message_count"] == counted == len(texts)


def test_many_writers_to_many_sessions_then_shutdown_closes_them(
    small_logs_daemon: Daemon,
) -> None:
    acknowledged = run_writers(small_logs_daemon, lambda worker: f"session-{worker % 8}")
    assert small_logs_daemon.stop(signal.SIGTERM) == 0, small_logs_daemon.log()
    for session in range(8):
        texts = texts_of(small_logs_daemon, f"session-{session}")
        writers = range(session, WRITERS, 8)
        assert sorted(texts) == sorted(text for w in writers for text in acknowledged[w])
        for worker in writers:
            check_order(texts, acknowledged[worker], worker)
    names = set()
    for path in (small_logs_daemon.data_dir / "memory/session-log").glob("*.md"):
        doc = frontmatter.parse(path.read_text())
        assert "end_time" in doc.meta, path.name  # every log was finalised at shutdown
        assert doc.meta["status"] == "pending"
        names.add(path.name)
    assert len(names) >= 8


def test_a_fifo_in_place_of_a_session_log_never_blocks(tmp_path: Path) -> None:
    env = ("SOMNID_SHUTDOWN_TIMEOUT_S", "5")
    with start_daemon(tmp_path / "data", env) as daemon:
        with daemon.client(timeout=120) as client:

            def say(text: str) -> httpx.Response:
                message = {"messages": [{"role": "user", "text": text}]}
                return client.post("/v1/sessions/s1/messages", json=message)

            first = say("hello there")
            assert first.status_code == 200, first.text
            log = daemon.data_dir / first.json()["path"]
            # A hand puts a FIFO where the open log was, and one more named like a log.
            fifo = log.with_name(".swap")
            os.mkfifo(fifo)
            os.replace(fifo, log)
            os.mkfifo(log.with_name("2026-01-01_001.md"))
            # Capture goes on (in a new part), health and a sleep answer.
            again = say("still here")
            assert again.status_code == 200, again.text
            assert again.json()["path"] != first.json()["path"]
            assert client.get("/v1/health").status_code == 200
            slept = client.post("/v1/sleep/run", json={"wait": True}, timeout=300)
            assert slept.status_code == 200, slept.text
        # FIFOs never wedge the shutdown: it ends by itself (its wall-clock budget is
        # measured in bench/, not held against a loaded machine here).
        daemon.process.send_signal(signal.SIGTERM)
        assert daemon.process.wait(timeout=120) == 0, daemon.log()
    assert stat.S_ISFIFO(os.lstat(log).st_mode)  # left alone
