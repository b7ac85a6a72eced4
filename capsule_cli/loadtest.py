"""``capsule loadtest``: requests/s and latency of ``capsule serve`` for store and search, beside
the same calls made in-process through the library, in one run.

It seeds a fresh data folder with N memories through the library's bulk path (10,000 embedded
and written a transaction), measures store and search in-process (one caller, the library's
own speed), then starts ``capsule serve`` on loopback in a subprocess and drives it: one client
alone (what a request adds to the in-process call), then C concurrent clients (threads), first
storing, then searching. Clients keep their connection alive as real clients (SDKs, browsers,
``requests.Session``) do; ``--connection new`` (or ``both``) opens a new connection per request
instead. Bounded: loopback only, at most 1,000,000 memories and 100,000 requests, and the data
folder is a temporary one unless given.

    capsule loadtest --memories 10000 --clients 8 --workers 2 --requests 4000 --searches 4000
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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the library loads when a load test runs, not for `capsule loadtest --help`
    from capsule.config import Settings

from capsule.core.errors import InvalidInput

from . import render
from .cli import LOCAL_TENANT

PROJECT = "loadtest"
WORDS = (
    "sqlite lock retry timeout index cache vector ranking deploy lambda gateway token key signature "
    "tenant project memory pinned evict feedback search query embed chunk ingest python error fix "
    "decision config schema migrate backup restore latency throughput worker thread process"
).split()
MAX_COUNT = 100_000  # requests of each kind
MAX_MEMORIES = 1_000_000  # seeded
SEED_BATCH = 10_000


def sentence(rng: random.Random, words: int = 14) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def seed(settings: Settings, count: int, rng: random.Random, *, batch: int = SEED_BATCH) -> float:
    """Seed ``count`` memories in one project through the library's bulk path; returns the
    seconds it took. Each ``batch`` (:data:`SEED_BATCH`) is embedded in one call by the
    deployment's embedder and written by the store's bulk insert (one transaction, the rows a
    store writes): one store per memory would take about half an hour at 1M (issue 32)."""
    import uuid

    from capsule.core.records import MemoryRecord
    from capsule.core.text import sha256
    from capsule.runtime.service import build_service
    from capsule.service.writes import NO_LIMIT_FOR_STORE

    service = build_service(settings)
    store, embedder = service.store, service.embedder
    write = getattr(store, "insert_bulk", None) or store.insert
    started = time.perf_counter()
    try:  # no rolling limit: the seeded memories and the measured stores all stay
        service.set_project_settings(LOCAL_TENANT, PROJECT, {"retention_limit": "unlimited"})
        for first in range(0, count, batch):
            texts = [f"seed {i}: {sentence(rng)}" for i in range(first, min(first + batch, count))]
            vectors, now = embedder.embed(texts), service.clock()
            write(
                [
                    MemoryRecord(
                        id=uuid.uuid4().hex,
                        tenant=LOCAL_TENANT,
                        project=PROJECT,
                        content=text,
                        sha256=sha256(text),
                        occurred_at=now,
                        created_at=now,
                        updated_at=now,
                        embedding=vector,
                        model=embedder.model_id,
                    )
                    for text, vector in zip(texts, vectors)
                ],
                limit=NO_LIMIT_FOR_STORE,
                dedupe_after=None,
                actor="loadtest",
            )
    finally:
        store.close()
    return time.perf_counter() - started


class ServeProcess:
    def __init__(self, data_dir: Path, workers: int, embedder: str) -> None:
        root = Path(__file__).resolve().parents[1]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root / "layers"), str(root)]), CAPSULE_EMBEDDER=embedder)
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "capsule_cli",
                "serve",
                "--port",
                "0",
                "--workers",
                str(workers),
                "--data-dir",
                str(data_dir),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
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

    def cpu_seconds(self) -> float | None:
        """CPU time the server and its workers have used so far (Linux /proc; None elsewhere):
        what a request costs the machine, which a loaded machine's wall clock does not show."""
        return tree_cpu_seconds(self.process.pid)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(60)


