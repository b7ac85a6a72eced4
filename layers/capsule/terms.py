"""Keyword tokens as 64-bit term hashes, so BM25 statistics can be stored and loaded in bulk.

A memory's tokens (:func:`capsule.text.tokens`) are kept beside it at write time as one blob
of little-endian int64 hashes, one per token in order; a fresh process then builds its BM25
postings from those blobs with numpy instead of tokenising every memory again. The blob is
stamped with :data:`TOKENIZER`: ``text.TOKENIZER_VERSION`` and a digest of the tokenizer's own
source (and its stemmer's version): any change to the tokenizer makes old blobs stale, and they are recomputed from
the content on the next full load.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from importlib import metadata
from pathlib import Path

import numpy as np

from . import text


def _tokenizer_version() -> str:
    try:
        stemmer = metadata.version("snowballstemmer")
    except metadata.PackageNotFoundError:
        stemmer = "?"
    # The declared version, and a digest of the source in case a change forgets to bump it.
    source = Path(text.__file__).read_bytes()
    digest = hashlib.sha256(source + b"\x00" + stemmer.encode()).hexdigest()[:16]
    return f"{getattr(text, 'TOKENIZER_VERSION', 0)}-{digest}"


TOKENIZER = _tokenizer_version()


@lru_cache(maxsize=262144)
def term_hash(term: str) -> int:
    """A term's 63-bit id, the same in every process (fits SQLite's and numpy's int64)."""
    return int.from_bytes(hashlib.blake2b(term.encode("utf-8", "surrogatepass"), digest_size=8).digest(),
                          "little") >> 1


def hashes(content: str) -> np.ndarray:
    """The term hashes of ``content``, one per token, in order (int64)."""
    found = text.tokens(content)
    return np.fromiter(map(term_hash, found), dtype=np.int64, count=len(found))


def encode(content: str) -> bytes:
    return hashes(content).astype("<i8", copy=False).tobytes()


def encode_record(record: object) -> bytes:
    """A record's term hashes as stored: keyed ones it carries (a sealed memory's, see
    capsule.crypto.sealing), else those of its content."""
    given = getattr(record, "term_hashes", None)
    return given if given is not None else encode(record.content)  # type: ignore[attr-defined]


def record_hashes(record: object) -> np.ndarray:
    """:func:`encode_record` as int64 hashes, for a search index."""
    given = getattr(record, "term_hashes", None)
    return np.frombuffer(given, dtype="<i8").astype(np.int64) if given is not None else hashes(record.content)  # type: ignore[attr-defined]
