"""The training rows' account of a private selection: what its rungs cost.

:func:`training_account` reads, from the estimator's public parameters, which
account its rungs go to: pure epsilon-DP rungs add up ex post (:class:`PureDPAccount`),
the releases of Laplace noise paths cost each path's last release
(:class:`NoiseReductionAccount`), Gaussian-DP rungs go through a ladder of GDP filters
(:class:`GaussianDPOdometer`), Renyi and basic-composition rungs through the odometers
of :mod:`._accounts`. The ladder helpers (:func:`ladder_floor`,
:func:`random_ladder_ratio`) read from the account how the rungs' spends compose.
"""

import numpy as np

from ._gate import private_step
from ._selection_checks import rungs_share_a_path


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

    def charge(self, epsilon_requested, model):
        """Add the rung's certified epsilon (never above the requested one)."""
        model = private_step(model)[0]
        certified = float(model.epsilon_spent_)
        if model.delta_spent_ != 0.0 or certified > epsilon_requested * (1 + 1e-9):
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
    checked after the fit against the estimator's certified ``mu``
    (:func:`_certified_mu`).
    """

    kind = ("Gaussian-DP rungs, fully adaptive GDP filters (Smith & Thakurta 2022) at "
            "levels of ratio 1.1, ex post the level reached, delta split over the levels "
            "(odometer from filters: Whitehouse, Ramdas, Rogers & Wu 2023)")

    def __init__(self, epsilon_max, delta_max, rung_delta, epsilon_start, reduction=False):
        from ..accounting import gdp_mu

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
        from ..accounting import gaussian_epsilon

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

    def charge(self, epsilon_requested, model):
        """Charge the rung's ``mu`` from its public parameters; check the certified one."""
        from ..accounting import gdp_mu

        model = private_step(model)[0]
        mu = gdp_mu(epsilon_requested, self.rung_delta)
        certified = _certified_mu(model)
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
        return {"epsilon_spent": float(model.epsilon_spent_),
                "delta_spent": float(model.delta_spent_), "mu": float(mu),
                "mu_certified": float(certified)}

    def level(self):
        """The smallest level ``m_j`` at or above the realised ``sqrt(sum mu_k^2)``."""
        spent = np.sqrt(self.mu_squared)
        return float(self.levels[np.searchsorted(self.levels, spent * (1 - 1e-12))])

    def guarantee(self):
        """``((ex-post epsilon, delta), (a priori epsilon, delta))`` of the training rows."""
        from ..accounting import gaussian_epsilon

        a_priori = (self.epsilon_max, self.delta_max)
        if self.mu_squared == 0:
            return (0.0, 0.0), a_priori
        # epsilon_J is epsilon_max up to the root finder's rounding
        epsilon = min(gaussian_epsilon(self.level_delta, self.level()), self.epsilon_max)
        return (epsilon, self.delta_max), a_priori


def _certified_mu(model):
    """The GDP ``mu`` of a fitted Gaussian rung.

    Full-batch DP-SGD (DP-GD): the composition of its steps and count
    (:func:`training_account` admits only full-batch rungs, before any fit).
    Gaussian output perturbation: one Gaussian release per problem, each with the
    analytic calibration of Balle & Wang (exactly ``gdp_mu(e / K, delta / K)``-GDP
    for ``K`` one-vs-rest problems), so the release is ``sqrt(K) gdp_mu(e / K,
    delta / K)``-GDP; being also ``(e, delta)``-DP by basic composition, that
    ``mu`` is at most ``gdp_mu(e, delta)``, the figure returned.
    """
    from ..accounting import composed_mu, gdp_mu

    if hasattr(model, "noise_multiplier_"):
        return composed_mu(model.noise_multiplier_, model.n_steps_, model.count_noise_std_)
    return gdp_mu(model.epsilon_spent_, model.delta_spent_)


