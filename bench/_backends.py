"""``bench/latency.py --backend sqlite,postgres``: the index backends side by side.

One seeded store (``bench/_stores.py``) is written once per backend (each daemon locks its
data dir), one ``somnid serve`` runs on each, and once both have every vector, the same
recall cues go to both, interleaved (A then B, then B then A, ...) over keep-alive
connections, so the load of the machine weighs on both alike. Reported per backend: recall
p50/p95, the ratio to the first backend, the daemon's peak RSS, the index's size, the build
time. The PostgreSQL server is ``--dsn`` or the embedded one the tests use. Results go to
``bench/results/latency_backends.json`` (sizes not run this time are kept).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import datetime as dt
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._stores import CueSource, generate_entries, write_store
from bench.latency import (
    MODEL_CACHE,
    Daemon,
    git_commit,
    machine,
    percentiles,
    progress,
    wait_for_index,
    wait_quiet,
)
from somnid import __version__ as somnid_version
from somnid.embed.e5convert import install_default_model


def compare_backends(args: argparse.Namespace) -> int:
    model_dir = install_default_model(MODEL_CACHE)
    server = None
    dsn: str | None = args.dsn
    if "postgres" in args.backends and dsn is None:
        from tests.recall.pg_server import PgServer

        server = PgServer()
        server.init()
    try:
        results: dict[int, dict[str, Any]] = {}
        for size in args.size_list:
            if server is not None:
                dsn = server.new_database()
            results[size] = run_size(size, args, model_dir, dsn)
            print(format_size(results[size]), flush=True)
            write(args.out, results, args.fresh)
    finally:
        if server is not None:
            server.destroy()
    return 0


def run_size(
    size: int, args: argparse.Namespace, model_dir: Path, dsn: str | None
) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix=f"somnid-backends-{size}-", dir=args.work_dir))
    result: dict[str, Any] = {"size": size, "seed": args.seed, "backends": {}}
    daemons: dict[str, Daemon] = {}
    try:
        entries = generate_entries(size, args.seed)
        for backend in args.backends:
            data_dir = work / backend / "data"
            write_store(data_dir, entries)
            # No dreams: a daemon idle while the other builds would retire entries meanwhile.
            env = {"SOMNID_INDEX__BACKEND": backend, "SOMNID_DREAM__ENABLED": "false"}
            if backend == "postgres":
                assert dsn is not None
                env["SOMNID_INDEX__DSN"] = dsn
            progress(f"{size}: starting somnid on {backend}")
            wait_quiet(args.quiet_timeout)
            daemon = Daemon.spawn(data_dir, model_dir, work / backend, backend, env)
            daemons[backend] = daemon
            timeline = wait_for_index(daemon, size, args.build_timeout or 300.0 + size / 10)
            build_s = timeline["vectors_done_s"] - timeline["model_ready_s"]
            result["backends"][backend] = {"build_s": round(build_s, 2)}
            progress(f"{size}: {backend} built in {build_s:.1f} s")
        del entries
        wait_quiet(args.quiet_timeout, *(d.process.pid for d in daemons.values()))
        before = {name: index_status(daemon) for name, daemon in daemons.items()}
        recall = interleaved(daemons, CueSource(args.seed), args.queries, args.warmup)
        first = args.backends[0]
        for backend, daemon in daemons.items():
            figures = result["backends"][backend]
            figures["recall"] = recall[backend]
            for key in ("p50_ms", "p95_ms"):
                mine, base = recall[backend][key], recall[first][key]
                alone = len(daemons) == 1  # a ratio to itself says nothing
                figures[f"{key[:3]}_ratio"] = round(mine / base, 3) if base and not alone else None
            figures["index"] = index_status(daemon)
            counted = ("entries", "vectors")
            if [figures["index"][k] for k in counted] != [before[backend][k] for k in counted]:
                raise RuntimeError(f"{backend}: the index changed while measured: {before}")
            proc = daemon.proc_status()
            figures["daemon"] = {
                "peak_rss_bytes": proc.get("VmHWM"),
                "rss_bytes": proc.get("VmRSS"),
            }
        result["run"] = {
            "somnid": somnid_version,
            **git_commit(),
            "machine": machine(),
            "run_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "queries": args.queries,
            "warmup": args.warmup,
        }
        return result
    finally:
        for daemon in daemons.values():
            with contextlib.suppress(Exception):
                daemon.stop()
        shutil.rmtree(work, ignore_errors=True)


def index_status(daemon: Daemon) -> dict[str, Any]:
    with daemon.client() as client:
        status = client.get("/v1/index/status").json()
    return {key: status.get(key) for key in ("entries", "vectors", "sizeBytes")}


def interleaved(
    daemons: dict[str, Daemon], cues: CueSource, queries: int, warmup: int
) -> dict[str, dict[str, Any]]:
    """The same recall cues to every daemon, in turns whose order alternates."""
    names = list(daemons)
    seconds: dict[str, list[float]] = {name: [] for name in names}
    modes: dict[str, collections.Counter[str]] = {name: collections.Counter() for name in names}
    clients = {name: daemon.client(timeout=30.0) for name, daemon in daemons.items()}
    try:
        for number, cue in enumerate(cues.take(warmup + queries)):
            order = names if number % 2 == 0 else names[::-1]
            for name in order:
                start = time.perf_counter()
                response = clients[name].post("/v1/recall", json={"query": cue.text, "limit": 10})
                took = time.perf_counter() - start
                if response.status_code != 200:
                    raise RuntimeError(f"{name}: /v1/recall answered {response.status_code}")
                if number >= warmup:
                    seconds[name].append(took)
                    modes[name][str(response.json()["mode"])] += 1
    finally:
        for client in clients.values():
            client.close()
    return {name: {**percentiles(seconds[name]), "modes": dict(modes[name])} for name in names}


def format_size(result: dict[str, Any]) -> str:
    lines = [f"{result['size']:,} entries, recall interleaved:"]
    for backend, figures in result["backends"].items():
        recall = figures["recall"]
        rss = figures["daemon"]["peak_rss_bytes"] or 0
        lines.append(
            f"  {backend:9} p50 {recall['p50_ms']:.1f} ms  p95 {recall['p95_ms']:.1f} ms"
            f"  (×{figures['p50_ratio'] or '–'} / ×{figures['p95_ratio'] or '–'})"
            f"  build {figures['build_s']:.0f} s  peak RSS {rss / 2**20:.0f} MB"
        )
    return "\n".join(lines)


def write(out: Path, results: dict[int, dict[str, Any]], fresh: bool) -> None:
    merged: dict[str, Any] = {}
    if out.exists() and not fresh:
        with contextlib.suppress(ValueError, OSError):
            merged = dict(json.loads(out.read_text(encoding="utf-8")).get("results", {}))
    merged.update({str(size): result for size, result in results.items()})
    document = {
        "benchmark": "latency_backends",
        "updated": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "results": dict(sorted(merged.items(), key=lambda item: int(item[0]))),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(out)
