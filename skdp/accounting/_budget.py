"""Privacy filters for one budget: refuse the release that would cross it.

A filter is given a total budget before the first release; each release, chosen in
view of the earlier ones, is admitted only if its a priori cost still fits. The
analysis's ledger (:class:`~skdp.PrivacyLedger`) keeps one of these:

* :class:`SumFilter`: basic composition, the sum of the releases' (epsilon, delta)
  (Rogers, Roth, Ullman & Vadhan 2016: basic composition is a valid filter). A pure
  release's privacy loss is at most its realised (ex-post) epsilon pointwise, so the
  sum may record ex-post figures for pure releases (:meth:`SumFilter.settle`).
* :class:`RenyiFilter`: one Renyi order ``alpha`` fixed when the filter is opened;
  every release charges its RDP at ``alpha``, and the sum stays within the Renyi
  budget that converts to the filter's ``(epsilon, delta)`` (Feldman & Zrnic 2021,
  Renyi filter; conversion of Canonne, Kamath & Steinke 2020, Prop. 12).
"""

import numpy as np

from ..exceptions import PrivacyBudgetError
from ._costs import pure_rdp
from ._filters import conversion_shift, rdp_budget, rdp_order_epsilon
from ._rdp import ORDERS

SLACK = 1e-9
"""Relative rounding a charge may exceed the budget by (sums of floats)."""


class SumFilter:
    """Basic composition of (epsilon, delta) releases, ex post for pure ones.

    Parameters
    ----------
    epsilon : float
        The total epsilon, finite and > 0.
    delta : float
        The total delta, in [0, 1).

    Examples
    --------
    >>> from skdp.accounting._budget import SumFilter
    >>> budget = SumFilter(1.0, 0.0)
    >>> index = budget.charge("a fit", 0.6, 0.0)
    >>> budget.settle(index, 0.4, 0.0)          # a pure fit certified less ex post
    >>> budget.spent
    (0.4, 0.0)
    """

    kind = "basic"
    description = ("the sum of the fits' certified (epsilon, delta), ex post for pure fits "
                   "(basic composition with adaptively chosen fits)")

    def __init__(self, epsilon, delta):
        self.epsilon, self.delta = float(epsilon), float(delta)
        self._charges = []

    @property
    def spent(self):
        """``(epsilon, delta)`` certified so far."""
        epsilon = sum(e for e, _ in self._charges)
        delta = sum(d for _, d in self._charges)
        return float(epsilon), float(min(delta, 1.0))

    @property
    def remaining(self):
        """``(epsilon, delta)`` left."""
        epsilon, delta = self.spent
        return self.epsilon - epsilon, max(self.delta - delta, 0.0)

    def cost(self, epsilon, delta, rdp=None):
        """What a release of a priori ``(epsilon, delta)`` costs here: ``(epsilon,
        delta)`` (``rdp`` is not read)."""
        return float(epsilon), float(delta)

    def admit(self, what, epsilon, delta, rdp=None):
        """Refuse, before any noise, a release that would cross the budget.

        Raises
        ------
        PrivacyBudgetError
        """
        left_epsilon, left_delta = self.remaining
        if epsilon > left_epsilon * (1 + SLACK) + SLACK or delta > left_delta + 1e-15:
            raise PrivacyBudgetError(
                f"{what} can cost ({epsilon:.4g}, {delta:.3g}); the ledger has "
                f"({max(left_epsilon, 0):.4g}, {left_delta:.3g}) left of "
                f"({self.epsilon:g}, {self.delta:g}). Nothing was fitted.")

    def charge(self, what, epsilon, delta, rdp=None):
        """Admit the release and charge its a priori cost; returns its index."""
        self.admit(what, epsilon, delta, rdp)
        self._charges.append((float(epsilon), float(delta)))
        return len(self._charges) - 1

    def settle(self, index, epsilon, delta):
        """Record what release ``index`` certified after it ran (at most its charge)."""
        charged_epsilon, charged_delta = self._charges[index]
        self._charges[index] = (min(float(epsilon), charged_epsilon),
                                min(float(delta), charged_delta))


