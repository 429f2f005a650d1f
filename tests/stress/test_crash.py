"""SIGKILL at random points while clients capture conversations, write memories and a dream
runs over a scripted LLM; after every restart everything acknowledged is there, whole, and
found by recall, no temp file is left, and the interrupted dreams finish later.

The kill points come from one seed, printed (and shown when the test fails): set
``SOMNID_STRESS_SEED`` to run the same plan again.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
import time
from pathlib import Path
from typing import Any

import httpx

from tests.daemon import Daemon, start_daemon
from tests.llm_server import LLMServer, serve_llm
from tests.stress.llm import consolidate
from tests.stress.workload import (
    QUIET,
    Ledger,
    blind_writer,
    capture_writer,
    check_all,
    check_index,
    contender,
    create_contended,
    leftover_temp_files,
    memory_writer,
    parse_strictly,
    settled,
    stress_seed,
)

KILLS = int(os.environ.get("SOMNID_STRESS_KILLS") or 10)
"""Kills in one run: 10 in the check (each start, sweep and first sync is a kill point a
fifth of the time); SOMNID_STRESS_KILLS=50 for a longer hunt."""
SESSIONS = 3
CAPTURE_WRITERS = 5
MEMORY_WRITERS = 3
CONTENDERS = 2
BLIND_WRITERS = 2
RECALL_SAMPLE = 25


async def test_sigkill_at_random_points_loses_nothing(tmp_path: Path) -> None:
    seed = stress_seed()
    print(f"crash plan from seed {seed} (SOMNID_STRESS_SEED={seed} replays it)")
    rng = random.Random(seed)
    data = tmp_path / "data"
    ledger = Ledger()
    began = time.monotonic()
    with serve_llm(consolidate, delay_s=0.02) as llm:
        env = (*llm.env(timeout_s=10), *QUIET)
        for cycle in range(KILLS):
            with start_daemon(data, *env) as daemon:
                async with daemon.async_client(timeout=30) as client:
                    # One cycle in five kills during start-up: sweep and first sync.
                    early = cycle > 0 and rng.random() < 0.2
                    if not early:
                        await verify(client, data, ledger, rng)
                    if cycle == 0:
                        await create_contended(client, ledger)
                    kill_at = rng.uniform(0.0, 0.3) if early else rng.uniform(0.2, 2.0)
                    dream_at = rng.uniform(0.0, 1.2)
                    print(f"cycle {cycle}: kill after {kill_at:.2f} s, dream at {dream_at:.2f} s")
                    await work_until_killed(client, daemon, ledger, cycle, rng, kill_at, dream_at)
        print(f"{KILLS} kills in {time.monotonic() - began:.1f} s")
        await restart_and_finish(data, env, ledger, llm)
    print(ledger.report())


async def work_until_killed(
    client: httpx.AsyncClient,
    daemon: Daemon,
    ledger: Ledger,
    cycle: int,
    rng: random.Random,
    kill_at: float,
    dream_at: float,
) -> None:
    stop = asyncio.Event()

    def own() -> random.Random:  # each client its own stream: the plan does not depend
        return random.Random(rng.random())  # on how the clients interleave

    async def dream() -> None:
        await asyncio.sleep(dream_at)
        with contextlib.suppress(httpx.TransportError):
            await client.post("/v1/sleep/run", json={"trigger": "crash-test", "wait": False})

    async def kill() -> None:
        await asyncio.sleep(kill_at)
        daemon.stop(signal.SIGKILL)
        stop.set()

    await asyncio.gather(
        *(
            capture_writer(
                client, ledger, f"c{cycle}w{i}", f"sess-{i % SESSIONS}", own(), stop, closes=0.03
            )
            for i in range(CAPTURE_WRITERS)
        ),
        *(
            memory_writer(client, ledger, f"c{cycle}m{i}", own(), stop)
            for i in range(MEMORY_WRITERS)
        ),
        *(contender(client, ledger, f"c{cycle}k{i}", stop) for i in range(CONTENDERS)),
        *(blind_writer(client, ledger, f"c{cycle}b{i}", stop) for i in range(BLIND_WRITERS)),
        dream(),
        kill(),
    )


async def verify(
    client: httpx.AsyncClient, data: Path, ledger: Ledger, rng: random.Random | None = None
) -> None:
    """After a restart: every check of the files, then the index (a sample of the entries,
    the newest always in it, unless ``rng`` is None: then all)."""
    await settled(client)
    print("  ", check_all(data, ledger))
    names = list(ledger.entries)
    if rng is not None and len(names) > RECALL_SAMPLE:
        names = names[-10:] + rng.sample(names[:-10], RECALL_SAMPLE - 10)
    await check_index(client, data, ledger, names)


async def restart_and_finish(
    data: Path, env: tuple[tuple[str, str], ...], ledger: Ledger, llm: LLMServer
) -> None:
    """The last restart: all checks on every entry; the dreams the kills interrupted are
    run again until no log waits, each ending well with a sane journal; a clean stop."""
    llm.delay_s = 0.0
    with start_daemon(data, *env) as daemon:
        async with daemon.async_client(timeout=60) as client:
            await verify(client, data, ledger)
            results: list[dict[str, Any]] = []
            for _ in range(40):
                status = (await client.get("/v1/sleep/status")).json()
                if status["pendingLogs"] == 0:
                    break
                answer = await client.post("/v1/sleep/run", json={"trigger": "t", "wait": True})
                assert answer.status_code == 200, answer.text
                result = answer.json()["result"]
                if not result["logs"]:
                    # Only logs marked never to dream were left: archived unread, as they must.
                    assert (result["status"], result["reason"]) == ("skipped", "no_pending_logs")
                    assert result["skippedLogs"], result
                    continue
                assert (result["status"], result["reason"]) == ("deep_sleep", "done"), result
                assert result["processed"] == result["logs"], result
                journal = parse_strictly(data / result["journal"]).meta
                assert journal["status"] == "deep_sleep"
                assert list(journal["processed_logs"]) == result["processed"]
                results.append(result)
            assert status["pendingLogs"] == 0, status
            print(f"   {len(results)} dreams finished what the kills left")
            await verify(client, data, ledger)
        assert daemon.stop() == 0, daemon.log()[-3000:]
    print("  ", check_all(data, ledger))
    assert leftover_temp_files(data) == []