def tree_cpu_seconds(pid: int) -> float | None:
    proc = Path("/proc")
    if not (proc / str(pid)).exists():
        return None
    tick = os.sysconf("SC_CLK_TCK")
    total, pending = 0.0, [pid]
    while pending:
        current = pending.pop()
        try:
            fields = (proc / str(current) / "stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
            for task in (proc / str(current) / "task").iterdir():
                pending += [int(c) for c in (task / "children").read_text().split()]
        except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
            continue  # it ended meanwhile
    return total


@dataclass
class Outcome:
    name: str
    mode: str
    clients: int
    latencies: list[float]
    errors: int
    seconds: float
    cpu_s: float | None = None  # CPU the answering side used (the server's processes, or this one in-process)
    client_cpu_s: float | None = None  # CPU the clients used (this process's threads), on the same cores

    def row(self) -> dict[str, Any]:
        ordered = sorted(self.latencies)

        def pct(p: float) -> float:
            return round(ordered[min(len(ordered) - 1, int(p * len(ordered)))] * 1000, 2) if ordered else float("nan")

        return {
            "operation": self.name,
            "mode": self.mode,
            "clients": self.clients,
            "requests": len(self.latencies),
            "errors": self.errors,
            "requests_per_s": round(len(self.latencies) / self.seconds, 1),
            "p50_ms": pct(0.50),
            "p95_ms": pct(0.95),
            "p99_ms": pct(0.99),
            "mean_ms": round(statistics.fmean(ordered) * 1000, 2) if ordered else None,
            "cpu_ms_per_request": (
                round(self.cpu_s * 1000 / len(ordered), 2) if self.cpu_s is not None and ordered else None
            ),
            "client_cpu_ms_per_request": (
                round(self.client_cpu_s * 1000 / len(ordered), 2) if self.client_cpu_s is not None and ordered else None
            ),
        }


Make = Callable[[random.Random, int], tuple[str, str, dict]]


def in_process(name: str, settings: Settings, total: int, make: Make) -> Outcome:
    """The same operations through the library in this process, one at a time: the floor."""
    from capsule.runtime.service import build_service

    service = build_service(settings)
    rng = random.Random(99_999)  # queries no HTTP phase sends
    latencies = []
    try:
        call = service.store_memory if name == "store" else service.search
        for number in range(8):  # the index loaded and warm, as the HTTP phases have it
            call(LOCAL_TENANT, make(random.Random(-1 - number), number)[2])
        service.settle()  # and its vectors all read (a large project's come after its first search)
        started, cpu = time.perf_counter(), time.process_time()
        for number in range(total):
            _, _, body = make(rng, number)
            began = time.perf_counter()
            call(LOCAL_TENANT, body)
            latencies.append(time.perf_counter() - began)
        return Outcome(name, "in-process", 1, latencies, 0, time.perf_counter() - started, time.process_time() - cpu)
    finally:
        service.store.close()


def drive(
    name: str,
    host: str,
    port: int,
    token: str,
    clients: int,
    total: int,
    make: Make,
    keep_alive: bool = True,
    salt: int = 0,
    cpu: Callable[[], float | None] = lambda: None,
) -> Outcome:
    """``total`` requests shared by ``clients`` threads, each on its own keep-alive connection
    (or a new connection per request). ``salt`` gives each phase queries of its own, so no phase
    is answered from the query cache an earlier one filled."""
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
                if not keep_alive:
                    connection = http.client.HTTPConnection(host, port, timeout=120)
                connection.request(method, path, body=json.dumps(body), headers=headers)
                response = connection.getresponse()
                response.read()
                if not keep_alive:
                    connection.close()
                elapsed = time.perf_counter() - started
                with lock:
                    latencies.append(elapsed)
                    errors[0] += response.status >= 400
        finally:
            connection.close()

    threads = [threading.Thread(target=client, args=(salt * 1000 + n,)) for n in range(clients)]
    started, cpu_before, own_before = time.perf_counter(), cpu(), time.process_time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds, cpu_after, own = time.perf_counter() - started, cpu(), time.process_time() - own_before
    mode = "keep-alive" if keep_alive else "new-connection"
    used = cpu_after - cpu_before if cpu_before is not None and cpu_after is not None else None
    return Outcome(name, mode, clients, latencies, errors[0], seconds, used, own)


def store_request(rng: random.Random, number: int) -> tuple[str, str, dict]:
    return "POST", "/v1/memories", {"project": PROJECT, "content": f"load {number}: {sentence(rng)}"}


def search_request(rng: random.Random, number: int) -> tuple[str, str, dict]:
    return "POST", "/v1/memories/search", {"project": PROJECT, "query": sentence(rng, 4), "k": 8}


def settled(cpu: Callable[[], float | None], *, quiet_s: float = 0.01, limit_s: float = 30.0) -> None:
    """Wait until the server uses almost no CPU: a first search leaves work beside it (sorting the
    index's postings, moving its matrix), which the next phase would otherwise be charged."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        before = cpu()
        time.sleep(0.25)
        after = cpu()
        if before is None or after is None or after - before < quiet_s:
            return


def measure(server: ServeProcess, args: argparse.Namespace, keep_alive: bool) -> list[dict[str, Any]]:
    at = (server.host, server.port, server.token)
    salt = 10 * keep_alive

    def run(name: str, clients: int, total: int, make: Make, phase: int) -> dict[str, Any]:
        return drive(name, *at, clients, total, make, keep_alive, salt + phase, server.cpu_seconds).row()

    # Every worker warm before anything is measured: its first search loads the project's index
    # (0.3-0.5 s CPU at 10k), which would be charged to the phase that happens to reach it. New
    # connections, since a kept-alive one stays with one worker and 8 may all land on one.
    drive("search", *at, args.clients, 16 * args.clients * args.workers, search_request, False, salt + 1)
    settled(server.cpu_seconds)
    rows = [run("search", 1, args.single, search_request, 2)] if args.single else []
    rows.append(run("store", args.clients, args.requests, store_request, 3))
    rows.append(run("search", args.clients, args.searches, search_request, 4))
    return rows


def cmd_loadtest(args: argparse.Namespace) -> None:
    for name, most in (
        ("memories", MAX_MEMORIES),
        ("requests", MAX_COUNT),
        ("searches", MAX_COUNT),
        ("single", MAX_COUNT),
    ):
        if not 0 <= getattr(args, name) <= most:
            raise InvalidInput(f"--{name} must be 0-{most}", field=name)
    if not 1 <= args.clients <= 64:
        raise InvalidInput("--clients must be 1-64", field="clients")
    modes = {"keep-alive": [True], "new": [False], "both": [True, False]}[args.connection]
    with tempfile.TemporaryDirectory(prefix="capsule-loadtest-") as tmp:
        data_dir = Path(args.data_dir or tmp)
        from capsule.config import Settings

        settings = Settings.from_env(data_dir=data_dir, embedder=args.embedder)
        rng = random.Random(7)
        seeded = seed(settings, args.memories, rng)
        print(f"seeded {args.memories} memories in {seeded:.1f}s ({settings.embedder} embedder)", file=sys.stderr)
        rows = [
            in_process("store", settings, min(args.requests, 500), store_request).row(),
            in_process("search", settings, max(args.single, min(args.searches, 500)), search_request).row(),
        ]
        server = ServeProcess(data_dir, args.workers, args.embedder)
        try:
            for keep_alive in modes:
                rows += measure(server, args, keep_alive)
        finally:
            server.stop()
    result = {
        "memories": args.memories,
        "clients": args.clients,
        "workers": args.workers,
        "embedder": args.embedder,
        "cpus": os.cpu_count(),
        "results": rows,
    }
    added = _added_by_http(rows)
    if added is not None:
        result["search_p50_added_by_http_ms"] = added
    if args.json:
        print(render.as_json(result))
        return
    print(render.table(list(rows[0]), [list(r.values()) for r in rows]))
    print(
        f"{args.memories} memories seeded, {args.clients} clients, {args.workers} handler workers, "
        f"{args.embedder} embedder, {os.cpu_count()} CPUs"
    )
    if added is not None:
        print(
            f"one client on a keep-alive connection: a search takes {added:+.2f} ms (p50) over the same "
            "search in-process"
        )


def _added_by_http(rows: list[dict[str, Any]]) -> float | None:
    """p50 of one keep-alive client's search minus the in-process search's p50."""
    alone = [r for r in rows if r["operation"] == "search" and r["clients"] == 1]
    local = [r["p50_ms"] for r in alone if r["mode"] == "in-process"]
    remote = [r["p50_ms"] for r in alone if r["mode"] == "keep-alive"]
    return round(remote[0] - local[0], 2) if local and remote else None


def register(subparsers) -> None:
    p = subparsers.add_parser("loadtest", help="measure capsule serve: requests/s and latency for store and search")
    p.add_argument(
        "--memories",
        type=int,
        default=10_000,
        help="memories seeded before measuring, by the bulk path (default 10000, at most 1000000)",
    )
    p.add_argument("--clients", type=int, default=8, help="concurrent clients (default 8)")
    p.add_argument("--requests", type=int, default=2000, help="store requests (default 2000)")
    p.add_argument("--searches", type=int, default=2000, help="search requests (default 2000)")
    p.add_argument(
        "--single",
        type=int,
        default=300,
        help="searches by one client alone, beside the same in-process (default 300; 0 skips)",
    )
    p.add_argument(
        "--connection",
        choices=["keep-alive", "new", "both"],
        default="both",
        help="clients keep their connection (as SDKs do), open one per request, or both (default)",
    )
    p.add_argument("--workers", type=int, default=min(4, os.cpu_count() or 1), help="serve's handler workers")
    p.add_argument(
        "--embedder",
        default="hashing",
        choices=["hashing", "minilm", "auto"],
        help="embedder for seeding and serving (default hashing)",
    )
    p.add_argument("--data-dir", help="seed and serve this folder instead of a temporary one (should be empty)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(run=cmd_loadtest)
