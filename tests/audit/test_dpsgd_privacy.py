"""DP-SGD's privacy under add/remove, tested as an attacker would.

The number of rows is private under add/remove. The released model may depend on it
only through the accounted DP count; every other fitted attribute is a function of the
public parameters. The exact privacy profile of a one-step full-batch release on tiny
neighbouring datasets stays within the certified (epsilon, delta), whereas the former
normalisation by the private ``n`` does not.
"""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy import stats
from scipy.special import expit

from skdp import DPSGDClassifier
from skdp.accounting import (calibrate_noise_multiplier, default_count_noise_std,
                             dpsgd_epsilon)
from skdp.accounting._dpsgd import _dpsgd_event
from skdp.linear_model._dpsgd import _call_streams

ETA, CLIP = 1.0, 0.5


def _one_step(**params):
    """One full-batch step from zero, no penalty, momentum or averaging: the bare release."""
    return DPSGDClassifier(sample_rate=1.0, epochs=1, learning_rate=ETA, max_grad_norm=CLIP,
                           alpha=0.0, momentum=0.0, average=0.0, fit_intercept=False, **params)


def _tiny_neighbours(n):
    """``n`` rows x = 1 labelled +1, and the same plus one row labelled -1.

    At theta = 0 each row's logistic gradient is -+0.5 x (norm 0.5 = CLIP): the
    added row shifts the clipped sum by the full sensitivity.
    """
    X = np.ones((n, 1))
    y = np.ones(n, dtype=int)
    y[0] = 0                 # two classes in D; its gradient is +0.5 like the added row
    X_prime = np.vstack([X, [[1.0]]])
    y_prime = np.append(y, 0)
    return (X, y), (X_prime, y_prime)


def _clipped_sum(X, y):
    signs = np.where(y == 1, 1.0, -1.0)
    gradients = -signs * expit(0.0) * X[:, 0]
    return float(np.sum(gradients * np.minimum(1.0, CLIP / np.abs(gradients))))


def test_release_is_the_formula_of_the_count_and_the_noisy_sum():
    """Replay the noise streams: coef_ = -eta (S + z C xi) / max(n_tilde, 1)."""
    (X, y), _ = _tiny_neighbours(5)
    est = _one_step(epsilon=1.0, random_state=11).fit(X, y)
    count_rng, _, noise_rng = _call_streams(11, 0)
    n_tilde = len(X) + est.count_noise_std_ * count_rng.standard_normal()
    xi = noise_rng.standard_normal((1, 1))
    expected = -ETA * (_clipped_sum(X, y) + est.noise_multiplier_ * CLIP * xi) / max(n_tilde, 1)
    assert_allclose(est.coef_, expected, rtol=1e-12)


def _release_density(o, clipped_sum, n, z, s):
    """Exact density of the one-step release ``-eta (S + z C xi) / max(n + s nu, 1)``.

    The count's noise is integrated on a fine grid above the floor; below it the
    divisor is 1, an atom of weight ``Phi((1 - n) / s)``.
    """
    sd = ETA * z * CLIP
    density = stats.norm.cdf((1 - n) / s) * stats.norm.pdf(o, -ETA * clipped_sum, sd)
    t = np.linspace(1.0, n + 12 * s, 1201)
    weights = stats.norm.pdf(t, n, s) * np.gradient(t)
    weights[[0, -1]] *= 0.5
    for chunk in np.array_split(np.arange(len(t)), 20):
        tc = t[chunk][:, None]
        density += weights[chunk] @ stats.norm.pdf(o[None, :], -ETA * clipped_sum / tc,
                                                    sd / tc)
    return density


def _hockey_stick(p, q, epsilon, grid):
    step = grid[1] - grid[0]
    return max(np.sum(np.maximum(p - np.exp(epsilon) * q, 0)) * step,
               np.sum(np.maximum(q - np.exp(epsilon) * p, 0)) * step)


