"""What wraps a tenant's data key: a local key file, AWS KMS, or the caller's own key.

Each wrapper makes new data keys and wraps/unwraps them, binding the tenant as context (AES-GCM
associated data locally, the KMS encryption context hosted), so a wrapped key copied to another
tenant does not open. Failures become our errors: :class:`~capsule.core.errors.KeyUnavailable` (503)
when the wrapping key cannot be used (file unreadable, KMS down or not allowed),
:class:`~capsule.core.errors.KeyRefused` (403) when a key given does not open the data key.
"""

from __future__ import annotations

import base64
import hashlib
import os
from pathlib import Path
from typing import Any, Protocol

from ..core import deadline
from ..core.errors import InvalidInput, KeyRefused, KeyUnavailable, Unavailable

KEY_BYTES = 32
KMS_CALL_S = 6.0  # a KMS call's whole budget, retries included, when the request leaves that much
KMS_CONNECT_S = 1.0  # connecting to KMS's regional endpoint takes milliseconds; more is an outage
KMS_MIN_ATTEMPT_S = 1.5  # a second attempt only when each would get at least this long
KMS_STEP_S = 0.25  # clients are kept by budget in steps of this
from .context import BYOK_HEADER  # noqa: E402


class KeyWrapper(Protocol):
    @property
    def id(self) -> str:
        """Names the wrapping key (kept beside each wrapped data key)."""

    def new_data_key(self, tenant: str) -> tuple[bytes, bytes]:
        """A fresh data key: (plaintext, wrapped)."""

    def wrap(self, data_key: bytes, tenant: str) -> bytes: ...

    def unwrap(self, wrapped: bytes, tenant: str) -> bytes: ...


def _fingerprint(key: bytes, label: bytes) -> str:
    return hashlib.sha256(label + b"\x00" + key).hexdigest()[:16]


class _AesWrapper:
    """AES-256-GCM key wrapping under a key held in this process."""

    kind = "aes"

    def __init__(self, key: bytes) -> None:
        self._key = key
        self.id = f"{self.kind}:{_fingerprint(key, self.kind.encode())}"

    def new_data_key(self, tenant: str) -> tuple[bytes, bytes]:
        key = os.urandom(KEY_BYTES)
        return key, self.wrap(key, tenant)

    def wrap(self, data_key: bytes, tenant: str) -> bytes:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        nonce = os.urandom(12)
        return nonce + AESGCM(self._key).encrypt(nonce, data_key, tenant.encode())

    def unwrap(self, wrapped: bytes, tenant: str) -> bytes:
        from cryptography.exceptions import InvalidTag
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        try:
            return AESGCM(self._key).decrypt(wrapped[:12], wrapped[12:], tenant.encode())
        except (InvalidTag, ValueError) as exc:
            raise self._refused() from exc

    def _refused(self) -> Exception:
        return KeyUnavailable(f"the key {self.id} does not open this tenant's data key")


class LocalKeyFile(_AesWrapper):
    """The embedded mode's wrapping key: 32 random bytes in a file readable by its owner only
    (0600), created on first use in the data folder. Losing the file loses the sealed data."""

    kind = "local"

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._loaded: _AesWrapper | None = None  # read (or made) on first use, not at start-up

    @property
    def _key(self) -> bytes:  # type: ignore[override]
        if self._loaded is None:
            self._loaded = _AesWrapper(self._load())
        return self._loaded._key

    @property
    def id(self) -> str:  # type: ignore[override]
        return f"{self.kind}:{_fingerprint(self._key, self.kind.encode())}"

    def _load(self) -> bytes:
        try:
            return self._read()
        except FileNotFoundError:
            pass
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # another process made it first: use theirs
            return self._read()
        with os.fdopen(fd, "wb") as handle:
            handle.write(base64.b64encode(os.urandom(KEY_BYTES)) + b"\n")
        return self._read()

    def _read(self) -> bytes:
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            raise
        except OSError as exc:
            raise KeyUnavailable(f"the key file {self.path} cannot be read: {exc.strerror}") from exc
        try:
            key = base64.b64decode(raw.strip(), validate=True)
        except ValueError:
            key = b""
        if len(key) != KEY_BYTES:
            raise KeyUnavailable(f"the key file {self.path} does not hold a 32-byte key (base64)")
        return key

    def _refused(self) -> Exception:
        return KeyUnavailable(
            f"the key file {self.path} ({self.id}) does not open this tenant's data key:"
            " it is not the file the data was sealed under"
        )


