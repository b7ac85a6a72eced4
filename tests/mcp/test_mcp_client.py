"""The signing HTTP client against a real HTTP server on 127.0.0.1: retries with backoff and
jitter, errors by status, kept-alive connections, and no credential ever in a log line or a message."""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from capsule.core import errors
from mcp_client.auth import BearerAuth, SigV4Auth, region_from_url
from mcp_client.client import CapsuleClient, Retry

SEARCH_OK = {"results": [], "explanation": "Searched 0 memories."}
MEMORY = {
    "id": "m1",
    "project": "p",
    "content": "c",
    "occurred_at": "2026-11-29T00:00:00Z",
    "created_at": "2026-11-29T00:00:00Z",
    "updated_at": "2026-11-29T00:00:00Z",
    "helpful": 1,
}
FEEDBACK_OK = {"memory": MEMORY, "explanation": "Recorded."}


DROP = None  # a scripted status: read the request, then close the connection without an answer


class Scripted:
    """A real HTTP/1.1 server (keep-alive) answering from a script of (status, body, headers, delay_s);
    ``connections`` counts the TCP connections it accepted."""

    def __init__(self) -> None:
        self.script: list[tuple[int | None, object, dict, float]] = []
        self.requests: list[dict] = []
        self.connections = 0
        counting = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                with counting:
                    outer.connections += 1
                super().setup()

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                outer.requests.append(
                    {
                        "method": self.command,
                        "path": self.path,
                        "headers": dict(self.headers),
                        "body": self.rfile.read(length),
                    }
                )
                status, body, headers, delay = outer.script.pop(0) if outer.script else (200, {}, {}, 0)
                time.sleep(delay)
                if status is DROP:
                    self.close_connection = True
                    return
                data = json.dumps(body).encode()
                try:
                    self.send_response(status)
                    for name, value in {"Content-Type": "application/json", **headers}.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the client gave up waiting

            do_GET = do_POST = do_DELETE = do_PUT = _answer

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.block_on_close = False  # a handler still sleeping for a timed-out client is not awaited
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def then(self, status: int | None, body: object, headers: dict | None = None, delay_s: float = 0.0) -> Scripted:
        self.script.append((status, body, headers or {}, delay_s))
        return self

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def server():
    scripted = Scripted()
    yield scripted
    scripted.close()


@pytest.fixture
def waits():
    return []


def client_for(server: Scripted, waits: list, **kwargs) -> CapsuleClient:
    retry = Retry(attempts=4, base_s=0.25, cap_s=2.0, sleep=waits.append, random=lambda: 1.0)
    return CapsuleClient(server.url, retry=retry, **kwargs)


def test_a_503_then_a_200_is_retried_after_a_backoff(server, waits):
    server.then(503, {"error": {"code": "unavailable", "message": "store busy"}}).then(200, SEARCH_OK)
    result = client_for(server, waits).search({"project": "p", "query": "sqlite"})
    assert result.results == [] and result.explanation == "Searched 0 memories."
    assert len(server.requests) == 2 and waits == [0.25]
    assert json.loads(server.requests[1]["body"]) == {"query": "sqlite", "project": "p"}


def test_backoff_grows_exponentially_with_jitter_up_to_the_cap_then_gives_up(server, waits):
    for _ in range(4):
        server.then(502, {"message": "Bad Gateway"})
    with pytest.raises(errors.Unavailable, match="Bad Gateway.*HTTP 502"):
        client_for(server, waits).projects()
    assert len(server.requests) == 4 and waits == [0.25, 0.5, 1.0]
    jittered = Retry(base_s=1.0, cap_s=8.0, random=lambda: 0.5)
    assert [jittered.delay(n) for n in range(5)] == [0.5, 1.0, 2.0, 4.0, 4.0]


def test_a_429_waits_at_least_what_retry_after_says(server, waits):
    server.then(429, {"message": "Too Many Requests"}, {"Retry-After": "1.5"}).then(200, SEARCH_OK)
    client_for(server, waits).search({"project": "p", "query": "q"})
    assert waits == [1.5]


