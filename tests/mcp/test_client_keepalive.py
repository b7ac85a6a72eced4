"""The signing client keeps its connection: a real ``capsule serve`` behind a self-signed TLS
front (Debian's stunnel, which counts the TCP connections it accepts and the TLS handshakes,
full or resumed), called with SigV4 through ``CapsuleClient`` and through ``capsule mcp --url``."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import urllib.request

import anyio
import pytest
from mcp import Client
from mcp_support import mcp_params, new_data_dir, signing_serve

from capsule.core import errors
from scripts.tls_front import TlsFront, stunnel_binary

ACCESS_KEY = "AKIACAPSULETEST0002"
SECRET = "capsule-test-secret/0002+abcdefghij"
TENANT = "arn:aws:iam::123456789012:user/keepalive"
REGION = "eu-west-1"
IDLE_S = 5  # the front closes a connection idle this long (also one waiting this long for an answer)

# .ci/run installs stunnel4; a machine without it leaves these tests out (CI never does: they fail there).
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        stunnel_binary() is None and not os.environ.get("CI"),
        reason="stunnel is not installed (apt-get install stunnel4)",
    ),
]


@pytest.fixture(scope="module")
def front(tmp_path_factory):
    """``capsule serve`` (one worker, SigV4 key) with stunnel in front of it on https://127.0.0.1."""
    folder = tmp_path_factory.mktemp("keepalive")
    with signing_serve(folder, ACCESS_KEY, SECRET, TENANT, REGION) as served:
        _warm(served)
        tls = TlsFront(served["port"], folder, idle_s=IDLE_S)
        try:
            yield {"tls": tls, "port": served["port"], "api_key": served["api_key"]}
        finally:
            tls.stop()


