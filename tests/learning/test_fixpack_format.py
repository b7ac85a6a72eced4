"""The Vector Bridge's fixpack format through the library: five step kinds and any other, both patch
shapes, every payload spelling kept as sent and read through one view, orders from file order,
unknown keys kept and named (an import never refuses them; our own create does)."""

from __future__ import annotations

import copy

import pytest
from fixpack_files import FILE, FILES, KEPT, KINDS, in_file, kept_in, load

from capsule.core.errors import InvalidInput
from capsule.learning import fixpack_format

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
    assert (
        "Kept unknown keys as written (a step payload's in the payload, others under 'extra'): "
        + ", ".join(KEPT[path.name])
        in result.explanation
    )
    shown = world.learning.get_solution("t", result.solution.id).solution.model_dump(mode="json")
    assert [s["kind"] for s in shown["steps"]] == KINDS[path.name]
    for kept in KEPT[path.name]:
        assert kept_in(shown, kept) == in_file(raw, kept), kept
    # Every payload reads back as the file wrote it.
    assert [s["payload"] for s in shown["steps"]] == [s["payload"] for s in raw["steps"]]
    again = world.learning.import_solution("t", copy.deepcopy(raw), source=path.name)
    assert not again.created and again.solution.id == result.solution.id and again.kept_fields == KEPT[path.name]
    assert _count(world) == 1


def test_payloads_keep_the_files_spellings_and_read_through_one_view(world):
    shared, pnpm, railway, redis = (
        world.learning.import_solution("t", load(FILE[name])).solution
        for name in (
            "monorepo_shared_folder",
            "pnpm_outdated_lockfile",
            "railway_wrong_dockerfile",
            "redis_enotfound_family",
        )
    )
    assert shared.steps[0].payload == {"from": "packages/shared", "to": "apps/web/shared", "recursive": True}
    assert shared.steps[0].view()["from"] == "packages/shared" and shared.steps[0].view()["other"] == {
        "recursive": True
    }
    assert pnpm.steps[0].payload == {
        "run": "pnpm install --no-frozen-lockfile",
        "cwd": ".",
        "description": "rewrites pnpm-lock.yaml",
    }
    assert pnpm.steps[0].view()["command"] == "pnpm install --no-frozen-lockfile"
    assert pnpm.steps[0].view()["description"] == "rewrites pnpm-lock.yaml"
    assert pnpm.steps[1].view()["diff"].startswith("--- a/.github/workflows/ci.yml")
    env = railway.steps[0].view()
    assert (env["key"], env["value"], env["set"]) == (
        "RAILWAY_DOCKERFILE_PATH",
        "apps/api/Dockerfile",
        {"RAILWAY_DOCKERFILE_PATH": "apps/api/Dockerfile"},
    )
    assert redis.steps[1].view()["interpreter"] == "node" and "family=0" in redis.steps[1].view()["script"]
    result = world.learning.import_solution("t", load(FILE["railway_wrong_dockerfile"]))
    assert "Read (and kept as written): steps[1].payload.run as command." in result.explanation, result.explanation


def test_absent_orders_are_the_file_order_and_the_import_says_so(world):
    result = world.learning.import_solution("t", load(FILE["pnpm_outdated_lockfile"]))  # no step_order, no check_order
    assert [s.step_order for s in result.solution.steps] == [1, 2]
    assert [c.check_order for c in result.solution.checks] == [1, 2]
    assert (
        "Numbered by their place in the file (no order given): steps[0], steps[1], checks[0], checks[1]."
        in result.explanation
    )
    given = world.learning.import_solution("t", load(FILE["railway_wrong_dockerfile"]))  # orders given
    assert "Numbered" not in given.explanation
    sorted_by_order = world.learning.create_solution(
        "t",
        fixpack(
            {"step_order": 5, "kind": "cmd", "payload": {"run": "b"}},
            {"kind": "cmd", "payload": {"run": "a"}},
            title="Mixed",
        ),
    ).solution
    assert [(s.step_order, s.view()["command"]) for s in sorted_by_order.steps] == [(2, "a"), (5, "b")]


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
    found = world.learning.solution_search(
        "t", {"error": "Error: getaddrinfo ENOTFOUND redis.railway.internal at GetAddrInfoReqWrap.onlookup"}
    )
    assert found.results[0].solution.id == redis.id
    assert found.results[0].solution.extra == {"_comment": load(FILE["redis_enotfound_family"])["_comment"]}


