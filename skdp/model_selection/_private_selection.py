"""Choosing epsilon inside the guarantee: a ladder of private fits tested privately.

The accuracy-first procedure of Ligett, Neel, Roth, Waggoner & Wu (NeurIPS 2017):

1. the rows are split by independent public coins into a training part ``D_T`` and a
   validation part ``D_V`` (under add/remove, adding a row moves no other row across
   the split, so the two parts compose in parallel; a permutation cut would not);
2. rung ``k`` fits the estimator on ``D_T`` at ``epsilon_k`` with fresh,
   independent noise (never shared across rungs: two releases of one noise draw at
   two epsilons reveal the non-private minimiser);
3. AboveThreshold (Dwork & Roth 2014, Algorithm 1) tests each rung on ``D_V`` with
   the query ``f_k = sum_{i in D_V} (u_i - threshold)``, ``u_i`` in [0, 1]
   (sensitivity at most 1 under add/remove): one ``rho ~ Lap(2 / epsilon_val)``,
   then ``nu_k ~ Lap(4 / epsilon_val)`` per rung, pass when ``f_k + nu_k >= rho``;
4. the passing rung's model is released with the transcript (the rungs' epsilons
   and pass/fail bits).

Accounting. A training row enters only through the rungs' models: with pure
epsilon-DP rungs the realised loss is at most ``sum_{j <= k} epsilon_j`` pointwise,
whatever the stopping rule (an ex-post guarantee), capped a priori by
``epsilon_max``. A validation row enters only through AboveThreshold:
``epsilon_val``, however many rungs ran. The parts compose in parallel, so the
procedure is ex-post ``max(train spend, epsilon_val)``-DP and a priori
``max(epsilon_max, epsilon_val)``-DP with respect to every row given. Rungs with
``delta > 0`` have no pointwise loss bound: full-batch DP-SGD rungs go through a
Gaussian-DP odometer (:class:`GaussianDPOdometer`), the others are refused. Laplace
and Gaussian output perturbation rungs share one noise path (noise reduction) and
cost only the last rung's epsilon (:class:`NoiseReductionAccount`; for Gaussian
noise, the odometer's claim at the last rung's ``mu``).
"""

from dataclasses import dataclass

import numpy as np
from sklearn.base import clone
from sklearn.pipeline import Pipeline

from ..exceptions import PrivacyBudgetError
from ..utils._random import privacy_streams
from ._measure import _NoiseSources


def coin_split(n_samples, validation_fraction, public_rng):
    """Assign each row to the validation part by an independent public coin.

    Row ``i``'s coin is the ``i``-th draw of ``public_rng``, so adding a row at the
    end never moves another row across the split.

    Parameters
    ----------
    n_samples : int
        Number of rows.
    validation_fraction : float
        Probability that a row goes to the validation part, in (0, 1).
    public_rng : numpy.random.Generator
        A public stream (never one that draws privacy noise).

    Returns
    -------
    in_validation : ndarray of shape (n_samples,), dtype bool
    """
    return public_rng.random(n_samples) < validation_fraction


class AboveThreshold:
    """The sparse vector technique for one pass (Dwork & Roth 2014, Algorithm 1).

    epsilon-DP for any adaptively chosen sequence of queries of sensitivity at most 1,
    however many are asked before the first pass; it halts at the first pass.

    Parameters
    ----------
    epsilon : float
        The test's budget.
    threshold : float
        The public threshold ``T`` the noisy queries are compared with (here 0: the
        query already subtracts the utility threshold row by row).
    noise_rng : numpy.random.Generator
        The noise stream.
    """

    def __init__(self, epsilon, noise_rng, threshold=0.0):
        self.epsilon = float(epsilon)
        self._rng = noise_rng
        self._noisy_threshold = threshold + noise_rng.laplace(scale=2.0 / self.epsilon)
        self.halted = False

    def test(self, query):
        """Whether the noisy query clears the noisy threshold; halts at the first pass.

        Parameters
        ----------
        query : float
            The query's value on the private data (sensitivity at most 1).

        Returns
        -------
        passed : bool
        """
        if self.halted:
            raise RuntimeError("AboveThreshold has halted: a new test needs a new instance "
                               "(and pays epsilon again).")
        noisy = query + self._rng.laplace(scale=4.0 / self.epsilon)
        self.halted = bool(noisy >= self._noisy_threshold)
        return self.halted


