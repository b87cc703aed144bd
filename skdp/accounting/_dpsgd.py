"""Privacy accounting of DP-SGD: a DP row count and T Poisson-sampled Gaussian steps.

Google's ``dp-accounting`` PLD accountant (default, tightest) and the RDP accountant
(improved RDP-to-DP conversion; dp-accounting's computation, vectorised in
:mod:`skdp.accounting._rdp`), both for the event
``Gaussian(s) o T x PoissonSampled(q, Gaussian(z))`` under the add/remove-one
relation: the optional first event is the Gaussian count ``n + N(0, s^2)``
(sensitivity 1) that DP-SGD releases to normalise its steps, because the number of
rows is private under add/remove (``docs/privacy/dpsgd.rst``). Both mechanisms have
fixed public parameters, so the composition is non-adaptive. Full-batch DP-GD
(``q = 1``) under the PLD accountant is accounted exactly in closed form: the count
and ``T`` Gaussian steps of multiplier ``z`` are ``mu``-GDP with
``mu = sqrt(T / z^2 + 1 / s^2)``, which is what the PLD accountant approximates from
above.

``dp_accounting`` is imported inside the functions, so that ``import skdp``
stays fast.
"""

import math
from dataclasses import dataclass
from functools import lru_cache
from itertools import groupby

import numpy as np

from ._gaussian import gaussian_delta, gaussian_epsilon, gdp_mu
from ._rdp import ORDERS, dpsgd_rdp, rdp_to_delta, rdp_to_epsilon

ACCOUNTANTS = ("pld", "rdp")
# s = 10 / mu: the row count takes (1/10)^2 = 1 % of the Gaussian-DP budget mu^2
COUNT_SHARE_FACTOR = 10.0


def _check_accounting_args(noise_multiplier, sample_rate, n_steps, accountant):
    if accountant not in ACCOUNTANTS:
        raise ValueError(f"accountant must be one of {ACCOUNTANTS}, got {accountant!r}.")
    if not 0 < sample_rate <= 1:
        raise ValueError(f"sample_rate must be in (0, 1], got {sample_rate!r}.")
    if int(n_steps) != n_steps or n_steps < 1:
        raise ValueError(f"n_steps must be a positive integer, got {n_steps!r}.")
    if not noise_multiplier >= 0:
        raise ValueError(f"noise_multiplier must be >= 0, got {noise_multiplier!r}.")


def _dpsgd_event(noise_multiplier, sample_rate, n_steps, count_noise_std=None):
    import dp_accounting

    step = dp_accounting.GaussianDpEvent(float(noise_multiplier))
    if sample_rate < 1:
        step = dp_accounting.PoissonSampledDpEvent(float(sample_rate), step)
    steps = dp_accounting.SelfComposedDpEvent(step, int(n_steps))
    if count_noise_std is None:
        return steps
    count = dp_accounting.GaussianDpEvent(float(count_noise_std))
    return dp_accounting.ComposedDpEvent([count, steps])


def composed_mu(noise_multiplier, n_steps, count_noise_std=None):
    """Gaussian-DP ``mu`` of the count and ``T`` full-batch steps: ``sqrt(T/z^2 + 1/s^2)``.

    Parameters
    ----------
    noise_multiplier : float
        Noise multiplier ``z`` of the steps.
    n_steps : int
        Number of steps ``T``.
    count_noise_std : float or None
        Standard deviation ``s`` of the Gaussian row count (sensitivity 1);
        ``None`` leaves the count out.

    Returns
    -------
    mu : float
    """
    mu_squared = n_steps / noise_multiplier**2
    if count_noise_std is not None:
        mu_squared += 1.0 / count_noise_std**2
    return math.sqrt(mu_squared)


def default_count_noise_std(epsilon, delta):
    """Public standard deviation of DP-SGD's row count for a target (epsilon, delta).

    ``s = 10 / mu`` with ``mu`` the Gaussian-DP parameter of the target: the count
    then takes 1 %% of the budget ``mu^2`` (exactly so for full-batch DP-GD, about so
    under Poisson sampling, where the accountant calibrates the steps to what is
    left). A function of public quantities only.

    Parameters
    ----------
    epsilon : float
        Target epsilon; ``inf`` gives ``0`` (no noise, the non-private baseline).
    delta : float
        Target delta in (0, 1).

    Returns
    -------
    count_noise_std : float

    Examples
    --------
    >>> from skdp.accounting import default_count_noise_std
    >>> round(default_count_noise_std(1.0, 1e-5), 2)
    37.31
    """
    if math.isinf(epsilon):
        return 0.0
    return COUNT_SHARE_FACTOR / gdp_mu(epsilon, delta)


