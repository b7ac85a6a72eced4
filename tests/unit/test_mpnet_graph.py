"""The mpnet ONNX graph builder (capsule.embedders.mpnet_graph) against a plain numpy MPNet, on a
tiny random model (2 layers, hidden 32): needs onnx and onnxruntime, not the model's parts."""

from __future__ import annotations

import math

import numpy as np
import pytest

from capsule.embedders import mpnet

pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from capsule.embedders.mpnet_graph import build_graph  # noqa: E402

HIDDEN, HEADS, LAYERS, INNER, VOCAB, POSITIONS, BUCKETS, PAD = 32, 4, 2, 64, 50, 40, 32, 1


def tiny_model(seed: int = 0) -> tuple[dict[str, np.ndarray], dict[str, float | int]]:
    rng = np.random.default_rng(seed)

    def r(*shape: int) -> np.ndarray:
        return rng.normal(0, 0.3, shape).astype(np.float32)

    w = {
        "embeddings.word_embeddings.weight": r(VOCAB, HIDDEN),
        "embeddings.position_embeddings.weight": r(POSITIONS, HIDDEN),
        "embeddings.LayerNorm.weight": 1 + r(HIDDEN),
        "embeddings.LayerNorm.bias": r(HIDDEN),
        "encoder.relative_attention_bias.weight": r(BUCKETS, HEADS),
    }
    for i in range(LAYERS):
        p = f"encoder.layer.{i}"
        for n in "qkvo":
            w[f"{p}.attention.attn.{n}.weight"], w[f"{p}.attention.attn.{n}.bias"] = r(HIDDEN, HIDDEN), r(HIDDEN)
        for n in ("attention.LayerNorm", "output.LayerNorm"):
            w[f"{p}.{n}.weight"], w[f"{p}.{n}.bias"] = 1 + r(HIDDEN), r(HIDDEN)
        w[f"{p}.intermediate.dense.weight"], w[f"{p}.intermediate.dense.bias"] = r(INNER, HIDDEN), r(INNER)
        w[f"{p}.output.dense.weight"], w[f"{p}.output.dense.bias"] = r(HIDDEN, INNER), r(HIDDEN)
    config = {
        "hidden_size": HIDDEN,
        "num_attention_heads": HEADS,
        "num_hidden_layers": LAYERS,
        "layer_norm_eps": 1e-5,
        "pad_token_id": PAD,
        "relative_attention_num_buckets": BUCKETS,
    }
    return w, config


def numpy_mpnet(ids: np.ndarray, mask: np.ndarray, w: dict[str, np.ndarray], heads: int) -> np.ndarray:
    """HF's MPNetModel plus mean pooling, plainly, in float64: the oracle."""
    w = {k: v.astype(np.float64) for k, v in w.items()}

    def norm(x: np.ndarray, name: str) -> np.ndarray:
        c = x - x.mean(-1, keepdims=True)
        return c / np.sqrt((c * c).mean(-1, keepdims=True) + 1e-5) * w[f"{name}.weight"] + w[f"{name}.bias"]

    def linear(x: np.ndarray, name: str) -> np.ndarray:
        return x @ w[f"{name}.weight"].T + w[f"{name}.bias"]

    batch, length = ids.shape
    real = ids != PAD
    positions = np.cumsum(real, axis=1) * real + PAD  # RoBERTa's: real tokens from PAD + 1
    x = norm(
        w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][positions],
        "embeddings.LayerNorm",
    )
    relative = w["encoder.relative_attention_bias.weight"][mpnet.relative_buckets(length, BUCKETS)].transpose(2, 0, 1)
    bias = relative[None] + np.where(mask[:, None, None, :] == 0, -1e30, 0.0)
    size = x.shape[-1] // heads
    erf = np.vectorize(math.erf)
    for i in range(LAYERS):
        p = f"encoder.layer.{i}"

        def split(n: str, x: np.ndarray = x, p: str = p) -> np.ndarray:
            return linear(x, f"{p}.attention.attn.{n}").reshape(batch, length, heads, size).transpose(0, 2, 1, 3)

        scores = split("q") @ split("k").transpose(0, 1, 3, 2) / math.sqrt(size) + bias
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        context = (scores / scores.sum(-1, keepdims=True)) @ split("v")
        context = context.transpose(0, 2, 1, 3).reshape(batch, length, -1)
        x = norm(linear(context, f"{p}.attention.attn.o") + x, f"{p}.attention.LayerNorm")
        inner = linear(x, f"{p}.intermediate.dense")
        x = norm(
            linear(inner * 0.5 * (1 + erf(inner / math.sqrt(2))), f"{p}.output.dense") + x, f"{p}.output.LayerNorm"
        )
    weights = mask[..., None].astype(np.float64)
    return (x * weights).sum(1) / weights.sum(1)


def test_graph_equals_numpy_mpnet():
    w, config = tiny_model()
    graph = build_graph(w, config, mpnet.relative_buckets(36, BUCKETS))
    session = ort.InferenceSession(graph.SerializeToString(), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(1)
    for length in (1, 9, 30, 36):  # the bucket table sliced to every batch's length
        ids = rng.integers(2, VOCAB, (3, length))
        mask = np.ones_like(ids)
        ids[1, length // 2 + 1 :], mask[1, length // 2 + 1 :] = PAD, 0  # padded rows
        ids[2, 1:], mask[2, 1:] = PAD, 0
        got = session.run(None, {"input_ids": ids, "attention_mask": mask})[0]
        np.testing.assert_allclose(got, numpy_mpnet(ids, mask, w, HEADS), atol=1e-5)


def test_length_batches_keep_similar_lengths():
    lengths = [300, 5, 7, 6, 290, 8]
    assert mpnet.length_batches(lengths, 32, tokens=500) == [[1, 3, 2, 5], [4], [0]]
    assert mpnet.length_batches(lengths, 2, tokens=10_000) == [[1, 3], [2, 5], [4, 0]]
    assert mpnet.length_batches([500], 32, tokens=100) == [[0]]  # one row always runs


def test_int8_quantizes_every_linear_layer_but_the_feed_forward_outputs():
    w, config = tiny_model()
    graph = build_graph(w, config, mpnet.relative_buckets(36, BUCKETS))
    weights = {initializer.name: initializer for initializer in graph.graph.initializer}
    chosen = {node.input[1] for node in graph.graph.node if node.name in mpnet.int8_nodes(graph)}
    # per layer: the fused q/k/v, the attention's output and the intermediate dense
    assert len(chosen) == 3 * LAYERS and all(name in weights for name in chosen)
    assert not any(name.endswith(".output.weight_t") for name in chosen)
    assert sum(name.endswith(".output.weight_t") for name in weights) == LAYERS  # left in fp32