def geometric_ladder(epsilon_start, ratio, epsilon_max):
    """The public doubling (or ``ratio``) ladder whose cumulative sum stays within the cap.

    Parameters
    ----------
    epsilon_start : float
        The first rung's epsilon.
    ratio : float
        The factor between consecutive rungs, above 1.
    epsilon_max : float
        Cap on the rungs' total.

    Returns
    -------
    epsilons : list of float
    """
    epsilons, total, epsilon = [], 0.0, float(epsilon_start)
    while total + epsilon <= epsilon_max * (1 + 1e-12):
        epsilons.append(epsilon)
        total += epsilon
        epsilon *= ratio
    return epsilons


# -- the private estimator, alone or as the last step of a Pipeline ------------------------

PUBLIC_TRANSFORMS = ("Normalizer", "FunctionTransformer", "PolynomialFeatures", "Binarizer")
"""Pipeline steps allowed before the private estimator: each maps a row by itself,
so fitting them learns nothing from the private rows."""


def private_step(estimator):
    """``(private estimator, parameter prefix)``: the last step of a Pipeline, or itself."""
    if isinstance(estimator, Pipeline):
        name, final = estimator.steps[-1]
        return final, f"{name}__"
    return estimator, ""


def private_step_params(estimator):
    """The private estimator's own parameters (without the Pipeline prefix)."""
    return private_step(estimator)[0].get_params()


def check_private_step_params(estimator):
    """Refuse, before any work, what the selection cannot account for."""
    final, _ = private_step(estimator)
    for name in ("epsilon", "random_state"):
        if name not in final.get_params():
            raise ValueError(f"EpsilonForUtility needs a private estimator with an {name!r} "
                             f"parameter; {type(final).__name__} has none.")
    if isinstance(estimator, Pipeline):
        for name, step in estimator.steps[:-1]:
            if step not in (None, "passthrough") and type(step).__name__ not in PUBLIC_TRANSFORMS:
                raise ValueError(
                    f"Pipeline step {name!r} ({type(step).__name__}) would be fitted on the "
                    "private rows outside any privacy guarantee. Steps before the private "
                    f"estimator must transform each row alone: {', '.join(PUBLIC_TRANSFORMS)}.")


def with_budget(estimator, **params):
    """A clone of ``estimator`` with its private step's ``params`` set."""
    _, prefix = private_step(estimator)
    return clone(estimator).set_params(**{prefix + k: v for k, v in params.items()})


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

    def largest_rung(self):
        """The largest epsilon the next rung may use without passing the cap."""
        return self.epsilon_max - self.spent

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
    """Training rows' spend when every rung is a release of one Laplace noise path.

    The earlier, noisier releases are the latest one plus noise that does not
    depend on the data (:class:`~skdp.linear_model.NoiseReductionPath`), so the
    rungs up to ``k`` cost ``epsilon_k`` ex post, not the sum (Ligett et al. 2017,
    noise reduction with Koufogiannis et al.'s gradual release); every rung may go
    up to the cap.
    """

    kind = ("Laplace noise reduction, ex post the last rung's epsilon (Koufogiannis "
            "et al. 2015; Ligett et al. 2017)")

    def largest_rung(self):
        return self.epsilon_max

    def _add(self, certified):
        self.spent = max(self.spent, certified)


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

    def largest_rung(self):
        """The largest rung epsilon (at ``rung_delta``) whose ``mu`` fits the top filter."""
        from ..accounting import gaussian_epsilon

        room = self.mu_max**2 - (0.0 if self.reduction else self.mu_squared)
        if room <= 0:
            return 0.0
        return gaussian_epsilon(self.rung_delta, np.sqrt(room) * (1 - 1e-9))

    def charge(self, epsilon_requested, model):
        """Charge the rung's ``mu`` from its public parameters; check the certified one."""
        from ..accounting import gdp_mu

        model = private_step(model)[0]
        mu = gdp_mu(epsilon_requested, self.rung_delta)
        certified = _certified_mu(model)
        if certified > mu * (1 + 1e-6):
            raise RuntimeError("a rung certified a larger mu than the odometer charged")
        self.mu_squared = max(self.mu_squared, mu**2) if self.reduction else \
            self.mu_squared + mu**2
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


