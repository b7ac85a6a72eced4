"""The solution and pattern routes over real HTTP against ``capsule serve`` (token auth)."""

FIXPACK = {
    "title": "Raise the file watcher limit",
    "category": "build",
    "signatures": [
        {"text": "ENOSPC: System limit for number of file watchers reached", "regexes": [r"ENOSPC.*file watchers"]}
    ],
    "steps": [{"step_order": 1, "kind": "cmd", "payload": {"command": "sysctl fs.inotify.max_user_watches=524288"}}],
    "checks": [{"check_order": 1, "cmd": "sysctl fs.inotify.max_user_watches", "expect_substring": "524288"}],
}


def test_import_search_apply_and_golden_paths_over_http(server):
    imported = server.request("POST", "/v1/solutions/import", {**FIXPACK, "legacy_id": 7})
    assert imported.status == 200, imported
    solution = imported.json["solution"]
    assert imported.json["kept_fields"] == ["legacy_id"] and solution["extra"] == {"legacy_id": 7}
    found = server.request(
        "POST",
        "/v1/solutions/search",
        {"error": "Error: ENOSPC: System limit for number of file watchers reached, watch '/src'"},
    )
    assert found.status == 200 and found.json["results"][0]["solution"]["id"] == solution["id"]
    for _ in range(3):
        applied = server.request(
            "POST",
            f"/v1/solutions/{solution['id']}/apply",
            {"success": True, "pattern": {"tag": "enospc-watchers", "category": "build"}},
        )
        assert applied.status == 200, applied
    golden = server.request("GET", "/v1/patterns/golden-paths?min_applications=3&category=build")
    assert [p["solution"]["id"] for p in golden.json["paths"]] == [solution["id"]]
    refused = server.request("POST", "/v1/solutions", {**FIXPACK, "signatures": [{"text": "x", "regexes": ["(x+)+"]}]})
    assert refused.status == 422 and refused.json["error"]["code"] == "invalid_input"
    missing = server.request("DELETE", "/v1/solutions/not-a-solution")
    assert missing.status == 404
