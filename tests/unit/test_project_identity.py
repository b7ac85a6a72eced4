"""One checkout, one project (issue 29, COMPAT.md §2.1 and §6): the same repository named as a
full path (trailing slash, symlink, CLAUDE_PROJECT_DIR), as its folder's name, through the hooks,
the MCP server's default, an import and the service lands in one project; split data merges."""

from __future__ import annotations

import os
from datetime import UTC

import pytest

from capsule.config import Settings
from capsule.core.clock import FrozenClock
from capsule.core.project_identity import canonical, label_of, merge_plan, root_path
from capsule.embedders import HashingEmbedder
from capsule.service.memory_service import MemoryService
from capsule.store.sqlite import SQLiteStore
from mcp_client import project_name
from mcp_client.hooks import project_of


def _sqlite(tmp_path):
    store = SQLiteStore(tmp_path / "capsule.db")
    store.migrate()
    return store


def _mongomock(tmp_path):
    mongomock = pytest.importorskip("mongomock", reason="mongomock is in the 'dev' extra")
    from capsule.store.mongo import MongoStore

    store = MongoStore(mongomock.MongoClient().get_database("identity"), transactions=False)
    store.migrate()
    return store


@pytest.fixture(params=["sqlite", "mongomock"])
def store(request, tmp_path):
    return {"sqlite": _sqlite, "mongomock": _mongomock}[request.param](tmp_path)


@pytest.fixture
def svc(store, tmp_path):
    return MemoryService(
        store,
        HashingEmbedder(),
        clock=FrozenClock(),
        settings=Settings(data_dir=tmp_path, embedder="hashing", retention_limit=100),
    )


def test_canonical_names_and_labels():
    assert canonical("/Users/me/my-app/") == canonical("/Users/me//my-app") == "/Users/me/my-app"
    assert canonical("/") == "/" and canonical("my-app") == "my-app"
    assert label_of("/Users/me/my-app/") == "my-app" and label_of("my-app") == "my-app"
    assert root_path("my-app") is None and root_path("/a/b/") == "/a/b"
    assert merge_plan(["/a/app/", "/a/app", "app", "lib", "/b/x", "/c/x", "x"]) == [
        ("/a/app/", "/a/app"),
        ("app", "/a/app"),
    ]  # "x" has two checkouts: left alone


def test_client_side_default_is_the_checkout_as_a_canonical_path(tmp_path):
    repo = tmp_path / "src" / "my-app"
    (repo / ".git").mkdir(parents=True)
    (repo / "pkg" / "deep").mkdir(parents=True)
    link = tmp_path / "link-to-app"
    link.symlink_to(repo)
    real = os.path.realpath(repo)
    env = {"HOME": str(tmp_path / "home")}
    assert project_name.default_project(env, repo / "pkg" / "deep") == real
    assert project_name.default_project(env, str(link) + "/") == real
    assert project_name.default_project({**env, "CAPSULE_PROJECT": str(link) + "/"}) == real
    assert project_name.client_project(str(repo) + "//") == real
    assert project_name.client_project("my-app") == "my-app"
    # The hooks: CLAUDE_PROJECT_DIR (as the Vector Bridge's hooks read it), else the payload's cwd.
    assert project_of({"cwd": "/"}, {**env, "CLAUDE_PROJECT_DIR": str(link)}) == real
    assert project_of({"cwd": str(repo / "pkg")}, env) == real


def test_root_and_home_are_never_a_project(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home)}
    assert project_name.default_project(env, "/") == project_name.NAMED_DEFAULT
    assert project_name.default_project(env, home) == project_name.NAMED_DEFAULT
    (home / ".git").mkdir()  # a dotfiles checkout at ~: a folder below it is still its own
    (home / "notes").mkdir()
    assert project_name.default_project(env, home / "notes") == os.path.realpath(home / "notes")


def test_every_spelling_lands_in_one_project(svc):
    ids = [
        svc.store_memory("t", {"project": name, "content": f"note {i}"}).memory.id
        for i, name in enumerate(["/Users/me/my-app", "/Users/me/my-app/", "/Users/me//my-app", "my-app"])
    ]
    projects = svc.projects("t").projects
    assert [(p.project, p.root_path, p.label, p.memories) for p in projects] == [
        ("/Users/me/my-app", "/Users/me/my-app", "my-app", 4)
    ]
    for name in ("my-app", "/Users/me/my-app/"):
        listed = {m.id for m in svc.list_memories("t", {"project": name, "limit": 10}).memories}
        assert listed == set(ids)
        assert svc.search("t", {"project": name, "query": "note"}).results


