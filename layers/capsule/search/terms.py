"""Keyword tokens as 64-bit term hashes, so BM25 statistics can be stored and loaded in bulk.

A memory's tokens (:func:`capsule.core.text.tokens`) are kept beside it at write time as one blob
of little-endian int64 hashes, one per token in order; a fresh process then builds its BM25
postings from those blobs with numpy instead of tokenising every memory again. The blob is
stamped with :data:`TOKENIZER`: ``text.TOKENIZER_VERSION`` and a digest of the tokenizer's own
source (and its stemmer's version): any change to the tokenizer makes old blobs stale, and they are recomputed from
the content on the next full load.
"""

from __future__ import annotations

import hashlib
import struct
from collections import OrderedDict
from functools import lru_cache
from importlib import metadata
from pathlib import Path

import numpy as np
import re2

from ..core import text


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
    return int.from_bytes(hashlib.blake2b(term.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little") >> 1


def hashes(content: str) -> np.ndarray:
    """The term hashes of ``content``, one per token, in order (int64)."""
    found = text.tokens(content)
    return np.fromiter(map(term_hash, found), dtype=np.int64, count=len(found))


def encode(content: str) -> bytes:
    """``hashes(content)`` as little-endian int64 bytes, made a word at a time: a word's hashes
    are kept (words repeat far more than they vary), so a bulk write hashes each word once.
    The same tokens in the same order as :func:`capsule.core.text.tokens` (tests/search/test_tokenizer
    pins it): its words' tokens, then the joined statuses."""
    found, statuses = words(content)
    parts = list(map(_word_bytes, found))
    parts.extend(_HASH.pack(term_hash(status)) for status in statuses)
    return b"".join(parts)


# What every match of text._STATUS holds, found by RE2 (a DFA, no lookaround): an ASCII text
# without it has no status, and text._STATUS's slower pass is skipped. RE2's classes are ASCII,
# so a text with other characters is always scanned.
_STATUS_GATE = re2.compile(r"[A-Z][A-Z0-9]{1,15}[ \t]+[0-9]{3}")
_RECENT: OrderedDict[str, tuple[list[str], list[str]]] = OrderedDict()
_RECENT_TEXTS = 64  # an ingest's chunks: the embedder reads each, then the store's terms
_RECENT_CHARS = 16_384  # a longer text is not kept


def words(content: str) -> tuple[list[str], list[str]]:
    """The words of ``content`` (``text._WORD``, in order) and its joined statuses (``http_503``):
    what :func:`capsule.core.text.tokens` makes its tokens of, a word's tokens being
    ``text._word_tokens(word, True)``. The last few texts' are kept: a write's texts are read by
    the embedder (capsule.embedders.hashing) and then for their terms (issue 32). Callers must not
    change the lists."""
    kept = _RECENT.get(content)
    if kept is not None:
        return kept
    found = text._WORD.findall(content)
    if content.isascii() and _STATUS_GATE.search(content.encode("ascii")) is None:
        statuses: list[str] = []
    else:
        statuses = [f"{m.group(1).lower()}_{m.group(2)}" for m in text._STATUS.finditer(content)]
    if len(content) <= _RECENT_CHARS:
        while len(_RECENT) >= _RECENT_TEXTS:
            try:
                _RECENT.popitem(last=False)  # the oldest (one step under the GIL: threads share the cache)
            except KeyError:
                break
        _RECENT[content] = (found, statuses)
    return found, statuses


_HASH = struct.Struct("<q")


@lru_cache(maxsize=262144)
def _word_bytes(word: str) -> bytes:
    found = text._word_tokens(word, True)
    return struct.pack(f"<{len(found)}q", *map(term_hash, found))


def encode_record(record: object) -> bytes:
    """A record's term hashes as stored: keyed ones it carries (a sealed memory's, see
    capsule.sealing.sealer), else those of its content."""
    given = getattr(record, "term_hashes", None)
    return given if given is not None else encode(record.content)  # type: ignore[attr-defined]


def record_hashes(record: object) -> np.ndarray:
    """:func:`encode_record` as int64 hashes, for a search index."""
    given = getattr(record, "term_hashes", None)
    return np.frombuffer(given, dtype="<i8").astype(np.int64) if given is not None else hashes(record.content)  # type: ignore[attr-defined]
