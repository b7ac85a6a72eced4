"""A search's whole answer (ids, order, scores and components as the API rounds them, and the
explanation) is pinned on seeded corpora: a change made for speed must not move any of it.

The reference (``golden/search_results.json``) was recorded from the code before the search
path was optimised; regenerate it only for a change that means to rank differently:
``.venv/bin/python -m tests.search.test_golden_results --write``.

Two corpora, so both kinds of ranking run: notes without sessions (the loadtest's kind), and
short turns of sessions with authors (the keyword window, the session and answer boosts, the
turn priors). Each is searched warm, by a fresh process's service loading it as columns, and
from its index snapshot (a mapped matrix); with the default candidates and with few (so the
two-pass sign-bit stage and the sampled thresholds are taken); plus filters, modes, weights,
``min_relevance`` and times the query names.
"""

from __future__ import annotations

import json
import random
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from capsule.config import Settings
from capsule.core.clock import FrozenClock
from capsule.embedders.hashing import HashingEmbedder
from capsule.service.memory_service import MemoryService
from capsule.store.sqlite import SQLiteStore

GOLDEN = Path(__file__).with_name("golden") / "search_results.json"
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
WORDS = (
    "deploy redis worker timeout mongo index gateway cache token retry queue schema migration lambda "
    "container build test flaky network latency thread project billing invoice login session"
).split()
AUTHORS = ["Ann", "Bo", "Caro"]
QUERIES = [
    "redis timeout",
    "flaky test retry",
    "project thread latency deploy",
    "gateway cache token",
    "what did Ann say about billing",
    "when did the login fail",
    "migration last week",
    "deploy yesterday",
    "invoice",
    "schema migration lambda container",
    "zzz unknown words",
    "what happened in February 2026",
]


def _notes(rng: random.Random, i: int) -> dict:
    words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 14)))
    meta = {"component": rng.choice(["api", "db"]), "tags": [rng.choice(["a", "b", "c"])]}
    if i % 7 == 0:
        meta["outcome_status"] = rng.choice(["success", "failure"])
    return {
        "content": f"note {i}: {words}",
        "meta": meta,
        "occurred_at": (NOW - timedelta(hours=rng.randint(0, 24 * 120))).isoformat(),
    }


def _turns(rng: random.Random, i: int) -> dict:
    words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 7)))
    ending = "?" if i % 5 == 0 else "."
    session = i // 8
    return {
        "content": f"{words} {i}{ending}",
        "meta": {"session": f"s{session}", "author": AUTHORS[i % 3]},
        "occurred_at": (NOW - timedelta(days=60 - session % 60, minutes=-i % 8)).isoformat(),
    }


CORPORA = {"notes": (_notes, 1500), "turns": (_turns, 1200)}


def _service(path: Path, **settings) -> MemoryService:
    store = SQLiteStore(path / "capsule.db")
    store.migrate()
    counter = iter(range(10**9))
    options = {"data_dir": path, "retention_limit": 100_000, "index_snapshot_min": 100, **settings}
    return MemoryService(
        store,
        HashingEmbedder(),
        clock=FrozenClock(NOW),
        settings=Settings(**options),
        new_id=lambda: f"m{next(counter):05d}",
    )


def _seed(path: Path, corpus: str) -> None:
    make, count = CORPORA[corpus]
    service = _service(path)
    rng = random.Random(11)
    ids = []
    try:
        for i in range(count):
            ids.append(service.store_memory("t", {"project": "p", **make(rng, i)}).memory.id)
        for memory_id in ids[3::41]:
            service.feedback("t", memory_id, {"helpful": True})
        for memory_id in ids[5::97]:
            service.feedback("t", memory_id, {"helpful": False})
        for memory_id in ids[9::301]:
            service.forget("t", memory_id)
        service.store_memory("t", {"project": "p", "content": f"{WORDS[0]} {WORDS[1]} replaced", "supersedes": ids[1]})
    finally:
        service.store.close()