def test_a_bare_project_is_merged_when_its_checkout_appears(svc, store):
    first = svc.store_memory(
        "t", {"project": "my-app", "content": "written under the folder's name", "pinned": True}
    ).memory.id
    twice = svc.store_memory("t", {"project": "my-app", "content": "the same digest"}).memory.id
    other = svc.store_memory("t", {"project": "other", "content": "another project"}).memory.id
    # The Vector Bridge's hook names the checkout by its full path: the bare project joins it.
    svc.store_memory("t", {"project": "/Users/me/my-app/", "content": "written by the path"})
    again = svc.store_memory("t", {"project": "/Users/me/my-app", "content": "the same digest"})
    assert again.deduplicated and again.memory.id == twice
    names = {p.project: p for p in svc.projects("t").projects}
    assert set(names) == {"/Users/me/my-app", "other"} and names["/Users/me/my-app"].memories == 3
    assert svc.get("t", first).memory.project == "/Users/me/my-app" and svc.get("t", first).memory.pinned
    assert svc.get("t", other).memory.project == "other"


def test_two_checkouts_of_one_name_leave_the_bare_project_alone(svc):
    svc.store_memory("t", {"project": "/a/app", "content": "one"})
    svc.store_memory("t", {"project": "/b/app", "content": "two"})
    svc.store_memory("t", {"project": "app", "content": "three"})
    assert {p.project for p in svc.projects("t").projects} == {"/a/app", "/b/app", "app"}


def _split(store, clock):
    """Data split the old way (a bare name and a path beside it), written below the resolver."""
    from capsule.core.records import MemoryRecord
    from capsule.core.text import sha256

    now = clock()
    for i, (project, text) in enumerate(
        [
            ("my-app", "bare a"),
            ("my-app", "both"),
            ("/x/my-app/", "slashed"),
            ("/x/my-app", "path a"),
            ("/x/my-app", "both"),
        ]
    ):
        record = MemoryRecord(
            id=f"m{i}",
            tenant="t",
            project=project,
            content=text,
            sha256=sha256(text),
            occurred_at=now,
            created_at=now,
            updated_at=now,
            status="pending_embedding",
        )
        store.insert([record], limit=100, dedupe_after=None, actor="t")


def test_the_migration_merges_split_data_with_nothing_lost(tmp_path):
    store = SQLiteStore(tmp_path / "old.db")
    store.migrate()
    clock = FrozenClock()
    _split(store, clock)
    with store._write() as conn:  # as a database made before the identity migration
        conn.execute("DELETE FROM store_info WHERE name = 'project_identity'")
    store.migrate()
    stats = {p.project: p for p in store.projects("t")}
    assert set(stats) == {"/x/my-app"}
    assert stats["/x/my-app"].memories == 4 and stats["/x/my-app"].forgotten == 1  # "both" kept once
    kept = {store.get("t", f"m{i}", include_forgotten=True).project for i in range(5)}
    assert kept == {"/x/my-app"}  # every memory is there, the duplicate recoverable
    store.migrate()  # once per database
    assert {p.project for p in store.projects("t")} == {"/x/my-app"}


def test_the_mongo_migration_merges_split_data(tmp_path):
    store = _mongomock(tmp_path)
    _split(store, FrozenClock())
    store.db["meta"].delete_one({"_id": "project_identity"})
    store.migrate()
    stats = {p.project: p for p in store.projects("t")}
    assert set(stats) == {"/x/my-app"} and stats["/x/my-app"].memories == 4


def test_a_merge_raises_the_limit_to_hold_what_it_brought(svc, store):
    store.set_retention_limit("t", "/x/app", 2, at=FrozenClock()())
    for i in range(3):  # written under the folder's name before the checkout's project held them
        store.insert([_record(f"b{i}", "app", f"bare {i}")], limit=100, dedupe_after=None, actor="t")
    assert svc.project_of("t", "/x/app/") == "/x/app"
    info = svc.projects("t").projects[0]
    assert (info.project, info.memories, info.retention_limit) == ("/x/app", 3, 3)


def _record(memory_id, project, text):
    from datetime import datetime

    from capsule.core.records import MemoryRecord
    from capsule.core.text import sha256

    now = datetime.now(UTC)
    return MemoryRecord(
        id=memory_id,
        tenant="t",
        project=project,
        content=text,
        sha256=sha256(text),
        occurred_at=now,
        created_at=now,
        updated_at=now,
        status="pending_embedding",
    )


def test_the_cli_and_its_default_name_one_project(tmp_path):
    import subprocess
    import sys

    from tests.conftest import cli_env

    repo = tmp_path / "my-app"
    (repo / ".git").mkdir(parents=True)
    (repo / "sub").mkdir()
    env = cli_env(tmp_path / "data", CAPSULE_EMBEDDER="hashing", HOME=str(tmp_path))

    def run(*args, cwd=repo):
        return subprocess.run(
            [sys.executable, "-m", "capsule_cli", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
        )

    stored = run("store", "--project", "my-app", "kept under the folder's name", cwd=tmp_path)
    assert stored.returncode == 0, stored.stderr
    stored = run("store", "a note from the checkout", cwd=repo / "sub")  # the default: the checkout's path
    assert stored.returncode == 0, stored.stderr
    listed = run("projects", "--json")
    assert listed.returncode == 0, listed.stderr
    import json

    projects = json.loads(listed.stdout)["projects"]
    assert [(p["project"], p["label"], p["memories"]) for p in projects] == [(os.path.realpath(repo), "my-app", 2)]
