"""The shortcut (functions.shortcut) answers byte for byte as the Powertools resolver does, calls
the endpoint once, and leaves everything it does not serve to the resolver."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from capsule.core import models
from capsule.core.errors import NotFound, Unavailable
from functions import app
from functions.handlers import search, store

from .events import event

AT = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
HIT = models.SearchHit(
    id="m1",
    project="p",
    content='café ✓ "quoted" \u2028',
    score=0.123456789,
    components=models.Components(vector=0.5, bm25=1e-7, time=1.0, feedback=0.0, outcome=0.0),
    meta={"tags": ["ü"], "n": [1, 2.5, None, True]},
    occurred_at=AT,
    created_at=AT,
)


class Scripted:
    """A service whose search and store answer what the test says, counting the calls."""

    def __init__(self, outcome: Any) -> None:
        self.outcome, self.calls = outcome, 0

    def _answer(self, *_: Any) -> Any:
        self.calls += 1
        if isinstance(self.outcome, Exception):
            raise self.outcome
        return self.outcome

    search = store_memory = _answer


@pytest.fixture
def scripted():
    def use(outcome: Any) -> Scripted:
        fake = Scripted(outcome)
        app.set_service(fake)  # type: ignore[arg-type]
        return fake

    yield use
    app.set_service(None)


def by_resolver(handler, e: dict[str, Any]) -> dict[str, Any]:
    """What the resolver alone answers (as make_handler's handler ran it before the shortcut)."""
    token = app._tenant.set(app.tenant_of(e))
    try:
        return handler.resolver.resolve(e, app.LocalContext())
    finally:
        app._tenant.reset(token)


def counted(handler, monkeypatch) -> list[int]:
    calls = [0]
    resolve = handler.resolver.resolve

    def counting(*args: Any) -> Any:
        calls[0] += 1
        return resolve(*args)

    monkeypatch.setattr(handler.resolver, "resolve", counting)
    return calls


SEARCH_RESULT = models.SearchResult(results=[HIT], explanation="ünïcode explanation")


def test_store_and_search_take_the_shortcut():
    assert search.handler.shortcut is not None and store.handler.shortcut is not None


@pytest.mark.parametrize(
    "headers", [{"content-type": "application/json"}, {"content-type": "application/json; charset=utf-8"}]
)
def test_a_valid_search_is_answered_as_the_resolver_answers_it(scripted, monkeypatch, headers):
    fake = scripted(SEARCH_RESULT)
    e = event("search", body={"project": "p", "query": "café", "k": 3})
    e["headers"].pop("content-type")
    e["headers"].update(headers)
    resolves = counted(search.handler, monkeypatch)
    answered = search.handler(e, app.LocalContext())
    assert resolves == [0] and fake.calls == 1  # the shortcut answered, calling the endpoint once
    assert answered == by_resolver(search.handler, e)
    assert answered["statusCode"] == 200
    assert json.loads(answered["body"]) == SEARCH_RESULT.model_dump(mode="json")  # UTF-8 text, U+2028 included


def test_a_stored_memory_keeps_the_routes_201(service, monkeypatch):
    resolves = counted(store.handler, monkeypatch)
    e = event("store", body={"project": "p", "content": "ünïcode memory"})
    answered = store.handler(e, app.LocalContext())
    assert resolves == [0] and answered["statusCode"] == 201
    assert answered["headers"] == {"Content-Type": "application/json"} and answered["cookies"] == []
    assert answered["isBase64Encoded"] is False


@pytest.mark.parametrize(
    "outcome,status",
    [
        (Unavailable("the database is locked"), 503),
        (NotFound("no such project"), 404),
        (RuntimeError("a bug"), 500),
        ({"results": "not a list"}, 422),  # not the declared model: what the resolver answers (its validation)
    ],
)
def test_an_endpoint_that_fails_is_answered_by_the_resolver_and_runs_once(scripted, monkeypatch, outcome, status):
    fake = scripted(outcome)
    e = event("search", body={"project": "p", "query": "q"})
    resolves = counted(search.handler, monkeypatch)
    answered = search.handler(e, app.LocalContext())
    assert fake.calls == 1 and resolves == [1]  # replayed to the resolver, not called again
    assert answered["statusCode"] == status
    fake.calls = 0
    assert answered == by_resolver(search.handler, e) and fake.calls == 1
    if status == 503:
        assert answered["headers"]["Retry-After"] == "1"


@pytest.mark.parametrize(
    "body,headers",
    [
        ({"project": "p", "query": "q", "k": "5"}, {}),  # refused by the model: 422 naming k
        ({"project": "p", "query": "q", "kk": 5}, {}),  # unknown field
        ({"project": "p", "query": "q"}, {"content-type": "Application/JSON"}),  # Powertools: not JSON
        ({"project": "p", "query": "q"}, {"content-type": "application/vnd.x+json"}),  # ours passes, Powertools 415s
    ],
)
def test_what_the_shortcut_does_not_serve_the_resolver_answers(scripted, monkeypatch, body, headers):
    fake = scripted(SEARCH_RESULT)
    e = event("search", body=body)
    e["headers"].update(headers)
    answered = search.handler(e, app.LocalContext())
    assert answered["statusCode"] in (415, 422) and fake.calls == 0
    assert answered == by_resolver(search.handler, e)


def test_another_path_goes_to_the_resolver(scripted, monkeypatch):
    scripted(SEARCH_RESULT)
    e = event("search", body={"project": "p", "query": "q"})
    e["rawPath"] = "/v1/memories/search/"
    resolves = counted(search.handler, monkeypatch)
    answered = search.handler(e, app.LocalContext())
    assert resolves == [1] and answered == by_resolver(search.handler, e)
