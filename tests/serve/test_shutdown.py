"""SIGTERM (and SIGINT) stop ``capsule serve`` cleanly: every acknowledged write is kept."""

import os
import signal
import threading
from pathlib import Path

import pytest

from capsule.store.sqlite import SQLiteStore

from .server import Server


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_mid_load_keeps_every_acknowledged_write(tmp_path, sig):
    server = Server(tmp_path)
    token = server.token
    acknowledged: list[str] = []
    lock = threading.Lock()
    enough = threading.Event()

    def client(n: int) -> None:
        for i in range(10_000):
            try:
                r = server.request(
                    "POST", "/v1/memories", {"project": "load", "content": f"client {n} write {i}"}, token=token
                )
            except OSError:
                return  # refused or reset: not acknowledged
            if r.status != 201:
                return
            with lock:
                acknowledged.append(r.json["memory"]["id"])
                if len(acknowledged) >= 40:
                    enough.set()

    threads = [threading.Thread(target=client, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    assert enough.wait(120), "".join(server.stderr)
    code = server.stop(sig)
    for t in threads:
        t.join(60)
    assert code == 0, "".join(server.stderr)
    assert "capsule serve: stopped" in "".join(server.stderr)

    # Read back with the library: every id the server answered 201 for is in the database
    # (evicted by the rolling limit counts as kept: eviction is recoverable and audited).
    store = SQLiteStore(tmp_path / "capsule.db")
    try:
        kept = [store.get("local", mid, include_forgotten=True).id for mid in acknowledged]
    finally:
        store.close()
    assert len(acknowledged) >= 40 and kept == acknowledged


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():  # a child is listed under the thread that made it
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except FileNotFoundError:  # that thread has just ended
            pass
    return found


def _is_worker(pid: int) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
    except FileNotFoundError:
        return False
    return b"spawn_main" in cmdline


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
def test_a_dead_worker_is_replaced(tmp_path):
    server = Server(tmp_path)
    try:
        assert server.request("GET", "/v1/health").status == 200
        workers = [pid for pid in _children(server.process.pid) if _is_worker(pid)]
        assert workers
        for pid in workers:
            os.kill(pid, signal.SIGKILL)
        statuses = [server.request("GET", "/v1/health").status for _ in range(3)]
        assert statuses[-1] == 200 and set(statuses) <= {200, 503}
        r = server.request("POST", "/v1/memories", {"project": "after", "content": "after the crash"})
        assert r.status == 201
    finally:
        assert server.stop() == 0


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
def test_a_signal_while_workers_start_stops_cleanly_and_leaves_no_worker(tmp_path):
    import subprocess
    import sys

    from .server import environment

    process = subprocess.Popen(
        [sys.executable, "-m", "capsule_cli", "serve", "--port", "0", "--workers", "2", "--data-dir", str(tmp_path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=environment(),
    )
    lines = []
    for line in process.stderr:  # a worker building its service logs this while serve waits for it
        lines.append(line)
        if "embedder active" in line:
            break
    workers = [pid for pid in _children(process.pid) if _is_worker(pid)]
    process.send_signal(signal.SIGTERM)
    try:
        _, rest = process.communicate(timeout=60)  # ends when every holder of stderr has ended
    except subprocess.TimeoutExpired:
        left = [pid for pid in workers if _is_worker(pid)]
        for pid in left:
            os.kill(pid, signal.SIGKILL)
        process.kill()
        pytest.fail(f"serve or its workers {left} still running a minute after SIGTERM: " + "".join(lines))
    assert process.returncode == 0, "".join(lines) + rest
    assert workers and "capsule serve: stopped" in rest
    assert not [pid for pid in workers if _is_worker(pid)]  # every worker ended with it


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
def test_workers_end_when_serve_is_killed_outright(tmp_path):
    import time

    server = Server(tmp_path)
    assert server.request("GET", "/v1/health").status == 200
    workers = [pid for pid in _children(server.process.pid) if _is_worker(pid)]
    server.process.kill()  # SIGKILL: no handler, no cleanup
    server.process.wait(30)
    deadline = time.monotonic() + 30
    while (left := [pid for pid in workers if _is_worker(pid)]) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert workers and not left, f"workers {left} outlived a killed capsule serve"


def test_sigterm_under_load_resets_no_connection(tmp_path):
    """Requests sent across SIGTERM, each on a new connection, by clients that keep sending until
    the port is closed: each is answered (201 before or as the stop begins, 503 after it) or,
    once the socket is gone, refused; none is reset or closed unanswered. Every 201 is kept."""
    import collections
    import json as jsonlib
    import socket

    server = Server(tmp_path)
    token = server.token.encode()
    outcomes: collections.Counter = collections.Counter()
    stored: list[str] = []
    lock = threading.Lock()
    enough, signalled = threading.Event(), threading.Event()

    def one(n: int, i: int) -> str:
        body = jsonlib.dumps({"project": "stop", "content": f"client {n} request {i}"}).encode()
        try:
            sock = socket.create_connection(("127.0.0.1", server.port), timeout=30)
        except ConnectionRefusedError:
            return "refused"
        try:
            sock.sendall(
                b"POST /v1/memories HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                + token
                + b"\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: %d\r\n\r\n" % len(body)
                + body
            )
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
        except ConnectionResetError:
            return "reset"
        except OSError as exc:
            return type(exc).__name__
        finally:
            sock.close()
        if not answer:
            return "closed unanswered"
        status = answer.split(b" ", 2)[1].decode()
        if status == "201":
            with lock:
                stored.append(jsonlib.loads(answer.partition(b"\r\n\r\n")[2])["memory"]["id"])
        return status

    def client(n: int) -> None:
        for i in range(100_000):
            outcome = one(n, i)
            with lock:
                outcomes[outcome] += 1
                if outcomes["201"] >= 60:
                    enough.set()
            if outcome == "refused" or (signalled.is_set() and outcome not in ("201", "503")):
                return

    threads = [threading.Thread(target=client, args=(n,)) for n in range(12)]
    for t in threads:
        t.start()
    assert enough.wait(120), "".join(server.stderr)
    signalled.set()
    code = server.stop(signal.SIGTERM)
    for t in threads:
        t.join(60)
    assert code == 0, "".join(server.stderr)
    assert set(outcomes) <= {"201", "503", "refused"}, outcomes  # no reset, nothing unanswered
    assert outcomes["refused"] == 12 and outcomes["201"] >= 60, outcomes
    store = SQLiteStore(tmp_path / "capsule.db")
    try:
        assert [store.get("local", mid, include_forgotten=True).id for mid in stored] == stored
    finally:
        store.close()
