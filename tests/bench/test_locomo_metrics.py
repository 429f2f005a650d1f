"""The LoCoMo benchmark's loader, BM25 baseline and metrics, against values worked by hand."""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from bench._locomo import (
    BM25,
    STOP_WORDS,
    EvidenceNotes,
    aggregate,
    aggregate_hints,
    entry_name,
    groups_of,
    load_conversations,
    normalise_evidence,
    parse_session_date,
    percentiles,
    score_ranking,
    stored_name,
    tokenize,
)

# --- metrics -----------------------------------------------------------------------------


def test_single_evidence_found_at_rank_three() -> None:
    scores = score_ranking(["a", "b", "e", "c"], ["e"])
    assert scores["r@1"] == 0.0
    assert scores["r@5"] == scores["r@10"] == scores["r@20"] == 1.0
    assert scores["hit@1"] == 0.0
    assert scores["hit@5"] == 1.0
    assert scores["ndcg@10"] == pytest.approx(1 / math.log2(4))  # 0.5
    assert scores["mrr"] == pytest.approx(1 / 3)


def test_recall_is_the_share_of_evidence_found() -> None:
    # Evidence x (rank 2), y (rank 7), z (missing): r@5 = 1/3, r@10 = 2/3.
    ranked = ["a", "x", "b", "c", "d", "e", "y", "f", "g", "h"]
    scores = score_ranking(ranked, ["x", "y", "z"])
    assert scores["r@1"] == 0.0
    assert scores["r@5"] == pytest.approx(1 / 3)
    assert scores["r@10"] == pytest.approx(2 / 3)
    assert scores["hit@5"] == 1.0
    dcg = 1 / math.log2(3) + 1 / math.log2(8)
    ideal = 1 + 1 / math.log2(3) + 1 / math.log2(4)
    assert scores["ndcg@10"] == pytest.approx(dcg / ideal)
    assert scores["ndcg@10"] == pytest.approx(0.96426 / 2.13093, abs=1e-5)  # 0.4525
    assert scores["mrr"] == pytest.approx(0.5)


def test_perfect_ranking_and_the_ideal_cut_at_ten() -> None:
    assert score_ranking(["x", "y", "a"], ["y", "x"])["ndcg@10"] == pytest.approx(1.0)
    # Twelve evidence items, ten of them in the top ten: the ideal DCG is over ten ranks.
    evidence = [f"e{i}" for i in range(12)]
    scores = score_ranking(evidence[:10], evidence)
    assert scores["ndcg@10"] == pytest.approx(1.0)
    assert scores["r@10"] == pytest.approx(10 / 12)


def test_nothing_found() -> None:
    scores = score_ranking(["a", "b"], ["x"])
    assert all(value == 0.0 for value in scores.values())
    assert score_ranking([], ["x"])["mrr"] == 0.0


def test_a_repeated_memory_gains_once_and_ranks_stop_at_twenty() -> None:
    scores = score_ranking(["x", "x", "y"], ["x", "y"])
    assert scores["r@5"] == 1.0
    ideal = 1 + 1 / math.log2(3)
    assert scores["ndcg@10"] == pytest.approx((1 + 1 / math.log2(4)) / ideal)
    late = [f"n{i}" for i in range(20)] + ["x"]
    assert score_ranking(late, ["x"])["r@20"] == 0.0
    assert score_ranking([*late[:19], "x"], ["x"])["mrr"] == pytest.approx(1 / 20)


def test_a_question_without_evidence_is_refused() -> None:
    with pytest.raises(ValueError, match="without evidence"):
        score_ranking(["a"], [])


def test_aggregation_per_category_and_pooled() -> None:
    def scored(r10: float) -> dict[str, float]:
        return {**score_ranking(["z"], ["x"]), "r@10": r10}

    rows = [(4, scored(1.0)), (4, scored(0.0)), (1, scored(0.5)), (5, scored(1.0))]
    table = aggregate(rows)
    assert list(table) == ["single-hop", "multi-hop", "adversarial", "all-but-adversarial", "all"]
    assert table["single-hop"]["n"] == 2
    assert table["single-hop"]["r@10"] == pytest.approx(0.5)
    assert table["multi-hop"]["r@10"] == pytest.approx(0.5)
    assert table["adversarial"]["r@10"] == pytest.approx(1.0)
    assert table["all-but-adversarial"]["n"] == 3
    assert table["all-but-adversarial"]["r@10"] == pytest.approx(1.5 / 3)
    assert table["all"]["n"] == 4
    assert table["all"]["r@10"] == pytest.approx(2.5 / 4)
    assert groups_of(2) == ("temporal", "all-but-adversarial", "all")
    assert groups_of(5) == ("adversarial", "all")


