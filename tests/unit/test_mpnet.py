"""The mpnet embedder (capsule.embedders.mpnet): equal to sentence-transformers within 1e-3 cosine."""

from __future__ import annotations

import hashlib
import io
import random
import re
import zipfile
from pathlib import Path

import numpy as np
import pytest

from capsule.config import Settings
from capsule.core.errors import Unavailable
from capsule.embedders import build_embedder, describe, mpnet

WORDS = (
    "the a of memory agent recall tomorrow Tuesday meeting 2023 invoice Paris coffee deployed "
    'database migration failed because retry budget exhausted; she said: "let\'s ship it!" '
    "kubernetes pods restarted 17 times (OOMKilled) Dr. Müller's naïve café résumé — email me at "
    "someone@example.com or call +1-555-0100. pizza, sushi & ramen? #release v2.3.1 ~/.config/capsule "
    "x86_64 unbelievably antidisestablishmentarianism I you we they remember forgot prefers vegetarian "
    "hiking Saturday mornings with Caroline and Melanie; adopted two cats named Oliver and Luna. "
    "quarterly revenue grew 12.5% year-over-year, beating estimates by $0.03 per share."
).split()


def reference_texts() -> list[str]:
    """200 texts, seeded: 1 word up to past the model's 384-token limit (the last ones truncate)."""
    rng = random.Random(38)
    lengths = [1 + (i * 215) // 199 for i in range(200)]
    return [" ".join(rng.choice(WORDS) for _ in range(n)) for n in lengths]


REFERENCE = Path(__file__).parent.parent / "data" / "mpnet_reference.npy"


@pytest.fixture(scope="module")
def model():
    if not mpnet.available():
        pytest.skip(f"the mpnet extra is not installed ({mpnet.INSTALL})")
    return mpnet.MpnetEmbedder()


# ~1 minute of CPU (200 texts, up to 384 tokens) plus building the graph the first time (~20 s)
@pytest.mark.timeout(900)
def test_equals_sentence_transformers(model):
    """Reference: sentence-transformers 6.3 on torch 2.14 CPU, the same model folder, these texts
    (float16 rows, normalised)."""
    reference = np.load(REFERENCE).astype(np.float32)
    mine = model.embed(reference_texts())
    assert mine.shape == (200, 768) and mine.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(mine, axis=1), 1.0, atol=1e-5)
    cosine = np.sum(mine * reference, axis=1) / np.linalg.norm(reference, axis=1)
    assert cosine.min() > 1 - 1e-3, f"worst text {int(cosine.argmin())}: cosine {cosine.min():.6f}"


@pytest.mark.timeout(900)
def test_int8_stays_near_the_reference():
    """The int8 graph (capsule.embedders.mpnet.PRECISIONS): 0.990 mean cosine to
    sentence-transformers' vectors when measured, 0.978 at worst."""
    if not mpnet.available():
        pytest.skip(f"the mpnet extra is not installed ({mpnet.INSTALL})")
    int8 = mpnet.MpnetEmbedder(precision="int8")
    assert int8.model_id == "all-mpnet-base-v2-int8"
    reference = np.load(REFERENCE).astype(np.float32)
    cosine = np.sum(int8.embed(reference_texts()) * reference, axis=1) / np.linalg.norm(reference, axis=1)
    assert cosine.mean() > 0.985 and cosine.min() > 0.97, (cosine.mean(), cosine.min())


def test_batching_does_not_change_a_vector(model):
    """Padding a short text beside long ones (one batch) gives what it gives alone."""
    texts = reference_texts()[::40]
    together = model.embed(texts)
    alone = np.vstack([model.embed([text]) for text in texts])
    np.testing.assert_allclose(together, alone, atol=1e-5)


def test_relative_buckets_as_mpnet():
    """HF's MPNetEncoder.relative_position_bucket(key - query, 32): keys after the query take
    buckets 16..31; exact up to 7 apart, then logarithmic, the last bucket from 128 apart on."""
    buckets = mpnet.relative_buckets(200, 32)
    assert buckets[0, :9].tolist() == [0, 17, 18, 19, 20, 21, 22, 23, 24]
    assert buckets[9, :10].tolist() == [8, 8, 7, 6, 5, 4, 3, 2, 1, 0]
    assert buckets[0, 16:20].tolist() == [26, 26, 26, 26] and buckets[0, 127] == 31
    assert buckets[199, 0] == 15 and buckets[71, 0] == 14


# Reassembly, on five tiny fake parts of a fake model: none of these needs the real one.

