"""The odometers (pure, Gaussian-DP, Renyi, approximate DP) and their maths, by hand."""

import math

import numpy as np
import pytest
from sklearn.datasets import make_classification

from skdp import DPSGDClassifier
from skdp.accounting._rdp import ORDERS, dpsgd_rdp
from skdp.accounting._costs import DPSGDRungCost
from skdp.accounting._dpsgd import composed_mu
from skdp.accounting._filters import (
    CALIBRATION_RTOL,
    LEVEL_RATIO,
    Spend,
    conversion_shift,
    default_delta_max,
    level_ladder,
    rdp_budget,
    rdp_order_epsilon,
    renyi_default_delta_max,
    renyi_order,
)
from skdp.accounting._odometers import (
    ODOMETER_LEVEL_RATIO,
    ApproxDPOdometer,
    GaussianDPOdometer,
    RenyiOdometer,
)

X, y = make_classification(n_samples=300, n_features=4, n_informative=2, n_redundant=0,
                           random_state=0)
X /= np.linalg.norm(X, axis=1).max()

POISSON = DPSGDRungCost(1e-5, 0.1, 10)          # DPSGDClassifier's defaults
FULL_BATCH = DPSGDRungCost(1e-5, 1.0, 200)


def _cks(rdp, order, delta):
    """Canonne, Kamath & Steinke 2020, Prop. 12, written out (no KL shortcut)."""
    shift = math.log((order - 1) / order) - (math.log(delta) + math.log(order)) / (order - 1)
    return rdp + shift


def _dpsgd_spend(cost, epsilon, noise_factor=1.0):
    """What a DP-SGD fit at ``epsilon`` certifies (its count and steps, in Renyi DP and,
    for full batches, Gaussian DP); ``noise_factor < 1`` plants a fit less noisy than
    charged."""
    z, s = cost.mechanism(epsilon)
    z = z * noise_factor
    return Spend(epsilon, cost.delta, mu=composed_mu(z, cost.n_steps, s),
                 rdp=dpsgd_rdp(z, cost.sample_rate, cost.n_steps, s))


def _pure_spend(epsilon, delta):
    return Spend(epsilon, delta)


# -- the public ladder -------------------------------------------------------------------

def test_level_ladder_by_hand():
    levels = level_ladder(8.0, 0.08)
    # J = 1 + ceil(log(100) / log(1.1)) = 1 + ceil(48.32) = 50
    assert levels.size == 50
    assert levels[-1] == 8.0
    assert levels[0] == pytest.approx(8.0 / 1.1**49, rel=1e-12)
    assert levels[0] <= 0.08 < 8.0 / 1.1**48
    np.testing.assert_allclose(levels[1:] / levels[:-1], 1.1, rtol=1e-12)
    np.testing.assert_array_equal(level_ladder(8.0, 8.0), [8.0])
    np.testing.assert_array_equal(level_ladder(8.0, 20.0), [8.0])
    assert level_ladder(1.21, 1.0).size == 3       # 1.1^2 = 1.21 exactly: no extra level


def test_level_ratio_is_the_gaussian_odometers():
    assert LEVEL_RATIO == ODOMETER_LEVEL_RATIO


# -- the conversion at one order ---------------------------------------------------------

@pytest.mark.parametrize("rdp, order, delta", [(0.5, 12.0, 1e-5), (2.0, 3.4, 2e-7),
                                               (0.01, 256.0, 1e-6)])
def test_one_order_conversion_by_hand(rdp, order, delta):
    epsilon = rdp_order_epsilon(rdp, order, delta)
    assert epsilon == pytest.approx(max(0.0, _cks(rdp, order, delta)), rel=1e-12)
    # tighter than the standard conversion (Mironov 2017, Prop. 3)
    assert epsilon <= rdp + math.log(1 / delta) / (order - 1)
    assert conversion_shift(order, delta) == pytest.approx(_cks(0.0, order, delta), rel=1e-12)
    budget = rdp_budget(epsilon, order, delta)
    assert budget == pytest.approx(rdp, rel=1e-12)
    assert rdp_order_epsilon(budget, order, delta) <= epsilon


# -- DP-SGD rungs: their public cost -----------------------------------------------------

