"""``capsule import vector-bridge``: a real PostgreSQL server (started by the tests) holding the
Vector Bridge README's schema, embeddings in a text column (pgvector's text form), read into
SQLite and MongoDB (mongomock) deployments."""

from __future__ import annotations

import json
import uuid

import numpy as np
import pytest

from capsule.embedders.hashing import HashingEmbedder
from capsule.errors import InvalidInput, Unavailable
from capsule.jobs import Jobs
from capsule.transfer.vector_bridge import import_vector_bridge

psycopg = pytest.importorskip("psycopg", reason="psycopg is in the 'dev' extra")

SCHEMA = """
CREATE TABLE projects (id SERIAL PRIMARY KEY, root_path TEXT UNIQUE NOT NULL, label TEXT,
                       created_at TIMESTAMPTZ DEFAULT now(), updated_at TIMESTAMPTZ DEFAULT now());
CREATE TABLE documents (id BIGSERIAL PRIMARY KEY, project_id INT REFERENCES projects(id), path TEXT, chunk TEXT,
                        embedding TEXT, component TEXT, category TEXT, tags TEXT[], meta JSONB DEFAULT '{}',
                        content_sha TEXT, chunk_tsv TSVECTOR, updated_at TIMESTAMPTZ DEFAULT now());
CREATE TABLE memory_feedback (id SERIAL PRIMARY KEY, chunk_id BIGINT, helpful BOOLEAN, context TEXT,
                              created_at TIMESTAMPTZ DEFAULT now());
CREATE TABLE solutions (id SERIAL PRIMARY KEY, title TEXT, description TEXT, category TEXT, signatures JSONB,
                        steps JSONB, checks JSONB, success_rate REAL, success_count INT DEFAULT 0,
                        failure_count INT DEFAULT 0, created_at TIMESTAMPTZ DEFAULT now());
CREATE TABLE signatures (id SERIAL PRIMARY KEY, solution_id INT, text TEXT, regexes TEXT[], embedding TEXT, meta JSONB);
CREATE TABLE steps (id SERIAL PRIMARY KEY, solution_id INT, step_order INT, kind TEXT, payload JSONB,
                    description TEXT, timeout_ms INT);
CREATE TABLE checks (id SERIAL PRIMARY KEY, solution_id INT, check_order INT, cmd TEXT, expect_substring TEXT,
                     expect_exit_code INT, timeout_ms INT);
CREATE TABLE pattern_solutions (id SERIAL PRIMARY KEY, pattern_tag TEXT, pattern_category TEXT, solution_id INT,
                                success_count INT, failure_count INT, avg_helpful_ratio REAL);
"""
ROOT = "/Users/me/my-app"


def vector_text(seed: int, dims: int = 1536) -> str:
    v = np.random.default_rng(seed).standard_normal(dims)
    return "[" + ",".join(f"{x:.6f}" for x in v) + "]"


@pytest.fixture
def vector_bridge(postgres):
    """A fresh database with the schema and a small, realistic content."""
    name = f"vb_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(postgres.uri(), autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    uri = postgres.uri(name)
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute(SCHEMA)
        conn.execute("INSERT INTO projects (root_path, label) VALUES (%s, 'my app'), ('/Users/me/other', NULL)",
                     (ROOT,))
        docs = [
            (1, "src/auth.ts", "export async function login(email, password) { ... }", vector_text(1), "backend",
             "code", ["auth"], {"type": "code", "language": "typescript", "outcome_status": "success"}),
            (1, "notes/redis.md", "Fixed ENOTFOUND redis.railway.internal with family=0", vector_text(2), "infra",
             "fix", ["redis"], {"agent": "claude", "task_id": "T-7"}),
            (1, "bad.txt", "a broken vector", "[0.1,abc]", None, None, [], {}),
            (1, "empty.txt", "   ", vector_text(3), None, None, [], {}),
            (2, None, "a decision without a vector", None, None, "decision", None, {}),
            (1, "bad-meta.txt", "an unknown outcome", vector_text(4), None, None, [], {"outcome_status": "maybe"}),
        ]
        for project, path, chunk, emb, component, category, tags, meta in docs:
            conn.execute("INSERT INTO documents (project_id, path, chunk, embedding, component, category, tags, meta, "
                         "updated_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, '2025-06-01T10:00:00Z')",
                         (project, path, chunk, emb, component, category, tags, json.dumps(meta)))
        conn.execute("INSERT INTO memory_feedback (chunk_id, helpful, context) VALUES "
                     "(2, true, 'solved it'), (2, true, NULL), (2, false, 'not quite'), (1, true, NULL)")
        conn.execute("INSERT INTO solutions (title, description, category, success_count, failure_count) VALUES "
                     "('Redis on Railway needs family=0', 'IPv6 only private network', 'deploy', 5, 1), "
                     "('Broken', NULL, 'deploy', 0, 0)")
        conn.execute("INSERT INTO signatures (solution_id, text, regexes, meta) VALUES "
                     "(1, 'Error: getaddrinfo ENOTFOUND redis.railway.internal', ARRAY['ENOTFOUND\\s+redis'], "
                     "'{\"min_score\": 0.3}'), (2, '', NULL, NULL)")
        conn.execute("INSERT INTO steps (solution_id, step_order, kind, payload, description) VALUES "
                     "(1, 2, 'cmd', '{\"command\": \"npm run start\"}', 'restart'), "
                     "(1, 1, 'patch', '{\"file\": \"src/redis.ts\", \"search\": \"new Redis(url)\", "
                     "\"replace\": \"new Redis(url, {family: 0})\"}', NULL)")
        conn.execute("INSERT INTO checks (solution_id, check_order, cmd, expect_substring) VALUES "
                     "(1, 1, 'redis-cli ping', 'PONG')")
        conn.execute("INSERT INTO pattern_solutions (pattern_tag, pattern_category, solution_id, success_count, "
                     "failure_count) VALUES ('redis-enotfound', 'runtime', 1, 4, 1), ('ghost', NULL, 99, 1, 0)")
    return uri


