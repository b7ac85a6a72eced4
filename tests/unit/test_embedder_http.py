"""The providers' HTTP client (capsule.embedders.http) against a real HTTP/1.1 server on loopback,
speaking the Voyage and OpenAI /v1/embeddings API (tests/support/fake_provider.py)."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from capsule.core.errors import Unavailable
from capsule.embedders.http import HttpError, JsonClient, backoff_s, provider_message
from capsule.embedders.remote import OpenAIEmbedder, VoyageEmbedder
from tests.support.fake_provider import FakeProvider

KEY = "pa-secret-key-123"


def indexed(texts: list[str], dims: int) -> list[list[float]]:
    """Vectors that say which input they answer: [length, 1, position]."""
    return [[float(len(t)), 1.0, float(i)] for i, t in enumerate(texts)]


@pytest.fixture
def provider():
    with FakeProvider(None, KEY, dims=3, vectors=indexed) as server:
        yield server


@pytest.fixture
def waits():
    return []


def client(provider, waits, **kw) -> JsonClient:
    return JsonClient(provider.url, KEY, sleep=waits.append, **{"timeout_s": 5.0, "retries": 3, **kw})


def test_voyage_calls_its_api_over_one_kept_alive_connection(provider, waits):
    emb = VoyageEmbedder(KEY, dim=3, client=client(provider, waits))
    out = emb.embed([f"text {i}" for i in range(300)], kind="query")
    assert out.shape == (300, 3) and np.allclose(np.linalg.norm(out, axis=1), 1)
    assert np.allclose(out[:, 2] / out[:, 1], [i % 128 for i in range(300)])  # input order
    assert [len(r["body"]["input"]) for r in provider.calls] == [128, 128, 44]
    assert provider.calls[0] == {
        "path": "/v1/embeddings",
        "auth": f"Bearer {KEY}",
        "status": 200,
        "body": {"input": provider.calls[0]["body"]["input"], "model": "voyage-3.5", "input_type": "query"},
    }
    assert provider.connections == 1 and waits == []


def test_openai_asks_for_floats_and_keeps_the_input_order(provider, waits):
    out = OpenAIEmbedder(KEY, dim=3, client=client(provider, waits)).embed(["a", "bb", "ccc"])
    assert np.allclose(out[:, 2] / out[:, 1], [0, 1, 2])
    assert provider.calls[0]["body"] == {
        "input": ["a", "bb", "ccc"],
        "model": "text-embedding-3-small",
        "encoding_format": "float",
    }


def test_429_and_5xx_are_retried_with_the_servers_retry_after(provider, waits):
    provider.script = [(429, {"Retry-After": "2"}), (503, {})]
    answer = client(provider, waits).post("/embeddings", {"input": ["x"], "model": "m"})
    assert len(answer["data"]) == 1 and len(provider.calls) == 3
    assert waits == [2.0, 1.0]  # Retry-After, then the schedule's second step


def test_a_provider_that_keeps_failing_becomes_unavailable_without_the_key(provider, waits):
    provider.script = [(500, {})] * 4
    with pytest.raises(Unavailable) as caught:
        VoyageEmbedder(KEY, client=client(provider, waits)).embed(["x"])
    assert "answered 500: status 500 from the fake provider" in str(caught.value)
    assert KEY not in str(caught.value) and len(provider.calls) == 4 and len(waits) == 3


def test_a_refusal_is_not_retried(provider, waits):
    provider.script = [(401, {})]
    with pytest.raises(HttpError) as caught:
        client(provider, waits).post("/embeddings", {"input": ["x"], "model": "m"})
    assert caught.value.status == 401 and len(provider.calls) == 1 and waits == []


def test_a_connection_the_server_dropped_while_idle_is_reopened_at_once(provider, waits):
    provider.drop_after_answer = True
    http = client(provider, waits, retries=0)
    for _ in range(3):
        assert http.post("/embeddings", {"input": ["x"], "model": "m"})["data"]
    assert provider.connections == 3 and waits == []


def test_a_slow_provider_times_out_then_becomes_unavailable(provider, waits):
    provider.delay_s = 0.5
    with pytest.raises(Unavailable, match="no answer from 127.0.0.1: TimeoutError"):
        VoyageEmbedder(KEY, client=client(provider, waits, timeout_s=0.1, retries=1)).embed(["x"])
    assert waits == [0.5]


def test_calls_from_several_threads_share_the_idle_connection_never_a_busy_one(provider, waits):
    provider.delay_s = 0.3
    http = client(provider, waits)
    first: list = []
    busy = threading.Thread(target=lambda: first.append(http.post("/embeddings", {"input": ["a"], "model": "m"})))
    busy.start()
    while not provider.calls:  # the first call is mid-request on its connection
        threading.Event().wait(0.01)
    assert http.post("/embeddings", {"input": ["bb"], "model": "m"})["data"][0]["embedding"][0] == 2.0
    busy.join()
    assert first[0]["data"][0]["embedding"][0] == 1.0 and provider.connections == 2  # its own, not the busy one
    provider.delay_s = 0.0
    for _ in range(3):  # each in a new thread, as remote.bounded() calls
        later = threading.Thread(target=http.post, args=("/embeddings", {"input": ["c"], "model": "m"}))
        later.start()
        later.join()
    assert provider.connections == 2 and len(provider.calls) == 5 and waits == []  # the idle ones, kept alive


def test_a_call_abandoned_at_the_deadline_stops_there_and_keeps_its_connection(provider, waits, monkeypatch):
    from capsule.core import deadline

    monkeypatch.setattr(deadline, "FALLBACK_RESERVE_S", 0.0)
    provider.delay_s = 0.5
    emb = VoyageEmbedder(KEY, dim=3, client=client(provider, waits))  # 5 s an attempt, 3 retries
    with deadline.within(0.2), pytest.raises(Unavailable, match="TimeoutError"):
        emb.embed(["abandoned"])  # bounded() stops waiting; the call's thread goes on with its connection
    assert emb.embed(["next"]).shape == (1, 3)  # on a connection of its own
    # The abandoned call was given the 0.2 s that were left: it neither retried nor waited to.
    assert provider.connections == 2 and len(provider.calls) == 2 and waits == []


def test_nobody_listening_is_unavailable(waits):
    with pytest.raises(HttpError, match="no answer from 127.0.0.1: ConnectionRefusedError"):
        JsonClient("http://127.0.0.1:9/v1", KEY, retries=1, sleep=waits.append).post("/embeddings", {})


def test_backoff_and_messages():
    assert [backoff_s(n, None) for n in range(5)] == [0.5, 1.0, 2.0, 4.0, 4.0]
    assert backoff_s(0, "600") == 4.0 and backoff_s(0, "Wed, 21 Oct 2026 07:28:00 GMT") == 0.5
    assert provider_message(b'{"error": {"message": "Incorrect API key provided"}}') == "Incorrect API key provided"
    assert provider_message(b'{"detail": "Rate limit"}') == "Rate limit"
    assert provider_message(b"<html>bad gateway</html>") == "<html>bad gateway</html>"


@pytest.fixture(scope="module")
def certificate(tmp_path_factory):
    """A self-signed certificate for 127.0.0.1 (Debian's openssl)."""
    import shutil
    import subprocess

    if shutil.which("openssl") is None:
        from tests.conftest import not_installed

        not_installed("openssl is not installed (Debian: openssl)")
    folder = tmp_path_factory.mktemp("tls")
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(folder / "key.pem"),
            "-out",
            str(folder / "cert.pem"),
        ],
        check=True,
        capture_output=True,
    )
    return folder / "cert.pem", folder / "key.pem"


