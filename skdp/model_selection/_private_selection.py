"""Choosing epsilon inside the guarantee: a ladder of private fits tested privately.

The accuracy-first procedure of Ligett, Neel, Roth, Waggoner & Wu (NeurIPS 2017), with
one public cap ``epsilon_max`` (and ``delta_max``) on everything the search releases:

1. the rows are split by independent public coins into a training part ``D_T`` and a
   validation part ``D_V`` (under add/remove, adding a row moves no other row across
   the split, so the two parts compose in parallel; a permutation cut would not);
2. Laplace label counts of ``D_V`` (a histogram, paid by the validation rows, at
   :func:`~._selection_tests.count_epsilon` of the cap; a regressor's one count at
   most a first rung's test, :func:`~._selection_tests.regression_count_epsilon`)
   give the public size that turns test sums into utilities, and a classifier's
   chance level;
3. rung ``k`` fits the estimator on ``D_T`` at ``epsilon_k`` with fresh,
   independent noise (never shared across rungs: two releases of one noise draw at
   two epsilons reveal the non-private minimiser), every rung with the label set of
   the whole input;
4. rung ``k`` is tested on ``D_V`` by the Laplace mechanism (Dwork & Roth 2014,
   Theorem 3.6) on ``f_k = sum_{i in D_V} (u_i - t)``, ``u_i`` in [0, 1] and the
   threshold ``t`` clamped into [0, 1] (sensitivity at most ``max(t, 1 - t) <= 1``
   under add/remove), with budget ``b_k``, ``test_ratio`` times the rung's epsilon
   (under noise reduction, its increment of epsilon) less what the counts still owe
   (:class:`~._selection_tests.ValidationAccount`): it passes when ``f_k + Lap(1 /
   b_k) >= 0``, and the noisy sum gives the rung's noisy utility;
5. the first passing rung's model is released with the transcript.

Accounting. A training row enters only through the rungs' models: with pure
epsilon-DP rungs the realised loss is at most ``sum_{j <= k} epsilon_j`` pointwise,
whatever the stopping rule (an ex-post guarantee). A validation row enters only
through the count and the tests, pure Laplace mechanisms whose budgets are chosen
from earlier outputs: their realised loss is at most ``count + sum b_k`` pointwise
(fully adaptive basic composition of pure DP; Rogers, Roth, Ullman & Vadhan 2016).
Each part is kept within ``epsilon_max`` before any rung runs, so the parts, composed
in parallel, make the search ex-post ``max(train spend, validation spend)``-DP and a
priori ``epsilon_max``-DP, the same figure on every run. Rungs with ``delta > 0``
have no pointwise loss bound: full-batch DP-SGD rungs go through a Gaussian-DP
odometer (:class:`~skdp.accounting._odometers.GaussianDPOdometer`), Poisson DP-SGD through a
Renyi odometer and (epsilon, delta) objective perturbation through a basic-composition
odometer (:mod:`._accounts`). Laplace and Gaussian output perturbation rungs share one
noise path (noise reduction) and cost only the last rung's epsilon
(:class:`~skdp.accounting._odometers.NoiseReductionAccount`; for Gaussian noise, the
odometer's claim at the last rung's ``mu``).

Persons (``groups``): the unit becomes one person, all of their rows. One coin per
person (:func:`person_coin_split`), the counts of persons (each person's fraction of
rows in each class: L1 and L2 sensitivity at most 1), the test sums ``sum_p
(mean_{i in p} u_i - t)`` (sensitivity ``max(t, 1 - t)`` per person), and rungs fitted
with ``fit(X, y, groups=...)`` (or released from a noise path fitted with them: SSP)
that certify add/remove-person neighbours; the accounts
are unchanged (:func:`~._selection_checks.check_person_selection` refuses what cannot
take them), except that Gaussian ``ObjPertLogisticRegression`` rungs go to the
basic-composition odometer (their Renyi curve is a record's: ``training_account(...,
persons=True)``).
"""

from dataclasses import dataclass, field

import numpy as np
from sklearn.base import is_classifier

