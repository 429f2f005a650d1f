"""The latency benchmark's store generator: deterministic, distinct, multilingual, readable."""

from __future__ import annotations

import collections
import json
from pathlib import Path

import pytest
from bench._stores import (
    MAX_CHARS,
    MIN_CHARS,
    MIN_CUE_CHARS,
    CueSource,
    GeneratedEntry,
    cjk_share,
    embed_text,
    generate_entries,
    parse_entry,
    write_store,
)
from bench.latency import judge, percentiles, write_results

from somnid.memory.kinds import Kind
from somnid.memory.names import check_name
from somnid.store import frontmatter
from somnid.store.layout import Layout

COUNT = 2000


@pytest.fixture(scope="module")
def entries() -> list[GeneratedEntry]:
    return generate_entries(COUNT, seed=7)


def test_same_seed_same_store(entries: list[GeneratedEntry]) -> None:
    again = generate_entries(COUNT, seed=7)
    assert [e.render() for e in again] == [e.render() for e in entries]
    other = generate_entries(200, seed=8)
    assert [e.render() for e in other] != [e.render() for e in entries[:200]]


def test_a_smaller_store_is_a_prefix_of_a_larger_one(entries: list[GeneratedEntry]) -> None:
    assert [e.render() for e in generate_entries(100, seed=7)] == [
        e.render() for e in entries[:100]
    ]


def test_names_and_texts_are_distinct(entries: list[GeneratedEntry]) -> None:
    assert len({(e.kind, e.name) for e in entries}) == COUNT
    assert len({e.name for e in entries}) == COUNT
    assert len({f"{e.description}\n{e.body}" for e in entries}) == COUNT
    assert len({e.body for e in entries}) > 0.99 * COUNT
    for entry in entries[:300]:
        assert check_name(entry.name) == entry.name


def test_lengths_are_realistic(entries: list[GeneratedEntry]) -> None:
    for entry in entries:
        assert MIN_CHARS <= entry.chars <= MAX_CHARS
        assert "\n" not in entry.description
        assert entry.description.strip() and entry.body.strip()
    chars = [e.chars for e in entries]
    assert 80 < sum(chars) / len(chars) < 300
    assert max(chars) > 250 and min(chars) < 80


def test_kinds_and_languages_are_mixed(entries: list[GeneratedEntry]) -> None:
    kinds = collections.Counter(e.kind for e in entries)
    assert abs(kinds[Kind.KNOWLEDGE] / COUNT - 0.5) < 0.05
    assert abs(kinds[Kind.EPISODE] / COUNT - 0.4) < 0.05
    assert abs(kinds[Kind.SKILL] / COUNT - 0.1) < 0.03
    langs = collections.Counter(e.lang for e in entries)
    assert abs(langs["en"] / COUNT - 0.45) < 0.05
    assert abs(langs["zh"] / COUNT - 0.45) < 0.05
    assert abs(langs["mixed"] / COUNT - 0.1) < 0.03
    for entry in entries:
        share = cjk_share(entry.description + entry.body)
        if entry.lang == "en":
            assert share == 0.0
        elif entry.lang == "zh":
            assert share > 0.3  # tool names, versions and some product names stay Latin
        else:
            assert 0.0 < share < 1.0


def test_every_file_parses_as_somnid_reads_it(entries: list[GeneratedEntry]) -> None:
    for entry in entries[:400]:
        doc = frontmatter.parse(entry.render())
        assert doc.meta["name"] == entry.name
        assert doc.meta["description"] == entry.description
        assert doc.body.rstrip("\n") == entry.body
        assert 0.0 < float(doc.meta["score"]) < 1.0
        assert isinstance(doc.meta["stability"], int)
        if entry.kind is Kind.EPISODE:
            assert doc.meta["type"] == "episode"
    parsed = parse_entry(entries[0])
    assert parsed.description == entries[0].description


