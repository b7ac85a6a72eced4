"""The local gateway's credentials, kept in the data folder, every file mode 0600.

- ``gateway-token``: the bearer token made on first run (tenant ``local``, the same tenant
  the ``capsule`` command uses on this machine).
- ``api-keys.json``: named API keys, each ``{"sha256", "tenant", "created_at"}`` and, for a
  scoped key, ``"scope"`` (functions.scopes); the keys themselves are shown once when made
  and never stored.
- ``sigv4-keys.json``: access keys the gateway verifies SigV4 signatures for, each
  ``{"secret", "tenant"}``. A SigV4 verifier needs the secret itself, so this file is the
  one secret store; keep it as private as ``~/.aws/credentials``.

Files are re-read when they change, so ``capsule keys ...`` takes effect on a running server.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import threading
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from capsule.core.errors import Conflict, InvalidInput, NotFound

from .auth import Bearer, SigV4Key, key_hash

LOCAL_TENANT = "local"
TOKEN_FILE = "gateway-token"
KEYS_FILE = "api-keys.json"
SIGV4_FILE = "sigv4-keys.json"
KEY_PREFIX = "cmk_"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_ACCESS_KEY = re.compile(r"[A-Z0-9]{16,128}")


def write_private(path: Path, text: str) -> None:
    """Write ``text`` atomically to a new file that only the owner can read."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _check_name(name: str, what: str = "name") -> str:
    if not _NAME.fullmatch(name):
        raise InvalidInput(
            f"{what} must be 1-64 letters, digits, '_', '.' or '-', starting with a letter or digit", field=what
        )
    return name


def _check_tenant(tenant: str) -> str:
    if not tenant or len(tenant) > 512 or "\x00" in tenant:
        raise InvalidInput("tenant must be 1-512 characters without NUL", field="tenant")
    return tenant


def file_version(path: str) -> tuple[int, int, int] | None:
    """What changes when a file is written again (write_private replaces it: a new inode), or
    None when there is none. One stat of a plain string path: this runs on every request."""
    try:
        stat = os.stat(path)
    except FileNotFoundError:
        return None
    return stat.st_ino, stat.st_mtime_ns, stat.st_size


class _JsonFile:
    """One JSON object on disk, cached until the file changes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._where = str(path)
        self._seen: tuple[int, int, int] | None = None
        self._data: dict[str, Any] = {}
        self._lock = threading.Lock()

    def version(self) -> tuple[int, int, int] | None:
        return file_version(self._where)

    def read(self) -> dict[str, Any]:
        seen = self.version()
        if seen is None:
            return {}
        with self._lock:
            if self._seen != seen:
                self._data = json.loads(self.path.read_text("utf-8") or "{}")
                self._seen = seen
            return dict(self._data)

    def write(self, data: dict[str, Any]) -> None:
        write_private(self.path, json.dumps(data, indent=2, sort_keys=True) + "\n")


class Credentials:
    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(data_dir)
        self._keys = _JsonFile(self.data_dir / KEYS_FILE)
        self._sigv4 = _JsonFile(self.data_dir / SIGV4_FILE)
        self._token_where = str(self.data_dir / TOKEN_FILE)
        self._token: tuple[tuple[int, int, int], str] | None = None  # the file's version -> the token's hash
        # (keys file version, token file version) -> bearers(): rebuilt only when either changes
        self._bearers: tuple[tuple[Any, Any], dict[str, Bearer]] | None = None

    # ---- the token ----

    @property
    def token_path(self) -> Path:
        return self.data_dir / TOKEN_FILE

    def ensure_token(self) -> tuple[str, bool]:
        """The token, and whether it was made just now."""
        if self.token_path.exists():
            return self.token_path.read_text("utf-8").strip(), False
        token = secrets.token_urlsafe(32)
        write_private(self.token_path, token + "\n")
        return token, True

    # ---- named API keys ----

    def create_key(self, name: str, tenant: str = LOCAL_TENANT, scope: Mapping[str, Any] | None = None) -> str:
        """Make a key; the key itself is returned once and only its hash is kept. ``scope``
        (functions.scopes; None: the tenant's full access) is checked strictly first."""
        keys = self._keys.read()
        if _check_name(name) in keys:
            raise Conflict(f"an API key named {name!r} exists; revoke it first")
        from .scopes import parse_scope  # pydantic: loaded only to make a key, never on a warm route

        limits = parse_scope(scope or {}).plain()
        key = KEY_PREFIX + secrets.token_urlsafe(32)
        keys[name] = {
            "sha256": key_hash(key),
            "tenant": _check_tenant(tenant),
            "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
            **({"scope": limits} if limits else {}),
        }
        self._keys.write(keys)
        return key

    def list_keys(self) -> list[dict[str, Any]]:
        return [
            {
                "name": n,
                "tenant": k["tenant"],
                "created_at": k["created_at"],
                **({"scope": k["scope"]} if k.get("scope") else {}),
            }
            for n, k in sorted(self._keys.read().items())
        ]

    def revoke_key(self, name: str) -> None:
        keys = self._keys.read()
        if name not in keys:
            raise NotFound(f"no API key named {name!r}")
        del keys[name]
        self._keys.write(keys)

    def bearers(self) -> Mapping[str, Bearer]:
        """sha256 -> who, for the token and every API key (read-only: the same mapping is
        handed out until the key file or the token changes; this runs on every request)."""
        versions = (self._keys.version(), file_version(self._token_where))
        cached = self._bearers
        if cached is not None and cached[0] == versions:
            return cached[1]
        known = {h["sha256"]: Bearer(name, h["tenant"], h.get("scope")) for name, h in self._keys.read().items()}
        token = self._token_hash(versions[1])
        if token is not None:
            known[token] = Bearer("token", LOCAL_TENANT)
        self._bearers = (versions, known)
        return known

    def _token_hash(self, seen: tuple[int, int, int] | None) -> str | None:
        """The token's hash, read again only when the file changes."""
        if seen is None:
            return None
        if self._token is None or self._token[0] != seen:
            self._token = (seen, key_hash(self.token_path.read_text("utf-8").strip()))
        return self._token[1]

    # ---- SigV4 access keys ----

    def add_sigv4(self, access_key_id: str, secret: str, tenant: str) -> None:
        if not _ACCESS_KEY.fullmatch(access_key_id):
            raise InvalidInput("access key id must be 16-128 upper-case letters or digits", field="access_key_id")
        if len(secret) < 16:
            raise InvalidInput("the secret must be at least 16 characters", field="secret")
        keys = self._sigv4.read()
        keys[access_key_id] = {"secret": secret, "tenant": _check_tenant(tenant)}
        self._sigv4.write(keys)

    def remove_sigv4(self, access_key_id: str) -> None:
        keys = self._sigv4.read()
        if access_key_id not in keys:
            raise NotFound(f"no SigV4 access key {access_key_id!r}")
        del keys[access_key_id]
        self._sigv4.write(keys)

    def list_sigv4(self) -> list[dict[str, str]]:
        return [{"access_key_id": k, "tenant": v["tenant"]} for k, v in sorted(self._sigv4.read().items())]

    def sigv4_key(self, access_key_id: str) -> SigV4Key | None:
        entry = self._sigv4.read().get(access_key_id)
        return None if entry is None else SigV4Key(access_key_id, entry["secret"], entry["tenant"])
