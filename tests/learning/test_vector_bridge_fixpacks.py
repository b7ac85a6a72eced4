"""The Vector Bridge's own six fixpack files (fixtures/vector_bridge/, byte for byte): each imports as
it is, reads back with its own payload keys and every top-level key, is found by its signature's
text, and reads through the one payload view the Vector Bridge's preview renders from."""

from __future__ import annotations

import copy

import pytest
from fixpack_files import REAL, REAL_KEPT, in_file, kept_in, load

from capsule.learning import fixpack_format

REAL_FILE = {f.stem: f for f in REAL}
TOP = ("title", "description", "category", "component", "tags", "package_manager", "monorepo_tool")


def test_the_six_files_are_there_and_cover_what_compat_names():
    assert len(REAL) == 6 and sum(f.name.startswith("002_") for f in REAL) == 2
    payload_keys = {k for f in REAL for s in load(f)["steps"] for k in s["payload"]}
    assert {
        "run",
        "command",
        "cwd",
        "src",
        "dst",
        "flags",
        "include",
        "exclude",
        "variable",
        "value",
        "description",
        "file",
        "search",
        "replace",
        "diff",
    } <= payload_keys


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_each_real_file_imports_and_reads_back_as_written(world, path):
    raw = load(path)
    result = world.learning.import_solution("t", copy.deepcopy(raw), source=path.name)
    assert result.created and result.kept_fields == REAL_KEPT[path.name], result.explanation
    shown = world.learning.get_solution("t", result.solution.id).solution.model_dump(mode="json")
    for key in TOP:
        assert shown[key] == raw.get(key, shown[key]), key
    assert [(s["kind"], s["payload"], s["description"]) for s in shown["steps"]] == [
        (s["kind"], s["payload"], s["description"]) for s in raw["steps"]
    ]
    assert [s["step_order"] for s in shown["steps"]] == list(range(1, len(raw["steps"]) + 1))
    assert [c["cmd"] for c in shown["checks"]] == [c["cmd"] for c in raw["checks"]]
    for kept in REAL_KEPT[path.name]:
        assert kept_in(shown, kept) == in_file(raw, kept), kept
    listed = world.learning.list_solutions("t").solutions[0].model_dump(mode="json")
    assert [s["payload"] for s in listed["steps"]] == [s["payload"] for s in raw["steps"]]


@pytest.fixture
def imported(world):
    return {path.stem: world.learning.import_solution("t", load(path), source=path.name).solution for path in REAL}


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_each_is_found_by_its_signature_text(world, imported, path):
    raw = load(path)
    for signature in raw["signatures"]:
        found = world.learning.solution_search("t", {"error": signature["text"]})
        assert found.results and found.results[0].solution.id == imported[path.stem].id, (
            signature["text"],
            [(m.solution.title, m.score) for m in found.results],
        )
        by_component = world.learning.solution_search("t", {"error": signature["text"], "component": raw["component"]})
        assert by_component.results[0].solution.id == imported[path.stem].id


def test_the_component_filter_keeps_those_naming_it_or_none(world, imported):
    text = load(REAL_FILE["002_shared_folder_sync"])["signatures"][0]["text"]
    backend = world.learning.solution_search("t", {"error": text, "component": "backend"})
    assert backend.results[0].solution.id == imported["002_shared_folder_sync"].id
    assert "for component 'backend' (or none named)" in backend.explanation
    infra = world.learning.solution_search("t", {"error": text, "component": "infra", "k": 20})
    assert imported["002_shared_folder_sync"].id not in {m.solution.id for m in infra.results}
    assert {m.solution.component for m in infra.results} <= {"infra"}
    unnamed = world.learning.import_solution(
        "t",
        {**load(REAL_FILE["002_shared_folder_sync"]), "component": None, "title": "Shared folder sync, any component"},
    ).solution
    infra = world.learning.solution_search("t", {"error": text, "component": "infra"})
    assert infra.results[0].solution.id == unnamed.id


def test_the_views_read_what_the_preview_shows(imported):
    shared = imported["002_shared_folder_sync"].steps[0].view()
    assert (shared["from"], shared["to"], shared["flags"]) == (
        "{project_root}/packages/shared/src/",
        "{project_root}/packages/backend/src/shared/",
        "-av --delete",
    )
    assert shared["include"] == ["*.ts", "*.tsx", "*.json"] and shared["other"] == {}
    env = imported["002_railway_wrong_dockerfile"].steps[0].view()
    assert (env["key"], env["value"]) == ("RAILWAY_DOCKERFILE_PATH", "Dockerfile")
    assert env["description"] == "Set custom Dockerfile path in Railway service variables"
    cmd = imported["001_monorepo_lockfile_mismatch"].steps[0].view()
    assert (cmd["command"], cmd["cwd"]) == ("rm -f package-lock.json yarn.lock", "{project_root}")
    patch = imported["004_railway_typescript_build_missing_devdeps"].steps[0].view()
    assert "\\n\\nWORKDIR /app" in patch["search"] and "\n" not in patch["search"]  # backslash-n kept as two characters
    diff = imported["001_monorepo_lockfile_mismatch"].steps[2].view()
    assert diff["file"] == "package.json" and diff["diff"].count("\n") == 9  # a diff's newlines are real
    assert imported["002_shared_folder_sync"].steps[0].summary() == (
        "copy {project_root}/packages/shared/src/ to {project_root}/packages/backend/src/shared/"
    )
    assert fixpack_format.payload_view("copy", {"src": "a", "dst": "b"})["to"] == "b"


def test_apply_records_the_outcome_and_its_times(world, imported):
    solution = imported["005_railway_redis_ipv6_enotfound"]
    assert solution.last_applied_at is None and solution.verified_on is None
    world.clock.advance(minutes=1)
    worked = world.learning.solution_apply("t", solution.id, {"success": True}).solution
    assert worked.success_count == 1 and worked.last_applied_at == worked.verified_on == world.clock()
    verified = worked.verified_on
    world.clock.advance(minutes=1)
    failed = world.learning.solution_apply("t", solution.id, {"success": False}).solution
    assert failed.failure_count == 1 and failed.last_applied_at == world.clock() and failed.verified_on == verified
    # A re-import replaces the content and keeps the counts and the times.
    again = world.learning.import_solution("t", load(REAL_FILE["005_railway_redis_ipv6_enotfound"])).solution
    assert (again.success_count, again.failure_count, again.verified_on) == (1, 1, verified)
