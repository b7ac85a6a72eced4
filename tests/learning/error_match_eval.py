"""Error matching measured on ``error_match_set.json``, through the real service on SQLite.

Each fixpack of the set is created, and linked (``pattern_link``) to its ``pattern_tag``, so
the linked pattern exists with no mined occurrences. Then each error message is searched:
``solution_search`` is right when its top result is the expected fixpack, ``pattern_detect``
when its top pattern is that fixpack's tag; an unrelated error counts as "returned" when
either gives any result at all. Reported per split: ``tune`` (what thresholds were chosen
on) and ``holdout`` (only ever checked).

Mined patterns too, in another tenant: every error message is stored as a failure memory
(three projects), ``detect_patterns`` mines them, and each unrelated error is given to
``pattern_detect``; the mined tags are listed. Run:

    .venv/bin/python tests/learning/error_match_eval.py --embedder hashing
    .venv/bin/python tests/learning/error_match_eval.py --embedder minilm
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

SET = Path(__file__).with_name("error_match_set.json")
SPLITS = ("tune", "holdout", "all")


@dataclass
class Report:
    embedder: str
    counts: Counter = field(default_factory=Counter)
    misses: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)  # the mined patterns' tags

    def rate(self, what: str, split: str) -> tuple[int, int]:
        return self.counts[f"{what}:{split}"], self.counts[f"{what}-n:{split}"]

    def lines(self) -> list[str]:
        out = [f"embedder {self.embedder}"]
        for split in SPLITS:
            parts = []
            for what, label in (
                ("solution", "solution_search top-1"),
                ("pattern", "pattern_detect top-1"),
                ("unrelated-solution", "unrelated -> a solution"),
                ("unrelated-pattern", "unrelated -> a pattern"),
                ("unrelated-mined", "unrelated -> a mined pattern"),
            ):
                hit, n = self.rate(what, split)
                parts.append(f"{label} {hit}/{n}")
            out.append(f"  {split:8s} " + "; ".join(parts))
        out.append(f"  mined tags ({len(self.tags)}): {', '.join(self.tags)}")
        return out


def _count(report: Report, what: str, split: str, hit: bool) -> None:
    for s in (split, "all"):
        report.counts[f"{what}:{s}"] += int(hit)
        report.counts[f"{what}-n:{s}"] += 1


def build_embedder(name: str):
    if name == "hashing":
        from capsule.embedders.hashing import HashingEmbedder

        return HashingEmbedder()
    from capsule.embedders.minilm import MiniLMEmbedder

    return MiniLMEmbedder()


def run(embedder, data: dict | None = None) -> Report:
    from capsule.learning import LearningService
    from capsule.store.sqlite import SQLiteStore
    from capsule.store.sqlite_learning import SQLiteLearningStore

    data = data or json.loads(SET.read_text())
    report = Report(embedder.model_id)
    with tempfile.TemporaryDirectory() as folder:
        store = SQLiteStore(Path(folder) / "eval.db")
        store.migrate()
        learning_store = SQLiteLearningStore(store)
        learning_store.migrate()
        learning = LearningService(learning_store, store, embedder)
        ids, tags = {}, {}
        for item in data["fixpacks"]:
            solution = learning.create_solution("eval", item["fixpack"]).solution
            ids[solution.id], tags[item["id"]] = item["id"], item["pattern_tag"]
            learning.pattern_link(
                "eval",
                {
                    "tag": item["pattern_tag"],
                    "category": item["fixpack"]["category"],
                    "solution_id": solution.id,
                    "success": True,
                },
            )
        for case in data["errors"]:
            found = learning.solution_search("eval", {"error": case["error"]}).results
            top = ids[found[0].solution.id] if found else None
            _count(report, "solution", case["split"], top == case["expect"])
            if top != case["expect"]:
                report.misses.append(f"solution: expected {case['expect']}, got {top}: {case['error'][:70]!r}")
            patterns = learning.pattern_detect("eval", {"error": case["error"]}).results
            tag = patterns[0].pattern.tag if patterns else None
            _count(report, "pattern", case["split"], tag == tags[case["expect"]])
            if tag != tags[case["expect"]]:
                report.misses.append(f"pattern: expected {tags[case['expect']]}, got {tag}: {case['error'][:70]!r}")
        for case in data["unrelated"]:
            found = learning.solution_search("eval", {"error": case["error"]}).results
            patterns = learning.pattern_detect("eval", {"error": case["error"]}).results
            _count(report, "unrelated-solution", case["split"], bool(found))
            _count(report, "unrelated-pattern", case["split"], bool(patterns))
            if found or patterns:
                what = [ids[found[0].solution.id]] if found else []
                what += [patterns[0].pattern.tag] if patterns else []
                report.misses.append(f"unrelated returned {', '.join(what)}: {case['error'][:70]!r}")
        _mine(store, embedder, learning, data, report)
        store.close()
    return report


def _mine(store, embedder, learning, data: dict, report: Report) -> None:
    from capsule.service.memory_service import MemoryService

    memories = MemoryService(store, embedder)
    for i, case in enumerate(data["errors"]):
        memories.store_memory(
            "mined",
            {"project": f"p{i % 3}", "content": case["error"], "meta": {"type": "error", "outcome_status": "failure"}},
        )
    mined = learning.detect_patterns("mined", {"min_occurrences": 2, "k": 100}).patterns
    report.tags = sorted(p.tag for p in mined)
    for case in data["unrelated"]:
        found = learning.pattern_detect("mined", {"error": case["error"]}).results
        _count(report, "unrelated-mined", case["split"], bool(found))
        if found:
            report.misses.append(f"unrelated returned mined {found[0].pattern.tag}: {case['error'][:70]!r}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embedder", choices=("hashing", "minilm"), default="hashing")
    parser.add_argument("--misses", action="store_true", help="list every wrong answer")
    args = parser.parse_args(argv)
    report = run(build_embedder(args.embedder))
    print("\n".join(report.lines()))
    if args.misses:
        print("\n".join("  " + m for m in report.misses))
    return 0


if __name__ == "__main__":
    sys.exit(main())
