"""The backfill hands the model texts of like length side by side: by the model's own token
counts where the embedder gives them (characters put Chinese and English far apart)."""

from __future__ import annotations

from somnid.embed.base import HashEmbedder, MeasuresPassages
from somnid.embed.onnx import OnnxEmbedder
from somnid.recall.embedding import by_length

TEXTS = [
    ("a", "我去年春天搬到了柏林，开始了新工作。"),  # few characters, many tokens each
    ("b", "The meeting with the landlord was postponed to Friday afternoon again."),
    ("c", "ok"),
    ("d", "他领养了一只叫麦克斯的金毛幼犬，每天早上带它去公园跑步。"),
    ("e", "Remember the Wi-Fi password before the guests arrive tonight."),
]


def test_the_local_model_counts_its_tokens(int8_embedder: OnnxEmbedder) -> None:
    assert isinstance(int8_embedder, MeasuresPassages)
    texts = [text for _, text in TEXTS]
    lengths = int8_embedder.passage_lengths(texts)
    assert lengths == [int8_embedder.count_tokens(text) for text in texts]


def test_pending_texts_go_in_token_order_where_the_model_counts(
    int8_embedder: OnnxEmbedder,
) -> None:
    ordered = by_length(int8_embedder, list(TEXTS))
    tokens = [int8_embedder.count_tokens(text) for _, text in ordered]
    assert tokens == sorted(tokens)
    assert sorted(ordered) == sorted(TEXTS)  # the same items, nothing lost or doubled
    by_chars = sorted(TEXTS, key=lambda item: len(item[1]))
    assert [h for h, _ in ordered] != [h for h, _ in by_chars]  # the two orders differ here


def test_an_embedder_that_does_not_count_orders_by_characters() -> None:
    embedder = HashEmbedder(dim=16)
    assert not isinstance(embedder, MeasuresPassages)
    ordered = by_length(embedder, list(TEXTS))
    assert [len(text) for _, text in ordered] == sorted(len(text) for _, text in TEXTS)
