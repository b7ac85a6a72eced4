"""``capsule import vector-bridge``: a real PostgreSQL server (started by the tests) holding the
tables and columns the Vector Bridge's migrations (001-007) define, embeddings in a text column
(pgvector's text form; the extension may be missing here), read into SQLite and MongoDB
(mongomock) deployments. Every column is placed or named in the report; the database's own
integer ids keep naming what they named."""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path

import numpy as np
import pytest

from capsule.compat.vector_bridge import meta_as_sent
from capsule.core import idprefix, legacy_ids
from capsule.core.errors import InvalidInput, NotFound, Unavailable
from capsule.embedders.hashing import HashingEmbedder
from capsule.jobs.scheduled import Jobs
from capsule.transfer.vector_bridge import import_vector_bridge

psycopg = pytest.importorskip("psycopg", reason="psycopg is in the 'dev' extra")

# The migrations' tables, every column (vector(1536) as TEXT; NOT NULLs left off, so the tests
# can hold the damaged rows a refusal is made of), plus a column and a table of the user's own.
SCHEMA = """
CREATE TABLE projects (id BIGSERIAL PRIMARY KEY, root_path TEXT UNIQUE NOT NULL, label TEXT,
                       created_at TIMESTAMPTZ DEFAULT now(), updated_at TIMESTAMPTZ DEFAULT now());
CREATE TABLE documents (id BIGSERIAL PRIMARY KEY, project_id BIGINT REFERENCES projects(id), path TEXT, chunk TEXT,
                        embedding TEXT, meta JSONB DEFAULT '{}', content_sha TEXT,
                        updated_at TIMESTAMPTZ DEFAULT now(), repo_name TEXT, component TEXT, category TEXT,
                        tags TEXT[] DEFAULT '{}', chunk_tsv TSVECTOR, my_note TEXT);
CREATE TABLE solutions (id BIGSERIAL PRIMARY KEY, title TEXT NOT NULL, description TEXT, category TEXT NOT NULL,
                        component TEXT, tags TEXT[] DEFAULT '{}', project_root TEXT, repo_name TEXT,
                        package_manager TEXT, monorepo_tool TEXT, success_count INTEGER DEFAULT 0,
                        failure_count INTEGER DEFAULT 0, last_applied_at TIMESTAMPTZ, verified_on TIMESTAMPTZ,
                        created_at TIMESTAMPTZ DEFAULT now(), updated_at TIMESTAMPTZ DEFAULT now());
CREATE TABLE signatures (id BIGSERIAL PRIMARY KEY, solution_id BIGINT REFERENCES solutions(id), text TEXT,
                         regexes TEXT[] DEFAULT '{}', embedding TEXT, meta JSONB DEFAULT '{}',
                         created_at TIMESTAMPTZ DEFAULT now());
CREATE TABLE steps (id BIGSERIAL PRIMARY KEY, solution_id BIGINT REFERENCES solutions(id), step_order INTEGER NOT NULL,
                    kind TEXT NOT NULL, payload JSONB NOT NULL, description TEXT, timeout_ms INTEGER DEFAULT 120000,
                    created_at TIMESTAMPTZ DEFAULT now(), UNIQUE (solution_id, step_order));
CREATE TABLE checks (id BIGSERIAL PRIMARY KEY, solution_id BIGINT REFERENCES solutions(id),
                     check_order INTEGER NOT NULL, cmd TEXT NOT NULL, expect_substring TEXT,
                     expect_exit_code INTEGER DEFAULT 0, timeout_ms INTEGER DEFAULT 30000,
                     created_at TIMESTAMPTZ DEFAULT now(), UNIQUE (solution_id, check_order));
CREATE TABLE memory_feedback (id BIGSERIAL PRIMARY KEY, chunk_id BIGINT NOT NULL REFERENCES documents(id),
                              helpful BOOLEAN NOT NULL, context TEXT, created_at TIMESTAMPTZ DEFAULT now(),
                              UNIQUE (chunk_id));
CREATE TABLE pattern_solutions (id BIGSERIAL PRIMARY KEY, pattern_tag TEXT NOT NULL, pattern_category TEXT NOT NULL,
                                solution_id BIGINT NOT NULL, success_count INTEGER DEFAULT 0,
                                failure_count INTEGER DEFAULT 0, avg_helpful_ratio NUMERIC DEFAULT 0,
                                created_at TIMESTAMPTZ DEFAULT now(), updated_at TIMESTAMPTZ DEFAULT now(),
                                UNIQUE (pattern_tag, pattern_category, solution_id));
CREATE TABLE app_users (id SERIAL PRIMARY KEY, email TEXT);
"""
ROOT = "/Users/me/my-app"
REDIS = "Fixed ENOTFOUND redis.railway.internal with family=0"
LOGIN = "export async function login(email, password) { ... }"
DIGEST = "Stop digest: moved the queue to BullMQ"
ODD = "meta given as a list"
REDIS_ERROR = "Error: getaddrinfo ENOTFOUND redis.railway.internal"