def test_the_tenants_rate_limit_is_retried_within_the_bounded_budget_then_reported(server, waits):
    """The server's per-tenant rate limit (functions.metering): 429, code rate_limited, Retry-After
    up to the next minute, nothing done. Each wait is Retry-After capped at the retry's cap, and
    once the attempts are spent the caller gets Unavailable with the server's message."""
    limited = {
        "error": {
            "code": "rate_limited",
            "message": "this tenant has made more than 2 requests this minute",
            "details": [{"field": "rate_limit_per_minute", "limit": 2, "message": "at most 2 requests a minute"}],
        }
    }
    for _ in range(4):
        server.then(429, limited, {"Retry-After": "37"})
    with pytest.raises(errors.Unavailable, match="more than 2 requests") as caught:
        client_for(server, waits).search({"project": "p", "query": "q"})
    assert len(server.requests) == 4 and waits == [2.0, 2.0, 2.0]
    assert "HTTP 429" in caught.value.message


@pytest.mark.parametrize(
    "status, body, error, text",
    [
        (
            422,
            {
                "error": {
                    "code": "invalid_input",
                    "message": "query: too long",
                    "details": [{"field": "query", "message": "too long"}],
                }
            },
            errors.InvalidInput,
            "query: too long",
        ),
        (401, {"error": {"code": "unauthorized", "message": "no verified identity"}}, errors.Unauthorized, "identity"),
        (403, {"message": "The request signature we calculated does not match"}, errors.Forbidden, "signature"),
        (404, {"error": {"code": "not_found", "message": "no memory m9"}}, errors.NotFound, "no memory m9"),
        (409, {"error": {"code": "conflict", "message": "busy"}}, errors.Conflict, "busy"),
        (413, {"error": {"code": "payload_too_large", "message": "too big"}}, errors.PayloadTooLarge, "too big"),
    ],
)
def test_a_4xx_is_our_error_at_once_with_the_servers_message(server, waits, status, body, error, text):
    server.then(status, body)
    with pytest.raises(error, match=text) as caught:
        client_for(server, waits).search({"project": "p", "query": "q"})
    assert len(server.requests) == 1 and waits == []
    assert f"HTTP {status}" in caught.value.message
    if status == 422:
        assert caught.value.details == [{"field": "query", "message": "too long"}]


def _keys(server) -> list[str | None]:
    return [r["headers"].get("Idempotency-Key") for r in server.requests]


def test_a_vote_is_retried_under_one_idempotency_key(server, waits):
    # The server answers a retried key with its first success (functions.idempotency): a vote
    # is sent again after a 500 or a 503 and still counted once.
    server.then(500, {"error": {"code": "internal", "message": "boom"}}).then(200, FEEDBACK_OK)
    assert client_for(server, waits).feedback("m1", {"helpful": True}).memory.helpful == 1
    server.then(503, {"error": {"code": "unavailable", "message": "nothing changed"}}).then(200, FEEDBACK_OK)
    client_for(server, waits).feedback("m1", {"helpful": True})
    keys = _keys(server)
    assert len(keys) == 4 and all(keys) and keys[0] == keys[1] and keys[2] == keys[3] and keys[0] != keys[2]


def test_a_key_still_running_is_waited_for_and_a_key_conflict_is_not_retried(server, waits):
    busy = {"error": {"code": "idempotency_in_progress", "message": "still running"}}
    server.then(409, busy, {"Retry-After": "1"}).then(200, FEEDBACK_OK)
    client_for(server, waits).feedback("m1", {"helpful": True})
    assert len(server.requests) == 2 and waits[-1] >= 1
    server.then(409, {"error": {"code": "conflict", "message": "the candidate was decided"}})
    with pytest.raises(errors.Conflict):
        client_for(server, waits).feedback("m1", {"helpful": True})
    assert len(server.requests) == 3


def test_writes_the_server_deduplicates_and_reads_send_no_key(server, waits):
    server.then(200, STORE_OK).then(200, SEARCH_OK)
    client = client_for(server, waits)
    client.store({"project": "p", "content": "c"})
    client.search({"project": "p", "query": "q"})
    assert _keys(server) == [None, None]


