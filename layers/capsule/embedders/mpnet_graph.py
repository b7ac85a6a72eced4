"""MPNet as an ONNX graph, built with ``onnx.helper`` from the safetensors weights (issue 38).

:func:`build_graph` writes MPNetModel's forward pass as Hugging Face computes it, plus the
pooling, as one opset-17 graph that onnxruntime runs:

- inputs ``input_ids`` and ``attention_mask`` (batch, length), int64, padded with pad_token_id;
- position ids computed in the graph as RoBERTa's are (real tokens count from pad_token_id + 1,
  padding keeps pad_token_id);
- the relative position buckets precomputed for the longest input (a constant given by the
  caller: :func:`~capsule.embedders.mpnet.relative_buckets`) and sliced to the batch's
  length, then looked up in the shared bias table;
- per layer: one fused q/k/v MatMul (the 1/sqrt(head size) folded into q's weights), softmax
  over the relative bias plus the padding mask, post-LayerNorm (LayerNormalization), GELU written
  with Erf (onnxruntime fuses it);
- output ``embedding`` (batch, hidden): the mean over the attention mask, not yet normalised.

``onnx`` is needed only to build the graph (the ``mpnet`` extra); running it needs onnxruntime.
On the real model the graph equals sentence-transformers within 1e-6 cosine on the 200 reference
texts (tests/unit/test_mpnet.py); on a tiny random model it equals a plain numpy forward pass
(tests/unit/test_mpnet_graph.py).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

# Bumped whenever the graph this module builds changes: the cached file's name carries it.
GRAPH_VERSION = 2
OPSET = 17


class _Graph:
    """Nodes and initializers being collected, with fresh names."""

    def __init__(self) -> None:
        from onnx import helper, numpy_helper

        self.helper, self.numpy_helper = helper, numpy_helper
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self._count = 0

    def const(self, name: str, value: np.ndarray) -> str:
        self.initializers.append(self.numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def op(self, kind: str, *inputs: str, outputs: int = 1, **attributes: Any) -> Any:
        self._count += 1
        node = f"{kind.lower()}_{self._count}"
        names = [f"{node}_{i}" for i in range(outputs)]
        self.nodes.append(self.helper.make_node(kind, list(inputs), names, name=node, **attributes))
        return names[0] if outputs == 1 else names


def build_graph(w: Mapping[str, np.ndarray], config: Mapping[str, Any], buckets: np.ndarray) -> Any:
    """The ``onnx.ModelProto`` of MPNetModel plus mean pooling. ``w``: the weights by their
    safetensors names; ``buckets``: the relative position buckets for the longest input,
    (length, length) (:func:`capsule.embedders.mpnet.relative_buckets`)."""
    from onnx import TensorProto, checker, helper

    g = _Graph()
    hidden, heads = config["hidden_size"], config["num_attention_heads"]
    size, eps, pad = hidden // heads, float(config["layer_norm_eps"]), config["pad_token_id"]
    f32 = np.float32

    def linear(x: str, weight: np.ndarray, bias: np.ndarray, name: str) -> str:
        product = g.op("MatMul", x, g.const(f"{name}.weight_t", weight.T.astype(f32)))
        return g.op("Add", product, g.const(f"{name}.bias", bias.astype(f32)))

    def layer_norm(x: str, name: str) -> str:
        scale, shift = g.const(f"{name}.weight", w[f"{name}.weight"]), g.const(f"{name}.bias", w[f"{name}.bias"])
        return g.op("LayerNormalization", x, scale, shift, axis=-1, epsilon=eps)

    one_f, one_i = g.const("one_f", np.array(1, f32)), g.const("one_i", np.array([1], np.int64))
    # embeddings: word + absolute position (RoBERTa's ids), LayerNorm
    pad_id = g.const("pad_id", np.array(pad, np.int64))
    real = g.op("Cast", g.op("Not", g.op("Equal", "input_ids", pad_id)), to=TensorProto.INT64)
    positions = g.op("Add", g.op("Mul", g.op("CumSum", real, one_i), real), pad_id)
    words = g.op(
        "Gather", g.const("embeddings.word_embeddings.weight", w["embeddings.word_embeddings.weight"]), "input_ids"
    )
    placed = g.op(
        "Gather",
        g.const("embeddings.position_embeddings.weight", w["embeddings.position_embeddings.weight"]),
        positions,
    )
    x = layer_norm(g.op("Add", words, placed), "embeddings.LayerNorm")

    # the attention bias shared by every layer: relative positions + the padding mask
    length = g.op("Shape", "input_ids", start=1, end=2)
    square = g.op("Concat", length, length, axis=0)
    table = g.const("relative_buckets", buckets.astype(np.int64))
    sliced = g.op("Slice", table, g.const("zeros2", np.zeros(2, np.int64)), square)
    relative = g.op("Gather", g.const("relative_attention_bias", w["encoder.relative_attention_bias.weight"]), sliced)
    relative = g.op("Transpose", relative, perm=[2, 0, 1])  # (heads, length, length)
    mask = g.op("Cast", "attention_mask", to=TensorProto.FLOAT)
    lowest = g.const("lowest", np.array(np.finfo(f32).min, f32))
    masked = g.op("Mul", g.op("Sub", one_f, mask), lowest)  # HF's extended mask
    masked = g.op("Unsqueeze", masked, g.const("axes12", np.array([1, 2], np.int64)))  # (batch, 1, 1, length)
    bias = g.op("Add", relative, masked)  # (batch, heads, length, length)

    head_shape = g.const("head_shape", np.array([0, 0, heads, size], np.int64))
    hidden_shape = g.const("hidden_shape", np.array([0, 0, hidden], np.int64))
    thirds = g.const("thirds", np.array([hidden] * 3, np.int64))
    root2 = g.const("root2", np.array(math.sqrt(2), f32))
    half = g.const("half", np.array(0.5, f32))
    scale = f32(1 / math.sqrt(size))
    for i in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{i}"
        a = f"{p}.attention.attn"
        qkv_weight = np.concatenate([w[f"{a}.q.weight"] * scale, w[f"{a}.k.weight"], w[f"{a}.v.weight"]])
        qkv_bias = np.concatenate([w[f"{a}.q.bias"] * scale, w[f"{a}.k.bias"], w[f"{a}.v.bias"]])
        q, k, v = g.op("Split", linear(x, qkv_weight, qkv_bias, f"{a}.qkv"), thirds, axis=-1, outputs=3)
        q = g.op("Transpose", g.op("Reshape", q, head_shape), perm=[0, 2, 1, 3])
        k = g.op("Transpose", g.op("Reshape", k, head_shape), perm=[0, 2, 3, 1])
        v = g.op("Transpose", g.op("Reshape", v, head_shape), perm=[0, 2, 1, 3])
        attended = g.op("Softmax", g.op("Add", g.op("MatMul", q, k), bias), axis=-1)
        context = g.op("Reshape", g.op("Transpose", g.op("MatMul", attended, v), perm=[0, 2, 1, 3]), hidden_shape)
        out = linear(context, w[f"{a}.o.weight"], w[f"{a}.o.bias"], f"{a}.o")
        x = layer_norm(g.op("Add", out, x), f"{p}.attention.LayerNorm")
        inner = linear(x, w[f"{p}.intermediate.dense.weight"], w[f"{p}.intermediate.dense.bias"], f"{p}.intermediate")
        erf = g.op("Add", g.op("Erf", g.op("Div", inner, root2)), one_f)
        gelu = g.op("Mul", g.op("Mul", inner, erf), half)
        out = linear(gelu, w[f"{p}.output.dense.weight"], w[f"{p}.output.dense.bias"], f"{p}.output")
        x = layer_norm(g.op("Add", out, x), f"{p}.output.LayerNorm")

    # mean pooling over the attention mask
    weights = g.op("Unsqueeze", mask, g.const("axis2", np.array([2], np.int64)))  # (batch, length, 1)
    axis1 = g.const("axis1", np.array([1], np.int64))
    total = g.op("ReduceSum", g.op("Mul", x, weights), axis1, keepdims=0)
    count = g.op("Max", g.op("ReduceSum", weights, axis1, keepdims=0), g.const("tiny", np.array(1e-9, f32)))
    g.nodes.append(helper.make_node("Div", [total, count], ["embedding"]))

    graph = helper.make_graph(
        g.nodes,
        "mpnet",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "length"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "length"]),
        ],
        [helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["batch", hidden])],
        g.initializers,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="capsule-memory", ir_version=8
    )
    checker.check_model(model)  # structure only: under 2 GB, no external data
    return model


__all__ = ["GRAPH_VERSION", "OPSET", "build_graph"]
