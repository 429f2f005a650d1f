"""32 clients at once against the real daemon: capture on shared sessions, memory writes,
If-Match writers racing on one entry, blind writers on another, recall, reads, and dreams
back to back over a scripted LLM. Nothing acknowledged is lost, no update is lost, every
conflict is answered 412, and each operation's latency is reported (its speed is measured
in bench/latency.py, not here: only a hang fails this test).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import re
import time
from pathlib import Path
from typing import Any

import httpx

from tests.daemon import start_daemon
from tests.llm_server import serve_llm
from tests.stress.llm import consolidate
from tests.stress.workload import (
    BLIND,
    CONTENDED,
    QUIET,
    Ledger,
    blind_writer,
    capture_writer,
    check_all,
    check_index,
    contender,
    create_contended,
    memory_writer,
    percentiles,
    recaller,
    settled,
    stress_seed,
)

LOAD_SECONDS = 12.0
CAPTURE_WRITERS = 12  # two on each session
SESSIONS = 6
MEMORY_WRITERS = 8
CONTENDERS = 4
BLIND_WRITERS = 2
RECALLERS = 4
# + one client dreaming back to back, + one reading lists, health and sleep status = 32
ENOUGH_CAP_S = 240.0  # how much longer the load may run to reach the checks' preconditions
HANG_S = 60.0  # a request this long is stuck, whatever the machine's load


async def test_32_clients_lose_nothing_and_none_hangs(tmp_path: Path) -> None:
    seed = stress_seed()
    print(f"load from seed {seed} (SOMNID_STRESS_SEED={seed})")
    rng = random.Random(seed)
    data = tmp_path / "data"
    ledger = Ledger()
    dreams: list[dict[str, Any]] = []
    with (
        serve_llm(consolidate, delay_s=0.05) as llm,
        start_daemon(data, *llm.env(timeout_s=10), *QUIET) as daemon,
    ):
        async with contextlib.AsyncExitStack() as stack:
            clients = [
                await stack.enter_async_context(daemon.async_client(timeout=60)) for _ in range(32)
            ]
            await settled(clients[0])
            await create_contended(clients[0], ledger)
            stop = asyncio.Event()
            pool = iter(clients)

            def own() -> random.Random:
                return random.Random(rng.random())

            def enough() -> bool:
                """What the checks below need to have happened: a slow machine gets longer
                (never less load), up to a cap that only catches a hang."""
                with ledger.lock:
                    return (
                        ledger.conflicts > 0
                        and len(ledger.contended_acked) > CONTENDERS
                        and ledger.recalls > 0
                        and bool(dreams)
                    )

            async def stop_later() -> None:
                await asyncio.sleep(LOAD_SECONDS)
                deadline = time.monotonic() + ENOUGH_CAP_S
                while not enough() and time.monotonic() < deadline:  # noqa: ASYNC110 (a poll of the ledger, which threads fill)
                    await asyncio.sleep(0.1)
                stop.set()

            began = time.monotonic()
            results = await asyncio.gather(
                *(
                    capture_writer(next(pool), ledger, f"w{i}", f"sess-{i % SESSIONS}", own(), stop)
                    for i in range(CAPTURE_WRITERS)
                ),
                *(
                    memory_writer(next(pool), ledger, f"m{i}", own(), stop)
                    for i in range(MEMORY_WRITERS)
                ),
                *(contender(next(pool), ledger, f"k{i}", stop) for i in range(CONTENDERS)),
                *(blind_writer(next(pool), ledger, f"b{i}", stop) for i in range(BLIND_WRITERS)),
                *(recaller(next(pool), ledger, own(), stop) for _ in range(RECALLERS)),
                dreamer(next(pool), ledger, stop, dreams),
                reader(next(pool), ledger, stop),
                stop_later(),
            )
            took = time.monotonic() - began
            assert next(pool, None) is None  # all 32 clients had work
            client = clients[0]

            # Nothing failed: every answer was a success or, for If-Match, a 412.
            assert not ledger.errors, (ledger.errors[:5], lines_about(ledger.errors, daemon.log()))
            print(ledger.report())
            recalls = sum(n for n in results if isinstance(n, int))
            print(
                f"{took:.1f} s: {ledger.conflicts} If-Match conflicts answered 412, "
                f"{len(ledger.contended_acked) - 1} If-Match writes kept, "
                f"{recalls} recalls of earlier writes checked, {len(dreams)} dreams"
            )
            assert ledger.conflicts > 0 and len(ledger.contended_acked) > CONTENDERS
            assert recalls > 0
            assert dreams and all(d["status"] == "deep_sleep" for d in dreams), dreams
            for op, values in ledger.latency.items():
                if op == "dream":
                    continue  # long by nature: reported, bounded by its own timeouts
                p50, p95, top = percentiles(values)
                print(f"{op}: p50 {p50 * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms, max {top:.1f} s")
                assert top < HANG_S, (op, p50, p95, top)

            # The entries several clients wrote are what the last acknowledged write left.
            contended = (await client.get(f"/v1/memories/knowledge/{CONTENDED}")).json()
            last = max(ledger.contended_acked, key=lambda acked: len(acked[2]))  # the chain's end
            assert (contended["etag"], contended["body"].rstrip("\n")) == last[1:]
            blind = (await client.get(f"/v1/memories/knowledge/{BLIND}")).json()
            assert (blind["body"].rstrip("\n"), blind["etag"]) in ledger.blind_acked
            print("  ", check_all(data, ledger))
            await check_index(client, data, ledger)
        assert daemon.stop() == 0

    # And all of it is still there after a restart.
    with start_daemon(data, *QUIET) as daemon:
        async with daemon.async_client(timeout=60) as client:
            await check_index(client, data, ledger)
    print("  ", check_all(data, ledger))


async def dreamer(
    client: httpx.AsyncClient, ledger: Ledger, stop: asyncio.Event, dreams: list[dict[str, Any]]
) -> None:
    """Dream, again and again, while the others write."""
    while not stop.is_set():
        with ledger.timed("dream"):
            answer = await client.post("/v1/sleep/run", json={"trigger": "load", "wait": True})
        if answer.status_code != 200:
            ledger.error("dream", answer)
            return
        result = answer.json()["result"]
        if result["status"] != "skipped":
            dreams.append(result)
        with contextlib.suppress(TimeoutError):  # a breath between dreams, none after the end
            await asyncio.wait_for(stop.wait(), 0.2)


async def reader(client: httpx.AsyncClient, ledger: Ledger, stop: asyncio.Event) -> None:
    """What a dashboard reads: lists, health, sleep status."""
    routes = [
        ("list", "/v1/memories?kind=knowledge&limit=100"),
        ("health", "/v1/health"),
        ("sleep_status", "/v1/sleep/status"),
    ]
    while not stop.is_set():
        for op, route in routes:
            with ledger.timed(op):
                answer = await client.get(route)
            if answer.status_code != 200:
                ledger.error(op, answer)
                return


def lines_about(errors: list[str], log: str, most: int = 60) -> list[str]:
    """The daemon's log lines that name an entry an error names (the request, its answer,
    whoever else wrote it): once a run failed on a 412 whose instance named another
    writer's entry, and the log that would say why was gone with the test's tmp dir."""
    names = {name for error in errors[:5] for name in re.findall(r"\b[mkbw]\d+-e?\d+\b", error)}
    found = [line for line in log.splitlines() if any(name in line for name in names)]
    return found[-most:]
