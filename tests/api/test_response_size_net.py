"""The handler wrapper's safety net (functions.app.fitted): an answer Lambda would refuse
(over 6 MB as it sends it, the body escaped again) is answered with a 413 naming what to ask
less of, instead of a failed invocation that no retry cures."""

from __future__ import annotations

import json

import pytest

from capsule.core import wire
from functions import app, routes

from .events import event


def _response(body: str) -> dict:
    return {"statusCode": 200, "headers": {"Content-Type": "application/json"}, "body": body, "isBase64Encoded": False}


def test_small_answers_pass_untouched_and_uncounted():
    r = _response(json.dumps({"a": "b" * 1000}))
    assert app.fitted(routes.by_name("search"), r) is r


@pytest.mark.parametrize(
    ("text", "route", "fields"),
    [
        ('\\"' * 1_600_000, "search", ["k", "include_superseded"]),  # 3.2 MB of text, 6.4 MB escaped
        ("\u65e5" * 1_100_000, "list", ["limit"]),  # 1.1 M characters, 6.6 MB as \\uXXXX
        ('"' * 3_200_000, "get", []),
    ],
)
def test_an_answer_over_lambdas_limit_is_a_413_naming_what_to_reduce(text, route, fields):
    body = json.dumps({"content": text}, ensure_ascii=False)
    assert len(body.encode()) < wire.LAMBDA_RESPONSE_BYTES or route != "list"  # its escaping is what passes
    r = app.fitted(routes.by_name(route), _response(body))
    assert r["statusCode"] == 413
    error = json.loads(r["body"])["error"]
    assert error["code"] == "response_too_large" and "reduce" in error["message"]
    assert [d["field"] for d in error["details"] or []] == fields
    assert len(json.dumps(r)) < 10_000


def test_just_under_the_limit_passes():
    body = json.dumps({"content": "x" * (wire.LAMBDA_RESPONSE_BYTES - 40_000)})
    assert app.fitted(routes.by_name("search"), _response(body))["statusCode"] == 200


def test_a_search_too_large_is_answered_413_through_the_handler(service, call, monkeypatch):
    for n in range(5):
        content = f"note {n}: " + '{"level": "error", "path": "C:\\\\Users\\\\dev"} ' * 200
        assert call(event("store", body={"project": "big", "content": content})).status == 201
    found = call(event("search", body={"project": "big", "query": "error Users dev", "k": 5}))
    assert found.status == 200 and len(found.json["results"]) == 5
    monkeypatch.setattr(wire, "LAMBDA_RESPONSE_BYTES", 60_000)  # a small Lambda, the same rule
    refused = call(event("search", body={"project": "big", "query": "error Users dev", "k": 5}))
    assert refused.status == 413, refused
    assert [d["field"] for d in refused.json["error"]["details"]] == ["k", "include_superseded"]
    # Asking for less fits.
    assert call(event("search", body={"project": "big", "query": "error Users dev", "k": 1})).status == 200
