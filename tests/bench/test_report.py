"""The benchmark report: tables and charts from the benchmarks' JSON, and the README kept true."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from bench.report import (
    CATEGORIES,
    GROUPS,
    LATENCY_JSON,
    LOCOMO_JSON,
    README,
    RESULTS,
    charts,
    dream_tables,
    fill,
    load,
    main,
    tables,
)

PNG = b"\x89PNG\r\n\x1a\n"


def _metrics(base: float) -> dict[str, float]:
    return {
        "n": 100,
        "r@1": base - 0.3,
        "r@5": base - 0.1,
        "r@10": base,
        "r@20": base + 0.05,
        "ndcg@10": base - 0.15,
        "mrr": base - 0.2,
    }


def locomo_doc() -> dict[str, Any]:
    return {
        "benchmark": "locomo_retrieval",
        "started": "2026-01-02T03:04:05+00:00",
        "somnid_version": "9.9.9",
        "machine": "Linux x86_64, 2 CPUs",
        "model": "tiny-model",
        "data": {"conversations": ["a", "b"], "turns": 40, "questions": 700, "sha256": "ab" * 32},
        "results": {
            "somnid": {g: _metrics(0.7) for g in GROUPS},
            "bm25": {g: _metrics(0.6) for g in GROUPS},
        },
        "hints": {
            g: {"n": 100, "fired": 80, "with_evidence": 40, "fire_rate": 0.8, "precision": 0.5}
            for g in GROUPS
        },
        "hint_decisions": {"fired": 560, "ambiguous": 140},
        "timings": {
            "wall_s": 12.0,
            "search": {"p50_ms": 9.5, "p95_ms": 12.0},
            "bm25_search": {"p50_ms": 0.1, "p95_ms": 0.2},
        },
    }


def _size(size: int, hint_p50: float, hybrid_s: float) -> dict[str, Any]:
    def verdict(key: str, label: str, limit: float, value: float, unit: str) -> dict[str, Any]:
        passed = value >= limit if "≥" in label else value <= limit
        return {
            "key": key,
            "label": label,
            "limit": limit,
            "value": value,
            "unit": unit,
            "pass": passed,
            "other_cpus": 0.0,
            "noisy": False,
        }

    return {
        "size": size,
        "store": {"file_bytes": 3 * 1024 * 1024},
        "index": {"size_bytes_closed": 30 * 1024 * 1024},
        "startup": {"serving_s": 0.7, "vectors_done_s": 90.0},
        "latency": {
            "hint": {"p50_ms": hint_p50, "p95_ms": hint_p50 + 5, "p99_ms": hint_p50 + 9},
            "recall": {"p50_ms": hint_p50 + 1, "p95_ms": hint_p50 + 6, "p99_ms": hint_p50 + 10},
            "model_alone_query": {"p50_ms": 4.5, "p95_ms": 5.5},
            "foreign_cpus": 0.0,
        },
        "build": {
            "entries_per_s": 110.0,
            "model_texts_per_s": 125.0,
            "ratio": 0.88,
            "after_sync": {"ratio": 0.9},
            "foreign_cpus": 0.01,
        },
        "restart": {"health_s": 0.8, "hybrid_s": hybrid_s, "peak_rss_bytes": 500 * 1024 * 1024},
        "first_daemon": {"peak_rss_bytes": 700 * 1024 * 1024},
        "targets": [
            verdict("hint_p50", "hint p50 ≤ 15 ms", 15, hint_p50, "ms"),
            verdict("hint_p99", "hint p99 ≤ 40 ms", 40, hint_p50 + 9, "ms"),
            verdict("build_ratio", "index build ≥ 0.85× model alone", 0.85, 0.88, "×"),
            verdict("restart_hybrid", "restart: hybrid recall ≤ 2 s", 2.0, hybrid_s, "s"),
        ],
        "run": {
            "run_at": "2026-01-02T04:00:00+00:00",
            "commit": "0123456789abcdef",
            "dirty": False,
            "machine": {"cpu": "Test CPU", "cpus": 2},
        },
    }


def latency_doc() -> dict[str, Any]:
    return {
        "benchmark": "latency",
        "results": {"10000": _size(10_000, 16.25, 3.5), "1000": _size(1000, 9.0, 1.5)},
    }


@pytest.fixture
def results(tmp_path: Path) -> Path:
    folder = tmp_path / "results"
    folder.mkdir()
    (folder / LOCOMO_JSON).write_text(json.dumps(locomo_doc()), encoding="utf-8")
    (folder / LATENCY_JSON).write_text(json.dumps(latency_doc()), encoding="utf-8")
    return folder


def _rows(text: str) -> dict[str, list[str]]:
    """A Markdown table's rows by their first cell."""
    rows: dict[str, list[str]] = {}
    for line in text.splitlines():
        if line.startswith("| ") or line.startswith("|  |"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            rows[cells[0]] = cells[1:]
    return rows


def test_locomo_tables(results: Path) -> None:
    blocks = tables(load(results))
    overall = _rows(blocks["locomo-overall"])
    assert overall["somnid (tiny-model + FTS5)"] == [
        "100", "0.400", "0.600", "**0.700**", "0.750", "0.550", "0.500",
    ]  # fmt: skip
    assert overall["BM25 baseline"][3] == "**0.600**"
    assert "2 conversations, 40 turns, 700 questions" in blocks["locomo-overall"]
    categories = _rows(blocks["locomo-categories"])
    assert [c for c in categories if c in CATEGORIES] == list(CATEGORIES)
    assert categories["multi-hop"] == [
        "100", "0.600", "0.700", "0.550", "0.500", "0.600", "0.450", "+0.100",
    ]  # fmt: skip
    assert categories["**all**"][2] == "**0.700**"
    hints = _rows(blocks["locomo-hints"])
    assert hints["temporal"] == ["100", "80", "80.0 %", "40", "50.0 %"]
    assert "fired 560, ambiguous 140" in blocks["locomo-hints"]


def test_latency_tables_in_size_order_with_misses_marked(results: Path) -> None:
    blocks = tables(load(results))
    rows = _rows(blocks["latency"])
    assert rows[""] == ["1k", "10k", "target"]
    hint = rows["hint `POST /v1/assoc/thought` p50 / p95 / p99, ms"]
    assert hint == ["9.0 / 14.0 / 18.0", "16.2 ✗ / 21.2 / 25.2", "p50 ≤ 15 ms; p99 ≤ 40 ms"]
    restart = rows["restart: health 200 / first hybrid recall, s"]
    assert restart == ["0.80 / 1.50", "0.80 / 3.50 ✗", "hybrid recall ≤ 2 s"]
    assert rows["peak RSS: first daemon / restarted, MB"][:2] == ["700 / 500", "700 / 500"]
    assert rows["embedding the cue alone (same model, same run) p50 / p95, ms"][2] == "–"
    assert "commit `0123456`" in blocks["latency"]
    targets = blocks["latency-targets"].splitlines()
    assert "| 10k | hint p50 ≤ 15 ms | 16.25 ms | **missed** | 0.00 |" in targets
    assert "| 1k | index build ≥ 0.85× model alone | 0.880 × | met | 0.00 |" in targets


def test_missing_results_say_how_to_get_them(tmp_path: Path) -> None:
    blocks = tables(load(tmp_path))
    assert "bench/locomo_retrieval.py" in blocks["locomo-categories"]
    assert "bench/latency.py" in blocks["latency"]
    assert "bench/zh_assistant.py" in blocks["zh-assistant"]
    assert "bench/recall_variants.py" in blocks["recall-variants"]
    assert "bench/dream_quality.py" in blocks["dream-quality"]
    assert "--backend sqlite,postgres" in blocks["backends-quality"]
    assert "--backend sqlite,postgres" in blocks["backends-latency"]
    assert charts(load(tmp_path), tmp_path / "charts") == []


def test_fill_replaces_only_the_marked_blocks() -> None:
    text = "intro\n<!-- report:a -->\nold\nlines\n<!-- /report:a -->\nkept\n"
    assert fill(text, {"a": "new"}) == "intro\n<!-- report:a -->\nnew\n<!-- /report:a -->\nkept\n"
    assert fill(fill(text, {"a": "new"}), {"a": "new"}) == fill(text, {"a": "new"})
    with pytest.raises(ValueError, match="b"):
        fill(text, {"a": "new", "b": "other"})


def test_charts_are_small_pngs_and_the_same_json_gives_the_same_bytes(
    results: Path, tmp_path: Path
) -> None:
    first = charts(load(results), tmp_path / "one")
    second = charts(load(results), tmp_path / "two")
    assert [p.name for p in first] == [
        "latency.png", "latency_vs_model.png", "locomo_categories.png", "locomo_overall.png",
    ]  # fmt: skip
    for a, b in zip(first, second, strict=True):
        data = a.read_bytes()
        assert data.startswith(PNG)
        assert len(data) < 150 * 1024
        assert b"Software" not in data and b"atplotlib" not in data
        assert data == b.read_bytes()
    assert not list((tmp_path / "one").glob("*.tmp"))


def test_main_fills_the_readme_and_check_tells_when_stale(results: Path, tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    names = ["locomo-overall", "locomo-categories", "locomo-hints", "latency", "latency-targets"]
    names += ["zh-assistant", "recall-variants", "dream-quality"]
    names += ["backends-quality", "backends-latency"]
    readme.write_text(
        "".join(f"<!-- report:{n} -->\n<!-- /report:{n} -->\n" for n in names), encoding="utf-8"
    )
    args = ["--results", str(results), "--readme", str(readme), "--charts", str(tmp_path / "c")]
    assert main([*args, "--check"]) == 1
    assert main(args) == 0
    assert "16.2 ✗" in readme.read_text(encoding="utf-8")
    assert main([*args, "--check"]) == 0
    assert len(list((tmp_path / "c").glob("*.png"))) == 4


def test_the_committed_report_matches_the_committed_results() -> None:
    """bench/README.md's tables are what bench/report.py makes of bench/results/*.json."""
    text = README.read_text(encoding="utf-8")
    assert fill(text, tables(load(RESULTS))) == text, "stale: run .venv/bin/python bench/report.py"


def test_dream_quality_table() -> None:
    summary = {
        "model": "tiny",
        "conversations": 2,
        "sessions_each": 3,
        "turns": 100,
        "questions": 40,
        "logs_total": 6,
        "logs_pending": 1,
        "entries_ratio": 0.2,
        "grounded_share": 0.95,
        "tokens_per_log": 1500,
        "agentic": {"logs_total": 6, "logs_pending": 6, "tokens_per_log": 3000},
        "tokens_per_log_vs_agentic": 0.5,
        "misattributed_share": 0.04,
        "per_kind": {"episode": 10, "knowledge": 4},
        "entries_updated_by_later_session": 2,
        "label_agreement": {"labels": 60, "attribution": 0.95, "vague": 0.92, "observations": 0.9,
                            "min": 0.9, "labelled_misattributed": 12, "labelled_vague": 8},
    }  # fmt: skip
    text = dream_tables({"summary": summary, "when": "now", "wall_s": 60})["dream-quality"]
    assert "| about the wrong person (misattributed share) | 0.040 | — | ≤ 0.05 |" in text
    assert "| knowledge entries / updated by a later session | 4 / 2 | — | > 0 / ≥ 1 |" in text
    assert "| checks' agreement with hand labels (lowest) | 0.900 | — | ≥ 0.90 |" in text
    assert "Hand labels: 60 memories (12 labelled misattributed, 8 vague)" in text
    assert "| logs processed / given | 5 / 6 | 0 / 6 | all |" in text
    assert "| grounded share (words in the session) | 0.950 | — | ≥ 0.90 |" in text
    assert "| tokens per log processed | 1,800 | — |" in text
    assert "Tokens per log, pipeline / agentic: 0.500." in text
