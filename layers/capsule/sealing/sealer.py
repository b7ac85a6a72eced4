"""A memory record sealed for the store, and opened again.

Sealed: the content, the explanation and the whole meta are AES-GCM tokens
(:mod:`.envelope`), bound to the tenant, the memory's id and the field; what a search index
needs stays usable without the text: the keyword term hashes are keyed (HMAC under a key
derived from the data key, so nobody without it can test a guessed word), and the session
and author an index groups by become keyed tags. Ids, the project, times, sizes, counters,
the vector and the path are not sealed.

Which memories are sealed: those the guard flagged (``meta._guard``), or every memory of a
project whose ``encryption`` setting is ``all``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core import text
from ..core.errors import KeyUnavailable
from ..core.records import MemoryRecord
from ..crypto import envelope
from ..crypto.keys import DataKey, Keyring, keyed_hash
from ..guard.policy import GUARD_KEY

SEALED_META = "_sealed"  # the one key of a sealed memory's stored meta
MODES = ("flagged", "all")
DEFAULT_MODE = "flagged"


@dataclass(slots=True)
class SealedRecord(MemoryRecord):
    """A record of a sealed memory (either form): the data key that sealed it (``kid.version``),
    its keyed term hashes (what the store and the index keep) and keyed facet tags."""

    sealed: str = ""
    term_hashes: bytes | None = None
    facet_tags: dict[str, str] | None = None


class Sealer:
    def __init__(self, keyring: Keyring, mode: Callable[[str, str], str | None]) -> None:
        self.keyring = keyring
        self._mode = mode

    def mode(self, tenant: str, project: str) -> str:
        return self._mode(tenant, project) or DEFAULT_MODE

    def wanted(self, record: MemoryRecord) -> bool:
        if envelope.is_sealed(record.content):
            return False  # already sealed (an import of sealed rows): kept as it is
        return bool(record.meta.get(GUARD_KEY)) or self.mode(record.tenant, record.project) == "all"

    # ---- sealing ---------------------------------------------------------------

    def seal(self, record: MemoryRecord) -> SealedRecord:
        key = self.keyring.current(record.tenant)
        token = self._sealer(key, record)
        out = _copy(record)
        out.content = token("content", record.content)
        out.meta = {SEALED_META: token("meta", json.dumps(record.meta, separators=(",", ":")))}
        out.explanation = None if record.explanation is None else token("explanation", record.explanation)
        out.sealed, out.term_hashes = key.label, keyed_terms(key, record.content).astype("<i8").tobytes()
        return out

    @staticmethod
    def _sealer(key: DataKey, record: MemoryRecord) -> Callable[[str, str], str]:
        def token(name: str, value: str) -> str:
            return envelope.seal(
                key.key,
                value.encode("utf-8", "surrogatepass"),
                aad=_aad(record, name),
                kid=key.kid,
                version=key.version,
            )

        return token

    # ---- opening ---------------------------------------------------------------

    def open(self, record: MemoryRecord) -> MemoryRecord:
        """The record as written (a sealed one opened; any other as it is)."""
        if not envelope.is_sealed(record.content):
            return record
        kid, version, _ = envelope.parse(record.content)
        key = self.keyring.key(record.tenant, kid, version)
        out = _copy(record)
        out.content = self._open(key, record, "content", record.content)
        meta = record.meta.get(SEALED_META)
        out.meta = json.loads(self._open(key, record, "meta", meta)) if meta else {}
        if record.explanation is not None:
            out.explanation = self._open(key, record, "explanation", record.explanation)
        out.sealed = key.label
        out.term_hashes = keyed_terms(key, out.content).astype("<i8").tobytes()
        out.facet_tags = {name: _tag(key, out.meta[name]) for name in ("session", "author") if name in out.meta}
        return out

    @staticmethod
    def _open(key: DataKey, record: MemoryRecord, name: str, token: Any) -> str:
        try:
            return envelope.open_token(key.key, token, aad=_aad(record, name)).decode("utf-8", "surrogatepass")
        except envelope.EnvelopeError as exc:
            raise KeyUnavailable(
                f"memory {record.id}: its {name} does not open under data key {key.label} (damaged or moved)"
            ) from exc

    def stale(self, record: MemoryRecord) -> bool:
        """An opened record sealed under an older data key than the tenant's current one."""
        label = getattr(record, "sealed", "")
        return bool(label) and label != self.keyring.current(record.tenant).label

    def term_variants(self, tenant: str, *, fresh: bool = False) -> Callable[[str], list[int]]:
        """The keyed hashes of a query term under each of the tenant's data keys (a sealed
        memory's postings are keyed under the key that sealed it); ``fresh``: the keys read
        from the key store, not this process's cache (another process may have rotated, and
        re-sealed memories under the new key)."""
        if not self.keyring.rows(tenant, fresh=fresh):
            return lambda term: []
        keys = [k.derived(b"terms") for k in self.keyring.versions(tenant)]
        return lambda term: [keyed_hash(k, term) for k in keys]


def keyed_terms(key: DataKey, content: str) -> np.ndarray:
    derived = key.derived(b"terms")
    found = text.tokens(content)
    return np.fromiter((keyed_hash(derived, t) for t in found), dtype=np.int64, count=len(found))


def _tag(key: DataKey, value: Any) -> str:
    return f"\x00{keyed_hash(key.derived(b'facets'), json.dumps(value, sort_keys=True)):x}"


def _aad(record: MemoryRecord, name: str) -> bytes:
    return "\x00".join([record.tenant, record.id, name]).encode("utf-8", "surrogatepass")


def _copy(record: MemoryRecord) -> SealedRecord:
    values = {name: getattr(record, name) for name in MemoryRecord.__dataclass_fields__}
    return SealedRecord(**values)
