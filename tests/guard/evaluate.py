"""Precision and recall of the detector per kind on the corpus: ``python -m tests.guard.evaluate``."""

from __future__ import annotations

from collections import Counter
from typing import Callable

from capsule.guard.detect import DETECTORS, detect

from .corpus import FALSE_POSITIVES, TRUE_POSITIVES

Detector = Callable[[str], list[tuple[str, int, int]]]


def ours(text: str) -> list[tuple[str, int, int]]:
    return [(f.kind, f.start, f.end) for f in detect(text)]


def expected(text: str, labels: list[tuple[str, str]]) -> set[tuple[str, int, int]]:
    spans = set()
    for kind, value in labels:
        start = text.index(value)
        spans.add((kind, start, start + len(value)))
    return spans


def score(detector: Detector = ours) -> dict[str, dict[str, float]]:
    """Per kind: true positives, false positives, false negatives, precision, recall (exact spans)."""
    tp, fp, fn = Counter(), Counter(), Counter()
    cases = list(TRUE_POSITIVES) + [(text, []) for text in FALSE_POSITIVES]
    for text, labels in cases:
        want, got = expected(text, labels), set(detector(text))
        for kind, *_ in got & want:
            tp[kind] += 1
        for kind, *_ in got - want:
            fp[kind] += 1
        for kind, *_ in want - got:
            fn[kind] += 1
    table = {}
    for kind in DETECTORS:
        t, f, n = tp[kind], fp[kind], fn[kind]
        table[kind] = {"tp": t, "fp": f, "fn": n,
                       "precision": t / (t + f) if t + f else 1.0, "recall": t / (t + n) if t + n else 1.0}
    return table


def render(table: dict[str, dict[str, float]]) -> str:
    lines = ["| kind | TP | FP | FN | precision | recall |", "|---|---|---|---|---|---|"]
    for kind, row in table.items():
        lines.append(f"| {kind} | {row['tp']} | {row['fp']} | {row['fn']} | {row['precision']:.2f} | {row['recall']:.2f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(f"{len(TRUE_POSITIVES)} texts with findings, {len(FALSE_POSITIVES)} hard negatives")
    print(render(score()))
