"""GET /v1/export and POST /v1/import over real HTTP against ``capsule serve`` (token auth)."""

import json


def test_export_pages_and_import_over_http(server):
    for n in range(3):
        stored = server.request("POST", "/v1/memories", {"project": "transfer-http", "content": f"fact {n} " * 50})
        assert stored.status == 201, stored
    exported = server.request("GET", "/v1/export?project=transfer-http")
    assert exported.status == 200, exported
    assert exported.headers["Content-Type"] == "application/x-ndjson"
    rows = [json.loads(line) for line in exported.body.decode().splitlines()]
    assert rows[0]["kind"] == "header" and rows[-1] == {"kind": "end", "counts": {"memory": 3, "project": 1}}

    again = server.request("POST", "/v1/import", raw=exported.body, headers={"Content-Type": "application/x-ndjson"})
    assert again.status == 200, again
    assert again.json["skipped"] == {"memory": 3, "project": 1} and again.json["imported"] == {}

    refused = server.request(
        "POST", "/v1/import", raw=b'{"kind":"memory"}\n', headers={"Content-Type": "application/x-ndjson"}
    )
    assert refused.status == 422 and "line 1" in refused.json["error"]["message"]
    bad_cursor = server.request("GET", "/v1/export?cursor=nonsense")
    assert bad_cursor.status == 404  # a cursor no export returned names no page
    assert server.request("GET", "/v1/export", token=None).status == 401


def test_an_import_body_over_the_limit_is_refused_before_it_is_read(server):
    from capsule.core import limits

    big = server.request(
        "POST", "/v1/import", raw=b"x" * (limits.MAX_BODY_BYTES + 1), headers={"Content-Type": "application/x-ndjson"}
    )
    assert big.status == 413, big
