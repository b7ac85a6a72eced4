"""Each tenant's data keys: made on first use, kept wrapped, opened once per process.

A tenant has data keys numbered 1, 2, ... (the newest seals what is written; every one still
opens what it sealed), each with a random key id, kept wrapped by a :mod:`wrapper <.wrappers>`
in the store (:class:`KeyStore`). Rotating makes a new data key (what was sealed under the old
ones is re-sealed lazily, on read, write and by the retention job); re-wrapping wraps the same
data keys under another wrapping key (a new key file, KMS, a customer's key) and re-seals nothing.

A tenant whose keys are wrapped by its own key (``byok:...``) must send that key with every
request: the unwrapped keys this process keeps are used only for a request that sent it.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Protocol

from ..core.errors import Conflict, KeyRefused, KeyUnavailable
from .context import request_key  # noqa: E402  (the customer key of the request being served)
from .wrappers import BYOK_HEADER, CustomerKey, KeyWrapper


@dataclass(slots=True)
class DataKeyRow:
    tenant: str
    kid: str
    version: int
    wrapped: bytes
    wrapped_by: str
    created_at: datetime


class KeyStore(Protocol):
    def data_keys(self, tenant: str) -> list[DataKeyRow]:
        """The tenant's data keys, oldest (version 1) first."""

    def add_data_key(self, row: DataKeyRow) -> bool:
        """Keep a new data key; False (nothing written) when its version is taken."""

    def rewrap_data_key(self, tenant: str, version: int, wrapped: bytes, wrapped_by: str, *, was: str) -> bool:
        """Replace a data key's wrapped form, if it is still wrapped by ``was``."""

    def encryption_mode(self, tenant: str, project: str) -> str | None:
        """The project's ``encryption`` setting ('flagged' | 'all'), None when not set."""

    def set_encryption_mode(self, tenant: str, project: str, mode: str, *, at: datetime) -> None: ...


@dataclass(frozen=True, slots=True)
class DataKey:
    kid: str
    version: int
    key: bytes

    @property
    def label(self) -> str:
        return f"{self.kid}.{self.version}"

    def derived(self, purpose: bytes) -> bytes:
        return _derive(self.key, purpose)


@lru_cache(maxsize=1024)  # a few keys per tenant: derived once, not on every memory sealed or opened
def _derive(key: bytes, purpose: bytes) -> bytes:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"capsule " + purpose).derive(key)


