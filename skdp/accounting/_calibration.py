"""Conservative calibration of the DP-SGD noise multiplier to a target (epsilon, delta).

``epsilon_acct(z)`` is decreasing in the noise multiplier ``z``. The search keeps
a bracket ``[lo, hi]`` with ``epsilon_acct(hi) <= target < epsilon_acct(lo)`` and
always returns ``hi``, the end known to be within budget (spec
``dp_sgd_and_accounting.md`` 5). Full-batch DP-GD under the PLD accountant is
solved in closed form through Gaussian DP.
"""

import math
from functools import lru_cache

from ..exceptions import PrivacyBudgetError
from ._dpsgd import _check_accounting_args, _float_or_none, _is_exact_gdp, dpsgd_epsilon
from ._dpsgd import composed_mu
from ._gaussian import gaussian_delta, gdp_mu, gdp_mu_derivative

MAX_NOISE_MULTIPLIER = 1e4
# The least multiplier searched: a target reachable with less noise gets this one.
MIN_NOISE_MULTIPLIER = 1e-3
# The least multiplier the PLD accountant is asked about under Poisson sampling: its
# discretised loss distribution grows as z falls (measured, q = 0.01 and 1000 steps: 1 s
# at z = 0.5, 4 s at 0.2, 7.5 s at 0.15; at z = 0.016 it asked for 1.5 TiB). At 0.2
# that configuration already certifies epsilon 229 (delta 1e-5).
PLD_MIN_NOISE_MULTIPLIER = 0.2


def _budget_error(epsilon, delta, sample_rate, n_steps, max_noise_multiplier):
    epochs = n_steps * sample_rate
    return PrivacyBudgetError(
        f"epsilon={epsilon!r} (delta={delta!r}) is too small for this training length: "
        f"{n_steps} noisy steps at sampling rate {sample_rate:.4g} ({epochs:.4g} epochs) "
        f"would need a noise multiplier above {max_noise_multiplier:g}, which leaves "
        "nothing of the signal. Increase epsilon, or train for fewer epochs (fewer "
        "steps), or lower the sampling rate."
    )


def _initial_guess(epsilon, delta, sample_rate, n_steps):
    """Noise multiplier from the central-limit (Gaussian DP) approximation.

    Poisson-subsampled Gaussian steps compose approximately to ``mu``-GDP with
    ``mu = q sqrt(T (exp(1/z^2) - 1))`` (Bu, Dong, Long & Su 2020). Only a
    starting point of the search, never a guarantee.
    """
    mu = gdp_mu(epsilon, delta)
    ratio = mu / (sample_rate * math.sqrt(n_steps))
    return 1.0 / math.sqrt(math.log1p(ratio**2))


def search_noise_multiplier(epsilon_of, target, *, start=1.0, rtol=1e-3,
                            max_noise_multiplier=MAX_NOISE_MULTIPLIER,
                            min_noise_multiplier=MIN_NOISE_MULTIPLIER):
    """Smallest noise multiplier (to ``rtol``) whose ``epsilon_of`` is within ``target``.

    Parameters
    ----------
    epsilon_of : callable
        Decreasing map from a noise multiplier to the certified epsilon.
    target : float
        Target epsilon > 0.
    start : float, default=1.0
        First guess.
    rtol : float, default=1e-3
        Stop when ``epsilon_of(hi) >= (1 - rtol) * target`` or when the bracket
        is narrower than ``1e-6 * hi``.
    max_noise_multiplier : float, default=1e4
        Give up (``PrivacyBudgetError``) beyond this multiplier.
    min_noise_multiplier : float, default=1e-3
        The least multiplier tried: when it is within budget it is returned (its
        epsilon then below the target, possibly far below).

    Returns
    -------
    noise_multiplier : float
        The upper end of the final bracket: ``epsilon_of(noise_multiplier) <= target``.
    epsilon : float
        ``epsilon_of(noise_multiplier)``.
    """
    hi, e_hi = float(start), epsilon_of(start)
    lo, e_lo = None, None
    factor = 1.25
    while e_hi > target:                       # move up until within budget
        lo, e_lo = hi, e_hi
        hi = hi * factor
        factor *= factor
        if hi > max_noise_multiplier:
            if lo >= max_noise_multiplier:
                raise PrivacyBudgetError(
                    f"no noise multiplier up to {max_noise_multiplier:g} reaches "
                    f"epsilon={target!r}")
            hi = max_noise_multiplier
        e_hi = epsilon_of(hi)
        if e_hi > target and hi >= max_noise_multiplier:
            raise PrivacyBudgetError(
                f"no noise multiplier up to {max_noise_multiplier:g} reaches "
                f"epsilon={target!r}")
    factor = 1.25
    while lo is None:                          # move down until over budget
        if hi <= min_noise_multiplier:         # the least noise searched is within budget
            return hi, e_hi
        candidate = max(hi / factor, min_noise_multiplier)
        factor *= factor
        e_candidate = epsilon_of(candidate)
        if e_candidate > target:
            lo, e_lo = candidate, e_candidate
        else:
            hi, e_hi = candidate, e_candidate
    interpolate = True
    while e_hi < (1.0 - rtol) * target and (hi - lo) > 1e-6 * hi:
        # interpolation of log(epsilon) against log(z), safeguarded, alternating with
        # bisection in log z when it stalls
        width = math.log(hi) - math.log(lo)
        if interpolate and math.isfinite(e_lo) and e_hi > 0:
            slope = (math.log(e_hi) - math.log(e_lo)) / width
            t = (math.log(target) - math.log(e_lo)) / slope / width
            t = min(max(t, 0.05), 0.95)
        else:
            t = 0.5
        mid = math.exp(math.log(lo) + t * width)
        e_mid = epsilon_of(mid)
        if e_mid <= target:
            hi, e_hi = mid, e_mid
            interpolate = True
        else:
            # the interpolant undershot: bisect next time so the bracket shrinks fast
            lo, e_lo = mid, e_mid
            interpolate = not interpolate
    return hi, e_hi