from ..accounting._odometers import PureDPAccount, RenyiOdometer
from ..exceptions import PrivacyBudgetError
from ..utils._groups import check_groups
from ._accounts import FittedSpend, check_label_set_cost
from ._gate import private_step
from ._measure import _NoiseSources
from ._partitioned_rows import partitioned_parts
from ._selection_checks import check_person_selection, private_step_params, rungs_share_a_path
from ._selection_accounts import ladder_floor, random_ladder_ratio, training_account
from ._selection_tests import (
    ValidationAccount,
    check_test_rows,
    cohort_too_small,
    noisy_label_counts,
    noisy_test,
    person_shares,
    regression_count_epsilon,
    sampling_sd,
    test_threshold,
    tests_on_all_rows,
)
from ._selection_report import SelectionResult, validation_spend
from ._selection_rungs import (
    NOISE_REDUCTION_STEP,
    PROXY_RATIO,
    PROXY_SAFETY,
    CurveSteering,
    FreshFits,
    GeometricSteering,
    NoiseReductionRungs,
    random_offset,
)


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


def person_coin_split(codes, validation_fraction, public_rng):
    """Assign each person, with all of their rows, to the validation part by one coin.

    Person ``j``'s coin is the ``j``-th draw of ``public_rng`` (:func:`coin_split` over
    the persons), broadcast to their rows: a person never straddles the parts, and
    the coins, independent of the data, are the same for person ``j`` on any data.

    Parameters
    ----------
    codes : ndarray of shape (n_samples,)
        Each row's person, ``0 .. n_persons - 1``
        (:func:`~skdp.utils._groups.check_groups`).
    validation_fraction : float
        Probability that a person goes to the validation part, in (0, 1).
    public_rng : numpy.random.Generator
        A public stream (never one that draws privacy noise).

    Returns
    -------
    in_validation : ndarray of shape (n_samples,), dtype bool
    """
    n_persons = int(codes.max()) + 1 if len(codes) else 0
    return coin_split(n_persons, validation_fraction, public_rng)[codes]


def _select_rows(X, mask):
    return X[mask] if not hasattr(X, "iloc") else X.iloc[np.flatnonzero(mask)]


def _plateau(rungs, threshold_sd, chance=None):
    """Whether the noisy utilities have levelled off clearly below the threshold.

    The last rung's noisy utility is more than two ``threshold_sd`` below its
    threshold and no more than two above that of the last rung at a quarter of its
    epsilon or less (a fourfold budget bought no visible progress), and, for a
    classifier, more than four above the chance level (the largest class share of
    the noisy label counts): a flat stretch at the chance level is the noise
    swamping the model, which more budget lifts, not a plateau. Reads only
    released quantities.
    """
    last = rungs[-1]
    earlier = [r for r in rungs if r["epsilon"] * 4 <= last["epsilon"]]
    if not earlier:
        return False
    utility = last["noisy_utility"]
    gain = utility - earlier[-1]["noisy_utility"]
    above_chance = chance is None or utility > chance + 4.0 * threshold_sd
    return (above_chance and utility < last["threshold"] - 2.0 * threshold_sd
            and gain < 2.0 * threshold_sd)


class _SelectionStreams:
    """The selection's random streams, each on its own branch of one root.

    ``None`` everywhere: fresh cryptographic noise for the count, the tests and
    every rung, fresh public coins, and no proxy seed. Otherwise (reproducibility
    mode) the rungs, the selection's noise, the coins and the proxy's analytic run
    each get a separate branch, so no two of them share a stream.
    """

    _SELECTION, _COINS, _PROXY, _OFFSET = 2**32 + 1, 2**32 + 2, 2**32 + 3, 2**32 + 4

    def __init__(self, *random_states):
        self.rungs = _NoiseSources(*random_states)
        self._root = self.rungs._root

    def _branch(self, key):
        return np.random.SeedSequence(self._root.entropy, spawn_key=(key,))

    def noise(self):
        """The count's and the tests' noise (ChaCha20)."""
        from ..utils._random import _chacha, privacy_streams

        if self._root is None:
            return privacy_streams(None)[0]
        return _chacha(self._branch(self._SELECTION))

    def coins(self):
        """The public stream of the split's coins."""
        if self._root is None:
            return np.random.default_rng()
        return np.random.default_rng(self._branch(self._COINS))

    def offset(self):
        """The public stream of the randomised ladder's offset."""
        if self._root is None:
            return np.random.default_rng()
        return np.random.default_rng(self._branch(self._OFFSET))

    def proxy(self):
        """The ``random_state`` of the analytic run on proxy data."""
        if self._root is None:
            return None
        return np.random.Generator(np.random.PCG64(self._branch(self._PROXY)))