def test_embed_text_is_what_the_index_embeds(entries: list[GeneratedEntry]) -> None:
    episode = next(e for e in entries if e.kind is Kind.EPISODE)
    assert embed_text(episode) == f"{episode.description}\n{episode.body}"
    knowledge = next(e for e in entries if e.kind is Kind.KNOWLEDGE)
    assert embed_text(knowledge).endswith(f"{knowledge.description}\n{knowledge.body}")


def test_write_store_lays_entries_out_where_somnid_finds_them(tmp_path: Path) -> None:
    few = generate_entries(30, seed=1)
    written = write_store(tmp_path / "data", few)
    assert written.files == 30
    layout = Layout(tmp_path / "data")
    for entry in few:
        path = layout.entry_file(entry.kind, entry.name)
        assert path.read_text(encoding="utf-8") == entry.render()
        assert layout.classify(path) == (entry.kind, entry.name, False)
    assert written.text_bytes == sum(len(e.render().encode()) for e in few)


def test_cues_never_repeat_and_mix_languages() -> None:
    source = CueSource(seed=3)
    cues = source.take(1500)
    texts = [cue.text for cue in cues]
    assert len(set(texts)) == len(texts)
    assert all(len(text) >= MIN_CUE_CHARS for text in texts)
    langs = collections.Counter(cue.lang for cue in cues)
    assert langs["en"] > 500 and langs["zh"] > 500 and langs["mixed"] > 80
    near = sum(cue.near for cue in cues)
    assert 0.4 < near / len(cues) < 0.6
    assert [c.text for c in CueSource(seed=3).take(50)] == texts[:50]


def test_cues_are_not_copies_of_entries(entries: list[GeneratedEntry]) -> None:
    texts = {e.description for e in entries} | {e.body for e in entries}
    sentences = {s for e in entries for s in e.body.replace("。", "。\n").split("\n")}
    for cue in CueSource(seed=0).take(500):
        assert cue.text not in texts and cue.text not in sentences


def test_percentiles_and_judging() -> None:
    figures = percentiles([0.001 * i for i in range(1, 101)])
    assert figures["count"] == 100
    assert figures["p50_ms"] == pytest.approx(50.5)
    assert figures["max_ms"] == pytest.approx(100.0)
    result = {
        "latency": {
            "hint": {"p50_ms": 10.0, "p99_ms": 41.0},
            "recall": {"p95_ms": 120.0},
            "health": {"p95_ms": 25.0},
            "foreign_cpus": 0.0,
        },
        "build": {"ratio": 0.9, "foreign_cpus": 0.1, "model_alone_before": {"foreign_cpus": 0.9}},
        "restart": {"health_s": 1.0, "hybrid_s": None},
    }
    at_10k = {v["key"]: v["pass"] for v in judge(10_000, result)}
    assert at_10k == {
        "hint_p50": True,
        "hint_p99": False,
        "recall_p95": False,
        "health_p95": False,
        "build_ratio": True,
        "restart_health": True,
        "restart_hybrid": None,
    }
    at_100k = {v["key"]: v["pass"] for v in judge(100_000, result)}
    assert at_100k == {"recall_p95_100k": True, "health_p95": False, "build_ratio": True}
    noisy = {v["key"]: v["noisy"] for v in judge(10_000, result)}
    assert noisy["build_ratio"] and not noisy["hint_p50"] and not noisy["restart_health"]


def test_results_of_other_sizes_are_kept_unless_fresh(tmp_path: Path) -> None:
    out = tmp_path / "latency.json"
    write_results(out, {1000: {"size": 1000}}, fresh=False)
    write_results(out, {10_000: {"size": 10_000}}, fresh=False)
    assert list(json.loads(out.read_text())["results"]) == ["1000", "10000"]
    write_results(out, {1000: {"size": 1000, "again": True}}, fresh=False)
    assert json.loads(out.read_text())["results"]["1000"]["again"] is True
    write_results(out, {100_000: {"size": 100_000}}, fresh=True)
    assert list(json.loads(out.read_text())["results"]) == ["100000"]
    assert not list(tmp_path.glob("*.tmp"))