def _steps_mu(epsilon, delta, count_noise_std):
    """Gaussian-DP ``mu`` left for the steps once the count ``1/s^2`` is taken (or None)."""
    mu_squared = gdp_mu(epsilon, delta) ** 2
    if count_noise_std is not None:
        mu_squared -= 1.0 / count_noise_std**2
    return math.sqrt(mu_squared) if mu_squared > 0 else None


@lru_cache(maxsize=256)
def _calibrate(epsilon, delta, sample_rate, n_steps, accountant, rtol, max_noise_multiplier,
               count_noise_std):
    if math.isinf(epsilon):
        return 0.0, math.inf
    accounting = dict(accountant=accountant, count_noise_std=count_noise_std)
    if _is_exact_gdp(sample_rate, accountant):
        mu = _steps_mu(epsilon, delta, count_noise_std)
        if mu is None:
            raise _budget_error(epsilon, delta, sample_rate, n_steps, max_noise_multiplier)
        z = math.sqrt(n_steps) / mu
        while dpsgd_delta_gdp(z, n_steps, epsilon, count_noise_std) > delta:
            z = math.nextafter(z, math.inf)
        if z > max_noise_multiplier:
            raise _budget_error(epsilon, delta, sample_rate, n_steps, max_noise_multiplier)
        # delta(epsilon; mu(z)) <= delta was checked above, so the target itself is
        # certified; the root finder of gaussian_epsilon may land an ulp above it
        spent = dpsgd_epsilon(z, sample_rate, n_steps, delta, **accounting)
        return z, min(spent, epsilon)

    def epsilon_of(z):
        return dpsgd_epsilon(z, sample_rate, n_steps, delta, **accounting)

    start = min(max(_initial_guess(epsilon, delta, sample_rate, n_steps), 0.3),
                max_noise_multiplier)
    least = PLD_MIN_NOISE_MULTIPLIER if accountant == "pld" else MIN_NOISE_MULTIPLIER
    try:
        return search_noise_multiplier(epsilon_of, epsilon, start=start, rtol=rtol,
                                       max_noise_multiplier=max_noise_multiplier,
                                       min_noise_multiplier=min(least, start))
    except PrivacyBudgetError:
        raise _budget_error(epsilon, delta, sample_rate, n_steps,
                            max_noise_multiplier) from None


def dpsgd_delta_gdp(noise_multiplier, n_steps, epsilon, count_noise_std):
    """Exact delta of full-batch DP-GD with its row count (Gaussian DP)."""
    return gaussian_delta(epsilon, composed_mu(noise_multiplier, n_steps, count_noise_std))


def _check_target(epsilon, delta):
    if not epsilon > 0:
        raise ValueError(f"epsilon must be > 0, got {epsilon!r}.")
    if not 0 < delta < 1:
        raise ValueError(
            f"DP-SGD needs 0 < delta < 1, got delta={delta!r}: the Gaussian noise of "
            "DP-SGD gives (epsilon, delta)-DP with delta > 0 only.")


