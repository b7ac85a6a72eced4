"""Microseconds of CPU per event that capture's scorer spends, per role, on a labelled set.

Run: .venv/bin/python tests/capture/bench_capture.py DATASET [--repeat N]
(DATASET: tests/capture/coding_sessions.json or a LongMemEval file, read in place). CPU time
(process_time), so other processes on a shared machine inflate it less than wall-clock time.
"""

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "layers"))

from capsule.capture.evaluation import labelled_events
from capsule.capture.scoring import score_event


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("dataset")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    _, events = labelled_events(json.loads(Path(args.dataset).read_text("utf-8")))
    score_event(events[0].event)  # the model's weights and the patterns load outside the timing
    for role in sorted({e.event.role for e in events}) + ["all"]:
        chosen = [e.event for e in events if role in ("all", e.event.role)]
        started = time.process_time()
        for _ in range(args.repeat):
            for event in chosen:
                score_event(event)
        spent = (time.process_time() - started) / (len(chosen) * args.repeat) * 1e6
        print(f"{role:10} {len(chosen):6} events  {spent:8.0f} microseconds per event")


if __name__ == "__main__":
    main()
