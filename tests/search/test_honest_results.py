"""Honest results: a hit needs a meaning or keyword match above a floor (``min_relevance``), and
the explanation names the signal that gave the top result the most of its score."""

from __future__ import annotations

import pytest

from capsule import InvalidInput
from capsule.search.hybrid import Scored, describe
from capsule.search.ranking import Weights


def store(service, content, **meta):
    return service.store_memory("t", {"project": "p", "content": content, "meta": meta}).memory.id


def search(service, query, **extra):
    return service.search("t", {"project": "p", "query": query, "k": 10, **extra})


def test_recency_and_outcome_alone_make_no_hit(service):
    store(service, "Pinning numpy below 2.0 made the wheel build pass.", outcome_status="success")
    store(service, "The staging database moved to a new host.")
    weak = search(service, "quarterly marketing offsite agenda", mode="vector", min_relevance=0).results
    assert weak and all(h.components.vector < 0.15 for h in weak)  # the hashing vectors overlap a little
    found = search(service, "quarterly marketing offsite agenda", mode="vector")  # the default floor
    assert found.results == [] and "nothing matched" in found.explanation


def test_a_match_above_the_floor_stays(service):
    wanted = store(service, "Pinning numpy below 2.0 made the wheel build pass.")
    store(service, "The staging database moved to a new host.")
    hits = search(service, "numpy wheel build", min_relevance=0.3).results
    assert [h.id for h in hits] == [wanted]
    assert hits[0].components.bm25 == 1.0


def test_min_relevance_is_bounded(service):
    with pytest.raises(InvalidInput) as err:
        search(service, "x", min_relevance=-0.1)
    assert "min_relevance" in str(err.value.details or err.value)


def scored(**parts) -> Scored:
    values = {
        "score": 0.0,
        "vector": 0.0,
        "bm25": 0.0,
        "time": 0.0,
        "feedback": 0.0,
        "outcome": 0.0,
        "boost": 0.0,
        "when": 0.0,
        **parts,
    }
    values["score"] = values["score"] or sum(values[k] for k in ("vector", "bm25", "time", "outcome", "boost"))
    return Scored(record=None, **values)


@pytest.mark.parametrize(
    "parts, says",
    [
        ({"vector": 0.62, "bm25": 0.2}, "by meaning (cosine 0.62)"),
        ({"vector": 0.08, "bm25": 1.0}, "by keyword (BM25 1.00 of the best)"),
        ({"vector": 0.08, "time": 0.9, "boost": 0.1, "when": 0.1, "outcome": 0.1}, "happened when the query says"),
        ({"vector": 0.08, "time": 1.0}, "by recency"),
        ({"vector": 0.05, "outcome": 0.1}, "by a recorded success"),
    ],
)
def test_the_explanation_names_what_ranked_the_top_result(parts, says):
    text = describe([scored(**parts)], Weights(vector=0.6, bm25=0.3, time=0.1, feedback=0.15))
    assert says in text and "of its score" in text
    if parts.get("vector", 0) < 0.1:
        assert "by meaning" not in text  # not "matched by meaning" at cosine 0.08
