"""How :class:`mcp_client.client.CapsuleClient` proves who it is: SigV4, an API key, or nothing.

Each auth object turns (method, url, headers, body) into the headers to send. None of them
ever puts a secret in a ``repr``, a log line or an exception message.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

from capsule.core.errors import InvalidInput, Unauthorized

SERVICE = "execute-api"
# https://{api-id}.execute-api.{region}.amazonaws.com
_REGION_IN_HOST = re.compile(r"\.execute-api\.([a-z0-9-]+)\.amazonaws\.com(\.cn)?$")


class Auth(Protocol):
    def headers(self, method: str, url: str, headers: Mapping[str, str], body: bytes) -> dict[str, str]:
        """The headers to send, ``headers`` included, with the credentials added."""


class NoAuth:
    source = "no credentials"

    def headers(self, method: str, url: str, headers: Mapping[str, str], body: bytes) -> dict[str, str]:
        return dict(headers)

    def __repr__(self) -> str:
        return "NoAuth()"


class BearerAuth:
    """An API key (or the local server's token) sent as ``Authorization: Bearer``."""

    def __init__(self, key: str, *, source: str = "an API key") -> None:
        key = key.strip()
        if not key:
            raise InvalidInput(f"the API key is empty ({source})", field="api_key")
        self._key = key
        self.source = source  # where the key came from, for error messages; never the key

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, key_file: str | Path | None = None) -> BearerAuth:
        """The key from ``key_file``, else ``CAPSULE_API_KEY``, else the file ``CAPSULE_API_KEY_FILE`` names."""
        environ = os.environ if environ is None else environ
        path = key_file or (None if environ.get("CAPSULE_API_KEY") else environ.get("CAPSULE_API_KEY_FILE"))
        if path:
            try:
                return cls(Path(path).expanduser().read_text("utf-8"), source=f"the API key in {path}")
            except OSError as exc:
                raise InvalidInput(
                    f"cannot read the API key file {path}: {exc.strerror}", field="api_key_file"
                ) from exc
        if environ.get("CAPSULE_API_KEY"):
            return cls(environ["CAPSULE_API_KEY"], source="the API key in CAPSULE_API_KEY")
        raise Unauthorized("no API key: set CAPSULE_API_KEY, or CAPSULE_API_KEY_FILE, or pass --api-key-file")

    def headers(self, method: str, url: str, headers: Mapping[str, str], body: bytes) -> dict[str, str]:
        return {**headers, "Authorization": f"Bearer {self._key}"}

    def __repr__(self) -> str:
        return "BearerAuth(key=***)"


class LazyAuth:
    """An auth made on first use, and again on each request while making it fails.

    A missing credential (no API key, no AWS credentials yet) then fails each call with the
    reason and what to set, instead of the whole server, and is picked up once it exists
    (``aws sso login``, a token file written by a ``capsule serve`` started later).
    """

    def __init__(self, make: Callable[[], Auth], describe: str) -> None:
        self._make = make
        self._auth: Auth | None = None
        self.describe = describe  # how it was chosen; never a secret

    def resolve(self) -> Auth:
        if self._auth is None:
            self._auth = self._make()
        return self._auth

    @property
    def sent(self) -> str:
        """What the requests carry, for a 401/403's message: the key's source, or the method."""
        return getattr(self._auth, "source", None) or self.describe

    def headers(self, method: str, url: str, headers: Mapping[str, str], body: bytes) -> dict[str, str]:
        return self.resolve().headers(method, url, headers, body)

    def __repr__(self) -> str:
        return f"LazyAuth({self.describe!r}, auth={self._auth!r})"


def region_from_url(url: str) -> str | None:
    """The AWS region an API Gateway URL names in its host, if it names one."""
    match = _REGION_IN_HOST.search(urlsplit(url).hostname or "")
    return match.group(1) if match else None


class SigV4Auth:
    """AWS Signature Version 4 for service ``execute-api``, as API Gateway's IAM auth expects.

    Credentials come from botocore's standard chain (environment, shared config and
    credentials files, SSO, container and instance roles), or are passed in. Refreshable
    credentials (SSO, assumed roles) are re-read for every request, so a long-lived MCP
    server keeps working after they rotate.
    """

    def __init__(
        self, region: str, *, credentials: Any = None, profile: str | None = None, service: str = SERVICE
    ) -> None:
        try:
            import botocore.session  # the 'aws' or 'mcp' extra
            from botocore.auth import SigV4Auth as _Signer
            from botocore.awsrequest import AWSRequest
        except ImportError as exc:
            raise InvalidInput("SigV4 signing needs botocore: pip install 'capsule-memory[mcp]'", field="auth") from exc
        if credentials is None:
            session = botocore.session.Session(profile=profile)
            credentials = session.get_credentials()
        if credentials is None:
            raise Unauthorized(
                "no AWS credentials found (environment, profile, SSO or role); run 'aws sso login' or set AWS_PROFILE"
            )
        self.region = region
        self.service = service
        self.source = f"a SigV4 signature (service {service}, region {region})"
        self._credentials = credentials
        self._signer_class = _Signer
        self._request_class = AWSRequest

    @classmethod
    def for_url(
        cls,
        url: str,
        *,
        region: str | None = None,
        profile: str | None = None,
        credentials: Any = None,
        environ: Mapping[str, str] | None = None,
    ) -> SigV4Auth:
        """The region is ``region``, else the one in the URL, else AWS_REGION / AWS_DEFAULT_REGION."""
        environ = os.environ if environ is None else environ
        region = region or region_from_url(url) or environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION")
        if not region:
            raise InvalidInput(
                "cannot tell the AWS region from the URL: pass --region or set AWS_REGION", field="region"
            )
        return cls(region, credentials=credentials, profile=profile)

    def headers(self, method: str, url: str, headers: Mapping[str, str], body: bytes) -> dict[str, str]:
        frozen = (
            self._credentials.get_frozen_credentials()
            if hasattr(self._credentials, "get_frozen_credentials")
            else self._credentials
        )
        request = self._request_class(method=method, url=url, data=body, headers=dict(headers))
        self._signer_class(frozen, self.service, self.region).add_auth(request)
        return dict(request.headers.items())

    def __repr__(self) -> str:
        return f"SigV4Auth(service={self.service!r}, region={self.region!r}, credentials=***)"


__all__ = ["Auth", "BearerAuth", "LazyAuth", "NoAuth", "SigV4Auth", "region_from_url", "SERVICE"]
