"""Fixpacks (solutions) are guarded on the way in too: create, update and import."""

from pathlib import Path

import pytest

from capsule.core.clock import FrozenClock
from capsule.core.errors import InvalidInput
from capsule.guard.policy import Policies
from capsule.learning import LearningService
from capsule.learning.safe_regex import compile_safe
from capsule.store.sqlite import SQLiteStore
from capsule.store.sqlite_learning import SQLiteLearningStore

from .corpus import AKIA, AWS_SECRET
from .test_guard_service import RecordingEmbedder


def fixpack():
    return {
        "title": "S3 upload denied",
        "signatures": [{"text": f"AccessDenied for {AKIA}", "regexes": [f"AccessDenied for {AKIA}"]}],
        "steps": [{"step_order": 1, "kind": "env", "payload": {"name": "AWS_SECRET_ACCESS_KEY", "value": AWS_SECRET}}],
    }


@pytest.fixture
def world(tmp_path):
    store = SQLiteStore(tmp_path / "capsule.db")
    store.migrate()
    learning_store = SQLiteLearningStore(store)
    learning_store.migrate()
    embedder = RecordingEmbedder()
    yield (
        store,
        embedder,
        lambda policies: LearningService(learning_store, store, embedder, clock=FrozenClock(), guard=policies),
    )
    store.close()


def files_bytes(path: str) -> bytes:
    p = Path(path)
    return b"".join(f.read_bytes() for f in p.parent.iterdir() if f.name.startswith(p.name))


def test_a_fixpack_key_is_redacted_everywhere(world):
    store, embedder, make = world
    learning = make(Policies())
    result = learning.create_solution("t1", fixpack())
    sig = result.solution.signatures[0]
    assert sig.text == "AccessDenied for [REDACTED:aws-access-key]"
    assert compile_safe(sig.regexes[0]).search(sig.text)  # still a pattern, matching the redacted text
    assert "redacted aws-access-key" in result.explanation
    raw = files_bytes(store.path)
    assert AKIA.encode() not in raw and AWS_SECRET.encode() not in raw
    assert not any(AKIA in t for t in embedder.seen)
    updated = learning.update_solution("t1", result.solution.id, fixpack())
    assert "redacted" in updated.explanation and AKIA.encode() not in files_bytes(store.path)


def test_a_fixpack_is_refused_with_the_field(world):
    store, embedder, make = world
    learning = make(Policies(secrets="refuse"))
    with pytest.raises(InvalidInput) as caught:
        learning.create_solution("t1", fixpack())
    assert caught.value.field == "signatures.0.text" and "aws-access-key" in caught.value.message
    with pytest.raises(InvalidInput):
        learning.import_solution("t1", fixpack())
    assert learning.list_solutions("t1").solutions == [] and embedder.seen == []
