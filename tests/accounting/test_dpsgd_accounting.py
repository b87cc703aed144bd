"""DP-SGD accounting and calibration: oracles of dp_sgd_and_accounting.md 6 and 8."""

import math

import numpy as np
import pytest

import dp_accounting
from dp_accounting.pld import PLDAccountant
from dp_accounting.rdp import RdpAccountant
from skdp.accounting import (
    calibrate_noise_multiplier,
    dpsgd_delta,
    dpsgd_epsilon,
    gaussian_epsilon,
    gdp_mu,
    gdp_mu_derivative,
    noise_multiplier_derivative,
)
from skdp.accounting._calibration import search_noise_multiplier
from skdp.exceptions import PrivacyBudgetError

Q_MNIST = 256 / 60000


def _reference(accountant_cls, q, z, T, delta=1e-5):
    """dp-accounting called directly, independently of skdp's wrapper."""
    event = dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(z)), T)
    accountant = accountant_cls()
    accountant.compose(event)
    return accountant.get_epsilon(delta)


# spec 6: (q, z, T, RDP improved conversion, PLD)
ORACLES = [
    (Q_MNIST, 1.1, 234, 0.7402, 0.3065),
    (Q_MNIST, 1.1, 3515, 1.2811, 1.1337),
    (Q_MNIST, 1.1, 14062, 2.59656, 2.3817),
]


@pytest.mark.parametrize("q, z, T, rdp, pld", ORACLES)
def test_rdp_matches_spec_and_dp_accounting(q, z, T, rdp, pld):
    ours = dpsgd_epsilon(z, q, T, 1e-5, accountant="rdp")
    assert ours == pytest.approx(rdp, abs=1e-4)
    assert ours == pytest.approx(_reference(RdpAccountant, q, z, T), rel=1e-12)


@pytest.mark.parametrize("q, z, T, rdp, pld", ORACLES[:2])
def test_pld_matches_spec_and_dp_accounting(q, z, T, rdp, pld):
    ours = dpsgd_epsilon(z, q, T, 1e-5, accountant="pld")
    assert ours == pytest.approx(pld, abs=1e-4)
    assert ours == pytest.approx(_reference(PLDAccountant, q, z, T), rel=1e-12)


@pytest.mark.slow
def test_pld_standard_example_60_epochs():
    q, z, T, _, pld = ORACLES[2]
    assert dpsgd_epsilon(z, q, T, 1e-5) == pytest.approx(pld, abs=1e-4)


def test_abadi_moments_accountant_example():
    # q = 0.01, z = 4, T = 10000: 1.2586 with the standard conversion, 1.0355 improved
    assert dpsgd_epsilon(4.0, 0.01, 10000, 1e-5, accountant="rdp") == pytest.approx(
        1.0355, abs=1e-4)


@pytest.mark.parametrize("T, z, exact, rdp", [(100, 10.0, 4.37718, 4.72851),
                                              (800, 50.0, 2.28839, 2.48412)])
def test_full_batch_dp_gd_is_exact_gdp(T, z, exact, rdp):
    ours = dpsgd_epsilon(z, 1.0, T, 1e-5)
    assert ours == pytest.approx(exact, abs=1e-5)
    assert ours == gaussian_epsilon(1e-5, math.sqrt(T) / z)
    # PLD discretises pessimistically: it approaches the exact value from above
    pld = PLDAccountant()
    pld.compose(dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(z), T))
    assert ours <= pld.get_epsilon(1e-5) <= ours + 1e-3
    assert dpsgd_epsilon(z, 1.0, T, 1e-5, accountant="rdp") == pytest.approx(rdp, abs=1e-5)


def test_epsilon_delta_are_inverse():
    eps = dpsgd_epsilon(2.0, 0.05, 200, 1e-5, accountant="rdp")
    assert dpsgd_delta(2.0, 0.05, 200, eps, accountant="rdp") <= 1e-5 * (1 + 1e-6)
    eps = dpsgd_epsilon(30.0, 1.0, 50, 1e-6)
    assert dpsgd_delta(30.0, 1.0, 50, eps) == pytest.approx(1e-6, rel=1e-8)