def with_gaussian_releases(count_noise_std, mu):
    """The one Gaussian (sensitivity 1) equivalent to the row count's and further
    Gaussian releases of Gaussian-DP ``mu`` together: ``(1 / s^2 + mu^2)^(-1/2)``.

    Gaussian mechanisms compose exactly in Gaussian DP (``mu^2`` adds up, Dong, Roth
    & Su 2022), and a Gaussian mechanism of sensitivity 1 and standard deviation
    ``s`` is exactly ``1/s``-GDP, so the count composed with the releases has the
    privacy profile of this one Gaussian under every accountant (PLD and RDP alike:
    the Renyi curve ``alpha mu^2 / 2`` adds up too). DP-SGD's ``inference=True``
    composes its gradient and information releases with the steps this way.

    Parameters
    ----------
    count_noise_std : float
        ``s``; ``0`` (an exact count, no noise) gives ``0``.
    mu : float
        The further releases' Gaussian-DP ``mu`` (``0``: none).

    Returns
    -------
    count_noise_std : float

    Examples
    --------
    >>> from skdp.accounting._dpsgd import with_gaussian_releases
    >>> with_gaussian_releases(2.0, 0.0), round(with_gaussian_releases(1.0, 1.0), 4)
    (2.0, 0.7071)
    """
    if count_noise_std == 0:
        return 0.0
    return float((count_noise_std**-2 + mu**2) ** -0.5)


def _pld_accountant():
    from dp_accounting.pld import PLDAccountant

    return PLDAccountant()


def _is_exact_gdp(sample_rate, accountant):
    return sample_rate == 1 and accountant == "pld"


def dpsgd_epsilon(noise_multiplier, sample_rate, n_steps, delta, *, accountant="pld",
                  count_noise_std=None):
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
        ``"rdp"``: Renyi DP with dp-accounting's orders and conversion (looser;
        10-40x faster than dp-accounting's own under sampling).
    count_noise_std : float or None, default=None
        Standard deviation ``s`` of the Gaussian row count released before the
        steps (sensitivity 1), composed with them; ``None`` accounts the steps
        alone.

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
    if noise_multiplier == 0 or count_noise_std == 0:
        return math.inf
    if np.isinf(noise_multiplier):
        return 0.0 if count_noise_std is None else gaussian_epsilon(delta, 1.0 / count_noise_std)
    if _is_exact_gdp(sample_rate, accountant):
        return gaussian_epsilon(delta, composed_mu(noise_multiplier, n_steps, count_noise_std))
    return _accountant_epsilon(float(noise_multiplier), float(sample_rate), int(n_steps),
                               float(delta), accountant, _float_or_none(count_noise_std))


def _float_or_none(value):
    return None if value is None else float(value)


@lru_cache(maxsize=1024)
def _accountant_epsilon(noise_multiplier, sample_rate, n_steps, delta, accountant,
                        count_noise_std):
    # a pure function of public settings: cached, so that refits (grid searches,
    # cross-validation, calibration) do not recompose the same event
    if accountant == "rdp":
        return rdp_to_epsilon(dpsgd_rdp(noise_multiplier, sample_rate, n_steps,
                                        count_noise_std), delta)
    acc = _pld_accountant()
    acc.compose(_dpsgd_event(noise_multiplier, sample_rate, n_steps, count_noise_std))
    return float(acc.get_epsilon(delta))


@dataclass(frozen=True)
class DPSGDEvent:
    """One DP-SGD run (a ``fit`` or ``partial_fit`` call) as the accountant sees it.

    Every field is a public value: the run's noise multiplier, sampling rate, number
    of steps and the standard deviation of its Gaussian row count (``0``: an exact
    count, an unbounded spend), the accountant that certified the run alone, and the
    pure epsilon of a private ``data_norm`` drawn before it (added by basic
    composition).
    """

    noise_multiplier: float
    sample_rate: float
    n_steps: int
    count_noise_std: float
    accountant: str = "rdp"
    data_norm_epsilon: float = 0.0