# kind, payload as sent (stored as it is), the view's fields it gives
SPELLED = [
    ("cmd", {"command": "ls"}, {"command": "ls"}),
    ("cmd", {"run": "ls", "cwd": "apps/api"}, {"command": "ls", "cwd": "apps/api"}),
    (
        "cmd",
        {"run": "make", "env": {"CI": "1"}, "description": "build"},
        {"command": "make", "env": {"CI": "1"}, "description": "build"},
    ),
    ("patch", {"file": "a", "search": "x", "replace": ""}, {"file": "a", "search": "x", "replace": ""}),
    (
        "patch",
        {"file": "a", "search": "x\\ny", "replace": "z", "description": "why"},
        {"file": "a", "search": "x\\ny", "replace": "z", "description": "why"},
    ),
    ("patch", {"diff": "--- a\n+++ b\n"}, {"diff": "--- a\n+++ b\n"}),
    ("patch", {"file": "package.json", "diff": "--- a\n"}, {"file": "package.json", "diff": "--- a\n"}),
    ("patch", {"patch": "--- a\n", "path": "a"}, {"diff": "--- a\n", "file": "a"}),
    ("copy", {"from": "a", "to": "b"}, {"from": "a", "to": "b"}),
    (
        "copy",
        {
            "src": "{project_root}/a/",
            "dst": "{project_root}/b/",
            "flags": "-av --delete",
            "include": ["*.ts"],
            "exclude": ["*.test.ts"],
        },
        {
            "from": "{project_root}/a/",
            "to": "{project_root}/b/",
            "flags": "-av --delete",
            "include": ["*.ts"],
            "exclude": ["*.test.ts"],
        },
    ),
    ("copy", {"src": "a", "dest": "b"}, {"from": "a", "to": "b"}),
    ("copy", {"source": "a", "destination": "b"}, {"from": "a", "to": "b"}),
    ("script", {"script": "echo hi"}, {"script": "echo hi"}),
    (
        "script",
        {"run": "echo hi", "shell": "bash", "cwd": "."},
        {"script": "echo hi", "interpreter": "bash", "cwd": "."},
    ),
    ("script", {"file": "scripts/fix.sh"}, {"file": "scripts/fix.sh"}),
    ("env", {"key": "A", "value": "1"}, {"key": "A", "value": "1", "set": {"A": "1"}}),
    (
        "env",
        {"variable": "A", "value": "1", "description": "d"},
        {"key": "A", "value": "1", "set": {"A": "1"}, "description": "d"},
    ),
    (
        "env",
        {"name": "NODE_OPTIONS", "value": "--dns-result-order=ipv4first"},
        {
            "key": "NODE_OPTIONS",
            "value": "--dns-result-order=ipv4first",
            "set": {"NODE_OPTIONS": "--dns-result-order=ipv4first"},
        },
    ),
    ("env", {"set": {"A": "1", "B_2": ""}}, {"set": {"A": "1", "B_2": ""}}),
    (
        "env",
        {"set": {"PORT": "3000"}, "file": ".env"},
        {"set": {"PORT": "3000"}, "key": "PORT", "value": "3000", "file": ".env"},
    ),
    ("env", {"vars": {"A": "1"}}, {"set": {"A": "1"}, "key": "A", "value": "1"}),
    ("env", {"variables": {"A": "1", "B": "2"}}, {"set": {"A": "1", "B": "2"}}),
]


def _view(given: dict) -> dict:
    """A whole view: every field None unless given, and no other keys."""
    return {**dict.fromkeys(fixpack_format.VIEW_FIELDS), "other": {}, **given}


@pytest.mark.parametrize("kind, payload, view", SPELLED)
@pytest.mark.parametrize("how", ["create", "import"])
def test_each_spelling_is_kept_as_sent_and_read_by_the_view(world, kind, payload, view, how):
    call = world.learning.create_solution if how == "create" else world.learning.import_solution
    created = call("t", fixpack({"kind": kind, "payload": payload})).solution
    shown = world.learning.get_solution("t", created.id).solution
    assert created.steps[0].payload == shown.steps[0].payload == payload
    assert fixpack_format.payload_view(kind, shown.steps[0].payload) == _view(view)


def test_the_view_reads_the_preferred_spelling_where_a_payload_gives_two_and_keeps_both(world):
    payload = {"run": "a", "command": "b", "src": "x", "to": "y"}
    imported = world.learning.import_solution("t", fixpack({"kind": "cmd", "payload": payload}))
    assert imported.solution.steps[0].payload == payload
    view = imported.solution.steps[0].view()
    assert view["command"] == "b" and view["other"] == {"src": "x", "to": "y"}
    assert "steps[0].payload gives both run and command: read command (both kept)." in imported.explanation
    copy_view = fixpack_format.payload_view("copy", {"src": "a", "from": "b", "dst": "c"})
    assert (copy_view["from"], copy_view["to"]) == ("b", "c")  # the preview's own key first


