"""Odometers for rungs with delta > 0 that have no Gaussian-DP bound.

Two accounts of the training rows' spend in the private selection of epsilon
(:mod:`skdp.model_selection._private_selection`), with the interface of
:class:`~skdp.model_selection._selection_accounts.GaussianDPOdometer`: ``kind``,
``largest_rung()``, ``charge(epsilon_requested, model)`` and ``guarantee()``.

* :class:`RenyiOdometer`: Poisson-sampled :class:`~skdp.DPSGDClassifier` rungs and
  Gaussian (KST) :class:`~skdp.ObjPertLogisticRegression` rungs, by fully adaptive
  Renyi filters, each at one public order (Feldman & Zrnic 2021);
* :class:`ApproxDPOdometer`: any other (epsilon, delta)-DP rungs (Gaussian objective
  perturbation under replace-one neighbours or multinomial), by basic-composition
  filters (Rogers, Roth, Ullman & Vadhan 2016).

Both turn filters into an odometer the same way (Whitehouse, Ramdas, Rogers & Wu,
ICML 2023, odometers from filters; the argument of ``GaussianDPOdometer``): a public
ladder of levels ``E_1 < ... < E_J = epsilon_max`` in (converted) epsilon, fixed
before any data are read, one filter per level, ``delta`` split over the levels.

Why the ladder is an odometer. Fix the validation part (the two parts compose in
parallel) and a neighbouring pair of training parts ``D, D'``. The search runs a rung
only if, with it, the running cost still fits at least one level's filter (for
nested filters, the top one). Let ``tau`` be the transcript of the search (the
rungs' requests and outputs), ``F_j`` the same search run with the filter of level
``j`` alone (halting before any rung that does not fit it), and ``L_j`` the set of
transcripts whose rungs fit level ``j`` and no lower level. On ``L_j``, every rung
of ``tau`` fits level ``j``, so ``F_j`` runs the same rungs, and it stops where
``tau`` stops: by the search's own rule, or because the next rung fits no level,
hence not level ``j``. The probability of a transcript in ``L_j`` is therefore
``F_j``'s times a factor ``g(tau)`` in [0, 1] that does not depend on the training
rows (the search's own stopping probability, a function of the released outputs,
of public coins and of the validation part). If ``F_j`` is ``(e_j, d_j)``-DP, then
for every set ``S``::

    P_D(tau in S) = sum_j E_{F_j(D)}[g 1_{S and L_j}]
                 <= sum_j (e^{e_j} P_{D'}(tau in S and L_j) + d_j),

because ``(e, d)``-DP bounds the expectation of every function with values in
[0, 1]. The search is thus ex post ``(e_j, sum_j d_j)``-DP with ``j`` the lowest
level the realised rungs fit, and a priori ``(max_j e_j, sum_j d_j)``-DP.
"""

import math

import numpy as np

from ..accounting._costs import check_delta
from ..accounting._rdp import ORDERS, rdp_to_epsilon
from ..exceptions import PrivacyBudgetError

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


def _final_step(model):
    from ._gate import private_step

    return private_step(model)[0]


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


# -- rungs with a declared Renyi curve ---------------------------------------------------

class DeclaredCost:
    """The Renyi cost of a rung as a function of its epsilon, as its estimator declares
    it: ``_renyi_cost`` of the rung at that epsilon before the fit, ``_renyi_spent``
    after it. The composers never look at the estimator's class.

    The curve is computed for the declared ``classes`` (else two); the label set
    (public in skdp) is checked against it before any noise (:meth:`check_classes`).

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

    @staticmethod
    def certified(model):
        """The fitted rung's RDP, as it declares it (``_renyi_spent``)."""
        curve = model._renyi_spent()
        if curve is None:
            raise RuntimeError(f"the rung ({type(model).__name__}) has no Renyi curve")
        return curve

    def check_classes(self, classes):
        """Refuse, before any noise, a label set whose size changes the curve
        (:func:`check_label_set_cost`)."""
        check_label_set_cost(self.estimator, len(classes))


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


