"""A failing dependency is a clear 5xx; nothing internal leaks into a response."""

import json
import logging

import pytest

from capsule.core.errors import Unavailable
from capsule.embedders import HashingEmbedder
from capsule.service.memory_service import MemoryService
from functions import app

from .events import event


class BrokenStore:
    """Every store method fails the way ``failure`` says."""

    def __init__(self, failure: Exception) -> None:
        self.failure = failure

    def __getattr__(self, name):
        def fail(*args, **kwargs):
            raise self.failure

        return fail


@pytest.fixture
def broken():
    def use(failure: Exception) -> None:
        app.set_service(MemoryService(BrokenStore(failure), HashingEmbedder()))

    yield use
    app.set_service(None)


@pytest.mark.parametrize(
    "name, kwargs",
    [
        ("store", {"body": {"project": "p", "content": "c"}}),
        ("search", {"body": {"query": "q", "project": "p"}}),
        ("list", {"query": {"project": "p"}}),
        ("get", {"path_params": {"id": "abc"}}),
        ("health", {}),
    ],
)
def test_store_unavailable_is_503(call, broken, name, kwargs):
    broken(Unavailable("the database is locked"))
    r = call(event(name, **kwargs))
    assert r.status == 503
    assert r.json["error"] == {"code": "unavailable", "message": "the database is locked", "details": None}


def test_unexpected_error_is_500_without_internals(call, broken):
    broken(RuntimeError("disk at /secret/path exploded"))
    r = call(event("store", body={"project": "p", "content": "c"}))
    assert r.status == 500 and r.json["error"]["code"] == "internal"
    assert "secret" not in r.raw["body"] and "Traceback" not in r.raw["body"]


def _json_lines(text):
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            out.append(json.loads(line))
    return out


class Lines(logging.Handler):
    """Keeps each record as the handler's own JSON formatter renders it."""

    def __init__(self):
        super().__init__()
        self.lines = []
        self.setFormatter(app.logger.registered_formatter)

    def emit(self, record):
        self.lines.append(json.loads(self.format(record)))


def test_log_lines_carry_the_request_id_as_correlation_id(call, broken):
    lines = Lines()
    app.logger.addHandler(lines)
    try:
        broken(Unavailable("the database is locked"))
        e = event("get", path_params={"id": "abc"})
        assert call(e).status == 503
    finally:
        app.logger.removeHandler(lines)
    logged = [line for line in lines.lines if line.get("message") == "request failed"]
    assert logged and logged[-1]["correlation_id"] == e["requestContext"]["requestId"]
    assert logged[-1]["level"] == "WARNING" and logged[-1]["service"] == "capsule-memory"


def test_each_operation_emits_its_emf_metric(service, call, capsys, monkeypatch):
    monkeypatch.delenv("POWERTOOLS_METRICS_DISABLED", raising=False)
    capsys.readouterr()
    call(event("projects"))
    call(event("get", path_params={"id": "missing"}))
    emf = [line for line in _json_lines(capsys.readouterr().out) if "_aws" in line]
    names = [m["Name"] for line in emf for d in line["_aws"]["CloudWatchMetrics"] for m in d["Metrics"]]
    assert names == ["projects", "get"]
    assert {d["Namespace"] for line in emf for d in line["_aws"]["CloudWatchMetrics"]} == {"CapsuleMemory"}
