import json
import os
import subprocess
import sys
import threading
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
from learning_helpers import fixpack, make_world

import functions.jobs as lambda_jobs
from capsule.core.errors import InvalidInput, NotFound, Unavailable

ROOT = Path(__file__).resolve().parents[2]
FAIL = {"type": "error", "outcome_status": "failure"}


def test_a_lowered_limit_evicts_in_its_answer_and_retention_evicts_nothing_unannounced(world):
    # Issue 29: nothing is evicted that no answer announced. The settings answer that lowers the
    # limit evicts and names the oldest unpinned memories beyond it; the job evicts nothing by it.
    ids = [world.remember("p", f"note number {i}") for i in range(6)]
    world.memories.pin("t", ids[0])
    lowered = world.memories.set_retention_limit("t", "p", {"retention_limit": 3})
    assert [e.id for e in lowered.evicted] == ids[1:4]
    remaining = {m.id for m in world.memories.list_memories("t", {"project": "p"}).memories}
    assert remaining == {ids[0], ids[4], ids[5]}  # the pinned one stays, the oldest unpinned went
    report = world.jobs.run("retention")
    assert report.ran and report.complete and report.counts["evicted"] == 0
    assert report.counts["projects_over_limit"] == 0


def test_retention_purges_old_forgotten_memories_and_expired_cache(world):
    vector = np.ones(4, dtype=np.float32)
    world.store.cache_put("m", {"a": vector, "b": vector}, at=world.clock())
    old = world.remember("p", "forget me")
    world.memories.forget("t", old)
    world.clock.advance(days=31)
    world.store.cache_put("m", {"c": vector}, at=world.clock())
    recent = world.remember("p", "forget me later")
    world.memories.forget("t", recent)
    world.clock.advance(days=30)  # the first cache entries are now 61 days old
    report = world.jobs.run("retention")
    assert (report.counts["purged"], report.counts["cache_expired"]) == (1, 2)
    assert set(world.store.cache_get("m", ["a", "b", "c"], fresh_after=world.clock() - timedelta(days=365))) == {"c"}
    with pytest.raises(NotFound):
        world.memories.restore("t", old)
    assert world.memories.restore("t", recent).memory.id == recent
    assert world.jobs.run("retention").counts["purged"] == 0


def test_backfill_embeds_memories_stored_while_the_embedder_was_down(world):
    world.embedder.down = True
    ids = [world.remember("p", f"redis refused connection {i}") for i in range(5)]
    solution = world.learning.create_solution("t", fixpack()).solution
    assert {world.memories.get("t", i).memory.status for i in ids} == {"pending_embedding"}
    failed = world.jobs.run("backfill")
    assert failed.ran and not failed.complete and failed.counts == {"embedded": 0, "pending": 5, "solutions": 0}
    assert "unavailable" in failed.explanation
    world.embedder.down = False
    partial = world.jobs.run("backfill", batch=2, max_batches=1)
    assert partial.counts == {"embedded": 2, "pending": 3, "solutions": 1} and not partial.complete
    done = world.jobs.run("backfill", batch=2)
    assert done.complete and done.counts == {"embedded": 3, "pending": 0, "solutions": 0}
    for memory_id in ids:
        memory = world.memories.get("t", memory_id).memory
        assert memory.status == "ready" and memory.model == world.embedder.model_id
    stored = world.learning.store.get_solution("t", solution.id)
    assert stored.model == world.embedder.model_id and stored.embeddings.shape == (1, world.embedder.dim)
    hits = world.memories.search("t", {"query": "redis refused connection", "project": "p", "mode": "vector"})
    assert len(hits.results) == 5
    assert world.jobs.run("backfill").counts == {"embedded": 0, "pending": 0, "solutions": 0}


