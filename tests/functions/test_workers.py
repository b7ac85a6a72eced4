"""The local gateway's supervisor: a worker that dies while starting is replaced once; one that
cannot start stops the start with its reason; a dead worker is replaced; stop ends them all."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from capsule.config import Settings
from capsule.core.errors import Unavailable
from functions import supervisor, workers

MARK = "CAPSULE_TEST_STARTS"


def _flaky(config, sock, ready) -> None:
    """Dies while starting the first ``crashes`` times (a crash, the OOM killer), then is ready
    and waits to be stopped."""
    starts = Path(os.environ[MARK])
    count = len(starts.read_text()) if starts.exists() else 0
    starts.write_text("x" * (count + 1))
    if count < int(os.environ[MARK + "_CRASHES"]):
        os._exit(3)
    ready.send(("ready", os.getpid()))
    time.sleep(600)


def _refuses(config, sock, ready) -> None:
    ready.send(("failed", "InvalidInput: CAPSULE_EMBEDDER must be one of ..."))


@pytest.fixture
def pool(tmp_path, monkeypatch):
    made = []

    def make(target, crashes=0):
        monkeypatch.setenv(MARK, str(tmp_path / "starts"))
        monkeypatch.setenv(MARK + "_CRASHES", str(crashes))
        config = workers.WorkerConfig(Settings(embedder="hashing"), tmp_path, "us-east-1")
        made.append(supervisor.Supervisor(config, supervisor.listen("127.0.0.1", 0), 1, target=target))
        return made[-1]

    yield make
    for p in made:
        p.stop(timeout=5)


def starts(tmp_path) -> int:
    return len((tmp_path / "starts").read_text())


def test_a_worker_that_dies_while_starting_is_replaced_once(pool, tmp_path):
    p = pool(_flaky, crashes=1)
    p.start()
    assert starts(tmp_path) == 2 and len(p.pids()) == 1


def test_workers_that_keep_dying_stop_the_start(pool, tmp_path):
    p = pool(_flaky, crashes=5)
    with pytest.raises(Unavailable, match="exit code 3"):
        p.start()
    assert starts(tmp_path) == 2


def test_a_worker_that_cannot_start_says_why(pool):
    with pytest.raises(Unavailable, match="CAPSULE_EMBEDDER"):
        pool(_refuses).start()


def test_a_dead_worker_is_replaced_and_stop_ends_every_worker(pool, tmp_path):
    p = pool(_flaky)
    p.start()
    [pid] = p.pids()
    os.kill(pid, 9)
    deadline = time.monotonic() + 30
    while (p.pids() in ([], [pid])) and time.monotonic() < deadline:
        p.replace_dead()
        time.sleep(0.05)
    [fresh] = p.pids()
    assert fresh != pid
    p.stop(timeout=5)  # _flaky ignores nothing: SIGTERM ends it
    assert p.pids() == []
    with pytest.raises(OSError):
        p.sock.getsockname()


def test_connections_on_the_listening_socket_send_without_nagle():
    """asyncio turns TCP_NODELAY on only for sockets that say IPPROTO_TCP; without it every
    keep-alive answer (headers, then body) waits ~40 ms for the client's delayed ACK."""
    import asyncio
    import socket

    listener = supervisor.listen("127.0.0.1", 0)
    seen = []

    class Probe(asyncio.Protocol):
        def connection_made(self, transport):
            sock = transport.get_extra_info("socket")
            seen.append(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            transport.close()

    async def main():
        server = await asyncio.get_running_loop().create_server(Probe, sock=listener)
        port = listener.getsockname()[1]
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        for _ in range(100):
            if seen:
                break
            await asyncio.sleep(0.01)
        writer.close()
        server.close()

    asyncio.run(main())
    assert seen and seen[0] != 0


def test_a_built_worker_freezes_its_heap_and_collects_young_objects_less_often():
    import subprocess
    import sys

    from tests.conftest import REPO

    code = (
        "import gc, sys; sys.path[:0] = ['layers', '.']; from functions import workers; "
        "before = gc.get_freeze_count(); workers.settle_heap(); "
        "print(before, gc.get_freeze_count() > 1000, gc.get_threshold() == workers.GC_THRESHOLD, gc.isenabled())"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["0", "True", "True", "True"]


def test_handlers_are_resolved_once():
    first = workers._resolve("functions.handlers.search:handler")
    assert workers._resolve("functions.handlers.search:handler") is first
    assert workers._resolved["functions.handlers.search:handler"] is first
