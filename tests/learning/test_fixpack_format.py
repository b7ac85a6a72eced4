"""The Vector Bridge's fixpack format through the library: five step kinds, both patch shapes, its
names for our fields, orders from file order, unknown keys kept and named (never refused)."""

from __future__ import annotations

import copy

import pytest

from capsule.errors import InvalidInput
from capsule.learning import models
from fixpack_files import FILE, FILES, KEPT, KINDS, in_file, kept_in, load

SIGNATURES = [{"text": "Error: getaddrinfo ENOTFOUND redis.railway.internal"}]


def fixpack(*steps, **fields) -> dict:
    return {"title": "Fix", "signatures": SIGNATURES, "steps": list(steps), **fields}


def _count(world) -> int:
    return len(world.learning.list_solutions("t").solutions)


def test_the_files_cover_every_step_kind_and_both_patch_shapes():
    kinds = {k for kinds in KINDS.values() for k in kinds}
    assert kinds == {"cmd", "patch", "copy", "script", "env"}
    patches = [s["payload"] for f in FILES for s in load(f)["steps"] if s["kind"] == "patch"]
    assert any("diff" in p for p in patches) and any("search" in p for p in patches)
    assert sorted(KEPT) == [f.name for f in FILES]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_each_file_imports_as_it_is_and_shows_its_unknown_keys_back(world, path):
    raw = load(path)
    result = world.learning.import_solution("t", copy.deepcopy(raw), source=path.name)
    assert result.created and result.kept_fields == KEPT[path.name]
    assert "Kept unknown keys (under 'extra'): " + ", ".join(KEPT[path.name]) in result.explanation
    shown = world.learning.get_solution("t", result.solution.id).solution.model_dump(mode="json")
    assert [s["kind"] for s in shown["steps"]] == KINDS[path.name]
    for kept in KEPT[path.name]:
        assert kept_in(shown, kept) == in_file(raw, kept), kept
    again = world.learning.import_solution("t", copy.deepcopy(raw), source=path.name)
    assert not again.created and again.solution.id == result.solution.id and again.kept_fields == KEPT[path.name]
    assert _count(world) == 1


def test_the_vector_bridge_names_read_as_ours(world):
    shared, pnpm, railway, redis = (world.learning.import_solution("t", load(FILE[name])).solution for name in (
        "monorepo_shared_folder", "pnpm_outdated_lockfile", "railway_wrong_dockerfile", "redis_enotfound_family"))
    assert shared.steps[0].payload == {"src": "packages/shared", "dest": "apps/web/shared", "extra": {"recursive": True}}
    assert pnpm.steps[0].payload == {"command": "pnpm install --no-frozen-lockfile", "cwd": ".",
                                     "extra": {"description": "rewrites pnpm-lock.yaml"}}
    assert pnpm.steps[1].payload["diff"].startswith("--- a/.github/workflows/ci.yml")
    assert railway.steps[0].payload == {"vars": {"RAILWAY_DOCKERFILE_PATH": "apps/api/Dockerfile"},
                                        "extra": {"service": "api"}}
    assert redis.steps[1].payload["interpreter"] == "node" and "family=0" in redis.steps[1].payload["script"]
    result = world.learning.import_solution("t", load(FILE["railway_wrong_dockerfile"]))
    assert ("Read as our names: steps[0].payload.key as name, steps[0].payload.name and value as vars, "
            "steps[1].payload.run as command."
            in result.explanation), result.explanation


def test_absent_orders_are_the_file_order_and_the_import_says_so(world):
    result = world.learning.import_solution("t", load(FILE["pnpm_outdated_lockfile"]))  # no step_order, no check_order
    assert [s.step_order for s in result.solution.steps] == [1, 2]
    assert [c.check_order for c in result.solution.checks] == [1, 2]
    assert "Numbered by their place in the file (no order given): steps[0], steps[1], checks[0], checks[1]." \
        in result.explanation
    given = world.learning.import_solution("t", load(FILE["railway_wrong_dockerfile"]))  # orders given
    assert "Numbered" not in given.explanation
    sorted_by_order = world.learning.create_solution("t", fixpack(
        {"step_order": 5, "kind": "cmd", "payload": {"run": "b"}}, {"kind": "cmd", "payload": {"run": "a"}},
        title="Mixed")).solution
    assert [(s.step_order, s.payload["command"]) for s in sorted_by_order.steps] == [(2, "a"), (5, "b")]


def test_solution_apply_records_an_outcome_whatever_the_step_kinds(world):
    ids = [world.learning.import_solution("t", load(f)).solution.id for f in FILES]
    for solution_id in ids:
        world.learning.solution_apply("t", solution_id, {"success": True})
        applied = world.learning.solution_apply("t", solution_id, {"success": False, "error": "still broken"})
        assert (applied.solution.success_count, applied.solution.failure_count) == (1, 1)
        assert "Recorded a failure" in applied.explanation
        assert applied.solution.steps  # the stored steps read back through the models, every kind