def test_search_embeds_at_most_its_budget_of_solutions(world):
    world.embedder.down = True
    for i in range(3):
        world.learning.create_solution("t", fixpack(f"fix {i}"))
    world.embedder.down = False
    world.learning.search_embed_budget = 2
    world.learning.solution_search("t", {"error": "connect ECONNREFUSED 127.0.0.1:6379"})
    models = [s.model for s in world.learning.store.solutions("t", category=None, limit=10)]
    assert models.count(world.embedder.model_id) == 2 and models.count(None) == 1
    assert world.jobs.run("backfill").counts["solutions"] == 1


def test_a_held_lease_makes_an_overlapping_run_skip(world):
    assert world.learning.store.acquire_lease(
        "job:mining", "someone-else", now=world.clock(), until=world.clock() + timedelta(minutes=15)
    )
    skipped = world.jobs.run("mining")
    assert not skipped.ran and "holds the lease" in skipped.explanation
    world.clock.advance(minutes=16)  # the other run died: its lease expired
    assert world.jobs.run("mining").ran


def test_overlapping_mining_runs_count_evidence_once(tmp_path):
    seed = make_world(tmp_path / "capsule.db")
    s = seed.learning.create_solution("t", fixpack()).solution
    for project in ("a", "b", "c"):
        seed.remember(project, f"connect ECONNREFUSED 10.0.0.1:6379 in {project}", **FAIL)
        seed.remember(
            project,
            "Fixed ECONNREFUSED on 6379 by pointing at the private host",
            outcome_status="success",
            solution_id=s.id,
        )
    # Two processes' worth of jobs on one file, each with a lease that has already expired,
    # so both really run at once and only the evidence keys keep the counts right.
    worlds = [make_world(tmp_path / "capsule.db") for _ in range(2)]
    for w in worlds:
        w.jobs.lease_seconds = -1
    reports = []
    threads = [threading.Thread(target=lambda w=w: reports.append(w.jobs.run("mining"))) for w in worlds]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [r.ran for r in reports] == [True, True]
    links = {(link.kind, link.target_id): link.success for link in seed.learning.store.links("t")}
    assert links[("solution", s.id)] == 3 and len(links) == 4
    for w in worlds + [seed]:
        w.store.close()


def test_mining_is_resumable_across_tenants(world):
    for tenant in ("t1", "t2", "t3"):
        for project in ("a", "b"):
            world.remember(project, "E11000 duplicate key error index: email_1", tenant=tenant, **FAIL)
    first = world.jobs.run("mining", max_tenants=2)
    assert (first.counts["tenants"], first.complete) == (2, False)
    assert world.learning.store.job_state("mining") == {"after": "t2"}
    second = world.jobs.run("mining", max_tenants=2)
    assert (second.counts["tenants"], second.complete) == (1, True)
    assert world.learning.store.job_state("mining") == {}
    for tenant in ("t1", "t2", "t3"):
        assert world.learning.detect_patterns(tenant, {}).patterns[0].occurrences == 2


def test_unknown_job_is_refused(world):
    with pytest.raises(InvalidInput):
        world.jobs.run("vacuum")


def test_lambda_handlers_run_the_named_job(world, tmp_path):
    world.embedder.down = True
    world.remember("p", "pending memory")
    world.embedder.down = False
    report = lambda_jobs.run("backfill", {"batch": 10, "max_batches": "many", "other": 1}, jobs=world.jobs)
    assert report["job"] == "backfill" and report["counts"]["embedded"] == 1
    assert json.loads(json.dumps(report)) == report
    assert callable(lambda_jobs.retention_handler) and callable(lambda_jobs.mining_handler)
    assert callable(lambda_jobs.backfill_handler)


def test_lambda_handler_builds_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("CAPSULE_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("CAPSULE_EMBEDDER", "hashing")
    lambda_jobs._jobs.cache_clear()
    try:
        report = lambda_jobs.mining_handler({}, None)
    finally:
        lambda_jobs._jobs.cache_clear()
    assert report["ran"] and report["counts"]["tenants"] == 0


def _cli(data_dir: Path, *args: str) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "layers"), str(ROOT)]),
        "CAPSULE_DATA_DIR": str(data_dir),
        "CAPSULE_EMBEDDER": "hashing",
    }
    return subprocess.run(
        [sys.executable, "-m", "capsule_cli", *args], capture_output=True, text=True, env=env, timeout=120
    )


