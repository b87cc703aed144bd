"""What a composer's fitted rungs declare to the accounts of :mod:`skdp.accounting`.

The odometers (:mod:`skdp.accounting._odometers`) compose numbers; this module reads
them from the estimators, through the declarations every skdp estimator makes, and
never from an estimator's class:

* :class:`DeclaredCost`: a rung's Renyi curve as a function of its epsilon, from
  ``_renyi_cost`` (before any fit);
* :class:`FittedSpend`: what a fitted rung certifies (``epsilon_spent_``,
  ``delta_spent_``, ``_gdp_mu_spent()``, ``_renyi_spent()``);
* :func:`renyi_odometer_for`, :func:`approx_odometer_for`: the odometers for the rungs
  of an estimator;
* :func:`check_label_set_cost`: a label set against the curve charged for it.
"""

from functools import cached_property

import numpy as np

from ..accounting._odometers import ApproxDPOdometer, RenyiOdometer
from ._gate import private_step


class DeclaredCost:
    """The Renyi cost of a rung as a function of its epsilon, as its estimator declares
    it (``_renyi_cost`` of the rung at that epsilon, before the fit; after it,
    :class:`FittedSpend`). The composers never look at the estimator's class.

    The curve is computed for the declared ``classes`` (else two); the label set
    (public in skdp) is checked against it before any noise (:func:`check_label_set_cost`).

    Parameters
    ----------
    estimator : estimator
        The rungs' private estimator (``delta > 0``).

    Raises
    ------
    ValueError
        When the rungs declare no Renyi curve (before any data).
    """

    def __init__(self, estimator):
        from sklearn.base import clone

        self.estimator = clone(estimator)
        self.n_classes = declared_classes(self.estimator)
        self.delta = float(self.estimator.get_params().get("delta", 0.0))
        if not self.delta:
            raise ValueError(f"A Renyi odometer accounts rungs with delta > 0 that declare a "
                             f"Renyi curve; {type(self.estimator).__name__} has delta=0 (pure "
                             "rungs add their epsilons).")
        self._rdp_cache = {}
        self.rdp(self.estimator.epsilon)  # refusals first

    def _curve(self, epsilon, n_classes):
        curve = self.estimator.set_params(epsilon=epsilon)._renyi_cost(n_classes=n_classes)
        if curve is None:
            raise ValueError(f"{type(self.estimator).__name__} with these parameters "
                             "declares no Renyi curve. Nothing was fitted.")
        return curve

    def rdp(self, epsilon):
        """The rung's RDP at every order of :data:`~skdp.accounting._rdp.ORDERS`.

        Raises
        ------
        PrivacyBudgetError
            When the estimator would refuse ``epsilon`` (before any data).
        """
        epsilon = float(epsilon)
        if epsilon not in self._rdp_cache:
            self._rdp_cache[epsilon] = self._curve(epsilon, self.n_classes)
        return self._rdp_cache[epsilon].copy()


def declared_classes(final):
    """The number of classes a fit's cost assumes: the declared ``classes``, else two
    (the label set is checked against it before any noise)."""
    declared = final.get_params().get("classes")
    return 2 if declared is None else len(declared)


def check_label_set_cost(final, n_classes):
    """Refuse, before any noise, ``n_classes`` labels when they change the Renyi curve
    ``final`` declared for :func:`declared_classes`.

    Raises
    ------
    ValueError
        When the two curves differ.
    """
    charged = final._renyi_cost(n_classes=declared_classes(final))
    if not np.array_equal(charged, final._renyi_cost(n_classes=n_classes)):
        raise ValueError(
            f"The Renyi cost of {type(final).__name__} was computed for "
            f"{declared_classes(final)} classes (declared, or two when undeclared); the "
            f"labels have {n_classes}. Declare classes= (one-vs-rest: multi_class='ovr') so "
            "that the cost is known before the data. Nothing was fitted.")



class FittedSpend:
    """What a fitted rung (alone or last in a Pipeline) certifies, as its estimator
    declares it: the spend an odometer checks its charge against
    (:class:`~skdp.accounting._filters.Spend`'s attributes, read when asked for).

    Parameters
    ----------
    model : estimator or Pipeline
        The fitted rung.
    """

    def __init__(self, model):
        self._final = private_step(model)[0]

    @property
    def epsilon(self):
        return float(self._final.epsilon_spent_)

    @property
    def delta(self):
        return float(self._final.delta_spent_)

    @cached_property
    def mu(self):
        """The fit's Gaussian-DP ``mu`` (``_gdp_mu_spent()``), or ``None``."""
        return self._final._gdp_mu_spent()

    @cached_property
    def rdp(self):
        """The fit's Renyi curve (``_renyi_spent()``), or ``None``."""
        return self._final._renyi_spent()


def renyi_odometer_for(estimator, epsilon_max, delta_max=None, epsilon_start=None):
    """The Renyi odometer for the rungs of ``estimator`` (alone or last in a
    Pipeline), from the Renyi curve its private step declares (:class:`DeclaredCost`).
    ``epsilon_start=None``: ``epsilon_max / 100``."""
    cost = DeclaredCost(private_step(estimator)[0])
    if epsilon_start is None:
        epsilon_start = epsilon_max / 100
    rungs = f"{type(cost.estimator).__name__} rungs (the Renyi curve it declares)"
    return RenyiOdometer(epsilon_max, delta_max, cost, epsilon_start, rungs=rungs)


def approx_odometer_for(estimator, epsilon_max, delta_max=None, epsilon_start=None,
                        max_rungs=8):
    """The basic-composition odometer for the rungs of ``estimator`` (its ``delta`` > 0,
    read from the private step's parameters). ``epsilon_start=None``: ``epsilon_max /
    100``."""
    rung_delta = private_step(estimator)[0].get_params().get("delta", 0.0)
    if not rung_delta:
        raise ValueError("ApproxDPOdometer is for rungs with delta > 0.")
    if epsilon_start is None:
        epsilon_start = epsilon_max / 100
    return ApproxDPOdometer(epsilon_max, delta_max, rung_delta, epsilon_start, max_rungs)