def calibrate_noise_multiplier(epsilon, delta, sample_rate, n_steps, *, accountant="pld",
                               rtol=1e-3, max_noise_multiplier=MAX_NOISE_MULTIPLIER,
                               return_epsilon=False, count_noise_std=None):
    """Smallest DP-SGD noise multiplier meeting a target (epsilon, delta), conservatively.

    Parameters
    ----------
    epsilon : float
        Target epsilon > 0; ``inf`` returns 0 (no noise).
    delta : float
        Target delta in (0, 1).
    sample_rate : float
        Poisson sampling probability ``q`` in (0, 1]; ``1`` is full-batch DP-GD,
        solved in closed form under the PLD accountant.
    n_steps : int
        Number of noisy steps ``T`` (fixed before calibration).
    accountant : {"pld", "rdp"}, default="pld"
        Accountant of :func:`dpsgd_epsilon`.
    rtol : float, default=1e-3
        The certified epsilon of the result is in ``[(1 - rtol) epsilon, epsilon]``
        (unless the search bracket collapses first). Under Poisson sampling with the
        PLD accountant the multiplier is at least ``PLD_MIN_NOISE_MULTIPLIER`` (0.2,
        where the accountant's cost grows fast): a target above what 0.2 certifies
        (epsilon in the hundreds) gets 0.2 and spends less than the target.
    max_noise_multiplier : float, default=1e4
        Beyond this the budget is declared too small for the training length.
    return_epsilon : bool, default=False
        Also return the epsilon certified for the returned multiplier.
    count_noise_std : float or None, default=None
        Standard deviation of the Gaussian row count composed with the steps
        (see :func:`dpsgd_epsilon`); the steps get what the count leaves.

    Returns
    -------
    noise_multiplier : float
        Satisfies ``dpsgd_epsilon(noise_multiplier, ...) <= epsilon``.
    epsilon_spent : float
        Only if ``return_epsilon``.

    Raises
    ------
    PrivacyBudgetError
        When the target needs a noise multiplier above ``max_noise_multiplier``.

    Examples
    --------
    >>> from skdp.accounting import calibrate_noise_multiplier, dpsgd_epsilon
    >>> z = calibrate_noise_multiplier(1.0, 1e-5, sample_rate=1.0, n_steps=100)
    >>> dpsgd_epsilon(z, sample_rate=1.0, n_steps=100, delta=1e-5) <= 1.0
    True
    """
    _check_target(epsilon, delta)
    _check_accounting_args(1.0, sample_rate, n_steps, accountant)
    z, spent = _calibrate(float(epsilon), float(delta), float(sample_rate), int(n_steps),
                          accountant, float(rtol), float(max_noise_multiplier),
                          _float_or_none(count_noise_std))
    return (z, spent) if return_epsilon else z


def noise_multiplier_derivative(epsilon, delta, sample_rate, n_steps, *, accountant="pld",
                                relative_step=1e-3, count_noise_std=None):
    """Derivative ``dz/depsilon`` of the calibrated noise multiplier (negative).

    Full-batch DP-GD under the PLD accountant uses the Gaussian-DP closed form: with
    ``m^2 = mu^2 - 1/s^2`` left for the steps, ``z = sqrt(T) / m`` and
    ``dz/depsilon = -(sqrt(T) mu / m^3) dmu/depsilon``. Otherwise
    ``1 / (depsilon_acct/dz)`` with a central difference of the accountant at the
    calibrated ``z``, step ``relative_step * z``. The count's ``s`` is held fixed.

    Parameters
    ----------
    epsilon : float
        Target epsilon at which to differentiate.
    delta : float
        Target delta in (0, 1).
    sample_rate : float
        Poisson sampling probability in (0, 1].
    n_steps : int
        Number of noisy steps.
    accountant : {"pld", "rdp"}, default="pld"
        Accountant of :func:`dpsgd_epsilon`.
    relative_step : float, default=1e-3
        Central-difference step relative to ``z``. The PLD accountant is
        discretised (loss grid ``1e-4``), so a step much below ``1e-3 z`` picks
        up the discretisation.
    count_noise_std : float or None, default=None
        The row count's noise, held fixed (see :func:`calibrate_noise_multiplier`).

    Returns
    -------
    derivative : float
    """
    _check_target(epsilon, delta)
    if math.isinf(epsilon):
        return 0.0
    if _is_exact_gdp(sample_rate, accountant):
        mu = gdp_mu(epsilon, delta)
        steps_mu = _steps_mu(epsilon, delta, count_noise_std)
        return -math.sqrt(n_steps) * mu / steps_mu**3 * gdp_mu_derivative(epsilon, delta)
    accounting = dict(accountant=accountant, count_noise_std=count_noise_std)
    z = calibrate_noise_multiplier(epsilon, delta, sample_rate, n_steps, rtol=1e-6,
                                   **accounting)
    h = relative_step * z
    up = dpsgd_epsilon(z + h, sample_rate, n_steps, delta, **accounting)
    down = dpsgd_epsilon(z - h, sample_rate, n_steps, delta, **accounting)
    return 2.0 * h / (up - down)
