"""Renyi curve of Gaussian objective perturbation: spec oracle, and the exact divergence.

The attacker's check: on a one-dimensional logistic problem the released point has
an exact density by change of variables, ``p(theta) = phi_sigma(b(theta)) |b'(theta)|``
with ``b(theta) = -grad J(theta)`` the noise that makes ``theta`` the minimiser, so the
Renyi divergence between neighbouring datasets is an integral computed by quadrature.
"""

import numpy as np
import pytest
from scipy import integrate, optimize, stats
from scipy.special import expit

from skdp.mechanisms._approximate_minima import split_budget
from skdp.mechanisms._objective_perturbation import (cover_rdp, gaussian_objective_rdp,
                                                     kst_calibration, kst_release_rdp)

ALPHAS = np.array([1.5, 2.0, 4.0, 8.0, 16.0, 32.0])


def _log_density(theta, xs, ys, C, ridge, sigma):
    """Log density of the exact minimiser of ``C sum log(1 + e^(-y x theta)) + ridge
    theta^2 / 2 + b theta``, ``b ~ N(0, sigma^2)``, at each ``theta``."""
    margins = (ys * xs)[:, None] * theta[None, :]
    gradient = C * np.sum(-(ys * xs)[:, None] * expit(-margins), axis=0) + ridge * theta
    curvature = C * np.sum((xs**2)[:, None] * expit(margins) * expit(-margins), axis=0) + ridge
    return stats.norm.logpdf(-gradient, scale=sigma) + np.log(curvature)


def _renyi(alpha, log_p, log_q, theta):
    """``D_alpha(P || Q)`` by Simpson's rule on the grid, in log space."""
    f = alpha * log_p + (1 - alpha) * log_q
    top = f.max()
    return (top + np.log(integrate.simpson(np.exp(f - top), x=theta))) / (alpha - 1)


def _divergences(xs, ys, row, C, ridge, sigma):
    """Both directions' exact divergences between ``D`` and ``D`` plus ``row``."""
    theta = np.linspace(-(12 * sigma / ridge + 50), 12 * sigma / ridge + 50, 200001)
    log_p = _log_density(theta, xs, ys, C, ridge, sigma)
    log_q = _log_density(theta, np.append(xs, row[0]), np.append(ys, row[1]), C, ridge, sigma)
    return np.array([max(_renyi(a, log_p, log_q, theta), _renyi(a, log_q, log_p, theta))
                     for a in ALPHAS])


def _bound(C, x, ridge, sigma):
    return gaussian_objective_rdp(ALPHAS, sensitivity=C * abs(x), noise_std=sigma,
                                  log_jacobian=np.log1p(C * x**2 / 4 / ridge))


def test_spec_oracle_at_order_3_5():
    """Spec section 8 item 3: sigma 5.3045, L 1, beta 0.25, lambda 1, order 3.5 gives
    0.4736258089 with the spec's ``c0 = -log(1 - beta / lambda)``; also the moment
    generating function of the privacy-loss bound ``c0 + L^2/(2 s^2) + L |Z| / s`` by
    quadrature, an independent computation of the same curve."""
    c0, L, s, alpha = -np.log1p(-0.25), 1.0, 5.3045, 3.5
    value = gaussian_objective_rdp([alpha], sensitivity=L, noise_std=s, log_jacobian=c0)[0]
    assert value == pytest.approx(0.4736258089, abs=1e-9)
    half, _ = integrate.quad(lambda z: stats.norm.pdf(z) * np.exp(
        (alpha - 1) * (c0 + L**2 / (2 * s**2) + L * z / s)), 0.0, 40.0,
        epsabs=0, epsrel=1e-13)  # symmetric in z; the tail past 40 is below e^-790
    assert np.log(2 * half) / (alpha - 1) == pytest.approx(value, rel=1e-10)


@pytest.mark.parametrize("epsilon, L, beta, ridge, sigma", [
    (0.1, 1.0, 0.25, 10.0, 46.8005), (1.0, 1.0, 0.25, 1.0, 5.7454),
    (1.0, 1.0, 0.25, 0.5, 12.5753), (1.0, np.sqrt(2), 0.5, 2.0, 8.1253),
    (8.0, np.sqrt(2), 0.5, 2.0, 0.9535)])
