"""``capsule eval capture DATASET``: precision and recall of capture's candidates against
labelled events (Capsule's own labelled set, or a LongMemEval file read in place, whose
``has_answer`` turns are the labelled facts). Reports each split (own set: dev, held_out;
LongMemEval: even, odd questions) and all."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from capsule import InvalidInput
from capsule.capture.evaluation import evaluate, labelled_events

from . import render


def run(path: Path, threshold: float | None = None) -> dict:
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise InvalidInput(f"cannot read {path} as JSON: {exc}", field="dataset") from exc
    name, events = labelled_events(data)
    return {"dataset": name, "path": str(path), "threshold": threshold, "splits": evaluate(events, threshold=threshold)}


def text(report: dict) -> str:
    rows = [(split, m["events"], m["positives"], m["proposed"], f"{m['precision']:.3f}", f"{m['recall']:.3f}",
             f"{m['f1']:.3f}") for split, m in report["splits"].items()]
    return "\n".join([f"capture on {report['dataset']} ({report['path']})",
                      render.table(["split", "events", "labelled", "proposed", "precision", "recall", "f1"], rows)])


def cmd_eval_capture(args: argparse.Namespace) -> None:
    report = run(Path(args.dataset), args.threshold)
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2) + "\n", "utf-8")
    print(json.dumps(report, indent=2) if args.json else text(report))


def register(sub) -> None:
    q = sub.add_parser("capture", help="capture: precision and recall of candidates against labelled events")
    q.add_argument("dataset", help="tests/capture/coding_sessions.json, or a LongMemEval JSON file (read in place)")
    q.add_argument("--threshold", type=float, help="count only candidates scoring at least this (default: every "
                                                   "proposed candidate)")
    q.add_argument("--out", help="also write the report as JSON here")
    q.add_argument("--json", action="store_true")
    q.set_defaults(run=cmd_eval_capture)
