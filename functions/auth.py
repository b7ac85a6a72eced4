"""Who is calling: the local gateway's authorizer, as pure functions.

Three kinds of credentials, each giving the ``requestContext.authorizer`` block that API
Gateway would put in the event:

- ``Authorization: AWS4-HMAC-SHA256 ...`` — AWS Signature Version 4, verified exactly as API
  Gateway's IAM auth does (canonical request, signed headers including host and the date,
  payload hash, credential scope ``date/region/execute-api/aws4_request``, 5 minutes of clock
  skew, constant-time comparison). The verified principal becomes ``{"iam": {...}}``.
- ``Authorization: Bearer <token or API key>`` (or ``x-api-key``) — the local token or a named
  API key, compared by hash in constant time; it becomes ``{"lambda": {"tenant": ...}}``, the
  shape a Lambda authorizer's context has.
- nothing — :class:`~capsule.core.errors.Unauthorized` (401).

A SigV4 request that is well formed but wrong (unknown key, bad signature, stale date) is
:class:`~capsule.core.errors.Forbidden` (403), as API Gateway answers.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import quote, unquote

from capsule.core.errors import Forbidden, Unauthorized

ALGORITHM = "AWS4-HMAC-SHA256"
SERVICE = "execute-api"
MAX_SKEW = timedelta(minutes=5)
AMZ_DATE = "%Y%m%dT%H%M%SZ"


@dataclass(frozen=True)
class HttpRequest:
    """What the verifier needs of one request, as it arrived on the wire."""

    method: str
    raw_path: str  # percent-encoded, as sent
    raw_query: str  # as sent, without '?'
    headers: Sequence[tuple[str, str]]  # every header line, names in any case
    body: bytes

    def header_values(self, name: str) -> list[str]:
        name = name.lower()
        return [v for k, v in self.headers if k.lower() == name]

    def header(self, name: str) -> str | None:
        values = self.header_values(name)
        return ",".join(values) if values else None


@dataclass(frozen=True)
class SigV4Key:
    access_key_id: str
    secret: str
    tenant: str


@dataclass(frozen=True)
class Bearer:
    """A verified token or API key: its name, tenant and scope (None: the tenant's full access)."""

    name: str
    tenant: str
    scope: Mapping[str, Any] | None = None


# ---- SigV4 ------------------------------------------------------------------------------


@dataclass(frozen=True)
class SigV4Authorization:
    access_key_id: str
    date: str
    region: str
    service: str
    terminator: str
    signed_headers: tuple[str, ...]
    signature: str

    @property
    def scope(self) -> str:
        return f"{self.date}/{self.region}/{self.service}/{self.terminator}"


_PART = re.compile(r"\s*(Credential|SignedHeaders|Signature)\s*=\s*([^,\s]*)\s*")


def parse_authorization(header: str) -> SigV4Authorization:
    """Split ``AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=...``."""
    algorithm, _, rest = header.strip().partition(" ")
    if algorithm != ALGORITHM:
        raise Forbidden(f"unsupported signing algorithm {algorithm!r}; use {ALGORITHM}")
    parts = {}
    for piece in rest.split(","):
        match = _PART.fullmatch(piece)
        if not match:
            raise Forbidden(f"Authorization header is malformed near {piece.strip()[:40]!r}")
        parts[match.group(1)] = match.group(2)
    missing = [p for p in ("Credential", "SignedHeaders", "Signature") if not parts.get(p)]
    if missing:
        raise Forbidden(f"Authorization header requires the {', '.join(missing)} parameter(s)")
    credential = parts["Credential"].split("/")
    if len(credential) != 5:
        raise Forbidden("Credential must be ACCESS_KEY_ID/DATE/REGION/SERVICE/aws4_request")
    signed = tuple(h.strip().lower() for h in parts["SignedHeaders"].split(";") if h.strip())
    return SigV4Authorization(*credential, signed_headers=signed, signature=parts["Signature"].lower())


def remove_dot_segments(path: str) -> str:
    """RFC 3986 5.2.4, and (as AWS requires) empty segments from doubled slashes dropped."""
    out: list[str] = []
    for segment in path.split("/"):
        if segment == "..":
            if out:
                out.pop()
        elif segment and segment != ".":
            out.append(segment)
    first = "/" if path.startswith("/") else ""
    last = "/" if path.endswith("/") and out else ""
    return first + "/".join(out) + last


def canonical_uri(raw_path: str) -> str:
    """Dot segments removed, then every segment URI-encoded again (services other than S3)."""
    return quote(remove_dot_segments(raw_path) if raw_path else "/", safe="/~")


def _encode(text: str) -> str:
    return quote(text, safe="-_.~")


def canonical_query(raw_query: str) -> str:
    """Each name and value decoded, then RFC 3986 encoded; sorted by name, then value."""
    pairs = []
    for item in raw_query.split("&") if raw_query else []:
        name, _, value = item.partition("=")
        pairs.append((_encode(unquote(name)), _encode(unquote(value))))
    return "&".join(f"{n}={v}" for n, v in sorted(pairs))


def _trim(value: str) -> str:
    return " ".join(value.strip().split())


def canonical_headers(request: HttpRequest, names: Sequence[str]) -> str:
    lines = []
    for name in names:
        values = request.header_values(name)
        if not values:
            raise Forbidden(f"the signed header {name!r} is not in the request")
        lines.append(f"{name}:{','.join(_trim(v) for v in values)}\n")
    return "".join(lines)


def canonical_request(request: HttpRequest, signed_headers: Sequence[str]) -> str:
    return "\n".join(
        [
            request.method.upper(),
            canonical_uri(request.raw_path),
            canonical_query(request.raw_query),
            canonical_headers(request, signed_headers),
            ";".join(signed_headers),
            hashlib.sha256(request.body).hexdigest(),  # the body received, whatever a header claims
        ]
    )


def string_to_sign(amz_date: str, scope: str, canonical: str) -> str:
    return "\n".join([ALGORITHM, amz_date, scope, hashlib.sha256(canonical.encode("utf-8")).hexdigest()])


def signing_key(secret: str, date: str, region: str, service: str = SERVICE) -> bytes:
    key = f"AWS4{secret}".encode()
    for part in (date, region, service, "aws4_request"):
        key = hmac.new(key, part.encode("utf-8"), hashlib.sha256).digest()
    return key


def signature(secret: str, auth: SigV4Authorization, amz_date: str, canonical: str) -> str:
    key = signing_key(secret, auth.date, auth.region, auth.service)
    return hmac.new(key, string_to_sign(amz_date, auth.scope, canonical).encode("utf-8"), hashlib.sha256).hexdigest()


def request_time(request: HttpRequest) -> tuple[str, datetime]:
    """The signed time: ``x-amz-date`` (basic ISO 8601), else ``date`` (RFC 1123)."""
    amz = request.header("x-amz-date")
    try:
        if amz is not None:
            return amz, datetime.strptime(amz, AMZ_DATE).replace(tzinfo=UTC)
        date = request.header("date")
        if date is not None:
            when = parsedate_to_datetime(date).astimezone(UTC)
            return when.strftime(AMZ_DATE), when
    except (ValueError, TypeError) as exc:
        raise Forbidden("the request date is not a valid x-amz-date (YYYYMMDDTHHMMSSZ)") from exc
    raise Forbidden("the request needs an x-amz-date or date header")


def _check_scope(auth: SigV4Authorization, amz_date: str, region: str) -> None:
    if auth.service != SERVICE:
        raise Forbidden(f"credential scope names service {auth.service!r}; this is {SERVICE!r}")
    if auth.region != region:
        raise Forbidden(f"credential scope names region {auth.region!r}; this endpoint is in {region!r}")
    if auth.terminator != "aws4_request":
        raise Forbidden("credential scope must end with aws4_request")
    if auth.date != amz_date[:8]:
        raise Forbidden("credential scope date does not match the request date")


def _check_signed_headers(auth: SigV4Authorization, request: HttpRequest) -> None:
    date_header = "x-amz-date" if request.header("x-amz-date") is not None else "date"
    required = {"host", date_header}
    if request.header("x-amz-security-token") is not None:
        required.add("x-amz-security-token")
    missing = sorted(required - set(auth.signed_headers))
    if missing:
        raise Forbidden(f"SignedHeaders must include {', '.join(missing)}")


def verify_sigv4(
    request: HttpRequest, key_for: Callable[[str], SigV4Key | None], *, now: datetime, region: str
) -> dict[str, Any]:
    """Verify a SigV4-signed request; return the ``authorizer`` block with the IAM principal."""
    auth = parse_authorization(request.header("authorization") or "")
    amz_date, when = request_time(request)
    _check_scope(auth, amz_date, region)
    _check_signed_headers(auth, request)
    if abs(now - when) > MAX_SKEW:
        raise Forbidden(
            f"Signature expired: {amz_date} is more than 5 minutes from the server's time {now.strftime(AMZ_DATE)}"
        )
    key = key_for(auth.access_key_id)
    if key is None:
        raise Forbidden("The security token included in the request is invalid.")
    expected = signature(key.secret, auth, amz_date, canonical_request(request, auth.signed_headers))
    if not hmac.compare_digest(expected, auth.signature):
        raise Forbidden("The request signature we calculated does not match the signature you provided.")
    return {
        "iam": {
            "accessKey": key.access_key_id,
            "accountId": "000000000000",
            "callerId": key.access_key_id,
            "cognitoIdentity": None,
            "principalOrgId": None,
            "userArn": key.tenant,
            "userId": key.tenant,
        }
    }


# ---- tokens and API keys --------------------------------------------------------------


def key_hash(secret: str) -> str:
    """How a token or API key is kept at rest (they are random, so one SHA-256 suffices)."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def bearer_secret(request: HttpRequest) -> str | None:
    header = request.header("authorization")
    if header:
        scheme, _, value = header.strip().partition(" ")
        if scheme.lower() == "bearer" and value.strip():
            return value.strip()
        return None
    return (request.header("x-api-key") or "").strip() or None


def verify_bearer(secret: str, known: Mapping[str, Bearer]) -> dict[str, Any]:
    """``known`` maps the sha256 of each valid token/key to who it is."""
    digest = key_hash(secret)
    found = None
    for stored, who in known.items():  # every entry compared: the time says nothing
        if hmac.compare_digest(stored, digest):
            found = who
    if found is None:
        raise Unauthorized("the token or API key is not valid (revoked, or never issued)")
    context: dict[str, Any] = {"tenant": found.tenant, "key": found.name}
    if found.scope:  # JSON text: an authorizer's context carries plain values (functions.scopes reads it)
        context["scope"] = json.dumps(dict(found.scope), sort_keys=True)
    return {"lambda": context}


def authorize(
    request: HttpRequest,
    *,
    bearers: Callable[[], Mapping[str, Bearer]],
    sigv4_keys: Callable[[str], SigV4Key | None],
    now: datetime,
    region: str,
) -> dict[str, Any]:
    """The ``requestContext.authorizer`` block for this request, or Unauthorized/Forbidden."""
    header = (request.header("authorization") or "").strip()
    if header.startswith(ALGORITHM):
        return verify_sigv4(request, sigv4_keys, now=now, region=region)
    secret = bearer_secret(request)
    if secret is None:
        if header:
            raise Unauthorized("unsupported Authorization scheme; use Bearer or AWS4-HMAC-SHA256")
        raise Unauthorized("missing credentials: send Authorization: Bearer <token or API key>, or sign with SigV4")
    return verify_bearer(secret, bearers())
