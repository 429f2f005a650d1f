"""What a LoCoMo retrieval run measured (per question, per conversation) and how it is
reported: the JSON written to ``bench/results/`` and the table printed. Shared with the
Chinese assistant benchmark, which reports the same way."""

from __future__ import annotations

import datetime as dt
import hashlib
import importlib.metadata
import json
import os
import platform
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench._locomo import (
    DEPTH,
    GROUPS,
    EvidenceNotes,
    Question,
    aggregate,
    aggregate_hints,
    percentiles,
)
from somnid import __version__ as somnid_version
from somnid.config import Settings

REPO = Path(__file__).resolve().parent.parent


@dataclass(slots=True)
class QuestionResult:
    sample_id: str
    question: Question
    somnid: dict[str, float]
    bm25: dict[str, float]
    somnid_ranked: list[str]
    bm25_ranked: list[str]
    hint_reason: str  # the gate's decision: fired | below | ambiguous | silent | ...
    hint_items: list[str]
    top_scores: list[float] = field(default_factory=list)  # the first three, for calibration

    @property
    def hint_fired(self) -> bool:
        return bool(self.hint_items)

    @property
    def hint_holds_evidence(self) -> bool:
        return bool(set(self.hint_items) & set(self.question.evidence))


@dataclass(slots=True)
class ConversationRun:
    sample_id: str
    turns: int
    results: list[QuestionResult] = field(default_factory=list)
    open_s: float = 0.0
    ingest_s: float = 0.0
    index_s: float = 0.0
    close_s: float = 0.0
    search_s: list[float] = field(default_factory=list)
    hint_s: list[float] = field(default_factory=list)
    bm25_index_s: float = 0.0
    bm25_search_s: list[float] = field(default_factory=list)
    status: dict[str, Any] = field(default_factory=dict)
    gate_disagreements: int = 0
    notes: list[str] = field(default_factory=list)
    turn_names: dict[str, str] = field(default_factory=dict)  # stored name -> ``d1-3``


def build_report(
    runs: Sequence[ConversationRun],
    *,
    notes: EvidenceNotes,
    data_path: Path,
    provider: str,
    model_dir: Path | None,
    limit_questions: int | None,
    settings: Settings,
    wall_s: float,
) -> dict[str, Any]:
    results = [r for run in runs for r in run.results]
    hint_rows = [(r.question.category, r.hint_fired, r.hint_holds_evidence) for r in results]
    all_search = [s for run in runs for s in run.search_s]
    turns = sum(run.turns for run in runs)
    ingest = sum(run.ingest_s for run in runs)
    index = sum(run.index_s for run in runs)
    return {
        "benchmark": "locomo_retrieval",
        "started": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "somnid_version": somnid_version,
        "python": platform.python_version(),
        "machine": f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs",
        "provider": provider,
        "model": _model_name(model_dir) if provider == "local" else None,
        "model_build": model_build(model_dir) if provider == "local" else None,
        "data": {
            "file": display_path(data_path),
            "sha256": hashlib.sha256(data_path.read_bytes()).hexdigest(),
            "conversations": [run.sample_id for run in runs],
            "turns": turns,
            "questions": len(results),
            "limit_questions_per_conversation": limit_questions,
            "evidence_cleaning": notes.as_dict(),
        },
        "method": {
            "memory": "one episode per turn, under an opaque name (t + 12 hex digits of"
            " sha256('<sample>/<dialog id>'), scored as d<session>-<turn>);"
            " body '<speaker>: <text>' + ' [shares a photo: <caption>]';"
            " description '<speaker> on <d Month YYYY>';"
            " fields when=<session date-time>, speaker",
            "query": f"the raw question; recall.search(kinds=(episode,), limit={DEPTH})",
            "asked_at": "the day after the last session (manual clock)",
            "bm25": "Okapi k1 1.2 b 0.75 over description + body, reference tokenizer and"
            " 71-word stop list (eval-and-models.md, Part C)",
            "metrics": "ranks read over the top 20; r@k = share of evidence turns in the top k;"
            " ndcg@10 binary gains, ideal over min(|evidence|, 10); mrr over the top 20",
            "settings": settings_used(settings),
        },
        "results": {
            "somnid": aggregate((r.question.category, r.somnid) for r in results),
            "bm25": aggregate((r.question.category, r.bm25) for r in results),
        },
        "hints": aggregate_hints(hint_rows),
        "hint_decisions": dict(Counter(r.hint_reason for r in results).most_common()),
        "hint_gate_disagreements": sum(run.gate_disagreements for run in runs),
        "index": [{"sample_id": run.sample_id, **run.status} for run in runs],
        "notes": sorted({note for run in runs for note in run.notes}),
        "timings": {
            "wall_s": wall_s,
            "open_s": sum(run.open_s for run in runs),
            "ingest_s": ingest,
            "ingest_ms_per_turn": 1000.0 * ingest / turns if turns else None,
            "index_wait_s": index,
            "ingest_and_index_ms_per_turn": 1000.0 * (ingest + index) / turns if turns else None,
            "close_s": sum(run.close_s for run in runs),
            "search": percentiles(all_search),
            "hint": percentiles([s for run in runs for s in run.hint_s]),
            "bm25_index_s": sum(run.bm25_index_s for run in runs),
            "bm25_search": percentiles([s for run in runs for s in run.bm25_search_s]),
        },
        "per_conversation": [
            {
                "sample_id": run.sample_id,
                "turns": run.turns,
                "questions": len(run.results),
                "somnid": _all_row(aggregate((r.question.category, r.somnid) for r in run.results)),
                "bm25": _all_row(aggregate((r.question.category, r.bm25) for r in run.results)),
                "open_s": run.open_s,
                "ingest_s": run.ingest_s,
                "index_wait_s": run.index_s,
                "search": percentiles(run.search_s),
            }
            for run in runs
        ],
        # Per question: evidence names and the rank (1-based, top 20) each was found at.
        "questions": [
            {
                "id": f"{r.sample_id}#q{r.question.index}",
                "category": r.question.category,
                "evidence": list(r.question.evidence),
                "somnid_ranks": _ranks(r.somnid_ranked, r.question.evidence),
                "bm25_ranks": _ranks(r.bm25_ranked, r.question.evidence),
                "hint": r.hint_items,
                "top_scores": r.top_scores,
            }
            for r in results
        ],
    }


