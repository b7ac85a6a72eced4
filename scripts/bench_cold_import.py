"""How long a cold Lambda container takes to import a handler, from the layer alone.

    python scripts/bench_cold_import.py [--layer DIR] [--runs 7] [--handlers search,store,health|all]
                                        [--bytecode-only] [--markdown]

Each run is a fresh ``python -B -I -S`` (no site-packages, no bytecode written: Lambda's /opt
and /var/task are read-only) whose path is the functions asset, the layer's ``python/`` and
the runtime's SDK, as in Lambda. It times ``import functions.handlers.<name>`` and then what
the first hosted request adds (the MongoDB store and the remote embedder), in wall time and
in CPU time (user + system: what a loaded machine does not inflate), and the process's peak
RSS after each, with the layer's bytecode and without it (how the layer shipped before).
``--handlers all`` takes every route's handler (functions/routes.py); ``--markdown`` prints the
medians as a table (docs/aws.md). ``--layer`` takes a built layer tree
(the folder holding ``python/``); by default one is built for this machine's interpreter.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PROBE = r"""
import json, resource, sys, time
sys.path[:0] = PATHS
def now():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return time.perf_counter(), r.ru_utime + r.ru_stime
w0, c0 = now()
__import__("functions.handlers." + HANDLER)
w1, c1 = now()
rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
import capsule.store.mongo, capsule.store.mongo_learning, capsule.embedders.remote
w2, c2 = now()
rss2 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"import_wall": w1 - w0, "import_cpu": c1 - c0, "import_rss_mb": rss1,
                  "first_wall": w2 - w0, "first_cpu": c2 - c0, "first_rss_mb": rss2}))
"""


def _build_layer():
    spec = importlib.util.spec_from_file_location("build_layer", REPO / "layers" / "build_layer.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def probe(paths: list[str], handler: str) -> dict[str, float]:
    code = PROBE.replace("PATHS", repr(paths)).replace("HANDLER", repr(handler))
    proc = subprocess.run(
        [sys.executable, "-B", "-I", "-S", "-c", code],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "CAPSULE_STORE": "mongo"},
        check=True,
    )
    return json.loads(proc.stdout)


KEYS = ("import_wall", "import_cpu", "import_rss_mb", "first_wall", "first_cpu", "first_rss_mb")


def every_handler() -> list[str]:
    """The handler modules of the route table, each once, in its order."""
    sys.path[:0] = [str(REPO), str(REPO / "layers")]
    from functions import routes

    names = [route.handler.partition(":")[0].rsplit(".", 1)[-1] for route in routes.ROUTES]
    return list(dict.fromkeys(names))


def summary(samples: list[dict[str, float]]) -> str:
    parts = []
    for key in KEYS:
        values = [s[key] for s in samples]
        parts.append(f"{key} min {min(values):.3f} median {statistics.median(values):.3f}")
    return " | ".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layer", type=Path, help="a built layer tree (holding python/)")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--handlers", default="search,store,health")
    parser.add_argument("--bytecode-only", action="store_true", help="only the layer as shipped")
    parser.add_argument("--markdown", action="store_true", help="medians as a Markdown table")
    args = parser.parse_args(argv)
    handlers = every_handler() if args.handlers == "all" else args.handlers.split(",")
    if args.markdown:
        print("| handler | layer | import CPU s | import RSS MB | + store and embedder CPU s | RSS MB |")
        print("| --- | --- | --- | --- | --- | --- |")
    build_layer = _build_layer()
    with tempfile.TemporaryDirectory(prefix="capsule-cold-") as tmp:
        root = Path(tmp)
        layer = args.layer
        if layer is None:
            layer = root / "layer"
            build_layer.build_tree(
                layer, build_layer.extras_for("voyage"), platform="host", compile_with=sys.executable
            )
        plain = root / "plain"
        shutil.copytree(layer / "python", plain, ignore=shutil.ignore_patterns("__pycache__"))
        asset = root / "asset"
        shutil.copytree(REPO / "functions", asset / "functions", ignore=shutil.ignore_patterns("__pycache__"))
        runtime = str(build_layer.link_runtime_sdk(root / "runtime"))
        sites = [("with bytecode", layer / "python"), ("no bytecode", plain)][: 1 if args.bytecode_only else 2]
        for handler in handlers:
            for label, site in sites:
                samples = [probe([str(asset), str(site), runtime], handler) for _ in range(args.runs)]
                if args.markdown:
                    m = {key: statistics.median(s[key] for s in samples) for key in KEYS}
                    print(
                        f"| {handler} | {label} | {m['import_cpu']:.2f} | {m['import_rss_mb']:.0f} "
                        f"| {m['first_cpu']:.2f} | {m['first_rss_mb']:.0f} |"
                    )
                else:
                    print(f"{handler:8} {label:14} {summary(samples)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
