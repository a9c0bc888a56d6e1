"""Calibration: a robust billed/counted bias per model that no single report can break."""

from __future__ import annotations

import math

import pytest

from ctxlayer.core.calibration import REFUSED_STEP, Calibration

# (reports as (billed, counted), expected bias)
CASES = [
    ([], 1.0),
    ([(1100, 1000)], 1.1),
    ([(1100, 1000), (1300, 1000)], 1.2),
    ([(1100, 1000), (1300, 1000), (1200, 1000)], 1.2),  # the median, not the mean
    # one report of a whole conversation against a tiny assembly: ignored, not a bias of 354
    ([(50_000, 141)], 1.0),
    # an absurd ratio on a real count is clamped, and correct reports outvote it
    ([(50_000, 1000)] + [(1050, 1000)] * 5, 1.05),
    ([(50_000, 1000)], 2.0),
    ([(100, 1000)], 0.5),
    ([(1100, 1000), (0, 1000), (1100, 0)], 1.1),  # zero on either side ignored
]


@pytest.mark.parametrize(("reports", "bias"), CASES)
def test_bias(reports, bias):
    cal = Calibration()
    for billed, counted in reports:
        cal.record("m", billed, counted)
    assert cal.bias("m") == pytest.approx(bias)


def test_the_bias_is_per_model():
    cal = Calibration()
    cal.record("gpt-4o", 1300, 1000)
    assert cal.bias("claude") == 1.0 and cal.bias("gpt-4o") == pytest.approx(1.3)


def test_one_wrong_report_after_correct_ones_leaves_the_limit_usable():
    cal = Calibration()
    for _ in range(5):
        cal.record("m", 1020, 1000)
    cal.record("m", 50_000, 300)
    assert cal.effective_limit("m", 100_000) == int(100_000 / 1.02)


def test_window_keeps_the_last_reports():
    cal = Calibration(window=50)
    for _ in range(50):
        cal.record("m", 2000, 1000)
    for _ in range(50):
        cal.record("m", 1000, 1000)
    assert cal.bias("m") == pytest.approx(1.0)
    assert len(cal.ratios["m"]) == 50


def test_effective_limit_shrinks_only_when_we_under_count():
    cal = Calibration()
    cal.record("m", 1250, 1000)
    assert cal.effective_limit("m", 1000) == 800
    cal2 = Calibration()
    cal2.record("m", 800, 1000)
    assert cal2.effective_limit("m", 1000) == 1000


def test_error_band_is_the_model_table_prior_until_reports_say_more():
    cal = Calibration()
    assert cal.error_band("m", prior=0.15) == 0.15
    cal.record("m", 1000, 1000)
    assert cal.error_band("m", prior=0.15) == 0.15  # one report says nothing of the spread
    cal.record("m", 1200, 1000)
    assert cal.error_band("m", prior=0.0) == pytest.approx(0.1414, abs=1e-3)
    assert cal.error_band("m", prior=0.9) == 0.9
    cal.record("m", 1900, 1000)  # an outlier does not widen the band
    cal.record("m", 1100, 1000)
    assert cal.error_band("m", prior=0.0) == pytest.approx(0.1, abs=1e-3)


def test_a_refusal_outvotes_the_reports_before_it():
    """A provider's refusal states its count of the very prompt the median fitted: the chat's
    next prompts are fitted by it, not by twenty earlier reports; later reports count again,
    and a refusal at or below the bias (a count the provider did not state, taken from the
    budget the bias made) is taken REFUSED_STEP above it: the prompt was refused all the
    same."""
    c = Calibration()
    for _ in range(20):
        c.record("m", 1000, 1000)
    assert c.record("m", 1000, 1000) == 1.0
    assert c.record("m", 1600, 1000, refused=True) == 1.6
    assert c.effective_limit("m", 16_000) == 10_000
    assert c.record("m", 1400, 1000) == pytest.approx(1.5)  # a median of what came after
    assert c.record("m", 1000, 1000, refused=True) == pytest.approx(1.5 * REFUSED_STEP)
    assert len(c.ratios["m"]) == 1
    # the bound of a report (another prompt's, maybe) is not a refusal's, which is exact
    assert c.record("m", 2600, 1000, refused=True) == 2.6
    assert c.record("m", 9000, 1000, refused=True) == 8.0  # an absurd count is cut


def test_refusals_in_a_row_shrink_the_budget_step_by_step():
    """A provider that counts 2.2 times ours and refuses without a count: each refusal's count
    is taken from the budget the bias made, UNSTATED_OVER (1.15) above it, so its ratio is the
    bias's. Each refusal still takes the bias REFUSED_STEP further, until the budget fits
    (before, the bias stayed at 1.15 and every prompt was refused)."""
    c = Calibration()
    nominal, provider = 10_000, 2.2
    refused = 0
    while (limit := c.effective_limit("m", nominal)) * provider > nominal:
        c.record("m", math.ceil(limit * 1.15), limit, refused=True)
        refused += 1
        assert refused < 10
    assert refused == 6 and c.bias("m") == pytest.approx(REFUSED_STEP ** 6)
