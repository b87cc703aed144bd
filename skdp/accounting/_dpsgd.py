"""Privacy accounting of DP-SGD: T Poisson-sampled Gaussian steps (add/remove-one).

A thin wrapper over Google's ``dp-accounting``: the PLD accountant (default,
tightest) and the RDP accountant (improved RDP-to-DP conversion), both for the
event ``T x PoissonSampled(q, Gaussian(z))`` under the add/remove-one relation
(spec ``dp_sgd_and_accounting.md`` 3-4). Full-batch DP-GD (``q = 1``) under the
PLD accountant is accounted exactly in closed form: ``T`` Gaussian steps of
multiplier ``z`` are ``mu``-GDP with ``mu = sqrt(T) / z``, which is what the PLD
accountant approximates from above.

``dp_accounting`` is imported inside the functions, so that ``import skdp``
stays fast.
"""

import math
from functools import lru_cache

import numpy as np

from ._gaussian import gaussian_delta, gaussian_epsilon

ACCOUNTANTS = ("pld", "rdp")


def _check_accounting_args(noise_multiplier, sample_rate, n_steps, accountant):
    if accountant not in ACCOUNTANTS:
        raise ValueError(f"accountant must be one of {ACCOUNTANTS}, got {accountant!r}.")
    if not 0 < sample_rate <= 1:
        raise ValueError(f"sample_rate must be in (0, 1], got {sample_rate!r}.")
    if int(n_steps) != n_steps or n_steps < 1:
        raise ValueError(f"n_steps must be a positive integer, got {n_steps!r}.")
    if not noise_multiplier >= 0:
        raise ValueError(f"noise_multiplier must be >= 0, got {noise_multiplier!r}.")


def _dpsgd_event(noise_multiplier, sample_rate, n_steps):
    import dp_accounting

    step = dp_accounting.GaussianDpEvent(float(noise_multiplier))
    if sample_rate < 1:
        step = dp_accounting.PoissonSampledDpEvent(float(sample_rate), step)
    return dp_accounting.SelfComposedDpEvent(step, int(n_steps))


def _make_accountant(accountant):
    if accountant == "pld":
        from dp_accounting.pld import PLDAccountant

        return PLDAccountant()
    from dp_accounting.rdp import RdpAccountant

    return RdpAccountant()


def _is_exact_gdp(sample_rate, accountant):
    return sample_rate == 1 and accountant == "pld"


def dpsgd_epsilon(noise_multiplier, sample_rate, n_steps, delta, *, accountant="pld"):
    """Epsilon certified for DP-SGD with Poisson sampling (add/remove-one).

    Parameters
    ----------
    noise_multiplier : float
        Ratio ``z`` of the Gaussian noise standard deviation on the sum of
        clipped per-example gradients to the clipping norm. ``0`` means no
        noise (``inf`` is returned), ``inf`` means no information (``0``).
    sample_rate : float
        Poisson sampling probability ``q`` in (0, 1]; ``1`` is full-batch DP-GD.
    n_steps : int
        Number of noisy steps ``T``.
    delta : float
        Target delta in (0, 1).
    accountant : {"pld", "rdp"}, default="pld"
        ``"pld"``: dp-accounting's privacy-loss-distribution accountant (for
        ``q = 1`` the exact Gaussian-DP closed form it approximates);
        ``"rdp"``: dp-accounting's Renyi accountant (looser).

    Returns
    -------
    epsilon : float

    Examples
    --------
    Full-batch DP-GD, accounted exactly by Gaussian differential privacy:

    >>> from skdp.accounting import dpsgd_epsilon
    >>> round(dpsgd_epsilon(10.0, sample_rate=1.0, n_steps=100, delta=1e-5), 3)
    4.377
    """
    _check_accounting_args(noise_multiplier, sample_rate, n_steps, accountant)
    if not 0 < delta < 1:
        raise ValueError(f"DP-SGD accounting needs 0 < delta < 1, got delta={delta!r}.")
    if noise_multiplier == 0:
        return math.inf
    if np.isinf(noise_multiplier):
        return 0.0
    if _is_exact_gdp(sample_rate, accountant):
        return gaussian_epsilon(delta, math.sqrt(n_steps) / noise_multiplier)
    return _accountant_epsilon(float(noise_multiplier), float(sample_rate), int(n_steps),
                               float(delta), accountant)


@lru_cache(maxsize=1024)
def _accountant_epsilon(noise_multiplier, sample_rate, n_steps, delta, accountant):
    # a pure function of public settings: cached, so that refits (grid searches,
    # cross-validation, calibration) do not recompose the same event
    acc = _make_accountant(accountant)
    acc.compose(_dpsgd_event(noise_multiplier, sample_rate, n_steps))
    return float(acc.get_epsilon(delta))


def dpsgd_delta(noise_multiplier, sample_rate, n_steps, epsilon, *, accountant="pld"):
    """Delta certified for DP-SGD at a given epsilon (add/remove-one).

    Parameters
    ----------
    noise_multiplier : float
        Noise multiplier ``z`` (see :func:`dpsgd_epsilon`).
    sample_rate : float
        Poisson sampling probability ``q`` in (0, 1].
    n_steps : int
        Number of noisy steps ``T``.
    epsilon : float
        Target epsilon >= 0.
    accountant : {"pld", "rdp"}, default="pld"
        Accountant, as in :func:`dpsgd_epsilon`.

    Returns
    -------
    delta : float
    """
    _check_accounting_args(noise_multiplier, sample_rate, n_steps, accountant)
    if noise_multiplier == 0:
        return 1.0
    if np.isinf(noise_multiplier):
        return 0.0
    if _is_exact_gdp(sample_rate, accountant):
        return gaussian_delta(epsilon, math.sqrt(n_steps) / noise_multiplier)
    acc = _make_accountant(accountant)
    acc.compose(_dpsgd_event(noise_multiplier, sample_rate, n_steps))
    return float(acc.get_delta(epsilon))
