"""The benchmark report: charts and the figures tables of ``bench/README.md``, from the JSON.

Reads what the benchmarks wrote to ``bench/results/`` (``locomo_retrieval.json``,
``latency.json``; either may be missing) and

* renders PNG charts into ``bench/charts/``: latency against store size, LoCoMo recall@10 by
  category and overall, somnid beside its baselines (BM25 for recall; the embedding model
  alone, measured in the same run, for latency and index build);
* rewrites every block of ``bench/README.md`` between ``<!-- report:NAME -->`` and
  ``<!-- /report:NAME -->``, so the figures there never drift from the results.

The same JSON gives the same PNG bytes: fixed sizes, dpi and font, no software or date in
the metadata. Run from the repo root after a benchmark::

    .venv/bin/python bench/report.py            # charts and README tables
    .venv/bin/python bench/report.py --check    # exit 1 if the README tables are stale
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # matplotlib is imported only when a chart is drawn
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.typing import RcKeyType

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results"
CHARTS = REPO / "bench" / "charts"
README = REPO / "bench" / "README.md"
LOCOMO_JSON = "locomo_retrieval.json"
LATENCY_JSON = "latency.json"
VARIANTS_JSON = "recall_variants.json"
ZH_JSON = "zh_assistant.json"
DREAM_JSON = "dream_quality.json"
BACKENDS_JSON = "latency_backends.json"

# LoCoMo's categories in the reference tables' order, then the pooled groups.
CATEGORIES = ("single-hop", "multi-hop", "temporal", "open-domain", "adversarial")
GROUPS = (*CATEGORIES, "all-but-adversarial", "all")
MB = 1024 * 1024

Doc = Mapping[str, Any]


def load(results: Path) -> dict[str, Doc | None]:
    """The benchmarks' JSON documents by name (None where a benchmark has not run)."""
    docs: dict[str, Doc | None] = {}
    for key, name in (
        ("locomo", LOCOMO_JSON),
        ("latency", LATENCY_JSON),
        ("variants", VARIANTS_JSON),
        ("zh", ZH_JSON),
        ("dream", DREAM_JSON),
        ("backends", BACKENDS_JSON),
    ):
        path = results / name
        docs[key] = json.loads(path.read_text(encoding="utf-8")) if path.exists() else None
    return docs


def get(doc: Any, *path: str) -> Any:
    """``doc[path[0]][path[1]]…``, or None as soon as a key is missing."""
    for key in path:
        if not isinstance(doc, Mapping) or key not in doc:
            return None
        doc = doc[key]
    return doc


def num(value: Any, digits: int = 1, scale: float = 1.0) -> str:
    if not isinstance(value, int | float) or isinstance(value, bool):
        return "—"
    return f"{value * scale:,.{digits}f}"


def size_label(size: int) -> str:
    return f"{size // 1000:,}k" if size >= 1000 and size % 1000 == 0 else f"{size:,}"


