"""The sample of LongMemEval user turns labelled in ``longmemeval_fact_labels.json``, and the
annotator's view of it.

The sample: QUESTIONS questions drawn at random (seed SEED) from each half of the file (even
positions 0, 2, 4, ... = the half the user-fact model was trained on; odd positions = held out),
and every user turn of their haystack sessions. The view prints each turn's reference and its
text only (no question, no answer, no ``has_answer``, no score), for labelling by
``FACT_RUBRIC.md``. Nothing of the data is written into the project.

Run: .venv/bin/python tests/capture/fact_label_sample.py [even|odd] [/work/shared/data/longmemeval-dev.json]
"""

import json
import random
import sys
from pathlib import Path

DATA = Path("/work/shared/data/longmemeval-dev.json")
SEED, QUESTIONS = 18, 30


def sampled_positions(count: int, half: str) -> list[int]:
    """Positions in the file of the questions sampled from one half, in file order."""
    start = 0 if half == "even" else 1
    return sorted(random.Random(f"{SEED}-{half}").sample(range(start, count, 2), QUESTIONS))


def user_turns(question: dict):
    """(session index, turn index, turn) of a question's user turns."""
    for s, session in enumerate(question["haystack_sessions"]):
        for t, turn in enumerate(session):
            if turn["role"] == "user":
                yield s, t, turn


def main(half: str, path: Path) -> None:
    questions = json.loads(path.read_text("utf-8"))
    for position in sampled_positions(len(questions), half):
        question = questions[position]
        for s, t, turn in user_turns(question):
            print(f"### {question['question_id']} {s} {t}\n{turn['content']}\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "even", Path(sys.argv[2]) if len(sys.argv) > 2 else DATA)