def test_hint_aggregation() -> None:
    rows = [(4, True, True), (4, True, False), (4, False, False), (5, False, False)]
    table = aggregate_hints(rows)
    assert table["single-hop"] == {
        "n": 3,
        "fired": 2,
        "with_evidence": 1,
        "fire_rate": pytest.approx(2 / 3),
        "precision": pytest.approx(0.5),
    }
    assert table["adversarial"]["precision"] is None
    assert table["all"]["fire_rate"] == pytest.approx(0.5)


def test_percentiles_in_milliseconds() -> None:
    stats = percentiles([0.001, 0.002, 0.003, 0.004, 0.100])
    assert stats["p50_ms"] == pytest.approx(3.0)
    assert stats["p95_ms"] == pytest.approx(4.0 + 0.8 * 96.0)  # linear between 4 and 100
    assert percentiles([])["p50_ms"] is None


# --- BM25 --------------------------------------------------------------------------------


def test_tokenizer_keeps_apostrophes_drops_stop_words_and_splits_cjk() -> None:
    assert len(STOP_WORDS) == 71
    assert tokenize("I'm sure Caroline's dog it’s Ran 5K") == [
        "sure",
        "caroline's",
        "dog",
        "ran",
        "5k",
    ]
    assert tokenize("记忆力") == ["记", "忆", "力", "记忆", "忆力"]


def test_bm25_scores_by_hand() -> None:
    docs = ["apple banana", "apple apple cherry", "durian"]
    bm25 = BM25(docs)
    # N = 3, lengths 2, 3, 1 (average 2); "cherry": df 1, idf = ln(1 + 2.5 / 1.5) = 0.98083.
    idf = math.log(1 + 2.5 / 1.5)
    norm_1 = 1.2 * (1 - 0.75 + 0.75 * 3 / 2)  # 1.65
    expected = idf * 1 * 2.2 / (1 + norm_1)  # 0.81427
    assert bm25.scores("cherry")[1] == pytest.approx(expected)
    assert bm25.scores("cherry")[1] == pytest.approx(0.81427, abs=1e-5)
    # A repeated query term counts once.
    assert bm25.scores("cherry cherry")[1] == pytest.approx(expected)
    # "apple": df 2, idf = ln(1 + 1.5 / 2.5); doc 0 tf 1, norm 1.2 -> 1.0 * idf;
    # doc 1 tf 2, norm 1.65 -> 4.4 / 3.65 * idf, so doc 1 leads.
    apple = bm25.scores("apple")
    assert apple[0] == pytest.approx(math.log(1.6))
    assert apple[1] == pytest.approx(4.4 / 3.65 * math.log(1.6))
    assert bm25.rank("apple") == [1, 0, 2]
    assert bm25.rank("nothing at all") == [0, 1, 2]  # ties keep stored order
    assert bm25.rank("durian", limit=1) == [2]


def test_bm25_prefers_the_doc_with_more_matching_terms() -> None:
    bm25 = BM25(["the cat sat", "a cat and a hat", "hat shop"])
    assert bm25.rank("cat hat")[0] == 1


# --- the loader --------------------------------------------------------------------------


def _sample() -> dict[str, Any]:
    return {
        "sample_id": "conv-x",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bo",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "Hi Bo!"},
                {
                    "speaker": "Bo",
                    "dia_id": "D1:2",
                    "text": "Look at this.",
                    "img_url": ["https://example.invalid/x.jpg"],
                    "blip_caption": "a photo of a red kite",
                },
            ],
            "session_2_date_time": "9:05 am on 1 June, 2023",
            "session_2": [{"speaker": "Ann", "dia_id": "D2:1", "text": "I flew it."}],
            "session_3_date_time": "10:00 am on 2 July, 2023",  # a date with no session
        },
        "qa": [
            {"question": "q0", "answer": "x", "evidence": ["D1:2"], "category": 4},
            {"question": "q1", "answer": "x", "evidence": ["D1:1; D2:1"], "category": 1},
            {
                "question": "q2",
                "answer": "x",
                "evidence": ["D:2:01", "D1:2", "D1:02"],
                "category": 2,
            },
            {"question": "q3", "adversarial_answer": "x", "evidence": ["D", "D9:9"], "category": 5},
            {"question": "q4", "answer": "x", "evidence": [], "category": 3},
        ],
        "observation": {},
    }


