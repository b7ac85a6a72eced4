"""``capsule loadtest``: requests/s and latency of ``capsule serve`` for store and search.

It seeds a fresh data folder with N memories through the library, starts ``capsule serve`` on
loopback in a subprocess, and drives it with C concurrent clients (threads, each with its own
keep-alive connection), first storing, then searching. Bounded: loopback only, at most
100,000 memories and 100,000 requests, and the data folder is a temporary one unless given.

    capsule loadtest --memories 10000 --clients 8 --requests 2000 --searches 400
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from capsule.config import Settings
from capsule.errors import InvalidInput
from capsule.runtime import build_service

from . import render
from .cli import LOCAL_TENANT

PROJECT = "loadtest"
WORDS = ("sqlite lock retry timeout index cache vector ranking deploy lambda gateway token key signature "
         "tenant project memory pinned evict feedback search query embed chunk ingest python error fix "
         "decision config schema migrate backup restore latency throughput worker thread process").split()
MAX_COUNT = 100_000


def sentence(rng: random.Random, words: int = 14) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def seed(settings: Settings, count: int, rng: random.Random) -> float:
    """Store ``count`` memories in one project through the library; returns the seconds it took."""
    service = build_service(settings)
    started = time.perf_counter()
    try:
        service.set_retention_limit(LOCAL_TENANT, PROJECT, {"retention_limit": MAX_COUNT * 3})
        for i in range(count):
            service.store_memory(LOCAL_TENANT, {"project": PROJECT, "content": f"seed {i}: {sentence(rng)}"})
    finally:
        service.store.close()
    return time.perf_counter() - started


class ServeProcess:
    def __init__(self, data_dir: Path, workers: int, embedder: str) -> None:
        root = Path(__file__).resolve().parents[1]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root / "layers"), str(root)]),
                   CAPSULE_EMBEDDER=embedder)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "mcp_client", "serve", "--port", "0", "--workers", str(workers),
             "--data-dir", str(data_dir)],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
        )
        self.url = ""
        for line in self.process.stdout:  # the banner's first line names the address
            found = re.search(r"listening on http://([\d.]+):(\d+)", line)
            if found:
                self.host, self.port = found.group(1), int(found.group(2))
                break
        else:
            raise InvalidInput("capsule serve did not start; run it by hand to see why")
        threading.Thread(target=lambda: [None for _ in self.process.stdout], daemon=True).start()
        self.token = (data_dir / "gateway-token").read_text().strip()

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(60)


@dataclass
class Outcome:
    name: str
    latencies: list[float]
    errors: int
    seconds: float

    def row(self) -> dict[str, Any]:
        ordered = sorted(self.latencies)

        def pct(p: float) -> float:
            return ordered[min(len(ordered) - 1, int(p * len(ordered)))] * 1000 if ordered else float("nan")

        return {"operation": self.name, "requests": len(self.latencies), "errors": self.errors,
                "requests_per_s": round(len(self.latencies) / self.seconds, 1),
                "p50_ms": round(pct(0.50), 1), "p95_ms": round(pct(0.95), 1), "p99_ms": round(pct(0.99), 1),
                "mean_ms": round(statistics.fmean(ordered) * 1000, 1) if ordered else None}


def drive(name: str, host: str, port: int, token: str, clients: int, total: int,
          make: Callable[[random.Random, int], tuple[str, str, dict]]) -> Outcome:
    """``total`` requests shared by ``clients`` threads, each on its own keep-alive connection."""
    latencies: list[float] = []
    errors = [0]
    lock = threading.Lock()
    counter = iter(range(total))

    def client(seed_value: int) -> None:
        rng = random.Random(seed_value)
        connection = http.client.HTTPConnection(host, port, timeout=120)
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        try:
            while True:
                with lock:
                    number = next(counter, None)
                if number is None:
                    return
                method, path, body = make(rng, number)
                started = time.perf_counter()
                connection.request(method, path, body=json.dumps(body), headers=headers)
                response = connection.getresponse()
                response.read()
                elapsed = time.perf_counter() - started
                with lock:
                    latencies.append(elapsed)
                    errors[0] += response.status >= 400
        finally:
            connection.close()

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return Outcome(name, latencies, errors[0], time.perf_counter() - started)


def store_request(rng: random.Random, number: int) -> tuple[str, str, dict]:
    return "POST", "/v1/memories", {"project": PROJECT, "content": f"load {number}: {sentence(rng)}"}


def search_request(rng: random.Random, number: int) -> tuple[str, str, dict]:
    return "POST", "/v1/memories/search", {"project": PROJECT, "query": sentence(rng, 4), "k": 8}


def cmd_loadtest(args: argparse.Namespace) -> None:
    for name in ("memories", "requests", "searches"):
        if not 0 <= getattr(args, name) <= MAX_COUNT:
            raise InvalidInput(f"--{name} must be 0-{MAX_COUNT}", field=name)
    if not 1 <= args.clients <= 64:
        raise InvalidInput("--clients must be 1-64", field="clients")
    with tempfile.TemporaryDirectory(prefix="capsule-loadtest-") as tmp:
        data_dir = Path(args.data_dir or tmp)
        settings = Settings.from_env(data_dir=data_dir, embedder=args.embedder)
        rng = random.Random(7)
        seeded = seed(settings, args.memories, rng)
        print(f"seeded {args.memories} memories in {seeded:.1f}s ({settings.embedder} embedder)", file=sys.stderr)
        server = ServeProcess(data_dir, args.workers, args.embedder)
        try:
            rows = [
                drive("store", server.host, server.port, server.token, args.clients, args.requests, store_request).row(),
                drive("search", server.host, server.port, server.token, args.clients, args.searches,
                      search_request).row(),
            ]
        finally:
            server.stop()
    result = {"memories": args.memories, "clients": args.clients, "workers": args.workers,
              "embedder": args.embedder, "cpus": os.cpu_count(), "results": rows}
    if args.json:
        print(render.as_json(result))
    else:
        print(render.table(list(rows[0]), [list(r.values()) for r in rows]))
        print(f"{args.memories} memories seeded, {args.clients} clients, {args.workers} handler workers, "
              f"{args.embedder} embedder, {os.cpu_count()} CPUs")


def register(subparsers) -> None:
    p = subparsers.add_parser("loadtest", help="measure capsule serve: requests/s and latency for store and search")
    p.add_argument("--memories", type=int, default=10_000, help="memories seeded before measuring (default 10000)")
    p.add_argument("--clients", type=int, default=8, help="concurrent clients (default 8)")
    p.add_argument("--requests", type=int, default=2000, help="store requests (default 2000)")
    p.add_argument("--searches", type=int, default=400, help="search requests (default 400)")
    p.add_argument("--workers", type=int, default=min(4, os.cpu_count() or 1), help="serve's handler workers")
    p.add_argument("--embedder", default="hashing", choices=["hashing", "minilm", "auto"],
                   help="embedder for seeding and serving (default hashing)")
    p.add_argument("--data-dir", help="seed and serve this folder instead of a temporary one (should be empty)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(run=cmd_loadtest)
