"""Fixpack imports through the library (issue 12's numbers).

    .venv/bin/python scripts/bench_fixpack_import.py [N]        # default 400

Imports N fixpacks (the Vector Bridge files of tests/learning/fixpacks, each under a new title)
one by one through ``LearningService.import_solution`` (names mapped, unknown keys kept,
signatures embedded by the hashing embedder, one SQLite transaction each) into a fresh
database, then times 200 list+get calls that read one back.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "layers"), str(ROOT)]

from capsule.config import Settings  # noqa: E402
from capsule.runtime.learning import build_learning  # noqa: E402
from capsule.runtime.service import build_service  # noqa: E402


def main(n: int) -> None:
    files = [json.loads(p.read_text("utf-8")) for p in sorted((ROOT / "tests/learning/fixpacks").glob("*.json"))]
    with tempfile.TemporaryDirectory() as folder:
        service = build_service(Settings(data_dir=folder, embedder="hashing"))
        learning = build_learning(service)
        started = time.perf_counter()
        for i in range(n):
            body = {**files[i % len(files)], "title": f"{files[i % len(files)]['title']} #{i}"}
            learning.import_solution("t", body)
        imported = time.perf_counter() - started
        started = time.perf_counter()
        for _ in range(200):
            learning.get_solution("t", learning.list_solutions("t", {"limit": 1}).solutions[0].id)
        read = time.perf_counter() - started
        service.store.close()
    print(
        f"{n} imports: {n / imported:.0f}/s ({imported * 1000 / n:.2f} ms each); list+get: {read * 1000 / 200:.2f} ms"
    )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 400)