# Columns not placed, with their reason: the migrations' derived and bookkeeping ones, and the
# user's own column and table.
NOT_PLACED = {
    "projects.label",
    "projects.created_at",
    "projects.updated_at",
    "documents.repo_name",
    "documents.chunk_tsv",
    "documents.my_note",
    "memory_feedback.id",
    "signatures.id",
    "signatures.created_at",
    "signatures.embedding",
    "steps.id",
    "steps.created_at",
    "checks.id",
    "checks.created_at",
    "pattern_solutions.id",
    "pattern_solutions.created_at",
    "pattern_solutions.avg_helpful_ratio",
    "app_users.*",
}


def vector_text(seed: int, dims: int = 1536) -> str:
    v = np.random.default_rng(seed).standard_normal(dims)
    return "[" + ",".join(f"{x:.6f}" for x in v) + "]"


def _database(postgres, fill) -> str:
    name = f"vb_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(postgres.uri(), autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    uri = postgres.uri(name)
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute(SCHEMA)
        fill(conn)
    return uri


def _document(conn, project, path, chunk, emb, component, category, tags, meta, *, sha=None):
    import hashlib

    conn.execute(
        "INSERT INTO documents (project_id, path, chunk, embedding, component, category, tags, meta, "
        "content_sha, repo_name, updated_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, 'my-app', "
        "'2025-06-01T10:00:00Z')",
        (
            project,
            path,
            chunk,
            emb,
            component,
            category,
            tags,
            json.dumps(meta),
            sha or hashlib.sha256((chunk or "").encode()).hexdigest(),
        ),
    )


