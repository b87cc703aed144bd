"""The Gaussian tail of Kifer, Smith & Thakurta's objective perturbation.

The noise term of the privacy loss at an output ``theta`` is ``(2 <b, v> + ||v||^2) /
(2 s^2)`` with ``v(theta)`` the gradient difference of the neighbours. Kifer et al.'s
constant ``sqrt(2 log(2/delta))`` bounds ``<b, v> / (s ||v||)`` when ``v`` keeps one
direction (a record of a margin loss). A softmax record's ``v = (p - e_y) x^T`` turns
with ``theta`` in a subspace of dimension ``K - 1``, a person's in the span of their
rows: there the bound is ``||P_V b|| <= s q`` with ``q^2`` the chi-square quantile of
``m = dim V`` degrees of freedom (``docs/privacy/objective_perturbation.rst``, "The
Gaussian tail"). These tests check the constants by hand, the algebra of the noise
scale, and, by Monte Carlo, that the one-dimensional constant does not cover the
directions a softmax gradient takes while the new one does.
"""

import numpy as np
import pytest
from scipy.stats import chi2

from skdp.mechanisms._objective_perturbation import (kst_calibration, kst_gaussian_std,
                                                     kst_noise_dim, kst_tail)


def _old_constant(delta):
    """Kifer et al.'s one-dimensional constant ``q = sqrt(2 log(2 / delta))``."""
    return np.sqrt(2.0 * np.log(2.0 / delta))


@pytest.mark.parametrize("delta", [1e-2, 1e-5, 1e-9])
def test_noise_scale_by_hand(delta):
    zeta, epsilon = 1.7, 0.8
    # binary record (m = 1, and m = 2 under replace): the spec's formula, bit for bit
    old = zeta * np.sqrt(8.0 * np.log(2.0 / delta) + 4.0 * epsilon) / epsilon
    for m in (1, 2):
        assert kst_gaussian_std(epsilon, delta, zeta, m) == old
    assert kst_gaussian_std(epsilon, delta, zeta) == old
    # softmax record (m = K - 1) and persons (m = r d): the chi-square quantile
    for m in (9, 20, 99 * 5):
        q2 = max(2.0 * np.log(2.0 / delta), chi2.isf(delta, m))
        assert q2 == chi2.isf(delta, m)      # above the logarithmic term here
        assert kst_gaussian_std(epsilon, delta, zeta, m) == pytest.approx(
            zeta * np.sqrt(4.0 * q2 + 4.0 * epsilon) / epsilon, rel=1e-14)
        assert kst_gaussian_std(epsilon, delta, zeta, m) > old


def test_noise_dimension_by_hand():
    # one record: 1 (margin loss), K - 1 (softmax); twice that under replace
    assert kst_noise_dim(1, "add_remove") == 1
    assert kst_noise_dim(1, "replace") == 2
    assert kst_noise_dim(9, "add_remove", n_coef=5) == 9
    assert kst_noise_dim(9, "replace", n_coef=5) == 18
    # capped at the dimension r d of the gradients' subspace (1^T Theta = 0 for softmax)
    assert kst_noise_dim(9, "replace", n_coef=1) == 9
    assert kst_noise_dim(1, "replace", n_coef=1) == 1
    # one person: r d under either relation
    for relation in ("add_remove", "replace"):
        assert kst_noise_dim(1, relation, person_dim=7, n_coef=7) == 7
        assert kst_noise_dim(4, relation, person_dim=7, n_coef=7) == 28


@pytest.mark.parametrize("m", [1, 2, 3, 9, 40, 400])
@pytest.mark.parametrize("delta", [1e-1, 1e-5, 1e-12])
@pytest.mark.parametrize("epsilon", [0.01, 1.0, 30.0])
def test_noise_term_is_within_half_epsilon_on_the_event(m, delta, epsilon):
    """With ``a = zeta / s`` the noise term is at most ``a q + a^2 / 2`` where ``||P_V b||
    <= s q``; the calibrated ``s`` keeps it within ``epsilon / 2``, and ``q`` is at least
    the chi-square quantile (the event has probability at least ``1 - delta``)."""
    zeta = 2.5
    q2, _ = kst_tail(delta, m)
    assert q2 >= chi2.isf(delta, m) * (1 - 1e-12)
    assert chi2.sf(q2, m) <= delta * (1 + 1e-9)
    a = zeta / kst_gaussian_std(epsilon, delta, zeta, m)
    assert a * np.sqrt(q2) + a * a / 2 <= epsilon / 2 * (1 + 1e-12)


