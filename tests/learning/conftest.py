"""The ``world`` fixture: a real SQLite store in a temporary folder, the hashing embedder
(behind a switch that can make it unavailable) and a frozen clock."""

import pytest
from learning_helpers import World, make_world


@pytest.fixture
def world(tmp_path) -> World:
    w = make_world(tmp_path / "capsule.db")
    yield w
    w.store.close()