class Keyring:
    def __init__(self, store: KeyStore, wrapper: KeyWrapper, *, clock: Callable[[], datetime]) -> None:
        self.store = store
        self.wrapper = wrapper
        self.clock = clock
        self._lock = threading.Lock()
        self._open: dict[tuple[str, str, int, str], DataKey] = {}  # (tenant, kid, version, wrapped_by)
        self._rows: dict[str, tuple[float, list[DataKeyRow]]] = {}

    # ---- reading -----------------------------------------------------------

    ROWS_TTL_S = 5.0  # another process (a worker, the rotate command) may add a key meanwhile

    def rows(self, tenant: str, *, fresh: bool = False) -> list[DataKeyRow]:
        held = self._rows.get(tenant)
        if fresh or held is None or time.monotonic() - held[0] > self.ROWS_TTL_S:
            held = self._rows[tenant] = (time.monotonic(), self.store.data_keys(tenant))
        return held[1]

    def check(self, tenant: str) -> None:
        """Raise unless this request may read the tenant's sealed data (its own key, if it has one)."""
        rows = self.rows(tenant)
        if rows:
            self._wrapper_for(rows[-1])

    def current(self, tenant: str) -> DataKey:
        """The data key that seals what is written now (made on the tenant's first use)."""
        rows = self.rows(tenant)
        if not rows:
            rows = self._create(tenant)
        return self._unwrapped(rows[-1])

    def key(self, tenant: str, kid: str, version: int) -> DataKey:
        """The data key a token names; raises KeyUnavailable when the tenant has none such."""
        for rows in (self.rows(tenant), self.rows(tenant, fresh=True)):  # another process may have rotated
            for row in rows:
                if row.version == version and row.kid == kid:
                    return self._unwrapped(row)
        raise KeyUnavailable(
            f"data key {kid}.{version} of this tenant is not in the key store: the sealed value cannot be opened"
        )

    def versions(self, tenant: str) -> list[DataKey]:
        return [self._unwrapped(row) for row in self.rows(tenant)]

    def _wrapper_for(self, row: DataKeyRow) -> KeyWrapper:
        if row.wrapped_by.startswith(CustomerKey.kind + ":"):
            given = request_key.get()
            if given is None:
                raise KeyRefused(
                    f"this tenant's data is sealed under its own key ({row.wrapped_by}): send it in {BYOK_HEADER}"
                )
            if given.id != row.wrapped_by:
                raise KeyRefused(
                    f"the key in {BYOK_HEADER} ({given.id}) is not the one this tenant's data"
                    f" is sealed under ({row.wrapped_by})"
                )
            return given
        if row.wrapped_by != self.wrapper.id:
            raise KeyUnavailable(
                f"this tenant's data key {row.kid}.{row.version} is wrapped by {row.wrapped_by},"
                f" and this server holds {self.wrapper.id}: configure that key, or re-wrap"
            )
        return self.wrapper

    def _unwrapped(self, row: DataKeyRow) -> DataKey:
        wrapper = self._wrapper_for(row)  # first: a cached key is no excuse to skip the customer's
        cache_key = (row.tenant, row.kid, row.version, row.wrapped_by)
        found = self._open.get(cache_key)
        if found is None:
            found = DataKey(row.kid, row.version, wrapper.unwrap(row.wrapped, row.tenant))
            self._open[cache_key] = found
        return found

    # ---- writing -----------------------------------------------------------

    def _create(self, tenant: str) -> list[DataKeyRow]:
        wrapper = request_key.get() or self.wrapper
        self._add(tenant, 1, wrapper)
        return self.rows(tenant, fresh=True)

    def _add(self, tenant: str, version: int, wrapper: KeyWrapper) -> DataKeyRow | None:
        plain, wrapped = wrapper.new_data_key(tenant)
        row = DataKeyRow(tenant, os.urandom(4).hex(), version, wrapped, wrapper.id, self.clock())
        if not self.store.add_data_key(row):
            return None  # another process made it first
        # Held as made: no unwrap call (a KMS round trip) for the key this process just made.
        self._open[(tenant, row.kid, version, row.wrapped_by)] = DataKey(row.kid, version, plain)
        return row

    def rotate(self, tenant: str) -> DataKeyRow:
        """A new data key for what is written from now on; the old ones still open what they sealed."""
        with self._lock:
            rows = self.rows(tenant, fresh=True)
            if not rows:
                self._create(tenant)
                return self.rows(tenant)[-1]
            wrapper = self._wrapper_for(rows[-1])
            made = self._add(tenant, rows[-1].version + 1, wrapper)
            if made is None:
                raise Conflict("another rotation of this tenant's data key ran at the same time; try again")
            self.rows(tenant, fresh=True)
            return made

    def rewrap(self, tenant: str, to: KeyWrapper) -> int:
        """Wrap every data key of the tenant under ``to`` (the data keys stay, nothing is re-sealed);
        returns how many were re-wrapped."""
        done = 0
        with self._lock:
            for row in self.rows(tenant, fresh=True):
                if row.wrapped_by == to.id:
                    continue
                key = self._unwrapped(row)
                if self.store.rewrap_data_key(tenant, row.version, to.wrap(key.key, tenant), to.id, was=row.wrapped_by):
                    done += 1
            self.rows(tenant, fresh=True)
        return done


def keyed_hash(key: bytes, value: str) -> int:
    """A 63-bit keyed hash (HMAC-SHA256) of a term: the same shape as capsule.search.terms.term_hash."""
    digest = hmac.new(key, value.encode("utf-8", "surrogatepass"), hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "little") >> 1
