"""Precision and recall of the detector per kind on the corpus: ``python -m tests.guard.evaluate``."""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from capsule.guard.detect import KINDS, detect

from .corpus import FALSE_POSITIVES, TRUE_POSITIVES
from .labelled import labelled_cases

Detector = Callable[[str], list[tuple[str, int, int]]]


def ours(text: str) -> list[tuple[str, int, int]]:
    return [(f.kind, f.start, f.end) for f in detect(text)]


def expected(text: str, labels: list[tuple[str, str]]) -> set[tuple[str, int, int]]:
    spans = set()
    for kind, value in labels:
        start = text.index(value)
        spans.add((kind, start, start + len(value)))
    return spans


def corpus_cases() -> list[tuple[str, list[tuple[str, str]]]]:
    return list(TRUE_POSITIVES) + [(text, []) for text in FALSE_POSITIVES]


def score(
    detector: Detector = ours, *, by_text: bool = False, cases: list | None = None
) -> dict[str, dict[str, float]]:
    """Per kind: true positives, false positives, false negatives, precision, recall; exact spans,
    or (``by_text``) whether a text holding that kind was found to (for a detector that reports
    lines, not spans)."""
    tp, fp, fn = Counter(), Counter(), Counter()
    cases = corpus_cases() if cases is None else cases
    for text, labels in cases:
        want, got = expected(text, labels), set(detector(text))
        if by_text:
            want, got = {(k, 0, 0) for k, *_ in want}, {(k, 0, 0) for k, *_ in got}
        for kind, *_ in got & want:
            tp[kind] += 1
        for kind, *_ in got - want:
            fp[kind] += 1
        for kind, *_ in want - got:
            fn[kind] += 1
    table = {}
    for kind in [*KINDS, *sorted(set(fp) - set(KINDS))]:
        if not (tp[kind] or fp[kind] or fn[kind]):
            continue
        t, f, n = tp[kind], fp[kind], fn[kind]
        table[kind] = {
            "tp": t,
            "fp": f,
            "fn": n,
            "precision": t / (t + f) if t + f else 1.0,
            "recall": t / (t + n) if t + n else 1.0,
        }
    return table


def render(table: dict[str, dict[str, float]]) -> str:
    lines = ["| kind | TP | FP | FN | precision | recall |", "|---|---|---|---|---|---|"]
    for kind, row in table.items():
        lines.append(
            f"| {kind} | {row['tp']} | {row['fp']} | {row['fn']} | {row['precision']:.2f} | {row['recall']:.2f} |"
        )
    return "\n".join(lines)


def recorded(path: str) -> Detector:
    """Findings another detector wrote, one list per corpus text in corpus order
    (detect_secrets_baseline.py); only kinds it can find are scored."""
    texts = [t for t, _ in TRUE_POSITIVES] + list(FALSE_POSITIVES)
    by_text = dict(zip(texts, json.loads(Path(path).read_text())))
    return lambda text: [tuple(f) for f in by_text[text]]


if __name__ == "__main__":
    if "--labelled" in sys.argv:  # the secrets set of issue 37 (tests/guard/labelled.py)
        cases = labelled_cases()
        print(
            f"{sum(bool(labels) for _, labels in cases)} texts with secrets, {sum(not labels for _, labels in cases)} look-alikes"
        )
        print(render(score(cases=cases)))
        sys.exit(0)
    print(f"{len(TRUE_POSITIVES)} texts with findings, {len(FALSE_POSITIVES)} hard negatives")
    other = [a for a in sys.argv[1:] if not a.startswith("--")]
    print(render(score(recorded(other[0]) if other else ours, by_text="--by-text" in sys.argv)))
