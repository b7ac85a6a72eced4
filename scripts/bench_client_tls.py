"""Per-call latency of the signing client over TLS on loopback: new connection against kept-alive.

    .venv/bin/python scripts/bench_client_tls.py [--calls N] [--op search|health] [--plain]

Starts a real ``capsule serve`` (one worker, hashing embedder, a fresh data folder) behind a
self-signed certificate (Debian's stunnel, ``apt-get install stunnel4``), then times N calls
of ``CapsuleClient`` (bearer token) in three ways:

- ``new connection``: a new client per call, so a new TLS context (the system's CAs loaded),
  a TCP connect and a full TLS handshake each time: what every call cost when the client used
  ``urllib.request.urlopen`` (which made a default context per connection);
- ``new, TLS resumed``: one client whose kept connections are closed after each call, so a
  TCP connect and a resumed TLS session (what a reconnect after an idle drop costs);
- ``reused``: one client, one kept-alive connection for all calls.

``--plain`` adds plain HTTP straight to ``capsule serve`` (a new connection per call, and one
kept), to tell what TLS adds from what any new connection costs. Prints p50 and p95 in
milliseconds per call, and the TCP connections stunnel accepted during each way
(tests/mcp/test_client_keepalive.py shows which handshakes were full and which resumed). Loopback has no network latency: against API Gateway each
saved round trip is worth the distance to the region as well.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BLOCK = 10  # calls of one way before the next way's turn
sys.path[:0] = [str(ROOT / "layers"), str(ROOT)]

from mcp_client.auth import BearerAuth  # noqa: E402
from mcp_client.client import CapsuleClient  # noqa: E402
from scripts.tls_front import TlsFront  # noqa: E402


def start_serve(data_dir: Path) -> tuple[subprocess.Popen, int]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CAPSULE_", "AWS_"))}
    env.update(PYTHONPATH=os.pathsep.join([str(ROOT / "layers"), str(ROOT)]), CAPSULE_EMBEDDER="hashing")
    process = subprocess.Popen(
        [sys.executable, "-m", "capsule_cli", "serve", "--port", "0", "--workers", "1", "--data-dir", str(data_dir)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if "listening on " in line:
            return process, int(line.split("listening on ", 1)[1].split()[0].rstrip("/").rsplit(":", 1)[1])
        if not line and process.poll() is not None:
            break
    process.kill()
    raise SystemExit("capsule serve did not start")


def percentiles(samples_ms: list[float]) -> tuple[float, float]:
    cuts = statistics.quantiles(samples_ms, n=100, method="inclusive")
    return statistics.median(samples_ms), cuts[94]


def measure(front: TlsFront, ways: list[tuple[str, Callable[[], None]]], calls: int) -> dict[str, dict]:
    """Each way's call times (ms) and what stunnel counted during them. The ways take turns, a
    block of calls each, so a change in the machine's load weighs on all of them alike."""
    results = {name: {"ms": [], "connections": 0} for name, _ in ways}
    for _name, call in ways:
        call()  # warm: imports, the server's caches, a first session to resume
    for _ in range(0, calls, BLOCK):
        for name, call in ways:
            before = front.wait_counts()
            for _ in range(BLOCK):
                start = time.perf_counter()
                call()
                results[name]["ms"].append((time.perf_counter() - start) * 1000)
            opens = name.startswith("new")  # the plain ways do not pass the front
            after = front.wait_counts(connections=before["connections"] + (BLOCK if opens else 0))
            results[name]["connections"] += after["connections"] - before["connections"]
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200, help="calls per way (default 200)")
    parser.add_argument("--op", choices=["search", "health"], default="search")
    parser.add_argument(
        "--plain", action="store_true", help="also plain HTTP straight to capsule serve, new and reused (what TLS adds)"
    )
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="capsule-bench-tls-"))
    process, port = start_serve(folder / "data")
    front = TlsFront(port, folder, handshakes=False)
    os.environ["SSL_CERT_FILE"] = str(front.cert)  # trust the self-signed front (read by each new client)
    auth = BearerAuth((folder / "data" / "gateway-token").read_text(), source="the bench's token")
    request = {"project": "bench", "query": "deploy switch rollback"}

    def op(client: CapsuleClient) -> None:
        client.search(request) if args.op == "search" else client.health()

    try:
        with CapsuleClient(front.url, auth=auth) as seed:
            for n in range(20):
                seed.store({"project": "bench", "content": f"Deploy {n} goes through the blue/green switch"})
        kept = CapsuleClient(front.url, auth=auth)
        resumed = CapsuleClient(front.url, auth=auth)

        def new_client() -> None:
            with CapsuleClient(front.url, auth=auth) as client:
                op(client)

        def resumed_session() -> None:
            op(resumed)
            resumed.close()

        ways = [("new connection", new_client), ("new, TLS resumed", resumed_session), ("reused", lambda: op(kept))]
        if args.plain:
            direct = f"http://127.0.0.1:{port}"
            plain = CapsuleClient(direct, auth=auth)

            def plain_new() -> None:
                with CapsuleClient(direct, auth=auth) as client:
                    op(client)

            ways += [("plain HTTP, new", plain_new), ("plain HTTP, reused", lambda: op(plain))]
        print(
            f"{args.calls} x {args.op} per way over TLS on loopback (stunnel, self-signed) to capsule serve, "
            f"the ways interleaved in blocks of {BLOCK} calls"
        )
        for name, result in measure(front, ways, args.calls).items():
            p50, p95 = percentiles(result["ms"])
            print(
                f"  {name:18} p50 {p50:6.2f} ms  p95 {p95:6.2f} ms   "
                f"({result['connections']} connections accepted by the front)"
            )
        kept.close()
        resumed.close()
    finally:
        front.stop()
        process.terminate()
        process.wait(30)


if __name__ == "__main__":
    main()