@pytest.mark.parametrize("params", [
    {},                                                   # the defaults: Poisson, RDP
    {"sample_rate": 1.0, "epochs": 50},                   # full batch, PLD (exact GDP)
    {"sample_rate": 0.2, "epochs": 3, "count_noise_std": 30.0},
    {"accountant": "rdp", "sample_rate": 0.05, "epochs": 2.5},
])
def test_rung_cost_is_the_estimators_calibration(params):
    model = DPSGDClassifier(epsilon=0.7, random_state=0, **params).fit(X, y)
    cost = DPSGDRungCost.from_params(model.get_params())
    z, s = cost.mechanism(0.7)
    assert (z, s, cost.n_steps) == (model.noise_multiplier_, model.count_noise_std_,
                                    model.n_steps_)
    np.testing.assert_array_equal(cost.rdp(0.7), model._renyi_spent())


def test_rung_cost_with_a_fixed_noise_multiplier_refuses_what_the_estimator_refuses():
    cost = DPSGDRungCost(1e-5, 0.1, 10, noise_multiplier=2.0)
    assert cost.mechanism(5.0)[0] == 2.0
    from skdp.exceptions import PrivacyBudgetError
    with pytest.raises(PrivacyBudgetError):
        cost.rdp(0.5)
    with pytest.raises(PrivacyBudgetError):
        DPSGDClassifier(epsilon=0.5, noise_multiplier=2.0).fit(X, y)


def _dp_accounting_rdp(z, q, steps, s, order):
    import dp_accounting
    from dp_accounting.rdp import RdpAccountant

    accountant = RdpAccountant(orders=[float(order)])
    step = dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(z))
    accountant.compose(dp_accounting.ComposedDpEvent([
        dp_accounting.GaussianDpEvent(s), dp_accounting.SelfComposedDpEvent(step, steps)]))
    return float(accountant._rdp[0])


def test_one_poisson_rung_rdp_matches_dp_accounting_at_the_filters_orders():
    odometer = RenyiOdometer(8.0, 1e-5, POISSON, 0.08)
    indices = sorted(set(odometer.order_indices.tolist()))
    assert any(ORDERS[i] != round(ORDERS[i]) for i in indices)   # fractional ones too
    for epsilon in (0.1, 1.0, 5.0):
        z, s = POISSON.mechanism(epsilon)
        rdp = POISSON.rdp(epsilon)
        for i in indices:
            expected = _dp_accounting_rdp(z, 0.1, POISSON.n_steps, s, ORDERS[i])
            assert rdp[i] == pytest.approx(expected, rel=1e-9)


# -- the Renyi odometer ------------------------------------------------------------------

def _brute_force_order(cost, epsilon, delta):
    rdp = cost.rdp(epsilon)
    converted = [max(0.0, _cks(r, a, delta)) if a > 1.01 else math.inf
                 for r, a in zip(rdp, ORDERS)]
    return int(np.argmin(converted))


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 8.0])
def test_renyi_order_rule_by_hand(epsilon):
    index = renyi_order(POISSON, epsilon, 2e-7)
    assert index == _brute_force_order(POISSON, epsilon, 2e-7)


def test_renyi_orders_decrease_as_the_levels_rise():
    odometer = RenyiOdometer(8.0, 1e-5, POISSON, 0.08)
    assert np.all(np.diff(odometer.orders) <= 0)
    assert odometer.orders[0] > 50 > 5 > odometer.orders[-1]


def test_renyi_levels_split_and_conversion_by_hand():
    odometer = RenyiOdometer(8.0, 1e-5, POISSON, 0.08)
    ladder = 8.0 * 1.1 ** -np.arange(50.0)[::-1]
    d0 = 1e-5 / 50
    orders = np.array([ORDERS[_brute_force_order(POISSON, e, d0)] for e in ladder])
    keep = np.array([e > _cks(0.0, a, d0) for e, a in zip(ladder, orders)])
    np.testing.assert_array_equal(odometer.orders, orders[keep])
    d = 1e-5 / keep.sum()
    assert odometer.level_delta == pytest.approx(d, rel=1e-15)
    assert odometer.level_delta * odometer.levels.size == pytest.approx(1e-5, rel=1e-12)
    budgets = [e - _cks(0.0, a, d) for e, a in zip(ladder[keep], orders[keep])]
    np.testing.assert_allclose(odometer.budgets, budgets, rtol=1e-12)
    assert np.all(odometer.budgets > 0)
    np.testing.assert_allclose(odometer.levels, ladder[keep], rtol=1e-12)
    assert np.all(odometer.levels <= ladder[keep])
    assert odometer.levels[-1] <= 8.0


def test_single_order_is_the_order_of_the_largest_rung():
    odometer = RenyiOdometer(8.0, 1e-5, POISSON, 0.08, single_order=True)
    expected = ORDERS[_brute_force_order(POISSON, 8.0, 1e-5 / 50)]
    assert set(odometer.orders) == {expected}
    # one low order: no level below its conversion's floor survives
    assert odometer.levels[0] > _cks(0.0, expected, 1e-5 / 50)


