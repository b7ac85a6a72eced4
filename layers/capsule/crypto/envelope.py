"""One value sealed with AES-256-GCM, as a self-describing text token.

``cme1.<key id>.<version>.<base64url(nonce || ciphertext+tag)>``: the key id names what wraps
the data key (a local key file's fingerprint, a KMS key, a customer's key) and the version
which of the tenant's data keys sealed it, so after a rotation or with a customer key there is
never a guess which key opens it. The associated data binds a token to its place (tenant,
memory id, field): a token copied into another memory or field does not open.
"""

from __future__ import annotations

import base64
import os
import re

PREFIX = "cme1"
_TOKEN = re.compile(r"cme1\.([A-Za-z0-9_:-]{1,80})\.([0-9]{1,9})\.([A-Za-z0-9_-]+={0,2})")
NONCE = 12


class EnvelopeError(ValueError):
    """A token that is not one, or that the key given does not open."""


def seal(key: bytes, plaintext: bytes, *, aad: bytes, kid: str, version: int) -> str:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM  # loaded on first use: start-up stays quick

    nonce = os.urandom(NONCE)
    sealed = AESGCM(key).encrypt(nonce, plaintext, _aad(aad, kid, version))
    return f"{PREFIX}.{kid}.{version}.{base64.urlsafe_b64encode(nonce + sealed).decode()}"


def parse(token: str) -> tuple[str, int, bytes]:
    """(key id, version, nonce + ciphertext) of a token; EnvelopeError when it is not one."""
    found = _TOKEN.fullmatch(token) if isinstance(token, str) else None
    if found is None:
        raise EnvelopeError("not a sealed value")
    return found.group(1), int(found.group(2)), base64.urlsafe_b64decode(found.group(3))


def is_sealed(value: object) -> bool:
    return isinstance(value, str) and value.startswith(PREFIX + ".") and _TOKEN.fullmatch(value) is not None


def open_token(key: bytes, token: str, *, aad: bytes) -> bytes:
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    kid, version, blob = parse(token)
    try:
        return AESGCM(key).decrypt(blob[:NONCE], blob[NONCE:], _aad(aad, kid, version))
    except (InvalidTag, ValueError) as exc:
        raise EnvelopeError("the key does not open this value") from exc


def _aad(aad: bytes, kid: str, version: int) -> bytes:
    return b"\x00".join([PREFIX.encode(), kid.encode(), str(version).encode(), aad])
