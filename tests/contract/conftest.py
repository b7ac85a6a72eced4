"""The store backends the contract suite runs against.

Every backend in ``BACKENDS`` gets the same tests. A backend that cannot run here (a real
MongoDB without ``CAPSULE_TEST_MONGODB_URI``) is skipped with its reason.
"""

from __future__ import annotations

from typing import Callable, Iterator

import pytest


def _sqlite(tmp_path) -> Iterator:
    from capsule.store.sqlite import SQLiteStore

    store = SQLiteStore(tmp_path / "contract.db")
    store.migrate()
    yield store
    store.close()


BACKENDS: dict[str, Callable] = {"sqlite": _sqlite}


@pytest.fixture(params=sorted(BACKENDS))
def store(request, tmp_path):
    yield from BACKENDS[request.param](tmp_path)
