"""A failing dependency is a clear 5xx; nothing internal leaks into a response."""

import pytest

from capsule.embedders import HashingEmbedder
from capsule.errors import Unavailable
from capsule.service import MemoryService
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


@pytest.mark.parametrize("name, kwargs", [
    ("store", {"body": {"project": "p", "content": "c"}}),
    ("search", {"body": {"query": "q", "project": "p"}}),
    ("list", {"query": {"project": "p"}}),
    ("get", {"path_params": {"id": "abc"}}),
    ("health", {}),
])
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
