"""Calibration: the mean billed/counted ratio over the last 50 reports, per model (T1)."""

from __future__ import annotations

import pytest

from ctxlayer.core.calibration import Calibration


def test_bias_is_the_mean_ratio_per_model():
    cal = Calibration()
    assert cal.bias("gpt-4o") == 1.0
    assert cal.record("gpt-4o", 110, 100) == pytest.approx(1.1)
    assert cal.record("gpt-4o", 130, 100) == pytest.approx(1.2)
    assert cal.bias("claude") == 1.0  # per model
    assert cal.error_band("gpt-4o") == pytest.approx(0.1414, abs=1e-3)


def test_window_keeps_the_last_50():
    cal = Calibration()
    for _ in range(50):
        cal.record("m", 200, 100)
    for _ in range(50):
        cal.record("m", 100, 100)
    assert cal.bias("m") == pytest.approx(1.0)
    assert len(cal.ratios["m"]) == 50


def test_effective_limit_shrinks_only_when_we_under_count():
    cal = Calibration()
    cal.record("m", 125, 100)
    assert cal.effective_limit("m", 1000) == 800
    cal2 = Calibration()
    cal2.record("m", 80, 100)
    assert cal2.effective_limit("m", 1000) == 1000


def test_zero_counts_are_ignored():
    cal = Calibration()
    assert cal.record("m", 100, 0) == 1.0
    assert "m" not in cal.ratios or not cal.ratios["m"]
