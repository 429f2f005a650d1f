"""Upkeep benchmark: what the daily decay pass costs on a generated store, and its floor.

The sleep's upkeep (``Maintenance.run``: decay, retirement into the archive, intention
expiry) rewrites the score of every entry that decayed: on a steady store, every entry once
a day. Each rewrite goes through the whole daemon: the store's atomic write, the index's
reconcile (and the watcher's echo of it), the history's commit. This runs it in the real
runtime (history, watcher, the real embedding model ready, as ``somnid serve`` has them) on a
seeded store (``bench/_stores.py``) whose entries last decayed yesterday, so the pass does one
day's work, then waits for the history to commit it all.

The floor, measured in the same run on a copy of the same files: each file read and written
back atomically (``write_atomic``: temp file, fsync, rename, fsync folder), nothing else. The
pass per entry against it says what the daemon adds to the disk's own cost.

    .venv/bin/python bench/upkeep.py                  # 10k entries, ~4 minutes
    .venv/bin/python bench/upkeep.py --size 2000 --out /tmp/upkeep.json

Writes ``bench/results/upkeep.json`` (or ``--out``).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import datetime as dt
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repo root importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._signals import exit_cleanly_on_sigterm
from bench._stores import GeneratedEntry, generate_entries, write_store
from somnid import __version__ as somnid_version
from somnid.config import Settings
from somnid.embed.e5convert import install_default_model
from somnid.memory.clock import ManualClock
from somnid.runtime import Runtime
from somnid.store.atomic import write_atomic

REPO = Path(__file__).resolve().parent.parent
MODEL_CACHE = REPO / "bench" / ".cache" / "models"
DEFAULT_OUT = REPO / "bench" / "results" / "upkeep.json"
YESTERDAY = dt.date(2026, 12, 1)  # every entry's last decay; the pass runs the day after
PASS_AT = dt.datetime(2026, 12, 2, 3, 0, tzinfo=dt.UTC)
SETTLE_TIMEOUT_S = 1800.0


def decayed_yesterday(entries: Sequence[GeneratedEntry]) -> list[GeneratedEntry]:
    """The entries as a store that ran upkeep every day would hold them: last decay
    yesterday, last use no later (their score and stability as generated)."""
    day = YESTERDAY.isoformat()
    out = []
    for entry in entries:
        meta = tuple(
            (key, day if key in ("last_decay", "last_used") else value) for key, value in entry.meta
        )
        out.append(dataclasses.replace(entry, meta=meta))
    return out


def floor(root: Path) -> dict[str, Any]:
    """Every entry file read and written back atomically: the disk's part of a rewrite."""
    files = sorted(root.rglob("SKILL.md"))
    start, cpu = time.perf_counter(), time.process_time()
    for path in files:
        write_atomic(path, path.read_bytes())
    seconds = time.perf_counter() - start
    return {
        "files": len(files),
        "seconds": round(seconds, 2),
        "cpu_s": round(time.process_time() - cpu, 2),
        "ms_per_file": round(seconds / len(files) * 1000, 3),
    }


async def upkeep(data: Path, model_dir: Path | None) -> dict[str, Any]:
    """The pass in the runtime on ``data``; ``model_dir`` None runs with embeddings off."""
    embed: dict[str, Any] = {"provider": "off"} if model_dir is None else {"model_dir": model_dir}
    settings = Settings(data_dir=data, timezone="UTC", embed=embed)
    clock = ManualClock(PASS_AT)
    async with Runtime.open(settings, clock=clock) as rt:
        start = time.perf_counter()
        await rt.index.wait_idle()  # the first sync and every vector: the daemon at rest
        ready_s = time.perf_counter() - start
        committer = rt.history.committer
        if committer is not None:
            await committer.flush()  # the store's first commit, before the pass
        commits = committer.commits if committer is not None else 0
        start, cpu = time.perf_counter(), time.process_time()
        report = await rt.maintenance.run()
        pass_s = time.perf_counter() - start
        pass_cpu = time.process_time() - cpu
        if committer is not None:
            await asyncio.wait_for(committer.flush(), SETTLE_TIMEOUT_S)
        settled_s = time.perf_counter() - start
        settled_cpu = time.process_time() - cpu
        commits = (committer.commits if committer is not None else 0) - commits
        entries = len({(c.kind, c.name) for c in [*report.decayed, *report.retired]})
        return {
            "ready_s": round(ready_s, 1),
            "rewritten": entries,
            "decayed": len(report.decayed),
            "retired": len(report.retired),
            "pass_s": round(pass_s, 2),
            "pass_cpu_s": round(pass_cpu, 2),
            "ms_per_entry": round(pass_s / max(1, entries) * 1000, 3),
            "with_history_s": round(settled_s, 2),
            "with_history_cpu_s": round(settled_cpu, 2),
            "commits": commits,
            "history_error": committer.last_error if committer is not None else None,
        }


def run(size: int, seed: int, work_dir: Path | None) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix=f"somnid-upkeep-{size}-", dir=work_dir))
    try:
        entries = decayed_yesterday(generate_entries(size, seed))
        write_store(work / "data", entries)
        shutil.copytree(work / "data", work / "floor")
        model_dir = install_default_model(MODEL_CACHE)
        print(f"{size}: the floor (atomic rewrites of a copy)", file=sys.stderr, flush=True)
        base = floor(work / "floor")
        print(f"{size}: the pass in the runtime", file=sys.stderr, flush=True)
        result = asyncio.run(upkeep(work / "data", model_dir))
        result["floor"] = base
        result["ratio_to_floor"] = round(result["ms_per_entry"] / base["ms_per_file"], 2)
        return result
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> int:
    exit_cleanly_on_sigterm()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--work-dir", type=Path, default=None)
    options = parser.parse_args(argv)
    result = run(options.size, options.seed, options.work_dir)
    document = {
        "benchmark": "upkeep",
        "updated": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "somnid": somnid_version,
        "machine": {"python": platform.python_version(), "cpus": len(os.sched_getaffinity(0))},
        "size": options.size,
        "seed": options.seed,
        "result": result,
    }
    options.out.parent.mkdir(parents=True, exist_ok=True)
    options.out.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    f = result["floor"]
    print(
        f"upkeep at {options.size}: {result['rewritten']} rewritten "
        f"({result['decayed']} decayed, {result['retired']} of them retired); "
        f"pass {result['pass_s']} s ({result['pass_cpu_s']} s CPU), "
        f"{result['ms_per_entry']} ms an entry; with history {result['with_history_s']} s, "
        f"{result['commits']} commits; floor {f['ms_per_file']} ms a file "
        f"({result['ratio_to_floor']}x)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