@dataclass(frozen=True)
class SelectionSettings:
    """The public parameters of a private selection (:func:`select_epsilon_privately`).

    Parameters
    ----------
    target : float
        The utility to reach, in [0, 1].
    epsilon_max : float
        Cap on the whole search (every part, ex post and a priori).
    epsilon_start : float
        The first rung's epsilon, public; ignored when ``rows_epsilon`` is given.
    rows_epsilon : float, default=None
        A public estimate of ``n * epsilon`` at the target (from a proxy dataset);
        the first rung is then ``rows_epsilon / n_T`` with ``n_T`` the training
        part's size estimated from the noisy validation count.
    validation_fraction : float, default=0.2
        Probability of each row's coin.
    margin : float or "auto", default="auto"
        Public margin added to ``target`` to form the test's threshold (see
        :func:`~._selection_tests.test_threshold`).
    tolerance : float, default=0.05
        The coarsest test resolution accepted, as the standard deviation in utility
        of a test's noise: when even the largest rung the cap allows would be
        tested more coarsely (on the noisy count less two standard deviations of
        its noise), no rung is fitted; no test's noise exceeds half of it (fresh
        rungs start high enough; under noise reduction, releases are tested once
        their increment buys it).
    test_ratio : float or "auto", default="auto"
        A rung's test budget per unit of its epsilon (a Gaussian test's ``mu`` per
        unit of its rung's under ``test_rows="all"``); ``"auto"``:
        :data:`~._selection_tests.PURE_ALL_ROWS_TEST_RATIO` for pure rungs on all
        the rows, a Gaussian test at its rung's ``mu`` but no finer than the test
        floor's (:func:`~._selection_tests.floor_mu`) for Gaussian ones, else 1.
    steering : {"curve", "geometric", "random"}, default="curve"
        How the next rung's epsilon is chosen
        (:class:`~._selection_rungs.CurveSteering`,
        :class:`~._selection_rungs.GeometricSteering`); ``"random"``: the geometric
        ladder of ratio :func:`~._selection_accounts.random_ladder_ratio` from
        ``epsilon_start`` times a public random offset
        (:func:`~._selection_rungs.random_offset`; a proxy's start is used as it is).
    ratio : float, default=2.0
        Step of the geometric ladder (and of the curve's fallback); unused with
        ``steering="random"``.
    max_rungs : int, default=8
        Most rungs run.
    delta_max : float, default=None
        The a priori delta of the search when the rungs have ``delta > 0``.
    classes : array-like, default=None
        The label set every rung is fitted with (a classifier's); ``None``: the
        labels of the whole input ``y``.
    y_bound : float, default=None
        A regressor's public bound on ``|y|``
        (:func:`~._selection_tests.bounded_utilities`).
    utility_scale : float, default=None
        A regressor's public error scale: its per-row utility is ``1 - min(1, (y -
        y_hat)^2 / utility_scale^2)``; ``None``: ``2 y_bound``.
    random_state : None, int or Generator, default=None
        ``None``: fresh cryptographic noise for the test and every rung, fresh
        public coins. Otherwise reproducibility mode.
    verbose : int, default=0
        Print one line per rung.
    checkpoints : bool, default=False
        Full-batch DP-GD rungs as checkpoints of one run
        (:func:`~._selection_checks.supports_checkpoints`), accounted as noise
        reduction.
    test_rows : {"held_out", "all"}, default="held_out"
        ``"held_out"``: the tests read the validation part only (Laplace, in parallel
        with the rungs). ``"all"``: no row is held out; the counts and tests read every
        row and are charged with the rungs to their account (fresh pure rungs:
        :class:`~._selection_tests.PureTests`; fresh full-batch DP-GD rungs:
        :class:`~._selection_tests.GaussianTests`; see
        :func:`~._selection_tests.check_test_rows`); ``validation_fraction`` unused.
    """

    target: float
    epsilon_max: float
    epsilon_start: float
    rows_epsilon: float = None
    validation_fraction: float = 0.2
    margin: object = "auto"
    tolerance: float = 0.05
    test_ratio: object = "auto"
    steering: str = "curve"
    ratio: float = 2.0
    max_rungs: int = 8
    delta_max: float = None
    classes: object = None
    y_bound: float = None
    utility_scale: float = None
    random_state: object = None
    verbose: int = 0
    checkpoints: bool = False
    test_rows: str = "held_out"


