"""Levels, Renyi conversions and the spend of one release: the filters' shared maths.

Plain functions of numbers, used by the odometers (:mod:`._odometers`) and the
ledger's filters (:mod:`._budget`):

* :func:`level_ladder`: the public ladder of levels ``E_1 < ... < E_J = epsilon_max``
  of an odometer built from filters;
* :func:`rdp_order_epsilon`, :func:`conversion_shift`, :func:`rdp_budget`: Renyi DP
  at one order and its conversion to (epsilon, delta) (Canonne, Kamath & Steinke
  2020, Prop. 12), both ways;
* :func:`renyi_order`: the order that certifies one rung best;
* :class:`Spend`: what one fitted release certifies, the figures an account checks.
"""

import math
from dataclasses import dataclass

import numpy as np

from ..exceptions import PrivacyBudgetError
from ._costs import check_delta
from ._rdp import ORDERS, rdp_to_epsilon

LEVEL_RATIO = 1.1
"""Ratio between successive levels of the ladders (``ODOMETER_LEVEL_RATIO`` of the
Gaussian-DP odometer): an ex-post claim exceeds the realised cost by at most this
factor."""

CALIBRATION_RTOL = 1e-3
"""``DPSGDClassifier``'s calibration tolerance (``calibrate_noise_multiplier``'s
default): the epsilon certified for its noise multiplier is within this relative
distance below the request."""

_BISECTION_RTOL = 1e-4


# -- the public ladder of levels --------------------------------------------------------

def level_ladder(epsilon_max, epsilon_start, ratio=LEVEL_RATIO):
    """The public levels ``E_j = epsilon_max ratio^-(J - j)``, ``j = 1..J``.

    ``J = 1 + ceil(log(epsilon_max / epsilon_start) / log(ratio))``: the lowest
    level is at or below the first rung's ``epsilon_start``, the top level is the
    cap.

    Parameters
    ----------
    epsilon_max : float
        The top level, > 0.
    epsilon_start : float
        The first rung's epsilon, > 0 (at or above ``epsilon_max``: one level).
    ratio : float, default=LEVEL_RATIO
        Ratio between successive levels, > 1.

    Returns
    -------
    levels : ndarray of shape (J,)
        Increasing; the last is ``epsilon_max``.
    """
    _check_positive(epsilon_max=epsilon_max, epsilon_start=epsilon_start)
    if not ratio > 1:
        raise ValueError(f"level_ratio must be > 1, got {ratio!r}.")
    span = math.log(epsilon_max / min(epsilon_start, epsilon_max)) / math.log(ratio)
    n_levels = 1 + max(0, math.ceil(span - 1e-9))
    return float(epsilon_max) * float(ratio) ** -np.arange(n_levels, dtype=float)[::-1]


def _check_positive(**values):
    for name, value in values.items():
        if not (value > 0 and math.isfinite(value)):
            raise ValueError(f"{name} must be a finite number > 0, got {value!r}.")


def _lookup(levels, spent):
    """Index of the smallest level at or above ``spent`` (float rounding forgiven)."""
    return int(np.searchsorted(levels, spent * (1 - 1e-12)))



# -- Renyi DP at one order ----------------------------------------------------------------

def rdp_order_epsilon(rdp, order, delta):
    """``(epsilon, delta)`` from ``(order, rdp)``-RDP at that order alone.

    The conversion of Canonne, Kamath & Steinke 2020, Prop. 12 (Balle et al. 2020,
    Thm. 21): ``epsilon = rdp + log(1 - 1/alpha) - (log delta + log alpha) / (alpha -
    1)``, with :func:`~skdp.accounting._rdp.rdp_to_epsilon`'s rules (0 where the KL
    bound already gives ``delta``). It holds for any pair of distributions whose
    Renyi divergence of order ``alpha`` is at most ``rdp``, so it applies to a filter.

    Parameters
    ----------
    rdp : float
        Renyi divergence bound, >= 0.
    order : float
        The order ``alpha`` > 1.01.
    delta : float
        Target delta in (0, 1).

    Returns
    -------
    epsilon : float
    """
    return rdp_to_epsilon(np.array([float(rdp)]), float(delta),
                          orders=np.array([float(order)]))


def conversion_shift(order, delta):
    """``log(1 - 1/alpha) - (log delta + log alpha) / (alpha - 1)``: the converted
    epsilon of :func:`rdp_order_epsilon` is ``rdp`` plus this (when positive)."""
    return math.log1p(-1.0 / order) - (math.log(delta) + math.log(order)) / (order - 1.0)


def rdp_budget(epsilon, order, delta):
    """The largest Renyi budget at ``order`` that converts to at most ``epsilon``.

    The inverse of :func:`rdp_order_epsilon`: ``epsilon - conversion_shift``,
    lowered by ulps until the forward conversion is within ``epsilon``.

    Parameters
    ----------
    epsilon : float
        Target epsilon.
    order : float
        The order ``alpha``.
    delta : float
        Target delta in (0, 1).

    Returns
    -------
    budget : float
        Negative when no positive budget converts within ``epsilon`` at ``delta``.
    """
    budget = float(epsilon) - conversion_shift(order, delta)
    while budget > 0 and rdp_order_epsilon(budget, order, delta) > epsilon:
        budget = math.nextafter(budget, -math.inf)
    return budget