def test_monotone_in_noise_steps_and_rate():
    base = dict(accountant="rdp")
    assert (dpsgd_epsilon(1.0, 0.01, 500, 1e-5, **base)
            > dpsgd_epsilon(1.5, 0.01, 500, 1e-5, **base)
            > dpsgd_epsilon(2.0, 0.01, 500, 1e-5, **base))
    assert (dpsgd_epsilon(1.0, 0.01, 100, 1e-5, **base)
            < dpsgd_epsilon(1.0, 0.01, 500, 1e-5, **base))
    assert (dpsgd_epsilon(1.0, 0.005, 500, 1e-5, **base)
            < dpsgd_epsilon(1.0, 0.01, 500, 1e-5, **base))
    assert dpsgd_epsilon(0.0, 0.01, 500, 1e-5) == math.inf
    assert dpsgd_epsilon(np.inf, 0.01, 500, 1e-5) == 0.0


# spec 6 calibration table for q = 256/60000, T = 14062: (target, RDP improved, PLD)
CALIBRATION = [(1.0, 2.1785, 2.0261), (3.0, 1.0141, 0.9686), (8.0, 0.6781, 0.6557)]


@pytest.mark.parametrize("target, z_rdp, z_pld", CALIBRATION)
def test_rdp_calibration_post_condition_and_spec_table(target, z_rdp, z_pld):
    z, spent = calibrate_noise_multiplier(target, 1e-5, Q_MNIST, 14062, accountant="rdp",
                                          return_epsilon=True)
    assert spent == dpsgd_epsilon(z, Q_MNIST, 14062, 1e-5, accountant="rdp")
    assert spent <= target
    assert spent >= 0.999 * target
    # near-minimal: a slightly smaller multiplier is over budget
    assert dpsgd_epsilon(z * (1 - 1e-3), Q_MNIST, 14062, 1e-5, accountant="rdp") > target
    assert z == pytest.approx(z_rdp, rel=1e-3)


@pytest.mark.slow
@pytest.mark.parametrize("target, z_rdp, z_pld", CALIBRATION)
def test_pld_calibration_post_condition_and_spec_table(target, z_rdp, z_pld):
    z, spent = calibrate_noise_multiplier(target, 1e-5, Q_MNIST, 14062, return_epsilon=True)
    assert spent <= target
    assert spent >= 0.99 * target
    assert z == pytest.approx(z_pld, rel=1e-3)


@pytest.mark.parametrize("target", [0.1, 1.0, pytest.param(5.0, marks=pytest.mark.slow)])
def test_pld_calibration_matches_dp_accounting_calibrate(target):
    from dp_accounting.mechanism_calibration import calibrate_dp_mechanism

    q, T = 0.05, 200
    z, spent = calibrate_noise_multiplier(target, 1e-5, q, T, return_epsilon=True)
    assert spent <= target
    assert spent >= 0.99 * target
    assert spent == pytest.approx(_reference(PLDAccountant, q, z, T), rel=1e-12)
    theirs = calibrate_dp_mechanism(
        PLDAccountant,
        lambda s: dp_accounting.SelfComposedDpEvent(
            dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(s)), T),
        target, 1e-5, tol=1e-4)
    assert z == pytest.approx(theirs, rel=2e-3)


@pytest.mark.parametrize("target, T", [(0.1, 20), (1.0, 100), (3.0, 50)])
def test_dp_gd_calibration_is_closed_form(target, T):
    z, spent = calibrate_noise_multiplier(target, 1e-5, 1.0, T, return_epsilon=True)
    assert z == pytest.approx(math.sqrt(T) / gdp_mu(target, 1e-5), rel=1e-12)
    assert spent <= target
    assert spent == pytest.approx(target, rel=1e-9)