@dataclass
class _Parts:
    """The rows the rungs train on and the rows they are tested on (the same rows with
    ``test_rows="all"``); with persons, the training part's groups and each tested
    row's share ``1 / k`` of its person."""

    X_train: object
    y_train: object
    groups_train: object
    X_val: object
    y_val: object
    shares_val: object


def _split(X, y, groups, codes, joint, validation_fraction, streams):
    """The training and tested parts: every row for both when ``joint``, else one
    public coin per row (per person with ``groups``)."""
    y = np.asarray(y)
    # with persons, each row's share 1 / k of its person (k rows, all in one part)
    shares = None if groups is None else person_shares(codes)
    if joint:
        return _Parts(X, y, groups, X, y, shares)
    in_validation = (coin_split(len(y), validation_fraction, streams.coins())
                     if groups is None else
                     person_coin_split(codes, validation_fraction, streams.coins()))
    train = ~in_validation
    return _Parts(_select_rows(X, train), y[train], None if groups is None else groups[train],
                  _select_rows(X, in_validation), y[in_validation],
                  None if groups is None else shares[in_validation])


def _partitioned_split(rows, joint, validation_fraction, streams):
    """:func:`_split` of checked dask rows, on the graph
    (:func:`~._partitioned_rows.partitioned_parts`)."""
    train, validation = partitioned_parts(rows, None if joint else validation_fraction,
                                          streams.coins())
    return _Parts(train.X, train.y, train.groups, validation.X, validation.y,
                  validation.shares)


class _Ladder:
    """The next rung's epsilon: the steering's proposal, kept within the cap and at or
    above the smallest rung whose test noise is at most half the tolerance; under
    noise reduction, a rung beyond its path's span closes the path first.

    Parameters
    ----------
    setup : _SelectionSetup
        The account, the tests, the rung fitter and the steering.
    start : float
        The first rung's proposed epsilon.
    ratio : float
        The step after a rung refused on its public parameters.
    """

    def __init__(self, setup, start, ratio):
        self.account, self.tests, self.fits = setup.account, setup.tests, setup.fits
        self.steer, self.reduction, self.ratio = setup.steer, setup.reduction, ratio
        # no test noisier than half the tolerance: the smallest budget that allows
        self.min_budget = self.tests.budget_for_sd(0.5 * setup.settings.tolerance, setup.count)
        self.epsilon = float(start)

    def _room(self):
        return min(self.account.largest_rung(), self.tests.largest_rung())

    def next_rung(self, rungs):
        """``(epsilon, new_path)`` of the next rung after ``rungs``, or ``None`` when the
        cap leaves no room for a larger rung with a fine enough test."""
        epsilon = float(min(max(self.epsilon, self.tests.smallest_rung(self.min_budget)),
                            self.account.largest_rung(), self.tests.largest_rung()))
        if (epsilon <= 0 or (rungs and epsilon <= rungs[-1]["epsilon"])
                or epsilon < self.tests.smallest_rung(self.min_budget) * (1 - 1e-9)):
            return None
        new_path = self.reduction and self.fits.starts_path(epsilon)
        if new_path and self.fits.n_fits:
            self.account.new_path()
            self.tests.new_path()
            epsilon = float(min(epsilon, self.account.largest_rung(), self.tests.largest_rung()))
            if epsilon <= rungs[-1]["epsilon"] or epsilon < self.tests.smallest_rung(
                    self.min_budget):
                return None  # no room left for a new path above the last rung
        self.epsilon = epsilon
        return epsilon, new_path

    def refused(self):
        """After a rung refused on public parameters (before any noise or data: nothing
        spent): whether a larger one, ``ratio`` times, still fits the cap."""
        if self.epsilon >= self._room():
            return False
        self.epsilon *= self.ratio
        return True

    def advance(self, rungs):
        """The steering's proposal after a failed rung."""
        self.epsilon = self.steer.next(rungs)


