"""``ranking.bm25_term``, written with fewer arrays, gives the very floats of the textbook
expression (the keyword stages of a project and of a tenant sum them, and must agree to the
last bit), for float32 and float64 lengths and one ``b`` or one per row."""

from __future__ import annotations

import math

import numpy as np
import pytest

from capsule.search.ranking import bm25_term


@pytest.mark.parametrize("trial", range(60))
def test_the_same_floats_as_the_formula(trial):
    rng = np.random.default_rng(trial)
    m = int(rng.integers(0, 3000))
    tf = rng.integers(1, 9, m).astype(np.float64)
    lengths = rng.integers(1, 400, m).astype(np.float32 if trial % 3 == 0 else np.float64)
    b = float(rng.random()) if trial % 2 else rng.random(m)
    k1, n, df, avg = float(rng.random() * 2), 10_000, max(m, 1), float(rng.random() * 100 + 1)
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
    formula = idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * lengths / avg))
    found = bm25_term(tf, lengths, df, n, avg, k1=k1, b=b)
    assert found.dtype == formula.dtype and np.array_equal(found, formula)