def test_an_imported_solution_is_found_by_its_error(world):
    redis = world.learning.import_solution("t", load(FILE["redis_enotfound_family"])).solution
    found = world.learning.solution_search("t", {"error": "Error: getaddrinfo ENOTFOUND redis.railway.internal"
                                                          " at GetAddrInfoReqWrap.onlookup"})
    assert found.results[0].solution.id == redis.id
    assert found.results[0].solution.extra == {"_comment": load(FILE["redis_enotfound_family"])["_comment"]}


@pytest.mark.parametrize("step, payload", [
    ({"kind": "cmd", "payload": {"command": "ls"}}, {"command": "ls"}),
    ({"kind": "cmd", "payload": {"run": "ls", "cwd": "apps/api"}}, {"command": "ls", "cwd": "apps/api"}),
    ({"kind": "patch", "payload": {"file": "a", "search": "x", "replace": ""}}, {"file": "a", "search": "x", "replace": ""}),
    ({"kind": "patch", "payload": {"diff": "--- a\n+++ b\n"}}, {"diff": "--- a\n+++ b\n"}),
    ({"kind": "patch", "payload": {"patch": "--- a\n", "path": "a"}}, {"diff": "--- a\n", "file": "a"}),
    ({"kind": "copy", "payload": {"src": "a", "dest": "b"}}, {"src": "a", "dest": "b"}),
    ({"kind": "copy", "payload": {"from": "a", "to": "b"}}, {"src": "a", "dest": "b"}),
    ({"kind": "copy", "payload": {"source": "a", "destination": "b"}}, {"src": "a", "dest": "b"}),
    ({"kind": "script", "payload": {"script": "echo hi"}}, {"script": "echo hi"}),
    ({"kind": "script", "payload": {"run": "echo hi", "shell": "bash", "cwd": "."}},
     {"script": "echo hi", "interpreter": "bash", "cwd": "."}),
    ({"kind": "script", "payload": {"file": "scripts/fix.sh"}}, {"file": "scripts/fix.sh"}),
    ({"kind": "env", "payload": {"vars": {"A": "1", "B_2": ""}}}, {"vars": {"A": "1", "B_2": ""}}),
    ({"kind": "env", "payload": {"name": "NODE_OPTIONS", "value": "--dns-result-order=ipv4first"}},
     {"vars": {"NODE_OPTIONS": "--dns-result-order=ipv4first"}}),
    ({"kind": "env", "payload": {"key": "A", "value": "1", "file": ".env"}}, {"vars": {"A": "1"}, "file": ".env"}),
    ({"kind": "env", "payload": {"variables": {"A": "1"}}}, {"vars": {"A": "1"}}),
])
def test_each_kind_takes_its_payload_and_aliases(world, step, payload):
    created = world.learning.create_solution("t", fixpack(step)).solution
    assert created.steps[0].payload == payload
    assert world.learning.get_solution("t", created.id).solution.steps[0].payload == payload


@pytest.mark.parametrize("step, needle", [
    ({"kind": "shell", "payload": {"run": "x"}}, "kind"),
    ({"kind": "cmd", "payload": {"run": 7}}, "payload.command: Input should be a valid string"),
    ({"kind": "cmd", "payload": {"run": "a", "command": "b"}}, "'run' and 'command' name the same field"),
    ({"kind": "cmd", "payload": {"cwd": "."}}, "payload.command: Field required"),
    ({"kind": "patch", "payload": {"file": "a"}}, "needs diff, or file, search and replace (missing search, replace)"),
    ({"kind": "patch", "payload": {"diff": "d", "search": "x", "replace": "y"}}, "not both"),
    ({"kind": "patch", "payload": {"diff": ["not", "text"]}}, "payload.diff"),
    ({"kind": "copy", "payload": {"from": "a"}}, "payload.dest: Field required"),
    ({"kind": "copy", "payload": {"from": "a", "to": True}}, "payload.dest: Input should be a valid string"),
    ({"kind": "script", "payload": {"interpreter": "node"}}, "script (or run) or file"),
    ({"kind": "script", "payload": {"script": "x", "file": "y"}}, "one of them"),
    ({"kind": "env", "payload": {"vars": {"PORT": 3000}}}, "payload.vars.PORT: Input should be a valid string"),
    ({"kind": "env", "payload": {"vars": {"NOT-A-NAME": "x"}}}, "payload.vars.NOT-A-NAME"),
    ({"kind": "env", "payload": {"vars": {}}}, "payload.vars"),
    ({"kind": "env", "payload": {"name": "A"}}, "name and value go together"),
    ({"kind": "env", "payload": {"name": "A", "value": "1", "vars": {"B": "2"}}}, "not both"),
    ({"kind": "cmd", "payload": {"run": "x"}, "step_order": "first"}, "steps.0.step_order"),
    ({"kind": "cmd", "payload": {"run": "x"}, "description": 5}, "steps.0.description"),
    ({"kind": "cmd", "payload": {"run": "x"}, "timeout_ms": "60000"}, "steps.0.timeout_ms"),
    ({"kind": "cmd", "payload": {"run": "x"}, "step_order": True}, "steps.0.step_order"),
])
@pytest.mark.parametrize("how", ["create", "import"])
def test_a_wrong_type_or_shape_of_a_known_key_is_refused_naming_it(world, step, needle, how):
    call = world.learning.create_solution if how == "create" else world.learning.import_solution
    with pytest.raises(InvalidInput) as caught:
        call("t", fixpack(step, _comment="kept only when the rest is valid"))
    assert needle in caught.value.message or needle == caught.value.field, caught.value.message
    assert caught.value.field.startswith("steps.0")
    assert _count(world) == 0