class RenyiOdometer:
    """Training rows' spend for DP-SGD or Gaussian objective-perturbation rungs: a
    ladder of Renyi filters, ex post.

    Filter (Feldman & Zrnic, "Individual privacy accounting via a Renyi filter",
    NeurIPS 2021, their Renyi filter theorem; also Lecuyer 2021): mechanisms chosen
    adaptively, each ``(alpha, rho_k)``-RDP with ``rho_k`` chosen from the earlier
    outputs, stopped before the running sum ``sum_k rho_k`` would pass ``B``, compose
    to an ``(alpha, B)``-RDP mechanism, for one order ``alpha`` fixed in advance.
    Here rung ``k`` is a fit at ``epsilon_k``, and ``rho_k`` the RDP its estimator
    declares from its public parameters (:class:`DeclaredCost`; for DP-SGD its
    calibration's count and steps, :class:`~skdp.accounting._costs.DPSGDRungCost`).

    Levels. The :func:`level_ladder` from ``epsilon_start`` to ``epsilon_max`` has
    ``J0`` levels ``E_j``; let ``d0 = delta_max / J0``. Level ``j``'s filter works at
    its own order ``alpha_j =`` :func:`renyi_order` ``(E_j, d0)`` (``single_order``:
    every level at the order of ``epsilon_max``), fixed before any data. At order
    ``alpha`` no positive budget converts below ``conversion_shift(alpha, d0)``, so
    the levels at or below it are dropped; the ``J`` left share ``delta_max``:
    ``d = delta_max / J >= d0``, so each keeps a positive budget ``B_j =``
    :func:`rdp_budget` ``(E_j, alpha_j, d)``, and its filter is ``(e_j, d)``-DP with
    ``e_j =`` :func:`rdp_order_epsilon` ``(B_j, alpha_j, d) <= E_j`` (Canonne, Kamath
    & Steinke 2020, Prop. 12). The search runs a rung only if it fits at least one
    level (its running RDP at ``alpha_j``, the rung included, within ``B_j``); by the
    odometer-from-filters argument of the module docstring, it is ex post ``(e_j,
    delta_max)``-DP with ``j`` the lowest level that the realised rungs fit, and a
    priori ``(epsilon_max, delta_max)``-DP (every ``e_j <= epsilon_max``). The figures
    hold for the transcript as a whole (ex-post claims with delta > 0 are not
    closed under post-processing).

    One order for all levels (``single_order=True``, the order of the largest rung)
    converts small spends badly: at ``epsilon_max = 8``, ``delta = 1e-5`` (DP-SGD
    defaults) it is 3.4, whose conversion adds ``log(J / delta) / 2.4``, about 6, to
    any budget, so a search stopping near epsilon 1 would claim 6. Each level at its
    own order keeps every filter a one-order Renyi filter and claims close to the
    realised cost at every level (measured, DP-SGD defaults, ``epsilon_max = 8``,
    ``delta_max = 1e-5``, rungs 0.08, 0.16, ...: ex post 0.12, 0.26, 0.50, 0.98,
    2.1, 4.1 after each; for reference, a non-adaptive RDP accountant of the same
    rungs, not valid for an adaptive search, says 0.08, 0.18, 0.37, 0.75, 1.5, 3.0).

    Parameters
    ----------
    epsilon_max : float
        The top level: the a priori epsilon of the training rows.
    delta_max : float or None
        The a priori delta; ``None``: :func:`renyi_default_delta_max` (the rungs' delta).
    cost : DeclaredCost or DPSGDRungCost
        The rungs' public cost.
    epsilon_start : float
        The first rung's epsilon (sets the lowest level).
    level_ratio : float, default=LEVEL_RATIO
        Ratio between successive levels.
    single_order : bool, default=False
        Every level at the order of ``epsilon_max``.

    Attributes
    ----------
    order_indices : ndarray of int
        The levels' orders, as indices into ``ORDERS``.
    orders : ndarray
        The levels' orders ``alpha_j``.
    budgets : ndarray
        The levels' Renyi budgets ``B_j``.
    levels : ndarray
        The levels' certified epsilons ``e_j`` (increasing).
    level_delta : float
        ``d = delta_max / J``.
    spent : ndarray
        The realised ``sum_k rho_k`` at every order of ``ORDERS``.
    """

    kind = ("Poisson-sampled DP-SGD rungs: fully adaptive Renyi filters (Feldman & Zrnic "
            "2021), each at one public order, at levels of ratio 1.1 in epsilon, converted "
            "by Canonne, Kamath & Steinke 2020 (Prop. 12); ex post the lowest level the "
            "rungs fit, delta split over the levels (odometer from filters: Whitehouse, "
            "Ramdas, Rogers & Wu 2023)")

    def __init__(self, epsilon_max, delta_max, cost, epsilon_start, level_ratio=LEVEL_RATIO,
                 single_order=False):
        if delta_max is None:
            delta_max = renyi_default_delta_max(cost.delta)
        check_delta("delta_max", delta_max)
        self.epsilon_max, self.delta_max = float(epsilon_max), float(delta_max)
        self.cost, self.rung_delta = cost, cost.delta
        ladder = level_ladder(self.epsilon_max, epsilon_start, level_ratio)
        indices = self._orders(ladder, self.delta_max / ladder.size, single_order)
        floors = np.array([conversion_shift(ORDERS[i], self.delta_max / ladder.size)
                           for i in indices])
        keep = ladder > floors
        if not keep.any():
            raise ValueError(
                f"epsilon_max={epsilon_max!r} is too small for a Renyi filter at "
                f"delta_max={delta_max!r}: no order of the grid converts a positive Renyi "
                "budget within it. Raise epsilon_max or delta_max.")
        self.order_indices = indices[keep]
        self.orders = ORDERS[self.order_indices]
        self.level_delta = self.delta_max / int(keep.sum())
        self.budgets = np.array([rdp_budget(e, a, self.level_delta)
                                 for e, a in zip(ladder[keep], self.orders)])
        self.levels = np.array([rdp_order_epsilon(b, a, self.level_delta)
                                for b, a in zip(self.budgets, self.orders)])
        self.spent, self.n_rungs = np.zeros(ORDERS.shape), 0
        self._largest = {}
        if isinstance(cost, DeclaredCost):
            self.kind = self.kind.replace(
                "Poisson-sampled DP-SGD rungs",
                f"{type(cost.estimator).__name__} rungs (the Renyi curve it declares)")

    def _orders(self, ladder, delta, single_order):
        if single_order:
            return np.full(ladder.size, renyi_order(self.cost, self.epsilon_max, delta))
        return np.array([renyi_order(self.cost, e, delta) for e in ladder])

    @classmethod
    def for_estimator(cls, estimator, epsilon_max, delta_max=None, epsilon_start=None):
        """The odometer for the rungs of ``estimator`` (alone or last in a Pipeline),
        from the Renyi curve its private step declares (:class:`DeclaredCost`).
        ``epsilon_start=None``: ``epsilon_max / 100``."""
        cost = DeclaredCost(_final_step(estimator))
        if epsilon_start is None:
            epsilon_start = epsilon_max / 100
        return cls(epsilon_max, delta_max, cost, epsilon_start)

    def check_classes(self, classes):
        """Refuse, before any noise, a label set the rungs' cost was not computed for."""
        self.cost.check_classes(classes)

    def join_tests(self, counts_rdp, test_rdp):
        """Tests on the rungs' rows join these filters: ``counts_rdp`` (RDP at every
        order of the grid) is charged now, before any rung, and from now on each rung's
        cost includes its test's, ``test_rdp(epsilon)``, charged with the rung before
        it runs."""
        self.spent = self.spent + counts_rdp
        self.cost = _CostWithTest(self.cost, test_rdp)
        self._largest.clear()

    def tests_changed(self):
        """The tests' cost function changed (before any rung): forget the largest
        rungs found with the old one."""
        self._largest.clear()

    def _room(self):
        """Each level's budget left at its order."""
        return self.budgets - self.spent[self.order_indices]

    def _fits(self, epsilon, room):
        """Whether a rung at ``epsilon`` fits some level; one the estimator refuses
        (too small) counts as fitting, so that a bisection moves up past it."""
        try:
            rdp = self.cost.rdp(epsilon)[self.order_indices]
        except PrivacyBudgetError:
            return True
        return bool(np.any(rdp <= room))

    def largest_rung(self):
        """The largest epsilon (at the rungs' delta) whose rung fits some level.

        Fitting a level is monotone in epsilon, so fitting some level is too: a
        bisection in ``log epsilon`` (relative width ``1e-4``, each step one
        calibration, cached), then a margin of ``CALIBRATION_RTOL``: the calibrated
        noise multiplier is monotone in epsilon only up to that tolerance, and every
        request at or below ``(1 - CALIBRATION_RTOL) e`` has a noise multiplier (and a
        count noise) at least ``e``'s, hence an RDP at most ``e``'s at every order.

        Returns
        -------
        epsilon : float
            0.0 when no rung the estimator accepts fits.
        """
        if self.n_rungs not in self._largest:
            self._largest[self.n_rungs] = self._search(self._room())
        return self._largest[self.n_rungs]

    def _search(self, room):
        if not np.any(room > 0):
            return 0.0
        lo, hi = self._bracket(room)
        if lo is None:
            return 0.0
        while hi / lo > 1 + _BISECTION_RTOL:
            mid = math.sqrt(lo * hi)
            lo, hi = (mid, hi) if self._fits(mid, room) else (lo, mid)
        epsilon = lo * (1 - CALIBRATION_RTOL)
        try:
            rdp = self.cost.rdp(epsilon)[self.order_indices]
        except PrivacyBudgetError:
            return 0.0
        return epsilon if np.any(rdp <= room) else 0.0

    def _bracket(self, room):
        """``(lo, hi)``: ``lo`` fits, ``hi`` does not; ``(None, None)`` if none found."""
        hi = self.epsilon_max
        for _ in range(40):
            if not self._fits(hi, room):
                break
            hi *= 2.0
        else:
            return None, None
        lo = hi / 2.0
        while not self._fits(lo, room):
            lo /= 2.0
            if lo < self.epsilon_max * 1e-9:
                return None, None
        return lo, hi

    def charge(self, epsilon_requested, model):
        """Charge the rung's RDP (every order) from its public parameters.

        Parameters
        ----------
        epsilon_requested : float
            The rung's epsilon (at most :meth:`largest_rung`).
        model : DPSGDClassifier or Pipeline
            The fitted rung.

        Returns
        -------
        figures : dict
            ``epsilon_spent``, ``delta_spent`` (the rung's own certificate), and at
            the order of the level reached: ``order``, ``rdp`` (charged) and
            ``rdp_certified`` (from the fitted mechanism).

        Raises
        ------
        RuntimeError
            When the fit's mechanism has a larger RDP than charged at a level's order,
            or the rung fits no level (it was requested above :meth:`largest_rung`).
        """
        model = _final_step(model)
        charged = self.cost.rdp(epsilon_requested)
        certified = self.cost.certified(model)
        idx = self.order_indices
        if np.any(certified[idx] > charged[idx] * (1 + 1e-9)):
            raise RuntimeError("a rung certified a larger Renyi divergence than the "
                               "odometer charged")
        if not np.any(self.spent[idx] + charged[idx] <= self.budgets * (1 + 1e-12)):
            raise RuntimeError("the rung fits no Renyi filter: it was requested above "
                               "largest_rung()")
        self.spent = self.spent + charged
        self.n_rungs += 1
        i = idx[self.level()]
        return {"epsilon_spent": float(model.epsilon_spent_),
                "delta_spent": float(model.delta_spent_), "order": float(ORDERS[i]),
                "rdp": float(charged[i]), "rdp_certified": float(certified[i])}

    def level(self):
        """Index of the lowest level whose filter the realised rungs fit."""
        fits = self.spent[self.order_indices] <= self.budgets * (1 + 1e-12)
        return int(np.argmax(fits))

    def guarantee(self):
        """``((ex-post epsilon, delta), (a priori epsilon, delta))`` of the training rows."""
        a_priori = (self.epsilon_max, self.delta_max)
        if not np.any(self.spent > 0):   # nothing released (counts charged here count)
            return (0.0, 0.0), a_priori
        return ((min(float(self.levels[self.level()]), self.epsilon_max), self.delta_max),
                a_priori)