def _fill(conn) -> None:
    conn.execute(
        "INSERT INTO projects (root_path, label) VALUES (%s, 'my-app'), ('/Users/me/other', 'other'), "
        "('/Users/me/empty', 'empty')",
        (ROOT,),
    )
    docs = [  # ids 1..9
        (
            1,
            "src/auth.ts",
            LOGIN,
            vector_text(1),
            "backend",
            "code",
            ["auth"],
            {"type": "code", "language": "typescript", "outcome_status": "success"},
        ),
        (
            1,
            "notes/redis.md",
            REDIS,
            vector_text(2),
            "infra",
            "fix",
            ["redis"],
            {"agent": "claude", "task_id": "T-7", "component": "ops"},
        ),  # the column overrules meta's component
        (1, "bad.txt", "a broken vector", "[0.1,abc]", "other", "code", [], {}),
        (1, "empty.txt", "   ", vector_text(3), "other", "code", [], {}),
        (2, None, "a decision without a vector", None, "orchestration", "decision", None, {}),
        (
            1,
            "digest.md",
            DIGEST,
            vector_text(4),
            "orchestration",
            "digest",
            ["queue"],
            {"outcome_status": "none", "tags": "queue", "type": 7, "session": None, "nested": {"a": [1, None]}},
        ),
        (
            1,
            "failed.md",
            "the migration failed twice",
            vector_text(5),
            "data",
            "decision",
            [],
            {"outcome_status": "failed"},
        ),
        (1, "odd.md", ODD, vector_text(6), "other", "docs", [], ["not", "an", "object"]),
        (1, "drift.md", "a content whose sha drifted", vector_text(7), "other", "docs", [], {}),
    ]
    for row in docs:
        _document(conn, *row, sha="0" * 64 if row[2] == "a content whose sha drifted" else None)
    conn.execute(
        "INSERT INTO memory_feedback (chunk_id, helpful, context) VALUES "
        "(2, true, 'solved it'), (1, false, NULL), (6, true, 'the digest helped')"
    )
    conn.execute(
        "INSERT INTO solutions (title, description, category, component, tags, project_root, repo_name, "
        "package_manager, monorepo_tool, success_count, failure_count, last_applied_at, verified_on, created_at) "
        "VALUES ('Redis on Railway needs family=0', 'IPv6 only private network', 'deploy', 'backend', "
        "ARRAY['redis','railway'], %s, 'my-app', 'pnpm', 'turbo', 5, 1, '2025-05-02T09:00:00Z', "
        "'2025-05-01T09:00:00Z', '2025-04-01T00:00:00Z'), "
        "('Broken', NULL, 'deploy', NULL, '{}', NULL, NULL, NULL, NULL, 0, 0, NULL, NULL, '2025-04-02T00:00:00Z'), "
        "('Redis on Railway needs family=0', 'the same fix, upserted again', 'deploy', NULL, '{}', NULL, NULL, "
        "NULL, NULL, 1, 0, NULL, NULL, '2025-04-03T00:00:00Z')",
        (ROOT,),
    )
    conn.execute(
        "INSERT INTO signatures (solution_id, text, regexes, embedding, meta) VALUES "
        '(1, %s, ARRAY[\'ENOTFOUND\\s+redis\'], %s, \'{"min_score": 0.3, "platform": "railway"}\'), '
        "(2, '', NULL, NULL, NULL), (3, %s, '{}', NULL, '{}')",
        (REDIS_ERROR, vector_text(9), REDIS_ERROR),
    )
    conn.execute(
        "INSERT INTO steps (solution_id, step_order, kind, payload, description, timeout_ms) VALUES "
        '(1, 2, \'cmd\', \'{"run": "npm run start", "cwd": "{project_root}"}\', \'restart\', 60000), '
        '(1, 1, \'patch\', \'{"file": "src/redis.ts", "search": "new Redis(url)", '
        '"replace": "new Redis(url, {family: 0})"}\', NULL, 120000), '
        '(3, 1, \'env\', \'{"variable": "REDIS_FAMILY", "value": "0"}\', NULL, 120000)'
    )
    conn.execute(
        "INSERT INTO checks (solution_id, check_order, cmd, expect_substring, expect_exit_code, timeout_ms) "
        "VALUES (1, 1, 'redis-cli ping', 'PONG', 0, 5000)"
    )
    conn.execute(
        "INSERT INTO pattern_solutions (pattern_tag, pattern_category, solution_id, success_count, "
        "failure_count, avg_helpful_ratio, updated_at) VALUES "
        "('redis-enotfound', 'runtime', 1, 4, 1, 0.5, '2025-05-03T00:00:00Z'), "
        "('ghost', 'runtime', 2, 1, 0, 0, now())"
    )
    conn.execute("INSERT INTO app_users (email) VALUES ('me@example.com')")


@pytest.fixture
def vector_bridge(postgres):
    """A fresh database with rows in every table the migrations define."""
    return _database(postgres, _fill)


def _run(d, uri, embedder=None):
    return import_vector_bridge(d.sources, "t", uri, embedder=embedder or d.embedder, learning=d.learning)


def _memories(d, project=ROOT):
    from capsule.core.records import Filters

    return {r.content: r for r in d.store.candidates("t", [project], Filters())}


