"""Calibrating the meaning and keyword scores on the query's own candidates (capsule.fusion)."""

from __future__ import annotations

import numpy as np
import pytest

from capsule.fusion import calibrate


def test_plain_leaves_the_scores_as_they_are():
    values = np.array([0.2, 0.5, 0.9])
    assert calibrate(values, "plain") is values


def test_meanmax_puts_the_average_at_zero_and_the_best_at_one():
    out = calibrate(np.array([0.1, 0.2, 0.3, 0.6]), "meanmax")
    assert out.max() == pytest.approx(1.0)
    assert out[0] == 0.0 and out[1] == 0.0  # below the mean (0.3): clipped
    assert out[2] == pytest.approx(0.0)


def test_z_weighs_a_signal_whose_best_stands_out_more():
    flat = calibrate(np.array([0.50, 0.52, 0.54, 0.56, 0.58]), "z")
    peaked = calibrate(np.array([0.10, 0.10, 0.10, 0.10, 0.90]), "z")
    assert peaked.max() > flat.max()  # one clear match beats a spread of near-equals


def test_constant_scores_carry_nothing():
    assert not calibrate(np.full(4, 0.4), "z").any()
    assert not calibrate(np.full(4, 0.4), "meanmax").any()


def test_an_unknown_mode_is_refused_with_the_known_ones():
    with pytest.raises(ValueError, match="plain, meanmax, z"):
        calibrate(np.array([0.1, 0.2]), "minmax")
