"""The visibility rules through the service on every backend in conftest.BACKENDS: a public
memory with flagged personal data is refused and nothing stored, an update to public is refused
until the data is redacted (audited), a visibility change is audited, and a limited reach
narrows list and search (global search over its projects only)."""

from __future__ import annotations

import pytest

from capsule.config import Settings
from capsule.core.errors import Conflict, Forbidden
from capsule.embedders.hashing import HashingEmbedder
from capsule.governance.visibility import Reach
from capsule.service.memory_service import MemoryService

T = "t1"
EMAIL = "mail jane@acme.io the invoice"


@pytest.fixture
def service(store, tmp_path):
    return MemoryService(store, HashingEmbedder(), settings=Settings(data_dir=tmp_path, embedder="hashing"))


def put(service, content, project="p", **extra):
    return service.store_memory(T, {"project": project, "content": content, **extra}).memory


def contents(result) -> list[str]:
    return sorted(m.content for m in getattr(result, "memories", None) or result.results)


def test_public_with_flagged_personal_data_is_refused_and_nothing_stored(service):
    with pytest.raises(Conflict) as refused:
        put(service, EMAIL, visibility="public")
    assert refused.value.details[0]["flags"] == ["email"]
    with pytest.raises(Conflict):
        service.ingest(T, {"project": "p", "text": EMAIL, "visibility": "public"})
    assert service.list_memories(T, {"project": "p"}).memories == []


def test_update_to_public_waits_for_the_redaction_and_is_audited(service):
    m = put(service, EMAIL)
    with pytest.raises(Conflict):
        service.history.update(T, m.id, {"visibility": "public"})
    assert service.get(T, m.id).memory.visibility == "private"
    done = service.history.update(T, m.id, {"content": "mail the customer the invoice", "visibility": "public"})
    assert done.memory.visibility == "public"
    changed = service.history.update(T, m.id, {"visibility": "shared", "subject": "jane"})
    assert (changed.memory.visibility, changed.memory.subject) == ("shared", "jane")
    actions = [a.action for a in service.store.audit_log(T) if a.memory_id == m.id]
    assert "refuse" in actions and "visibility" in actions


def test_a_limited_reach_narrows_list_and_search(service):
    put(service, "deploy note private", project="acme/api")
    put(service, "deploy note shared", project="acme/api", visibility="shared", subject="alice")
    put(service, "deploy note elsewhere", project="other", visibility="public")
    team = Reach(projects=("acme/*",), sees="shared", who="key 'team'")
    assert contents(service.list_memories(T, {"project": "acme/api"}, reach=team)) == ["deploy note shared"]
    found = service.search(T, {"query": "deploy note", "global": True, "mode": "bm25"}, reach=team)
    assert contents(found) == ["deploy note shared"]
    everyone = service.search(T, {"query": "deploy note", "global": True, "mode": "bm25"})
    assert len(everyone.results) == 3
    alice = Reach(subjects=("alice",))
    assert contents(service.list_memories(T, {"project": "acme/api"}, reach=alice)) == ["deploy note shared"]
    # Reaches over every project go through the search that picks candidates across projects.
    for mode in ("bm25", "hybrid", "vector"):
        about_alice = service.search(T, {"query": "deploy note", "global": True, "mode": mode}, reach=alice)
        assert contents(about_alice) == ["deploy note shared"], mode
        public = service.search(
            T, {"query": "deploy note", "global": True, "mode": mode}, reach=Reach(sees="public", who="key 'bot'")
        )
        assert contents(public) == ["deploy note elsewhere"], mode
    with pytest.raises(Forbidden):
        service.list_memories(T, {"project": "other"}, reach=team)
    nothing = service.search(T, {"query": "deploy", "global": True}, reach=Reach(projects=("none-*",)))
    assert nothing.results == []