@pytest.mark.parametrize("n", [2, 3])
def test_exact_profile_of_full_batch_release_is_within_the_claim(n):
    """The exact (epsilon, delta) of the release on D vs D + one row, at n = 2, 3."""
    epsilon, delta = 1.0, 1e-3
    (X, y), (Xp, yp) = _tiny_neighbours(n)
    est = _one_step(epsilon=epsilon, delta=delta, random_state=0).fit(X, y)
    z, s = est.noise_multiplier_, est.count_noise_std_
    grid = np.linspace(-60, 60, 30_001) * ETA * CLIP
    p = _release_density(grid, _clipped_sum(X, y), n, z, s)
    q = _release_density(grid, _clipped_sum(Xp, yp), n + 1, z, s)
    assert abs(p.sum() * (grid[1] - grid[0]) - 1) < 1e-6
    assert _hockey_stick(p, q, est.epsilon_spent_, grid) <= delta * 1.01

    # negative control: the former release divided the noisy sum by the private n,
    # with the noise calibrated for the steps alone
    z_old = calibrate_noise_multiplier(epsilon, delta, 1.0, 1)
    sd = ETA * z_old * CLIP
    p_old = stats.norm.pdf(grid, -ETA * _clipped_sum(X, y) / n, sd / n)
    q_old = stats.norm.pdf(grid, -ETA * _clipped_sum(Xp, yp) / (n + 1), sd / (n + 1))
    assert _hockey_stick(p_old, q_old, epsilon, grid) > 20 * delta


@pytest.mark.parametrize("params", [dict(), dict(sample_rate=0.1, epochs=3),
                                    dict(epsilon=0.3, accountant="rdp")])
def test_no_fitted_attribute_depends_on_the_row_count(params):
    """Every attribute but the coefficients is identical on n and n + 1 rows.

    ``learning_rate="auto"`` reads the DP row count, whose release the accountant
    covers: pinned here, and tested in ``test_auto_learning_rate_reads_the_dp_count``.
    """
    rng = np.random.default_rng(0)
    X = rng.normal(size=(201, 4)) / 3
    y = (X[:, 0] > 0).astype(int)
    small = DPSGDClassifier(learning_rate=4.0, **params).fit(X[:200], y[:200])
    large = DPSGDClassifier(learning_rate=4.0, **params).fit(X, y)
    released = {k for k in vars(small) if k.endswith("_")}
    assert released == {k for k in vars(large) if k.endswith("_")}
    for name in released - {"coef_", "intercept_"}:
        assert np.array_equal(getattr(small, name), getattr(large, name)), name


def test_steps_and_rate_are_public_parameters():
    X = np.random.default_rng(1).normal(size=(57, 3)) / 3
    y = np.arange(57) % 2
    est = DPSGDClassifier(sample_rate=0.3, epochs=2).fit(X, y)
    assert est.sample_rate_ == 0.3 and est.n_steps_ == 7


def test_full_batch_accounting_is_the_gaussian_dp_closed_form():
    """q = 1: the count and T steps are mu-GDP with mu^2 = T / z^2 + 1 / s^2."""
    import dp_accounting
    from dp_accounting.pld import PLDAccountant

    z, T, s, delta = 3.0, 20, 15.0, 1e-5
    closed_form = dpsgd_epsilon(z, 1.0, T, delta, count_noise_std=s)
    accountant = PLDAccountant(value_discretization_interval=1e-5)
    accountant.compose(dp_accounting.ComposedDpEvent(
        [dp_accounting.GaussianDpEvent(s),
         dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(z), T)]))
    assert closed_form == pytest.approx(accountant.get_epsilon(delta), rel=2e-3)
    # a single Gaussian of noise 1 / mu has the same guarantee
    mu = np.sqrt(T / z**2 + 1 / s**2)
    single = PLDAccountant(value_discretization_interval=1e-5)
    single.compose(dp_accounting.GaussianDpEvent(1 / mu))
    assert closed_form == pytest.approx(single.get_epsilon(delta), rel=2e-3)


def test_poisson_accounting_composes_the_count():
    z, q, T, delta = 1.2, 0.05, 300, 1e-5
    s = default_count_noise_std(1.0, delta)
    without = dpsgd_epsilon(z, q, T, delta)
    with_count = dpsgd_epsilon(z, q, T, delta, count_noise_std=s)
    assert without < with_count < 1.05 * without
    event = _dpsgd_event(z, q, T, s)
    assert type(event).__name__ == "ComposedDpEvent"
    assert event.events[0].noise_multiplier == s


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 5.0])
def test_default_count_takes_one_percent_of_the_budget(epsilon):
    s = default_count_noise_std(epsilon, 1e-5)
    z = calibrate_noise_multiplier(epsilon, 1e-5, 1.0, 50, count_noise_std=s)
    z_alone = calibrate_noise_multiplier(epsilon, 1e-5, 1.0, 50)
    assert z / z_alone == pytest.approx(1 / np.sqrt(0.99), rel=1e-6)
