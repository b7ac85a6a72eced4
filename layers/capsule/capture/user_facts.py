"""How likely a user turn states the user's own facts: a logistic model over
:mod:`.features`, its weights read from ``user_facts.json`` (trained by
``tests/capture/train_user_facts.py``, which records the data and the split it used).

Pure Python at run time (a dot product of 22 numbers), so scoring stays cheap and loads no
numpy. :func:`fact_score` maps the probability onto the scorer's scale so that the model's
operating point (``threshold`` in the JSON, chosen on the training half) lands on
:data:`~capsule.capture.scoring.PROPOSE_AT`-like 0.5 and a probability of 1 on 1.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path

from .features import NAMES, user_turn_features

WEIGHTS = Path(__file__).with_name("user_facts.json")
OPERATING_POINT = 0.5  # where the model's threshold lands on the scorer's 0-1 scale


@lru_cache(maxsize=1)
def model() -> dict:
    data = json.loads(WEIGHTS.read_text("utf-8"))
    if data["features"] != list(NAMES):  # the weights belong to another version of the features
        raise RuntimeError(f"{WEIGHTS.name} was trained on other features; run tests/capture/train_user_facts.py")
    return data


def probability(text: str) -> float:
    weights = model()["weights"]
    z = sum(w * x for w, x in zip(weights, user_turn_features(text)))
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


def rescale(p: float, threshold: float) -> float:
    """Piecewise-linear and increasing: 0 -> 0, ``threshold`` -> 0.5, 1 -> 1."""
    if p <= threshold:
        return OPERATING_POINT * p / threshold
    return OPERATING_POINT + (1 - OPERATING_POINT) * (p - threshold) / (1 - threshold)


def fact_score(text: str) -> float:
    return rescale(probability(text), model()["threshold"])
