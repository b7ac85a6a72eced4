"""Decoding N stored embeddings into one float32 matrix, per storage form (issue 4's numbers).

    python scripts/bench_vector_decode.py [N] [DIMENSIONS]      # default 100000 x 1024

Each form is encoded as the BSON documents the server sends, decoded with the driver's C
decoder (``bson.decode_all``, as a cursor does) and turned into an (N, D) matrix, as a search
does. Times are CPU seconds (``time.process_time``), best of 3, so other work on a shared
machine does not count. Lists of doubles run on a tenth of the rows, once, and are scaled.
"""

from __future__ import annotations

import sys
import time

import bson
import numpy as np
from bson.binary import Binary

sys.path.insert(0, "layers")
from capsule.store.mongo_docs import decode_vector, encode_vector  # noqa: E402


def _docs(vectors: np.ndarray, form) -> bytes:
    return b"".join(bson.encode({"id": f"m{i}", "embedding": form(v)}) for i, v in enumerate(vectors))


def _time(label: str, payload: bytes, to_matrix, *, scale: float = 1.0, repeats: int = 3) -> None:
    best_decode = best_total = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        docs = bson.decode_all(payload)
        decoded = time.process_time()
        matrix = to_matrix([d["embedding"] for d in docs])
        end = time.process_time()
        best_decode, best_total = min(best_decode, decoded - start), min(best_total, end - start)
        del docs
    print(
        f"{label:50s} {best_total * scale:6.2f} s  (BSON decode {best_decode * scale:5.2f} s,"
        f" to matrix {(best_total - best_decode) * scale:5.2f} s)  {matrix.shape}"
    )


def _joined(vectors: list[Binary], dimensions: int) -> np.ndarray:
    joined = b"".join(memoryview(v)[2:] for v in vectors)
    return np.frombuffer(joined, dtype="<f4").reshape(len(vectors), dimensions)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    d = int(sys.argv[2]) if len(sys.argv) > 2 else 1024
    vectors = np.random.default_rng(0).standard_normal((n, d)).astype(np.float32)
    print(f"{n} x {d} float32 embeddings, decode + matrix (CPU seconds, best of 3):")
    tenth = vectors[: max(1, n // 10)]
    _time(
        "list of doubles (x10 from a tenth, 1 run)",
        _docs(tenth, lambda v: v.tolist()),
        lambda vs: np.asarray(vs, dtype=np.float32),
        scale=n / len(tenth),
        repeats=1,
    )
    plain = _docs(vectors, lambda v: Binary(v.tobytes()))
    _time("subtype 0, np.frombuffer each + stack", plain, lambda vs: np.stack([np.frombuffer(v, "<f4") for v in vs]))
    del plain
    packed = _docs(vectors, encode_vector)
    _time(
        "subtype 9, as_vector(return_numpy=True) + stack",
        packed,
        lambda vs: np.stack([v.as_vector(return_numpy=True).data for v in vs]),
    )
    _time("subtype 9, frombuffer(offset=2) + stack (ours)", packed, lambda vs: np.stack([decode_vector(v) for v in vs]))
    _time("subtype 9, join payloads + one frombuffer", packed, lambda vs: _joined(vs, d))


if __name__ == "__main__":
    main()