def test_spec_table_sigma_by_rdp_conversion(epsilon, L, beta, ridge, sigma):
    """Spec section 5's column "sigma (RDP + improved conversion)" at delta 1e-5: the
    smallest sigma whose curve (spec ``c0``) converts within epsilon (Canonne, Kamath &
    Steinke 2020, Prop. 12) over a fine grid of orders. Within 1.2e-4 relative of the
    table (whose order grid is coarser: never a larger sigma here)."""
    orders = np.exp(np.linspace(np.log(1.01), np.log(300.0), 20000))
    c0 = -np.log1p(-beta / ridge)

    def converted(s):
        rdp = gaussian_objective_rdp(orders, sensitivity=L, noise_std=s, log_jacobian=c0)
        return np.min(rdp + np.log1p(-1 / orders) - (np.log(1e-5) + np.log(orders))
                      / (orders - 1))

    found = optimize.brentq(lambda s: converted(s) - epsilon, 0.3, 500.0, xtol=1e-10)
    assert found == pytest.approx(sigma, rel=1.2e-4)
    assert found <= sigma + 5e-5


# (rows labelled +1 in D, C, ridge, sigma, |x|): the added row has label -1
CASES = [(0, 1.0, 1.0, 1.0, 1.0), (0, 1.0, 1.0, 5.0, 1.0), (3, 1.0, 1.0, 2.0, 1.0),
         (0, 10.0, 1.0, 3.0, 1.0), (5, 10.0, 1.0, 3.0, 1.4), (0, 4.0, 0.5, 10.0, 1.0),
         (20, 1.0, 1.0, 1.0, 1.0)]


@pytest.mark.parametrize("n_pos, C, ridge, sigma, x", CASES)
def test_exact_divergence_is_within_the_curve(n_pos, C, ridge, sigma, x):
    """Including ``beta / lambda`` up to 2.5 (``C = 10``), where the spec's ``c0 =
    -log(1 - beta / lambda)`` is undefined and ``log(1 + beta / lambda)`` is used."""
    exact = _divergences(np.full(n_pos, x), np.ones(n_pos), (x, -1.0), C, ridge, sigma)
    assert np.all(exact <= _bound(C, x, ridge, sigma) * (1 + 1e-6))


def test_curve_is_tight_where_the_added_row_saturates():
    """An added row against the data's own sign: its gradient is close to ``L`` where
    the mass is, and at large orders the exact divergence is within 3 % of the
    curve (so a looser formula, or a smaller one, would fail one of these tests)."""
    exact = _divergences(np.zeros(0), np.ones(0), (1.0, -1.0), 1.0, 1.0, 1.0)
    ratio = exact / _bound(1.0, 1.0, 1.0, 1.0)
    assert ratio[-1] > 0.97 and ratio[-2] > 0.95


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 4.0])
def test_skdp_calibration_within_the_curve(epsilon):
    """The mechanism as skdp runs it: KST noise and extra ridge at the mechanism's
    share of ``(epsilon, 1e-5)``, ridge ``1 + Delta``, ``C = 2``, rows of norm 1,
    the data's labels against the added row's."""
    C, delta = 2.0, 1e-5
    budget = split_budget(epsilon, delta)
    cal = kst_calibration(budget.epsilon_mechanism, budget.delta_mechanism,
                          gradient_bound=C, hessian_bound=C / 4, neighboring="add_remove")
    ridge, sigma = 1.0 + cal.extra_ridge, cal.noise_scale
    exact = _divergences(np.full(4, 1.0), np.ones(4), (1.0, -1.0), C, ridge, sigma)
    curve = kst_release_rdp(ALPHAS, epsilon, delta, gradient_bound=C, hessian_bound=C / 4,
                            ridge=1.0) - cover_rdp(ALPHAS, budget.epsilon_cover)
    assert np.all(exact <= curve * (1 + 1e-6))
    assert np.allclose(curve, _bound(C, 1.0, ridge, sigma), rtol=1e-12)


def test_cover_bound_holds_for_the_laplace_cover():
    """One-dimensional cover: the solver's points at ``+-r`` around the same exact
    minimiser, Laplace noise of scale ``2 r / e``: the exact divergence (Mironov
    2017, Laplace mechanism) is within :func:`cover_rdp`."""
    e = 0.3
    a = ALPHAS
    # Laplace of scale b shifted by 2 r = e b: Mironov's closed form with e' = e
    exact = np.log(a / (2 * a - 1) * np.exp((a - 1) * e)
                   + (a - 1) / (2 * a - 1) * np.exp(-a * e)) / (a - 1)
    assert np.all(exact <= cover_rdp(a, e))


def test_refusals():
    for kwargs in ({"neighboring": "replace"}, {"hessian_rank": 2}):
        with pytest.raises(ValueError):
            kst_release_rdp(ALPHAS, 1.0, 1e-5, gradient_bound=1.0, hessian_bound=0.25,
                            ridge=1.0, **kwargs)
    with pytest.raises(ValueError, match="delta > 0"):
        kst_release_rdp(ALPHAS, 1.0, 0.0, gradient_bound=1.0, hessian_bound=0.25, ridge=1.0)
