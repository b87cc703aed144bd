"""Figures for people: significant digits, no float noise, guarantees rounded up."""

import math

import numpy as np
import pytest

from skdp import PrivacyLedger
from skdp.utils import format_figure, format_guarantee


@pytest.mark.parametrize("value, text", [
    (0.1 + 0.2, "0.3"), (1.9999999999988671, "2"), (2 / 3, "0.6667"), (12345.6, "12350"),
    (6037.809724295818, "6038"), (0.0015615083691495795, "0.001562"), (1e-5, "1e-05"),
    (1e20, "1e+20"), (-0.30004, "-0.3"), (0.0, "0"), (-0.0, "0"), (np.inf, "inf"),
    (np.nan, "nan"), (10.0, "10"), (0.0001, "0.0001")])
def test_figures_as_people_read_them(value, text):
    assert format_figure(value) == text


def test_nearest_rounding_is_pythons_significant_digits():
    values = np.random.default_rng(0).lognormal(0.0, 4.0, 500)
    for value in values:
        for digits in (2, 4):
            assert float(format_figure(value, digits)) == float(f"{value:.{digits}g}")


def test_a_bound_is_the_smallest_figure_at_or_above_the_value():
    """Rounded up at the shown digits, after dropping float noise at 1e-12 relative:
    never below the value (beyond that noise), and one unit of the last digit below
    it would be."""
    values = np.random.default_rng(1).lognormal(0.0, 3.0, 500)
    for value in values:
        shown = float(format_figure(value, bound=True))
        unit = 10.0 ** (math.floor(math.log10(shown)) - 3)
        assert shown >= value * (1 - 1e-12)
        assert shown - unit < value * (1 + 1e-9)
    assert format_figure(0.30004, bound=True) == "0.3001"
    assert format_figure(0.1 + 0.2, bound=True) == "0.3"   # float noise is not rounded up
    assert format_figure(9.99999999999672, bound=True) == "10"


def test_guarantee_text():
    assert format_guarantee(0.1 + 0.2) == "0.3"
    assert format_guarantee(0.1 + 0.2, 0.0) == "0.3"
    assert format_guarantee(1.9999999999988671, 1e-5) == "(2, 1e-05)"
    assert format_guarantee(0.30004, 1.0001e-5) == "(0.3001, 1.01e-05)"
    assert format_guarantee(np.inf) == "inf"


def test_a_statement_prints_the_figure_for_people_and_the_field_stays_a_float():
    ledger = PrivacyLedger(1.0)
    ledger.charge(0.1, what="a noisy count")
    ledger.charge(0.2, what="a noisy mean")
    report = ledger.report()
    assert report["spent"]["epsilon"] == 0.1 + 0.2 != 0.3   # the float, unrounded
    assert "together 0.3-differentially private" in report["statement"]
    assert "0.30000000000000004" not in report["statement"]
