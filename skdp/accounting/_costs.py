"""What a mechanism costs in Renyi DP, from its public parameters (plain maths).

The estimators declare their cost through these (``_renyi_cost``); the composers'
filters and odometers compose the curves and never look at an estimator's class.
"""

import math
from functools import lru_cache

import numpy as np

from ..exceptions import PrivacyBudgetError
from ._calibration import calibrate_noise_multiplier
from ._dpsgd import default_count_noise_std, dpsgd_epsilon
from ._rdp import ORDERS, dpsgd_rdp


def check_delta(name, value):
    """Refuse a delta outside (0, 1)."""
    if not 0 < value < 1:
        raise ValueError(f"{name} must be in (0, 1), got {value!r}.")


def pure_rdp(epsilon, orders=ORDERS):
    """RDP of a pure ``epsilon``-DP mechanism: ``min(epsilon, alpha epsilon^2 / 2)``
    (pure DP is ``epsilon^2 / 2``-zCDP: Bun & Steinke 2016, Proposition 1.4); infinite
    for an infinite epsilon.

    Examples
    --------
    >>> from skdp.accounting._costs import pure_rdp
    >>> pure_rdp(0.5, orders=np.array([2.0, 8.0])).tolist()
    [0.25, 0.5]
    """
    epsilon = float(epsilon)
    if not math.isfinite(epsilon):
        return np.full(np.shape(orders), np.inf)
    return np.minimum(epsilon, orders * epsilon ** 2 / 2)


class DPSGDRungCost:
    """The Renyi cost of a DP-SGD rung as a function of its requested epsilon.

    A rung is ``DPSGDClassifier(epsilon=e, **params)``: the Gaussian row count of
    standard deviation ``s`` (sensitivity 1) and ``T`` Poisson-sampled Gaussian
    steps of multiplier ``z`` at rate ``q``. Its RDP at order ``alpha`` is
    ``alpha / (2 s^2) + T eps_step(alpha)`` (composition, Mironov 2017, Prop. 1;
    sampled Gaussian, Mironov, Talwar & Zhang 2019), computed by
    :func:`~skdp.accounting._rdp.dpsgd_rdp`. ``(z, s)`` are computed from the public
    parameters exactly as ``DPSGDClassifier`` does (its ``_schedule``,
    ``_count_noise``, ``_accountant`` and ``_privacy_spend``), with the module-level
    functions it calls; never from data.

    Parameters
    ----------
    delta : float
        The rung's delta (``DPSGDClassifier.delta``).
    sample_rate : float
        Poisson rate ``q`` in (0, 1].
    epochs : float
        Passes; ``T = max(1, ceil(epochs / q))``.
    noise_multiplier : float or None, default=None
        A fixed multiplier (``None``: calibrated to each requested epsilon).
    count_noise_std : float or None, default=None
        A fixed count noise (``None``: ``default_count_noise_std(epsilon, delta)``).
    accountant : {"auto", "pld", "rdp"}, default="auto"
        The accountant the estimator calibrates with (``"auto"``: PLD for full
        batches, RDP under sampling).
    """

    def __init__(self, delta, sample_rate, epochs, noise_multiplier=None,
                 count_noise_std=None, accountant="auto"):
        check_delta("delta", delta)
        if not 0 < sample_rate <= 1:
            raise ValueError(f"sample_rate must be in (0, 1], got {sample_rate!r}.")
        self.delta, self.sample_rate = float(delta), float(sample_rate)
        self.n_steps = max(1, math.ceil(epochs / self.sample_rate - 1e-9))
        self.noise_multiplier = None if noise_multiplier is None else float(noise_multiplier)
        self.count_noise_std = None if count_noise_std is None else float(count_noise_std)
        if accountant == "auto":
            accountant = "pld" if self.sample_rate == 1.0 else "rdp"
        self.accountant = accountant
        self._cache, self._rdp_cache = {}, {}

    @classmethod
    def from_params(cls, params):
        """From ``DPSGDClassifier.get_params()`` (``delta``, ``sample_rate``,
        ``epochs``, ``noise_multiplier``, ``count_noise_std``, ``accountant``); one
        shared instance per parameters, so that its calibrations are computed once."""
        return _shared_cost(cls, params["delta"], params["sample_rate"], params["epochs"],
                            params["noise_multiplier"], params["count_noise_std"],
                            params["accountant"])

    def mechanism(self, epsilon):
        """``(noise_multiplier, count_noise_std)`` of the rung at ``epsilon``.

        Raises
        ------
        PrivacyBudgetError
            When the estimator would refuse ``epsilon`` (before any data).
        """
        epsilon = float(epsilon)
        if epsilon not in self._cache:
            self._cache[epsilon] = self._mechanism(epsilon)
        result = self._cache[epsilon]
        if isinstance(result, PrivacyBudgetError):
            raise result
        return result

    def _mechanism(self, epsilon):
        count = (self.count_noise_std if self.count_noise_std is not None
                 else default_count_noise_std(epsilon, self.delta))
        accounting = dict(accountant=self.accountant, count_noise_std=count)
        try:
            if self.noise_multiplier is None:
                z = calibrate_noise_multiplier(epsilon, self.delta, self.sample_rate,
                                               self.n_steps, **accounting)
            else:
                z = self.noise_multiplier
                if dpsgd_epsilon(z, self.sample_rate, self.n_steps, self.delta,
                                 **accounting) > epsilon:
                    raise PrivacyBudgetError(f"noise_multiplier={z} does not fit "
                                             f"epsilon={epsilon}")
        except PrivacyBudgetError as error:
            return error
        return float(z), float(count)

    def rdp(self, epsilon):
        """The rung's RDP at every order of :data:`~skdp.accounting._rdp.ORDERS`.

        Raises
        ------
        PrivacyBudgetError
            When the estimator would refuse ``epsilon``.
        """
        epsilon = float(epsilon)
        if epsilon not in self._rdp_cache:
            z, count = self.mechanism(epsilon)
            self._rdp_cache[epsilon] = mechanism_rdp(z, self.sample_rate, self.n_steps, count)
        return self._rdp_cache[epsilon].copy()


def mechanism_rdp(noise_multiplier, sample_rate, n_steps, count_noise_std):
    """RDP at :data:`~skdp.accounting._rdp.ORDERS` of a count and ``T`` sampled steps.

    Parameters
    ----------
    noise_multiplier : float
        Multiplier ``z`` of the steps.
    sample_rate : float
        Poisson rate ``q``.
    n_steps : int
        Number of steps ``T``.
    count_noise_std : float or None
        Standard deviation of the Gaussian count (``None``: no count; 0: a count
        without noise, infinite RDP).

    Returns
    -------
    rdp : ndarray of shape ORDERS.shape
    """
    if count_noise_std is not None and count_noise_std == 0:
        return np.full(ORDERS.shape, np.inf)
    return dpsgd_rdp(float(noise_multiplier), float(sample_rate), int(n_steps),
                     None if count_noise_std is None else float(count_noise_std))


@lru_cache(maxsize=256)
def _shared_cost(cls, *params):
    return cls(*params)