def test_a_calls_retries_stop_when_its_budget_is_spent(server, waits):
    now = [0.0]

    def sleep(s: float) -> None:
        waits.append(s)
        now[0] += s

    retry = Retry(
        attempts=10, base_s=1.0, cap_s=4.0, budget_s=5.0, sleep=sleep, random=lambda: 1.0, clock=lambda: now[0]
    )
    for _ in range(10):
        server.then(503, {"error": {"code": "unavailable", "message": "busy"}})
    client = CapsuleClient(server.url, retry=retry)
    with pytest.raises(errors.Unavailable, match="busy"):
        client.projects()
    # Waits of 1 and 2 s fit the 5 s; the next (4 s) would pass it: three tries, not ten.
    assert waits == [1.0, 2.0] and len(server.requests) == 3


def test_a_timeout_is_retried_for_a_search_and_for_a_keyed_vote(server, waits):
    server.then(200, SEARCH_OK, delay_s=3.0).then(200, SEARCH_OK)
    client = client_for(server, waits, timeout_s=1.0)
    assert client.search({"project": "p", "query": "q"}).results == []
    assert len(server.requests) == 2 and len(waits) == 1
    server.then(200, FEEDBACK_OK, delay_s=3.0).then(200, FEEDBACK_OK)
    assert client.feedback("m1", {"helpful": True}).memory.helpful == 1
    assert len(server.requests) == 4 and _keys(server)[2] == _keys(server)[3] is not None


def test_an_unreachable_server_is_retried_then_unavailable(waits):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again: nothing listens there
    retry = Retry(attempts=3, sleep=waits.append, random=lambda: 0.0)
    with pytest.raises(errors.Unavailable, match="cannot reach"):
        CapsuleClient(f"http://127.0.0.1:{port}", retry=retry).projects()
    assert len(waits) == 2


def test_a_bad_request_fails_before_any_network_call(server, waits):
    client = client_for(server, waits)
    with pytest.raises(errors.InvalidInput, match="query"):
        client.search({"project": "p", "query": ""})
    with pytest.raises(errors.InvalidInput, match="id"):
        client.pin("")
    with pytest.raises(errors.InvalidInput, match="http"):
        CapsuleClient("ftp://example.com")
    assert server.requests == []


def test_list_and_forget_send_their_parameters_in_the_query(server, waits):
    server.then(200, {"memories": [], "explanation": "0"}).then(200, FEEDBACK_OK)
    client = client_for(server, waits)
    client.list_memories({"project": "my project/α", "pinned_only": True, "limit": 5})
    client.forget("m 1", reason="outdated")
    assert server.requests[0]["path"] == "/v1/memories?project=my%20project%2F%CE%B1&pinned_only=true&limit=5"
    assert server.requests[1]["method"] == "DELETE"
    assert server.requests[1]["path"] == "/v1/memories/m%201?reason=outdated"


def test_credentials_never_reach_a_log_line_a_message_or_a_repr(server, waits, caplog):
    secret = "cmk_super-secret-value-1234"
    server.then(503, {"message": "busy"}).then(401, {"error": {"code": "unauthorized", "message": "bad key"}})
    client = client_for(server, waits, auth=BearerAuth(secret))
    with caplog.at_level(logging.DEBUG), pytest.raises(errors.Unauthorized) as caught:
        client.projects()
    assert server.requests[0]["headers"]["Authorization"] == f"Bearer {secret}"  # it was sent...
    assert "retry 1" in caplog.text
    for shown in (caplog.text, str(caught.value), repr(caught.value.details), repr(client)):
        assert secret not in shown  # ...and shown nowhere


def test_api_keys_come_from_the_environment_or_a_file(tmp_path):
    key_file = tmp_path / "key"
    key_file.write_text("cmk_from_file\n")
    headers = BearerAuth.from_env({"CAPSULE_API_KEY_FILE": str(key_file)}).headers("GET", "u", {}, b"")
    assert headers["Authorization"] == "Bearer cmk_from_file"
    assert (
        BearerAuth.from_env({"CAPSULE_API_KEY": "cmk_env"}).headers("GET", "u", {}, b"")["Authorization"]
        == "Bearer cmk_env"
    )
    with pytest.raises(errors.Unauthorized, match="CAPSULE_API_KEY"):
        BearerAuth.from_env({})
    with pytest.raises(errors.InvalidInput, match="cannot read"):
        BearerAuth.from_env({}, tmp_path / "missing")