def table(head: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


# ----------------------------------------------------------------------------- LoCoMo tables


def locomo_tables(doc: Doc | None) -> dict[str, str]:
    if doc is None:
        missing = "_No result yet: run `bench/locomo_retrieval.py`._"
        return {"locomo-overall": missing, "locomo-categories": missing, "locomo-hints": missing}
    somnid, bm25 = get(doc, "results", "somnid") or {}, get(doc, "results", "bm25") or {}
    metrics = ("r@1", "r@5", "r@10", "r@20", "ndcg@10", "mrr")
    model = doc.get("model") or doc.get("provider") or "?"
    overall = table(
        ["all questions", "n", "R@1", "R@5", "R@10", "R@20", "nDCG@10", "MRR"],
        [
            [name, num(get(rows, "all", "n"), 0)]
            + [
                f"**{num(get(rows, 'all', m), 3)}**" if m == "r@10" else num(get(rows, "all", m), 3)
                for m in metrics
            ]
            for name, rows in ((f"somnid ({model} + FTS5)", somnid), ("BM25 baseline", bm25))
        ],
    )
    data, timings = doc.get("data") or {}, doc.get("timings") or {}
    overall += (
        f"\n\nRun {doc.get('started', '?')}, somnid {doc.get('somnid_version', '?')},"
        f" {doc.get('machine', '?')}: {len(data.get('conversations') or ())} conversations,"
        f" {num(data.get('turns'), 0)} turns, {num(data.get('questions'), 0)} questions"
        f" (data sha256 `{str(data.get('sha256', '?'))[:12]}`). Whole run"
        f" {num(timings.get('wall_s'), 0)} s; somnid search p50 / p95"
        f" {num(get(timings, 'search', 'p50_ms'))} / {num(get(timings, 'search', 'p95_ms'))} ms"
        f" in-process, BM25 {num(get(timings, 'bm25_search', 'p50_ms'), 2)} /"
        f" {num(get(timings, 'bm25_search', 'p95_ms'), 2)} ms."
    )
    rows = []
    for group in GROUPS:
        if group not in somnid:
            continue
        s, b = somnid[group], bm25.get(group, {})
        delta = (
            f"{s['r@10'] - b['r@10']:+.3f}" if "r@10" in s and "r@10" in b else "—"
        )  # fmt: skip
        cells = [
            num(s.get("r@5"), 3),
            num(s.get("r@10"), 3),
            num(s.get("ndcg@10"), 3),
            num(b.get("r@5"), 3),
            num(b.get("r@10"), 3),
            num(b.get("ndcg@10"), 3),
            delta,
        ]
        label = group.replace("-", " ") if group.startswith("all") else group
        if group == "all":
            cells, label = [f"**{c}**" for c in cells], "**all**"
        rows.append([label, num(s.get("n"), 0), *cells])
    categories = table(
        ["category", "n", "somnid R@5", "R@10", "nDCG@10", "BM25 R@5", "R@10", "nDCG@10", "ΔR@10"],
        rows,
    )
    hints = doc.get("hints") or {}
    decisions = ", ".join(f"{k} {v}" for k, v in (doc.get("hint_decisions") or {}).items())
    hint_rows = [
        [
            group.replace("-", " ") if group.startswith("all") else group,
            num(h.get("n"), 0),
            num(h.get("fired"), 0),
            num(h.get("fire_rate"), 1, 100) + " %",
            num(h.get("with_evidence"), 0),
            num(h.get("precision"), 1, 100) + " %",
        ]
        for group in GROUPS
        if isinstance(h := hints.get(group), Mapping)
    ]
    hint_table = table(
        ["category", "n", "hint fired", "fire rate", "fired with evidence", "precision"],
        hint_rows,
    )
    if decisions:
        hint_table += f"\n\nGate decisions over all questions: {decisions}."
    return {"locomo-overall": overall, "locomo-categories": categories, "locomo-hints": hint_table}


# ----------------------------------------------------------------------------- latency tables


@dataclass(frozen=True, slots=True)
class Cell:
    """One figure of a row: where it sits in a size's result, and the target judged on it."""

    path: tuple[str, ...]
    digits: int = 1
    scale: float = 1.0
    target: tuple[str, ...] = ()  # keys of the targets in a result's verdicts


def _p(route: str, *names: str, targets: Mapping[str, tuple[str, ...]] | None = None) -> list[Cell]:
    targets = targets or {}
    return [Cell(("latency", route, f"{n}_ms"), target=targets.get(n, ())) for n in names]


LATENCY_ROWS: tuple[tuple[str, list[Cell]], ...] = (
    (
        "hint `POST /v1/assoc/thought` p50 / p95 / p99, ms",
        _p("hint", "p50", "p95", "p99", targets={"p50": ("hint_p50",), "p99": ("hint_p99",)}),
    ),
    (
        "recall `POST /v1/recall` p50 / p95 / p99, ms",
        _p("recall", "p50", "p95", "p99", targets={"p95": ("recall_p95", "recall_p95_100k")}),
    ),
    ("embedding the cue alone (same model, same run) p50 / p95, ms",
     _p("model_alone_query", "p50", "p95")),
    ("hint ÷ the cue alone, paired cue by cue (p50s)",
     [Cell(("latency", "hint_vs_cue", "ratio"), 2)]),
    ("index build, entries/s", [Cell(("build", "entries_per_s"))]),
    ("the model alone, texts/s (each text alone, two at a time, as the daemon)",
     [Cell(("build", "model_texts_per_s"))]),
    ("the model in batches of 32 (the daemon's way before 5018add), texts/s",
     [Cell(("build", "model_in_batches_of_32", "texts_per_s"))]),
    (
        "build ÷ model alone: whole build / once every file is indexed",
        [
            Cell(("build", "ratio"), 3, target=("build_ratio",)),
            Cell(("build", "after_sync", "ratio"), 3),
        ],
    ),
    (
        "first start: answering / every vector built, s",
        [Cell(("startup", "serving_s"), 2), Cell(("startup", "vectors_done_s"), 1)],
    ),
    (
        "restart: health 200 / first hybrid recall, s",
        [
            Cell(("restart", "health_s"), 2, target=("restart_health",)),
            Cell(("restart", "hybrid_s"), 2, target=("restart_hybrid",)),
        ],
    ),
    (
        "peak RSS: first daemon / restarted, MB",
        [
            Cell(("first_daemon", "peak_rss_bytes"), 0, 1 / MB),
            Cell(("restart", "peak_rss_bytes"), 0, 1 / MB),
        ],
    ),
    (
        "store files / index, MB",
        [Cell(("store", "file_bytes"), 1, 1 / MB), Cell(("index", "size_bytes_closed"), 1, 1 / MB)],
    ),
    (
        "CPUs used by other processes: build / latency / restart",
        [
            Cell(("build", "foreign_cpus"), 2),
            Cell(("latency", "foreign_cpus"), 2),
            Cell(("restart", "foreign_cpus"), 2),
        ],
    ),
)  # fmt: skip


def _verdicts(result: Doc) -> dict[str, Doc]:
    return {str(v["key"]): v for v in result.get("targets") or () if isinstance(v, Mapping)}


def _bound(label: str) -> str:
    """A target label without what the row already names: "hint p50 ≤ 15 ms" → "p50 ≤ 15 ms"."""
    return re.sub(r"^(hint|recall|index build|restart:)\s+", "", label)


def _cell(result: Doc, cell: Cell) -> str:
    text = num(get(result, *cell.path), cell.digits, cell.scale)
    for key in cell.target:
        verdict = _verdicts(result).get(key)
        if verdict is not None and verdict.get("pass") is False:
            text += " ✗"
    return text


def _target_text(results: Sequence[Doc], cells: Sequence[Cell]) -> str:
    """The targets of a row, each with the sizes it holds at when not all of them."""
    parts: list[str] = []
    for cell in cells:
        for key in cell.target:
            at = [int(r["size"]) for r in results if key in _verdicts(r)]
            if not at:
                continue
            verdict = _verdicts(next(r for r in results if key in _verdicts(r)))[key]
            text = _bound(str(verdict.get("label", key)))
            if len(at) < len(results):
                text += " at " + ", ".join(size_label(size) for size in at)
            parts.append(text)
    return "; ".join(parts) or "–"


def latency_results(doc: Doc | None) -> list[Doc]:
    results = (doc or {}).get("results") or {}
    return [results[key] for key in sorted(results, key=int)]


def latency_tables(doc: Doc | None) -> dict[str, str]:
    results = latency_results(doc)
    if not results:
        missing = "_No result yet: run `bench/latency.py`._"
        return {"latency": missing, "latency-targets": missing}
    head = ["", *(size_label(int(r["size"])) for r in results), "target"]
    rows = [
        [label, *(" / ".join(_cell(r, c) for c in cells) for r in results),
         _target_text(results, cells)]
        for label, cells in LATENCY_ROWS
    ]  # fmt: skip
    runs = sorted(
        {
            (
                str(get(r, "run", "run_at")),
                str(get(r, "run", "commit"))[:7],
                bool(get(r, "run", "dirty")),
                str(get(r, "run", "machine", "cpu")),
                str(get(r, "run", "machine", "cpus")),
            )
            for r in results
        }
    )
    notes = [
        f"Run {at} at commit `{commit}`{' (with local changes)' if dirty else ''}"
        f" on {cpus} × {cpu}."
        for at, commit, dirty, cpu, cpus in runs
    ]
    text = table(head, rows) + "\n\n" + " ".join(notes) + " ✗ marks a missed target."
    target_rows = []
    for result in results:
        for v in result.get("targets") or ():
            passed = {True: "met", False: "**missed**", None: "n/a"}[v.get("pass")]
            if v.get("noisy"):
                passed += " (noisy)"
            target_rows.append(
                [
                    size_label(int(result["size"])),
                    str(v.get("label", v.get("key"))),
                    f"{num(v.get('value'), 3 if v.get('unit') == '×' else 2)} {v.get('unit', '')}",
                    passed,
                    num(v.get("other_cpus"), 2),
                ]
            )
    targets = table(
        ["store", "target", "value", "", "other processes' CPUs meanwhile"], target_rows
    )
    return {"latency": text, "latency-targets": targets}


ZH_KINDS = ("single", "bridge", "date", "count")


def zh_tables(doc: Doc | None) -> dict[str, str]:
    if doc is None:
        return {"zh-assistant": "_No result yet: run `bench/zh_assistant.py`._"}
    results = get(doc, "results") or {}
    rows = [
        [
            f"**{group}**" if group == "all" else group,
            num(get(results, group, "n"), 0),
            *(num(get(results, group, m), 3) for m in ("r@1", "r@3", "r@10", "ndcg@10", "mrr")),
        ]
        for group in (*ZH_KINDS, "all")
        if group in results
    ]
    text = table(["questions", "n", "R@1", "R@3", "R@10", "nDCG@10", "MRR"], rows)
    hints = get(doc, "hints") or {}
    data = get(doc, "data") or {}
    text += (
        f"\n\nRun {doc.get('started', '?')}: {num(data.get('users'), 0)} users,"
        f" {num(data.get('distractors_per_user'), 0)} distractors each,"
        f" {num(data.get('questions'), 0)} questions (seed {data.get('seed', '?')})."
        f" Hints fired for {num(hints.get('fire_rate'), 1, 100)} % of the questions,"
        f" precision {num(hints.get('precision'), 1, 100)} %; search p95"
        f" {num(get(doc, 'timings', 'search', 'p95_ms'), 1)} ms."
    )
    alone = get(doc, "embedding_alone", "all")
    if alone:
        text += (
            " The embedding alone (keyword weight 0, same run): R@1"
            f" {num(alone.get('r@1'), 3)}, R@3 {num(alone.get('r@3'), 3)},"
            f" R@10 {num(alone.get('r@10'), 3)}."
        )
    return {"zh-assistant": text}


def _pair(rate: Any, precision: Any) -> str:
    return f"{num(rate, 1, 100)} % / {num(precision, 1, 100)} %"


def variants_tables(doc: Doc | None) -> dict[str, str]:
    if doc is None:
        return {"recall-variants": "_No result yet: run `bench/recall_variants.py`._"}
    rows = []
    for row in get(doc, "variants") or []:
        lo, zh = row.get("locomo") or {}, row.get("zh") or {}
        cats = lo.get("categories_r@10") or {}
        rows.append(
            [
                f"`{row['variant']}`: {row['what']} ({row.get('code', '?')})",
                num(lo.get("r@10"), 3),
                num(lo.get("ndcg@10"), 3),
                " / ".join(num(cats.get(c), 3) for c in CATEGORIES),
                _pair(lo.get("hint_fire_rate"), lo.get("hint_precision")),
                num(lo.get("search_p95_ms"), 1),
                num(zh.get("r@3"), 3),
                num(zh.get("r@10"), 3),
                num(zh.get("ndcg@10"), 3),
                _pair(zh.get("hint_fire_rate"), zh.get("hint_precision")),
            ]
        )
    head = [
        "variant",
        "LoCoMo R@10",
        "nDCG@10",
        "R@10 single / multi / temporal / open / adversarial",
        "hints fire / precision",
        "search p95 ms",
        "zh R@3",
        "zh R@10",
        "zh nDCG@10",
        "zh hints fire / precision",
    ]
    return {"recall-variants": table(head, rows)}


# What the dream-quality table shows: (label, summary key, digits, the bar as text).
DREAM_ROWS: tuple[tuple[str, str, int, str], ...] = (
    ("logs processed / given", "logs", 0, "all"),
    ("memories written (per turn)", "entries_ratio", 3, "≤ 0.25"),
    ("memory units judged (entries, and lines of person entries)", "units", 0, ""),
    ("about the wrong person (misattributed share)", "misattributed_share", 3, "≤ 0.05"),
    ("vague share", "vague_share", 3, "≤ 0.10"),
    ("LoCoMo observations stated (coverage)", "observation_coverage", 3, "≥ 0.50"),
    ("knowledge entries / updated by a later session", "knowledge", 0, "> 0 / ≥ 1"),
    ("checks' agreement with hand labels (lowest)", "label_agreement", 3, "≥ 0.90"),
    ("grounded share (words in the session)", "grounded_share", 3, "≥ 0.90"),
    ("duplicate pairs (cosine ≥ 0.95)", "duplicate_share", 3, "≤ 0.02"),
    ("example values copied", "example_copies", 0, "0"),
    ("answer in top 5: dream memories", "answer_share", 3, ""),
    ("… their own words only (no quoted evidence)", "answer_share_own_words", 3, "≥ ½ raw"),
    (
        "… the 5 memories plus up to 5 archived lines (one recall)",
        "answer_share_after_dreams",
        3,
        "≥ raw",
    ),
    ("answer in top 5: raw turns (reference)", "raw_answer_share", 3, ""),
    ("answer ratio (memories / raw turns)", "answer_ratio", 3, "≥ 0.80"),
    ("tokens per log given", "tokens_per_log", 0, "≤ 2,000"),
    ("tokens per log processed", "tokens_per_processed_log", 0, ""),
    ("seconds per log", "seconds_per_log", 1, ""),
    ("dreams 'done' with logs untouched", "dreams_done_with_pending_untouched", 0, "0"),
)


def _dream_cell(summary: Any, key: str, digits: int) -> str:
    if key == "logs":
        total, pending = get(summary, "logs_total"), get(summary, "logs_pending")
        if total is None:
            return num(None)
        return f"{int(total) - int(pending or 0)} / {int(total)}"
    if key == "knowledge":
        kinds = get(summary, "per_kind") or {}
        updated = get(summary, "entries_updated_by_later_session")
        if not kinds and updated is None:
            return num(None)
        return f"{num(kinds.get('knowledge', 0), 0)} / {num(updated, 0)}"
    if key == "label_agreement":
        agreement = get(summary, "label_agreement") or {}
        return num(agreement.get("min"), digits) if isinstance(agreement, Mapping) else num(None)
    value = get(summary, key)
    if key == "tokens_per_processed_log" and value is None:  # results from before the key
        per_log, total, pending = (
            get(summary, k) for k in ("tokens_per_log", "logs_total", "logs_pending")
        )
        done = (total or 0) - (pending or 0)
        value = per_log * total / done if per_log is not None and done else None
    return num(value, digits)


def dream_tables(doc: Doc | None) -> dict[str, str]:
    if doc is None:
        return {"dream-quality": "_No result yet: run `bench/dream_quality.py --llm-url URL`._"}
    summary = get(doc, "summary") or {}
    agentic = get(summary, "agentic") or {}
    rows = [
        [label, _dream_cell(summary, key, digits), _dream_cell(agentic, key, digits), bar]
        for label, key, digits, bar in DREAM_ROWS
    ]
    text = table(["", "pipeline", "agentic", "bar"], rows)
    text += (
        f"\n\nModel {summary.get('model', '?')}; {num(summary.get('conversations'), 0)}"
        f" conversations, the first {num(summary.get('sessions_each'), 0)} sessions of each"
        f" ({num(summary.get('turns'), 0)} turns, {num(summary.get('questions'), 0)} questions);"
        f" run {doc.get('when', '?')}, {num(doc.get('wall_s'), 0)} s."
        f" Tokens per log, pipeline / agentic: {num(summary.get('tokens_per_log_vs_agentic'), 3)}."
    )
    agreement = summary.get("label_agreement")
    if isinstance(agreement, Mapping) and agreement.get("labels"):
        text += (
            f" Hand labels: {num(agreement.get('labels'), 0)} memories"
            f" ({num(agreement.get('labelled_misattributed'), 0)} labelled misattributed,"
            f" {num(agreement.get('labelled_vague'), 0)} vague); the checks agree on"
            f" attribution {num(agreement.get('attribution'), 3)}, vagueness"
            f" {num(agreement.get('vague'), 3)}, observations stated"
            f" {num(agreement.get('observations'), 3)}."
        )
    return {"dream-quality": text}


def tables(docs: Mapping[str, Doc | None]) -> dict[str, str]:
    """Every generated block of the README, by marker name."""
    return {
        **locomo_tables(docs.get("locomo")),
        **latency_tables(docs.get("latency")),
        **zh_tables(docs.get("zh")),
        **variants_tables(docs.get("variants")),
        **dream_tables(docs.get("dream")),
        **backend_tables(docs.get("locomo"), docs.get("backends")),
    }


def backend_tables(locomo: Doc | None, latency: Doc | None) -> dict[str, str]:
    """The index backends side by side: LoCoMo quality in one run, latency interleaved."""
    rows: list[list[str]] = []
    for backend, figures in (get(locomo, "backends") or {}).items():
        every = get(figures, "results", "all") or {}
        rows.append(
            [backend, num(every.get("r@10"), 3), num(every.get("ndcg@10"), 3)]
            + [num(get(figures, "search", key), 1) for key in ("p50_ms", "p95_ms")]
        )
    quality = (
        table(["LoCoMo (one run)", "R@10", "nDCG@10", "search p50 ms", "p95 ms"], rows)
        if rows
        else "_No result yet: run `bench/locomo_retrieval.py --backend sqlite,postgres`._"
    )
    rows = []
    for size, result in (get(latency, "results") or {}).items():
        for backend, figures in (get(result, "backends") or {}).items():
            rss = get(figures, "daemon", "peak_rss_bytes")
            rows.append(
                [size_label(int(size)), backend]
                + [num(get(figures, "recall", key), 1) for key in ("p50_ms", "p95_ms")]
                + [num(figures.get("p50_ratio"), 2), num(figures.get("p95_ratio"), 2)]
                + [num(rss, 0, 1 / MB), num(figures.get("build_s"), 0)]
            )
    head = ["entries", "backend", "recall p50 ms", "p95 ms", "× p50", "× p95"]
    speed = (
        table([*head, "peak RSS MB", "build s"], rows)
        if rows
        else "_No result yet: run `bench/latency.py --backend sqlite,postgres`._"
    )
    return {"backends-quality": quality, "backends-latency": speed}


# ----------------------------------------------------------------------------- the README


BLOCK = re.compile(r"(<!-- report:([\w-]+) -->\n)(.*?)(<!-- /report:\2 -->)", re.DOTALL)


def fill(text: str, blocks: Mapping[str, str]) -> str:
    """``text`` with the body of each marked block replaced; every block must be there."""
    seen: set[str] = set()

    def replace(match: re.Match[str]) -> str:
        name = match.group(2)
        if name not in blocks:
            return match.group(0)
        seen.add(name)
        return f"{match.group(1)}{blocks[name]}\n{match.group(4)}"

    filled = BLOCK.sub(replace, text)
    missing = sorted(set(blocks) - seen)
    if missing:
        raise ValueError(f"no <!-- report:NAME --> block for: {', '.join(missing)}")
    return filled


# ----------------------------------------------------------------------------- charts


# Colours that stay apart for colour-blind readers (Okabe–Ito).
SOMNID, BASELINE = "#0072B2", "#E69F00"
HINT, RECALL, MODEL = "#0072B2", "#D55E00", "#009E73"
STYLE: dict[RcKeyType, Any] = {
    "font.family": "DejaVu Sans",  # ships with matplotlib: the same glyphs everywhere
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "legend.frameon": False,
    "savefig.dpi": 100,
    "path.simplify": False,
    "svg.hashsalt": "somnid",
}


def _figure(width: float, height: float) -> Figure:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=100, layout="constrained")


