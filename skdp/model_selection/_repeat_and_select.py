"""Private selection from private candidates by random stopping, and its accounting.

Repeat a private mechanism ``Q`` (draw a candidate at random, fit it with fresh noise,
score it with noise) a random number ``K`` of times, drawn before any data are read
and kept secret, and release only the best run (Liu & Talwar, "Private selection from
private candidates", STOC 2019; Papernot & Steinke, "Hyperparameter tuning with Renyi
differential privacy", ICLR 2022).

``K`` follows the truncated negative binomial law of shape ``eta >= 0`` and parameter
``gamma`` in (0, 1): ``P(K = k)`` is proportional to ``(1 - gamma)^k C(k + eta - 1,
k)`` for ``k >= 1`` (``eta = 1``: the geometric law ``gamma (1 - gamma)^(k - 1)``;
``eta = 0``: the logarithmic law ``(1 - gamma)^k / (k log(1 / gamma))``). Its mean is
``eta (1 - gamma) / (gamma (1 - gamma^eta))`` (``(1 / gamma - 1) / log(1 / gamma)`` at
``eta = 0``).

Accounting (Papernot & Steinke 2022, Theorem 2). If ``Q`` is ``(lambda, rho(lambda))``
-RDP at every order, the released best run is ``(lambda, rho'(lambda))``-RDP with::

    rho'(lambda) = rho(lambda) + log(E[K]) / (lambda - 1)
                   + min over lambda_hat of (1 + eta) ((1 - 1 / lambda_hat) rho(lambda_hat)
                                                       + log(1 / gamma) / lambda_hat).

Letting both orders grow gives the pure-DP case: an ``epsilon``-DP ``Q`` makes the
released best run ``(2 + eta) epsilon``-DP (``3 epsilon`` for the geometric law: Liu
& Talwar 2019, Theorem 3.4), whatever the mean number of runs.

The guarantee covers the best run alone: the other runs, their scores and ``K`` itself
must stay secret (knowing ``K`` turns the search into a best-of-``K`` of fixed length,
which costs up to ``K`` times ``Q``).
"""

import math

import numpy as np
from scipy.optimize import brentq

from ..accounting._rdp import ORDERS

STOPPING_LAWS = {"geometric": 1.0, "logarithmic": 0.0}
"""Names of the shapes ``eta`` of the law of the number of runs."""


def stopping_shape(stopping):
    """The shape ``eta`` of the law named (or given) by ``stopping``."""
    if isinstance(stopping, str):
        if stopping not in STOPPING_LAWS:
            raise ValueError(f"stopping must be one of {sorted(STOPPING_LAWS)} or a shape "
                             f"eta >= 0, got {stopping!r}.")
        return STOPPING_LAWS[stopping]
    eta = float(stopping)
    if not (np.isfinite(eta) and eta >= 0):
        raise ValueError(f"The stopping law's shape eta must be finite and >= 0, got "
                         f"{stopping!r}.")
    return eta


def mean_runs(eta, gamma):
    """``E[K]`` of the truncated negative binomial law of shape ``eta``, parameter ``gamma``."""
    if eta == 0:
        return (1 / gamma - 1) / math.log(1 / gamma)
    return eta * (1 - gamma) / (gamma * -math.expm1(eta * math.log(gamma)))


def stopping_parameter(eta, mean):
    """The ``gamma`` in (0, 1) whose law of shape ``eta`` has mean ``mean`` (> 1)."""
    mean = float(mean)
    if not mean > 1:
        raise ValueError(f"The mean number of runs must be > 1, got {mean!r}.")
    if eta == 1:
        return 1.0 / mean
    # E[K] decreases from infinity (gamma -> 0) to 1 (gamma -> 1)
    low = 1e-300
    return brentq(lambda g: mean_runs(eta, g) - mean, low, 1 - 1e-12, xtol=1e-15,
                  rtol=1e-13)


def draw_runs(eta, gamma, rng):
    """One draw of ``K`` (at least 1) from the law of shape ``eta``, parameter ``gamma``."""
    if eta == 1:
        return int(rng.geometric(gamma))
    if eta == 0:
        return int(rng.logseries(1 - gamma))
    while True:  # the negative binomial law conditioned on K >= 1
        runs = int(rng.negative_binomial(eta, gamma))
        if runs >= 1:
            return runs


def law_of_runs(eta, gamma, k):
    """``P(K = k)`` for ``k`` in an array of integers >= 1 (the reference law, for tests)."""
    k = np.asarray(k, dtype=float)
    if eta == 0:
        return (1 - gamma) ** k / (k * math.log(1 / gamma))
    from scipy.special import gammaln

    log_comb = gammaln(k + eta) - gammaln(eta) - gammaln(k + 1)
    return np.exp(log_comb + k * math.log1p(-gamma)) / (gamma ** -eta - 1)


def pure_selection_epsilon(epsilon, eta):
    """Pure-DP cost ``(2 + eta) epsilon`` of the released best run of an ``epsilon``-DP ``Q``."""
    return (2.0 + eta) * float(epsilon)


def selection_rdp(rdp, eta, gamma, orders=ORDERS):
    """RDP at ``orders`` of the released best run, from ``Q``'s RDP ``rdp`` at ``orders``.

    Papernot & Steinke 2022, Theorem 2, the second order ``lambda_hat`` ranging over
    ``orders``.
    """
    rdp = np.asarray(rdp, dtype=float)
    with np.errstate(over="ignore", invalid="ignore"):
        second = (1 + eta) * ((1 - 1 / orders) * rdp + math.log(1 / gamma) / orders)
    second = float(np.nan_to_num(second, nan=np.inf).min())
    return rdp + second + math.log(mean_runs(eta, gamma)) / (orders - 1)