class _SelectionSetup:
    """Everything a selection fixes before its first rung, in this order: the refusals
    that read no data, the account and the tests, the streams, the split, the noisy
    label counts, the start and the steering of the ladder, the rung fitter.

    Parameters
    ----------
    estimator : estimator or Pipeline
        As for :func:`select_epsilon_privately`.
    X, y : array-like
        Every row given.
    settings : SelectionSettings
        The public parameters.
    groups : array-like of shape (n_samples,), default=None
        The person of each row.
    account : tuple, default=None
        :func:`~._selection_accounts.training_account`'s ``(account, rung_params)``.
    """

    def __init__(self, estimator, X, y, settings, groups=None, account=None, rows=None):
        s = self.settings = settings
        persons = groups is not None
        codes = None
        if persons:
            check_person_selection(estimator, s.checkpoints)
        if persons and rows is None:
            codes = check_groups(groups, len(y))
            groups = np.asarray(groups).reshape(len(y))
        self.unit = "person" if persons else "row"
        self.reduction = rungs_share_a_path(estimator, s.checkpoints)
        self.classes = s.classes
        if self.classes is None and is_classifier(estimator):
            # the whole input's, never the training part's
            self.classes = np.unique(y) if rows is None else rows.classes
        self.account, rung_params = account or training_account(
            estimator, s.epsilon_max, s.delta_max, s.epsilon_start, s.max_rungs,
            s.checkpoints, persons=persons)
        self.joint = check_test_rows(s.test_rows, self.account)
        self.tests = self._tests()
        if self.classes is not None and isinstance(self.account, RenyiOdometer):
            # the label set against the declared curve charged, before any noise
            check_label_set_cost(private_step(estimator)[0], len(self.classes))
        self.user_random_state = private_step_params(estimator).get("random_state")
        self.streams = _SelectionStreams(s.random_state, self.user_random_state)
        self.noise_rng = self.streams.noise()
        self.parts = (_split(X, y, groups, codes, self.joint, s.validation_fraction,
                             self.streams) if rows is None else
                      _partitioned_split(rows, self.joint, s.validation_fraction, self.streams))
        self.histogram, self.count, self.chance = noisy_label_counts(
            self.parts.y_val, self.classes, self.tests, self.noise_rng, self.parts.shares_val)
        if hasattr(self.tests, "set_rows"):
            self.tests.set_rows(self.count)
        steering, start, ratio = self._start()
        self.sample_sd = sampling_sd(s.target, self.count)
        self.threshold = test_threshold(s.target, 0.0 if s.margin == "auto" else s.margin,
                                        False, 0, 0)
        self.steer = (CurveSteering if steering == "curve" else GeometricSteering)(
            self.threshold, ratio)
        self._fitter(estimator, rung_params)
        self.ladder = _Ladder(self, start, ratio)

    def _tests(self):
        s = self.settings
        if self.joint:
            return tests_on_all_rows(self.account, s.test_ratio,
                                     min(s.epsilon_start, s.epsilon_max))
        ratio = 1.0 if s.test_ratio == "auto" else s.test_ratio
        count = (None if self.classes is not None else regression_count_epsilon(
            s.epsilon_max, ratio, min(s.epsilon_start, s.epsilon_max)))
        return ValidationAccount(s.epsilon_max, ratio, increments=self.reduction,
                                 count_budget=count)

    def _start(self):
        """``(steering, first epsilon, ratio)``: a path's fine public ladder under noise
        reduction; from a proxy's ``rows_epsilon`` on the noisy count, or times a
        public random offset with ``steering="random"``."""
        s = self.settings
        steering, start, ratio = s.steering, s.epsilon_start, s.ratio
        if self.reduction:
            steering, ratio = "geometric", NOISE_REDUCTION_STEP
        elif steering == "random":
            ratio = random_ladder_ratio(self.account)
        if s.rows_epsilon is not None:
            training_rows = max(self.count, 1.0) * (
                1.0 if self.joint else (1 - s.validation_fraction) / s.validation_fraction)
            start = s.rows_epsilon / training_rows
            if self.reduction:
                start /= 2  # the fine ladder then brackets the proxy's answer for free
            elif type(self.account) is PureDPAccount:
                start *= PROXY_SAFETY
                ratio = PROXY_RATIO
        elif steering == "random" and not self.reduction:
            start *= random_offset(self.streams.offset(), ratio)
        return steering, start, ratio

    def _fitter(self, estimator, rung_params):
        """The rung fitter, and the test at the largest rung the cap allows: its noise
        (the resolution when no rung runs) and whether it is fine enough."""
        extra = {**rung_params, **({} if self.classes is None else {"classes": self.classes})}
        largest = min(self.account.largest_rung(), self.tests.largest_rung())
        self.fits = (NoiseReductionRungs if self.reduction else FreshFits)(
            estimator, self.parts.X_train, self.parts.y_train, self.streams.rungs, extra,
            largest, self.parts.groups_train)
        top_budget = self.tests.test_budget(largest)
        self.top_sd = (self.tests.test_sd(top_budget, self.count) if top_budget > 0
                       else np.inf)
        self.cohort_too_small = cohort_too_small(top_budget, self.count,
                                                 len(self.histogram), self.tests,
                                                 self.settings.tolerance)

    def charge_and_test(self, model, epsilon):
        """The rung at ``epsilon``: its certified spend charged, then its private test
        (a rung whose intervals were refused, with ``inference=True``, fails)."""
        s, tests = self.settings, self.tests
        planned_sd = tests.test_sd(tests.test_budget(epsilon), self.count)
        threshold = test_threshold(s.target, s.margin, self.reduction, planned_sd,
                                   self.sample_sd)
        rung = {"epsilon": float(epsilon), **self.account.charge(epsilon, FittedSpend(model)),
                **noisy_test(model, (self.parts.X_val, self.parts.y_val), epsilon,
                             self.count, self.noise_rng, threshold, s.y_bound, tests,
                             self.parts.shares_val, s.utility_scale)}
        if self.fits.trials.intervals_refused(model):   # never released: it fails
            rung.update(passed=False, intervals_refused=True)
        return rung

    def release(self, model):
        """The passing rung, as released: the user's ``random_state`` (never a derived
        one), and its warnings replayed (the other rungs stay silent)."""
        return self.fits.release(model, self.user_random_state)