def test_loader_builds_turns_and_cleans_evidence(tmp_path: Path) -> None:
    path = tmp_path / "mini.json"
    path.write_text(json.dumps([_sample()]), encoding="utf-8")
    notes = EvidenceNotes()
    [conv] = load_conversations(path, notes)

    assert conv.sample_id == "conv-x"
    assert conv.speakers == ("Ann", "Bo")
    assert [turn.name for turn in conv.turns] == ["d1-1", "d1-2", "d2-1"]
    photo = conv.turns[1]
    assert photo.when == dt.datetime(2023, 5, 8, 13, 56, tzinfo=dt.UTC)
    assert photo.body == "Bo: Look at this. [shares a photo: a photo of a red kite]"
    assert photo.description == "Bo on 8 May 2023"
    assert conv.turns[2].body == "Ann: I flew it."
    assert conv.turns[2].when == dt.datetime(2023, 6, 1, 9, 5, tzinfo=dt.UTC)

    assert [(q.index, q.group, q.evidence) for q in conv.questions] == [
        (0, "single-hop", ("d1-2",)),
        (1, "multi-hop", ("d1-1", "d2-1")),
        (2, "temporal", ("d2-1", "d1-2")),
    ]
    assert notes.questions == 5
    assert notes.questions_scored == 3
    assert notes.skipped_no_evidence == ["conv-x#q3", "conv-x#q4"]
    assert notes.multi_id_strings == ["conv-x: D1:1; D2:1"]
    assert notes.rewritten == ["conv-x: D:2:01 -> D2:1", "conv-x: D1:02 -> D1:2"]
    assert notes.duplicates_dropped == 1
    assert notes.malformed_dropped == ["conv-x: D"]
    assert notes.missing_dropped == ["conv-x: D9:9"]


@pytest.mark.parametrize(
    ("raw", "parts"),
    [
        ("D8:6; D9:17", [("D8:6", "D8:6"), ("D9:17", "D9:17")]),
        ("D9:1 D4:4 D4:6", [("D9:1", "D9:1"), ("D4:4", "D4:4"), ("D4:6", "D4:6")]),
        ("D:11:26", [("D:11:26", "D11:26")]),
        ("D30:05", [("D30:05", "D30:5")]),
        ("D", [("D", None)]),
        ("", []),
    ],
)
def test_evidence_normalisation(raw: str, parts: list[tuple[str, str | None]]) -> None:
    assert normalise_evidence(raw) == parts


def test_turns_are_stored_under_names_a_question_cannot_match() -> None:
    """The day in "on 9 July" matched every 9th turn while turns were stored as d<s>-<t>
    (names are keywords at weight 3): a stored name holds no number of its dialog id."""
    names = {stored_name(sample, f"D{s}:{t}") for sample in ("conv-26", "conv-30")
             for s in range(1, 20) for t in range(1, 40)}  # fmt: skip
    assert len(names) == 2 * 19 * 39  # distinct across turns and conversations
    assert all(re.fullmatch(r"t[0-9a-f]{12}", name) for name in names)
    assert stored_name("conv-26", "D1:3") == stored_name("conv-26", "D1:3")  # every run
    assert stored_name("conv-26", "D1:3") != entry_name("D1:3")


def test_names_and_dates() -> None:
    assert entry_name("D1:3") == "d1-3"
    assert entry_name("D12:05") == "d12-5"
    with pytest.raises(ValueError, match="dialog id"):
        entry_name("D:1:3")
    assert parse_session_date("12:48 am on 1 February, 2023") == dt.datetime(
        2023, 2, 1, 0, 48, tzinfo=dt.UTC
    )
    assert parse_session_date("12:09 pm on 1 February 2023").hour == 12
    with pytest.raises(ValueError, match="session date"):
        parse_session_date("yesterday")