def test_dp_gd_noise_multiplier_derivative_closed_form():
    # spec epsilon_for_utility_math.md 5: eps = 1 gives mu = 0.268051, dmu/deps = 0.244096
    T = 100
    mu = gdp_mu(1.0, 1e-5)
    assert mu == pytest.approx(0.268051, abs=1e-6)
    assert gdp_mu_derivative(1.0, 1e-5) == pytest.approx(0.244096, abs=1e-6)
    expected = -math.sqrt(T) / mu**2 * 0.244096
    assert noise_multiplier_derivative(1.0, 1e-5, 1.0, T) == pytest.approx(expected, rel=1e-5)
    h = 1e-5
    fd = (calibrate_noise_multiplier(1.0 + h, 1e-5, 1.0, T)
          - calibrate_noise_multiplier(1.0 - h, 1e-5, 1.0, T)) / (2 * h)
    assert noise_multiplier_derivative(1.0, 1e-5, 1.0, T) == pytest.approx(fd, rel=1e-6)


@pytest.mark.parametrize("accountant", ["rdp", "pld"])
def test_sampled_noise_multiplier_derivative_equals_calibration_difference(accountant):
    q, T, eps = 0.05, 200, 1.0
    derivative = noise_multiplier_derivative(eps, 1e-5, q, T, accountant=accountant)
    assert derivative < 0
    h = 0.02
    up = calibrate_noise_multiplier(eps + h, 1e-5, q, T, accountant=accountant, rtol=1e-7)
    down = calibrate_noise_multiplier(eps - h, 1e-5, q, T, accountant=accountant, rtol=1e-7)
    assert derivative == pytest.approx((up - down) / (2 * h), rel=5e-3)


def test_budget_too_small_for_training_length_says_what_to_change():
    with pytest.raises(PrivacyBudgetError, match="too small for this training length") as info:
        calibrate_noise_multiplier(1e-3, 1e-5, 1.0, 1000)
    message = str(info.value)
    assert "1000 noisy steps" in message
    assert "fewer epochs" in message and "Increase epsilon" in message


def test_budget_error_for_sampled_accountant():
    with pytest.raises(PrivacyBudgetError, match="fewer epochs"):
        calibrate_noise_multiplier(1e-3, 1e-5, 0.5, 2000, accountant="rdp",
                                   max_noise_multiplier=50.0)


def test_delta_zero_is_rejected_with_explanation():
    with pytest.raises(ValueError, match="DP-SGD needs 0 < delta < 1"):
        calibrate_noise_multiplier(1.0, 0.0, 0.1, 100)


def test_infinite_epsilon_means_no_noise():
    assert calibrate_noise_multiplier(np.inf, 1e-5, 0.1, 100) == 0.0


def test_search_returns_the_within_budget_end():
    # epsilon_of(z) = 1/z: the answer for target 0.3 is 1/0.3
    calls = []

    def epsilon_of(z):
        calls.append(z)
        return 1.0 / z

    z, spent = search_noise_multiplier(epsilon_of, 0.3, start=1.0, rtol=1e-6)
    assert spent == 1.0 / z <= 0.3
    assert z == pytest.approx(1 / 0.3, rel=1e-5)
    # every value returned was evaluated and found within budget
    assert z in calls


def test_search_stops_at_the_least_multiplier():
    # epsilon_of(z) = 1/z: a target of 1e6 needs 1e-6, below the least multiplier
    calls = []

    def epsilon_of(z):
        calls.append(z)
        return 1.0 / z

    z, spent = search_noise_multiplier(epsilon_of, 1e6, start=1.0, min_noise_multiplier=0.2)
    assert (z, spent) == (0.2, 5.0)
    assert min(calls) == 0.2


def test_sampled_pld_calibration_of_a_huge_epsilon_is_floored():
    # without the floor the search asked dp-accounting's PLD about z = 0.016: 1.5 TiB
    from skdp.accounting._calibration import PLD_MIN_NOISE_MULTIPLIER

    z, spent = calibrate_noise_multiplier(1e9, 1e-5, 0.01, 1000, return_epsilon=True)
    assert z == PLD_MIN_NOISE_MULTIPLIER
    assert spent == pytest.approx(dpsgd_epsilon(z, 0.01, 1000, 1e-5)) and spent < 300
