"""Each ranking signal moves results the way it should, with exact component values.

The corpus is fixed, the embedder is the deterministic hashing one and the clock is frozen,
so every component is known: cosine from the stored vectors, BM25 from the reference
implementation in :mod:`capsule.search.ranking`, time decay and the Wilson bound from their formulas.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from capsule import InvalidInput
from capsule.core.text import tokens
from capsule.search import ranking
from capsule.search.hybrid import SearchOptions

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)  # the clock fixture's time

CORPUS = [
    ("deploy", "Deploy failed: the worker could not reach redis.railway.internal (ENOTFOUND)"),
    ("twin", "Deploy failed: the worker could not reach redis.railway.internal (ENOTFOUND) again"),
    ("mongo", "Mongo insert raised E11000 duplicate key on users.email"),
    ("gateway", "The gateway answered HTTP 503 while the pods restarted"),
]


def store_corpus(service, **extra_meta):
    ids = {}
    for name, content in CORPUS:
        meta = extra_meta.get(name, {})
        result = service.store_memory(
            "t",
            {
                "project": "p",
                "content": content,
                "meta": meta,
                "occurred_at": NOW - timedelta(days=extra_meta.get(f"{name}_age", 0)),
            },
        )
        ids[name] = result.memory.id
    return ids


def by_id(result):
    return {hit.id: hit for hit in result.results}


def test_components_are_exact_and_sum_to_the_score(service):
    ids = store_corpus(service)
    query = "worker cannot reach redis ENOTFOUND"
    result = service.search("t", {"project": "p", "query": query, "k": 4})
    hits = by_id(result)
    q = service.embedder.embed([query])[0]
    docs = [content for _, content in CORPUS]
    vectors = service.embedder.embed(docs)
    keyword = ranking.bm25(tokens(query), [tokens(d) for d in docs])
    keyword = keyword / keyword.max()
    for i, (name, _) in enumerate(CORPUS):
        if ids[name] not in hits:  # below the relevance floor on both: not a match
            assert max(keyword[i], float(vectors[i] @ q)) < SearchOptions().min_relevance
            continue
        c = hits[ids[name]].components
        assert c.vector == pytest.approx(max(0.0, float(vectors[i] @ q)), abs=1e-6)
        assert c.bm25 == pytest.approx(keyword[i], abs=1e-6)
        assert (c.time, c.feedback, c.outcome) == (1.0, 0.0, 0.0)
        expected = 0.60 * c.vector + 0.30 * c.bm25 + 0.10 * c.time + 0.15 * c.feedback + c.outcome
        assert hits[ids[name]].score == pytest.approx(expected, abs=2e-6)
    assert result.results[0].id == ids["deploy"]  # shorter of the two equal matches: higher BM25
    assert hits[ids["deploy"]].components.bm25 == 1.0


def test_a_helpful_memory_rises(service):
    ids = store_corpus(service)
    query = "worker could not reach redis.railway.internal ENOTFOUND"
    before = service.search("t", {"project": "p", "query": query})
    assert before.results[0].id == ids["deploy"]
    for _ in range(3):
        service.feedback("t", ids["twin"], {"helpful": True})
    after = service.search("t", {"project": "p", "query": query})
    twin = by_id(after)[ids["twin"]]
    assert after.results[0].id == ids["twin"]
    assert twin.components.feedback == pytest.approx(0.438494, abs=1e-6)  # Wilson 3/3, z=1.96: 1/(1+z²/3)
    assert twin.components.feedback == pytest.approx(ranking.wilson_lower_bound(3, 3), abs=1e-6)
    assert "helpful feedback" in after.explanation


def test_one_vote_does_not_outrank_fifty(service):
    ids = store_corpus(service)
    service.feedback("t", ids["deploy"], {"helpful": True})
    for _ in range(50):
        service.feedback("t", ids["twin"], {"helpful": True})
    service.feedback("t", ids["twin"], {"helpful": False})
    hits = by_id(service.search("t", {"project": "p", "query": "redis ENOTFOUND"}))
    assert hits[ids["deploy"]].components.feedback == pytest.approx(0.206543, abs=1e-6)  # 1/1: 1/(1+z²)
    assert hits[ids["twin"]].components.feedback == pytest.approx(ranking.wilson_lower_bound(50, 51), abs=1e-6)
    assert hits[ids["twin"]].components.feedback > 0.89


def test_a_failed_outcome_sinks(service):
    ids = store_corpus(service, deploy={"outcome_status": "failure"}, twin={"outcome_status": "success"})
    result = service.search("t", {"project": "p", "query": "worker could not reach redis ENOTFOUND"})
    hits = by_id(result)
    assert hits[ids["deploy"]].components.outcome == -0.05
    assert hits[ids["twin"]].components.outcome == 0.10
    assert [h.id for h in result.results[:2]] == [ids["twin"], ids["deploy"]]


def test_an_old_memory_decays(service):
    ids = store_corpus(service, deploy_age=30, twin_age=60)
    result = service.search("t", {"project": "p", "query": "worker could not reach redis ENOTFOUND"})
    hits = by_id(result)
    assert hits[ids["deploy"]].components.time == pytest.approx(0.5, abs=1e-6)
    assert hits[ids["twin"]].components.time == pytest.approx(0.25, abs=1e-6)
    assert hits[ids["deploy"]].score - hits[ids["twin"]].score == pytest.approx(
        0.60 * (hits[ids["deploy"]].components.vector - hits[ids["twin"]].components.vector)
        + 0.30 * (hits[ids["deploy"]].components.bm25 - hits[ids["twin"]].components.bm25)
        + 0.10 * 0.25,
        abs=2e-6,
    )


def test_time_decays_as_the_clock_moves(service, clock):
    ids = store_corpus(service)
    clock.advance(days=30)
    hits = by_id(service.search("t", {"project": "p", "query": "E11000 duplicate key"}))
    assert hits[ids["mongo"]].components.time == pytest.approx(0.5, abs=1e-6)
    assert math.isclose(ranking.time_decay(15.0)[()], 2**-0.5)


def test_a_keyword_only_match_is_found(service):
    ids = store_corpus(service)
    result = service.search("t", {"project": "p", "query": "E11000", "mode": "bm25"})
    assert [h.id for h in result.results] == [ids["mongo"]]
    c = result.results[0].components
    assert (c.vector, c.bm25) == (0.0, 1.0)
    assert result.results[0].score == pytest.approx(0.30 + 0.10, abs=1e-6)
    assert "keyword" in result.explanation


def test_an_http_status_is_found_by_keyword(service):
    ids = store_corpus(service)
    result = service.search("t", {"project": "p", "query": "HTTP 503", "mode": "bm25"})
    assert result.results[0].id == ids["gateway"]


def test_per_request_weights_apply_within_bounds(service):
    ids = store_corpus(service)
    query = {"project": "p", "query": "redis ENOTFOUND", "weights": {"vector": 0, "bm25": 1, "time": 0, "feedback": 0}}
    result = service.search("t", query)
    top = result.results[0]
    assert top.id == ids["deploy"]
    assert top.score == pytest.approx(top.components.bm25, abs=1e-6)
    with pytest.raises(InvalidInput) as error:
        service.search("t", {**query, "weights": {"vector": 1.5}})
    assert error.value.field == "weights.vector"


def test_vector_mode_ignores_keywords(service):
    store_corpus(service)
    result = service.search("t", {"project": "p", "query": "redis ENOTFOUND", "mode": "vector"})
    assert all(
        h.score == pytest.approx(0.6 * h.components.vector + 0.1 * h.components.time, abs=2e-6) for h in result.results
    )
    assert np.all([h.components.vector > 0 for h in result.results])