def test_every_row_comes_along_or_is_refused_by_name(make, vector_bridge):
    d = make()
    result = _run(d, vector_bridge)
    assert result.imported == {"memory": 7, "feedback": 3, "solution": 2, "link": 1}, result.explanation
    refused = {(r.line, r.field) for r in result.refused}
    assert refused == {
        (3, "documents.embedding"),
        (4, "documents.chunk"),
        (2, "solutions.signatures.0.text"),
        (2, "pattern_solutions.solution_id"),
    }, result.refused

    memories = _memories(d)
    redis = memories[REDIS]
    assert redis.path == "notes/redis.md" and (redis.helpful, redis.unhelpful) == (1, 0)
    # Columns as our meta fields; the raw meta as it was sent, the value the column overruled included.
    assert redis.meta["component"] == "infra" and redis.meta["category"] == "fix" and redis.meta["tags"] == ["redis"]
    assert meta_as_sent(redis.meta) == {"agent": "claude", "task_id": "T-7", "component": "ops"}
    login = memories[LOGIN]
    assert login.meta["outcome_status"] == "success" and login.meta["language"] == "typescript"
    assert (login.helpful, login.unhelpful) == (0, 1)
    digest = memories[DIGEST]
    assert digest.meta["outcome_status"] == "unknown" and digest.meta["tags"] == ["queue"]
    assert meta_as_sent(digest.meta) == {
        "outcome_status": "none",
        "tags": "queue",
        "type": 7,
        "session": None,
        "nested": {"a": [1, None]},
    }
    assert memories["the migration failed twice"].meta["outcome_status"] == "failure"
    assert meta_as_sent(memories["the migration failed twice"].meta)["outcome_status"] == "failed"
    assert meta_as_sent(memories[ODD].meta) == {"value": ["not", "an", "object"]}
    assert "was not a JSON object" in result.explanation and "was not the SHA-256" in result.explanation
    assert {p.project for p in d.store.projects("t")} == {ROOT, "/Users/me/other"}
    assert "/Users/me/empty" in result.explanation  # a project with no documents is named


def test_every_column_is_placed_or_named_with_its_reason(make, vector_bridge):
    d = make()
    result = _run(d, vector_bridge)
    named = {u.column: u.reason for u in result.not_placed}
    assert set(named) == NOT_PLACED | {"documents.embedding"}, sorted(named)  # the hashing embedder is not theirs
    assert all(reason for reason in named.values())
    assert "not a column of the Vector Bridge's migrations" in named["documents.my_note"]
    assert "Not placed (19 source column(s)" in result.explanation

    same = HashingEmbedder(dim=1536)
    same.model_id = "text-embedding-3-small"
    kept = import_vector_bridge(make().sources, "t", vector_bridge, embedder=same, learning=d.learning)
    assert "documents.embedding" not in {u.column for u in kept.not_placed}


def test_solutions_keep_every_field_and_their_links(make, vector_bridge):
    d = make()
    _run(d, vector_bridge)
    first = d.learning.get_solution("t", "1").solution  # the old solution_id names it
    assert first.id == legacy_ids.vector_bridge_solution("t", 1)
    assert (first.title, first.category, first.component, first.tags) == (
        "Redis on Railway needs family=0",
        "deploy",
        "backend",
        ["redis", "railway"],
    )
    assert first.package_manager == "pnpm" and (first.success_count, first.failure_count) == (5, 1)
    kept = first.model_dump(mode="json")
    fields = {**kept.get("extra", {}), **kept}
    assert fields["monorepo_tool"] == "turbo" and fields["project_root"] == ROOT and fields["repo_name"] == "my-app"
    assert str(fields["last_applied_at"]).startswith("2025-05-02") and str(fields["verified_on"]).startswith(
        "2025-05-01"
    )
    assert [s.kind for s in first.steps] == ["patch", "cmd"] and first.steps[1].timeout_ms == 60000
    assert first.signatures[0].regexes == ["ENOTFOUND\\s+redis"]
    assert first.checks[0].expect_substring == "PONG" and first.checks[0].timeout_ms == 5000
    # solution_upsert always inserted: the same title twice is two solutions, as it was there.
    third = d.learning.get_solution("t", "3").solution
    assert third.id != first.id and third.description == "the same fix, upserted again"
    links = d.learning.pattern_solutions("t", {"tag": "redis-enotfound", "category": "runtime"})
    assert (links.solutions[0].id, links.solutions[0].success, links.solutions[0].failure) == (first.id, 4, 1)


