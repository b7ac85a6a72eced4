"""Strict HTTP at the edge (issue 31), with raw sockets against a real ``capsule serve``: repeated
JSON keys and huge integers refused by name, Content-Type and Content-Encoding required as
JSON in UTF-8 sent as it is, 431 for a big head in one read, no HTTP/0.9, 413 before
``100 Continue``, a 413 the client can read after sending 17 MiB, and a head timeout."""

from __future__ import annotations

import json
import socket
import time

import pytest

from functions import body as bodies

from .server import Server
from .test_http_front import assert_json_error, raw, split


def _post(server, body: bytes, headers: bytes = b"Content-Type: application/json\r\n") -> tuple[int, dict, bytes]:
    return split(
        raw(
            server,
            b"POST /v1/memories HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
            + server.token.encode()
            + b"\r\n"
            + headers
            + b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body)
            + body,
        )
    )


def _count(server, project: str) -> int:
    return len(server.request("GET", f"/v1/memories?project={project}").json["memories"])


def test_repeated_keys_are_refused_naming_the_key_and_nothing_is_stored(server):
    status, headers, body = _post(server, b'{"project": "dup-a", "content": "moved?", "project": "dup-b"}')
    assert status == 422
    error = assert_json_error(status, headers, body, "invalid_input")
    assert error["details"][0]["field"] == "project" and "more than once" in error["message"]
    status, headers, body = _post(server, b'{"project": "dup-a", "content": "x", "meta": {"tags": [], "tags": ["a"]}}')
    assert status == 422 and json.loads(body)["error"]["details"][0]["field"] == "meta.tags"
    assert _count(server, "dup-a") == 0 and _count(server, "dup-b") == 0


def test_an_integer_past_pythons_digit_limit_is_422_naming_the_field(server):
    status, headers, body = _post(server, b'{"project": "big", "content": "x", "meta": {"n": ' + b"9" * 5000 + b"}}")
    assert status == 422, body
    assert assert_json_error(status, headers, body, "invalid_input")["details"][0]["field"] == "meta.n"


@pytest.mark.parametrize(
    "header,field",
    [
        (b"", "content-type"),  # none
        (b"Content-Type: \r\n", "content-type"),  # empty
        (b"Content-Type: text/plain\r\n", "content-type"),
        (b"Content-Type: application/json; charset=utf-16\r\n", "content-type"),
        (b"Content-Type: application/json\r\nContent-Encoding: gzip\r\n", "content-encoding"),
    ],
)
def test_a_body_not_declared_as_utf8_json_sent_as_is_is_415(server, header, field):
    status, headers, body = _post(server, b'{"project": "ct", "content": "declared?"}', header)
    assert status == 415, body
    assert assert_json_error(status, headers, body, "unsupported_media_type")["details"][0]["field"] == field


def test_utf8_json_with_identity_encoding_is_taken(server):
    status, _, body = _post(
        server,
        b'{"project": "ct-ok", "content": "declared"}',
        b"Content-Type: application/json; charset=UTF-8\r\nContent-Encoding: identity\r\n",
    )
    assert status == 201, body


def test_a_100_kb_head_in_one_read_is_431(server):
    answer = raw(
        server,
        b"GET /v1/health HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
        + server.token.encode()
        + b"\r\nX-Big: "
        + b"a" * 100_000
        + b"\r\nConnection: close\r\n\r\n",
    )
    status, headers, body = split(answer)
    assert status == 431
    assert_json_error(status, headers, body, "headers_too_large")


def test_http_0_9_is_refused(server):
    status, headers, body = split(raw(server, b"GET /healthz\r\n\r\n"))
    assert status == 400
    assert "HTTP/0.9" in assert_json_error(status, headers, body, "bad_request")["message"]


def test_expect_100_continue_with_a_body_over_the_limit_gets_413_not_100(server):
    answer = raw(
        server,
        b"POST /v1/memories HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
        + server.token.encode()
        + b"\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: %d\r\n\r\n" % (2 << 20),
        timeout=10,
    )
    assert not answer.startswith(b"HTTP/1.1 100")
    status, headers, body = split(answer)
    assert status == 413 and headers["connection"] == "close"
    assert_json_error(status, headers, body, "payload_too_large")


def test_a_body_over_16_mib_still_reads_its_413(server):
    size = 17 << 20
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        sock.sendall(
            b"POST /v1/memories HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
            + server.token.encode()
            + b"\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % size
        )
        sock.sendall(b"x" * size)  # a reset here (the server closed with unread bytes) fails the test
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    status, headers, body = split(answer)
    assert status == 413
    assert_json_error(status, headers, body, "payload_too_large")


def test_a_head_that_does_not_arrive_in_time_is_408_and_closed(tmp_path):
    server = Server(tmp_path, "--head-timeout", "1")
    try:
        slow = socket.create_connection(("127.0.0.1", server.port), timeout=20)
        silent = socket.create_connection(("127.0.0.1", server.port), timeout=20)
        slow.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Slow: a")
        began = time.monotonic()
        answer = b""
        while chunk := slow.recv(65536):  # ends when the server closes
            answer += chunk
        waited = time.monotonic() - began
        status, headers, body = split(answer)
        assert status == 408 and headers["connection"] == "close"
        assert_json_error(status, headers, body, "request_timeout")
        while silent.recv(65536):  # a connection that sends nothing is closed too
            pass
        assert waited < 15  # the bound holds (a bound, not a speed claim)
        assert server.request("GET", "/healthz", token=None).status == 200  # others are served meanwhile
        slow.close()
        silent.close()
    finally:
        assert server.stop() == 0


def test_the_resolver_reads_the_body_parsed_once():
    event = {"body": '{"project": "p", "content": "once"}', "isBase64Encoded": False}
    parsed = bodies.parse(event)
    try:
        assert bodies.loads(event["body"]) is parsed  # the same object: no second parse
    finally:
        bodies.forget()
    assert bodies.loads(event["body"]) is not parsed  # another request's text is parsed afresh


@pytest.mark.parametrize(
    "text,field",
    [
        ('{"a": {"b": [{"c": 1, "c": 2}]}}', "a.b.0.c"),
        ('{"a": [-' + "1" * 4301 + "]}", "a.0"),
    ],
)
def test_repeats_and_huge_integers_are_named_where_they_are(text, field):
    refused = bodies.parse({"body": text})
    assert refused.field == field, refused