def composed_dpsgd_epsilon(events, delta, *, accountant="rdp"):
    """Epsilon of several DP-SGD runs on the same rows, composed in one accountant.

    Each run is its Gaussian row count followed by its ``T`` Poisson-sampled
    Gaussian steps (add/remove-one). The runs are composed as if they all read the
    same rows (a record may be in every one of them), which bounds any overlap. The
    parameters of each run are public and fixed before its data are seen; a later
    run may start from an earlier release (post-processing) but its noise multiplier,
    rate and steps do not depend on it, so the composition is non-adaptive.

    Parameters
    ----------
    events : sequence of DPSGDEvent
        The runs, in order (at least one).
    delta : float
        Target delta in (0, 1).
    accountant : {"pld", "rdp"}, default="rdp"
        ``"rdp"``: the runs' Renyi DP curves are added at every order, then
        converted once. ``"pld"``: exact Gaussian DP (``mu^2`` adds up) when every
        run is full-batch, else dp-accounting's PLD accountant on the composed
        event.

    Returns
    -------
    epsilon : float
        Excludes the runs' ``data_norm_epsilon`` (the caller adds them).
    """
    events = list(events)
    if not events:
        raise ValueError("Compose at least one DP-SGD run.")
    for event in events:
        _check_accounting_args(event.noise_multiplier, event.sample_rate, event.n_steps,
                               accountant)
    if not 0 < delta < 1:
        raise ValueError(f"DP-SGD accounting needs 0 < delta < 1, got delta={delta!r}.")
    if any(e.noise_multiplier == 0 or e.count_noise_std == 0 for e in events):
        return math.inf
    if accountant == "pld" and all(e.sample_rate == 1 for e in events):
        mu_squared = sum(composed_mu(e.noise_multiplier, e.n_steps, e.count_noise_std) ** 2
                         for e in events)
        return gaussian_epsilon(delta, math.sqrt(mu_squared))
    if accountant == "rdp":
        rdp = sum(len(list(group)) * _run_rdp(parameters)
                  for parameters, group in groupby(events, key=_public_parameters))
        return rdp_to_epsilon(rdp, delta)
    import dp_accounting

    # runs alike in a row are one self-composed event (the PLD of a power is cheap)
    parts = [dp_accounting.SelfComposedDpEvent(_run_event(event), len(list(group)))
             for event, group in groupby(events, key=_public_parameters)]
    acc = _pld_accountant()
    acc.compose(dp_accounting.ComposedDpEvent(parts))
    return float(acc.get_epsilon(delta))


def _public_parameters(event):
    return (float(event.noise_multiplier), float(event.sample_rate), int(event.n_steps),
            float(event.count_noise_std))


def _run_event(parameters):
    z, q, steps, s = parameters
    if math.isinf(z):   # steps that release nothing: the count alone
        import dp_accounting

        return dp_accounting.GaussianDpEvent(s)
    return _dpsgd_event(z, q, steps, s)


@lru_cache(maxsize=256)
def _run_rdp(parameters):
    z, q, steps, s = parameters
    if math.isinf(z):
        return ORDERS / (2 * s**2)
    return dpsgd_rdp(z, q, steps, s)


def dpsgd_delta(noise_multiplier, sample_rate, n_steps, epsilon, *, accountant="pld",
                count_noise_std=None):
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
    count_noise_std : float or None, default=None
        The row count's noise, as in :func:`dpsgd_epsilon`.

    Returns
    -------
    delta : float
    """
    _check_accounting_args(noise_multiplier, sample_rate, n_steps, accountant)
    if noise_multiplier == 0 or count_noise_std == 0:
        return 1.0
    if np.isinf(noise_multiplier):
        return 0.0 if count_noise_std is None else gaussian_delta(epsilon, 1.0 / count_noise_std)
    if _is_exact_gdp(sample_rate, accountant):
        return gaussian_delta(epsilon, composed_mu(noise_multiplier, n_steps, count_noise_std))
    if accountant == "rdp":
        return rdp_to_delta(dpsgd_rdp(float(noise_multiplier), float(sample_rate),
                                      int(n_steps), _float_or_none(count_noise_std)), epsilon)
    acc = _pld_accountant()
    acc.compose(_dpsgd_event(noise_multiplier, sample_rate, n_steps, count_noise_std))
    return float(acc.get_delta(epsilon))



def dpgd_steps_within(epsilon, noise_multiplier, delta, count_noise_std, at_least=0):
    """The most full-batch DP-GD steps, at least ``at_least``, certified within ``epsilon``.

    After ``T`` steps of multiplier ``z`` and a Gaussian row count of standard deviation
    ``s``, the run is exactly ``sqrt(T / z^2 + 1 / s^2)``-GDP (:func:`composed_mu`): the
    largest ``T`` whose ``mu`` is at most ``gdp_mu(epsilon, delta)``.

    Parameters
    ----------
    epsilon : float
        The budget.
    noise_multiplier : float
        ``z``, > 0.
    delta : float
        The certificate's delta.
    count_noise_std : float
        ``s``, > 0.
    at_least : int, default=0
        Steps already run: returned when no more fit.

    Returns
    -------
    n_steps : int
    """
    z, s = float(noise_multiplier), float(count_noise_std)
    mu = gdp_mu(float(epsilon), delta)
    steps = max(int(at_least), int(math.floor(z**2 * (mu**2 - s**-2) * (1 + 1e-12))))
    while steps > at_least and composed_mu(z, steps, s) > mu:
        steps -= 1
    return steps