@dataclass
class _Run:
    """What the ladder produced: the transcript, the released model, why it stopped."""

    rungs: list = field(default_factory=list)
    released: object = None
    stop: str = "cap"
    resolution_sd: float = np.inf


def _run_ladder(setup):
    """Ask the ladder for the next rung, fit it through the gate, charge and test it;
    stop at the first pass, a plateau, the cap or ``max_rungs``."""
    run, ladder, fits = _Run(resolution_sd=setup.top_sd), setup.ladder, setup.fits
    if setup.cohort_too_small:
        run.stop = "cohort_too_small"
        return run
    while setup.reduction or len(run.rungs) < setup.settings.max_rungs:
        step = ladder.next_rung(run.rungs)
        if step is None:
            return run  # the cap leaves no room for a larger rung with a fine enough test
        epsilon, new_path = step
        try:
            model = fits.rung(epsilon, new_path) if setup.reduction else fits.rung(epsilon)
        except PrivacyBudgetError:
            if ladder.refused():
                continue
            return run
        rung = setup.charge_and_test(model, epsilon)
        run.rungs.append(rung)
        run.resolution_sd = rung["test_sd"]
        if setup.settings.verbose:
            _print_rung(len(run.rungs), rung)
        if rung["passed"]:
            run.released, run.stop = setup.release(model), "passed"
            return run
        # along a noise path the releases share their noise, so a flat stretch can
        # be one unlucky draw: the early stop is for fresh fits
        if not setup.reduction and _plateau(
                run.rungs, np.hypot(rung["test_sd"], setup.sample_sd), setup.chance):
            run.stop = "plateau"
            return run
        ladder.advance(run.rungs)
    run.stop = "max_rungs"
    return run


