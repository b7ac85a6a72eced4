"""functions.gateway without sockets: routing, events, the console's files, refusals."""

import json
from datetime import UTC, datetime

import pytest

from functions import routes
from functions.auth import HttpRequest
from functions.credentials import Credentials
from functions.gateway import Gateway, Router, build_event


class Recorder:
    """An invoker that answers 200 and keeps the events it was given."""

    def __init__(self):
        self.events = []

    def invoke(self, handler, event):
        self.events.append((handler, event))
        return {"statusCode": 200, "headers": {"Content-Type": "application/json"}, "body": "{}"}

    def close(self):
        pass


@pytest.fixture
def gateway(tmp_path):
    console = tmp_path / "console"
    console.mkdir()
    (console / "index.html").write_text("<html>console</html>")
    (tmp_path / "secret.txt").write_text("do not serve")
    creds = Credentials(tmp_path / "data")
    creds.ensure_token()
    return Gateway(creds, Recorder(), console_dir=console)


def token(gateway):
    return gateway.credentials.token_path.read_text().strip()


def req(method, target, body=b"", headers=None):
    path, _, query = target.partition("?")
    return HttpRequest(method, path, query, list((headers or {}).items()), body)


def test_router_matches_every_route_and_prefers_literals():
    router = Router()
    for route in routes.ROUTES:
        path = route.path.replace("{id}", "abc")
        assert router.match(route.method, path).route == route
    assert router.match("POST", "/v1/memories/search").route.name == "search"
    # /v1/memories/search is a resource of its own (as in the OpenAPI document), not an {id}.
    assert router.match("GET", "/v1/memories/search") is None
    assert router.allowed("/v1/memories/search") == ["POST"]
    assert router.match("GET", "/v1/memories/a%2Fb").path_parameters == {"id": "a/b"}
    assert router.match("PATCH", "/v1/memories") is None
    assert router.match("GET", "/v1/memories/a/b") is None


def test_event_has_the_v2_shape():
    request = HttpRequest(
        "POST",
        "/v1/memories/abc/feedback",
        "x=1&x=2&y=%20z",
        [
            ("Host", "h"),
            ("Content-Type", "application/json"),
            ("X-Multi", "a"),
            ("X-Multi", "b"),
            ("Cookie", "a=1; b=2"),
            ("Authorization", "Bearer t"),
            ("X-Api-Key", "k"),
        ],
        b'{"helpful": true}',
    )
    match = Router().match("POST", request.raw_path)
    at = datetime(2026, 11, 29, 22, 0, tzinfo=UTC)
    event = build_event(
        request, match, authorizer={"lambda": {"tenant": "t"}}, source_ip="127.0.0.1", request_id="rid", now=at
    )
    assert event["version"] == "2.0" and event["routeKey"] == "POST /v1/memories/{id}/feedback"
    assert event["rawPath"] == "/v1/memories/abc/feedback" and event["rawQueryString"] == "x=1&x=2&y=%20z"
    assert event["queryStringParameters"] == {"x": "1,2", "y": " z"}
    assert event["pathParameters"] == {"id": "abc"}
    assert event["headers"]["x-multi"] == "a,b"
    assert "authorization" not in event["headers"] and "x-api-key" not in event["headers"]
    assert event["cookies"] == ["a=1", "b=2"]
    assert event["body"] == '{"helpful": true}' and event["isBase64Encoded"] is False
    ctx = event["requestContext"]
    assert (
        ctx["http"]["method"] == "POST" and ctx["requestId"] == "rid" and ctx["timeEpoch"] == int(at.timestamp() * 1000)
    )
    assert ctx["authorizer"] == {"lambda": {"tenant": "t"}}


def test_binary_body_is_base64():
    request = HttpRequest("POST", "/v1/memories", "", [("Content-Type", "application/octet-stream")], b"\xff\x00")
    event = build_event(
        request,
        Router().match("POST", "/v1/memories"),
        authorizer=None,
        source_ip="x",
        request_id="r",
        now=datetime.now(UTC),
    )
    assert event["isBase64Encoded"] is True and event["body"] == "/wA="


def test_gateway_authorizes_before_invoking(gateway):
    reply = gateway.handle(req("GET", "/v1/projects"), "127.0.0.1")
    assert reply.status == 401 and gateway.invoker.events == []
    reply = gateway.handle(req("GET", "/v1/projects", headers={"Authorization": f"Bearer {token(gateway)}"}), "x")
    assert reply.status == 200
    handler, event = gateway.invoker.events[0]
    assert handler == "functions.handlers.projects:handler"
    assert event["requestContext"]["authorizer"] == {"lambda": {"tenant": "local", "key": "token"}}


def test_openapi_needs_no_credentials(gateway):
    assert gateway.handle(req("GET", "/openapi.json"), "x").status == 200


def test_unknown_route_is_404(gateway):
    reply = gateway.handle(req("GET", "/v2/nothing"), "x")
    assert reply.status == 404 and b"no route" in reply.body


def test_console_is_served_without_escaping_its_folder(gateway):
    assert gateway.handle(req("GET", "/ui"), "x").body == b"<html>console</html>"
    reply = gateway.handle(req("GET", "/ui/index.html"), "x")
    assert reply.status == 200 and reply.headers["Content-Type"].startswith("text/html")
    for path in ("/ui/../secret.txt", "/ui/%2e%2e/secret.txt", "/ui/nothing.js"):
        reply = gateway.handle(req("GET", path), "x")
        assert reply.status == 404 and b"do not serve" not in reply.body


def test_a_known_path_with_a_wrong_method_is_405_naming_the_allowed_ones(gateway):
    reply = gateway.handle(req("PUT", "/v1/memories/abc"), "x")
    assert reply.status == 405 and reply.headers["Allow"] == "DELETE, GET, HEAD, PATCH"
    assert json.loads(reply.body)["error"]["code"] == "method_not_allowed"
    assert gateway.invoker.events == []
    assert Router().allowed("/v1/nothing") == []


def test_healthz_answers_without_credentials_or_a_handler(gateway):
    reply = gateway.handle(req("GET", "/healthz"), "x")
    assert reply.status == 200 and json.loads(reply.body) == {"status": "ok"}
    assert gateway.invoker.events == []


def test_head_reaches_the_get_handler_as_get(gateway):
    reply = gateway.handle(req("HEAD", "/v1/projects", headers={"Authorization": f"Bearer {token(gateway)}"}), "x")
    assert reply.status == 200
    assert gateway.invoker.events[0][1]["requestContext"]["http"]["method"] == "GET"
