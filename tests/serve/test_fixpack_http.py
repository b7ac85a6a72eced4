"""The Vector Bridge's fixpack files over real HTTP against ``capsule serve``: each file's bytes are
the body, as `curl --data-binary @file` sends them."""

import json
import os

from tests.learning.fixpack_files import FILES, KEPT, in_file, kept_in, load


def _count(server) -> int:
    return len(server.request("GET", "/v1/solutions?limit=50").json["solutions"])


def test_each_file_imports_over_http_shows_its_extras_and_records_outcomes(server):
    before = _count(server)
    for path in FILES:
        imported = server.request("POST", "/v1/solutions/import", raw=path.read_bytes())
        assert imported.status == 200, imported
        assert imported.json["kept_fields"] == KEPT[path.name]
        solution_id = imported.json["solution"]["id"]
        shown = server.request("GET", f"/v1/solutions/{solution_id}")
        assert shown.status == 200
        for kept in KEPT[path.name]:
            assert kept_in(shown.json["solution"], kept) == in_file(load(path), kept), kept
        applied = server.request("POST", f"/v1/solutions/{solution_id}/apply", {"success": False})
        assert applied.status == 200 and applied.json["solution"]["failure_count"] == 1
    assert _count(server) == before + len(FILES)


def test_a_binary_truncated_or_mistyped_file_is_refused_and_imports_nothing(server):
    before = _count(server)
    good = FILES[0].read_bytes()
    mistyped = json.dumps({**load(FILES[0]), "signatures": [{"text": "x", "regexes": [7]}]}).encode()
    # Bytes that are not UTF-8 cannot be JSON at all (400); JSON that is cut short or mistyped is 422.
    for body, status, field in [
        (os.urandom(256) + b"\xff", 400, "body"),
        (good[: len(good) // 2], 422, "body"),
        (mistyped, 422, "signatures.0.regexes.0"),
        (b"", 422, "body"),
    ]:
        refused = server.request("POST", "/v1/solutions/import", raw=body)
        assert refused.status == status, (refused, field)
        assert refused.json["error"]["details"][0]["field"] == field, refused.json
    assert _count(server) == before
