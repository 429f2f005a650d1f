"""`OnnxEmbedder`: a sentence embedder over an ONNX encoder and its tokenizer (embed/tokens.py).

A model directory holds ``model.onnx``, ``tokenizer.json`` and a small ``config.json``:

``pooling``         "mean" (over the attention mask) or "cls" (first token); default "mean"
``normalize``       L2-normalise the pooled vectors; default true. Set it to false only for
                    graphs whose output is unit length already.
``query_prefix``    prepended to queries, e.g. "query: " (E5) or a bge instruction; default ""
``passage_prefix``  prepended to passages, e.g. "passage: " (E5); default ""
``max_length``      token limit, specials included; longer inputs are truncated; default 512
``dim``             expected vector size; checked against the graph when given
``name``            the embedder's name; default: the directory name

The graph must take ``input_ids`` and ``attention_mask`` (and may take ``token_type_ids``,
fed as zeros) and return either token states [batch, sequence, dim] (pooled here) or
sentence vectors [batch, dim]. Other keys in config.json are ignored.

Each text runs alone by default (``batch_size`` 1), ``parallel`` calls at a time. An int8
graph quantises a call's activations on one scale, so in a batch a text's vector would move
with the texts beside it (a cosine of 0.994 at worst on conversation turns): alone, it
depends on the text only, as a query's does, and a rebuilt index holds the same vectors. On
two cores that costs no speed against batches of 32 (sorted by length): 0.94-0.95 times on
short turns, 1.75 times on texts of ~140 tokens (no padding, activations that stay in cache).
"""

from __future__ import annotations

import concurrent.futures
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from tokenizers import Tokenizer

from somnid.embed.base import EmbedError, Matrix, normalize_rows, text_list
from somnid.embed.tokens import LibraryIds, TokenIds, read_token_ids

__all__ = ["ModelConfig", "OnnxEmbedder"]

MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"
CONFIG_FILE = "config.json"
_TOKEN_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
_INT_TYPES: dict[str, type[np.integer[Any]]] = {
    "tensor(int64)": np.int64,
    "tensor(int32)": np.int32,
}


@dataclass(frozen=True)
class ModelConfig:
    name: str
    pooling: str = "mean"
    normalize: bool = True
    query_prefix: str = ""
    passage_prefix: str = ""
    max_length: int = 512
    dim: int | None = None

    @classmethod
    def read(cls, path: Path) -> ModelConfig:
        """Parse a model directory's config.json; EmbedError names the file and the key."""
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError as exc:
            raise EmbedError(f"model config {path} is missing") from exc
        except (OSError, ValueError) as exc:
            raise EmbedError(f"model config {path} is not readable JSON: {exc}") from exc
        if not isinstance(raw, dict):
            raise EmbedError(f"model config {path} must hold a JSON object")

        def get(key: str, kind: type, default: Any) -> Any:
            value = raw.get(key, default)
            if value is None and default is None:
                return None
            if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
                raise EmbedError(f"model config {path}: {key!r} must be {kind.__name__}")
            return value

        config = cls(
            name=get("name", str, path.parent.name),
            pooling=get("pooling", str, "mean"),
            normalize=get("normalize", bool, True),
            query_prefix=get("query_prefix", str, ""),
            passage_prefix=get("passage_prefix", str, ""),
            max_length=get("max_length", int, 512),
            dim=get("dim", int, None),
        )
        if config.pooling not in ("mean", "cls"):
            raise EmbedError(f"model config {path}: 'pooling' must be 'mean' or 'cls'")
        if config.max_length < 2 or (config.dim is not None and config.dim < 1):
            raise EmbedError(f"model config {path}: 'max_length' and 'dim' must be positive")
        return config