def settings_used(settings: Settings) -> dict[str, Any]:
    """The settings that shape recall and hints (all defaults but the embedder)."""
    dumped = settings.model_dump(mode="json")
    used: dict[str, Any] = {k: dumped[k] for k in ("recall", "assoc", "embed") if k in dumped}
    used["dream"] = {"enabled": settings.dream.enabled}
    model_dir = settings.embed.model_dir
    if model_dir is not None:
        used["embed"]["model_dir"] = display_path(model_dir)
    return used


def _ranks(ranked: Sequence[str], evidence: Sequence[str]) -> list[int | None]:
    first: dict[str, int] = {}
    for rank, name in enumerate(ranked[:DEPTH], start=1):
        first.setdefault(name, rank)
    return [first.get(name) for name in evidence]


def _all_row(table: dict[str, dict[str, float]]) -> dict[str, float]:
    return table.get("all", {})


def _model_name(model_dir: Path | None) -> str | None:
    if model_dir is None:
        return None
    try:
        config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return model_dir.name
    return str(config.get("name") or model_dir.name)


def model_build(model_dir: Path | None) -> dict[str, str] | None:
    """Which quantised model the figures were measured with: the model is converted on
    install by onnxruntime's quantiser, whose output (so every ranking) moves with its
    version (LoCoMo nDCG@10 0.659 and 0.660 from two installs of the same code)."""
    if model_dir is None:
        return None
    digest = hashlib.sha256()
    try:
        with (model_dir / "model.onnx").open("rb") as file:
            for block in iter(lambda: file.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return None
    return {"sha256": digest.hexdigest(), "onnxruntime": _version_of("onnxruntime")}


def _version_of(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def display_path(path: Path) -> str:
    try:
        return os.path.relpath(path.resolve(), REPO)
    except ValueError:
        return str(path)


def format_report(report: dict[str, Any]) -> str:
    data = report["data"]
    somnid = report["results"]["somnid"]
    bm25 = report["results"]["bm25"]
    engine = f"provider={report['provider']}" + (
        f" ({report['model']})" if report.get("model") else ""
    )
    lines = [
        f"LoCoMo retrieval: {_plural(len(data['conversations']), 'conversation')},"
        f" {data['turns']:,} turns,"
        f" {data['questions']:,} questions; somnid {report['somnid_version']} {engine}",
        "",
        f"{'':22} {'n':>5}   {'somnid R@5':>10} {'R@10':>6} {'nDCG@10':>7}"
        f"   {'BM25 R@5':>8} {'R@10':>6} {'nDCG@10':>7}   {'ΔR@10':>6}",
    ]
    for group in GROUPS:
        if group not in somnid:
            continue
        s, b = somnid[group], bm25[group]
        lines.append(
            f"{group:22} {int(s['n']):>5}"
            f"   {s['r@5']:>10.3f} {s['r@10']:>6.3f} {s['ndcg@10']:>7.3f}"
            f"   {b['r@5']:>8.3f} {b['r@10']:>6.3f} {b['ndcg@10']:>7.3f}"
            f"   {s['r@10'] - b['r@10']:>+6.3f}"
        )
    lines.append("")
    hints = report["hints"]
    decisions = ", ".join(f"{reason} {count}" for reason, count in report["hint_decisions"].items())
    lines.append(f"Hints (each question as a cue, in a fresh session): {decisions}")
    lines.append(f"{'':22} {'n':>5}   {'fired':>6} {'rate':>6}   {'w/ evidence':>11} {'prec.':>6}")
    for group in GROUPS:
        if group in hints:
            h = hints[group]
            precision = "n/a" if h["precision"] is None else f"{h['precision']:.3f}"
            lines.append(
                f"{group:22} {int(h['n']):>5}   {int(h['fired']):>6} {h['fire_rate']:>6.3f}"
                f"   {int(h['with_evidence']):>11} {precision:>6}"
            )
    t = report["timings"]
    lines += [
        "",
        "Time:",
        f"  runtime open {t['open_s']:.1f} s; ingest {t['ingest_s']:.1f} s"
        f" ({_ms(t['ingest_ms_per_turn'])} per turn); wait for index {t['index_wait_s']:.1f} s"
        f" (ingest + index {_ms(t['ingest_and_index_ms_per_turn'])} per turn)",
        f"  somnid search p50 {_ms(t['search']['p50_ms'])}, p95 {_ms(t['search']['p95_ms'])}",
        f"  hint as the daemon takes one (top-3 search, query vector already cached, + gate)"
        f" p50 {_ms(t['hint']['p50_ms'])}, p95 {_ms(t['hint']['p95_ms'])}",
        f"  BM25 index {t['bm25_index_s'] * 1000:.0f} ms; search p50"
        f" {_ms(t['bm25_search']['p50_ms'])}, p95 {_ms(t['bm25_search']['p95_ms'])}",
        f"  whole run {t['wall_s']:.1f} s",
    ]
    ev = data["evidence_cleaning"]
    lines += [
        "",
        f"Evidence cleaning: {ev['questions_scored']} of {ev['questions']} questions scored"
        f" ({len(ev['skipped_no_evidence'])} left with no evidence);"
        f" {len(ev['multi_id_strings'])} multi-id strings split, {len(ev['rewritten'])} ids"
        f" rewritten, {len(ev['malformed_dropped'])} malformed and"
        f" {len(ev['missing_dropped'])} missing ids dropped",
    ]
    lines += [f"Note: {note}" for note in report["notes"]]
    for backend, other in report.get("backends", {}).items():
        every = other["results"]["all"]
        lines.append(
            f"Backend {backend}: R@10 {every['r@10']:.3f}, nDCG@10 {every['ndcg@10']:.3f};"
            f" search p50 {_ms(other['search']['p50_ms'])}, p95 {_ms(other['search']['p95_ms'])}"
        )
    return "\n".join(lines)


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f} ms"


def write_json(report: dict[str, Any], out: Path) -> None:
    """Rounded (4 places) and indented, one line per question, so runs diff well."""
    head = json.dumps(rounded({**report, "questions": []}), indent=1, ensure_ascii=False)
    questions = ",\n  ".join(
        json.dumps(rounded(q), ensure_ascii=False) for q in report["questions"]
    )
    text = head.replace('"questions": []', f'"questions": [\n  {questions}\n ]', 1)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(text + "\n", encoding="utf-8")
    os.replace(tmp, out)


def rounded(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 4)
    if isinstance(value, dict):
        return {key: rounded(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [rounded(item) for item in value]
    return value