def _print_rung(number, rung):
    print(f"[EpsilonForUtility] rung {number}: epsilon={rung['epsilon']:.4g}, "
          f"{'pass' if rung['passed'] else 'fail'}, noisy utility "
          f"{rung['noisy_utility']:.4f} (test noise sd {rung['test_sd']:.2g})", flush=True)


def _selection_result(setup, run):
    """The :class:`~._selection_report.SelectionResult` of a finished ladder: each
    part's spend, ex post and a priori, the transcript and the test's resolution."""
    s, account = setup.settings, setup.account
    guarantee = account.guarantee()
    (train_post, delta_post), (train_prior, delta_prior) = guarantee
    validation = validation_spend(setup.tests, setup.joint, guarantee)
    sd, sample_sd = run.resolution_sd, setup.sample_sd
    return SelectionResult(
        estimator=run.released,
        epsilon=run.rungs[-1]["epsilon"] if run.released is not None else None,
        rungs=run.rungs,
        training={"ex_post": (train_post, delta_post), "a_priori": (train_prior, delta_prior),
                  "accounting": account.kind},
        validation=validation, ex_post=(max(train_post, validation["ex_post"][0]), delta_post),
        a_priori=(float(s.epsilon_max), delta_prior),
        noisy_validation_count=setup.count, noisy_label_counts=setup.histogram.tolist(),
        chance=setup.chance, stop_reason=run.stop, n_fits=setup.fits.n_fits,
        threshold=setup.threshold, test_rows=s.test_rows,
        training_share=1.0 if setup.joint else 1.0 - s.validation_fraction,
        unit=setup.unit, ladder_floor=ladder_floor(account, setup.reduction),
        resolution={"noisy_validation_count": setup.count, "test_noise_sd": float(sd),
                    "sampling_sd": sample_sd, "total_sd": float(np.hypot(sd, sample_sd))})


def select_epsilon_privately(estimator, X, y, *, groups=None, account=None, rows=None,
                             **settings):
    """Fit rungs on the training part until a private test passes one on the validation part.

    Everything released stays within the cap ``epsilon_max`` (and ``delta_max``):
    see the module's docstring. The setup (:class:`_SelectionSetup`) fixes the
    account, the tests, the split and the counts before any rung; one loop then asks
    the ladder for the next rung, fits it through the gate, charges and tests it.

    Parameters
    ----------
    estimator : estimator object
        A private estimator with ``epsilon`` and ``random_state`` parameters, or a
        Pipeline ending in one after public preprocessing; cloned for every rung.
        With :class:`~skdp.OutputPertSVM` at ``noise="laplace"`` or ``delta > 0``
        the rungs are releases of one fit by noise reduction: a public ladder of
        ratio ``NOISE_REDUCTION_STEP``, ``steering``, ``ratio`` and ``max_rungs``
        unused.
    X : array-like of shape (n_samples, n_features)
        Every row given; split by independent public coins.
    y : array-like of shape (n_samples,)
        Labels or targets.
    groups : array-like of shape (n_samples,), default=None
        The person of each row. Given, the unit of privacy is the person: one coin per
        person (:func:`person_coin_split`), counts of persons (each person's fraction
        of rows in each class) and tests of ``sum_p (mean_{i in p} u_i - t)``, both of
        sensitivity 1 per person; every rung is fitted with the training part's groups
        and must certify add/remove-person neighbours (a noise path, SSP's, is fitted
        with them). Refused (before any noise) for rungs that cannot take them
        (:func:`~._selection_checks.check_person_selection`).
    account : tuple, default=None
        :func:`~._selection_accounts.training_account`'s ``(account, rung_params)``
        when the caller built it (to refuse before reading the data); ``None``: built
        here.
    rows : PartitionedRows, default=None
        The rows on dask, checked
        (:func:`~._partitioned_rows.check_partitioned_rows`): split, fitted and tested
        on the dask graph (``X`` and ``y`` unused; ``groups`` only says whether the
        unit is the person).
    **settings : dict
        The public parameters, :class:`SelectionSettings` (``target``,
        ``epsilon_max`` and ``epsilon_start`` required).

    Returns
    -------
    result : SelectionResult
    """
    setup = _SelectionSetup(estimator, X, y, SelectionSettings(**settings), groups, account,
                            rows)
    return _selection_result(setup, _run_ladder(setup))