def test_the_view_of_a_kind_it_does_not_know_is_all_other():
    view = fixpack_format.payload_view("shell", {"run": "x", "cwd": "."})
    assert view["command"] is None and view["other"] == {"run": "x", "cwd": "."}
    assert set(view) == {*fixpack_format.VIEW_FIELDS, "other"}


def test_a_step_of_any_kind_imports_as_written_and_create_refuses_it(world):
    steps = [
        {"kind": "shell", "payload": {"run": "make", "_why": "ours"}, "description": "Build"},
        {"kind": "docker", "payload": {}},
        {"kind": "cmd", "payload": {"run": "ls"}},
    ]
    imported = world.learning.import_solution("t", fixpack(*copy.deepcopy(steps)))
    shown = world.learning.get_solution("t", imported.solution.id).solution
    assert [(s.kind, s.payload) for s in shown.steps] == [(s["kind"], s["payload"]) for s in steps]
    assert (
        "Kept as written, of a kind this format does not interpret: steps[0] (shell), steps[1] (docker)."
        in imported.explanation
    )
    assert shown.steps[0].summary() == "Build" and shown.steps[1].summary() == "a docker step"
    world.learning.solution_apply("t", shown.id, {"success": True})
    with pytest.raises(InvalidInput) as caught:
        world.learning.create_solution("t", fixpack(*steps, title="Ours"))
    assert caught.value.field == "steps.0.kind" and "an import keeps" in caught.value.message


# Payloads our own API refuses (create, update); an import keeps each as written.
REFUSED_PAYLOADS = [
    ({"kind": "cmd", "payload": {"run": 7}}, "payload.run: Input should be a valid string"),
    ({"kind": "cmd", "payload": {"run": "a", "command": "b"}}, "'run' and 'command' name the same field"),
    ({"kind": "cmd", "payload": {"cwd": "."}}, "payload.command: Field required"),
    ({"kind": "cmd", "payload": {"command": "x", "recursive": True}}, "payload.recursive: not a key of cmd payloads"),
    ({"kind": "patch", "payload": {"file": "a"}}, "needs diff, or file, search and replace (missing search, replace)"),
    ({"kind": "patch", "payload": {"diff": "d", "search": "x", "replace": "y"}}, "not both"),
    ({"kind": "patch", "payload": {"diff": ["not", "text"]}}, "payload.diff"),
    ({"kind": "copy", "payload": {"from": "a"}}, "payload.to: Field required"),
    ({"kind": "copy", "payload": {"src": "a", "dst": True}}, "payload.dst: Input should be a valid string"),
    ({"kind": "copy", "payload": {"src": "a", "dst": "b", "include": "*.ts"}}, "payload.include"),
    ({"kind": "script", "payload": {"interpreter": "node"}}, "script or run) or a file"),
    ({"kind": "script", "payload": {"script": "x", "file": "y"}}, "one of them"),
    ({"kind": "env", "payload": {"vars": {"PORT": 3000}}}, "payload.vars.PORT: Input should be a valid string"),
    ({"kind": "env", "payload": {"set": {"NOT-A-NAME": "x"}}}, "payload.set.NOT-A-NAME"),
    ({"kind": "env", "payload": {"vars": {}}}, "payload.vars"),
    ({"kind": "env", "payload": {"name": "A"}}, "name and value go together"),
    ({"kind": "env", "payload": {"variable": "A"}}, "variable and value go together"),
    ({"kind": "env", "payload": {"name": "A", "value": "1", "vars": {"B": "2"}}}, "not both"),
    ({"kind": "env", "payload": {}}, "needs key and value, or set"),
]


@pytest.mark.parametrize("step, needle", REFUSED_PAYLOADS)
def test_create_refuses_a_payload_naming_the_key_as_sent(world, step, needle):
    with pytest.raises(InvalidInput) as caught:
        world.learning.create_solution("t", fixpack(step))
    assert needle in caught.value.message, caught.value.message
    assert caught.value.field.startswith("steps.0")
    assert _count(world) == 0


@pytest.mark.parametrize("step, needle", REFUSED_PAYLOADS)
def test_an_import_keeps_any_payload_object_as_written(world, step, needle):
    imported = world.learning.import_solution("t", fixpack(copy.deepcopy(step)))
    shown = world.learning.get_solution("t", imported.solution.id).solution
    assert shown.steps[0].payload == step["payload"]