@pytest.mark.parametrize("change, field", [
    ({"checks": [{"cmd": "x", "expect_exit_code": 0, "_comment": 1}, {"cmd": "y"}]}, "checks.1"),
    ({"signatures": [{"text": "x", "regexes": "ENOTFOUND"}]}, "signatures.0.regexes"),
    ({"signatures": [{"text": "x", "$where": "1"}]}, "signatures.0.extra"),
    ({"steps": [{"kind": "cmd", "payload": {"run": "x", "a.b": 1}}]}, "steps.0"),
    ({"extra": "not an object"}, "extra"),
    ({"extra": {"id": 1}, "id": 2}, "body"),
])
def test_an_import_still_refuses_what_it_cannot_keep(world, change, field):
    with pytest.raises(InvalidInput) as caught:
        world.learning.import_solution("t", fixpack(**change))
    assert caught.value.field.startswith(field), caught.value.details  # or the key within it
    assert _count(world) == 0


def test_a_place_that_equals_a_given_order_keeps_the_file_order(world):
    # The first step is numbered 1 by its place, the second says 1: both stand, in file order
    # (no two orders can make a fixpack invalid, a rule no schema could state).
    steps = [{"kind": "cmd", "payload": {"run": "a"}}, {"step_order": 1, "kind": "cmd", "payload": {"run": "b"}}]
    imported = world.learning.import_solution("t", fixpack(steps=steps))
    assert [s.payload["command"] for s in imported.solution.steps] == ["a", "b"]


def test_create_and_update_refuse_unknown_keys_that_an_import_keeps(world):
    body = fixpack({"kind": "cmd", "payload": {"run": "x"}, "_comment": "why"})
    with pytest.raises(InvalidInput) as caught:
        world.learning.create_solution("t", body)
    assert caught.value.field == "steps.0._comment"
    imported = world.learning.import_solution("t", copy.deepcopy(body)).solution
    assert imported.steps[0].extra == {"_comment": "why"}
    # What show gives back (with the kept keys under 'extra') is a valid body for update.
    shown = imported.model_dump(mode="json", exclude={"id", "success_rate", "created_at", "updated_at"})
    updated = world.learning.update_solution("t", imported.id, shown).solution
    assert updated.steps[0].extra == {"_comment": "why"}


def test_the_format_module_is_the_one_place_for_the_names():
    from capsule.learning import fixpack_format

    assert fixpack_format.STEP_KINDS == tuple(models.PAYLOADS)
    for kind, names in fixpack_format.PAYLOAD_NAMES.items():
        assert set(names.values()) <= set(models.PAYLOADS[kind].model_fields) | {"name"}, kind


def test_signature_meta_is_kept_within_the_same_rules(world):
    meta = {"min_score": 0.4, "platform": "railway", "seen": [1, {"times": 3}]}
    imported = world.learning.import_solution("t", fixpack(signatures=[{"text": "x", "meta": meta}])).solution
    assert imported.signatures[0].meta.model_dump() == meta
    for bad in ({"min_score": "0.4"}, {"bad.key": 1}):
        with pytest.raises(InvalidInput) as caught:
            world.learning.import_solution("t", fixpack(title="Other", signatures=[{"text": "x", "meta": bad}]))
        assert caught.value.field.startswith("signatures.0.meta"), caught.value.details
    # An integer beyond 64 bits is the JSON number it is, as in a memory's meta: kept as a float.
    big = world.learning.import_solution("t", fixpack(title="Big", signatures=[{"text": "x", "meta": {"n": 2**64}}]))
    assert big.solution.signatures[0].meta.model_dump() == {"min_score": None, "n": float(2**64)}
