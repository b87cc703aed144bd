"""Choosing epsilon inside the guarantee: a ladder of private fits tested privately.

The accuracy-first procedure of Ligett, Neel, Roth, Waggoner & Wu (NeurIPS 2017), with
one public cap ``epsilon_max`` (and ``delta_max``) on everything the search releases:

1. the rows are split by independent public coins into a training part ``D_T`` and a
   validation part ``D_V`` (under add/remove, adding a row moves no other row across
   the split, so the two parts compose in parallel; a permutation cut would not);
2. Laplace label counts of ``D_V`` (a histogram, paid by the validation rows, at
   :func:`count_epsilon` of the cap) give the public size that turns test sums into
   utilities, and a classifier's chance level;
3. rung ``k`` fits the estimator on ``D_T`` at ``epsilon_k`` with fresh,
   independent noise (never shared across rungs: two releases of one noise draw at
   two epsilons reveal the non-private minimiser), every rung with the label set of
   the whole input;
4. rung ``k`` is tested on ``D_V`` by the Laplace mechanism (Dwork & Roth 2014,
   Theorem 3.6) on ``f_k = sum_{i in D_V} (u_i - t)``, ``u_i`` in [0, 1] and the
   threshold ``t`` clamped into [0, 1] (sensitivity at most ``max(t, 1 - t) <= 1``
   under add/remove), with budget ``b_k``, ``test_ratio`` times the rung's epsilon
   (under noise reduction, its increment of epsilon) less what the counts still owe
   (:class:`ValidationAccount`): it passes when ``f_k + Lap(1 / b_k) >= 0``, and the
   noisy sum gives the rung's noisy utility;
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
odometer (:class:`GaussianDPOdometer`), Poisson DP-SGD through a Renyi odometer and
(epsilon, delta) objective perturbation through a basic-composition odometer
(:mod:`._accounts`). Laplace and Gaussian output perturbation rungs share one noise
path (noise reduction) and cost only the last rung's epsilon
(:class:`NoiseReductionAccount`; for Gaussian noise, the odometer's claim at the last
rung's ``mu``).

Persons (``groups``): the unit becomes one person, all of their rows. One coin per
person (:func:`person_coin_split`), the counts of persons (each person's fraction of
rows in each class: L1 and L2 sensitivity at most 1), the test sums ``sum_p
(mean_{i in p} u_i - t)`` (sensitivity ``max(t, 1 - t)`` per person), and rungs fitted
with ``fit(X, y, groups=...)`` that certify add/remove-person neighbours; the accounts
are unchanged (:func:`check_person_selection` refuses what cannot take them), except
that Gaussian ``ObjPertLogisticRegression`` rungs go to the basic-composition odometer
(their Renyi curve is a record's: ``training_account(..., persons=True)``).
"""

import numpy as np
from sklearn.base import is_classifier

from ..exceptions import PrivacyBudgetError
from ..utils._groups import check_groups
from ._gate import private_step
from ._measure import _NoiseSources
from ._selection_checks import check_person_selection, private_step_params, rungs_share_a_path
from ._selection_accounts import (  # noqa: F401  (GaussianDPOdometer: cited here by path)
    GaussianDPOdometer,
    PureDPAccount,
    ladder_floor,
    random_ladder_ratio,
    training_account,
)
from ._selection_tests import (
    GaussianTests,
    RenyiTests,
    ValidationAccount,
    check_test_rows,
    cohort_too_small,
    noisy_label_counts,
    noisy_test,
    person_shares,
    sampling_sd,
    test_threshold,
    tests_on_all_rows,
)
from ._selection_report import SelectionResult
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


