"""``capsule eval capture DATASET``: precision and recall of capture's candidates against
labelled events (Capsule's own labelled set, or a LongMemEval file read in place, whose
``has_answer`` turns are the labelled facts). Reports each split (own set: dev, held_out;
LongMemEval: even, odd questions) and all. With ``--labels`` (hand labels of a sample of
LongMemEval's user turns, :mod:`capsule.capture.fact_labels`) also precision and recall on the
sample against those fact labels, beside precision and recall against ``has_answer`` on it."""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from pathlib import Path

from capsule import InvalidInput
from capsule.capture import fact_labels
from capsule.capture.evaluation import CURVE, curve, evaluate, labelled_events, scores

from . import render


def _json(path: Path, field: str) -> tuple[object, bytes]:
    try:
        raw = path.read_bytes()
        return json.loads(raw), raw
    except (OSError, ValueError) as exc:
        raise InvalidInput(f"cannot read {path} as JSON: {exc}", field=field) from exc


def _fact_report(
    data: object, raw: bytes, labels: Path, threshold: float | None, floor: float, with_curve: bool
) -> dict:
    """Precision / recall on the hand-labelled sample, against its fact labels and against has_answer."""
    if not isinstance(data, list):
        raise InvalidInput("--labels applies to a LongMemEval file", field="labels")
    parsed = fact_labels.parse(_json(labels, "labels")[0], dataset_sha256=hashlib.sha256(raw).hexdigest())
    sample = fact_labels.sample(data, parsed)
    scored = scores(sample.facts, floor)
    report = {
        "path": str(labels),
        "agreement": sample.agreement,
        "facts": evaluate(sample.facts, threshold=threshold, scored=scored),
        "has_answer": evaluate(sample.has_answer, threshold=threshold, scored=scored),
    }
    if with_curve:
        report["curve"] = curve(sample.facts, scored=scored)
    return report


def run(path: Path, threshold: float | None = None, with_curve: bool = False, labels: Path | None = None) -> dict:
    data, raw = _json(path, "dataset")
    name, events = labelled_events(data)
    floor = min(CURVE) if threshold is None else min(min(CURVE), threshold)
    scores(events[:1])  # loads the model's weights and compiles the patterns outside the timing
    started = time.process_time()  # CPU time: other processes on the machine count less
    scored = scores(events, floor)
    per_event = (time.process_time() - started) / max(1, len(events)) * 1e6
    report = {
        "dataset": name,
        "path": str(path),
        "threshold": threshold,
        "splits": evaluate(events, threshold=threshold, scored=scored),
        "microseconds_per_event": round(per_event, 1),
    }
    if with_curve:
        report["curve"] = curve(events, scored=scored)
    if labels is not None:
        report["fact_labels"] = _fact_report(data, raw, labels, threshold, floor, with_curve)
    return report


def _rows(splits: dict) -> list[tuple]:
    return [
        (
            split,
            m["events"],
            m["positives"],
            m["proposed"],
            f"{m['precision']:.3f}",
            f"{m['recall']:.3f}",
            f"{m['f1']:.3f}",
        )
        for split, m in splits.items()
    ]


def _fact_rows(facts: dict) -> list[tuple]:
    rows = []
    for split in facts["facts"]:
        f, h = facts["facts"][split], facts["has_answer"][split]
        rows.append(
            (
                split,
                f["events"],
                f["positives"],
                f["proposed"],
                f"{f['precision']:.3f}",
                f"{f['recall']:.3f}",
                h["positives"],
                f"{h['precision']:.3f}",
                f"{h['recall']:.3f}",
            )
        )
    return rows


def _fact_text(facts: dict) -> list[str]:
    agreement = ", ".join(
        f"{split} {a['has_answer_labelled_fact']} of {a['has_answer']}"
        for split, a in sorted(facts["agreement"].items())
    )
    lines = [
        f"hand-labelled user turns ({facts['path']}); a fact = labelled a fact or has_answer; "
        f"has_answer turns the annotator labelled a fact: {agreement}",
        render.table(
            [
                "split",
                "turns",
                "facts",
                "proposed",
                "fact precision",
                "fact recall",
                "has_answer",
                "has_answer precision",
                "has_answer recall",
            ],
            _fact_rows(facts),
        ),
    ]
    if "curve" in facts:
        rows = [(f"{point['threshold']:.2f}", *row) for point in facts["curve"] for row in _rows(point["splits"])]
        lines += [
            "fact precision/recall on the labelled turns by threshold",
            render.table(["threshold", "split", "turns", "facts", "proposed", "precision", "recall", "f1"], rows),
        ]
    return lines


def text(report: dict) -> str:
    lines = [
        f"capture on {report['dataset']} ({report['path']})",
        render.table(["split", "events", "labelled", "proposed", "precision", "recall", "f1"], _rows(report["splits"])),
        f"{report['microseconds_per_event']:.0f} microseconds of CPU per event (scoring only)",
    ]
    if "curve" in report:
        rows = [(f"{point['threshold']:.2f}", *row) for point in report["curve"] for row in _rows(point["splits"])]
        lines += [
            "precision/recall by threshold (a candidate counts when its score is at least the threshold)",
            render.table(["threshold", "split", "events", "labelled", "proposed", "precision", "recall", "f1"], rows),
        ]
    if "fact_labels" in report:
        lines += _fact_text(report["fact_labels"])
    return "\n".join(lines)


def cmd_eval_capture(args: argparse.Namespace) -> None:
    report = run(Path(args.dataset), args.threshold, args.curve, Path(args.labels) if args.labels else None)
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2) + "\n", "utf-8")
    print(json.dumps(report, indent=2) if args.json else text(report))


def register(sub) -> None:
    q = sub.add_parser("capture", help="capture: precision and recall of candidates against labelled events")
    q.add_argument("dataset", help="tests/capture/coding_sessions.json, or a LongMemEval JSON file (read in place)")
    q.add_argument(
        "--threshold",
        type=float,
        help="count only candidates scoring at least this (default: every proposed candidate)",
    )
    q.add_argument(
        "--labels",
        help="LongMemEval only: hand labels of a sample of its user turns "
        "(tests/capture/longmemeval_fact_labels.json): also precision / recall "
        "against them",
    )
    q.add_argument("--curve", action="store_true", help="also the precision/recall at several thresholds")
    q.add_argument("--out", help="also write the report as JSON here")
    q.add_argument("--json", action="store_true")
    q.set_defaults(run=cmd_eval_capture)