def test_https_keeps_one_verified_tls_connection(provider, waits, certificate):
    import ssl

    cert, key = certificate
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(cert, key)
    provider.socket = server_context.wrap_socket(provider.socket, server_side=True)
    trusting = ssl.create_default_context(cafile=str(cert))
    http = JsonClient(provider.url.replace("http://", "https://"), KEY, sleep=waits.append, ssl_context=trusting)
    emb = OpenAIEmbedder(KEY, dim=3, client=http)
    for _ in range(3):
        assert emb.embed(["over tls"]).shape == (1, 3)
    assert provider.connections == 1 and len(provider.calls) == 3
    untrusting = JsonClient(provider.url.replace("http://", "https://"), KEY, retries=0, sleep=waits.append)
    with pytest.raises(HttpError, match="SSLCertVerificationError"):
        untrusting.post("/embeddings", {"input": ["x"], "model": "m"})


class ConnectProxy(ThreadingHTTPServer):
    """An HTTP proxy that only tunnels (CONNECT), as corporate proxies for HTTPS do."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), TunnelHandler)
        self.tunnels: list[str] = []

    def handle_error(self, request, client_address) -> None:
        pass


class TunnelHandler(BaseHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass

    def do_CONNECT(self) -> None:
        import select
        import socket

        self.server.tunnels.append(self.path)
        host, _, port = self.path.rpartition(":")
        upstream = socket.create_connection((host, int(port)))
        self.send_response(200, "Connection established")
        self.end_headers()
        sockets = [self.connection, upstream]
        while True:
            ready, _, _ = select.select(sockets, [], [], 5)
            if not ready:
                break
            for sock in ready:
                data = sock.recv(65536)
                if not data:
                    upstream.close()
                    return
                (upstream if sock is self.connection else self.connection).sendall(data)


@pytest.fixture
def proxy():
    server = ConnectProxy()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def test_the_proxy_the_environment_names_tunnels_the_calls(provider, proxy, waits, monkeypatch):
    for name in ("NO_PROXY", "no_proxy", "HTTPS_PROXY", "https_proxy", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.server_address[1]}")
    http = client(provider, waits)
    for _ in range(2):
        assert http.post("/embeddings", {"input": ["x"], "model": "m"})["data"]
    assert proxy.tunnels == [f"127.0.0.1:{provider.server_address[1]}"]  # one tunnel, kept alive
    assert len(provider.calls) == 2
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    assert client(provider, waits).post("/embeddings", {"input": ["x"], "model": "m"})["data"]
    assert len(proxy.tunnels) == 1  # NO_PROXY: straight to the provider


@pytest.mark.parametrize(
    "flavor, body, refusal",
    [
        ("voyage", {"input": ["x"], "model": "voyage-3.5"}, "answered 400: missing field: input_type"),
        (
            "voyage",
            {"input": ["x"], "model": "voyage-3.5", "input_type": "passage"},
            "answered 400: input_type must be",
        ),
        ("openai", {"input": ["x"], "model": "text-embedding-3-small"}, "answered 400: missing field: encoding_format"),
        ("openai", {"input": [], "model": "text-embedding-3-small", "encoding_format": "float"}, "input must be"),
        ("openai", {"input": ["x"], "model": "voyage-3.5", "encoding_format": "float"}, "is not supported"),
    ],
)
def test_the_stand_in_providers_refuse_what_theirs_refuse(flavor, body, refusal, waits):
    with FakeProvider(flavor, KEY) as fake:
        with pytest.raises(HttpError, match=refusal):
            JsonClient(fake.url, KEY, retries=0, sleep=waits.append).post("/embeddings", body)
        with pytest.raises(HttpError, match="answered 401: Provided API key is invalid"):
            JsonClient(fake.url, "sk-other", retries=0, sleep=waits.append).post("/embeddings", body)
        assert [c["status"] for c in fake.calls] == [400, 401]