def _save(fig: Figure, path: Path) -> Path:
    """PNG without the software name or a date, so the same figure gives the same bytes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    fig.savefig(tmp, format="png", dpi=100, metadata={"Software": None})
    tmp.replace(path)
    return path


def _bars(
    ax: Axes,
    groups: Sequence[str],
    series: Sequence[tuple[str, str, list[float]]],
    fmt: str = "{:.3f}",
) -> None:
    """Grouped bars, one group per label, each value written above its bar in ``fmt``."""
    width = 0.8 / len(series)
    for i, (label, colour, values) in enumerate(series):
        xs = [g + (i - (len(series) - 1) / 2) * width for g in range(len(groups))]
        bars = ax.bar(xs, values, width * 0.95, label=label, color=colour)
        ax.bar_label(bars, labels=[fmt.format(v) for v in values], padding=2, fontsize=7)
    ax.set_xticks(range(len(groups)), list(groups))
    ax.grid(axis="x", visible=False)


def chart_locomo_categories(doc: Doc, path: Path) -> Path:
    somnid, bm25 = doc["results"]["somnid"], doc["results"]["bm25"]
    groups = [g for g in (*CATEGORIES, "all") if g in somnid and g in bm25]
    fig = _figure(8, 3.6)
    ax = fig.add_subplot()
    _bars(
        ax,
        [f"{g}\n(n={somnid[g]['n']})" for g in groups],
        [
            ("somnid (vectors + keywords, fused)", SOMNID, [somnid[g]["r@10"] for g in groups]),
            ("BM25 baseline, same turns", BASELINE, [bm25[g]["r@10"] for g in groups]),
        ],
    )
    ax.set_ylim(0, 1)
    ax.set_ylabel("recall@10 (share of evidence turns in the top 10)")
    ax.set_title(
        f"LoCoMo dev: recall@10 by question category ({doc['data']['questions']} questions)"
    )
    ax.legend(loc="upper left", ncols=2)
    return _save(fig, path)


def chart_locomo_overall(doc: Doc, path: Path) -> Path:
    somnid, bm25 = doc["results"]["somnid"]["all"], doc["results"]["bm25"]["all"]
    metrics = (("r@5", "recall@5"), ("r@10", "recall@10"), ("ndcg@10", "nDCG@10"))
    fig = _figure(6, 3.4)
    ax = fig.add_subplot()
    _bars(
        ax,
        [label for _key, label in metrics],
        [
            ("somnid", SOMNID, [somnid[key] for key, _label in metrics]),
            ("BM25 baseline", BASELINE, [bm25[key] for key, _label in metrics]),
        ],
    )
    ax.set_ylim(0, 1)
    ax.set_title(f"LoCoMo dev, all {somnid['n']} questions: somnid beside BM25")
    ax.legend(loc="upper left", ncols=2)
    return _save(fig, path)


# (series label, route, percentile, colour, line style, marker) for the latency chart.
LATENCY_LINES = (
    ("hint p50", "hint", "p50", HINT, "-", "o"),
    ("hint p95", "hint", "p95", HINT, "--", "^"),
    ("hint p99", "hint", "p99", HINT, ":", "s"),
    ("recall p50", "recall", "p50", RECALL, "-", "o"),
    ("recall p95", "recall", "p95", RECALL, "--", "^"),
)
# Which line each latency target bounds.
TARGET_LINES = {
    "hint_p50": HINT,
    "hint_p99": HINT,
    "recall_p95": RECALL,
    "recall_p95_100k": RECALL,
}


def chart_latency(doc: Doc, path: Path) -> Path:
    results = latency_results(doc)
    sizes = [int(r["size"]) for r in results]
    fig = _figure(7.5, 4)
    ax = fig.add_subplot()
    for label, route, pct, colour, style, marker in LATENCY_LINES:
        values = [get(r, "latency", route, f"{pct}_ms") for r in results]
        ax.plot(sizes, values, style, color=colour, marker=marker, label=label, linewidth=1.5)
    for key, colour in TARGET_LINES.items():
        at = [(int(r["size"]), _verdicts(r)[key]) for r in results if key in _verdicts(r)]
        if not at:
            continue
        low, high = min(s for s, _ in at) / 1.6, max(s for s, _ in at) * 1.6
        limit = float(at[0][1]["limit"])
        ax.hlines(limit, low, high, colors=colour, linestyles=(0, (6, 3)), linewidth=0.9)
        ax.annotate(  # beside the axes, where no line can cross it
            str(at[0][1]["label"]),
            (1, limit),
            xycoords=("axes fraction", "data"),
            xytext=(4, 0),
            textcoords="offset points",
            va="center",
            fontsize=7,
            color=colour,
        )
    ax.set_xscale("log")
    ax.set_xticks(sizes, [size_label(s) for s in sizes])
    ax.minorticks_off()
    ax.set_xlim(min(sizes) / 2, max(sizes) * 2)
    ax.set_ylim(0, None)
    ax.set_ylim(0, ax.get_ylim()[1] * 1.08)
    ax.set_xlabel("entries in the store (log scale)")
    ax.set_ylabel("ms per request, loopback HTTP")
    ax.set_title("Latency against store size (dashed: the targets)")
    ax.legend(loc="lower right", ncols=2, fontsize=8)
    return _save(fig, path)


def chart_latency_model(doc: Doc, path: Path) -> Path:
    """Somnid beside the embedding model alone, both measured in the same run."""
    results = latency_results(doc)
    labels = [f"{size_label(int(r['size']))} entries" for r in results]
    fig = _figure(8, 3.4)
    left, right = fig.subplots(1, 2, width_ratios=(3, 2))

    def values(*path: str) -> list[float]:
        return [float(get(r, *path) or 0.0) for r in results]

    _bars(
        left,
        labels,
        [
            ("hint, whole request", HINT, values("latency", "hint", "p50_ms")),
            ("recall, whole request", RECALL, values("latency", "recall", "p50_ms")),
            ("embedding the cue alone", MODEL, values("latency", "model_alone_query", "p50_ms")),
        ],
        "{:.1f}",
    )
    left.set_ylim(0, left.get_ylim()[1] * 1.1)
    left.set_ylabel("p50, ms")
    left.set_title("Per request: somnid vs the model alone")
    left.legend(loc="upper left", fontsize=7)
    _bars(
        right,
        labels,
        [
            ("somnid index build, entries/s", SOMNID, values("build", "entries_per_s")),
            ("the model alone, texts/s", MODEL, values("build", "model_texts_per_s")),
        ],
        "{:.0f}",
    )
    right.set_ylim(0, max([*values("build", "model_texts_per_s"), 1.0]) * 1.35)
    right.set_ylabel("per second")
    right.set_title("Index build vs the model alone")
    right.legend(loc="upper left", fontsize=7)
    return _save(fig, path)


CHART_FILES: tuple[tuple[str, str, Callable[[Doc, Path], Path]], ...] = (
    ("latency", "latency.png", chart_latency),
    ("latency", "latency_vs_model.png", chart_latency_model),
    ("locomo", "locomo_categories.png", chart_locomo_categories),
    ("locomo", "locomo_overall.png", chart_locomo_overall),
)


def charts(docs: Mapping[str, Doc | None], out: Path) -> list[Path]:
    """Render every chart whose benchmark has a result; the paths written."""
    from matplotlib import rc_context

    written: list[Path] = []
    with rc_context(STYLE):
        for key, name, draw in CHART_FILES:
            doc = docs.get(key)
            if doc is not None and (key != "latency" or latency_results(doc)):
                written.append(draw(doc, out / name))
    return written


# ----------------------------------------------------------------------------- main


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--results", type=Path, default=RESULTS, help="the benchmarks' JSON")
    parser.add_argument("--charts", type=Path, default=CHARTS, help="where PNGs go")
    parser.add_argument("--readme", type=Path, default=README, help="the README to fill")
    parser.add_argument(
        "--check", action="store_true", help="only tell whether the README tables are current"
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    docs = load(args.results)
    text = args.readme.read_text(encoding="utf-8")
    filled = fill(text, tables(docs))
    if args.check:
        if filled != text:
            print(f"{args.readme} is stale: run bench/report.py", file=sys.stderr)
            return 1
        return 0
    if filled != text:
        args.readme.write_text(filled, encoding="utf-8")
        print(f"updated {args.readme}")
    for path in charts(docs, args.charts):
        print(f"wrote {path} ({path.stat().st_size // 1024} KB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