def _fits_some_level(odometer, spent, epsilon):
    rdp = POISSON.rdp(epsilon)
    return any(spent[i] + rdp[i] <= b for i, b in zip(odometer.order_indices,
                                                       odometer.budgets))


def test_renyi_filter_refuses_exactly_when_no_level_fits():
    odometer = RenyiOdometer(8.0, 1e-5, POISSON, 0.08)
    for epsilon in (0.5, 2.0):
        odometer.charge(epsilon, _dpsgd_spend(POISSON, epsilon))
    largest = odometer.largest_rung()
    spent = odometer.spent.copy()
    assert 0 < largest < 8.0
    assert _fits_some_level(odometer, spent, largest)
    # the bisection's bracket and the calibration margin: the boundary is within
    # (1 + 1e-4) / (1 - CALIBRATION_RTOL) of what is returned
    above = largest * (1 + 1e-4) / (1 - CALIBRATION_RTOL) * (1 + 1e-6)
    assert not _fits_some_level(odometer, spent, above)
    with pytest.raises(RuntimeError, match="fits no Renyi filter"):
        odometer.charge(above, _dpsgd_spend(POISSON, above))
    np.testing.assert_array_equal(odometer.spent, spent)      # nothing charged
    odometer.charge(largest, _dpsgd_spend(POISSON, largest))
    tail = odometer.largest_rung()
    assert tail < largest and not _fits_some_level(odometer, odometer.spent, 2 * tail + 1e-3)


def test_renyi_filter_is_exhausted_to_zero():
    odometer = RenyiOdometer(2.0, 1e-5, POISSON, 0.5)
    for _ in range(40):
        largest = odometer.largest_rung()
        if largest == 0.0:
            break
        odometer.charge(largest, _dpsgd_spend(POISSON, largest))
    assert odometer.largest_rung() == 0.0
    (epsilon, delta), prior = odometer.guarantee()
    assert epsilon <= 2.0 and prior == (2.0, 1e-5)


def test_renyi_guarantee_by_hand():
    odometer = RenyiOdometer(8.0, 1e-5, POISSON, 0.08)
    assert odometer.guarantee() == ((0.0, 0.0), (8.0, 1e-5))
    rungs = (0.08, 0.16, 0.32, 0.64)
    figures = [odometer.charge(e, _dpsgd_spend(POISSON, e)) for e in rungs]
    spent = sum(POISSON.rdp(e) for e in rungs)
    fits = [spent[i] <= b for i, b in zip(odometer.order_indices, odometer.budgets)]
    j = fits.index(True)
    (post, delta), prior = odometer.guarantee()
    assert (post, delta) == (odometer.levels[j], 1e-5) and prior == (8.0, 1e-5)
    # the claim is the level's filter converted, never below the same rungs'
    # (non-adaptive) composition converted at that order and the level's delta
    alpha = ORDERS[odometer.order_indices[j]]
    assert post >= _cks(spent[odometer.order_indices[j]], alpha, odometer.level_delta)
    # below the basic composition of the rungs' own epsilons (measured 0.98 < 1.2)
    assert post < sum(rungs)
    assert figures[-1]["order"] == alpha
    assert figures[-1]["rdp"] == pytest.approx(POISSON.rdp(0.64)[odometer.order_indices[j]])


def test_renyi_charge_raises_when_the_fit_certifies_more():
    odometer = RenyiOdometer(8.0, 1e-5, POISSON, 0.08)
    with pytest.raises(RuntimeError, match="larger Renyi divergence"):
        odometer.charge(1.0, _dpsgd_spend(POISSON, 1.0, noise_factor=0.9))
    assert odometer.n_rungs == 0 and not odometer.spent.any()


def test_renyi_default_delta_max_is_the_rungs_delta():
    assert renyi_default_delta_max(1e-6, 8.0, 0.08, 8) == 1e-6
    assert RenyiOdometer(8.0, None, POISSON, 0.08).delta_max == 1e-5


def test_renyi_refuses_a_cap_it_cannot_convert():
    with pytest.raises(ValueError, match="too small for a Renyi filter"):
        RenyiOdometer(1e-3, 1e-12, POISSON, 1e-3)