def training_account(estimator, epsilon_max, delta_max, epsilon_start=None):
    """The account of the training rows for the rungs of ``estimator``.

    ``epsilon_start``, the first rung's epsilon, sets the odometer's lowest level
    (``None``: ``epsilon_max / 100``).
    """
    params = private_step_params(estimator)
    delta = params.get("delta", 0.0)
    reduction = supports_noise_reduction(estimator)
    if reduction and not delta:
        return NoiseReductionAccount(epsilon_max)
    if not delta:
        return PureDPAccount(epsilon_max)
    if delta_max is None or not 0 < delta_max < 1:
        raise ValueError(
            f"The estimator's rungs have delta={delta} > 0: set delta_max, the a priori "
            "delta of the whole search (0 < delta_max < 1).")
    if epsilon_start is None:
        epsilon_start = epsilon_max / 100
    if reduction:
        return GaussianDPOdometer(epsilon_max, delta_max, rung_delta=delta,
                                  epsilon_start=epsilon_start, reduction=True)
    if params.get("sample_rate") != 1.0:
        raise ValueError(
            f"Private selection with delta > 0 is supported for DPSGDClassifier with "
            f"full-batch steps (sample_rate=1.0: exactly Gaussian-DP) and Gaussian "
            f"OutputPertSVM (noise reduction) only; "
            f"{type(private_step(estimator)[0]).__name__} with these parameters has no "
            "fully adaptive filter here. Use delta=0 (objective or output perturbation, "
            "NAPP) or full batches, e.g. DPSGDClassifier(sample_rate=1.0, epochs=200) "
            "(the default samples batches at rate 0.1).")
    return GaussianDPOdometer(epsilon_max, delta_max, rung_delta=delta,
                              epsilon_start=epsilon_start)


NOISE_REDUCTION_STEP = 1.1
"""Ratio of the noise-reduction ladder: rungs are releases of one path, so a fine
ladder costs nothing more (only the validation tests, paid once)."""


def supports_noise_reduction(estimator):
    """Whether the rungs can share one noise path: Laplace (``noise="laplace"``) or
    Gaussian (``delta > 0``) output perturbation."""
    final, _ = private_step(estimator)
    return hasattr(final, "_supports_noise_reduction") and final._supports_noise_reduction()


class FreshFits:
    """Rungs that are new fits, each with fresh, independent noise."""

    def __init__(self, estimator, X, y, sources):
        self.estimator, self.X, self.y, self.sources = estimator, X, y, sources
        self.n_fits = 0

    def rung(self, epsilon):
        """The model of the rung at ``epsilon``."""
        _, random_state = self.sources.next()
        model = with_budget(self.estimator, epsilon=epsilon, random_state=random_state)
        model.fit(self.X, self.y)
        self.n_fits += 1
        return model


class NoiseReductionRungs(FreshFits):
    """Rungs that are releases, at increasing epsilons, of one fit's noise path.

    A Pipeline's row-wise steps are fitted once (they learn nothing from the rows)
    and shared by every released Pipeline.
    """

    def rung(self, epsilon):
        if self.n_fits == 0:
            _, random_state = self.sources.next()
            final, _ = private_step(self.estimator)
            X, self._steps = self.X, []
            if isinstance(self.estimator, Pipeline):
                head = Pipeline(clone(self.estimator).steps[:-1])
                X, self._steps = head.fit_transform(X, self.y), head.steps
            model = clone(final).set_params(epsilon=epsilon, random_state=random_state)
            self._path = model._noise_reduction_path(X, self.y)
            self.n_fits = 1
        model = self._path.release(epsilon)
        if not isinstance(self.estimator, Pipeline):
            return model
        pipeline = clone(self.estimator)
        pipeline.steps = [*self._steps, (self.estimator.steps[-1][0], model)]
        return pipeline


