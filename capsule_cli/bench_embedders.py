"""``capsule bench --embedders``: the offline embedders side by side (issue 38).

Each embedder runs in a fresh process (its load time and memory are its own): the load (building
it and embedding one word: the model loads on first use), one query's latency (median of
:data:`QUERIES` single short texts), documents per second for 24-word and 400-word texts in
batches of 32 (what ingest sends), and the process's resident memory at the end and at its peak.
Texts are seeded draws from a fixed word list. BLAS and onnxruntime use every core, as a service
does. Prints a table; ``--out`` gets the JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

# name or name:precision (the mpnet graph CAPSULE_MPNET_PRECISION picks)
EMBEDDERS = ("minilm", "mpnet", "mpnet:int8")
QUERIES = 20
WORDS = (
    "remember the customer asked about invoices last Tuesday because the deployment failed twice "
    "after migrating databases; she prefers concise answers, works from Berlin, and plans a trip "
    "to Lisbon in spring with her sister while the team ships version 2.4 of the billing service"
).split()


def texts(count: int, words: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(words)) for _ in range(count)]


def _rss_mb() -> float:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def measure(name: str, batches: int) -> dict[str, Any]:
    """One embedder, in this process."""
    from capsule.config import Settings
    from capsule.embedders import build_embedder

    started = time.perf_counter()
    embedder_name, _, precision = name.partition(":")
    settings = {"mpnet_precision": precision} if precision else {}
    embedder = build_embedder(Settings.from_env(embedder=embedder_name, **settings))
    embedder.embed(["hello"])
    load = time.perf_counter() - started
    latencies = []
    for query in texts(QUERIES, 8, 1):
        began = time.perf_counter()
        embedder.embed([query], kind="query")
        latencies.append(time.perf_counter() - began)
    result: dict[str, Any] = {
        "embedder": name,
        "model": embedder.model_id,
        "dim": embedder.dim,
        "load_s": round(load, 2),
        "query_ms": round(statistics.median(latencies) * 1000, 1),
    }
    for words in (24, 400):
        batch = texts(32 * batches, words, words)
        began = time.perf_counter()
        embedder.embed(batch)
        result[f"texts_per_s_{words}w"] = round(len(batch) / (time.perf_counter() - began), 1)
    result["rss_mb"] = round(_rss_mb())
    result["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return result


def table(results: list[dict[str, Any]]) -> str:
    headers = ("embedder", "dim", "load s", "query ms", "24w texts/s", "400w texts/s", "RSS MB", "peak MB")
    keys = ("embedder", "dim", "load_s", "query_ms", "texts_per_s_24w", "texts_per_s_400w", "rss_mb", "peak_rss_mb")
    rows = [[str(r.get(k, "-")) for k in keys] for r in results if "error" not in r]
    widths = [max([len(h), *(len(row[i]) for row in rows)]) for i, h in enumerate(headers)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(headers, widths))]
    lines += ["  ".join(v.rjust(w) for v, w in zip(row, widths)) for row in rows]
    # Below the table, whole: the message names what to install, too long for a column.
    lines += [f"{r['embedder']}: not measured: {r['error']}" for r in results if "error" in r]
    return "\n".join(lines)


def cmd_embedders(args: argparse.Namespace) -> None:
    batches = 1 if args.quick else 2
    results = []
    for name in EMBEDDERS:
        print(f"... {name}", file=sys.stderr, flush=True)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        run = subprocess.run(
            [sys.executable, "-m", "capsule_cli.bench_embedders", name, str(batches)],
            env=env,
            capture_output=True,
            text=True,
        )
        if run.returncode == 0:
            results.append(json.loads(run.stdout.strip().splitlines()[-1]))
        else:  # an embedder not installed is a line saying so, not a failed bench
            last = (run.stderr.strip().splitlines() or [f"exit status {run.returncode}"])[-1]
            results.append({"embedder": name, "error": last})
    Path(args.out).write_text(
        json.dumps({"command": "capsule " + " ".join(sys.argv[1:]), "embedders": results}, indent=2)
    )
    print(table(results))
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; JSON written to {args.out}")


if __name__ == "__main__":
    from capsule.core.errors import Unavailable

    try:
        print(json.dumps(measure(sys.argv[1], int(sys.argv[2]))))
    except Unavailable as exc:  # not installed here: its message, not a traceback
        sys.exit(str(exc))