def renyi_order(cost, epsilon, delta):
    """The order that certifies one rung at ``epsilon`` best, at ``delta``.

    ``argmin_alpha rdp_order_epsilon(rdp_alpha(rung at epsilon), alpha, delta)`` over
    :data:`~skdp.accounting._rdp.ORDERS` (orders above 1.01). It is close to the
    order at which a filter of that level admits the largest single rung (measured
    on DP-SGD's defaults at levels 1 to 8, delta 1e-5 and 1e-6: the same order or
    up to 0.3 below it, and a largest rung within 2 %). A search that stops at a
    level of about ``epsilon`` has spent mostly on its last, largest rungs (a
    doubling ladder of Gaussian-like rungs spends ``sum_k 4^-k`` times the last
    rung's RDP), so this is the order that serves that level. Public: the rung's
    cost is a function of public parameters. Where the estimator refuses
    ``epsilon`` (too small for its training length), the smallest accepted ``2^k
    epsilon`` is used.

    Parameters
    ----------
    cost : DeclaredCost or DPSGDRungCost
        The rungs' public cost.
    epsilon : float
        The rung's epsilon.
    delta : float
        The delta of the conversion.

    Returns
    -------
    index : int
        Index of the order in ``ORDERS``.
    """
    epsilon = float(epsilon)
    for _ in range(60):
        try:
            rdp = cost.rdp(epsilon)
            break
        except PrivacyBudgetError:
            epsilon *= 2.0
    else:
        raise ValueError(f"No DP-SGD rung can be calibrated at or above epsilon={epsilon}.")
    converted = [rdp_order_epsilon(r, a, delta) if a > 1.01 else math.inf
                 for r, a in zip(rdp, ORDERS)]
    return int(np.argmin(converted))


def renyi_default_delta_max(rung_delta, epsilon_max=None, epsilon_start=None,
                            max_rungs=None):
    """The Renyi odometer's ``delta_max`` when none is given: the rungs' own delta.

    A Renyi filter's levels may take any delta (the rungs' delta only sets their
    calibration), so the search is given the delta the user chose for one fit:
    the whole selection is then ``(epsilon, rung_delta)``-DP, like the fit it
    replaces. The other arguments are accepted for symmetry with
    :func:`default_delta_max` and unused.

    Parameters
    ----------
    rung_delta : float
        The estimator's ``delta``.
    epsilon_max, epsilon_start, max_rungs : optional
        Unused.

    Returns
    -------
    delta_max : float
    """
    check_delta("rung delta", rung_delta)
    return float(rung_delta)

# -- (epsilon, delta)-DP rungs: basic-composition filters ----------------------------------

def default_delta_max(rung_delta, epsilon_max, epsilon_start, max_rungs,
                      level_ratio=LEVEL_RATIO):
    """The smallest ``delta_max`` the approximate-DP odometer accepts: ``J max_rungs
    rung_delta``.

    Each of the ``J`` levels' filters (:func:`level_ladder`) may run ``max_rungs``
    rungs of delta ``rung_delta``; the union bound over the levels adds their deltas.

    Parameters
    ----------
    rung_delta : float
        The estimator's ``delta``.
    epsilon_max : float
        The cap.
    epsilon_start : float
        The first rung's epsilon.
    max_rungs : int
        Most rungs the search runs.
    level_ratio : float, default=LEVEL_RATIO
        Ratio between successive levels.

    Returns
    -------
    delta_max : float
    """
    check_delta("rung delta", rung_delta)
    n_levels = len(level_ladder(epsilon_max, epsilon_start, level_ratio))
    return float(n_levels * int(max_rungs) * rung_delta)



@dataclass(frozen=True)
class Spend:
    """What one fitted release certifies: the figures an account checks it against.

    An account reads the figures its composition needs: ``epsilon`` and ``delta``
    always, ``mu`` (Gaussian DP) or ``rdp`` (Renyi DP at every order of
    :data:`~skdp.accounting._rdp.ORDERS`) where it composes in those. A composer
    passes an object with these attributes (for a fitted model, the figures its
    estimator declares); the accounts never look at a model.

    Parameters
    ----------
    epsilon, delta : float
        The release's certified (epsilon, delta).
    mu : float or None, default=None
        Its Gaussian-DP ``mu``, where it has one.
    rdp : ndarray of shape ORDERS.shape or None, default=None
        Its Renyi DP curve, where it has one.

    Examples
    --------
    >>> from skdp.accounting._filters import Spend
    >>> Spend(epsilon=0.5).delta
    0.0
    """

    epsilon: float
    delta: float = 0.0
    mu: float | None = None
    rdp: np.ndarray | None = None