def test_cli_imports_fixpacks_and_runs_jobs(tmp_path):
    good = tmp_path / "redis.json"
    good.write_text(json.dumps({**fixpack(), "id": "from-the-original"}))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(fixpack(signatures=[{"text": "x", "regexes": ["(a+)+"]}])))
    result = _cli(tmp_path / "data", "solutions", "import", str(good), str(bad), "--json")
    assert result.returncode == 1
    rows = json.loads(result.stdout)
    assert rows[0]["created"] is True and "nested quantifiers" in rows[1]["error"]
    broken = tmp_path / "broken.json"
    broken.write_text("{ not json")
    result = _cli(tmp_path / "data", "solutions", "import", str(broken), str(tmp_path / "missing.json"))
    assert result.returncode == 1 and "is not JSON" in result.stdout and "cannot read" in result.stdout
    again = _cli(tmp_path / "data", "solutions", "import", str(good))
    assert again.returncode == 0 and "already had the title" in again.stdout
    listed = _cli(tmp_path / "data", "solutions", "list", "--json")
    assert [s["title"] for s in json.loads(listed.stdout)["solutions"]] == [fixpack()["title"]]
    job = _cli(tmp_path / "data", "jobs", "run", "mining", "--json")
    assert job.returncode == 0 and json.loads(job.stdout)["job"] == "mining"
    wrong = _cli(tmp_path / "data", "jobs", "run", "backfill", "--max-tenants", "2")
    assert wrong.returncode == 1 and "max-tenants" in wrong.stderr


class _Ticks:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_scheduler_runs_each_job_when_due(world):
    from capsule_cli.scheduler import Scheduler

    ticks = _Ticks()
    scheduler = Scheduler(world.jobs, {"backfill": 10, "mining": 100}, first_delay_s=5, monotonic=ticks)
    assert scheduler.run_due() == []
    ticks.now = 5
    assert scheduler.run_due() == ["backfill", "mining"]
    ticks.now = 15
    assert scheduler.run_due() == ["backfill"]
    ticks.now = 105
    assert sorted(scheduler.run_due()) == ["backfill", "mining"]
    assert [r.job for r in scheduler.reports] == ["backfill", "mining", "backfill", "backfill", "mining"]


def test_scheduler_survives_a_failing_job_and_stops(world):
    from capsule_cli.scheduler import Scheduler

    class Failing:
        def run(self, name):
            raise Unavailable("the database is busy")

    ticks = _Ticks()
    scheduler = Scheduler(Failing(), {"backfill": 10}, first_delay_s=0, monotonic=ticks)
    assert scheduler.run_due() == ["backfill"] and scheduler.reports == []
    assert scheduler.run_due() == []  # not again before its interval
    threaded = Scheduler(world.jobs, {"backfill": 3600}, first_delay_s=3600).start()
    threaded.stop()
    assert not threaded._thread.is_alive()


def test_cli_mines_detects_and_lists_golden_paths(tmp_path):
    data = tmp_path / "data"
    for project in ("api", "shop", "etl"):
        stored = _cli(
            data,
            "store",
            f"connect ECONNREFUSED 10.0.0.3:6379 in {project}",
            "--project",
            project,
            "--type",
            "error",
            "--outcome",
            "failure",
        )
        assert stored.returncode == 0, stored.stderr
    mined = _cli(data, "patterns", "mine", "--json")
    assert mined.returncode == 0, mined.stderr
    tag = json.loads(mined.stdout)["patterns"][0]["tag"]
    detected = _cli(data, "patterns", "detect", "redis: ECONNREFUSED on port 6379")
    assert detected.returncode == 0 and tag in detected.stdout
    golden = _cli(data, "patterns", "golden", "--min-applications", "0")
    assert golden.returncode == 1 and "min_applications" in golden.stderr