def _requests() -> list[dict]:
    out = []
    for query in QUERIES:
        out.append({"query": query, "k": 8})
        out.append({"query": query, "k": 3, "mode": "vector"})
        out.append({"query": query, "k": 10, "mode": "bm25"})
    out += [
        {"query": "redis timeout", "k": 20, "filters": {"component": "api"}},
        {"query": "cache token", "k": 5, "filters": {"tags": ["a"]}},
        {"query": "deploy", "k": 5, "filters": {"since": (NOW - timedelta(days=30)).isoformat()}},
        {"query": "retry queue", "k": 8, "weights": {"time": 0.0, "feedback": 0.0}},
        {"query": "retry queue", "k": 8, "weights": {"vector": 0.0, "bm25": 1.0}},
        {"query": "network latency", "k": 8, "min_relevance": 0.0},
        {"query": "network latency", "k": 8, "min_relevance": 0.6},
        {"query": "build test", "k": 20},
        {"query": "redis worker", "k": 8, "as_of": (NOW - timedelta(days=40)).isoformat()},
        {"query": "redis deploy", "k": 8, "include_superseded": True},
    ]
    return [{"project": "p", **r} for r in out]


def _answers(service: MemoryService) -> list[dict]:
    out = []
    for request in _requests():
        result = service.search("t", request)
        out.append(
            {
                "request": request,
                "explanation": result.explanation,
                "hits": [
                    [h.id, h.score, h.components.model_dump(), [s.id for s in h.superseded]] for h in result.results
                ],
            }
        )
    return out


def _runs(root: Path, corpus: str):
    """The answers of each way a process can hold the index, by name."""
    _seed(root, corpus)
    for candidates in (500, 40):
        # With 500 the second pass answers from the query cache; with 40 it searches the index again.
        cache = 1024 if candidates == 500 else 0
        writer = _service(root, search_candidates=candidates, query_cache_entries=cache)
        try:
            yield f"{corpus}/columns/{candidates}", _answers(writer)  # loaded as columns, then warm
            writer.settle()
            yield f"{corpus}/warm/{candidates}", _answers(writer)  # settled: cached term scores, results
        finally:
            writer.store.close()
        reader = _service(root, search_candidates=candidates, query_cache_entries=0)
        try:
            yield f"{corpus}/snapshot/{candidates}", _answers(reader)  # a mapped matrix from the snapshot
        finally:
            reader.store.close()


def _reference(root: Path) -> dict:
    """One answer list per corpus and candidates (every way of holding the index must agree)."""
    out: dict = {}
    for corpus in CORPORA:
        (root / corpus).mkdir()
        for name, answers in _runs(root / corpus, corpus):
            key = name.split("/")[0] + "/" + name.split("/")[2]
            if key in out:
                assert answers == out[key], f"{name} differs from {key} as first computed"
            out[key] = answers
    return out


@pytest.mark.parametrize("corpus", sorted(CORPORA))
def test_answers_are_the_recorded_ones(corpus, tmp_path):
    golden = json.loads(GOLDEN.read_text())
    for name, answers in _runs(tmp_path, corpus):
        expected = golden[name.split("/")[0] + "/" + name.split("/")[2]]
        assert len(answers) == len(expected)
        for got, want in zip(answers, expected):
            assert got == want, f"{name}: {got['request']}"


def test_the_reference_is_not_trivial():
    golden = json.loads(GOLDEN.read_text())
    answers = [a for runs in golden.values() for a in runs]
    assert sum(len(a["hits"]) for a in answers) > 1000
    assert any(a["hits"] and a["hits"][0][2]["boost"] > 0 for a in golden["turns/500"])  # the aids ran
    assert any(a["hits"][0][3] for a in golden["notes/500"] if a["request"].get("include_superseded"))
    scores = {round(h[1], 3) for a in answers for h in a["hits"]}
    assert len(scores) > 100  # real scores, not a constant


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        reference = _reference(Path(tmp))
    GOLDEN.parent.mkdir(exist_ok=True)
    GOLDEN.write_text(json.dumps(reference, indent=0, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN} ({GOLDEN.stat().st_size} bytes)")
