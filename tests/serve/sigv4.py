"""Signing with botocore's own SigV4 signer, the way AWS clients sign for API Gateway."""

from __future__ import annotations

from datetime import UTC, datetime

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

SERVICE = "execute-api"


class SignedAt(SigV4Auth):
    """botocore's signer, at a chosen time (to make stale signatures)."""

    def __init__(self, credentials, service, region, at: datetime) -> None:
        super().__init__(credentials, service, region)
        self.at = at

    def add_auth(self, request):
        request.context["timestamp"] = self.at.strftime("%Y%m%dT%H%M%SZ")
        self._modify_request_before_signing(request)
        string_to_sign = self.string_to_sign(request, self.canonical_request(request))
        self._inject_signature_to_request(request, self.signature(string_to_sign, request))


def sign(
    method: str,
    url: str,
    body: bytes = b"",
    *,
    key: str,
    secret: str,
    region: str = "us-east-1",
    headers: dict[str, str] | None = None,
    at: datetime | None = None,
    service: str = SERVICE,
) -> dict[str, str]:
    """The headers (Authorization, X-Amz-Date, ...) botocore adds to this request."""
    request = AWSRequest(method=method, url=url, data=body, headers=dict(headers or {}))
    credentials = Credentials(key, secret)
    signer = SigV4Auth(credentials, service, region) if at is None else SignedAt(credentials, service, region, at)
    signer.add_auth(request)
    return dict(request.headers.items())


def now() -> datetime:
    return datetime.now(UTC)