def test_full_batch_renyi_figures_are_no_better_than_the_gaussian_odometers():
    """At sample_rate=1 the rungs are Gaussian: GDP is exact, RDP a relaxation, so the
    Renyi odometer admits less and claims more (keep GDP for full batches)."""
    renyi = RenyiOdometer(8.0, 1e-5, FULL_BATCH, 0.08)
    gdp = GaussianDPOdometer(8.0, 1e-5, rung_delta=1e-5, epsilon_start=0.08)
    for epsilon in (0.08, 0.16, 0.32, 0.64, 1.28, 2.56):
        assert renyi.largest_rung() <= gdp.largest_rung()
        spend = _dpsgd_spend(FULL_BATCH, epsilon)
        renyi.charge(epsilon, spend)
        gdp.charge(epsilon, spend)
        assert renyi.guarantee()[0][0] >= gdp.guarantee()[0][0]
        assert renyi.guarantee()[1] == gdp.guarantee()[1]


# -- the approximate-DP odometer ---------------------------------------------------------

def test_default_delta_max_by_hand():
    # 50 levels (ratio 1.1 from 0.08 to 8), each filter 8 rungs of delta 1e-8
    assert default_delta_max(1e-8, 8.0, 0.08, 8) == pytest.approx(50 * 8 * 1e-8, rel=1e-15)
    assert default_delta_max(1e-8, 8.0, 8.0, 3) == pytest.approx(3e-8, rel=1e-15)
    odometer = ApproxDPOdometer(8.0, None, 1e-8, 0.08, 8)
    assert odometer.delta_max == pytest.approx(4e-6, rel=1e-15)
    assert odometer.levels.size * odometer.filter_delta == pytest.approx(4e-6, rel=1e-15)


def test_a_delta_max_too_small_for_the_rungs_is_refused_before_any_data():
    with pytest.raises(ValueError, match=r"delta_max >= 4e-06"):
        ApproxDPOdometer(8.0, 3.9e-6, 1e-8, 0.08, 8)
    ApproxDPOdometer(8.0, 4e-6, 1e-8, 0.08, 8)          # exactly enough


def test_approx_filter_refuses_exactly_at_the_top_level():
    odometer = ApproxDPOdometer(8.0, None, 1e-8, 0.08, max_rungs=4)
    assert odometer.largest_rung() == 8.0
    for epsilon in (1.0, 2.5):
        odometer.charge(epsilon, _pure_spend(epsilon, 1e-8))
    assert odometer.largest_rung() == 4.5
    with pytest.raises(RuntimeError, match="crosses the top filter"):
        odometer.charge(4.5 * (1 + 1e-9), _pure_spend(4.5, 1e-8))
    odometer.charge(4.5, _pure_spend(4.5, 1e-8))
    assert odometer.largest_rung() == 0.0
    with pytest.raises(RuntimeError, match="crosses the top filter"):
        odometer.charge(1e-3, _pure_spend(1e-3, 1e-8))


def test_approx_filter_stops_after_max_rungs():
    odometer = ApproxDPOdometer(8.0, None, 1e-8, 0.08, max_rungs=2)
    for _ in range(2):
        odometer.charge(0.1, _pure_spend(0.1, 1e-8))
    assert odometer.largest_rung() == 0.0
    with pytest.raises(RuntimeError):
        odometer.charge(0.1, _pure_spend(0.1, 1e-8))


def test_approx_guarantee_by_hand():
    odometer = ApproxDPOdometer(8.0, 1e-5, 1e-8, 0.08, 8)
    assert odometer.guarantee() == ((0.0, 0.0), (8.0, 1e-5))
    for epsilon in (0.08, 0.16, 0.32):
        odometer.charge(epsilon, _pure_spend(epsilon, 1e-8))
    # spent 0.56; levels 8 / 1.1^k: the smallest at or above 0.56 is k = 27
    assert 8.0 / 1.1**28 < 0.56 <= 8.0 / 1.1**27
    (post, delta), prior = odometer.guarantee()
    assert post == pytest.approx(8.0 / 1.1**27, rel=1e-12)
    assert (delta, prior) == (1e-5, (8.0, 1e-5))


def test_approx_guarantee_at_a_level_exactly():
    odometer = ApproxDPOdometer(8.0, None, 1e-8, 0.08, 8)
    level = float(odometer.levels[10])
    odometer.charge(level, _pure_spend(level, 1e-8))
    assert odometer.guarantee()[0][0] == level


@pytest.mark.parametrize("epsilon, delta", [(1.0 + 1e-6, 1e-8), (1.0, 2e-8)])
def test_approx_charge_raises_when_the_fit_certifies_more(epsilon, delta):
    odometer = ApproxDPOdometer(8.0, None, 1e-8, 0.08, 8)
    with pytest.raises(RuntimeError, match="certified more"):
        odometer.charge(1.0, _pure_spend(epsilon, delta))
    assert odometer.n_rungs == 0 and odometer.spent == 0.0


