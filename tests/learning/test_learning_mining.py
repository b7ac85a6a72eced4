"""Clustering on a small fixed corpus: what joins two errors and what keeps them apart."""

from datetime import UTC, datetime, timedelta

import pytest

from capsule.core.records import MemoryRecord
from capsule.embedders.hashing import HashingEmbedder
from capsule.learning import mining
from capsule.learning.signature import terms

T0 = datetime(2026, 1, 1, tzinfo=UTC)
EMBEDDER = HashingEmbedder()


def occurrences(texts, project="p"):
    records = [
        MemoryRecord(
            id=f"m{i}",
            tenant="t",
            project=project,
            content=text,
            sha256=str(i),
            occurred_at=T0 + timedelta(minutes=i),
            created_at=T0,
            updated_at=T0,
            meta={"type": "error", "outcome_status": "failure"},
        )
        for i, text in enumerate(texts)
    ]
    vectors = dict(zip((r.id for r in records), EMBEDDER.embed(texts)))
    return mining.occurrences(records, vectors, limit=100)


def groups(texts):
    items = occurrences(texts)
    return sorted(sorted(items[i].record.content for i in group) for group in mining.cluster(items))


def test_terms_keep_codes_exceptions_numbers_and_identifiers_but_not_prose():
    found = terms("TypeError: cannot read 'map' of undefined in getUserById (HTTP 503, port 6379), id 123456789")
    assert found == ["typeerror", "getuserbyid", "503", "6379"]
    assert terms("getUserById failed: E11000", strong_only=True) == ["e11000", "11000"]
    assert terms("the build failed again") == []


def test_the_same_code_in_different_wording_joins():
    texts = ["connect ECONNREFUSED 127.0.0.1:6379", "Redis said ECONNREFUSED on 6379 during boot"]
    assert groups(texts) == [sorted(texts)]


def test_different_codes_in_the_same_log_line_stay_apart():
    a = "ECONNREFUSED in UserService while handling request 42: retry"
    b = "ENOTFOUND in UserService while handling request 42: retry"
    assert mining.cluster(occurrences([a, b])) == [[0], [1]]


def test_a_shared_identifier_alone_does_not_join():
    texts = ["KeyError in billing.stripe.charge", "ZeroDivisionError in billing.stripe.charge"]
    assert len(groups(texts)) == 2


def test_clusters_do_not_depend_on_order():
    texts = [
        "E11000 duplicate key email_1",
        "TypeError: x is undefined at OrderTable",
        "E11000 dup key on users",
        "TypeError: x is undefined at UserList",
        "ENOSPC no space left",
    ]
    assert groups(texts) == groups(list(reversed(texts)))
    assert len(groups(texts)) == 3


def test_describe_names_the_cluster_deterministically():
    items = occurrences(
        ["connect ECONNREFUSED 10.0.0.1:6379", "ECONNREFUSED 10.0.0.2:6379 (redis)", "redis ECONNREFUSED :6379"]
    )
    found = mining.describe_cluster(items)
    assert found.terms == ["6379", "econnrefused"] and found.category == "general"
    assert mining.name(found, {}) == "redis-econnrefused"
    assert mining.name(found, {"older-tag": {"m0", "zz"}}) == "older-tag"  # keeps the name it had


@pytest.mark.parametrize(
    "follows_by, counted", [(timedelta(hours=1), True), (timedelta(days=31), False), (-timedelta(hours=1), False)]
)
def test_a_fix_counts_only_after_the_failure_within_the_window(follows_by, counted):
    items = occurrences(["connect ECONNREFUSED 10.0.0.1:6379", "ECONNREFUSED on 6379"])
    found = mining.describe_cluster(items)
    fix = MemoryRecord(
        id="fix",
        tenant="t",
        project="p",
        content="fixed ECONNREFUSED by starting redis",
        sha256="f",
        occurred_at=T0 + follows_by,
        created_at=T0,
        updated_at=T0,
        meta={"outcome_status": "success"},
    )
    elsewhere = MemoryRecord(
        id="other",
        tenant="t",
        project="q",
        content="fixed ECONNREFUSED too",
        sha256="o",
        occurred_at=T0 + timedelta(hours=1),
        created_at=T0,
        updated_at=T0,
        meta={"outcome_status": "success"},
    )
    found_evidence = mining.evidence(found, [fix, elsewhere], [], {})
    assert [e.target_id for e in found_evidence] == (["fix"] if counted else [])