class OnnxEmbedder:
    """Embeds texts with an ONNX encoder; see the module docstring for the directory layout.

    Build it with `OnnxEmbedder.load`, which reads everything once. Calls are blocking and
    may come from several threads at once; a call of many texts runs ``parallel`` model
    calls at once, in threads of its own.
    """

    def __init__(
        self,
        session: Any,
        tokenizer: TokenIds | Tokenizer,
        config: ModelConfig,
        *,
        batch_size: int = 1,
        parallel: int = 1,
    ) -> None:
        if batch_size < 1 or parallel < 1:
            raise ValueError("batch_size and parallel must be positive")
        self._session: Any = session
        if isinstance(tokenizer, Tokenizer):
            tokenizer = LibraryIds(tokenizer, config.max_length)
        self._tokens: TokenIds = tokenizer
        self._config = config
        self._batch_size = batch_size
        # Its threads start with the first call of many texts (none for queries alone).
        self._calls = (
            concurrent.futures.ThreadPoolExecutor(parallel, thread_name_prefix="somnid-embed")
            if parallel > 1
            else None
        )
        self.name = config.name
        self._pad_id = tokenizer.pad_id
        self._feeds = _input_types(session)
        self._output, rank, graph_dim = _pick_output(session)
        self._pooled_output = rank == 2
        self.dim = self._resolve_dim(graph_dim)

    @classmethod
    def load(cls, model_dir: Path, threads: int = 2, batch_size: int = 1) -> OnnxEmbedder:
        """Load ``model_dir``; EmbedError names the missing or invalid file. ``threads``
        is both the session's own threads and how many model calls run at once."""
        config = ModelConfig.read(model_dir / CONFIG_FILE)
        # Side by side: building the session releases the GIL, reading the tokenizer holds
        # it (~0.8 s for XLM-R's 250k pieces), so together they take as long as the slower.
        with concurrent.futures.ThreadPoolExecutor(1, "somnid-model-load") as pool:
            session = pool.submit(_load_session, model_dir / MODEL_FILE, threads)
            tokenizer = _load_tokenizer(model_dir / TOKENIZER_FILE, config.max_length)
            return cls(session.result(), tokenizer, config, batch_size=batch_size, parallel=threads)

    @property
    def config(self) -> ModelConfig:
        return self._config

    def embed_passages(self, texts: Sequence[str]) -> Matrix:
        return self._embed(text_list(texts), self._config.passage_prefix)

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        return self._embed(text_list(texts), self._config.query_prefix)

    def passage_lengths(self, texts: Sequence[str]) -> list[int]:
        prefix = self._config.passage_prefix
        return [len(ids) for ids in self._tokens.ids([prefix + text for text in text_list(texts)])]

    def count_tokens(self, text: str, *, query: bool = False) -> int:
        """Tokens the model sees for ``text`` (prefix and specials included, after truncation)."""
        prefix = self._config.query_prefix if query else self._config.passage_prefix
        return len(self._tokens.ids([prefix + text])[0])

    def close(self) -> None:
        if self._calls is not None:
            self._calls.shutdown(wait=True)
        self._session = None

    def _resolve_dim(self, graph_dim: int | None) -> int:
        expected = self._config.dim
        if expected is not None and graph_dim is not None and expected != graph_dim:
            raise EmbedError(
                f"model {self.name!r}: config.json says dim {expected}, the graph gives {graph_dim}"
            )
        if expected is not None:
            return expected
        if graph_dim is not None:
            return graph_dim
        return int(self._run(self._tokens.ids([""])).shape[1])  # probe once

    def _embed(self, texts: list[str], prefix: str) -> Matrix:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        encodings = self._tokens.ids([prefix + text for text in texts])
        size = self._batch_size
        # In batches, texts of like length side by side: the padding stays small.
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i]))
        groups = [order[start : start + size] for start in range(0, len(order), size)]
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        runs = self._map(lambda rows: self._run([encodings[i] for i in rows]), groups)
        for rows, vectors in zip(groups, runs, strict=True):
            if vectors.shape[1] != self.dim:
                raise EmbedError(
                    f"model {self.name!r} produced {vectors.shape[1]}-d vectors, "
                    f"expected {self.dim}"
                )
            out[rows] = vectors
        return normalize_rows(out) if self._config.normalize else out

    def _map(self, run: Callable[[list[int]], Matrix], groups: list[list[int]]) -> Iterator[Matrix]:
        """``run`` over ``groups`` in order: one after another, or ``parallel`` at a time in
        the embedder's own threads when there are several."""
        if self._calls is None or len(groups) == 1:
            return map(run, groups)
        try:
            return self._calls.map(run, groups)
        except RuntimeError as exc:  # shut down: closed
            raise EmbedError(f"embedder {self.name!r} is closed") from exc

    def _run(self, batch: list[list[int]]) -> Matrix:
        session = self._session
        if session is None:
            raise EmbedError(f"embedder {self.name!r} is closed")
        width = max(len(enc) for enc in batch)
        ids = np.full((len(batch), width), self._pad_id, dtype=np.int64)
        mask = np.zeros((len(batch), width), dtype=np.int64)
        for row, enc in enumerate(batch):
            ids[row, : len(enc)] = enc
            mask[row, : len(enc)] = 1
        arrays = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        feeds = {name: arrays[name].astype(kind) for name, kind in self._feeds.items()}
        try:
            (hidden,) = session.run([self._output], feeds)
        except Exception as exc:  # onnxruntime raises its own, untyped exceptions
            raise EmbedError(f"model {self.name!r} failed to run: {exc}") from exc
        hidden = np.asarray(hidden, dtype=np.float32)
        if self._pooled_output:
            return hidden
        return _pool(hidden, mask, self._config.pooling)


