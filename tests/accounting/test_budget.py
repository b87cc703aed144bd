"""The budget filters of an analysis (basic sum and Renyi at one order), by hand."""

import math

import numpy as np
import pytest

from skdp import PrivacyBudgetError
from skdp.accounting._budget import RenyiFilter, SumFilter
from skdp.accounting._rdp import ORDERS


def _shift(order, delta):
    """Canonne, Kamath & Steinke 2020, Prop. 12: epsilon = rdp + this."""
    return math.log((order - 1) / order) - (math.log(delta) + math.log(order)) / (order - 1)


def test_sum_filter_admits_up_to_the_budget_and_refuses_beyond():
    budget = SumFilter(1.0, 1e-6)
    budget.charge("a", 0.4, 5e-7)
    budget.charge("b", 0.6, 5e-7)                    # exactly the budget
    assert budget.spent == (pytest.approx(1.0), pytest.approx(1e-6))
    with pytest.raises(PrivacyBudgetError, match="c can cost"):
        budget.charge("c", 1e-6, 0.0)
    with pytest.raises(PrivacyBudgetError):
        SumFilter(1.0, 0.0).charge("d", 0.5, 1e-9)  # no delta to spend
    assert len(budget._charges) == 2                 # refused releases are not charged


def test_sum_filter_settles_ex_post_never_above_the_charge():
    budget = SumFilter(1.0, 0.0)
    first = budget.charge("a", 0.6, 0.0)
    budget.settle(first, 0.25, 0.0)
    assert budget.spent == (0.25, 0.0) and budget.remaining == (0.75, 0.0)
    second = budget.charge("b", 0.75, 0.0)
    budget.settle(second, 2.0, 0.0)                  # a certificate above the charge
    assert budget.spent == (1.0, 0.0)


def test_renyi_filter_order_and_budget_by_hand():
    epsilon, delta = 3.0, 1e-5
    budget = RenyiFilter(epsilon, delta)
    admissible = [(epsilon - _shift(a, delta)) / a for a in ORDERS]
    assert budget.order == ORDERS[int(np.argmax(admissible))]
    assert budget.budget == pytest.approx(epsilon - _shift(budget.order, delta), rel=1e-12)
    assert budget.budget <= epsilon - _shift(budget.order, delta)


def test_renyi_filter_charges_curves_and_pure_releases_and_refuses_beyond():
    budget = RenyiFilter(2.0, 1e-5, order=8.0)
    assert budget.cost(0.1, 0.0) == pytest.approx(min(0.1, 8.0 * 0.1**2 / 2))
    with pytest.raises(ValueError, match="Renyi curve"):
        budget.cost(0.1, 1e-6)
    half = budget.budget / 2
    budget.charge("a", 1.0, 1e-6, half)
    budget.charge("b", 1.0, 1e-6, half)
    assert budget.remaining == pytest.approx(0.0, abs=1e-12)
    assert budget.spent[0] == pytest.approx(2.0, rel=1e-9) and budget.spent[1] == 1e-5
    with pytest.raises(PrivacyBudgetError, match="Renyi DP at order 8"):
        budget.charge("c", 0.01, 0.0, 1e-6)
    with pytest.raises(ValueError, match="no Renyi curve"):
        budget.admit("d", 0.01, 1e-6, None)


@pytest.mark.parametrize("kwargs, match", [
    (dict(epsilon=1.0, delta=0.0), "delta > 0"),
    (dict(epsilon=1.0, delta=1e-5, order=7.25), "one of"),
    (dict(epsilon=1e-3, delta=1e-12, order=1.1), "no Renyi budget"),
])
def test_renyi_filter_refusals(kwargs, match):
    with pytest.raises(ValueError, match=match):
        RenyiFilter(**kwargs)
