"""Chinese personal-assistant retrieval: somnid's real runtime on a generated set.

Each user of ``bench/zh_assistant_data.py`` gets a fresh store holding their own messages and
100 distractors (other users' messages about people and things this user never mentions),
each an episode (``when`` = when it was said, body = the message), written first and then
embedded as one store (so two runs rank alike: ``writing_only``); every question goes
through ``recall.search`` and through the hint gate, asked the day after the last message;
and once more with the keyword half's weight at 0 (the embedding alone, same store and code),
so every run reports fused recall beside the embedding's own (``embedding_alone``).

    .venv/bin/python bench/zh_assistant.py                 # writes bench/results/zh_assistant.json
    .venv/bin/python bench/zh_assistant.py --users 5 --out /tmp/zh.json

Settings come from the environment like the daemon's (``SOMNID_RECALL__FUSION=rrf``), so a
variant is measured by the same command with one variable set.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import datetime as dt
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repo root importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._locomo import DEPTH, aggregate_hints, percentiles, score_ranking
from bench._locomo_report import (
    ConversationRun,
    display_path,
    model_build,
    rounded,
    settings_used,
)
from bench.locomo_retrieval import make_settings, resolve_model_dir, wait_for_index, writing_only
from bench.zh_assistant_data import DISTRACTORS, SEED, USERS, Message, User, build, distractors_for
from somnid.memory.clock import ManualClock
from somnid.memory.kinds import Kind
from somnid.runtime import Runtime

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / "bench" / "results" / "zh_assistant.json"
KINDS = ("single", "bridge", "date", "count")
METRICS = ("r@1", "r@5", "r@10", "ndcg@10", "mrr")


async def run_user(
    user: User, distractors: list[Message], model_dir: Path | None, provider: str
) -> tuple[list[dict[str, Any]], list[float]]:
    messages = sorted([*user.messages, *distractors], key=lambda m: m.when)
    rows: list[dict[str, Any]] = []
    timings: list[float] = []
    with tempfile.TemporaryDirectory(prefix="somnid-zh-") as tmp:
        clock = ManualClock(messages[0].when)
        settings = make_settings(Path(tmp) / "data", provider, model_dir)
        # No git history: its committer writes behind, into a folder about to be removed.
        settings.history.enabled = False
        async with Runtime.open(writing_only(settings), clock=clock) as rt:
            for message in messages:
                clock.set(message.when)
                await rt.memories.create(
                    Kind.EPISODE,
                    message.key,
                    description=message.text,
                    body=message.text,
                    fields={"when": message.when.isoformat()},
                )
        async with Runtime.open(settings, clock=clock) as rt:  # embedded now, as one store
            await wait_for_index(rt, ConversationRun(user.key, len(messages)))
            status = rt.index.status()
            if status.entries != len(messages) or (
                provider == "local" and status.vectors < len(messages)
            ):
                raise RuntimeError(f"{user.key}: index not ready: {status}")
            clock.set(max(m.when for m in user.messages) + dt.timedelta(days=1))
            # The engine's weights, swapped for one search: what
            # SOMNID_RECALL__KEYWORD_WEIGHT=0 runs, without a second store.
            engine = rt.recall._engine
            fused = engine.weights
            for question in user.questions:
                started = time.perf_counter()
                hits = await rt.recall.search(question.text, kinds=(Kind.EPISODE,), limit=DEPTH)
                timings.append(time.perf_counter() - started)
                ranked = [hit.name for hit in hits]
                engine.weights = dataclasses.replace(fused, keyword=0.0)
                try:
                    alone = await rt.recall.search(
                        question.text, kinds=(Kind.EPISODE,), limit=DEPTH
                    )
                finally:
                    engine.weights = fused
                dense = [hit.name for hit in alone]
                decision = await rt.assoc.thought(f"{question.key}", question.text)
                fired = [hit.name for hit in decision.items]
                rows.append(
                    {
                        "id": question.key,
                        "kind": question.kind,
                        "evidence": list(question.evidence),
                        "scores": score_ranking(ranked, question.evidence),
                        "ranks": [
                            ranked.index(e) + 1 if e in ranked else None for e in question.evidence
                        ],
                        "ranks_embedding": [
                            dense.index(e) + 1 if e in dense else None for e in question.evidence
                        ],
                        "hint": fired,
                        "hint_holds": bool(set(fired) & set(question.evidence)),
                    }
                )
    return rows, timings


def summarise_alone(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """R@k of the embedding alone, by kind of question (``ranks_embedding``)."""
    table: dict[str, dict[str, float]] = {}
    for group in ("all", *KINDS):
        members = [r for r in rows if group in ("all", r["kind"])]
        if members:
            table[group] = {"n": len(members)} | {
                f"r@{k}": sum(_recall_at(r, k, "ranks_embedding") for r in members) / len(members)
                for k in (1, 3, 10)
            }
    return table


def summarise(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    groups: dict[str, list[dict[str, Any]]] = {"all": rows}
    for kind in KINDS:
        groups[kind] = [r for r in rows if r["kind"] == kind]
    table: dict[str, dict[str, float]] = {}
    for group, members in groups.items():
        if not members:
            continue
        scores = [r["scores"] for r in members]
        table[group] = {"n": len(members)} | {
            m: sum(s[m] for s in scores) / len(scores)
            for m in ("r@1", "r@5", "r@10", "ndcg@10", "mrr")
        }
        table[group]["r@3"] = sum(_recall_at(r, 3) for r in members) / len(members)
    return table


def _recall_at(row: dict[str, Any], k: int, field: str = "ranks") -> float:
    ranks = [rank for rank in row[field] if rank is not None and rank <= k]
    return len(ranks) / len(row["evidence"])


async def run(args: argparse.Namespace) -> dict[str, Any]:
    wall = time.perf_counter()
    users = build(SEED, args.users)
    model_dir = resolve_model_dir(args.provider, args.model_dir)
    rows: list[dict[str, Any]] = []
    timings: list[float] = []
    for user in users:
        found, spent = await run_user(
            user, distractors_for(user, users, DISTRACTORS), model_dir, args.provider
        )
        rows += found
        timings += spent
    settings = make_settings(Path(tempfile.gettempdir()), args.provider, model_dir)
    hints = aggregate_hints((0, bool(r["hint"]), r["hint_holds"]) for r in rows)
    return {
        "benchmark": "zh_assistant",
        "started": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "data": {
            "generator": "bench/zh_assistant_data.py",
            "seed": SEED,
            "users": len(users),
            "distractors_per_user": DISTRACTORS,
            "questions": len(rows),
        },
        "provider": args.provider,
        "model_build": model_build(model_dir) if args.provider == "local" else None,
        "settings": settings_used(settings),
        "results": summarise(rows),
        "embedding_alone": summarise_alone(rows) if args.provider == "local" else {},
        "hints": hints.get("all", {}),
        "timings": {"wall_s": time.perf_counter() - wall, "search": percentiles(timings)},
        "questions": rows,
    }


def format_report(report: dict[str, Any]) -> str:
    lines = [
        f"zh assistant: {report['data']['users']} users, {report['data']['questions']} questions",
        f"{'':8} {'n':>4} {'R@1':>6} {'R@3':>6} {'R@10':>6} {'nDCG@10':>7}",
    ]
    for group, row in report["results"].items():
        lines.append(
            f"{group:8} {int(row['n']):>4} {row['r@1']:>6.3f} {row['r@3']:>6.3f}"
            f" {row['r@10']:>6.3f} {row['ndcg@10']:>7.3f}"
        )
    alone = report.get("embedding_alone", {}).get("all")
    if alone:
        lines.append(
            f"embedding alone: R@1 {alone['r@1']:.3f}, R@3 {alone['r@3']:.3f},"
            f" R@10 {alone['r@10']:.3f}"
        )
    hints = report["hints"]
    if hints:
        precision = hints["precision"]
        lines.append(
            f"hints fired {hints['fired']} of {hints['n']} (rate {hints['fire_rate']:.3f}),"
            f" precision {'n/a' if precision is None else f'{precision:.3f}'}"
        )
    search = report["timings"]["search"]
    lines.append(f"search p50 {search['p50_ms']:.1f} ms, p95 {search['p95_ms']:.1f} ms")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--users", type=int, default=USERS)
    parser.add_argument("--provider", choices=("local", "off"), default="local")
    parser.add_argument("--model-dir", type=Path)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    report = asyncio.run(run(args))
    print(format_report(report))
    import json

    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(rounded(report), ensure_ascii=False, indent=1) + "\n", encoding="utf-8"
    )
    print(f"wrote {display_path(args.out)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
