"""The Vector Bridge's fixpack files through the import route, as Lambda calls it: each imports as
it is and shows its unknown keys back; bad input is a 422 naming the field and imports nothing."""

import base64
import json
import os

import pytest

from tests.learning.fixpack_files import FILES, KEPT, in_file, kept_in, load

from .events import event

PNPM = load(FILES[1])


def solutions(call) -> list:
    return call(event("solution_list")).json["solutions"]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_each_file_imports_shows_its_extras_and_records_outcomes(service, call, path):
    raw = load(path)
    imported = call(event("solution_import", raw_body=path.read_text("utf-8")))
    assert imported.status == 200, imported
    assert imported.json["kept_fields"] == KEPT[path.name]
    assert ", ".join(KEPT[path.name]) in imported.json["explanation"]
    solution_id = imported.json["solution"]["id"]
    shown = call(event("solution_get", path_params={"id": solution_id}))
    assert shown.status == 200
    for kept in KEPT[path.name]:
        assert kept_in(shown.json["solution"], kept) == in_file(raw, kept), kept
    applied = call(event("solution_apply", path_params={"id": solution_id}, body={"success": True}))
    assert applied.status == 200 and applied.json["solution"]["success_count"] == 1


def _binary_event() -> dict:
    e = event("solution_import", raw_body="")
    e["body"], e["isBase64Encoded"] = base64.b64encode(os.urandom(64) + b"\xff\xfe").decode(), True
    return e


@pytest.mark.parametrize(
    "make, field",
    [
        (
            lambda: event("solution_import", body={**PNPM, "steps": [{**PNPM["steps"][0], "timeout_ms": "5m"}]}),
            "steps.0.timeout_ms",
        ),
        (
            lambda: event("solution_import", body={**PNPM, "steps": [{"kind": "cmd", "payload": ["pnpm"]}]}),
            "steps.0.payload",
        ),  # any payload object imports (kept as written); a payload that is no object does not
        (lambda: event("solution_import", body={**PNPM, "title": 16}), "title"),
        (lambda: event("solution_import", raw_body=json.dumps(PNPM)[:200]), "body"),
        (lambda: event("solution_import", body=[PNPM]), "body"),
    ],
)
def test_bad_input_is_422_naming_the_field_and_imports_nothing(service, call, make, field):
    refused = call(make())
    assert refused.status == 422, refused
    assert refused.json["error"]["details"][0]["field"] == field, refused.json
    assert solutions(call) == []


def test_a_binary_file_is_400_not_json_and_imports_nothing(service, call):
    refused = call(_binary_event())
    assert refused.status == 400, refused
    assert refused.json["error"]["details"][0]["field"] == "body", refused.json
    assert solutions(call) == []


def test_create_still_refuses_the_unknown_keys_an_import_keeps(service, call):
    refused = call(event("solution_create", body=PNPM))
    assert refused.status == 422
    named = {d["field"] for d in refused.json["error"]["details"]}
    assert {"_comment", "id", "success_rate", "signatures.0._comment", "steps.1._comment", "checks.1._comment"} <= named
    assert solutions(call) == []