class _CostWithTest:
    """A rung's Renyi cost plus its test's (the rest of the cost is delegated)."""

    def __init__(self, cost, test_rdp):
        self._cost, self._test_rdp = cost, test_rdp

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._cost, name)

    def rdp(self, epsilon):
        return self._cost.rdp(epsilon) + self._test_rdp(epsilon)

    def certified(self, model):
        """The fitted rung's RDP plus its test's (at the epsilon it was asked for)."""
        return self._cost.certified(model) + self._test_rdp(model.epsilon)


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


class ApproxDPOdometer:
    """Training rows' spend for (epsilon, delta)-DP rungs: basic-composition filters.

    Filter (Rogers, Roth, Ullman & Vadhan, "Privacy odometers and filters:
    pay-as-you-go composition", NeurIPS 2016: basic composition is a valid privacy
    filter): mechanisms chosen adaptively, each ``(eps_k, delta_k)``-DP with
    parameters chosen from the earlier outputs, stopped before ``sum eps_k`` would
    pass ``E`` or ``sum delta_k`` would pass ``D``, compose to an ``(E, D)``-DP
    mechanism. For KST Gaussian objective perturbation (``delta > 0``), which has
    an ``(epsilon, delta)`` certificate and no Renyi or Gaussian-DP bound.

    Levels: :func:`level_ladder` ``E_1 < ... < E_J = epsilon_max``. Level ``j``'s
    filter halts before a rung taking ``sum eps_k`` past ``E_j`` or the rung count
    past ``max_rungs`` (so ``sum delta_k <= D = max_rungs * rung_delta``): it is
    ``(E_j, D)``-DP. By the odometer-from-filters argument of the module docstring,
    the search is ex post ``(E_j, J D)``-DP with ``j`` the smallest level at or above
    the realised ``sum eps_k``, a priori ``(epsilon_max, J D)``-DP; ``J D <=
    delta_max`` is required, and ``delta_max`` is the figure reported.

    Parameters
    ----------
    epsilon_max : float
        The top level: the a priori epsilon of the training rows.
    delta_max : float or None
        The a priori delta, at least :func:`default_delta_max`; ``None``: that.
    rung_delta : float
        The rungs' delta (the estimator's ``delta``).
    epsilon_start : float
        The first rung's epsilon (sets the lowest level).
    max_rungs : int
        Most rungs.
    level_ratio : float, default=LEVEL_RATIO
        Ratio between successive levels.

    Raises
    ------
    ValueError
        When ``delta_max`` is below :func:`default_delta_max` (before any data).
    """

    kind = ("(epsilon, delta)-DP rungs: basic-composition privacy filters (Rogers, Roth, "
            "Ullman & Vadhan 2016) at levels of ratio 1.1 in epsilon, each allowing "
            "max_rungs rungs of delta; ex post the level reached, the filters' deltas "
            "added over the levels (odometer from filters: Whitehouse, Ramdas, Rogers & "
            "Wu 2023)")

    def __init__(self, epsilon_max, delta_max, rung_delta, epsilon_start, max_rungs,
                 level_ratio=LEVEL_RATIO):
        if int(max_rungs) != max_rungs or max_rungs < 1:
            raise ValueError(f"max_rungs must be a positive integer, got {max_rungs!r}.")
        check_delta("rung delta", rung_delta)
        self.epsilon_max, self.rung_delta = float(epsilon_max), float(rung_delta)
        self.max_rungs = int(max_rungs)
        self.levels = level_ladder(self.epsilon_max, epsilon_start, level_ratio)
        self.filter_delta = self.max_rungs * self.rung_delta
        needed = self.levels.size * self.filter_delta
        if delta_max is None:
            delta_max = needed
        check_delta("delta_max", delta_max)
        if delta_max < needed * (1 - 1e-12):
            raise ValueError(
                f"delta_max={delta_max!r} is too small for rungs of delta={rung_delta!r}: "
                f"{self.levels.size} filter levels (ratio {level_ratio:g} from "
                f"epsilon_start={epsilon_start!r} to epsilon_max={epsilon_max!r}) of "
                f"max_rungs={max_rungs} rungs each need delta_max >= {needed:.3g}. "
                "Raise delta_max, lower the estimator's delta, or use fewer rungs.")
        self.delta_max = float(delta_max)
        self.spent, self.n_rungs = 0.0, 0

    @classmethod
    def for_estimator(cls, estimator, epsilon_max, delta_max=None, epsilon_start=None,
                      max_rungs=8):
        """The odometer for the rungs of ``estimator`` (its ``delta`` > 0, read from the
        private step's parameters). ``epsilon_start=None``: ``epsilon_max / 100``."""
        from ._selection_checks import private_step_params

        rung_delta = private_step_params(estimator).get("delta", 0.0)
        if not rung_delta:
            raise ValueError("ApproxDPOdometer is for rungs with delta > 0.")
        if epsilon_start is None:
            epsilon_start = epsilon_max / 100
        return cls(epsilon_max, delta_max, rung_delta, epsilon_start, max_rungs)

    def largest_rung(self):
        """The room left under the top level, 0.0 once ``max_rungs`` rungs ran."""
        if self.n_rungs >= self.max_rungs:
            return 0.0
        return max(0.0, float(self.levels[-1]) - self.spent)

    def charge(self, epsilon_requested, model):
        """Charge the requested epsilon (public); check the rung's certificate.

        Returns
        -------
        figures : dict
            ``epsilon_spent`` and ``delta_spent`` (certified), ``epsilon_charged``.

        Raises
        ------
        RuntimeError
            When the fit certified more than ``(epsilon_requested, rung_delta)``, or the
            charge crosses the top filter (a request above :meth:`largest_rung`).
        """
        model = _final_step(model)
        epsilon, delta = float(model.epsilon_spent_), float(model.delta_spent_)
        if epsilon > epsilon_requested * (1 + 1e-9) or delta > self.rung_delta * (1 + 1e-9):
            raise RuntimeError("a rung certified more than it was allowed to spend")
        if (self.n_rungs >= self.max_rungs
                or self.spent + epsilon_requested > self.levels[-1] * (1 + 1e-12)):
            raise RuntimeError("the rung crosses the top filter: it was requested above "
                               "largest_rung()")
        self.spent += float(epsilon_requested)
        self.n_rungs += 1
        return {"epsilon_spent": epsilon, "delta_spent": delta,
                "epsilon_charged": float(epsilon_requested)}

    def level(self):
        """Index of the smallest level at or above the realised ``sum eps_k``."""
        return _lookup(self.levels, self.spent)

    def guarantee(self):
        """``((ex-post epsilon, delta), (a priori epsilon, delta))`` of the training rows."""
        a_priori = (self.epsilon_max, self.delta_max)
        if self.spent == 0:
            return (0.0, 0.0), a_priori
        epsilon = min(float(self.levels[self.level()]), self.epsilon_max)
        return (epsilon, self.delta_max), a_priori