@pytest.mark.parametrize(
    "step, needle",
    [
        ({"kind": "cmd", "payload": "pnpm install"}, "steps.0.payload"),
        ({"kind": "cmd"}, "steps.0.payload"),
        ({"payload": {"run": "x"}}, "steps.0.kind"),
        ({"kind": "", "payload": {"run": "x"}}, "steps.0.kind"),
        ({"kind": "cmd", "payload": {"run": "x"}, "step_order": "first"}, "steps.0.step_order"),
        ({"kind": "cmd", "payload": {"run": "x"}, "description": 5}, "steps.0.description"),
        ({"kind": "cmd", "payload": {"run": "x"}, "timeout_ms": "60000"}, "steps.0.timeout_ms"),
        ({"kind": "cmd", "payload": {"run": "x"}, "step_order": True}, "steps.0.step_order"),
    ],
)
@pytest.mark.parametrize("how", ["create", "import"])
def test_a_wrong_type_of_a_steps_own_key_is_refused_naming_it(world, step, needle, how):
    call = world.learning.create_solution if how == "create" else world.learning.import_solution
    with pytest.raises(InvalidInput) as caught:
        call("t", fixpack(step, _comment="kept only when the rest is valid"))
    assert caught.value.field.startswith(needle), (caught.value.field, caught.value.message)
    assert _count(world) == 0


@pytest.mark.parametrize(
    "change, field",
    [
        (
            {"checks": [{"cmd": "x", "expect_exit_code": 0, "_comment": 1}, {"cmd": "y", "expect_exit_code": "0"}]},
            "checks.1.expect_exit_code",
        ),
        ({"signatures": [{"text": "x", "regexes": "ENOTFOUND"}]}, "signatures.0.regexes"),
        ({"signatures": [{"text": "x", "$where": "1"}]}, "signatures.0.extra"),
        ({"steps": [{"kind": "cmd", "payload": {"run": "x", "a.b": 1}}]}, "steps.0"),
        ({"steps": [{"kind": "shell", "payload": {"run": "x", "$where": 1}}]}, "steps.0"),
        ({"extra": "not an object"}, "extra"),
        ({"extra": {"id": 1}, "id": 2}, "body"),
    ],
)
def test_an_import_still_refuses_what_it_cannot_keep(world, change, field):
    with pytest.raises(InvalidInput) as caught:
        world.learning.import_solution("t", fixpack(**change))
    assert caught.value.field.startswith(field), caught.value.details  # or the key within it
    assert _count(world) == 0


def test_a_check_without_expectations_expects_exit_code_0_on_import(world):
    # The Vector Bridge's default (COMPAT.md §1.17); our own API asks for one.
    imported = world.learning.import_solution("t", fixpack(checks=[{"cmd": "make test"}])).solution
    assert imported.checks[0].expect_exit_code == 0
    with pytest.raises(InvalidInput):
        world.learning.create_solution("t", fixpack(checks=[{"cmd": "make test"}], title="Ours"))


def test_a_place_that_equals_a_given_order_keeps_the_file_order(world):
    # The first step is numbered 1 by its place, the second says 1: both stand, in file order
    # (no two orders can make a fixpack invalid, a rule no schema could state).
    steps = [{"kind": "cmd", "payload": {"run": "a"}}, {"step_order": 1, "kind": "cmd", "payload": {"run": "b"}}]
    imported = world.learning.import_solution("t", fixpack(steps=steps))
    assert [s.view()["command"] for s in imported.solution.steps] == ["a", "b"]


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
    assert updated.steps[0].extra == {"_comment": "why"} and updated.steps[0].payload == {"run": "x"}


def test_the_format_module_is_the_one_place_for_the_spellings():
    from capsule.learning import payloads

    assert fixpack_format.STEP_KINDS == tuple(payloads.VIEWS) == tuple(fixpack_format.SPELLINGS)
    for kind, fields in fixpack_format.SPELLINGS.items():
        view_fields = {f.alias or name for name, f in payloads.VIEWS[kind].model_fields.items()}
        assert set(fields) == view_fields, kind
        schema = payloads.payload_schema(kind)
        assert set(schema["properties"]) == {s for spellings in fields.values() for s in spellings}


def test_every_top_level_key_of_the_schema_is_a_field(world):
    body = fixpack(
        component="infra",
        tags=["pnpm"],
        project_root="/Users/me/app",
        repo_name="app",
        package_manager="pnpm",
        monorepo_tool="turbo",
    )
    for how in (world.learning.create_solution, world.learning.import_solution):
        solution = how("t", copy.deepcopy(body)).solution
        shown = world.learning.get_solution("t", solution.id).solution.model_dump(mode="json")
        assert {
            k: shown[k] for k in ("component", "tags", "project_root", "repo_name", "package_manager", "monorepo_tool")
        } == {
            k: body[k] for k in ("component", "tags", "project_root", "repo_name", "package_manager", "monorepo_tool")
        }
        assert "extra" not in shown  # none of them was kept as unknown
        body["title"] = "Again"


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