def declares_renyi_curve(final, persons=False):
    """Whether ``final`` (``delta > 0``) declares a Renyi curve for its rungs, for its
    declared classes (undeclared: two, checked before any noise) and unit."""
    from ._accounts import declared_classes

    return final._renyi_cost(n_classes=declared_classes(final), persons=persons) is not None


def training_account(estimator, epsilon_max, delta_max, epsilon_start=None, max_rungs=8,
                     checkpoints=False, persons=False):
    """The account of the training rows for the rungs of ``estimator``.

    Returns ``(account, rung_params)``: the account, and the private-step parameters
    every rung must be fitted with (the delta of an approximate-DP rung). Pure rungs:
    the realised sum (:class:`PureDPAccount`), or the last rung under noise reduction
    (:class:`NoiseReductionAccount`). Rungs with ``delta > 0``: full-batch
    :class:`~skdp.DPSGDClassifier` and Gaussian noise reduction by the Gaussian-DP
    odometer, Poisson-sampled ``DPSGDClassifier`` and Gaussian
    :class:`~skdp.ObjPertLogisticRegression` with a Renyi curve (:func:`declares_renyi_curve`)
    by the Renyi odometer, any other by the basic-composition odometer, whose ``J`` levels and ``max_rungs`` rungs each
    get ``delta_max / (J max_rungs)``. ``delta_max=None``: the estimator's own
    ``delta``, so the whole search has the delta chosen for one fit. Everything is
    read from public parameters; refusals come before any data is read.
    ``epsilon_start``, the first rung's epsilon, sets the odometers' lowest level
    (``None``: ``epsilon_max / 100``). ``persons``: the rungs are fitted with
    ``groups``; a Gaussian ``ObjPertLogisticRegression`` then has no Renyi curve (its
    curve needs one gradient direction per record, which a person's rows do not
    keep) and goes to the basic-composition odometer.
    """
    from ..linear_model import DPSGDClassifier
    from ._accounts import ApproxDPOdometer, RenyiOdometer, level_ladder

    final = private_step(estimator)[0]
    params = final.get_params()
    delta = params.get("delta", 0.0)
    reduction = rungs_share_a_path(estimator, checkpoints)
    if not delta:
        return (NoiseReductionAccount if reduction else PureDPAccount)(epsilon_max), {}
    delta_max = float(delta) if delta_max is None else float(delta_max)
    if epsilon_start is None:
        epsilon_start = epsilon_max / 100
    if reduction:
        return GaussianDPOdometer(epsilon_max, delta_max, rung_delta=delta,
                                  epsilon_start=epsilon_start, reduction=True), {}
    if type(final) is DPSGDClassifier and params.get("sample_rate") == 1.0:
        return GaussianDPOdometer(epsilon_max, delta_max, rung_delta=delta,
                                  epsilon_start=epsilon_start), {}
    if type(final) is DPSGDClassifier:
        if params.get("accountant") == "pld":
            raise ValueError(
                "Private selection with Poisson-sampled DPSGDClassifier rungs charges each "
                "rung's Renyi DP before it runs; accountant='pld' makes that a minute per "
                "rung. Use accountant='auto' (the default) or 'rdp'.")
        return RenyiOdometer.for_estimator(estimator, epsilon_max, delta_max,
                                           epsilon_start), {}
    if declares_renyi_curve(final, persons):
        return RenyiOdometer.for_estimator(estimator, epsilon_max, delta_max,
                                           epsilon_start), {}
    n_levels = len(level_ladder(epsilon_max, epsilon_start))
    rung_delta = delta_max / (n_levels * max_rungs)
    account = ApproxDPOdometer(epsilon_max, delta_max, rung_delta, epsilon_start, max_rungs)
    return account, {"delta": rung_delta}


def spends_add(account):
    """Whether the rungs' spends add (pure rungs, basic composition) rather than compose
    in squares (Gaussian DP, Renyi DP of Gaussian-like curves)."""
    from ._accounts import ApproxDPOdometer

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
