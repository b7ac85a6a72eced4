"""Every explicit limit and bad input is a validation error naming its field."""

from __future__ import annotations

import pytest

from capsule.core import limits
from capsule.core.errors import InvalidInput
from capsule.core.models import IngestRequest, ListRequest, SearchRequest, StoreRequest
from capsule.service.memory_service import validate


def error_for(model, data) -> InvalidInput:
    with pytest.raises(InvalidInput) as info:
        validate(model, data)
    return info.value


def fields(exc: InvalidInput) -> set[str]:
    return {d["field"] for d in exc.details}


OK = {"project": "p", "content": "x"}


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({**OK, "content": ""}, "content"),
        ({**OK, "content": "é" * (limits.MAX_CONTENT_BYTES // 2 + 1)}, "content"),  # bytes, not characters
        ({**OK, "project": ""}, "project"),
        ({**OK, "project": "p" * (limits.MAX_PROJECT_CHARS + 1)}, "project"),
        ({**OK, "project": "a\x00b"}, "project"),
        ({**OK, "meta": {"tags": ["t"] * (limits.MAX_TAGS + 1)}}, "meta.tags"),
        ({**OK, "meta": {"tags": ["t" * (limits.MAX_TAG_CHARS + 1)]}}, "meta.tags.0"),
        ({**OK, "meta": {"$where": 1}}, "meta"),
        ({**OK, "meta": {"a.b": 1}}, "meta"),
        ({**OK, "meta": {"a\x00": 1}}, "meta"),
        ({**OK, "meta": {"nested": {"$set": 1}}}, "meta"),
        ({**OK, "meta": {"outcome_status": "great"}}, "meta.outcome_status"),
        ({**OK, "meta": {"blob": "x" * (limits.MAX_META_BYTES + 1)}}, "meta"),
        ({**OK, "pinned": "maybe"}, "pinned"),
        ({**OK, "occurred_at": "yesterday"}, "occurred_at"),
        ({**OK, "tenant": "someone-else"}, "tenant"),  # never taken from the body
        ({"content": "x"}, "project"),
    ],
)
def test_store_request_refuses(data, field):
    assert field in fields(error_for(StoreRequest, data))


def test_limits_are_inclusive():
    validate(
        StoreRequest,
        {
            **OK,
            "content": "a" * limits.MAX_CONTENT_BYTES,
            "project": "p" * limits.MAX_PROJECT_CHARS,
            "meta": {"tags": ["t" * limits.MAX_TAG_CHARS] * limits.MAX_TAGS},
        },
    )
    validate(IngestRequest, {"project": "p", "text": "a" * limits.MAX_INGEST_BYTES})


def test_ingest_text_limit_is_one_mebibyte():
    exc = error_for(IngestRequest, {"project": "p", "text": "a" * (limits.MAX_INGEST_BYTES + 1)})
    assert fields(exc) == {"text"} and "1048576" in exc.message


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"query": "q", "project": "p", "k": 0}, "k"),
        ({"query": "q", "project": "p", "k": limits.MAX_K + 1}, "k"),
        ({"query": "", "project": "p"}, "query"),
        ({"query": "q"}, "body"),
        # A time the store could not read back in UTC (year 10000), or one the schema does not allow.
        ({"query": "q", "project": "p", "filters": {"since": "9999-12-31T23:59:59-14:00"}}, "filters.since"),
        ({"query": "q", "project": "p", "filters": {"until": 1767225600}}, "filters.until"),
        ({"query": "q", "project": "p", "weights": {"vector": 2}}, "weights.vector"),
        ({"query": "q", "project": "p", "mode": "magic"}, "mode"),
    ],
)
def test_search_request_refuses(data, field):
    assert field in fields(error_for(SearchRequest, data))


def test_search_defaults():
    req = validate(SearchRequest, {"query": "q", "global": True})
    assert req.k == limits.DEFAULT_K == 8 and req.global_ and req.project is None


def test_list_limit_bounds():
    assert "limit" in fields(error_for(ListRequest, {"project": "p", "limit": limits.MAX_PAGE + 1}))


def test_error_message_names_the_field():
    exc = error_for(StoreRequest, {"project": "p", "content": ""})
    assert exc.message.startswith("content:") and exc.status == 422 and exc.to_dict()["code"] == "invalid_input"