class CustomerKey(_AesWrapper):
    """A tenant's own key, sent with each request (``X-Capsule-BYOK``: 32 bytes, base64) and
    never stored: without it the tenant's sealed memories cannot be opened."""

    kind = "byok"

    @classmethod
    def from_header(cls, value: str) -> CustomerKey:
        try:
            key = base64.b64decode(value.strip(), validate=True)
        except ValueError:
            key = b""
        if len(key) != KEY_BYTES:
            raise InvalidInput(f"{BYOK_HEADER}: must be 32 bytes in base64 (44 characters)", field=BYOK_HEADER)
        return cls(key)

    def _refused(self) -> Exception:
        return KeyRefused(f"the key in {BYOK_HEADER} ({self.id}) does not open this tenant's data key")


class KmsWrapper:
    """Hosted: data keys made and wrapped by AWS KMS (GenerateDataKey, Encrypt, Decrypt) under
    ``key_id`` (the stack's key or the customer's, by ARN), the tenant as encryption context.
    ``client`` is a botocore KMS client (tests pass one with a Stubber)."""

    def __init__(self, client: Any, key_id: str) -> None:
        self._given = client  # None: boto3 clients made on first use (not at a cold start), by budget
        self._made: dict[float, Any] = {}
        self.key_id = key_id
        self.id = f"kms:{key_id}"

    def new_data_key(self, tenant: str) -> tuple[bytes, bytes]:
        answer = self._call(
            "GenerateDataKey",
            "generate_data_key",
            KeyId=self.key_id,
            KeySpec="AES_256",
            EncryptionContext={"tenant": tenant},
        )
        return answer["Plaintext"], answer["CiphertextBlob"]

    def wrap(self, data_key: bytes, tenant: str) -> bytes:
        answer = self._call(
            "Encrypt", "encrypt", KeyId=self.key_id, Plaintext=data_key, EncryptionContext={"tenant": tenant}
        )
        return answer["CiphertextBlob"]

    def unwrap(self, wrapped: bytes, tenant: str) -> bytes:
        answer = self._call(
            "Decrypt",
            "decrypt",
            KeyId=self.key_id,
            CiphertextBlob=wrapped,
            EncryptionContext={"tenant": tenant},
        )
        return answer["Plaintext"]

    def _client(self, seconds: float) -> Any:
        """A client whose attempts, connection and reads included, end within ``seconds``.

        boto3's defaults (60 s to connect, 60 s to read, several retries) outlast any request, and
        a Lambda function killed at its timeout answers nothing; so the client is made for the
        budget: two attempts when there is room, one otherwise. Clients are kept by budget in
        KMS_STEP_S steps, rounded down (a handful at most: nearly every call has the full one)."""
        if self._given is not None:
            return self._given
        step = max(KMS_STEP_S, seconds - seconds % KMS_STEP_S)
        client = self._made.get(step)
        if client is None:
            import boto3  # the 'aws' extra, in the Lambda runtime
            from botocore.config import Config

            attempts = 2 if step >= 2 * KMS_MIN_ATTEMPT_S else 1
            per_attempt = step / attempts
            connect = min(KMS_CONNECT_S, per_attempt / 2)
            config = Config(
                connect_timeout=connect,
                read_timeout=per_attempt - connect,
                retries={"total_max_attempts": attempts, "mode": "standard"},  # the first try included
            )
            client = self._made[step] = boto3.client("kms", config=config)
        return client

    def _call(self, name: str, method: str, **params: Any) -> dict[str, Any]:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            seconds = deadline.budget(KMS_CALL_S, what=f"ask AWS KMS to {name}")
        except Unavailable as exc:
            raise KeyUnavailable(str(exc)) from exc
        try:
            return getattr(self._client(seconds), method)(**params)
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "error")
            raise KeyUnavailable(
                f"AWS KMS refused {name} on {self.key_id}: {code} ({exc.response.get('Error', {}).get('Message', '')})"
            ) from exc
        except BotoCoreError as exc:
            raise KeyUnavailable(f"AWS KMS could not be reached for {name} on {self.key_id}: {exc}") from exc


class NoKeys:
    """Where no wrapping key is configured (hosted without a KMS key): nothing can be sealed or
    opened, and every attempt says why (503), never stores plaintext in its place."""

    id = "none"

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def new_data_key(self, tenant: str) -> tuple[bytes, bytes]:
        raise KeyUnavailable(self.reason)

    def wrap(self, data_key: bytes, tenant: str) -> bytes:
        raise KeyUnavailable(self.reason)

    def unwrap(self, wrapped: bytes, tenant: str) -> bytes:
        raise KeyUnavailable(self.reason)