def _run(d, uri, embedder=None):
    return import_vector_bridge(d.sources, "t", uri, embedder=embedder or d.embedder, learning=d.learning)


def test_documents_feedback_solutions_and_links_come_along(make, vector_bridge):
    d = make()
    result = _run(d, vector_bridge)
    assert result.imported == {"memory": 3, "feedback": 4, "solution": 1, "link": 1}, result.explanation
    refused = {(r.line, r.field) for r in result.refused}
    assert refused == {(3, "documents.embedding"), (4, "documents.chunk"), (6, "documents.meta.outcome_status"),
                       (2, "solutions.signatures.0.text"), (2, "pattern_solutions.solution_id")}, result.refused
    memories = {r.content: r for r in d.store.candidates("t", [ROOT], _filters())}
    redis = memories["Fixed ENOTFOUND redis.railway.internal with family=0"]
    assert redis.path == "notes/redis.md" and (redis.helpful, redis.unhelpful) == (2, 1)
    assert redis.meta["component"] == "infra" and redis.meta["tags"] == ["redis"] and redis.meta["agent"] == "claude"
    login = memories["export async function login(email, password) { ... }"]
    assert login.meta["outcome_status"] == "success" and login.meta["language"] == "typescript"
    assert {p.project for p in d.store.projects("t")} == {ROOT, "/Users/me/other"}

    solution = d.learning.solution_search("t", {"error": "Error: getaddrinfo ENOTFOUND redis.railway.internal"})
    top = solution.results[0].solution
    assert top.title == "Redis on Railway needs family=0" and (top.success_count, top.failure_count) == (5, 1)
    assert [s.kind for s in top.steps] == ["patch", "cmd"]
    links = d.learning.pattern_solutions("t", {"tag": "redis-enotfound", "category": "runtime"})
    assert (links.solutions[0].success, links.solutions[0].failure) == (4, 1)


def _filters():
    from capsule.records import Filters

    return Filters()


def test_a_second_run_imports_nothing_twice(make, vector_bridge):
    d = make()
    _run(d, vector_bridge)
    again = _run(d, vector_bridge)
    assert again.imported == {}, again.explanation
    assert again.skipped == {"memory": 3, "feedback": 4, "solution": 1, "link": 1}
    assert sum(p.memories for p in d.store.projects("t")) == 3


def test_vectors_are_kept_when_the_model_matches_else_the_backfill_embeds(make, vector_bridge):
    same = HashingEmbedder(dim=1536)
    same.model_id = "text-embedding-3-small"  # the Vector Bridge's model, as an OpenAI deployment has it
    d = make()
    _run(d, vector_bridge, embedder=same)
    kept = [r for r in d.store.candidates("t", [ROOT], _filters())]
    assert all(r.status == "ready" and r.model == "text-embedding-3-small" and len(r.embedding) == 1536 for r in kept)
    assert abs(float(np.linalg.norm(kept[0].embedding)) - 1) < 1e-5

    other = make()
    result = _run(other, vector_bridge)
    assert "backfill" in result.explanation
    pending = other.store.pending_embeddings(limit=10, model=other.embedder.model_id)
    assert len(pending) == 3 and all(r.embedding is None for r in pending)
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


def test_the_cli_imports_a_vector_bridge_database(tmp_path, vector_bridge):
    from tests.cli.test_cli import run

    first = run(tmp_path, "import", "vector-bridge", vector_bridge, ok=False)
    assert first.returncode == 1  # rows were refused: the report names them
    assert "imported 4 feedback, 1 link, 3 memory, 1 solution" in first.stdout
    assert "row 3: documents.embedding: document 3" in first.stdout
    second = run(tmp_path, "import", "vector-bridge", vector_bridge, "--json", ok=False)
    assert json.loads(second.stdout)["imported"] == {}
    listed = run(tmp_path, "list", "--project", ROOT, "--json").stdout
    assert len(json.loads(listed)["memories"]) == 2
