"""Recall variants, each on its own: the LoCoMo and the Chinese assistant benchmark per variant.

A variant is the default settings with some ``[recall]`` settings changed through the
environment (``SOMNID_RECALL__FUSION=rrf``), run by the same benchmark commands; the summary
of every run goes to ``bench/results/recall_variants.json`` (``bench/report.py`` renders it
into ``bench/README.md``).

    .venv/bin/python bench/recall_variants.py                  # every variant, ~80 min
    .venv/bin/python bench/recall_variants.py --only rrf default
    .venv/bin/python bench/recall_variants.py --collect DIR    # summarise runs already made:
                                                               # DIR/<variant>.json (LoCoMo)
                                                               # and DIR/zh_<variant>.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "bench" / "results" / "recall_variants.json"
CATEGORIES = ("single-hop", "multi-hop", "temporal", "open-domain", "adversarial")

_OFF = {
    "TIME_BOOST": "0",
    "CONTEXT_WEIGHT": "0",
    "QUESTION_PENALTY": "0",
    "TURN_CONTEXT": "0",
    "BRIEF_TURN_PENALTY": "0",
}
# name -> (what it is, the [recall] settings it changes)
VARIANTS: dict[str, tuple[str, dict[str, str]]] = {
    "default": ("the defaults", {}),
    "neighbour03": ("neighbour_spread = 0.3", {"NEIGHBOUR_SPREAD": "0.3"}),
    "off_all": (
        "time, context, turn context, question and brief-turn penalties all off",
        _OFF,
    ),
    "no_time": ("time_boost = 0", {"TIME_BOOST": "0"}),
    "no_context": ("context_weight = 0 (no turn-before text)", {"CONTEXT_WEIGHT": "0"}),
    "no_turn_context": ("turn_context = 0 (no lift from the turns beside)", {"TURN_CONTEXT": "0"}),
    "no_brief": ("brief_turn_penalty = 0", {"BRIEF_TURN_PENALTY": "0"}),
    "no_question": ("question_penalty = 0", {"QUESTION_PENALTY": "0"}),
    "prf03": ("entity bridging on, prf_weight = 0.3", {"PRF_WEIGHT": "0.3"}),
    "mmr08": ("diversity on, mmr_lambda = 0.8", {"MMR_LAMBDA": "0.8"}),
    "rrf": ("fusion = rrf (k 60)", {"FUSION": "rrf"}),
    "calibrated": ("fusion = calibrated (absolute cosine scale)", {"FUSION": "calibrated"}),
    "dense": ("keyword_weight = 0 (the vector side alone)", {"KEYWORD_WEIGHT": "0"}),
}


def env_of(changes: Mapping[str, str]) -> dict[str, str]:
    return {f"SOMNID_RECALL__{key}": value for key, value in changes.items()}


def command(script: str, changes: Mapping[str, str], out: Path) -> list[str]:
    return [sys.executable, str(REPO / "bench" / script), "--out", str(out)]


def shown(script: str, changes: Mapping[str, str]) -> str:
    prefix = " ".join(f"{k}={v}" for k, v in env_of(changes).items())
    return f"{prefix} .venv/bin/python bench/{script}".strip()


def locomo_row(doc: Mapping[str, Any]) -> dict[str, Any]:
    somnid = doc["results"]["somnid"]
    hints = doc["hints"]["all"]
    return {
        "r@10": somnid["all"]["r@10"],
        "ndcg@10": somnid["all"]["ndcg@10"],
        "categories_r@10": {c: somnid[c]["r@10"] for c in CATEGORIES if c in somnid},
        "hint_fire_rate": hints["fire_rate"],
        "hint_precision": hints["precision"],
        "search_p95_ms": doc["timings"]["search"]["p95_ms"],
    }


def zh_row(doc: Mapping[str, Any]) -> dict[str, Any]:
    results = doc["results"]
    return {
        "r@1": results["all"]["r@1"],
        "r@3": results["all"]["r@3"],
        "r@10": results["all"]["r@10"],
        "ndcg@10": results["all"]["ndcg@10"],
        "kinds_r@3": {k: v["r@3"] for k, v in results.items() if k != "all"},
        "hint_fire_rate": doc["hints"].get("fire_rate"),
        "hint_precision": doc["hints"].get("precision"),
        "search_p95_ms": doc["timings"]["search"]["p95_ms"],
    }


def summarise(name: str, locomo: Path, zh: Path) -> dict[str, Any]:
    what, changes = VARIANTS[name]
    row: dict[str, Any] = {"variant": name, "what": what, "settings": env_of(changes)}
    if locomo.exists():
        row["locomo"] = locomo_row(json.loads(locomo.read_text(encoding="utf-8")))
        row["locomo_command"] = shown("locomo_retrieval.py", changes)
    if zh.exists():
        row["zh"] = zh_row(json.loads(zh.read_text(encoding="utf-8")))
        row["zh_command"] = shown("zh_assistant.py", changes)
    return row


def run(names: Sequence[str], folder: Path) -> None:
    for name in names:
        changes = VARIANTS[name][1]
        for script, out in (
            ("locomo_retrieval.py", folder / f"{name}.json"),
            ("zh_assistant.py", folder / f"zh_{name}.json"),
        ):
            print(f"{name}: {script}", file=sys.stderr, flush=True)
            subprocess.run(
                command(script, changes, out),
                env={**os.environ, **env_of(changes)},
                check=True,
                stdout=subprocess.DEVNULL,
            )


def _head() -> str:
    done = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True
    )
    return done.stdout.strip() or "?"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--only", nargs="+", choices=sorted(VARIANTS), help="these variants")
    parser.add_argument("--collect", type=Path, help="summarise the runs in this folder")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--code", help="the commit the runs measured (default: HEAD)")
    parser.add_argument(
        "--append", action="store_true", help="keep the other variants already in --out"
    )
    args = parser.parse_args(argv)
    names = list(args.only or VARIANTS)
    with tempfile.TemporaryDirectory(prefix="somnid-variants-") as tmp:
        folder = args.collect or Path(tmp)
        if args.collect is None:
            run(names, folder)
        rows = [summarise(n, folder / f"{n}.json", folder / f"zh_{n}.json") for n in names]
    code = args.code or _head()
    rows = [row | {"code": code} for row in rows if "locomo" in row or "zh" in row]
    if args.append and args.out.exists():
        kept = json.loads(args.out.read_text(encoding="utf-8"))["variants"]
        new = {row["variant"] for row in rows}
        rows = [row for row in kept if row["variant"] not in new] + rows
        rows.sort(key=lambda row: list(VARIANTS).index(row["variant"]))
    doc = {"benchmark": "recall_variants", "variants": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {len(rows)} variants to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
