"""Wiring: a store made a sealed store, with the wrapping key the deployment has."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..crypto.keys import Keyring
from ..crypto.wrappers import KeyWrapper, KmsWrapper, LocalKeyFile, NoKeys
from .sealedstore import SealedStore
from .sealer import Sealer

KEY_FILE = "keys/capsule.key"  # under the data folder


def key_store(store: Any) -> Any:
    """The :class:`~capsule.crypto.keys.KeyStore` in the same database as ``store``."""
    from ..store.sqlite import SQLiteStore

    store = getattr(store, "backing_store", store)
    if isinstance(store, SQLiteStore):
        from ..store.sqlite_keys import SQLiteKeyStore

        return SQLiteKeyStore(store)
    from ..store.mongo_keys import MongoKeyStore

    return MongoKeyStore(store.db)


def wrapper_for(settings: Any, *, kms_client: Any = None) -> KeyWrapper:
    """KMS when a key is configured; else the local key file of the embedded store; else none
    (every seal and open then fails with the reason, and nothing is stored unsealed)."""
    if settings.kms_key_id:
        return KmsWrapper(kms_client, settings.kms_key_id)
    if settings.store == "sqlite":
        return LocalKeyFile(Path(settings.data_dir) / KEY_FILE)
    return NoKeys(
        "no key wraps this deployment's data keys: set CAPSULE_KMS_KEY_ID (the stack's KMS key)"
        " to store memories that must be encrypted"
    )


class _Modes:
    """Projects' encryption setting, read at most every few seconds per project."""

    TTL_S = 5.0

    def __init__(self, keys: Any) -> None:
        self._keys = keys
        self._held: dict[tuple[str, str], tuple[float, str | None]] = {}

    def __call__(self, tenant: str, project: str) -> str | None:
        held = self._held.get((tenant, project))
        if held is None or time.monotonic() - held[0] > self.TTL_S:
            held = self._held[(tenant, project)] = (time.monotonic(), self._keys.encryption_mode(tenant, project))
        return held[1]

    def forget(self, tenant: str, project: str) -> None:
        self._held.pop((tenant, project), None)


def sealed(store: Any, wrapper: KeyWrapper, *, clock: Callable[[], Any]) -> SealedStore:
    keys = key_store(store)
    modes = _Modes(keys)
    sealer = Sealer(Keyring(keys, wrapper, clock=clock), modes)
    sealer.modes = modes  # type: ignore[attr-defined]  # set_encryption drops the held value
    return SealedStore(store, sealer)


def set_encryption(store: Any, tenant: str, project: str, mode: str, *, at: Any) -> str:
    """Set a project's ``encryption``; returns the sentence the settings' explanation says."""
    from ..core.errors import InvalidInput

    sealer = getattr(store, "sealer", None)
    if sealer is None:
        raise InvalidInput(
            "encryption: this store encrypts nothing at rest (it was opened without capsule.crypto)", field="encryption"
        )
    sealer.keyring.store.set_encryption_mode(tenant, project, mode, at=at)
    sealer.modes.forget(tenant, project)
    if mode == "all":
        return (
            "encrypts every memory stored or changed from now on at rest (earlier ones as they are"
            " next written, or by the retention job)"
        )
    return "encrypts at rest only the memories with secrets or personal data found, from now on"