def test_old_integer_ids_reach_what_they_named(make, vector_bridge):
    d = make()
    _run(d, vector_bridge)
    redis = _memories(d)[REDIS]
    assert redis.id == legacy_ids.vector_bridge_memory("t", 2)
    voted = d.memories.feedback("t", "2", {"helpful": True, "context": "again"})  # memory_feedback {chunk_id: 2}
    assert voted.memory.id == redis.id and voted.memory.helpful == 2
    assert d.memories.get("t", "2").memory.content == REDIS
    assert d.memories.pin("t", "2").memory.pinned is True
    assert d.memories.forget("t", "7", {"reason": "wrong"}).memory.id == legacy_ids.vector_bridge_memory("t", 7)
    assert d.memories.restore("t", "7").memory.content == "the migration failed twice"
    assert idprefix.resolve(d.store, "t", "2") == redis.id  # capsule feedback 2
    with pytest.raises(NotFound):
        d.memories.feedback("t", "3", {"helpful": True})  # refused at import: nothing to reach
    with pytest.raises(NotFound):
        d.memories.get("other-tenant", "2")

    applied = d.learning.solution_apply("t", "1", {"success": True})  # solution_apply {solution_id: 1}
    assert applied.solution.id == legacy_ids.vector_bridge_solution("t", 1) and applied.solution.success_count == 6
    linked = d.learning.pattern_link(
        "t", {"tag": "redis-enotfound", "category": "runtime", "solution_id": "1", "success": True}
    )
    assert linked.link.id == applied.solution.id
    with pytest.raises(NotFound):
        d.learning.solution_apply("t", "2", {"success": True})  # refused at import


def test_a_second_run_imports_nothing_twice_and_keeps_what_changed_since(make, vector_bridge):
    d = make()
    first = _run(d, vector_bridge)
    d.learning.solution_apply("t", "1", {"success": False})
    d.memories.feedback("t", "2", {"helpful": False})
    again = _run(d, vector_bridge)
    assert again.imported == {}, again.explanation
    assert again.skipped == {"memory": 7, "feedback": 3, "solution": 2, "link": 1}
    assert again.refused_total == first.refused_total
    assert sum(p.memories for p in d.store.projects("t")) == 7
    assert d.learning.get_solution("t", "1").solution.failure_count == 2  # the later application is kept
    assert d.memories.get("t", "2").memory.unhelpful == 1


def _second_fill(conn) -> None:
    conn.execute("INSERT INTO projects (root_path, label) VALUES ('/Users/me/second', 'second')")
    _document(conn, 1, "a.md", "another database's first chunk", vector_text(11), "other", "docs", [], {})
    _document(conn, 1, "b.md", "another database's second chunk", vector_text(12), "other", "docs", [], {})
    conn.execute("INSERT INTO memory_feedback (chunk_id, helpful) VALUES (2, true)")
    conn.execute("INSERT INTO solutions (title, category) VALUES ('Another fix', 'build')")
    conn.execute("INSERT INTO signatures (solution_id, text) VALUES (1, 'error TS2307: Cannot find module')")


def test_a_second_database_in_one_tenant_gets_new_ids_and_says_so(make, vector_bridge, postgres):
    d = make()
    _run(d, vector_bridge)
    second = _database(postgres, _second_fill)
    result = _run(d, second)
    assert result.imported == {"memory": 2, "feedback": 1, "solution": 1}, result.explanation
    assert "2 document id(s) of this database (1, 2)" in result.explanation
    assert "1 solution id(s) of this database (1)" in result.explanation
    assert d.memories.get("t", "2").memory.content == REDIS  # the first import's keeps its numbers
    moved = _memories(d, "/Users/me/second")["another database's second chunk"]
    assert moved.helpful == 1 and moved.id != legacy_ids.vector_bridge_memory("t", 2)
    assert d.learning.get_solution("t", "1").solution.title == "Redis on Railway needs family=0"
    again = _run(d, second)
    assert again.imported == {}, again.explanation


