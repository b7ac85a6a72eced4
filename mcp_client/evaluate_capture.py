"""``capsule eval capture DATASET``: precision and recall of capture's candidates against
labelled events (Capsule's own labelled set, or a LongMemEval file read in place, whose
``has_answer`` turns are the labelled facts). Reports each split (own set: dev, held_out;
LongMemEval: even, odd questions) and all."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from capsule import InvalidInput
from capsule.capture.evaluation import CURVE, curve, evaluate, labelled_events, scores

from . import render


def run(path: Path, threshold: float | None = None, with_curve: bool = False) -> dict:
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise InvalidInput(f"cannot read {path} as JSON: {exc}", field="dataset") from exc
    name, events = labelled_events(data)
    floor = min(CURVE) if threshold is None else min(min(CURVE), threshold)
    scores(events[:1])  # loads the model's weights and compiles the patterns outside the timing
    started = time.process_time()  # CPU time: other processes on the machine count less
    scored = scores(events, floor)
    per_event = (time.process_time() - started) / max(1, len(events)) * 1e6
    report = {"dataset": name, "path": str(path), "threshold": threshold,
              "splits": evaluate(events, threshold=threshold, scored=scored),
              "microseconds_per_event": round(per_event, 1)}
    if with_curve:
        report["curve"] = curve(events, scored=scored)
    return report


def _rows(splits: dict) -> list[tuple]:
    return [(split, m["events"], m["positives"], m["proposed"], f"{m['precision']:.3f}", f"{m['recall']:.3f}",
             f"{m['f1']:.3f}") for split, m in splits.items()]


def text(report: dict) -> str:
    lines = [f"capture on {report['dataset']} ({report['path']})",
             render.table(["split", "events", "labelled", "proposed", "precision", "recall", "f1"],
                          _rows(report["splits"])),
             f"{report['microseconds_per_event']:.0f} microseconds of CPU per event (scoring only)"]
    if "curve" in report:
        rows = [(f"{point['threshold']:.2f}", *row) for point in report["curve"] for row in _rows(point["splits"])]
        lines += ["precision/recall by threshold (a candidate counts when its score is at least the threshold)",
                  render.table(["threshold", "split", "events", "labelled", "proposed", "precision", "recall", "f1"],
                               rows)]
    return "\n".join(lines)


def cmd_eval_capture(args: argparse.Namespace) -> None:
    report = run(Path(args.dataset), args.threshold, args.curve)
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2) + "\n", "utf-8")
    print(json.dumps(report, indent=2) if args.json else text(report))


def register(sub) -> None:
    q = sub.add_parser("capture", help="capture: precision and recall of candidates against labelled events")
    q.add_argument("dataset", help="tests/capture/coding_sessions.json, or a LongMemEval JSON file (read in place)")
    q.add_argument("--threshold", type=float, help="count only candidates scoring at least this (default: every "
                                                   "proposed candidate)")
    q.add_argument("--curve", action="store_true", help="also the precision/recall at several thresholds")
    q.add_argument("--out", help="also write the report as JSON here")
    q.add_argument("--json", action="store_true")
    q.set_defaults(run=cmd_eval_capture)