def _pool(hidden: npt.NDArray[np.float32], mask: npt.NDArray[np.int64], how: str) -> Matrix:
    if how == "cls":
        first: Matrix = hidden[:, 0, :]
        return first
    weights = mask[..., None].astype(np.float32)
    summed = (hidden * weights).sum(axis=1)
    mean: Matrix = summed / np.maximum(weights.sum(axis=1), np.float32(1e-9))
    return mean


def _load_tokenizer(path: Path, max_length: int) -> TokenIds:
    if not path.is_file():
        raise EmbedError(f"tokenizer file {path} is missing")
    try:
        return read_token_ids(path.read_text(encoding="utf-8"), max_length)
    except Exception as exc:  # tokenizers raises a bare Exception on bad files
        raise EmbedError(f"tokenizer file {path} is invalid: {exc}") from exc


def _load_session(path: Path, threads: int) -> Any:
    if not path.is_file():
        raise EmbedError(f"model file {path} is missing")
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = max(1, threads)
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3  # errors only; the daemon logs what matters
    # Do not keep idle worker threads spinning between calls: this is a background daemon.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    # No CPU arena: it keeps the high-water mark of the longest batch for good (measured
    # 275 MB against 194 MB after twenty 32x64 batches, at the same speed).
    options.enable_cpu_mem_arena = False
    try:
        return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime raises its own, untyped exceptions
        raise EmbedError(f"model file {path} is not a loadable ONNX model: {exc}") from exc


def _input_types(session: Any) -> dict[str, type[np.integer[Any]]]:
    feeds: dict[str, type[np.integer[Any]]] = {}
    for arg in session.get_inputs():
        if arg.name not in _TOKEN_INPUTS or arg.type not in _INT_TYPES:
            raise EmbedError(f"model input {arg.name!r} ({arg.type}) is not supported")
        feeds[arg.name] = _INT_TYPES[arg.type]
    missing = {"input_ids", "attention_mask"} - feeds.keys()
    if missing:
        raise EmbedError(f"model lacks the input(s) {sorted(missing)}")
    return feeds


def _pick_output(session: Any) -> tuple[str, int, int | None]:
    """The output to use, its rank (3: token states, 2: sentence vectors) and static dim."""
    outputs = {arg.name: arg for arg in session.get_outputs()}
    preferred = [n for n in ("last_hidden_state", "sentence_embedding") if n in outputs]
    arg = outputs[preferred[0]] if preferred else next(iter(outputs.values()))
    shape = list(arg.shape)
    if len(shape) not in (2, 3):
        raise EmbedError(f"model output {arg.name!r} has shape {shape}; expected rank 2 or 3")
    last = shape[-1]
    return arg.name, len(shape), last if isinstance(last, int) else None
