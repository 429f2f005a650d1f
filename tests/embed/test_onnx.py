"""OnnxEmbedder over the converted e5 model and over a tiny bge-style (BERT, CLS) directory."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import numpy.typing as npt
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

from somnid.embed.base import Embedder, EmbedError
from somnid.embed.onnx import OnnxEmbedder

TEXTS = [
    "short",
    "A considerably longer English sentence about moving to Berlin for a new job last spring.",
    "中文句子：我女儿对花生过敏。",
    "medium length text about tea",
    "",
    "another one, with punctuation!",
]


def test_is_an_embedder(int8_embedder: OnnxEmbedder) -> None:
    assert isinstance(int8_embedder, Embedder)
    assert int8_embedder.dim == 384
    assert int8_embedder.name == "multilingual-e5-small-int8"


def test_shapes_and_unit_rows(int8_embedder: OnnxEmbedder) -> None:
    vectors = int8_embedder.embed_passages(TEXTS)
    assert vectors.shape == (len(TEXTS), 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    empty = int8_embedder.embed_queries([])
    assert empty.shape == (0, 384)
    assert empty.dtype == np.float32


def test_batching_keeps_input_order(e5_fp32_dir: Path) -> None:
    embedder = OnnxEmbedder.load(e5_fp32_dir, batch_size=2)
    try:
        together = embedder.embed_passages(TEXTS)
        alone = np.vstack([embedder.embed_passages([t]) for t in TEXTS])
    finally:
        embedder.close()
    np.testing.assert_allclose(together, alone, atol=1e-5)


def test_int8_vectors_depend_only_slightly_on_batch_mates(e5_int8_dir: Path) -> None:
    # Dynamic int8 quantises activations with one scale per batch tensor, so a text's
    # vector shifts a little with the texts batched beside it. Measured: cosine
    # 0.987-0.998 between batch_size=2 and one text at a time on TEXTS. fp32 is exact.
    embedder = OnnxEmbedder.load(e5_int8_dir, batch_size=2)
    try:
        together = embedder.embed_passages(TEXTS)
        alone = np.vstack([embedder.embed_passages([t]) for t in TEXTS])
    finally:
        embedder.close()
    assert np.sum(together * alone, axis=1).min() > 0.98


def test_by_default_each_text_runs_alone_so_its_vector_is_its_own(e5_int8_dir: Path) -> None:
    # The default: one text per model call, two calls at a time. A text's vector is then
    # the one it has alone, bit for bit, whatever is embedded with it and in which order.
    embedder = OnnxEmbedder.load(e5_int8_dir, threads=2)
    try:
        many = TEXTS * 4
        together = embedder.embed_passages(many)
        alone = np.vstack([embedder.embed_passages([t]) for t in many])
        np.testing.assert_array_equal(together, alone)
        reversed_ = embedder.embed_passages(many[::-1])[::-1]
        np.testing.assert_array_equal(together, reversed_)
        query = embedder.embed_queries(["where did I move last spring"])
        assert np.array_equal(query, embedder.embed_queries(["where did I move last spring"]))
    finally:
        embedder.close()
    with pytest.raises(EmbedError, match="closed"):
        embedder.embed_passages(TEXTS)


def test_queries_and_passages_use_their_prefixes(int8_embedder: OnnxEmbedder) -> None:
    text = "where did I move last spring"
    query = int8_embedder.embed_queries([text])[0]
    passage = int8_embedder.embed_passages([text])[0]
    assert 0.8 < float(query @ passage) < 0.999
    again = int8_embedder.embed_queries([text])[0]
    np.testing.assert_array_equal(query, again)


def test_long_input_is_truncated(int8_embedder: OnnxEmbedder) -> None:
    long_text = "memory " * 2000
    assert int8_embedder.count_tokens(long_text) == 512
    vectors = int8_embedder.embed_passages([long_text, "short"])
    assert vectors.shape == (2, 384)


def test_rejects_a_bare_string(int8_embedder: OnnxEmbedder) -> None:
    with pytest.raises(TypeError):
        int8_embedder.embed_passages("not a list")


@pytest.mark.parametrize("missing", ["model.onnx", "tokenizer.json", "config.json"])
def test_missing_file_is_named(tmp_path: Path, e5_int8_dir: Path, missing: str) -> None:
    for name in ("config.json", "tokenizer.json"):
        shutil.copy(e5_int8_dir / name, tmp_path / name)
    (tmp_path / "model.onnx").symlink_to(e5_int8_dir / "model.onnx")
    (tmp_path / missing).unlink()
    with pytest.raises(EmbedError, match=missing.replace(".", r"\.")):
        OnnxEmbedder.load(tmp_path)


def test_invalid_files_are_named(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text('{"pooling": "max"}', encoding="utf-8")
    with pytest.raises(EmbedError, match=r"config\.json.*pooling"):
        OnnxEmbedder.load(tmp_path)
    (tmp_path / "config.json").write_text('{"dim": "384"}', encoding="utf-8")
    with pytest.raises(EmbedError, match=r"config\.json.*'dim'"):
        OnnxEmbedder.load(tmp_path)
    (tmp_path / "config.json").write_text("{}", encoding="utf-8")
    (tmp_path / "tokenizer.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(EmbedError, match=r"tokenizer\.json"):
        OnnxEmbedder.load(tmp_path)


def test_closed_embedder_refuses_work(e5_int8_dir: Path) -> None:
    embedder = OnnxEmbedder.load(e5_int8_dir)
    embedder.close()
    embedder.close()
    with pytest.raises(EmbedError, match="closed"):
        embedder.embed_queries(["hello"])


# --- a tiny bge-style directory: WordPiece, token_type_ids, CLS pooling, query prefix only ---

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "represent", "this", "sentence", ":"]
VOCAB += ["memory", "daemon", "tea", "coffee", "berlin", "job", "the", "a", "is", "good"]
HIDDEN = 8
QUERY_PREFIX = "represent this sentence: "


def _tiny_bert(path: Path, word: npt.NDArray[np.float32], types: npt.NDArray[np.float32]) -> None:
    """hidden = (word + type) · mask, then every position also gets the masked sum.

    So the CLS vector depends on every real token and on padding being masked.
    """
    dims = ["batch", "sequence"]
    nodes = [
        helper.make_node("Gather", ["word", "input_ids"], ["w"]),
        helper.make_node("Gather", ["types", "token_type_ids"], ["t"]),
        helper.make_node("Add", ["w", "t"], ["e"]),
        helper.make_node("Cast", ["attention_mask"], ["m"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["m", "axis2"], ["m3"]),
        helper.make_node("Mul", ["e", "m3"], ["h"]),
        helper.make_node("ReduceSum", ["h", "axis1"], ["s"], keepdims=1),
        helper.make_node("Add", ["h", "s"], ["last_hidden_state"]),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny-bert",
        [
            helper.make_tensor_value_info(n, TensorProto.INT64, dims)
            for n in ("input_ids", "token_type_ids", "attention_mask")
        ],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, [*dims, HIDDEN])],
        initializer=[
            numpy_helper.from_array(word, "word"),
            numpy_helper.from_array(types, "types"),
            numpy_helper.from_array(np.array([2], dtype=np.int64), "axis2"),
            numpy_helper.from_array(np.array([1], dtype=np.int64), "axis1"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save_model(model, path)


def _tiny_tokenizer() -> Tokenizer:
    tokenizer = Tokenizer(models.WordPiece({p: i for i, p in enumerate(VOCAB)}, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    return tokenizer


@pytest.fixture
def bge_style_dir(tmp_path: Path) -> Path:
    rng = np.random.default_rng(7)
    word = rng.normal(size=(len(VOCAB), HIDDEN)).astype(np.float32)
    types = rng.normal(size=(2, HIDDEN)).astype(np.float32)
    _tiny_bert(tmp_path / "model.onnx", word, types)
    np.save(tmp_path / "weights.npy", np.vstack([word, types]))
    _tiny_tokenizer().save(str(tmp_path / "tokenizer.json"))
    config = {"pooling": "cls", "query_prefix": QUERY_PREFIX, "max_length": 12, "dim": HIDDEN}
    (tmp_path / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return tmp_path


def _expected_cls(directory: Path, text: str) -> npt.NDArray[np.float32]:
    weights = np.load(directory / "weights.npy")
    word, type0 = weights[: len(VOCAB)], weights[len(VOCAB)]
    tokenizer = _tiny_tokenizer()
    tokenizer.enable_truncation(max_length=12)
    ids = tokenizer.encode(text).ids
    vector = (word[ids[0]] + type0) + (word[ids] + type0).sum(axis=0)
    normalised: npt.NDArray[np.float32] = vector / np.linalg.norm(vector)
    return normalised


def test_bge_style_directory(bge_style_dir: Path) -> None:
    embedder = OnnxEmbedder.load(bge_style_dir, threads=1, batch_size=2)
    try:
        assert (embedder.name, embedder.dim) == (bge_style_dir.name, HIDDEN)
        texts = ["the memory daemon", "tea", "coffee is good", "a job in berlin is good"]
        passages = embedder.embed_passages(texts)
        queries = embedder.embed_queries(texts)
        long_text = "the memory daemon is good " * 10
        truncated = embedder.embed_passages([long_text])[0]
    finally:
        embedder.close()
    for row, text in enumerate(texts):
        np.testing.assert_allclose(passages[row], _expected_cls(bge_style_dir, text), atol=1e-5)
        expected_query = _expected_cls(bge_style_dir, QUERY_PREFIX + text)
        np.testing.assert_allclose(queries[row], expected_query, atol=1e-5)
    np.testing.assert_allclose(truncated, _expected_cls(bge_style_dir, long_text), atol=1e-5)


def test_dim_mismatch_is_refused(bge_style_dir: Path) -> None:
    config = json.loads((bge_style_dir / "config.json").read_text(encoding="utf-8"))
    config["dim"] = 384
    (bge_style_dir / "config.json").write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(EmbedError, match="dim 384"):
        OnnxEmbedder.load(bge_style_dir)