def test_sigv4_signs_for_execute_api_in_the_urls_region():
    from botocore.credentials import Credentials

    url = "https://abc123.execute-api.eu-west-1.amazonaws.com"
    assert region_from_url(url) == "eu-west-1" and region_from_url("http://127.0.0.1:8787") is None
    auth = SigV4Auth.for_url(url, credentials=Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG"), environ={})
    headers = auth.headers("POST", url + "/v1/memories/search", {"Content-Type": "application/json"}, b"{}")
    assert headers["Authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
    assert "/eu-west-1/execute-api/aws4_request" in headers["Authorization"]
    assert "X-Amz-Date" in headers and "wJalr" not in repr(auth)
    with pytest.raises(errors.InvalidInput, match="region"):
        SigV4Auth.for_url("http://127.0.0.1:1", credentials=Credentials("A", "B"), environ={})


STORE_OK = {"memory": MEMORY, "explanation": "Stored."}


def test_calls_share_one_kept_alive_connection(server, waits):
    client = client_for(server, waits)
    for _ in range(5):
        server.then(200, SEARCH_OK)
        client.search({"project": "p", "query": "q"})
    server.then(200, FEEDBACK_OK)
    client.feedback("m1", {"helpful": True})
    assert len(server.requests) == 6 and server.connections == 1


def test_a_connection_dropped_before_the_answer_is_reopened_and_the_search_sent_again(server, waits):
    server.then(200, SEARCH_OK).then(DROP, None).then(200, SEARCH_OK)
    client = client_for(server, waits)
    client.search({"project": "p", "query": "first"})
    assert client.search({"project": "p", "query": "second"}).results == []
    assert [json.loads(r["body"])["query"] for r in server.requests] == ["first", "second", "second"]
    assert server.connections == 2 and waits == [0.25]


def test_a_vote_on_a_dropped_connection_is_sent_again_under_its_key(server, waits):
    server.then(200, SEARCH_OK).then(DROP, None).then(200, FEEDBACK_OK)
    client = client_for(server, waits)
    client.search({"project": "p", "query": "q"})
    assert client.feedback("m1", {"helpful": True}).memory.helpful == 1
    paths = [r["path"] for r in server.requests]
    assert paths == ["/v1/memories/search", "/v1/memories/m1/feedback", "/v1/memories/m1/feedback"]
    assert _keys(server)[1] == _keys(server)[2] is not None and len(waits) == 1


def test_a_store_on_a_dropped_connection_is_sent_again_as_the_server_deduplicates_it(server, waits):
    # As before keep-alive: a store is retried (the server answers an identical store within
    # 48 hours with the memory it already has), a vote is sent again under its Idempotency-Key (test above).
    server.then(DROP, None).then(200, STORE_OK)
    result = client_for(server, waits).store({"project": "p", "content": "c"})
    assert result.memory.id == "m1" and len(server.requests) == 2
    assert server.requests[0]["body"] == server.requests[1]["body"]


def test_threads_share_the_clients_pool(server, waits):
    from mcp_client.transport import MAX_IDLE

    client = client_for(server, waits)
    failures: list[BaseException] = []

    def calls() -> None:
        try:
            for _ in range(10):
                assert client.health() == {}
        except BaseException as exc:  # noqa: BLE001 (reported by the assert below)
            failures.append(exc)

    threads = [threading.Thread(target=calls) for _ in range(MAX_IDLE)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert failures == [] and len(server.requests) == 10 * MAX_IDLE
    assert 1 <= server.connections <= MAX_IDLE


def test_the_environments_proxy_and_no_proxy_are_honoured_as_urlopen_did(server, waits, monkeypatch):
    for name in ("http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", server.url)  # the scripted server plays the proxy
    server.then(200, {"status": "ok"})
    assert CapsuleClient("http://capsule.internal:8787").health() == {"status": "ok"}
    assert server.requests[-1]["path"] == "http://capsule.internal:8787/v1/health"  # absolute form: via the proxy
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        dead = probe.getsockname()[1]
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{dead}")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    server.then(200, {"status": "direct"})
    assert client_for(server, waits).health() == {"status": "direct"}
