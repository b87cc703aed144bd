"""One release: bounded per-row contributions summed, noise added, an estimate read off.

The unit of privacy is a row, or with ``groups`` a person with all their rows; the
relation is add/remove (the number of rows and of persons are private). Each row ``i``
carries a weight ``w_i`` in ``[0, W]`` (``W = max_sample_weight`` when ``sample_weight``
is given, else 1) and, with ``groups``, the weight is multiplied by ``min(1, M / k)``
(``k`` its person's rows, ``M = max_rows_per_group``), so one unit's weights sum to at
most ``U = W`` (rows) or ``U = W M`` (persons). A statistic releases ``sum_i w_i phi_i +
eta`` for a public map ``phi`` with ``||phi_i||_1 <= L1`` and ``||phi_i||_2 <= L2``:
by the triangle inequality a unit moves the sum by at most ``U L1`` in L1 and ``U L2``
in L2, the sensitivities of the Laplace (``delta = 0``) and Gaussian (``delta > 0``)
mechanisms. :mod:`skdp.stats._cells` applies this to sums divided by their public scales,
so that each coordinate is noised on its own scale. The derivations of each map are in
``docs/privacy/metrics.rst``.
"""

from numbers import Real

import numpy as np

from ..accounting import analytic_gaussian_sigma
from ..utils._groups import check_groups, person_row_weights
from ..utils._random import noise_generator
from ._estimate import NoiseLaw, PrivateEstimate

PRIVACY_PARAMS = {
    "epsilon": """epsilon : float
        Privacy budget of this release, in (0, inf]. ``np.inf`` adds no noise (the
        non-private value, a baseline and test oracle).""",
    "delta": """delta : float, default=0.0
        ``0``: Laplace noise, pure epsilon-DP. In (0, 1): Gaussian noise calibrated by
        the analytic Gaussian mechanism to the L2 sensitivity, (epsilon, delta)-DP.""",
    "sample_weight": """sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weight of each row, clipped to ``max_sample_weight`` (a weight
        above the bound is lowered, never refused). ``None``: every row weighs 1.""",
    "groups": """groups : array-like of shape (n_samples,), default=None
        Each row's person. Given, the unit of privacy is a person with all their rows:
        each row weighs ``min(1, M / k)``, ``k`` its person's rows and ``M =
        max_rows_per_group``, so a person weighs at most ``M``.""",
    "max_rows_per_group": """max_rows_per_group : float, default=1.0
        ``M``, public; the noise grows in proportion to it. With the default each
        person weighs 1 in total (a person-level statistic).""",
    "max_sample_weight": """max_sample_weight : float, default=1.0
        Public bound on ``sample_weight``; the noise grows in proportion to it.""",
    "random_state": """random_state : None, int, numpy.random.RandomState or Generator, default=None
        Source of the noise. ``None``: fresh cryptographic noise. Anything else is
        reproducibility mode: the same seed gives the same release; never publish a
        release with its seed.""",
}
"""Docstring fragments of the parameters every release shares."""


def check_budget(epsilon, delta):
    """Refuse a budget outside ``epsilon`` in (0, inf], ``delta`` in [0, 1).

    Parameters
    ----------
    epsilon, delta : float
        The budget.
    """
    for name, value in (("epsilon", epsilon), ("delta", delta)):
        if isinstance(value, bool) or not isinstance(value, Real) or np.isnan(value):
            raise ValueError(f"{name} must be a number; got {value!r}.")
    if not epsilon > 0:
        raise ValueError(f"epsilon must lie in (0, inf]; got {epsilon!r}.")
    if not 0 <= delta < 1:
        raise ValueError(f"delta must lie in [0, 1); got {delta!r}.")


def check_positive(name, value):
    """Refuse a public bound that is not a finite positive number."""
    if isinstance(value, bool) or not isinstance(value, Real) or not 0 < value < np.inf:
        raise ValueError(f"{name} must be a finite positive number; got {value!r}.")


def check_finite(name, values):
    """``values`` as float, refused (no value, no count named) if any is NaN or infinite."""
    values = np.asarray(values, dtype=float)
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{name} holds NaN or infinity; every value must be finite.")
    return values


def check_lengths(*arrays):
    """Refuse arrays of different lengths (neither length is stated: it is private)."""
    if len({len(a) for a in arrays}) > 1:
        raise ValueError("The inputs have different numbers of rows; give one value per "
                         "row in each.")