@pytest.mark.parametrize("m", [3, 9, 50])
def test_log_delta_derivative_matches_finite_differences(m):
    for delta in (1e-3, 1e-6):
        for epsilon in (0.2, 3.0):
            cal = kst_calibration(epsilon, delta, gradient_bound=1.0, hessian_bound=0.5,
                                  neighboring="add_remove", noise_dim=m)
            h = 1e-5
            up = np.log(kst_gaussian_std(epsilon, delta * np.exp(h), 1.0, m))
            down = np.log(kst_gaussian_std(epsilon, delta * np.exp(-h), 1.0, m))
            assert cal.d_log_noise_scale_d_log_delta == pytest.approx((up - down) / (2 * h),
                                                                       rel=1e-6)
            up = np.log(kst_gaussian_std(epsilon + h, delta, 1.0, m))
            down = np.log(kst_gaussian_std(epsilon - h, delta, 1.0, m))
            assert cal.d_log_noise_scale == pytest.approx((up - down) / (2 * h), rel=1e-6)


def test_one_dimensional_constant_does_not_cover_a_moving_direction():
    """Monte Carlo, ``b ~ N(0, I)`` in ``K`` coordinates (a softmax record's ``b`` on
    the rows ``Theta x / ||x||``).

    * The subspace ``{c : sum c = 0}`` of a softmax gradient's ``p - e_y``: ``||P_V b||``
      passes Kifer et al.'s constant with probability far above ``delta`` (K = 10:
      about 0.30 at ``delta = 0.01``), and the chi-square constant with probability
      ``delta``.
    * Even the directions a softmax gradient reaches, ``(e_k - e_y) / sqrt(2)`` (``p``
      one-hot on class ``k``), pass it with probability above ``delta`` once ``K`` is
      large: the largest of ``K - 1`` correlated Gaussians, about 0.017 for ``K = 50``
      at ``delta = 0.01``. The new constant covers both.
    """
    rng = np.random.default_rng(12345)
    n, delta = 200_000, 1e-2
    old = _old_constant(delta)
    for K in (10, 50):
        b = rng.standard_normal((n, K))
        new = np.sqrt(kst_tail(delta, kst_noise_dim(K - 1))[0])
        projected = np.linalg.norm(b - b.mean(axis=1, keepdims=True), axis=1)
        # one-sided: the largest <b, (e_y - e_k) / sqrt 2> over the classes k != y = 0
        vertex = np.max(b[:, :1] - b[:, 1:], axis=1) / np.sqrt(2.0)
        # Monte Carlo standard error at these probabilities: below 3e-4
        assert np.mean(projected > old) > 25 * delta
        assert np.mean(projected > new) <= delta + 1e-3
        assert np.mean(vertex > new) <= delta
        if K == 50:
            assert np.mean(vertex > old) > 1.5 * delta
    # a fixed direction (a margin loss's x): the old constant covers it, two-sided
    assert np.mean(np.abs(b[:, 0]) > old) <= delta


@pytest.mark.parametrize("params", [dict(), dict(neighboring="replace"),
                                    dict(loss="huber"), dict(multi_class="ovr"),
                                    dict(C="auto", delta=1e-7)])
def test_row_level_margin_fits_keep_kifer_constant_bit_for_bit(params):
    """Binary and one-vs-rest fits (a record's gradient keeps the direction of ``x``;
    two directions under replace): the noise scale is the spec's ``zeta sqrt(8 log(2 /
    delta) + 4 eps) / eps`` exactly, so the fit is the one before the chi-square tail."""
    from skdp import ObjPertLogisticRegression

    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 3))
    y = np.arange(80) % (3 if params.get("multi_class") else 2)
    kw = {"epsilon": 0.7, "delta": 1e-5, "C": 0.4, "data_norm": 1.0, "random_state": 0,
          **params}
    est = ObjPertLogisticRegression(**kw)
    for solution in est._releases(X, y):
        k = solution.n_problems
        eps_m = (kw["epsilon"] / k) * 0.99
        delta_m = (kw["delta"] / k) * np.exp(-(kw["epsilon"] / k) * 0.01 / 2)
        zeta = (2.0 if params.get("neighboring") == "replace" else 1.0) * est.C_ * np.sqrt(2.0)
        t = np.log(2.0 / delta_m)
        cal = solution.calibration
        assert cal.noise_scale == pytest.approx(
            zeta * np.sqrt(8.0 * t + 4.0 * eps_m) / eps_m, rel=1e-13)
        # bit for bit against the spec formula at the budget the fit used
        from skdp.mechanisms import split_budget
        budget = split_budget(kw["epsilon"] / k, kw["delta"] / k)
        assert cal.noise_scale == zeta * np.sqrt(
            8.0 * np.log(2.0 / budget.delta_mechanism) + 4.0 * budget.epsilon_mechanism
        ) / budget.epsilon_mechanism