class CurveSteering:
    """The next rung's epsilon from released quantities only.

    The utility law ``U(epsilon) = U_inf - a / epsilon`` (the noise of every skdp
    mechanism scales as ``1 / epsilon`` at a fixed row count) is fitted by least
    squares to the rungs' noisy utilities; the next rung goes where the law meets
    the threshold, times ``1 + safety``, kept between ``min_step`` and ``max_step``
    times the last rung. With fewer than two noisy utilities, or when the law does
    not reach the threshold, the step is ``ratio``.
    """

    def __init__(self, threshold, ratio=2.0, *, safety=0.1, min_step=1.25, max_step=10.0):
        self.threshold = float(threshold)
        self.ratio = float(ratio)
        self.safety, self.min_step, self.max_step = safety, min_step, max_step

    def next(self, rungs):
        """The epsilon after ``rungs`` (dicts with ``epsilon`` and ``noisy_utility``)."""
        last = rungs[-1]["epsilon"]
        points = [(r["epsilon"], r["noisy_utility"]) for r in rungs
                  if r.get("noisy_utility") is not None]
        guess = self._law_answer(points) if len(points) >= 2 else None
        if guess is None:
            return last * self.ratio
        return float(np.clip(guess * (1 + self.safety), last * self.min_step,
                             last * self.max_step))

    def _law_answer(self, points):
        inverse = np.array([1.0 / e for e, _ in points])
        utility = np.array([u for _, u in points])
        design = np.column_stack([np.ones_like(inverse), -inverse])
        (u_inf, a), *_ = np.linalg.lstsq(design, utility, rcond=None)
        if a <= 0 or u_inf <= self.threshold:
            return None
        return float(a / (u_inf - self.threshold))


class GeometricSteering(CurveSteering):
    """The public ladder ``epsilon_{k+1} = ratio * epsilon_k`` (ignores the utilities)."""

    def next(self, rungs):
        return rungs[-1]["epsilon"] * self.ratio


@dataclass
class SelectionResult:
    """The outcome of :func:`select_epsilon_privately`.

    Attributes
    ----------
    estimator : estimator or None
        The passing rung's model (trained on the training part); ``None`` when no
        rung passed within the cap (nothing is released).
    epsilon : float or None
        The passing rung's epsilon.
    rungs : list of dict
        The transcript: each rung's epsilon, certified spend, pass/fail bit and
        noisy utility (``None`` when not drawn).
    training : dict
        The training rows' ex-post and a priori (epsilon, delta) and the accounting.
    validation : dict
        The validation rows' spend, ex post and a priori, by component.
    ex_post : tuple of float
        ``(epsilon, delta)`` realised, over every row given.
    a_priori : tuple of float
        ``(epsilon, delta)`` before running, over every row given.
    noisy_validation_count : float
        The noisy count of the validation part.
    stop_reason : str
    n_fits : int
        Private fits made (one under noise reduction, whatever the rungs).
    threshold : float
        The test's threshold: the target plus the margin (public).
    """

    estimator: object
    epsilon: float
    rungs: list
    training: dict
    validation: dict
    ex_post: tuple
    a_priori: tuple
    noisy_validation_count: float = 0.0
    stop_reason: str = ""
    n_fits: int = 0
    threshold: float = 0.0


COUNT_EPSILON = 0.1
"""Budget of the noisy count of the validation part (paid by the validation rows):
``Lap(10)`` rows, a tenth of a hundred-row part."""