def select_epsilon_privately(estimator, X, y, *, target, epsilon_max, epsilon_start,
                             rows_epsilon=None, validation_fraction=0.2, margin="auto",
                             tolerance=0.05, test_ratio="auto", steering="curve", ratio=2.0,
                             max_rungs=8, delta_max=None, classes=None, y_bound=None,
                             random_state=None, verbose=0, account=None,
                             checkpoints=False, test_rows="held_out", groups=None):
    """Fit rungs on the training part until a private test passes one on the validation part.

    Everything released stays within the cap ``epsilon_max`` (and ``delta_max``):
    see the module's docstring.

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
        :func:`test_threshold`).
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
        :data:`PURE_ALL_ROWS_TEST_RATIO` for pure rungs on all the rows, a Gaussian
        test at its rung's ``mu`` but no finer than the test floor's
        (:func:`floor_mu`) for Gaussian ones, else 1.
    steering : {"curve", "geometric", "random"}, default="curve"
        How the next rung's epsilon is chosen (:class:`CurveSteering`,
        :class:`GeometricSteering`); ``"random"``: the geometric ladder of ratio
        :func:`random_ladder_ratio` from ``epsilon_start`` times a public random
        offset (:func:`random_offset`; a proxy's start is used as it is).
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
        A regressor's public bound on ``|y|`` (:func:`bounded_utilities`).
    random_state : None, int or Generator, default=None
        ``None``: fresh cryptographic noise for the test and every rung, fresh
        public coins. Otherwise reproducibility mode.
    verbose : int, default=0
        Print one line per rung.
    account : tuple, default=None
        :func:`training_account`'s ``(account, rung_params)`` when the caller built it
        (to refuse before reading the data); ``None``: built here.
    checkpoints : bool, default=False
        Full-batch DP-GD rungs as checkpoints of one run (:func:`supports_checkpoints`),
        accounted as noise reduction.
    test_rows : {"held_out", "all"}, default="held_out"
        ``"held_out"``: the tests read the validation part only (Laplace, in parallel
        with the rungs). ``"all"``: no row is held out; the counts and tests read every
        row and are charged with the rungs to their account (fresh pure rungs:
        :class:`PureTests`; fresh full-batch DP-GD rungs: :class:`GaussianTests`; see
        :func:`check_test_rows`); ``validation_fraction`` unused.
    groups : array-like of shape (n_samples,), default=None
        The person of each row. Given, the unit of privacy is the person: one coin per
        person (:func:`person_coin_split`), counts of persons (each person's fraction
        of rows in each class) and tests of ``sum_p (mean_{i in p} u_i - t)``, both of
        sensitivity 1 per person; every rung is fitted with the training part's groups
        and must certify add/remove-person neighbours. Refused (before any noise) for
        rungs that cannot take them (:func:`check_person_selection`).

    Returns
    -------
    result : SelectionResult
    """
    if groups is not None:
        check_person_selection(estimator, checkpoints)
        codes = check_groups(groups, len(y))
        groups = np.asarray(groups).reshape(len(y))
    reduction = rungs_share_a_path(estimator, checkpoints)
    if classes is None and is_classifier(estimator):
        classes = np.unique(y)  # the whole input's label set, never the training part's
    account, rung_params = account or training_account(estimator, epsilon_max, delta_max,
                                                       epsilon_start, max_rungs, checkpoints,
                                                       persons=groups is not None)
    if reduction:
        steering, ratio = "geometric", NOISE_REDUCTION_STEP
    elif steering == "random":
        ratio = random_ladder_ratio(account)
    joint = check_test_rows(test_rows, account)
    tests = (tests_on_all_rows(account, test_ratio, min(epsilon_start, epsilon_max))
             if joint else ValidationAccount(epsilon_max, 1.0 if test_ratio == "auto"
                                             else test_ratio, increments=reduction))
    if classes is not None and hasattr(account, "check_classes"):
        account.check_classes(classes)  # a Renyi cost's number of classes, before any noise
    user_random_state = private_step_params(estimator).get("random_state")
    streams = _SelectionStreams(random_state, user_random_state)
    noise_rng = streams.noise()
    # with persons, each row's share 1 / k of its person (k rows, all in one part)
    shares = None if groups is None else person_shares(codes)
    groups_train = shares_val = None
    if joint:
        X_train, y_train = X_val, y_val = X, np.asarray(y)
        groups_train, shares_val = groups, shares
    else:
        in_validation = (coin_split(len(y), validation_fraction, streams.coins())
                         if groups is None else
                         person_coin_split(codes, validation_fraction, streams.coins()))
        X_train, y_train = _select_rows(X, ~in_validation), np.asarray(y)[~in_validation]
        X_val, y_val = _select_rows(X, in_validation), np.asarray(y)[in_validation]
        if groups is not None:
            groups_train, shares_val = groups[~in_validation], shares[in_validation]
    histogram, count, chance = noisy_label_counts(y_val, classes, tests, noise_rng,
                                                   shares_val)
    if hasattr(tests, "set_rows"):
        tests.set_rows(count)
    if rows_epsilon is not None:
        training_rows = max(count, 1.0) * (
            1.0 if joint else (1 - validation_fraction) / validation_fraction)
        epsilon_start = rows_epsilon / training_rows
        if reduction:
            epsilon_start /= 2  # the fine ladder then brackets the proxy's answer for free
        elif type(account) is PureDPAccount:
            epsilon_start *= PROXY_SAFETY
            ratio = PROXY_RATIO
    elif steering == "random" and not reduction:
        epsilon_start *= random_offset(streams.offset(), ratio)
    sample_sd = sampling_sd(target, count)
    threshold = test_threshold(target, 0.0 if margin == "auto" else margin, False, 0, 0)
    steer = (CurveSteering if steering == "curve" else GeometricSteering)(threshold, ratio)
    extra = {**rung_params, **({} if classes is None else {"classes": classes})}
    largest = min(account.largest_rung(), tests.largest_rung())
    fits = (NoiseReductionRungs if reduction else FreshFits)(
        estimator, X_train, y_train, streams.rungs, extra, largest, groups_train)
    rungs, released, epsilon, stop = [], None, float(epsilon_start), "cap"
    top_budget = tests.test_budget(largest)
    resolution_sd = tests.test_sd(top_budget, count) if top_budget > 0 else np.inf
    if cohort_too_small(top_budget, count, len(histogram), tests, tolerance):
        stop = "cohort_too_small"
    # no test noisier than half the tolerance: the smallest budget that allows
    min_budget = tests.budget_for_sd(0.5 * tolerance, count)
    while stop != "cohort_too_small" and (reduction or len(rungs) < max_rungs):
        epsilon = float(min(max(epsilon, tests.smallest_rung(min_budget)),
                            account.largest_rung(), tests.largest_rung()))
        if (epsilon <= 0 or (rungs and epsilon <= rungs[-1]["epsilon"])
                or epsilon < tests.smallest_rung(min_budget) * (1 - 1e-9)):
            break  # the cap leaves no room for a larger rung with a fine enough test
        new_path = reduction and fits.starts_path(epsilon)
        if new_path and fits.n_fits:
            account.new_path()
            tests.new_path()
            epsilon = float(min(epsilon, account.largest_rung(), tests.largest_rung()))
            if epsilon <= rungs[-1]["epsilon"] or epsilon < tests.smallest_rung(min_budget):
                break  # no room left for a new path above the last rung
        try:
            model = fits.rung(epsilon, new_path) if reduction else fits.rung(epsilon)
        except PrivacyBudgetError:
            # refused on public parameters before any noise or data: nothing spent
            if epsilon >= min(account.largest_rung(), tests.largest_rung()):
                break
            epsilon *= ratio
            continue
        planned_sd = tests.test_sd(tests.test_budget(epsilon), count)
        rung = {"epsilon": float(epsilon), **account.charge(epsilon, model),
                **noisy_test(model, (X_val, y_val), epsilon, count, noise_rng,
                              test_threshold(target, margin, reduction, planned_sd, sample_sd),
                              y_bound, tests, shares_val)}
        rungs.append(rung)
        resolution_sd = test_sd = rung["test_sd"]
        if verbose:
            print(f"[EpsilonForUtility] rung {len(rungs)}: epsilon={epsilon:.4g}, "
                  f"{'pass' if rung['passed'] else 'fail'}, noisy utility "
                  f"{rung['noisy_utility']:.4f} (test noise sd {test_sd:.2g})", flush=True)
        if rung["passed"]:
            released, stop = model, "passed"
            break
        # along a noise path the releases share their noise, so a flat stretch can
        # be one unlucky draw: the early stop is for fresh fits
        if not reduction and _plateau(rungs, np.hypot(test_sd, sample_sd), chance):
            stop = "plateau"
            break
        epsilon = steer.next(rungs)
    else:
        if stop != "cohort_too_small":
            stop = "max_rungs"
    if released is not None:
        # the released model keeps the user's random_state, never a derived one
        _, prefix = private_step(released)
        released.set_params(**{prefix + "random_state": user_random_state})
        fits.speech.replay()  # the released rung speaks; the others stay silent
    (train_post, delta_post), (train_prior, delta_prior) = account.guarantee()
    if joint:
        gaussian = isinstance(tests, GaussianTests)
        validation = {"ex_post": (train_post, delta_post),
                      "a_priori": (train_prior, delta_prior),
                      **({"count_mu": tests.count_mu} if gaussian else
                         {"count_epsilon": tests.count_epsilon}),
                      "tests": tests.spent, "test_ratio": tests.test_ratio,
                      "accounting": ("Gaussian label counts and one Gaussian test per rung "
                                     "on every row, charged in Renyi DP (alpha mu^2 / 2) "
                                     "to the rungs' Renyi filters"
                                     if isinstance(tests, RenyiTests) else
                                     "Gaussian label counts and one Gaussian test per rung "
                                     "on every row, charged in mu^2 to the rungs' odometer"
                                     if gaussian else
                                     "Laplace label counts and one Laplace test per rung on "
                                     "every row, added to the rungs' sum (fully adaptive "
                                     "basic composition)") + " (the same rows: one account)"}
        val_post = train_post
    else:
        val_post = tests.spent
        validation = {
            "ex_post": (val_post, 0.0), "a_priori": (tests.epsilon_max, 0.0),
            "count_epsilon": tests.count_epsilon,
            "tests": val_post - tests.count_epsilon, "test_ratio": tests.test_ratio,
            "accounting": "a Laplace count and one Laplace test per rung (Dwork & Roth "
                          "2014, Theorem 3.6), budgets chosen from earlier outputs: fully "
                          "adaptive basic composition of pure DP (Rogers, Roth, Ullman & "
                          "Vadhan 2016), ex post"}
    return SelectionResult(
        estimator=released, epsilon=rungs[-1]["epsilon"] if released is not None else None,
        rungs=rungs,
        training={"ex_post": (train_post, delta_post), "a_priori": (train_prior, delta_prior),
                  "accounting": account.kind},
        validation=validation, ex_post=(max(train_post, val_post), delta_post),
        a_priori=(float(epsilon_max), delta_prior),
        noisy_validation_count=count, noisy_label_counts=histogram.tolist(), chance=chance,
        stop_reason=stop, n_fits=fits.n_fits, threshold=threshold, test_rows=test_rows,
        training_share=1.0 if joint else 1.0 - validation_fraction,
        unit="row" if groups is None else "person",
        ladder_floor=ladder_floor(account, reduction),
        resolution={"noisy_validation_count": count, "test_noise_sd": float(resolution_sd),
                    "sampling_sd": sample_sd,
                    "total_sd": float(np.hypot(resolution_sd, sample_sd))})