FAKE = {
    "model.safetensors": b"weights" * 1000,
    "tokenizer.json": b'{"fake": true}',
    "config.json": b"{}",
    "sentence_bert_config.json": b'{"max_seq_length": 384}',
    "1_Pooling/config.json": b'{"pooling_mode_mean_tokens": true}',
}


@pytest.fixture
def fake_parts(tmp_path, monkeypatch):
    """The fake model zipped as the real one is, split into five parts, its digests pinned."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in FAKE.items():
            archive.writestr(f"all-mpnet-base-v2/{name}", data)
    data = buffer.getvalue()
    cut = [len(data) * i // 5 for i in range(6)]
    parts = []
    for i in range(5):
        part = tmp_path / f"all-mpnet-base-v2.zip.00{i + 1}"
        part.write_bytes(data[cut[i] : cut[i + 1]])
        parts.append(part)
    pinned = {name: hashlib.sha256(FAKE[name]).hexdigest() for name in mpnet.PINNED}
    monkeypatch.setattr(mpnet, "PINNED", pinned)
    return parts


def test_assembles_once_atomically(fake_parts, tmp_path):
    folder = tmp_path / "cache" / "mpnet"
    assert mpnet.assemble(fake_parts, folder) == folder
    assert {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()} == set(FAKE)
    assert (folder / "model.safetensors").read_bytes() == FAKE["model.safetensors"]
    assert [p.name for p in folder.parent.iterdir()] == ["mpnet"]  # no temporary folder left
    for part in fake_parts:  # the cache is used from now on: the parts are not read again
        part.unlink()
    assert mpnet.model_folder(cache_dir=folder) == folder


def test_a_corrupt_part_names_the_extra(fake_parts, tmp_path):
    data = bytearray(fake_parts[0].read_bytes())
    data[40:60] = bytes(20)
    fake_parts[0].write_bytes(bytes(data))
    folder = tmp_path / "cache" / "mpnet"
    with pytest.raises(Unavailable, match=re.escape(mpnet.INSTALL)):
        mpnet.assemble(fake_parts, folder)
    assert not folder.exists() and list(folder.parent.iterdir()) == []


def test_a_missing_part_names_the_extra(fake_parts, tmp_path):
    with pytest.raises(Unavailable, match=re.escape(mpnet.INSTALL)):
        mpnet.assemble(fake_parts[:4], tmp_path / "cache")


def test_altered_weights_are_refused(fake_parts, tmp_path):
    folder = mpnet.assemble(fake_parts, tmp_path / "cache")
    (folder / "model.safetensors").write_bytes(b"altered" * 1000)
    with pytest.raises(Unavailable, match="does not match its pinned sha256"):
        mpnet.model_folder(cache_dir=folder)
    (tmp_path / "cache" / "model.safetensors").unlink()  # a partial cache is no model either
    with pytest.raises(Unavailable, match="missing"):
        mpnet.model_folder(model_dir=folder)


def test_without_the_extra_the_embedder_names_it(tmp_path, monkeypatch):
    monkeypatch.setattr(mpnet, "PARTS", (("capsule-no-such-part", "x/input/all-mpnet-base-v2.zip.001"),))
    assert not mpnet.available(cache_dir=tmp_path / "empty")
    with pytest.raises(Unavailable, match=re.escape("pip install 'capsule-memory[mpnet]'")):
        mpnet.MpnetEmbedder(cache_dir=tmp_path / "empty")
    monkeypatch.setattr(mpnet, "default_cache_dir", lambda: tmp_path / "empty")
    with pytest.raises(Unavailable, match=re.escape("capsule-memory[mpnet]")):
        build_embedder(Settings.from_env({"CAPSULE_EMBEDDER": "mpnet"}))


def test_named_it_is_built(monkeypatch, tmp_path):
    """CAPSULE_EMBEDDER=mpnet builds it (the model loads on the first embedding, not here)."""
    (tmp_path / "model.safetensors").write_bytes(b"")
    monkeypatch.setattr(mpnet, "default_cache_dir", lambda: tmp_path)
    monkeypatch.setattr(mpnet, "_runtime_installed", lambda: None)  # safetensors may be absent here
    embedder = build_embedder(Settings.from_env({"CAPSULE_EMBEDDER": "mpnet"}))
    assert isinstance(embedder, mpnet.MpnetEmbedder) and not embedder.loaded
    assert describe(embedder).sentence() == "mpnet (all-mpnet-base-v2, 768 dimensions): CAPSULE_EMBEDDER is 'mpnet'"
