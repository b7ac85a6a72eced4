"""``capsule serve`` holds the offline model once: the workers embed through the serve parent
(capsule.embedders.shared), one request per batch, with the same vectors; a holder that is gone
or stuck answers Unavailable (503) within the call's time, never a hang."""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pytest

from capsule.core.errors import Unavailable
from capsule.embedders import HashingEmbedder
from capsule.embedders.shared import EmbedServer, SharedEmbedder

from .server import Server


class Counting:
    """The hashing embedder, counting its calls and saying which process ran them."""

    name = "fake"

    def __init__(self, pause_s: float = 0.0) -> None:
        self.inner = HashingEmbedder()
        self.model_id, self.dim = self.inner.model_id, self.inner.dim
        self.calls: list[tuple[int, int]] = []
        self.pause_s = pause_s

    def embed(self, texts, *, kind="document"):
        self.calls.append((os.getpid(), len(texts)))
        time.sleep(self.pause_s)
        return self.inner.embed(texts, kind=kind)


def test_a_batch_is_one_request_with_the_same_vectors():
    holder = Counting()
    server = EmbedServer(holder)
    try:
        client = SharedEmbedder(**server.client_spec())
        texts = [f"text {i}" for i in range(50)]
        got = client.embed(texts, kind="query")
        assert np.array_equal(got, HashingEmbedder().embed(texts, kind="query"))
        assert got.dtype == np.float32 and got.shape == (50, holder.dim)
        assert holder.calls == [(os.getpid(), 50)]
        assert client.embed([]).shape == (0, holder.dim) and len(holder.calls) == 1  # nothing to ask
        assert (client.model_id, client.dim, client.name) == (holder.model_id, holder.dim, "fake")
    finally:
        server.close()


def test_the_models_vectors_through_the_holder_are_its_own():
    from capsule.embedders import minilm

    if not minilm.available():
        pytest.skip("the offline model is not installed")
    model = minilm.MiniLMEmbedder()
    texts = ["Use WAL mode for SQLite readers", "sqlite readers", "a longer text " * 40]
    server = EmbedServer(model)
    try:
        client = SharedEmbedder(**server.client_spec())
        for kind in ("document", "query"):
            assert np.array_equal(client.embed(texts, kind=kind), model.embed(texts, kind=kind))
        assert client.name == "minilm" and client.model_id == minilm.MODEL_ID
    finally:
        server.close()


def test_a_gone_holder_is_unavailable_at_once():
    server = EmbedServer(Counting())
    client = SharedEmbedder(**server.client_spec())
    client.embed(["connected"])
    server.close()
    started = time.monotonic()
    for _ in range(2):  # the open connection ends, then a new one cannot be made
        with pytest.raises(Unavailable):
            client.embed(["after"])
    assert time.monotonic() - started < 2


def test_a_stuck_holder_is_unavailable_within_the_timeout():
    server = EmbedServer(Counting(pause_s=3))
    try:
        client = SharedEmbedder(**{**server.client_spec()}, timeout_s=0.5)
        started = time.monotonic()
        with pytest.raises(Unavailable, match="no answer within"):
            client.embed(["slow"])
        assert time.monotonic() - started < 2
    finally:
        server.close()


def test_a_wrong_key_is_refused():
    server = EmbedServer(Counting())
    try:
        client = SharedEmbedder(**{**server.client_spec(), "authkey": b"not the key"})
        with pytest.raises(Unavailable):
            client.embed(["x"])
    finally:
        server.close()


def _children(pid: int) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                stat = Path(f"/proc/{name}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(name))
    return found


def _maps_onnxruntime(pid: int) -> bool:
    with open(f"/proc/{pid}/maps") as maps:
        return any("onnxruntime" in line for line in maps)


def _embed_socket_connections(pid: int) -> int:
    """The connections the serve process's embedding socket has accepted (its listener not counted)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    with open("/proc/net/unix") as table:
        rows = [line.split() for line in table.read().splitlines()[1:]]
    ours = [r for r in rows if len(r) >= 8 and r[6] in inodes and "capsule-embed-" in r[7]]
    return len(ours) - 1


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc")
def test_serve_holds_the_model_once(tmp_path):
    from capsule.embedders import minilm

    if not minilm.available():
        pytest.skip("the offline model is not installed")
    server = Server(tmp_path, "--embedder", "minilm")
    try:
        stored = server.request(
            "POST", "/v1/memories", {"project": "web", "content": "Use WAL mode for SQLite readers"}
        )
        assert stored.status == 201, stored
        workers = [
            p
            for p in _children(server.process.pid)
            if "multiprocessing.spawn" in Path(f"/proc/{p}/cmdline").read_text()
        ]
        assert len(workers) == 2
        # Distinct queries (each one embedded, none cached) on fresh connections until both workers asked.
        answers = {}
        for i in range(60):
            query = f"sqlite readers {i}"
            reply = server.request("POST", "/v1/memories/search", {"query": query, "project": "web"})
            assert reply.status == 200, reply
            answers[query] = reply.json["results"]
            if i >= 5 and _embed_socket_connections(server.process.pid) == 2:
                break
        assert _embed_socket_connections(server.process.pid) == 2, "both workers embed through the serve process"
        assert _maps_onnxruntime(server.process.pid)
        assert not any(_maps_onnxruntime(p) for p in workers), "no worker loads the model"
        # The same answers again, from whichever worker takes each (the vectors now cached or not).
        for query, first in answers.items():
            again = server.request("POST", "/v1/memories/search", {"query": query, "project": "web"}).json["results"]
            assert [(h["id"], h["score"]) for h in again] == [(h["id"], h["score"]) for h in first]
        exact = server.request(
            "POST", "/v1/memories/search", {"query": "Use WAL mode for SQLite readers", "project": "web"}
        ).json["results"]
        assert exact[0]["id"] == stored.json["memory"]["id"]
    finally:
        assert server.stop() == 0, "".join(server.stderr)