def validation_budget(epsilon_val, max_rungs, noisy_utilities):
    """How the validation rows' budget ``epsilon_val`` is shared.

    Returns ``(above_threshold, per_utility)``: all of it goes to AboveThreshold
    without noisy utilities; with them, half goes to AboveThreshold and the other
    half to ``max_rungs`` noisy utilities. The noisy count (``COUNT_EPSILON``)
    comes on top.
    """
    if not noisy_utilities:
        return float(epsilon_val), 0.0
    return 0.5 * epsilon_val, 0.5 * epsilon_val / max_rungs


def above_threshold_budget(tolerance, validation_rows):
    """AboveThreshold's epsilon whose noise has standard deviation ``tolerance`` in utility.

    The test compares ``f + nu`` with ``rho``, ``nu ~ Lap(4 / e)`` and
    ``rho ~ Lap(2 / e)``: ``nu - rho`` has standard deviation ``sqrt(40) / e`` rows,
    that is ``sqrt(40) / (e * m)`` in mean utility over ``m`` validation rows.

    Parameters
    ----------
    tolerance : float
        Wanted standard deviation of the test's noise, in mean utility.
    validation_rows : float
        The (noisy, hence public) size of the validation part.

    Returns
    -------
    epsilon : float
    """
    return float(np.sqrt(40.0) / (tolerance * max(validation_rows, 1.0)))


def auto_margin(target, epsilon_test, validation_rows):
    """``margin="auto"``: one standard deviation of the test's error at the target.

    A rung whose validation accuracy is ``a`` passes when ``a`` plus the test's noise
    ``(nu - rho) / m`` clears the threshold, and ``a`` itself is off the rung's
    accuracy by the validation sampling error. Their standard deviations are
    ``sqrt(40) / (epsilon_test m)`` (:func:`above_threshold_budget`) and ``sqrt(t (1
    - t) / m)`` at the target ``t``, over ``m`` validation rows (the noisy count:
    public); the margin is their root sum of squares, so that a passing rung is
    rarely far below the target (the spec's margin that covers the validation
    sampling error, with the test's own noise beside it). It serves noise
    reduction, whose fine ladder tests many rungs near the target; a ladder of
    fresh fits doubles epsilon between rungs, which already overshoots it (there a
    margin costs one more doubling, measured: 5.2 instead of 2.2 times the oracle
    epsilon on KDDCup99 at 0.97, where 95 % of the runs were near the target
    without it).

    Parameters
    ----------
    target : float
        The target accuracy, in [0, 1].
    epsilon_test : float
        AboveThreshold's budget.
    validation_rows : float
        The noisy size of the validation part.

    Returns
    -------
    margin : float
    """
    m = max(validation_rows, 1.0)
    return float(np.hypot(np.sqrt(40.0) / (epsilon_test * m),
                          np.sqrt(target * (1.0 - target) / m)))


def _validation_sums(model, X_val, y_val, threshold):
    """The only reads of the validation rows by a rung, both of sensitivity 1.

    Returns ``(query, correct)``: AboveThreshold's ``sum_i (u_i - threshold)`` and
    the noisy utility's ``sum_i u_i``, with ``u_i = 1[prediction right]``.
    """
    if len(y_val) == 0:
        return 0.0, 0.0
    correct = float(np.sum(np.asarray(model.predict(X_val)) == np.asarray(y_val)))
    return correct - threshold * len(y_val), correct


def _validation_count(y_val):
    """The validation part's size (released only through a Laplace count)."""
    return len(y_val)


def _select_rows(X, mask):
    return X[mask] if not hasattr(X, "iloc") else X.iloc[np.flatnonzero(mask)]