class RenyiFilter:
    """A Renyi filter at one order, converted at the budget's delta.

    Parameters
    ----------
    epsilon : float
        The total epsilon, finite and > 0.
    delta : float
        The total delta, in (0, 1).
    order : float, default=None
        The filter's order, one of :data:`~skdp.accounting._rdp.ORDERS`; ``None``: the
        order at which a Gaussian mechanism's admissible ``mu^2`` is largest,
        ``argmax (epsilon - conversion_shift(alpha, delta)) / alpha``.

    Attributes
    ----------
    order : float
    order_index : int
        Its index in ``ORDERS``.
    budget : float
        The Renyi budget at ``order`` that converts to at most ``(epsilon, delta)``.

    Examples
    --------
    >>> from skdp.accounting._budget import RenyiFilter
    >>> budget = RenyiFilter(1.0, 1e-5, order=16.0)
    >>> round(budget.budget, 4)
    0.4818
    """

    kind = "renyi"

    def __init__(self, epsilon, delta, order=None):
        if not delta:
            raise ValueError("composition='renyi' converts at the ledger's delta: give "
                             "delta > 0.")
        self.epsilon, self.delta = float(epsilon), float(delta)
        if order is None:
            admissible = [(self.epsilon - conversion_shift(a, self.delta)) / a for a in ORDERS]
            order = float(ORDERS[int(np.argmax(admissible))])
        if not np.any(ORDERS == order):
            # every fit's Renyi curve is known at these orders only
            raise ValueError(f"order must be one of skdp.accounting._rdp.ORDERS, got "
                             f"{order!r}.")
        self.order, self.order_index = float(order), int(np.flatnonzero(ORDERS == order)[0])
        self.budget = rdp_budget(self.epsilon, self.order, self.delta)
        if self.budget <= 0:
            raise ValueError(f"At order {self.order:g} no Renyi budget converts within "
                             f"({self.epsilon:g}, {self.delta:g}): choose another order.")
        self.description = (f"a Renyi filter at order {self.order:g} (Feldman & Zrnic "
                            "2021), converted at the ledger's delta")
        self._charges = []

    @property
    def spent(self):
        """``(epsilon, delta)``: the conversion of the Renyi DP charged so far."""
        rdp = sum(self._charges)
        return (rdp_order_epsilon(rdp, self.order, self.delta), self.delta) if rdp else (0.0, 0.0)

    @property
    def remaining(self):
        """The Renyi budget left at :attr:`order`."""
        return self.budget - sum(self._charges)

    def cost(self, epsilon, delta, rdp=None):
        """The Renyi DP at :attr:`order` of a release: ``rdp`` (its curve at the order),
        or a pure release's ``min(epsilon, alpha epsilon^2 / 2)``.

        Raises
        ------
        ValueError
            For a release with ``delta > 0`` and no Renyi curve.
        """
        if rdp is not None:
            return float(rdp)
        if delta:
            raise ValueError("A Renyi ledger charges (epsilon, delta) releases only with "
                             "their Renyi curve; charge() takes pure releases (delta=0).")
        return float(pure_rdp(epsilon, np.array([self.order]))[0])

    def admit(self, what, epsilon, delta, rdp):
        """Refuse, before any noise, a release whose Renyi DP at the order does not fit.

        Raises
        ------
        ValueError
            When the release has no Renyi curve.
        PrivacyBudgetError
        """
        if rdp is None:
            raise ValueError(f"{what} has no Renyi curve: open a basic ledger.")
        if rdp > self.remaining + SLACK * self.budget:
            raise PrivacyBudgetError(
                f"{what} costs {rdp:.4g} in Renyi DP at order {self.order:g}; the "
                f"ledger has {max(self.remaining, 0):.4g} left of {self.budget:.4g} "
                f"(its ({self.epsilon:g}, {self.delta:g})). Nothing was fitted.")

    def charge(self, what, epsilon, delta, rdp):
        """Admit the release and charge its Renyi DP; returns its index."""
        self.admit(what, epsilon, delta, rdp)
        self._charges.append(float(rdp))
        return len(self._charges) - 1

    def settle(self, index, epsilon, delta):
        """Nothing to record: a Renyi charge is the release's whole curve at the order."""
