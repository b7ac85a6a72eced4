"""Visibility and subject on every backend in conftest.BACKENDS (SQLite, mongomock, and
mongomock-strict, which checks every list query against the declared indexes): the fields
round-trip, list narrows by them, PATCH's replace writes them, the search index filters by
them, and the tenant's principal scopes are kept."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest
from test_store_contract import T0, put, rec  # beside this module (rootdir-relative import)

from capsule.core.records import ChangeSet, Filters
from capsule.search.index import ProjectIndex, store_fetcher
from capsule.store.scopes import scope_settings
from capsule.store.sides import governance_store


def seen(content: str, visibility: str = "private", subject: str | None = None, **kw):
    r = rec(content, **kw)
    r.visibility, r.subject = visibility, subject
    return r


@pytest.fixture
def three(store):
    rows = [
        seen("mine", at=T0),
        seen("team", "shared", "alice", at=T0 + timedelta(seconds=1)),
        seen("world", "public", "bob", at=T0 + timedelta(seconds=2)),
    ]
    put(store, *rows)
    return rows


def _list(store, **kw):
    return [r.content for r in store.list("t1", "p", pinned_only=False, after=None, limit=10, **kw)]


def test_visibility_and_subject_round_trip(store):
    r = seen("about alice", "shared", "alice")
    put(store, r)
    got = store.get("t1", r.id)
    assert (got.visibility, got.subject) == ("shared", "alice")


def test_a_memory_stored_without_them_is_private_about_no_one(store):
    r = rec("plain")
    put(store, r)
    got = store.get("t1", r.id)
    assert (got.visibility, got.subject) == ("private", None)


def test_list_narrows_by_visibility(store, three):
    assert _list(store, visibility=("shared", "public")) == ["world", "team"]
    assert _list(store, visibility=("public",)) == ["world"]
    assert _list(store, visibility=("private",)) == ["mine"]
    assert _list(store) == ["world", "team", "mine"]


def test_list_narrows_by_subject_and_by_both(store, three):
    assert _list(store, subjects=("alice",)) == ["team"]
    assert _list(store, subjects=("alice", "bob")) == ["world", "team"]
    assert _list(store, visibility=("public",), subjects=("alice",)) == []
    assert _list(store, visibility=("shared", "public"), subjects=("bob",)) == ["world"]


def test_replace_writes_visibility_and_subject(store, three):
    before = store.get("t1", three[0].id)
    after = replace(before, visibility="shared", subject="carol", updated_at=T0 + timedelta(seconds=9))
    got = governance_store(store).replace(
        before, after, action="visibility", actor="tester", reason="visibility private -> shared"
    )
    assert (got.visibility, got.subject) == ("shared", "carol")
    assert _list(store, subjects=("carol",)) == ["mine"]
    assert [a.action for a in store.audit_log("t1") if a.memory_id == before.id] == ["visibility"]


def test_the_search_index_filters_by_visibility_and_subject(store, three):
    index = ProjectIndex("t1", "p", "test-4", store_fetcher(store))
    index.apply(
        store.changes_since("t1", "p", 0, columns=True)
        if hasattr(store, "changes_since")
        else ChangeSet(version=1, changed=three, reset=True)
    )
    contents = lambda f: sorted(index.records[row].content for row in index.mask(f).nonzero()[0])  # noqa: E731
    assert contents(Filters(visibility=("shared", "public"))) == ["team", "world"]
    assert contents(Filters(subjects=("bob",))) == ["world"]
    assert contents(Filters()) == ["mine", "team", "world"]


def test_principal_scopes_are_kept_per_tenant(store):
    settings = scope_settings(store)
    assert settings.principal_rules("t1") == []
    rules = [{"principal": "arn:aws:sts::1:assumed-role/Ci/*", "scope": {"access": "read"}}]
    settings.set_principal_rules("t1", rules, at=T0)
    assert settings.principal_rules("t1") == rules
    assert settings.principal_rules("t2") == []
    settings.set_principal_rules("t1", [], at=T0 + timedelta(seconds=1))
    assert settings.principal_rules("t1") == []


def test_principal_scopes_are_kept_behind_the_sealing_wrapper(store):
    """build_service wraps every store in capsule.crypto's SealedStore: the rules must still be
    the store's own, not the "no rules, full access" of a store that keeps none."""
    from capsule.sealing.sealedstore import SealedStore

    rules = [{"principal": "arn:aws:iam::1:user/ci", "scope": {"access": "read"}}]
    scope_settings(SealedStore(store, sealer=None)).set_principal_rules("t1", rules, at=T0)
    assert scope_settings(store).principal_rules("t1") == rules
