"""Trains layers/capsule/capture/user_facts.json: a logistic model of "this user turn states
the user's own facts" over the hand-built features of capsule.capture.features.

Data: LongMemEval's user turns, labelled by ``has_answer``, of the questions at EVEN positions
(0, 2, 4, ...) of the file only; the odd questions stay held out for ``capsule eval capture``.
The file is read in place (never copied into the project); its sha256 is recorded.
numpy only: batch gradient descent on the L2-regularised log loss.
The operating point (``threshold``) is the probability at which recall of the even half's
labelled turns first reaches TARGET_RECALL.

Run: .venv/bin/python tests/capture/train_user_facts.py [/work/shared/data/longmemeval-dev.json]
"""

import hashlib
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "layers"))

from capsule.capture.features import NAMES, user_turn_features

DATA = Path("/work/shared/data/longmemeval-dev.json")
OUT = ROOT / "layers" / "capsule" / "capture" / "user_facts.json"
L2, STEPS, RATE = 1.0, 4000, 0.5
TARGET_RECALL = 0.75


def even_half(questions: list) -> tuple[np.ndarray, np.ndarray, int]:
    """Features and labels of the even questions' user turns, and all their labelled turns."""
    rows, labels, positives = [], [], 0
    for question in questions[0::2]:
        for session in question["haystack_sessions"]:
            for turn in session:
                positives += bool(turn.get("has_answer"))
                if turn["role"] == "user":
                    rows.append(user_turn_features(turn["content"]))
                    labels.append(float(bool(turn.get("has_answer"))))
    return np.array(rows), np.array(labels), positives


def fit(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    w = np.zeros(x.shape[1])
    for _ in range(STEPS):
        p = 1 / (1 + np.exp(-x @ w))
        w -= RATE * (x.T @ (p - y) + L2 * np.r_[0.0, w[1:]]) / len(y)
    return w


def operating_point(p: np.ndarray, y: np.ndarray, positives: int) -> tuple[float, float, float]:
    """(threshold, precision, recall) where recall of all labelled turns first reaches the target."""
    order = np.argsort(-p)
    hits = np.cumsum(y[order])
    recall, precision = hits / positives, hits / np.arange(1, len(y) + 1)
    at = int(np.argmax(recall >= TARGET_RECALL))
    return float(p[order][at]), float(precision[at]), float(recall[at])


def main(path: Path) -> None:
    raw = path.read_bytes()
    questions = json.loads(raw)
    x, y, positives = even_half(questions)
    w = fit(x, y)
    threshold, precision, recall = operating_point(1 / (1 + np.exp(-x @ w)), y, positives)
    OUT.write_text(json.dumps({
        "model": "logistic regression over capsule.capture.features (user turns only)",
        "features": list(NAMES), "weights": [round(float(v), 4) for v in w], "threshold": round(threshold, 4),
        "trained_on": {"file": path.name, "sha256": hashlib.sha256(raw).hexdigest(),
                       "split": "questions at even positions (0, 2, 4, ...); odd positions held out",
                       "questions": len(questions[0::2]), "user_turns": len(y), "labelled_user_turns": int(y.sum()),
                       "labelled_turns": positives},
        "training": {"l2": L2, "steps": STEPS, "rate": RATE, "target_recall": TARGET_RECALL,
                     "precision_at_threshold": round(precision, 3), "recall_at_threshold": round(recall, 3)},
    }, indent=1) + "\n", "utf-8")
    print(f"wrote {OUT}: threshold {threshold:.3f}, even half precision {precision:.3f} recall {recall:.3f}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else DATA)
