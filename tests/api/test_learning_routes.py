"""The solution and pattern routes, called as Lambda calls them (synthetic HTTP API v2 events)."""

import copy

from functions import routes

from .events import event

ALICE = "arn:aws:iam::123456789012:user/alice"
BOB = "arn:aws:iam::123456789012:user/bob"
FIXPACK = {
    "title": "Point REDIS_URL at the private host",
    "category": "network",
    "signatures": [{"text": "connect ECONNREFUSED 127.0.0.1:6379", "regexes": [r"ECONNREFUSED\s+\S*:6379"]}],
    "steps": [{"step_order": 1, "kind": "cmd", "payload": {"command": "railway variables set REDIS_URL=..."}}],
    "checks": [{"check_order": 1, "cmd": "redis-cli ping", "expect_substring": "PONG"}],
}
LEARNING_ROUTES = {
    "solution_create",
    "solution_list",
    "solution_get",
    "solution_update",
    "solution_delete",
    "solution_import",
    "solution_search",
    "solution_apply",
    "pattern_detect",
    "pattern_solutions",
    "pattern_link",
    "golden_paths",
    "detect_patterns",
}


def created(call, body=FIXPACK, tenant=ALICE) -> dict:
    r = call(event("solution_create", tenant=tenant, body=body))
    assert r.status == 201, r
    return r.json["solution"]


def test_learning_routes_are_in_the_table():
    assert LEARNING_ROUTES <= {r.name for r in routes.ROUTES}


def test_solution_crud(service, call):
    s = created(call)
    assert call(event("solution_get", path_params={"id": s["id"]})).json["solution"]["title"] == FIXPACK["title"]
    assert call(event("solution_get", tenant=BOB, path_params={"id": s["id"]})).status == 404
    listed = call(event("solution_list", query={"category": "network", "limit": 5}))
    assert [x["id"] for x in listed.json["solutions"]] == [s["id"]]
    renamed = call(event("solution_update", path_params={"id": s["id"]}, body={**FIXPACK, "title": "Renamed"}))
    assert renamed.status == 200 and renamed.json["solution"]["title"] == "Renamed"
    assert call(event("solution_update", tenant=BOB, path_params={"id": s["id"]}, body=FIXPACK)).status == 404
    assert call(event("solution_delete", tenant=BOB, path_params={"id": s["id"]})).status == 404
    deleted = call(event("solution_delete", path_params={"id": s["id"]}))
    assert deleted.status == 200 and deleted.json["deleted"] is True
    assert call(event("solution_get", path_params={"id": s["id"]})).status == 404


def test_bad_fixpacks_are_422_naming_the_field(service, call):
    bad = copy.deepcopy(FIXPACK)
    bad["signatures"][0]["regexes"] = ["(a+)+$"]
    r = call(event("solution_create", body=bad))
    assert r.status == 422 and r.json["error"]["details"][0]["field"] == "signatures.0.regexes.0"
    assert "nested quantifiers" in r.json["error"]["message"]
    r = call(event("solution_create", body={**FIXPACK, "surprise": 1}))
    assert r.status == 422
    r = call(event("solution_create", raw_body="{not json"))
    assert r.status == 422 and r.json["error"]["details"][0]["field"] == "body"
    assert call(event("solution_list")).json["solutions"] == []


def test_import_keeps_unknown_fields_and_is_idempotent(service, call):
    body = {**FIXPACK, "id": "original-id", "version": 3}
    first = call(event("solution_import", body=body))
    assert first.status == 200 and first.json["created"] and first.json["kept_fields"] == ["id", "version"]
    assert first.json["solution"]["extra"] == {"id": "original-id", "version": 3}
    again = call(event("solution_import", body=body))
    assert not again.json["created"] and again.json["solution"]["id"] == first.json["solution"]["id"]
    bad = call(event("solution_import", body={**FIXPACK, "signatures": [{"regexes": ["x"]}]}))  # no text
    assert bad.status == 422


def test_search_apply_and_patterns(service, call):
    s = created(call)
    found = call(event("solution_search", body={"error": "Error: connect ECONNREFUSED 10.0.0.1:6379"}))
    assert found.status == 200 and found.json["results"][0]["solution"]["id"] == s["id"]
    assert found.json["results"][0]["reasons"] and found.json["explanation"]
    assert call(event("solution_search", tenant=BOB, body={"error": "ECONNREFUSED 1:6379"})).json["results"] == []
    applied = call(
        event(
            "solution_apply",
            path_params={"id": s["id"]},
            body={"success": True, "pattern": {"tag": "redis-down", "category": "network"}},
        )
    )
    assert applied.status == 200 and applied.json["solution"]["success_count"] == 1
    assert call(event("solution_apply", tenant=BOB, path_params={"id": s["id"]}, body={"success": True})).status == 404
    assert call(event("solution_apply", path_params={"id": s["id"]}, body={"success": "yes please"})).status == 422
    for _ in range(2):
        linked = call(
            event(
                "pattern_link",
                body={"tag": "redis-down", "category": "network", "solution_id": s["id"], "success": True},
            )
        )
        assert linked.status == 200
    assert linked.json["link"]["success"] == 3
    sols = call(event("pattern_solutions", body={"tag": "redis-down", "category": "network"}))
    assert [x["id"] for x in sols.json["solutions"]] == [s["id"]]
    assert call(event("pattern_solutions", tenant=BOB, body={"tag": "redis-down", "category": "network"})).status == 404
    golden = call(event("golden_paths", query={"min_applications": 3}))
    assert [p["solution"]["id"] for p in golden.json["paths"]] == [s["id"]]
    assert call(event("golden_paths", query={"min_applications": 4})).json["paths"] == []
    assert call(event("golden_paths", query={"min_applications": 0})).status == 422
    assert call(event("golden_paths", tenant=BOB)).json["paths"] == []


def test_mine_then_detect(service, call):
    for project in ("api", "shop", "etl"):
        r = call(
            event(
                "store",
                body={
                    "project": project,
                    "content": f"connect ECONNREFUSED 10.0.0.9:6379 in {project}",
                    "meta": {"type": "error", "outcome_status": "failure"},
                },
            )
        )
        assert r.status == 201
    mined = call(event("detect_patterns", body={"min_occurrences": 3}))
    assert mined.status == 200 and mined.json["patterns"][0]["occurrences"] == 3
    assert call(event("detect_patterns", tenant=BOB, body={})).json["patterns"] == []
    assert call(event("detect_patterns", body={"min_occurrences": 1})).status == 422
    detected = call(event("pattern_detect", body={"error": "redis said ECONNREFUSED on port 6379"}))
    assert detected.json["results"][0]["pattern"]["tag"] == mined.json["patterns"][0]["tag"]
    assert call(event("pattern_detect", body={"error": ""})).status == 422


def test_unauthenticated_calls_are_refused(service, call):
    assert call(event("solution_list", tenant=None)).status == 401
    assert call(event("detect_patterns", tenant=None, body={})).status == 401


def test_openapi_documents_the_learning_routes():
    from functions.openapi import document

    doc = document()
    for route in routes.ROUTES:
        if route.name not in LEARNING_ROUTES:
            continue
        operation = doc["paths"][route.path][route.method.lower()]
        assert operation["operationId"] == route.name
        assert operation["tags"] == ["solutions" if "/solutions" in route.path else "patterns"]
    create = doc["paths"]["/v1/solutions"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert create["$ref"].endswith("/Fixpack")
    fixpack = doc["components"]["schemas"]["Fixpack"]
    assert {"title", "signatures"} <= set(fixpack["required"])
