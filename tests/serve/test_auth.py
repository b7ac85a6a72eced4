"""functions.auth: SigV4 verified as API Gateway does, checked against botocore's signer."""

from datetime import timedelta
from urllib.parse import urlsplit

import pytest

from capsule.core.errors import Forbidden, Unauthorized
from functions.auth import (
    Bearer,
    HttpRequest,
    SigV4Key,
    authorize,
    canonical_query,
    canonical_uri,
    key_hash,
    parse_authorization,
    verify_bearer,
    verify_sigv4,
)

from .sigv4 import now, sign

KEY = SigV4Key("AKIDEXAMPLE1234567", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "arn:aws:iam::000000000000:user/ci")
URL = "http://127.0.0.1:8787/v1/memories/search?b=2&a=1&project=my%20proj&x="
BODY = b'{"query": "sqlite", "project": "api"}'


def request(url=URL, body=BODY, method="POST", *, tamper=None, **sign_kwargs) -> HttpRequest:
    headers = sign(
        method,
        url,
        body,
        key=sign_kwargs.pop("key", KEY.access_key_id),
        secret=sign_kwargs.pop("secret", KEY.secret),
        headers={"content-type": "application/json"},
        **sign_kwargs,
    )
    headers.setdefault("host", urlsplit(url).netloc)
    parts = urlsplit(url)
    lines = list(headers.items())
    if tamper:
        lines, body = tamper(lines, body)
    return HttpRequest(method, parts.path, parts.query, lines, body)


def keys(access_key_id):
    return KEY if access_key_id == KEY.access_key_id else None


def verify(req, **kwargs):
    return verify_sigv4(req, keys, now=kwargs.pop("at", now()), region=kwargs.pop("region", "us-east-1"))


def test_botocore_signature_verifies_and_names_the_principal():
    authorizer = verify(request())
    assert authorizer["iam"]["userArn"] == KEY.tenant
    assert authorizer["iam"]["accessKey"] == KEY.access_key_id


@pytest.mark.parametrize(
    "url, method, body",
    [
        ("http://127.0.0.1:8787/v1/memories", "GET", b""),
        ("http://127.0.0.1:8787/v1/memories?project=a%2Fb&limit=5&cursor=abc-_.~", "GET", b""),
        ("http://127.0.0.1:8787/v1/memories/abc123/feedback", "POST", b'{"helpful": true}'),
        ("http://localhost/v1/memories/abc123", "DELETE", b""),
        ("http://127.0.0.1:8787/v1/projects/settings", "PUT", '{"project": "caf\u00e9"}'.encode()),
    ],
)
def test_canonical_form_matches_botocore(url, method, body):
    assert verify(request(url, body, method))["iam"]["userArn"] == KEY.tenant


def test_tampered_body_is_403():
    with pytest.raises(Forbidden, match="signature we calculated does not match"):
        verify(request(tamper=lambda lines, body: (lines, body.replace(b"sqlite", b"secret"))))


def test_tampered_query_or_path_is_403():
    req = request()
    for changed in (
        HttpRequest(req.method, req.raw_path, req.raw_query + "&extra=1", req.headers, req.body),
        HttpRequest(req.method, "/v1/memories", req.raw_query, req.headers, req.body),
        HttpRequest("PUT", req.raw_path, req.raw_query, req.headers, req.body),
    ):
        with pytest.raises(Forbidden):
            verify(changed)


def test_tampered_signed_header_is_403():
    def other_host(lines, body):
        return [(k, "evil.example" if k.lower() == "host" else v) for k, v in lines], body

    with pytest.raises(Forbidden):
        verify(request(tamper=other_host))


def test_wrong_secret_is_403():
    with pytest.raises(Forbidden, match="does not match"):
        verify(request(secret="not-the-secret-at-all"))


def test_unknown_access_key_is_403():
    with pytest.raises(Forbidden, match="security token"):
        verify(request(key="AKIDUNKNOWN0000000"))


@pytest.mark.parametrize("minutes", [-6, 6])
def test_stale_or_future_date_is_403(minutes):
    with pytest.raises(Forbidden, match="expired"):
        verify(request(at=now() + timedelta(minutes=minutes)))


def test_skew_within_five_minutes_is_accepted():
    assert verify(request(at=now() - timedelta(minutes=4)))


@pytest.mark.parametrize(
    "region, service, match",
    [
        ("eu-west-1", "execute-api", "region"),
        ("us-east-1", "s3", "service"),
    ],
)
def test_scope_must_name_this_region_and_execute_api(region, service, match):
    with pytest.raises(Forbidden, match=match):
        verify(request(region=region, service=service))


def test_host_and_date_must_be_signed():
    def unsign_host(lines, body):
        out = []
        for k, v in lines:
            if k.lower() == "authorization":
                v = v.replace("SignedHeaders=content-type;host;x-amz-date", "SignedHeaders=content-type;x-amz-date")
            out.append((k, v))
        return out, body

    with pytest.raises(Forbidden, match="host"):
        verify(request(tamper=unsign_host))


def test_malformed_authorization_is_403():
    for header in (
        "AWS4-HMAC-SHA256 Credential=AKID/20260101/us-east-1/execute-api/aws4_request",
        "AWS4-HMAC-SHA256 Credential=x, SignedHeaders=host, Signature=00",
        "AWS4-HMAC-SHA256 garbage",
    ):
        with pytest.raises(Forbidden):
            parse_authorization(header)


def test_canonical_pieces():
    assert canonical_uri("/v1/./memories//x/../y") == "/v1/memories/y"
    assert canonical_uri("/a%20b") == "/a%2520b"  # segments are encoded again, as for every non-S3 service
    assert canonical_query("b=2&a=1&a=0&c=x%20y&d") == "a=0&a=1&b=2&c=x%20y&d="


# ---- bearer tokens and API keys --------------------------------------------------------


def plain(headers):
    return HttpRequest("GET", "/v1/projects", "", list(headers.items()), b"")


KNOWN = {key_hash("tok-local"): Bearer("token", "local"), key_hash("cmk_abc"): Bearer("ci", "team")}


def test_token_and_keys_map_to_their_tenant():
    assert verify_bearer("tok-local", KNOWN) == {"lambda": {"tenant": "local", "key": "token"}}
    kwargs = dict(bearers=lambda: KNOWN, sigv4_keys=keys, now=now(), region="us-east-1")
    assert authorize(plain({"Authorization": "Bearer cmk_abc"}), **kwargs)["lambda"]["tenant"] == "team"
    assert authorize(plain({"X-Api-Key": "cmk_abc"}), **kwargs)["lambda"]["tenant"] == "team"


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer wrong"},
        {"Authorization": "Basic dTpw"},
        {"Authorization": "Bearer "},
        {"X-Api-Key": "tok-local2"},
    ],
)
def test_missing_or_bad_bearer_is_401(headers):
    with pytest.raises(Unauthorized):
        authorize(plain(headers), bearers=lambda: KNOWN, sigv4_keys=keys, now=now(), region="us-east-1")