def _warm(served: dict) -> None:
    """One store straight to the server: its first write opens the store and the index, which on a
    busy machine can take longer than IDLE_S, and the front would drop that connection as idle."""
    request = urllib.request.Request(
        served["url"].rstrip("/") + "/v1/memories",
        method="POST",
        data=json.dumps({"project": "warm-up", "content": "the first write of this server"}).encode(),
        headers={"Authorization": f"Bearer {served['api_key']}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=120) as response:
        assert response.status in (200, 201), response.status


def signed_client(url: str):
    from botocore.credentials import Credentials

    from mcp_client.auth import SigV4Auth
    from mcp_client.client import CapsuleClient, Retry

    waits: list[float] = []
    auth = SigV4Auth.for_url(url, region=REGION, credentials=Credentials(ACCESS_KEY, SECRET))
    made = CapsuleClient(url, auth=auth, retry=Retry(sleep=waits.append))
    made.waits = waits
    return made


@pytest.fixture
def client(front, monkeypatch):
    monkeypatch.setenv("SSL_CERT_FILE", str(front["tls"].cert))  # trusts the self-signed front, as a user would
    with signed_client(front["tls"].url) as made:
        yield made


def _delta(tls: TlsFront, before: dict[str, int], **wanted: int) -> dict[str, int]:
    after = tls.wait_counts(**{k: before[k] + v for k, v in wanted.items()})
    return {k: after[k] - before[k] for k in after}


def test_signed_calls_share_one_connection_and_one_tls_handshake(front, client):
    tls = front["tls"]
    before = tls.counts()
    stored = client.store({"project": "keep", "content": "The deploy waits for the blue/green switch"})
    for n in range(8):
        assert client.search({"project": "keep", "query": f"deploy switch {n}"}).results[0].id == stored.memory.id
    assert client.feedback(stored.memory.id, {"helpful": True}).memory.helpful == 1
    assert "keep" in [p.project for p in client.projects().projects]
    assert _delta(tls, before, connections=1, full_handshakes=1) == {
        "connections": 1,
        "full_handshakes": 1,
        "resumed": 0,
    }
    assert client.waits == []


def test_a_connection_the_front_closed_when_idle_is_reopened_with_the_tls_session_resumed(front, client):
    tls = front["tls"]
    before = tls.counts()
    assert client.health()
    time.sleep(IDLE_S + 1.5)  # stunnel resets the idle connection
    assert client.health()
    stored = client.store({"project": "keep", "content": "Reconnects resume the TLS session"})
    assert client.get(stored.memory.id).memory.content == "Reconnects resume the TLS session"
    assert _delta(tls, before, connections=2, full_handshakes=1, resumed=1) == {
        "connections": 2,
        "full_handshakes": 1,
        "resumed": 1,
    }
    assert client.waits == []  # noticed before use: nothing was sent on the closed connection


@pytest.mark.parametrize("auth", ["sigv4", "apikey"])
def test_the_mcp_proxy_keeps_one_connection_for_its_tool_calls(front, tmp_path, auth):
    tls = front["tls"]
    before = tls.counts()
    if auth == "sigv4":
        options, env = ["--region", REGION], {"AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET}
    else:
        options, env = [], {"CAPSULE_API_KEY": front["api_key"]}

    async def main():
        params = mcp_params(
            new_data_dir(tmp_path),
            "--url",
            tls.url,
            "--auth",
            auth,
            *options,
            "--project",
            "proxy",
            SSL_CERT_FILE=str(tls.cert),
            **env,
        )
        async with Client(params) as mcp:
            stored = await mcp.call_tool("memory_store", {"content": "The proxy keeps its TLS connection"})
            assert not stored.is_error, stored.content
            for n in range(5):
                found = await mcp.call_tool("memory_search", {"query": f"proxy TLS connection {n}"})
                assert not found.is_error and found.structured_content["results"]
            assert not (await mcp.call_tool("memory_projects", {})).is_error

    anyio.run(main)
    assert _delta(tls, before, connections=1, full_handshakes=1) == {
        "connections": 1,
        "full_handshakes": 1,
        "resumed": 0,
    }


def test_the_fronts_certificate_is_verified_by_name_and_by_issuer(front, monkeypatch):
    from mcp_client.client import CapsuleClient, Retry

    once = Retry(attempts=1)
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    with pytest.raises(errors.Unavailable, match="cannot reach.*CERTIFICATE_VERIFY_FAILED.*self-signed"):
        CapsuleClient(front["tls"].url, retry=once).health()
    monkeypatch.setenv("SSL_CERT_FILE", str(front["tls"].cert))
    by_name = front["tls"].url.replace("127.0.0.1", "localhost")  # the certificate names 127.0.0.1 only
    with pytest.raises(errors.Unavailable, match="cannot reach.*Hostname mismatch"):
        CapsuleClient(by_name, retry=once).health()


class LosingRelay:
    """A TCP relay to capsule serve that, when armed, lets the next request through and loses its
    answer (closes the client's connection instead): the server acted, the client cannot know."""

    def __init__(self, backend_port: int) -> None:
        self.backend_port = backend_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.armed = threading.Event()
        self.lost = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                downstream, _ = self.listener.accept()
            except OSError:
                return  # closed
            upstream = socket.create_connection(("127.0.0.1", self.backend_port))
            threading.Thread(target=self._pipe, args=(downstream, upstream, False), daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, downstream, True), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket, answers: bool) -> None:
        try:
            while data := source.recv(65536):
                if answers and self.armed.is_set():
                    self.armed.clear()
                    self.lost += 1
                    break
                sink.sendall(data)
        except OSError:
            pass
        for end in (source, sink):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            end.close()

    def close(self) -> None:
        self.listener.close()


def test_a_lost_answer_repeats_a_store_deduplicated_and_a_vote_under_its_key(front):
    relay = LosingRelay(front["port"])
    try:
        with signed_client(relay.url) as client:
            client.store({"project": "lost", "content": "A first store opens the kept connection"})
            relay.armed.set()
            stored = client.store({"project": "lost", "content": "The answer to this store is lost once"})
            assert relay.lost == 1 and len(client.waits) == 1  # sent again, after a backoff
            assert stored.deduplicated  # the first try was applied; the second found it
            listed = client.list_memories({"project": "lost"}).memories
            assert sorted(m.content for m in listed) == [
                "A first store opens the kept connection",
                "The answer to this store is lost once",
            ]
            relay.armed.set()
            voted = client.feedback(stored.memory.id, {"helpful": True})
            assert relay.lost == 2 and len(client.waits) == 2  # sent again under its Idempotency-Key
            assert voted.memory.helpful == 1  # the first try's answer, replayed
            assert client.get(stored.memory.id).memory.helpful == 1  # counted once
    finally:
        relay.close()
