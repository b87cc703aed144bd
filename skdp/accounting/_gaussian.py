"""Exact privacy profile of the Gaussian mechanism (Balle & Wang 2018; mu-GDP).

A Gaussian mechanism with L2 sensitivity ``Delta`` and noise ``N(0, sigma^2 I)``
is ``mu``-GDP with ``mu = Delta / sigma`` and is (epsilon, delta)-DP exactly for

    delta(epsilon; mu) = Phi(mu/2 - epsilon/mu) - e^epsilon Phi(-mu/2 - epsilon/mu).

``T``-fold composition of ``mu``-GDP mechanisms is ``sqrt(T) mu``-GDP, which is
the exact accounting of full-batch DP-GD (spec dp_sgd_and_accounting.md 4).
"""

import numpy as np
from scipy.optimize import brentq
from scipy.special import log_ndtr, ndtr
from scipy.stats import norm

from ..exceptions import PrivacyBudgetError


def gaussian_delta(epsilon, mu):
    """Smallest delta for which a ``mu``-GDP mechanism is (epsilon, delta)-DP.

    Parameters
    ----------
    epsilon : float
        The epsilon at which delta is wanted.
    mu : float
        The GDP parameter, ``sensitivity / sigma``.

    Returns
    -------
    delta : float
    """
    if mu == 0:
        return 0.0
    a = mu / 2.0 - epsilon / mu
    b = -mu / 2.0 - epsilon / mu
    return float(max(ndtr(a) - np.exp(epsilon + log_ndtr(b)), 0.0))


def gaussian_epsilon(delta, mu):
    """Smallest epsilon for which a ``mu``-GDP mechanism is (epsilon, delta)-DP.

    Parameters
    ----------
    delta, mu : float
        The delta at which epsilon is wanted, and the GDP parameter.

    Returns
    -------
    epsilon : float
        0 when the mechanism is (0, delta)-DP already.
    """
    if gaussian_delta(0.0, mu) <= delta:
        return 0.0
    hi = 1.0
    while gaussian_delta(hi, mu) > delta:
        hi *= 2.0
    return float(brentq(lambda e: gaussian_delta(e, mu) - delta, 0.0, hi, xtol=1e-14,
                        rtol=4 * np.finfo(float).eps))


def gdp_mu(epsilon, delta):
    """The ``mu`` with ``gaussian_delta(epsilon, mu) == delta`` (largest admissible mu).

    Parameters
    ----------
    epsilon : float
        Target epsilon.
    delta : float
        Target delta, in (0, 1).

    Returns
    -------
    mu : float
        Never above the exact root: its delta does not exceed ``delta``.

    Examples
    --------
    >>> from skdp.accounting import gaussian_epsilon, gdp_mu
    >>> mu = gdp_mu(1.0, 1e-5)
    >>> round(gaussian_epsilon(1e-5, mu), 6)
    1.0
    """
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta!r}.")
    lo, hi = 0.0, 1.0
    while gaussian_delta(epsilon, hi) < delta:
        lo, hi = hi, 2.0 * hi
    mu = brentq(lambda m: gaussian_delta(epsilon, m) - delta, lo, hi, xtol=1e-15,
                rtol=4 * np.finfo(float).eps)
    # conservative end: never return a mu whose delta exceeds the target
    while gaussian_delta(epsilon, mu) > delta:
        mu = np.nextafter(mu, 0.0)
    return float(mu)


def gdp_mu_derivative(epsilon, delta):
    """``dmu/depsilon = e^epsilon Phi(b) / phi(a)`` along ``delta(epsilon; mu) = delta``.

    With ``a = mu/2 - epsilon/mu`` and ``b = -mu/2 - epsilon/mu``; uses the
    identity ``phi(a) = e^epsilon phi(b)`` (spec epsilon_for_utility_math.md 5).

    Parameters
    ----------
    epsilon, delta : float
        The point of the curve.

    Returns
    -------
    dmu : float
        ``dmu / depsilon`` (positive).
    """
    mu = gdp_mu(epsilon, delta)
    a = mu / 2.0 - epsilon / mu
    b = -mu / 2.0 - epsilon / mu
    return float(np.exp(epsilon + log_ndtr(b) - norm.logpdf(a)))


def analytic_gaussian_sigma(epsilon, delta, sensitivity):
    """Smallest sigma making ``N(0, sigma^2)`` noise (epsilon, delta)-DP (Balle & Wang).

    Valid for every epsilon > 0 (unlike the classical formula, which needs
    epsilon < 1). Returns 0 for ``epsilon = inf``.

    Parameters
    ----------
    epsilon : float
        Target epsilon, in (0, inf].
    delta : float
        Target delta, in (0, 1).
    sensitivity : float
        L2 sensitivity of the released quantity.

    Returns
    -------
    sigma : float

    Examples
    --------
    >>> from skdp.accounting import analytic_gaussian_sigma, classical_gaussian_sigma
    >>> round(analytic_gaussian_sigma(0.9, 1e-5, sensitivity=1.0), 3)
    4.107
    >>> round(classical_gaussian_sigma(0.9, 1e-5, sensitivity=1.0), 3)
    5.383
    """
    if np.isinf(epsilon):
        return 0.0
    if not 0 < delta < 1:
        raise PrivacyBudgetError(
            f"The Gaussian mechanism needs 0 < delta < 1, got delta={delta!r}.")
    return float(sensitivity / gdp_mu(epsilon, delta))


def analytic_gaussian_sigma_derivative(epsilon, delta, sensitivity):
    """``dsigma/depsilon = -sigma^2 e^epsilon Phi(b) / (Delta phi(a))`` (negative).

    Parameters
    ----------
    epsilon, delta : float
        The budget.
    sensitivity : float
        L2 sensitivity of the released quantity.

    Returns
    -------
    dsigma : float
        ``dsigma / depsilon``.
    """
    mu = gdp_mu(epsilon, delta)
    return float(-sensitivity * gdp_mu_derivative(epsilon, delta) / mu**2)


def classical_gaussian_sigma(epsilon, delta, sensitivity):
    """Dwork & Roth Theorem A.1: ``Delta sqrt(2 ln(1.25/delta)) / epsilon``, epsilon < 1 only.

    Parameters
    ----------
    epsilon : float
        Target epsilon, below 1.
    delta : float
        Target delta.
    sensitivity : float
        L2 sensitivity of the released quantity.

    Returns
    -------
    sigma : float
    """
    if not epsilon < 1:
        raise PrivacyBudgetError(
            f"The classical Gaussian mechanism is only valid for epsilon < 1, got "
            f"epsilon={epsilon!r}; use analytic_gaussian_sigma.")
    return float(sensitivity * np.sqrt(2.0 * np.log(1.25 / delta)) / epsilon)
