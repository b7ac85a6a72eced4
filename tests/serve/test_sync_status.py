"""GET /v1/sync/status: capsule sync's watermarks in the data folder (functions.sync_status), through
functions.gateway without sockets, with real state files written by capsule.sync.state."""

import json
from datetime import UTC, datetime

import pytest

from capsule.sync.state import SEEN_ALL, Watermarks, state_path
from functions.auth import HttpRequest
from functions.sync_status import redact
from tests.support.gateway import own_gateway


@pytest.fixture
def gateway(tmp_path):
    return own_gateway(tmp_path)


def call(gateway, method="GET", secret=None, headers=None):
    given = headers if headers is not None else [("Authorization", f"Bearer {secret or token(gateway)}")]
    reply = gateway.handle(HttpRequest(method, "/v1/sync/status", "", given, b""), "127.0.0.1")
    return reply.status, json.loads(reply.body)


def token(gateway):
    return gateway.credentials.token_path.read_text().strip()


def write_marks(gateway, peer, at):
    marks = Watermarks(state_path(gateway.credentials.data_dir / "sync", peer, "local"), peer, clock=lambda: at)
    marks.set("/srv/app", "push", [3, 17])
    marks.finished("/srv/app", "push")
    marks.set("/srv/app", "pull", [5, SEEN_ALL])
    marks.set("/srv/other", "pull", [1, 2])
    marks.finished("/srv/other", "pull")
    marks.save()


def test_no_sync_target_is_said_so(gateway):
    status, body = call(gateway)
    assert status == 200, body
    assert body["targets"] == [] and "No sync target configured" in body["explanation"]


def test_targets_with_their_watermarks_and_times_and_no_credentials(gateway):
    at = datetime(2026, 12, 4, 4, 30, tzinfo=UTC)
    write_marks(gateway, "https://alice:s3cret@sync.example.com/api?token=abc", at)
    write_marks(gateway, "http://127.0.0.1:8765", at)
    (gateway.credentials.data_dir / "sync" / "junk.json").write_text("{not json")

    status, body = call(gateway)
    assert status == 200, body
    text = json.dumps(body)
    assert "s3cret" not in text and "alice" not in text and "abc" not in text
    assert [t["target"] for t in body["targets"]] == ["http://127.0.0.1:8765", "https://***@sync.example.com/api?***"]
    target = body["targets"][0]
    assert target["saved_at"].endswith("Z")
    assert target["projects"] == [
        {
            "project": "/srv/app",
            "push": {"version": 3, "seq": 17},
            "pushed_at": "2026-12-04T04:30:00Z",
            "pull": {"version": 5, "seq": None},
            "pulled_at": None,
        },
        {
            "project": "/srv/other",
            "push": None,
            "pushed_at": None,
            "pull": {"version": 1, "seq": 2},
            "pulled_at": "2026-12-04T04:30:00Z",
        },
    ]
    assert "2 sync target(s)" in body["explanation"]


def test_refusals_no_token_a_named_key_a_wrong_method(gateway):
    assert call(gateway, headers=[])[0] == 401
    assert call(gateway, secret="cmk_not_a_key")[0] == 401
    key = gateway.credentials.create_key("reader", "local", {})
    status, body = call(gateway, secret=key)
    assert status == 403 and body["error"]["code"] == "forbidden"
    status, body = call(gateway, method="DELETE")
    assert status == 405 and body["error"]["details"]["allowed"] == ["GET"]


@pytest.mark.parametrize(
    "url, shown",
    [
        ("https://sync.example.com", "https://sync.example.com"),
        ("https://u:p@h.example:8443/x", "https://***@h.example:8443/x"),
        ("https://token@h.example/x#frag", "https://***@h.example/x?***"),
        ("http://[::1]:80/?key=v", "http://[::1]:80/?***"),
    ],
)
def test_redact(url, shown):
    assert redact(url) == shown
