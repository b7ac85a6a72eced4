"""Putting the meaning and keyword scores of one query on a common scale before they are summed.

Pure functions over the scores of the rows a search re-scores (its candidates). The plain
sum adds the cosine as it is and BM25 divided by its best: a query whose cosines all sit
high (a topic every memory touches) or whose keyword scores are all alike then lets that
signal rank by noise. Calibrating each signal on the query's own distribution over the
candidates says how far a row stands out from the rest, whatever the model or corpus:

* ``plain``: as is (the cosine; BM25 over the best);
* ``meanmax``: (s - mean) / (best - mean), clipped at 0: the average candidate 0, the best 1;
* ``z``: (s - mean) / std / ``z_scale``, clipped at 0: a row ``z_scale`` deviations above
  the mean counts as the best match does in ``plain``; a signal whose best stands out more
  weighs more in this query.
"""

from __future__ import annotations

import numpy as np

MODES = ("plain", "meanmax", "z")


def calibrate(values: np.ndarray, mode: str, z_scale: float = 3.0) -> np.ndarray:
    """``values`` (one signal over the candidates) on the scale ``mode`` names."""
    if mode == "plain" or values.size < 2:
        return values
    mean = float(values.mean())
    if mode == "meanmax":
        span = float(values.max()) - mean
        return np.clip((values - mean) / span, 0.0, None) if span > 0 else np.zeros_like(values)
    if mode == "z":
        std = float(values.std())
        return np.clip((values - mean) / (std * z_scale), 0.0, None) if std > 0 else np.zeros_like(values)
    raise ValueError(f"unknown fusion {mode!r}; one of {', '.join(MODES)}")