def test_vectors_are_kept_when_the_model_matches_else_the_backfill_embeds(make, vector_bridge):
    same = HashingEmbedder(dim=1536)
    same.model_id = "text-embedding-3-small"  # the Vector Bridge's model, as an OpenAI deployment has it
    d = make()
    _run(d, vector_bridge, embedder=same)
    kept = list(_memories(d).values())
    assert all(r.status == "ready" and r.model == "text-embedding-3-small" and len(r.embedding) == 1536 for r in kept)
    assert abs(float(np.linalg.norm(kept[0].embedding)) - 1) < 1e-5

    other = make()
    result = _run(other, vector_bridge)
    assert "backfill" in result.explanation
    pending = other.store.pending_embeddings(limit=10, model=other.embedder.model_id)
    assert len(pending) == 7 and all(r.embedding is None for r in pending)
    jobs = Jobs(other.store, other.learning, other.embedder, clock=other.clock, settings=other.memories.settings)
    jobs.run("backfill")
    assert other.store.pending_embeddings(limit=10, model=other.embedder.model_id) == []


def test_wrong_schema_and_wrong_uri_are_refused_whole(make, postgres):
    d = make()
    name = f"vb_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(postgres.uri(), autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    with psycopg.connect(postgres.uri(name), autocommit=True) as conn:
        conn.execute("CREATE TABLE projects (id SERIAL PRIMARY KEY, root_path TEXT)")
        conn.execute("CREATE TABLE documents (id SERIAL PRIMARY KEY, project_id INT, chunk TEXT)")
    with pytest.raises(InvalidInput, match="lacks column") as refused:
        _run(d, postgres.uri(name))
    assert refused.value.field == "documents.category"
    with pytest.raises(InvalidInput, match="postgresql://"):
        _run(d, "mysql://x")
    with pytest.raises(Unavailable, match="cannot connect"):
        _run(d, f"postgresql://{postgres.user}@127.0.0.1:1/none")
    assert d.store.projects("t") == []


def test_the_cli_imports_and_the_old_ids_work_through_mcp(tmp_path, vector_bridge):
    """The whole path an agent takes: ``capsule import vector-bridge``, then ``capsule mcp
    --embedded`` answering memory_feedback {chunk_id: 2} and solution_apply {solution_id: 1}."""
    import anyio
    from mcp import Client

    from tests.cli.test_cli import run

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mcp"))
    from mcp_support import ToolSession, mcp_params

    first = run(tmp_path, "import", "vector-bridge", vector_bridge, ok=False)
    assert first.returncode == 1  # rows were refused: the report names them
    assert "imported 3 feedback, 1 link, 7 memory, 2 solution" in first.stdout
    assert "row 3: documents.embedding: document 3" in first.stdout
    assert "not placed: documents.chunk_tsv: a full-text index" in first.stdout
    second = run(tmp_path, "import", "vector-bridge", vector_bridge, "--json", ok=False)
    assert json.loads(second.stdout)["imported"] == {}
    assert run(tmp_path, "feedback", "2", "--helpful", "--json").returncode == 0  # capsule feedback <old chunk_id>

    async def main():
        async with Client(mcp_params(tmp_path, "--embedded", "--project", ROOT)) as client:
            session = ToolSession(client)
            _, text, is_error = await session.call("memory_feedback", {"chunk_id": 2, "helpful": True})
            assert not is_error and json.loads(text)["success"] is True, text
            _, text, is_error = await session.call("solution_apply", {"solution_id": 1, "success": True})
            assert not is_error and "not found" not in text and "6" in text, text

    anyio.run(main)
    got = json.loads(run(tmp_path, "get", "2", "--json").stdout)["memory"]
    assert got["content"] == REDIS and got["helpful"] == 3


def _many(conn) -> None:
    conn.execute("INSERT INTO projects (root_path, label) VALUES (%s, 'my-app')", (ROOT,))
    for i in range(130):
        _document(
            conn,
            1,
            f"notes/{i}.md",
            f"Decision {i}: queue {i} keeps its own Redis database {i}.",
            vector_text(i + 1),
            "infra",
            "decision",
            [],
            {"outcome_status": "none"},
        )


def test_an_import_over_the_default_limit_keeps_every_memory_and_later_writes_evict_none(make, postgres):
    # The Vector Bridge had no rolling limit: 130 chunks against our default of 100 all stay, and stay.
    d = make()
    result = _run(d, _database(postgres, _many))
    assert result.imported["memory"] == 130, result.explanation
    assert len(_memories(d)) == 130
    stored = d.memories.store_memory("t", {"project": ROOT, "content": "one more decision after the import"})
    assert stored.evicted == [] and len(_memories(d)) == 131
