"""Odometers: what a sequence of adaptively chosen releases has spent, ex post.

The accounts of the training rows in the private selection of epsilon
(:mod:`skdp.model_selection._private_selection`), as plain objects of numbers. Each
has ``kind``, ``largest_rung()`` (the largest epsilon the next release may use),
``charge(epsilon_requested, spend)`` (``spend``: what the release certifies, a
:class:`~._filters.Spend` or an object with its attributes) and ``guarantee()``:

* :class:`PureDPAccount`: pure rungs add up, ex post (Ligett et al. 2017);
* :class:`NoiseReductionAccount`: the releases of Laplace noise paths cost each
  path's last release;
* :class:`GaussianDPOdometer`: Gaussian-DP rungs, a ladder of GDP filters;
* :class:`RenyiOdometer`: rungs with a Renyi curve, a ladder of Renyi filters, each
  at one public order (Feldman & Zrnic 2021);
* :class:`ApproxDPOdometer`: any other (epsilon, delta)-DP rungs, a ladder of
  basic-composition filters (Rogers, Roth, Ullman & Vadhan 2016).

The last three turn filters into an odometer the same way (Whitehouse, Ramdas, Rogers
& Wu, ICML 2023, odometers from filters): a public ladder of levels ``E_1 < ... < E_J = epsilon_max`` in (converted) epsilon, fixed
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

from ..exceptions import PrivacyBudgetError
from ._costs import check_delta
from ._filters import (
    CALIBRATION_RTOL,
    LEVEL_RATIO,
    _lookup,
    conversion_shift,
    level_ladder,
    rdp_budget,
    rdp_order_epsilon,
    renyi_default_delta_max,
    renyi_order,
)
from ._gaussian import gaussian_epsilon, gdp_mu
from ._rdp import ORDERS

_BISECTION_RTOL = 1e-4


class PureDPAccount:
    """Training rows' spend for pure epsilon-DP rungs: the realised sum, ex post.

    Each rung's release has privacy loss at most its certified epsilon pointwise, so
    the realised loss of the rungs that ran is at most their sum whatever the
    stopping rule (Ligett et al. 2017, ex-post privacy); the cap ``epsilon_max`` is
    the a priori guarantee.
    """

    kind = "pure epsilon-DP rungs, basic composition, ex post (Ligett et al. 2017)"

    def __init__(self, epsilon_max):
        self.epsilon_max = float(epsilon_max)
        self.spent = 0.0
        self._tests = 0.0

    def largest_rung(self):
        """The largest epsilon the next rung may use without passing the cap."""
        return self.epsilon_max - self.spent

    def charge_tests(self, budget):
        """Add the budget of tests on the same rows (:class:`~._selection_tests.PureTests`)."""
        self._tests += budget
        self.spent += budget

    def charge(self, epsilon_requested, spend):
        """Add the rung's certified epsilon (``spend.epsilon``, never above the
        requested one)."""
        certified = float(spend.epsilon)
        if spend.delta != 0.0 or certified > epsilon_requested * (1 + 1e-9):
            raise RuntimeError("a rung certified more than it was allowed to spend")
        self._add(certified)
        return {"epsilon_spent": certified}

    def _add(self, certified):
        self.spent += certified

    def guarantee(self):
        """``((ex-post epsilon, delta), (a priori epsilon, delta))`` of the training rows."""
        return (self.spent, 0.0), (self.epsilon_max, 0.0)


class NoiseReductionAccount(PureDPAccount):
    """Training rows' spend when the rungs are releases of Laplace noise paths.

    Along one path the earlier, noisier releases are the latest one plus noise that
    does not depend on the data (:class:`~skdp.linear_model.NoiseReductionPath`), so
    its rungs up to ``k`` cost ``epsilon_k`` ex post, not the sum (Ligett et al. 2017,
    noise reduction with Koufogiannis et al.'s gradual release). Paths are fits with
    independent noise: their last releases add up (basic composition), and a rung of
    the current path may go up to what the closed paths left of the cap.
    """

    kind = ("Laplace noise reduction, ex post the sum over the noise paths of each "
            "path's last epsilon (Koufogiannis et al. 2015; Ligett et al. 2017)")

    def __init__(self, epsilon_max):
        super().__init__(epsilon_max)
        self._closed = 0.0
        self._current = 0.0

    def new_path(self):
        """Close the current path: the next rung starts a fit with fresh noise."""
        self._closed += self._current
        self._current = 0.0

    def largest_rung(self):
        return self.epsilon_max - self._closed - self._tests

    def _add(self, certified):
        self._current = max(self._current, certified)
        self.spent = self._closed + self._current + self._tests


ODOMETER_LEVEL_RATIO = 1.1
"""Ratio between the odometer's successive ``mu`` levels: the claim exceeds the
realised ``mu`` by at most this factor."""


class GaussianDPOdometer:
    """Training rows' spend for Gaussian-DP rungs: a ladder of GDP filters, ex post.

    Rung ``k`` is ``mu_k``-GDP with ``mu_k`` chosen after seeing the earlier rungs.
    A filter that halts before ``sum mu_k^2`` passes ``m^2`` makes the whole
    sequence ``m``-GDP under fully adaptive composition (Smith & Thakurta 2022,
    "Fully adaptive composition for Gaussian differential privacy"; Koskela, Tobaben
    & Honkela 2023). The odometer fixes, before any rung, the levels ``m_1 < ... <
    m_J`` (ratio :data:`ODOMETER_LEVEL_RATIO`, from the first rung's ``mu`` to the
    cap ``m_J``) and gives each ``delta_max / J``. On the event that the realised
    ``sqrt(sum mu_k^2)`` lies in ``(m_{j-1}, m_j]``, the transcript is the one the
    filter at ``m_j`` would have produced, which is ``(epsilon_j, delta_max /
    J)``-DP with ``epsilon_j = gaussian_epsilon(delta_max / J, m_j)``; a union bound
    over the levels makes the search ex-post ``(epsilon_j, delta_max)``-DP (the
    odometer from filters of Whitehouse, Ramdas, Rogers & Wu, ICML 2023; the spec's
    ladder of filters with delta split across the levels). ``m_J`` is chosen so that
    ``epsilon_J = epsilon_max``: the a priori claim is ``(epsilon_max, delta_max)``,
    which no ex-post claim exceeds. (The top filter alone is the slightly smaller
    ``(gaussian_epsilon(delta_max, m_J), delta_max)`` a priori, but the ex-post
    claims at the top levels would then exceed it; one pair of figures is reported.)

    With ``reduction=True`` the rungs are releases of one Gaussian noise path
    (Brownian noise reduction, :class:`~skdp.linear_model.NoiseReductionPath`): the
    transcript up to rung ``k`` is a post-processing of rung ``k`` alone, so the
    realised ``mu`` is the last rung's, not the composition; the same levels and
    union bound apply, with ``E_j`` the event that the last rung's ``mu`` lies in
    ``(m_{j-1}, m_j]`` and the filter at ``m_j`` replaced by the release of the
    public ladder's last rung at or below ``m_j``, from which every earlier release
    and the stopping rule are computed. (This union bound over the levels replaces
    the time-uniform boundary of Whitehouse, Ramdas, Wu & Rogers 2022: the ladder is
    public and finite.)

    A rung's ``mu`` is charged before it runs, from its public (epsilon, delta), and
    checked after the fit against the ``mu`` the fit certifies (``spend.mu``).
    """

    kind = ("Gaussian-DP rungs, fully adaptive GDP filters (Smith & Thakurta 2022) at "
            "levels of ratio 1.1, ex post the level reached, delta split over the levels "
            "(odometer from filters: Whitehouse, Ramdas, Rogers & Wu 2023)")

    def __init__(self, epsilon_max, delta_max, rung_delta, epsilon_start, reduction=False):
        self.epsilon_max, self.delta_max = float(epsilon_max), float(delta_max)
        self.rung_delta, self.reduction = float(rung_delta), reduction
        if reduction:
            self.kind = ("Gaussian noise reduction (Brownian bridge, Whitehouse, Ramdas, Wu "
                         "& Rogers 2022): ex post the level of the last rung's mu, GDP "
                         "levels of ratio 1.1, delta split over the levels")
        lowest = gdp_mu(min(float(epsilon_start), self.epsilon_max), self.rung_delta)
        widest = gdp_mu(self.epsilon_max, self.delta_max)
        n_levels = 1 + max(0, int(np.ceil(np.log(widest / lowest)
                                          / np.log(ODOMETER_LEVEL_RATIO))))
        self.level_delta = self.delta_max / n_levels
        self.mu_max = gdp_mu(self.epsilon_max, self.level_delta)
        self.levels = self.mu_max * ODOMETER_LEVEL_RATIO ** -np.arange(n_levels)[::-1]
        self.mu_squared = 0.0
        self._closed = self._current = self._tests = 0.0

    def charge_tests(self, mu_squared):
        """Charge Gaussian releases on the rungs' rows
        (:class:`~._selection_tests.GaussianTests`): they compose in ``mu^2`` with the
        rungs, a path's included."""
        self._tests += float(mu_squared)
        self.mu_squared += float(mu_squared)

    def new_path(self):
        """Noise reduction: close the current path (its last ``mu`` composes in ``mu^2``
        with the next path's, a fit with fresh noise)."""
        self._closed += self._current
        self._current = 0.0

    def largest_rung(self):
        """The largest rung epsilon (at ``rung_delta``) whose ``mu`` fits the top filter."""
        room = self.rung_room()
        if room <= 0:
            return 0.0
        return gaussian_epsilon(self.rung_delta, np.sqrt(room) * (1 - 1e-9))

    def rung_room(self):
        """The ``mu^2`` the top filter leaves the next rung (with its test, when tests
        share the odometer): under noise reduction a rung replaces its path's last
        release, so the room is what the closed paths and the tests left."""
        spent = self._closed + self._tests if self.reduction else self.mu_squared
        return self.mu_max**2 - spent

    def charge(self, epsilon_requested, spend):
        """Charge the rung's ``mu`` from its public parameters; check the certified one
        (``spend.mu``)."""
        mu = gdp_mu(epsilon_requested, self.rung_delta)
        certified = spend.mu
        if certified is None:
            raise RuntimeError("the rung certifies no Gaussian-DP mu")
        if certified > mu * (1 + 1e-6):
            raise RuntimeError("a rung certified a larger mu than the odometer charged")
        if self.reduction:
            self._current = max(self._current, mu**2)
            self.mu_squared = self._closed + self._current + self._tests
        else:
            self.mu_squared += mu**2
        if self.mu_squared > self.mu_max**2 * (1 + 1e-9):
            raise RuntimeError("the rung crosses the top filter: it was requested above "
                               "largest_rung()")
        return {"epsilon_spent": float(spend.epsilon),
                "delta_spent": float(spend.delta), "mu": float(mu),
                "mu_certified": float(certified)}

    def level(self):
        """The smallest level ``m_j`` at or above the realised ``sqrt(sum mu_k^2)``."""
        spent = np.sqrt(self.mu_squared)
        return float(self.levels[np.searchsorted(self.levels, spent * (1 - 1e-12))])

    def guarantee(self):
        """``((ex-post epsilon, delta), (a priori epsilon, delta))`` of the training rows."""
        a_priori = (self.epsilon_max, self.delta_max)
        if self.mu_squared == 0:
            return (0.0, 0.0), a_priori
        # epsilon_J is epsilon_max up to the root finder's rounding
        epsilon = min(gaussian_epsilon(self.level_delta, self.level()), self.epsilon_max)
        return (epsilon, self.delta_max), a_priori


class RenyiOdometer:
    """Training rows' spend for DP-SGD or Gaussian objective-perturbation rungs: a
    ladder of Renyi filters, ex post.

    Filter (Feldman & Zrnic, "Individual privacy accounting via a Renyi filter",
    NeurIPS 2021, their Renyi filter theorem; also Lecuyer 2021): mechanisms chosen
    adaptively, each ``(alpha, rho_k)``-RDP with ``rho_k`` chosen from the earlier
    outputs, stopped before the running sum ``sum_k rho_k`` would pass ``B``, compose
    to an ``(alpha, B)``-RDP mechanism, for one order ``alpha`` fixed in advance.
    Here rung ``k`` is a fit at ``epsilon_k``, and ``rho_k`` the RDP its estimator
    declares from its public parameters: ``cost.rdp(epsilon)`` (for DP-SGD its
    calibration's count and steps, :class:`~skdp.accounting._costs.DPSGDRungCost`;
    for any skdp estimator, the curve it declares, read by the composer).
    A rung's charge is checked against the curve the fit certifies (``spend.rdp``).

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
    cost : object
        The rungs' public cost: ``cost.rdp(epsilon)``, their RDP at every order of
        ``ORDERS`` (raising :class:`~skdp.PrivacyBudgetError` for an epsilon the
        estimator refuses), and ``cost.delta``, their delta.
    epsilon_start : float
        The first rung's epsilon (sets the lowest level).
    level_ratio : float, default=LEVEL_RATIO
        Ratio between successive levels.
    single_order : bool, default=False
        Every level at the order of ``epsilon_max``.
    rungs : str, default=None
        What the rungs are, for :attr:`kind` (``None``: Poisson-sampled DP-SGD).

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
                 single_order=False, rungs=None):
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
        self._largest, self._test_rdp = {}, None
        if rungs is not None:
            self.kind = self.kind.replace("Poisson-sampled DP-SGD rungs", rungs)

    def _orders(self, ladder, delta, single_order):
        if single_order:
            return np.full(ladder.size, renyi_order(self.cost, self.epsilon_max, delta))
        return np.array([renyi_order(self.cost, e, delta) for e in ladder])

    def join_tests(self, counts_rdp, test_rdp):
        """Tests on the rungs' rows join these filters: ``counts_rdp`` (RDP at every
        order of the grid) is charged now, before any rung, and from now on each rung's
        cost includes its test's, ``test_rdp(epsilon)``, charged with the rung before
        it runs."""
        self.spent = self.spent + counts_rdp
        self.cost, self._test_rdp = _CostWithTest(self.cost, test_rdp), test_rdp
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

    def charge(self, epsilon_requested, spend):
        """Charge the rung's RDP (every order) from its public parameters.

        Parameters
        ----------
        epsilon_requested : float
            The rung's epsilon (at most :meth:`largest_rung`).
        spend : Spend
            What the fitted rung certifies (``epsilon``, ``delta``, ``rdp``).

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
        charged = self.cost.rdp(epsilon_requested)
        if spend.rdp is None:
            raise RuntimeError("the rung certifies no Renyi curve")
        certified = spend.rdp
        if self._test_rdp is not None:
            certified = certified + self._test_rdp(epsilon_requested)
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
        return {"epsilon_spent": float(spend.epsilon),
                "delta_spent": float(spend.delta), "order": float(ORDERS[i]),
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
    """A rung's Renyi cost plus its test's."""

    def __init__(self, cost, test_rdp):
        self._cost, self._test_rdp, self.delta = cost, test_rdp, cost.delta

    def rdp(self, epsilon):
        return self._cost.rdp(epsilon) + self._test_rdp(epsilon)


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

    def largest_rung(self):
        """The room left under the top level, 0.0 once ``max_rungs`` rungs ran."""
        if self.n_rungs >= self.max_rungs:
            return 0.0
        return max(0.0, float(self.levels[-1]) - self.spent)

    def charge(self, epsilon_requested, spend):
        """Charge the requested epsilon (public); check the rung's certificate
        (``spend.epsilon``, ``spend.delta``).

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
        epsilon, delta = float(spend.epsilon), float(spend.delta)
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