def select_epsilon_privately(estimator, X, y, *, target, epsilon_max, epsilon_start,
                             epsilon_val=None, rows_epsilon=None, validation_fraction=0.2,
                             margin="auto", tolerance=0.005, steering="curve", ratio=2.0,
                             noisy_utilities=True, max_rungs=8, delta_max=None,
                             random_state=None, verbose=0):
    """Fit rungs on the training part until AboveThreshold passes one on the validation part.

    Parameters
    ----------
    estimator : estimator object
        A classifier with ``epsilon`` and ``random_state`` parameters; cloned for
        every rung. Pure epsilon-DP (``delta=0``) rungs are accounted ex post;
        rungs with ``delta > 0`` (full-batch DP-SGD) by a Gaussian-DP odometer. With
        :class:`~skdp.OutputPertSVM` at ``noise="laplace"`` or ``delta > 0`` the
        rungs are releases of one fit by noise reduction (Laplace:
        :class:`NoiseReductionAccount`; Gaussian: the odometer at the last rung's
        ``mu``): a public ladder of ratio ``NOISE_REDUCTION_STEP`` up to the cap,
        without noisy utilities (there is nothing to steer), ``steering``, ``ratio``
        and ``max_rungs`` unused.
    X : array-like of shape (n_samples, n_features)
        Every row given; split by independent public coins.
    y : array-like of shape (n_samples,)
        Labels.
    target : float
        The accuracy to reach, in [0, 1].
    epsilon_max : float
        Cap on the training rows' spend (the rungs' total, or the odometer's top level).
    epsilon_start : float
        The first rung's epsilon, public; ignored when ``rows_epsilon`` is given.
    epsilon_val : float, default=None
        The validation rows' budget (:func:`validation_budget`), on top of the noisy
        count's ``COUNT_EPSILON``; ``None``: :func:`above_threshold_budget` for ``tolerance``
        on the noisy count of the validation part.
    rows_epsilon : float, default=None
        A public estimate of ``n * epsilon`` at the target (from a proxy dataset);
        the first rung is then ``rows_epsilon / n_T`` with ``n_T`` the training
        part's size estimated from the noisy validation count.
    validation_fraction : float, default=0.2
        Probability of each row's coin.
    margin : float or "auto", default="auto"
        Public margin added to ``target`` to form the test's threshold. ``"auto"``:
        under noise reduction, :func:`auto_margin` (from the noisy validation count
        and the test's budget); else 0, the ladder's step overshooting the target
        already.
    tolerance : float, default=0.005
        With ``epsilon_val=None``: the standard deviation, in utility, of the
        test's noise (see :func:`above_threshold_budget`).
    steering : {"curve", "geometric"}, default="curve"
        How the next rung's epsilon is chosen (:class:`CurveSteering`,
        :class:`GeometricSteering`).
    ratio : float, default=2.0
        Step of the geometric ladder (and of the curve's fallback).
    noisy_utilities : bool, default=True
        Whether each rung also releases a noisy validation utility (paid by the
        validation rows) for the curve and the report.
    max_rungs : int, default=8
        Most rungs run.
    delta_max : float, default=None
        The a priori delta of the search when the rungs have ``delta > 0``.
    random_state : None, int or Generator, default=None
        ``None``: fresh cryptographic noise for the test and every rung, fresh
        public coins. Otherwise reproducibility mode.
    verbose : int, default=0
        Print one line per rung.

    Returns
    -------
    result : SelectionResult
    """
    reduction = supports_noise_reduction(estimator)
    if reduction:
        noisy_utilities, steering, ratio = False, "geometric", NOISE_REDUCTION_STEP
    noise_rng, public_rng = privacy_streams(random_state)
    in_validation = coin_split(len(y), validation_fraction, public_rng)
    X_train, y_train = _select_rows(X, ~in_validation), np.asarray(y)[~in_validation]
    X_val, y_val = _select_rows(X, in_validation), np.asarray(y)[in_validation]
    count = float(_validation_count(y_val) + noise_rng.laplace(scale=1.0 / COUNT_EPSILON))
    if rows_epsilon is not None:
        training_rows = max(count, 1.0) * (1 - validation_fraction) / validation_fraction
        epsilon_start = rows_epsilon / training_rows
        if reduction:
            epsilon_start /= 2  # the fine ladder then brackets the proxy's answer for free
    account = training_account(estimator, epsilon_max, delta_max, epsilon_start)
    if epsilon_val is None:
        epsilon_val = above_threshold_budget(tolerance, count) * (2.0 if noisy_utilities else 1.0)
    eps_test, eps_utility = validation_budget(float(epsilon_val), max_rungs, noisy_utilities)
    test = AboveThreshold(eps_test, noise_rng)
    if margin == "auto":
        margin = auto_margin(target, eps_test, count) if reduction else 0.0
    threshold = min(1.0, target + margin)
    steer = (GeometricSteering if steering == "geometric" else CurveSteering)(threshold, ratio)
    user_random_state = private_step_params(estimator).get("random_state")
    sources = _NoiseSources(random_state, user_random_state)
    fits = (NoiseReductionRungs if reduction else FreshFits)(estimator, X_train, y_train,
                                                           sources)
    rungs, released, epsilon, stop, refused = [], None, float(epsilon_start), "cap", 0
    while reduction or len(rungs) < max_rungs:
        epsilon = min(epsilon, account.largest_rung())
        if epsilon <= 0 or (rungs and epsilon <= rungs[-1]["epsilon"]):
            break  # the cap leaves no room for a larger rung
        try:
            model = fits.rung(epsilon)
        except PrivacyBudgetError:
            # refused on public parameters before any noise or data: nothing spent
            refused += 1
            if refused > 50:
                raise
            epsilon *= ratio
            continue
        rung = {"epsilon": float(epsilon), **account.charge(epsilon, model)}
        query, correct = _validation_sums(model, X_val, y_val, threshold)
        rung["passed"] = test.test(query)
        rung["noisy_utility"] = (
            float((correct + noise_rng.laplace(scale=1.0 / eps_utility)) / max(count, 1.0))
            if noisy_utilities else None)
        rungs.append(rung)
        if verbose:
            print(f"[EpsilonForUtility] rung {len(rungs)}: epsilon={epsilon:.4g}, "
                  f"{'pass' if rung['passed'] else 'fail'}"
                  + (f", noisy utility {rung['noisy_utility']:.4f}" if noisy_utilities else ""),
                  flush=True)
        if rung["passed"]:
            released, stop = model, "passed"
            break
        epsilon = steer.next(rungs)
    else:
        stop = "max_rungs"
    if released is not None:
        # the released model keeps the user's random_state, never a derived one
        _, prefix = private_step(released)
        released.set_params(**{prefix + "random_state": user_random_state})
    (train_post, delta_post), (train_prior, delta_prior) = account.guarantee()
    n_utilities = sum(r["noisy_utility"] is not None for r in rungs)
    val_post = COUNT_EPSILON + eps_test + n_utilities * eps_utility
    val_prior = COUNT_EPSILON + eps_test + max_rungs * eps_utility
    return SelectionResult(
        estimator=released, epsilon=rungs[-1]["epsilon"] if released is not None else None,
        rungs=rungs,
        training={"ex_post": (train_post, delta_post), "a_priori": (train_prior, delta_prior),
                  "accounting": account.kind},
        validation={"ex_post": (val_post, 0.0), "a_priori": (val_prior, 0.0),
                    "above_threshold": eps_test, "noisy_count": COUNT_EPSILON,
                    "noisy_utilities": n_utilities * eps_utility,
                    "accounting": "AboveThreshold (Dwork & Roth 2014, Algorithm 1) paid "
                                  "once; the Laplace count and utilities by basic "
                                  "composition"},
        ex_post=(max(train_post, val_post), delta_post),
        a_priori=(max(train_prior, val_prior), delta_prior),
        noisy_validation_count=count, stop_reason=stop, n_fits=fits.n_fits,
        threshold=threshold)


