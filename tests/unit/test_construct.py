"""capsule.search.construct.built makes the very model model_construct makes, for values naming every field."""

from __future__ import annotations

from datetime import UTC, datetime

from capsule.core import models
from capsule.search.construct import built

AT = datetime(2026, 3, 1, tzinfo=UTC)


def same(a, b) -> bool:
    state = ("__pydantic_fields_set__", "__pydantic_extra__", "__pydantic_private__")
    return (
        a == b and list(a.__dict__) == list(b.__dict__) and all(getattr(a, name) == getattr(b, name) for name in state)
    )


def test_built_is_model_construct_for_every_field():
    components = {"vector": 0.5, "bm25": 0.25, "time": 1.0, "feedback": 0.0, "outcome": 0.1, "boost": 0.0}
    hit = {
        "id": "m1",
        "project": "p",
        "path": None,
        "chunk": None,
        "content": "x",
        "score": 0.7,
        "components": models.Components.model_construct(**components),
        "pinned": False,
        "meta": {"k": [1]},
        "occurred_at": AT,
        "created_at": AT,
        "retention": "replaceable",
        "visibility": "private",
        "subject": None,
        "supersedes": None,
        "superseded": [],
    }
    assert same(built(models.Components, dict(components)), models.Components.model_construct(**components))
    assert same(built(models.Chunk, {"index": 1, "of": 3}), models.Chunk.model_construct(index=1, of=3))
    assert same(built(models.SearchHit, dict(hit)), models.SearchHit.model_construct(**hit))
    # the model's own field order: a caller naming every field in it builds what pydantic builds
    assert list(hit) == list(models.SearchHit.model_fields)
    assert (
        built(models.SearchHit, dict(hit)).model_dump_json()
        == models.SearchHit.model_construct(**hit).model_dump_json()
    )


def test_built_refuses_values_that_miss_a_field_or_its_order():
    import pytest

    with pytest.raises(TypeError, match="needs the fields"):
        built(models.Chunk, {"index": 1})
    with pytest.raises(TypeError, match="needs the fields"):
        built(models.Chunk, {"of": 3, "index": 1})
