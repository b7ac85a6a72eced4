"""GET /v1/export and POST /v1/import through their Lambda handlers (synthetic API Gateway events)."""

import json

from functions import app
from functions.handlers import export as export_handler

from .events import event

ALICE = "arn:aws:iam::123456789012:user/alice"
BOB = "arn:aws:iam::123456789012:user/bob"


def _store(call, tenant, project, content):
    r = call(event("store", tenant=tenant, body={"project": project, "content": content}))
    assert r.status == 201, r
    return r.json["memory"]["id"]


class _Raw:
    """A response whose body is JSON Lines (the shared ``call`` parses bodies as JSON)."""

    def __init__(self, response):
        self.raw, self.status = response, response["statusCode"]
        self.json = json.loads(response["body"]) if self.status != 200 else None


def _export(call, tenant=ALICE, ok=True, **query):
    e = event("export", tenant=tenant, query=query or None)
    r = _Raw(export_handler.handler(e, app.LocalContext(function_name="export")))
    if ok:
        assert r.status == 200, r.raw
        assert r.raw["headers"]["Content-Type"] == "application/x-ndjson"
    return r


def test_export_then_import_into_another_tenant(service, call):
    ids = [_store(call, ALICE, "app", f"note {n} about sqlite locks") for n in range(3)]
    body = _export(call).raw["body"]
    rows = [json.loads(line) for line in body.splitlines()]
    assert rows[0]["kind"] == "header" and rows[-1]["kind"] == "end"
    assert [r["id"] for r in rows if r["kind"] == "memory"] == ids

    imported = call(event("import_data", tenant=BOB, raw_body=body))
    assert imported.status == 200, imported
    assert imported.json["imported"]["memory"] == 3 and imported.json["complete"]
    again = call(event("import_data", tenant=BOB, raw_body=body))
    assert again.json["imported"] == {} and again.json["skipped"]["memory"] == 3
    # One SQLite file holds both tenants and ids are unique per tenant: Bob's copies keep Alice's
    # ids, and nothing in the answer says that Alice holds them (no existence oracle, issue 31).
    assert "another tenant" not in imported.json["explanation"]
    listed = call(event("list", tenant=BOB, query={"project": "app"}))
    assert sorted(m["content"] for m in listed.json["memories"]) == [f"note {n} about sqlite locks" for n in range(3)]
    assert sorted(m["id"] for m in listed.json["memories"]) == sorted(ids)
    assert call(event("list", tenant=ALICE, query={"project": "app"})).json["memories"][0]["id"] in ids


def test_a_large_export_comes_in_pages_that_join_into_the_file(service, call, monkeypatch):
    for n in range(5):
        _store(call, ALICE, "app", f"memory {n} " + "x" * 2000)
    whole = _export(call).raw["body"]
    monkeypatch.setattr(export_handler, "PAGE_BYTES", 1)  # every chunk its own page
    parts, cursor, pages = [], None, 0
    while True:
        r = _export(call, **({"cursor": cursor} if cursor else {}))
        parts.append(r.raw["body"])
        pages += 1
        cursor = r.raw["headers"].get(export_handler.NEXT_CURSOR)
        if cursor is None:
            break
    assert pages > 2
    strip = lambda text: [line for line in text.splitlines() if '"kind":"header"' not in line]  # noqa: E731
    assert strip("".join(parts)) == strip(whole)


def test_a_project_export_and_bad_cursors(service, call):
    _store(call, ALICE, "a", "in project a")
    _store(call, ALICE, "b", "in project b")
    body = _export(call, project="b").raw["body"]
    assert "in project b" in body and "in project a" not in body
    bad = _export(call, ok=False, cursor="garbage")
    assert bad.status == 404 and bad.json["error"]["details"][0]["field"] == "cursor", bad.json


def test_bad_import_bodies_get_a_422_or_a_report_and_change_nothing(service, call):
    _store(call, ALICE, "app", "one memory")
    body = _export(call).raw["body"]
    no_header = call(event("import_data", tenant=BOB, raw_body="\n".join(body.splitlines()[1:])))
    assert no_header.status == 422 and "line 1" in no_header.json["error"]["message"]
    empty = call(event("import_data", tenant=BOB, raw_body=""))
    assert empty.status == 422
    broken = body.replace('"pinned":false', '"pinned":"no"')
    r = call(event("import_data", tenant=BOB, raw_body=broken))
    assert r.status == 200 and r.json["refused"][0]["field"] == "pinned" and r.json["refused"][0]["line"] == 3
    assert call(event("projects", tenant=BOB)).json["projects"] == []
    binary = call(event("import_data", tenant=BOB, raw_body="\udcff\n", base64_body=False))
    assert binary.status in (200, 422)


def test_the_export_never_shows_another_tenant(service, call):
    _store(call, BOB, "app", "bob's secret")
    assert "bob's secret" not in _export(call).raw["body"]
    assert _export(call, tenant=None, ok=False).status == 401


def test_an_import_names_the_source_it_is_given_and_refuses_a_bad_one(service, call):
    """``source`` (optional; what ``capsule import FILE`` sends beside a server) is named in the
    explanation instead of "the request body"; a value the route refuses is a 422 naming it, and
    a parameter it does not declare is still refused."""
    _store(call, ALICE, "app", "one memory")
    body = _export(call).raw["body"]
    named = call(event("import_data", tenant=BOB, raw_body=body, query={"source": "notes/export.jsonl"}))
    assert named.status == 200 and named.json["imported"]["memory"] == 1, named
    assert "notes/export.jsonl" in named.json["explanation"] and "request body" not in named.json["explanation"]
    unnamed = call(event("import_data", tenant=BOB, raw_body=body))
    assert "the request body" in unnamed.json["explanation"]
    for bad in ("tab\there", "x" * 256, ""):
        refused = call(event("import_data", tenant=BOB, raw_body=body, query={"source": bad}))
        assert refused.status == 422 and "source" in json.dumps(refused.json["error"]), (bad, refused.json)
    unknown = call(event("import_data", tenant=BOB, raw_body=body, query={"origin": "notes.jsonl"}))
    assert unknown.status == 422 and "origin" in unknown.json["error"]["message"], unknown.json


def test_an_import_body_is_split_into_lines_as_a_file_is(service, call):
    """At newlines only, as ``capsule import FILE`` reads: a carriage return between a row's
    fields (JSON whitespace) does not end the line."""
    _store(call, ALICE, "app", "one memory")
    rows = _export(call).raw["body"].splitlines()
    body = "\n".join([rows[0], rows[1].replace(",", ",\r", 1), *rows[2:]]) + "\n"
    r = call(event("import_data", tenant=BOB, raw_body=body))
    assert r.status == 200 and r.json["refused"] == [] and r.json["imported"]["memory"] == 1, r.json
