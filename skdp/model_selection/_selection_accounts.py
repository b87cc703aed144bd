"""The training rows' account of a private selection: what its rungs cost.

:func:`training_account` reads, from the estimator's public parameters, which
account its rungs go to: pure epsilon-DP rungs add up ex post (:class:`PureDPAccount`),
the releases of Laplace noise paths cost each path's last release
(:class:`NoiseReductionAccount`), Gaussian-DP rungs go through a ladder of GDP filters
(:class:`GaussianDPOdometer`), Renyi and basic-composition rungs through their
odometers; the accounts live in :mod:`skdp.accounting._odometers`. The ladder helpers (:func:`ladder_floor`,
:func:`random_ladder_ratio`) read from the account how the rungs' spends compose.
"""

import numpy as np

from ..accounting._odometers import (
    ApproxDPOdometer,
    GaussianDPOdometer,
    NoiseReductionAccount,
    PureDPAccount,
)
from ._accounts import declared_classes, renyi_odometer_for
from ._gate import private_step
from ._selection_checks import rungs_share_a_path


def declares_renyi_curve(final, persons=False):
    """Whether ``final`` (``delta > 0``) declares a Renyi curve for its rungs, for its
    declared classes (undeclared: two, checked before any noise) and unit."""
    return final._renyi_cost(n_classes=declared_classes(final), persons=persons) is not None


def training_account(estimator, epsilon_max, delta_max, epsilon_start=None, max_rungs=8,
                     checkpoints=False, persons=False):
    """The account of the training rows for the rungs of ``estimator``.

    Returns ``(account, rung_params)``: the account, and the private-step parameters
    every rung must be fitted with (the delta of an approximate-DP rung). Pure rungs:
    the realised sum (:class:`PureDPAccount`), or the last rung under noise reduction
    (:class:`NoiseReductionAccount`). Rungs with ``delta > 0``, by what the estimator
    declares: Gaussian noise reduction and fits that compose in Gaussian DP
    (``_composes_in_gdp()``: full-batch DP-GD) by the Gaussian-DP odometer, fits with a
    Renyi curve (:func:`declares_renyi_curve`: Poisson-sampled DP-SGD, Gaussian
    objective perturbation of records) by the Renyi odometer, any other by the
    basic-composition odometer, whose ``J`` levels and ``max_rungs`` rungs each get
    ``delta_max / (J max_rungs)``. ``delta_max=None``: the estimator's own ``delta``,
    so the whole search has the delta chosen for one fit. Everything is read from
    public parameters; refusals (``_selection_refusal()``) come before any data is
    read. ``epsilon_start``, the first rung's epsilon, sets the odometers' lowest level
    (``None``: ``epsilon_max / 100``). ``persons``: the rungs are fitted with
    ``groups`` (a Gaussian objective perturbation then has no Renyi curve: its curve
    needs one gradient direction per record, which a person's rows do not keep).
    """
    from ..accounting._filters import level_ladder

    final = private_step(estimator)[0]
    delta = final.get_params().get("delta", 0.0)
    reduction = rungs_share_a_path(estimator, checkpoints)
    if not delta:
        return (NoiseReductionAccount if reduction else PureDPAccount)(epsilon_max), {}
    delta_max = float(delta) if delta_max is None else float(delta_max)
    if epsilon_start is None:
        epsilon_start = epsilon_max / 100
    if reduction or final._composes_in_gdp():
        return GaussianDPOdometer(epsilon_max, delta_max, rung_delta=delta,
                                  epsilon_start=epsilon_start, reduction=reduction), {}
    refusal = final._selection_refusal()
    if refusal is not None:
        raise ValueError(refusal)
    if declares_renyi_curve(final, persons):
        return renyi_odometer_for(estimator, epsilon_max, delta_max, epsilon_start), {}
    n_levels = len(level_ladder(epsilon_max, epsilon_start))
    rung_delta = delta_max / (n_levels * max_rungs)
    account = ApproxDPOdometer(epsilon_max, delta_max, rung_delta, epsilon_start, max_rungs)
    return account, {"delta": rung_delta}


def spends_add(account):
    """Whether the rungs' spends add (pure rungs, basic composition) rather than compose
    in squares (Gaussian DP, Renyi DP of Gaussian-like curves)."""
    return isinstance(account, (PureDPAccount, ApproxDPOdometer))


def ladder_floor(account, reduction):
    """The least median ratio of a search's cost to the oracle epsilon ``e*`` that any
    ladder of these rungs can have, with exact tests: 1 when the rungs are releases of
    one path (only the last costs); 2 for fresh rungs whose spends add (online bidding:
    no ladder's median is below 2); ``sqrt(2)`` for fresh rungs composed in squares
    (the same bound on ``epsilon ** 2``)."""
    if reduction:
        return 1.0
    return 2.0 if spends_add(account) else float(np.sqrt(2))


def random_ladder_ratio(account):
    """Ratio of the randomised ladder (``steering="random"``), tuned for the median.

    Its rungs are ``epsilon_start * r ** (U + k)`` with ``U`` uniform on [0, 1): the
    first rung at or above an oracle epsilon ``e*`` lies at ``e* r ** V`` with ``V``
    uniform whatever ``e*``. Rungs whose spends add (pure, basic composition) then cost
    at most ``e* r ** (V + 1) / (r - 1)``: median ratio ``r ** 1.5 / (r - 1)``, least at
    ``r = 3`` (2.60; mean ``r / ln r`` = 2.73). Rungs that compose in squares (Gaussian
    DP, and Renyi DP of Gaussian-like curves) cost about ``e* r ** V r / sqrt(r ** 2 -
    1)``: median ratio ``r ** 1.5 / sqrt(r ** 2 - 1)``, least at ``r = sqrt(3)`` (1.61).
    """
    return 3.0 if spends_add(account) else float(np.sqrt(3))