def test_backfill_embeds_a_chat_turn_as_a_store_would_have(world, tmp_path):
    from learning_helpers import make_world as fresh_world

    world.embedder.down = True
    world.remember("p", "Nate: What genre is your first screenplay?", session="s1")
    late = world.remember("p", "Joanna: It's a mix of drama and romance!", session="s1")
    world.embedder.down = False
    assert world.jobs.run("backfill").complete
    live = fresh_world(tmp_path / "live.db")
    live.remember("p", "Nate: What genre is your first screenplay?", session="s1")
    direct = live.remember("p", "Joanna: It's a mix of drama and romance!", session="s1")
    backfilled = world.store.get("t", late).embedding
    assert np.array_equal(backfilled, live.store.get("t", direct).embedding)
    assert not np.allclose(backfilled, world.embedder.embed(["Joanna: It's a mix of drama and romance!"])[0])


def test_mining_reads_a_tenant_again_only_when_something_it_depends_on_changed(world):
    for project in ("a", "b"):
        world.remember(project, "E11000 duplicate key error index: email_1", **FAIL)
    first = world.jobs.run("mining")
    assert (first.counts["tenants"], first.counts["unchanged"], first.counts["clusters"]) == (1, 0, 1)
    again = world.jobs.run("mining")  # nothing changed: the tenant is not read
    assert (again.counts["tenants"], again.counts["scanned"], again.counts["unchanged"]) == (0, 0, 1)
    assert "not read again" in again.explanation
    world.remember("a", "E11000 duplicate key error index: email_1 once more", **FAIL)
    third = world.jobs.run("mining")
    assert (third.counts["tenants"], third.counts["scanned"]) == (1, 3)
    assert world.learning.detect_patterns("t", {}).patterns[0].occurrences == 3
    solution = world.learning.create_solution("t", fixpack()).solution
    assert world.jobs.run("mining").counts["unchanged"] == 1  # a solution alone changes no pattern
    world.learning.solution_apply(
        "t", solution.id, {"success": True, "project": "a", "error": "E11000 duplicate key error"}
    )
    assert world.jobs.run("mining").counts["tenants"] == 1  # an application is evidence: read again


def test_scheduler_continues_a_backfill_that_left_memories_to_embed(world):
    # A switch of embedder re-embeds every memory: at the embedder's pace, not one budget per
    # interval; a backfill the embedder failed waits for its interval.
    from capsule_cli.scheduler import CONTINUE_S, Scheduler

    class Budgeted:
        def __init__(self, jobs):
            self.jobs = jobs

        def run(self, name):
            return self.jobs.run(name, batch=2, max_batches=1)

    world.embedder.down = True
    for i in range(5):
        world.remember("p", f"note {i}")
    ticks = _Ticks()
    scheduler = Scheduler(Budgeted(world.jobs), {"backfill": 300}, first_delay_s=0, monotonic=ticks)
    assert scheduler.run_due() == ["backfill"] and scheduler.reports[-1].counts["embedded"] == 0
    ticks.now = CONTINUE_S
    assert scheduler.run_due() == []  # the embedder failed: not before the interval
    world.embedder.down = False
    ticks.now = 300
    assert scheduler.run_due() == ["backfill"] and scheduler.reports[-1].counts == {
        "embedded": 2,
        "pending": 3,
        "solutions": 0,
    }
    ticks.now = 300 + CONTINUE_S
    assert scheduler.run_due() == ["backfill"]
    ticks.now = 300 + 2 * CONTINUE_S
    assert scheduler.run_due() == ["backfill"] and scheduler.reports[-1].counts["pending"] == 0
    ticks.now = 300 + 3 * CONTINUE_S
    assert scheduler.run_due() == []  # none left: back to the interval