def _fmt(epsilon, delta):
    return f"({epsilon:.4g}, {delta:.3g})" if delta else f"{epsilon:.4g}"


def private_report(result, estimator_name, target):
    """``privacy_report_`` of a private selection, with a statement to sign.

    Parameters
    ----------
    result : SelectionResult
        The selection's outcome.
    estimator_name : str
        Name of the private estimator, for the statement.
    target : float
        The target accuracy.

    Returns
    -------
    report : dict
        ``selection``, ``ex_post`` and ``a_priori`` ``(epsilon, delta)`` over every
        row, ``parts`` (``training`` and ``validation``, each with its ex-post and
        a priori figures and accounting), ``fits`` (each rung's certified spend),
        ``transcript`` (rungs, pass/fail bits, noisy utilities, noisy count, the
        test's threshold),
        ``released_model`` and ``statement``.
    """
    (eps_post, delta_post), (eps_prior, delta_prior) = result.ex_post, result.a_priori
    train, val = result.training, result.validation
    n_rungs = len(result.rungs)
    pure = not delta_prior
    trials = (f"{n_rungs} trial fits" if result.n_fits != 1 or n_rungs == 1 else
              f"{n_rungs} trial releases of one fit, each less noisy than the last (noise "
              "reduction)")
    if result.estimator is not None:
        article = "an" if estimator_name[:1] in "AEIOU" else "a"
        outcome = (f"It released {article} {estimator_name} model trained at epsilon "
                   f"{result.epsilon:.4g}, the first of {trials} whose accuracy "
                   f"passed a private test against the target {target:g}.")
    else:
        outcome = (f"No trial fit passed the private test against the target {target:g} "
                   f"within the cap after {trials}: no model was released.")
    guarantee = (f"Everything released (the model, its epsilon, and the transcript of the "
                 f"search: each trial's epsilon, pass/fail result and noisy accuracy) is "
                 f"{_fmt(eps_post, delta_post)}-differentially private")
    statement = (
        f"{outcome} {guarantee} with respect to adding or removing any one person's record "
        "among those given, the choice of epsilon included. "
        f"This is the realised (ex-post) loss; whatever the data, it could not have "
        f"exceeded {_fmt(eps_prior, delta_prior)}. "
        + ("" if pure else
           "With Gaussian noise the realised figure comes from a privacy odometer and holds "
           "for the released transcript taken as a whole; ex-post guarantees with delta > 0 "
           "are not closed under post-processing, so for anything derived from part of it "
           f"alone, rely on the a priori {_fmt(eps_prior, delta_prior)}. ")
        + "Each record was used either to train the trial models or to test them, decided "
        "by an independent coin, so the two uses do not add up.")
    fits = [{"epsilon": r["epsilon"], "epsilon_spent": r["epsilon_spent"],
             "delta": r.get("delta_spent", 0.0),
             **({"mu": r["mu"]} if "mu" in r else {}),
             "purpose": "rung (trained on the training part)"} for r in result.rungs]
    return {
        "selection": "private",
        "ex_post": {"epsilon": eps_post, "delta": delta_post},
        "a_priori": {"epsilon": eps_prior, "delta": delta_prior},
        "parts": {
            "training": {"ex_post": dict(zip(("epsilon", "delta"), train["ex_post"])),
                         "a_priori": dict(zip(("epsilon", "delta"), train["a_priori"])),
                         "accounting": train["accounting"]},
            "validation": {"ex_post": dict(zip(("epsilon", "delta"), val["ex_post"])),
                           "a_priori": dict(zip(("epsilon", "delta"), val["a_priori"])),
                           "above_threshold": val["above_threshold"],
                           "noisy_count": val["noisy_count"],
                           "noisy_utilities": val["noisy_utilities"],
                           "accounting": val["accounting"]},
        },
        "composition": "parallel over the parts (independent coins): max of the parts",
        "fits": fits,
        "transcript": {"rungs": result.rungs,
                       "noisy_validation_count": result.noisy_validation_count,
                       "threshold": result.threshold,
                       "stop_reason": result.stop_reason},
        "released_model": (None if result.estimator is None else
                           {"epsilon": result.epsilon, "delta": fits[-1]["delta"]}),
        "statement": statement,
    }