def row_weights(n_rows, sample_weight, groups, max_sample_weight, max_rows_per_group):
    """Each row's weight and ``U``, the bound on one unit's total weight.

    Parameters
    ----------
    n_rows : int
        The number of rows (used to check lengths only).
    sample_weight, groups : array-like or None
        As the public functions take them.
    max_sample_weight, max_rows_per_group : float
        ``W`` and ``M``.

    Returns
    -------
    weights : ndarray of shape (n_rows,)
    unit_bound : float
    """
    check_positive("max_sample_weight", max_sample_weight)
    check_positive("max_rows_per_group", max_rows_per_group)
    weights, bound = np.ones(n_rows), 1.0
    if sample_weight is not None:
        sample_weight = check_finite("sample_weight", np.ravel(sample_weight))
        check_lengths(sample_weight, weights)
        if np.any(sample_weight < 0):
            raise ValueError("sample_weight holds a negative weight; weights must be >= 0.")
        weights, bound = np.minimum(sample_weight, float(max_sample_weight)), float(
            max_sample_weight)
    if groups is not None:
        codes = check_groups(groups, n_rows)
        weights = weights * person_row_weights(codes, max_rows_per_group)
        bound *= float(max_rows_per_group)
    return weights, bound


def calibrate(epsilon, delta, l1, l2):
    """The noise law of a sum whose sensitivity is ``l1`` (L1) and ``l2`` (L2).

    Parameters
    ----------
    epsilon, delta : float
        The budget.
    l1, l2 : float
        The sensitivities.

    Returns
    -------
    law : NoiseLaw
        ``Laplace(l1 / epsilon)`` for ``delta = 0``, the analytic Gaussian for
        ``delta > 0``, ``"none"`` for ``epsilon = inf``.
    """
    if np.isinf(epsilon):
        return NoiseLaw("none", 0.0)
    if delta == 0:
        return NoiseLaw("laplace", float(l1) / float(epsilon))
    return NoiseLaw("gaussian", analytic_gaussian_sigma(epsilon, delta, l2))


def noisy_sums(sums, law, random_state):
    """``sums`` plus i.i.d. noise of ``law`` drawn from the noise stream of ``random_state``.

    Parameters
    ----------
    sums : ndarray of shape (k,)
        The exact sums.
    law : NoiseLaw
        From :func:`calibrate`.
    random_state : None, int, RandomState or Generator
        Seed of the noise stream.

    Returns
    -------
    noisy : ndarray of shape (k,)
    """
    sums = np.asarray(sums, dtype=float).ravel()
    if law.law == "none":
        return sums
    return sums + law.sample(sums.size, noise_generator(random_state))


def gradient(function, point):
    """Central differences of a scalar ``function`` at ``point`` (released values)."""
    point = np.asarray(point, dtype=float)
    grad = np.zeros(point.size)
    for j in range(point.size):
        step = 1e-6 * max(1.0, abs(point[j]))
        up, down = point.copy(), point.copy()
        up[j] += step
        down[j] -= step
        grad[j] = (function(up) - function(down)) / (2.0 * step)
    return grad


def estimate(function, noisy, law, epsilon, delta, bounds=(-np.inf, np.inf),
             noise_function=None, scales=1.0, first_order=True):
    """The :class:`PrivateEstimate` ``function(noisy)``, clipped to ``bounds``, with the
    first-order law of its noise (the gradient of ``noise_function``, by default
    ``function``: give the statistic without its clipping at 0, whose flat side would
    state no noise where there is some).

    Parameters
    ----------
    function : callable
        From the noisy sums to the statistic (post-processing).
    noisy : ndarray
        The released sums.
    law : NoiseLaw
        The law of the standardised noise: coordinate ``i`` of ``noisy`` carries
        ``scales[i]`` times a draw of ``law``.
    epsilon, delta : float
        The budget spent.
    bounds : tuple of two floats, default=(-inf, inf)
        The statistic's range.
    noise_function : callable, default=None
        The function whose gradient states the noise.
    scales : float or ndarray of shape (k,), default=1.0
        Each coordinate's public noise scale relative to ``law``.
    first_order : bool, default=True
        Whether the first-order statement holds (decided from released values); if
        not, ``noise_std`` is ``nan`` and the interval is the whole of ``bounds``.

    Returns
    -------
    estimate : PrivateEstimate
    """
    value = float(np.clip(function(noisy), *bounds))
    if not first_order and law.law != "none":
        return PrivateEstimate(value=value, noise_std=np.nan, epsilon=float(epsilon),
                               delta=float(delta), bounds=(float(bounds[0]), float(bounds[1])))
    weights = np.zeros(np.size(noisy)) if law.law == "none" else gradient(
        noise_function or function, noisy) * scales
    return PrivateEstimate(value=value, noise_std=law.std * float(np.linalg.norm(weights)),
                           epsilon=float(epsilon), delta=float(delta),
                           bounds=(float(bounds[0]), float(bounds[1])), noise_law=law,
                           noise_weights=tuple(float(w) for w in weights))


def ratio(numerator, denominator, floor):
    """``numerator / denominator`` with the noisy denominator floored at ``floor`` (its
    noise's standard deviation, a public number; ``0`` at ``epsilon = inf``: exact)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return numerator / np.maximum(denominator, floor)
