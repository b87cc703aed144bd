"""Choose the smallest epsilon that meets a target utility (EpsilonForUtility)."""

import warnings
from numbers import Integral, Real

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import BaseEstimator, MetaEstimatorMixin, clone, is_classifier
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import train_test_split
from sklearn.pipeline import Pipeline
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ..base import get_privacy_tags
from ..exceptions import PrivacyBudgetError, UnreachableUtilityWarning
from ..utils._docstrings import fill_doc
from ..utils._groups import check_groups
from ..utils._sklearn_compat import HasMethods, Interval, StrOptions, _fit_context
from ._measure import _fit_record, _measure, _NoiseSources, compose_fits
from ._released import ReleasedModelMixin
from ._gate import private_step
from ._private_selection import _SelectionStreams, select_epsilon_privately
from ._selection_accounts import training_account
from ._selection_checks import (
    check_person_selection,
    check_private_step_params,
    private_step_params,
    supports_checkpoints,
    validate_private_input,
    whole_label_set,
)
from ._selection_report import private_report
from ._selection_tests import check_test_rows
from ._transcript import log_epsilon_axis, plot_private_transcript, private_utility_curve
from ._utility_curve import MAX_STEP, UtilityCurve

SELECTION_STATEMENT = (
    "The choice of epsilon used the private data given to fit (utilities measured on it "
    "and the measuring fits listed here). That selection step is not covered by the "
    "released model's guarantee, which is (epsilon_, delta) for the refit model alone. "
    "For a clean guarantee, run EpsilonForUtility on public or proxy data and fit the "
    "private data at the chosen epsilon."
)


def _privacy_report(fits, refit):
    """Every internal fit's certified spend, their composition and what is covered."""
    total_epsilon, total_delta, reason = compose_fits(fits)
    return {
        "fits": fits,
        "total_epsilon": total_epsilon,
        "total_delta": total_delta,
        "composition": reason or "basic sequential composition of independent fits",
        "released_model": ({"epsilon": fits[-1]["epsilon"], "delta": fits[-1]["delta"]}
                           if refit else None),
        "statement": SELECTION_STATEMENT,
    }


_NO_RELEASE_HINTS = {
    "cohort_too_small": "The validation part is too small for a test of resolution "
                        "`tolerance` within the cap: raise epsilon_max or tolerance, or "
                        "bring more records.",
    "plateau": "The noisy utilities levelled off below the target: lower the target.",
    "cap": "Raise epsilon_max or lower the target.",
    "max_rungs": "Raise max_rungs or epsilon_start, or lower the target.",
}


@fill_doc
class EpsilonForUtility(ReleasedModelMixin, MetaEstimatorMixin, BaseEstimator):
    """Find the smallest privacy budget epsilon that meets a target utility.

    **Private selection** (``selection="private"``, the default) chooses epsilon
    inside the guarantee (accuracy first, after Ligett et al. 2017), within one
    public cap ``epsilon_max`` (and ``delta_max``) on everything it releases: the
    rows are split by independent public coins into a training and a validation
    part; rungs of the estimator at increasing epsilons, each with fresh noise and
    the whole input's label set, are trained on the training part and each is
    tested against the target on the validation part by a Laplace test whose budget
    is ``test_ratio`` times the rung's epsilon; the first passing rung's model is
    released. Everything released (the model, its epsilon and the search's
    transcript) is differentially private with respect to every row given to
    ``fit``: ``privacy_report_`` states the realised (ex-post) guarantee and the a
    priori one, which is the cap itself whatever the data, per part and overall,
    with the test's resolution and a statement a privacy officer can sign. Pure
    epsilon-DP rungs are accounted ex post (the realised sum); Gaussian rungs by
    odometers (Gaussian-DP for full-batch ``DPSGDClassifier``, Renyi-DP for
    Poisson-sampled ``DPSGDClassifier``, basic composition for Gaussian objective
    perturbation); Laplace or Gaussian ``OutputPertSVM`` rungs are releases of one
    fit (noise reduction) and cost only the last rung. The next rung is steered by
    a curve fitted to the noisy validation utilities, or started where the
    analytic method run on public proxy data points (``fit(X, y, proxy=...)``). A
    target that no rung meets within the cap releases nothing, and a search whose
    noisy utilities level off below the target stops early. The utility is
    accuracy for a classifier and, for a regressor with a public ``y_bound``, ``1 -
    min(1, (y - y_hat)^2 / (4 y_bound^2))`` (both per-row utilities in [0, 1]).
    The estimator may be a ``Pipeline`` whose last step is private and whose other
    steps are public preprocessing (:mod:`skdp.preprocessing`, declared
    categories, row-wise maps; checked by type and parameters).
    With ``fit(X, y, groups=...)`` the unit of privacy is one person (all of their
    rows): one public coin per person, counts of persons, tests of each person's mean
    utility, and rungs fitted with the training part's groups by an estimator that
    takes them (see ``fit``).

    **Analytic selection** (``selection="analytic"``, the source paper's method)
    measures the utility and its derivative on the private data without noise and
    refits at the answer: the selection is *not* covered by any guarantee (its
    report says so), so use it on public or proxy data. At a measuring epsilon the
    wrapped estimator is fitted with ``n_draws`` noise draws; each fit gives the
    utility and its pathwise derivative in epsilon (noise draws held fixed:
    implicit differentiation for objective perturbation and NAPP, closed form for
    output perturbation, forward-mode propagation through the steps for DP-SGD,
    and reruns with the same draws for any other estimator with ``epsilon`` and
    ``random_state``). A first-order expansion (see ``expansion``) then gives the
    epsilon at which the utility reaches ``target_utility``; optional refinement
    fits re-measure there and solve again. The parameters from ``scoring`` on
    apply to this mode (and to the proxy run of the private mode), except
    ``validation_fraction``, ``verbose`` and ``random_state``, shared by both.

    Parameters
    ----------
    estimator : estimator object, default=None
        A private estimator with an ``epsilon`` and a ``random_state`` parameter;
        it is cloned, never modified. ``None`` means
        ``ObjPertLogisticRegression()``.

    target_utility : float, default=0.8
        Utility to reach, in the units of ``scoring`` (higher is better). Private
        mode: a finite number in [0, 1] (accuracy, or a regressor's bounded
        utility), checked before any data is read.

    selection : {"private", "analytic"}, default="private"
        Private selection inside the guarantee, or the analytic method (not
        covered by a guarantee).

    epsilon_max : float, default=10.0
        Private mode: cap on the whole search, the tests and the counts included
        (5 %% of a cap up to 2, 0.1 above, pays for the validation part's label
        counts; the rungs and their tests share the rest by ``test_ratio``). It is
        the a priori guarantee, on every run; the realised figure is usually far
        below.

    epsilon_start : float, default=0.1
        Private mode: the first rung's epsilon when no proxy is given.

    tolerance : float, default=0.05
        Private mode: the coarsest test resolution accepted, as the standard
        deviation in utility of the test's noise. When even a test at the largest
        epsilon the cap allows would be coarser on a cautious (low) reading of the
        noisy size of the validation part, no rung is fitted (only the counts were
        spent) and the report says the cohort is too small for the cap. No test's
        noise exceeds half the tolerance: the first rung is raised until it does
        not. A validation sampling error above the tolerance (a small cohort,
        whatever the cap) is reported and warned about.

    test_ratio : float or "auto", default="auto"
        Private mode: a rung's test budget per unit of the rung's. On a held-out
        part, each test costs the validation rows this times the rung's epsilon
        (under noise reduction, times its increment over the last rung), less what
        the label counts still owe, so the two parts of the search spend alike. With
        ``test_rows="all"`` it is the Laplace test's epsilon per unit of a pure
        rung's, or the Gaussian test's mu per unit of a Gaussian rung's. ``"auto"``:
        1 on a held-out part; for Gaussian rungs on all the rows, the rung's mu but
        no more than the test floor's (the mu that tells the target from half a point
        below it with error 0.1 on the noisy count, ``z_0.9 / (0.005 m)``: a finer
        test costs mu^2 that the model's own spread wastes); 0.05 for pure rungs on all the rows
        (a test there reads five times the rows of a held-out part, and the noise of
        the model itself, not the test's, dominates: on Adult, objective perturbation
        at epsilon 0.8 varies by about a point across seeds while such a test's
        noise is 0.004 in accuracy).

    margin : float or "auto", default="auto"
        Private mode: public margin added to ``target_utility`` to form the test's
        threshold (clamped into [0, 1]). ``"auto"``: under noise reduction, one
        standard deviation of the test's error at the target (its noise and the
        validation sampling error, from the noisy count of the validation part),
        so that a passing model is rarely below the target; 0 for a ladder of
        fresh fits, whose doubling step overshoots the target already.

    steering : {"curve", "geometric", "random"}, default="curve"
        Private mode: the next rung from the law ``U(epsilon) = U_inf - a /
        epsilon`` fitted to the noisy utilities (a doubling step until two are
        known), the public doubling ladder, or the randomised ladder
        ``epsilon_start * r ** (U + k)`` with ``U`` uniform on [0, 1) from a public
        stream and ``r`` tuned for the median: 3 for rungs whose spends add (pure,
        basic composition), ``sqrt(3)`` for rungs composed in Gaussian or Renyi DP.
        For any oracle epsilon above ``r * epsilon_start`` and exact tests, the
        rungs then cost at most 2.6 (pure) or about 1.61 (Gaussian) times it in
        median; fresh pure rungs cannot do better than 2 in median nor ``e`` in
        mean (user guide, "What a ladder of fresh fits can cost").

    checkpoints : bool, default=False
        Private mode, full-batch ``DPSGDClassifier(sample_rate=1.0)`` (constant
        schedule): the rungs are checkpoints of one continuing run, which cost the last
        checkpoint's mu as under noise reduction, on a fine public ladder (ratio 1.2).
        Whether that beats fresh rungs depends on the training length: measured on
        Adult, much cheaper with the default 10 epochs (target 0.80, cap 10: realised
        epsilon 0.24 against 1.1, median of five seeds, every model released against
        four of five: ``examples/selection_checkpoints.py``), dearer with 200 epochs
        (target 0.80, cap 1: 5.8 against 2.5 times the oracle epsilon 0.033), where the
        long runs' noise accumulates. Refused for other estimators.

    test_rows : {"held_out", "all"}, default="held_out"
        Private mode: which rows test the rungs. ``"held_out"``: a validation part
        drawn by public coins (``validation_fraction``), tested by the Laplace
        mechanism, in parallel with the rungs trained on the rest. ``"all"``: the
        rungs train on every row and the counts and tests read every row too, in the
        rungs' own account: for pure rungs, Laplace counts and tests added to the
        rungs' sum (under Laplace noise reduction, each test at ``test_ratio`` times
        its rung's increment of epsilon, added to the path's last release); for
        full-batch ``DPSGDClassifier(sample_rate=1.0)`` rungs (``delta > 0``), fresh
        or checkpoints of one run, and Gaussian noise reduction, Gaussian counts and
        tests (each test's mu set by ``test_ratio``; on one path, by the release's
        increment of mu) in one Gaussian-DP odometer; for Poisson-sampled DP-SGD and
        Gaussian objective perturbation rungs, the same Gaussian counts and tests
        charged in Renyi DP to their Renyi odometer. Refused for rungs accounted by
        basic composition, before any data is read. The tested utility is then on
        rows the model trained on, optimistic by its generalisation gap.

    max_rungs : int, default=8
        Private mode: most rungs fitted.

    delta_max : float, default=None
        Private mode with Gaussian rungs (``delta > 0``): the search's a priori
        delta (the odometer's a priori budget is ``(epsilon_max, delta_max)``).
        ``None``: derived from the estimator's ``delta`` by a public rule (the
        smallest ``delta_max`` the odometer's levels and rungs need).

    scoring : {"accuracy", "neg_log_loss", "r2", "neg_mean_squared_error"} or callable, \
default=None
        The utility; ``None`` means accuracy for classifiers and r2 for regressors.
        Accuracy is piecewise constant in the coefficients, so its derivative is
        that of a kernel-smoothed accuracy
        (:func:`~skdp.model_selection.smoothed_accuracy_derivative`);
        other scorers are differentiated along the path by central differences,
        so a callable scorer ``scorer(estimator, X, y)`` should be smooth.

    measure_on : {"validation", "train"}, default="validation"
        Where the utility is measured: a held-out split of the data given to
        ``fit`` (stratified for classifiers), or the training data itself (the
        source paper's choice). The held-out split guards against models that
        overfit, but its sampling error (for accuracy ``sqrt(u (1 - u) / m)`` on
        ``m`` rows, part of :meth:`predict_utility`'s band) shifts every
        measurement alike, so a target within about two such errors of the
        utility's plateau cannot be told from an unreachable one. For linear
        models with many more rows than features the training utility of a
        private model is close to its test utility and is measured on all the
        rows: ``"train"`` then gives steadier answers (user guide, "Where the
        utility is measured").

    validation_fraction : float, default=0.2
        Size of the held-out split when ``measure_on="validation"``.

    rescale_to_full_data : bool, default=True
        With ``measure_on="validation"`` the measuring fits see only
        ``n_fit = (1 - validation_fraction) n`` rows, while the refit sees ``n``.
        The privacy noise of every skdp mechanism competes with a data term that
        grows with the number of rows, so utility depends on epsilon mostly
        through ``n * epsilon``; the answer is therefore rescaled,
        ``epsilon_ = epsilon_fit * n_fit / n``, and :meth:`predict_utility`
        reports utilities on the full-data scale. ``False`` returns the epsilon
        found for ``n_fit`` rows.

    measuring_epsilon : float or tuple of float, default=1.0
        Where to measure. With several values (and after refinement fits), two
        points whose utilities bracket the target are interpolated (a cubic
        through their utilities and derivatives in the expansion variable, or the
        straight line when noisy derivatives would make the cubic non-monotone);
        otherwise the expansion is taken from the point whose utility is nearest
        the target (with the secant slope to its nearest neighbour instead of its
        derivative when that is of the wrong sign or below a third of it).

    n_draws : int, default=5
        Noise draws (private fits) per measuring point; their utilities and
        derivatives are averaged.

    expansion : {"auto", "log", "inverse", "linear"}, default="auto"
        First order in ``log(epsilon)``, in ``1/epsilon`` (the noise scale is
        close to proportional to ``1/epsilon``) or in epsilon (the source paper's
        rule). ``"auto"`` takes the wrapped estimator's preference: ``"log"`` for
        objective perturbation, ``"inverse"`` for output perturbation and DP-SGD,
        whose released coefficients move with the noise scale itself. On Adult
        (``benchmarks/RESULTS.md``) each cut the paper's linear rule's error by
        2 to 11 times over its measuring points (for DP-SGD's mini-batch recipe
        ``"log"`` did slightly better, 2.4 against 2.1 times), except for the
        Huber loss with a narrow ``huber_h=0.1``: its S-shaped curve defeats
        every first-order rule (1.4 times).

    max_fits : int, default=None
        Total number of private fits allowed, the final refit included. When it
        leaves room for at least ``n_draws`` more fits after the measuring points,
        the estimator is re-measured at the current answer (at most a factor 5 in
        epsilon from the previous measuring point) and the answer solved again,
        as often as the budget allows. ``None``: no refinement.

    epsilon_bounds : tuple of float, default=(1e-3, 1e3)
        The answer is clipped to these bounds, with an
        :class:`~skdp.exceptions.UnreachableUtilityWarning` when the target is
        out of reach inside them (also see the trust region in the Notes).

    refit : bool, default=True
        Whether to fit ``best_estimator_`` on all the data at ``epsilon_``.

    n_jobs : int, default=None
        Parallel measuring fits (joblib; works with ``joblib.parallel_backend("dask")``).

    verbose : int, default=0
        ``1``: print a line after each round of measuring fits (its epsilon, the mean
        utility and derivative, the answer so far) and one with the answer;
        ``2``: also joblib's line per measuring fit. Epsilons are on the full-data
        scale (see ``rescale_to_full_data``).

    random_state : int, RandomState instance, Generator or None, default=None
        ``None`` (and the wrapped estimator's ``random_state`` ``None``): every
        internal fit, the refit included, draws fresh cryptographic noise, and
        the validation split fresh public randomness. Otherwise (either one
        given) reproducibility mode: each internal fit gets a generator of its
        own derived from that value (independent across fits), and the split
        its own public stream. The released ``best_estimator_`` keeps the
        wrapped estimator's ``random_state`` unchanged, and no derived seed or
        generator is stored anywhere.

    Attributes
    ----------
    epsilon_ : float or None
        The chosen epsilon (private mode: the passing rung's; ``None`` when no
        rung passed and nothing was released).

    predicted_utility_ : float or None
        Analytic mode: utility the expansion predicts at ``epsilon_``. Private
        mode: the passing rung's noisy validation accuracy (``None`` without
        noisy utilities or release).

    expansion_ : str or None
        The expansion used (``expansion`` with ``"auto"`` resolved); ``None`` in
        private mode.

    measurements_ : list of dict
        Analytic mode: one entry per measuring fit (epsilon, draw label, utility,
        derivative, purpose, fits). Private mode: one per rung (epsilon, certified
        spend, pass/fail bit, noisy utility).

    best_estimator_ : estimator
        Analytic mode: refitted on all data at ``epsilon_`` (``refit=True``).
        Private mode: the passing rung's model, trained on the training part;
        absent when nothing was released.

    n_fits_ : int
        Number of private fits made (the refit and the rungs included).

    privacy_report_ : dict
        Private mode: ``ex_post`` and ``a_priori`` (epsilon, delta) over every
        row, per part in ``parts``, each rung's certified spend in ``fits``, the
        ``transcript``, ``distance_to_best`` (where the oracle epsilon lies between
        the last failed and the passing rung, the realised loss over it, the least
        median ratio any ladder of these rungs can have and the test's floor: how
        far the search is from the best possible) and a plain-language
        ``statement``. Analytic mode: every
        internal fit's certified (epsilon, delta), the label of its noise draw,
        and their totals by basic composition (``inf``, with the reason in
        ``"composition"``, when fits share their noise or one certified no
        finite epsilon), and a statement that the selection is not covered.

    n_features_in_ : int

    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Defined only when ``X`` has string feature names.

    Notes
    -----
    In analytic mode choosing epsilon is itself data-dependent: the measuring
    fits use the private data and their utilities are not privatised. ``privacy_report_``
    lists every fit; the released ``best_estimator_`` carries its own
    (``epsilon_``, delta) guarantee only for the refit, not for the selection.
    For a clean guarantee run this on public or proxy data and then fit the
    private data at ``epsilon_``. Randomness: ``docs/randomness.rst``.

    The answer is trusted only near the measurements. Unless two measuring
    points bracket the target, ``epsilon_`` lies at most a factor 5 (the step
    of the refinement fits) below the smallest or above the largest measuring
    epsilon: a first-order expansion from a noisy derivative can otherwise
    extrapolate by orders of magnitude. When the expansion's answer lies
    further out, ``epsilon_`` is the trust-region boundary (``predicted_utility_``
    is then the expansion's utility there, short of the target) and an
    :class:`~skdp.exceptions.UnreachableUtilityWarning` says that the target
    was not reached within the trust region; a larger ``max_fits`` moves the
    measurements towards the answer. When the boundary itself is at or beyond
    ``epsilon_bounds``, the answer is clipped to the bound as described there.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from skdp import EpsilonForUtility, ObjPertLogisticRegression
    >>> X, y = make_classification(n_samples=2000, n_features=5, random_state=0)
    >>> search = EpsilonForUtility(ObjPertLogisticRegression(C=1.0, data_norm=1.0),
    ...                            target_utility=0.85,
    ...                            random_state=0).fit(X, y)
    >>> search.best_estimator_.epsilon == search.epsilon_
    True
    >>> bool(search.privacy_report_["ex_post"]["epsilon"] <= search.epsilon_max)
    True
    >>> analytic = EpsilonForUtility(ObjPertLogisticRegression(C=1.0, data_norm=1.0),
    ...                            target_utility=0.85,
    ...                              selection="analytic", n_draws=3,
    ...                              random_state=0).fit(X, y)
    >>> analytic.n_fits_, analytic.best_estimator_.epsilon == analytic.epsilon_
    (4, True)
    """

    _parameter_constraints = {
        "estimator": [HasMethods(["fit"]), None],
        "target_utility": [Real],
        "scoring": [StrOptions({"accuracy", "neg_log_loss", "r2", "neg_mean_squared_error"}),
                    callable, None],
        "measure_on": [StrOptions({"validation", "train"})],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
        "measuring_epsilon": [Interval(Real, 0, None, closed="neither"), tuple, list],
        "n_draws": [Interval(Integral, 1, None, closed="left")],
        "expansion": [StrOptions({"auto", "inverse", "log", "linear"})],
        "max_fits": [Interval(Integral, 1, None, closed="left"), None],
        "rescale_to_full_data": ["boolean"],
        "epsilon_bounds": [tuple, list],
        "refit": ["boolean"],
        "n_jobs": [Integral, None],
        "verbose": ["verbose"],
        "random_state": ["random_state", np.random.Generator],
        "selection": [StrOptions({"private", "analytic"})],
        "epsilon_max": [Interval(Real, 0, None, closed="neither")],
        "epsilon_start": [Interval(Real, 0, None, closed="neither")],
        "tolerance": [Interval(Real, 0, None, closed="neither")],
        "test_ratio": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "margin": [Interval(Real, -1, 1, closed="both"), StrOptions({"auto"})],
        "steering": [StrOptions({"curve", "geometric", "random"})],
        "checkpoints": ["boolean"],
        "test_rows": [StrOptions({"held_out", "all"})],
        "max_rungs": [Interval(Integral, 1, None, closed="left")],
        "delta_max": [Interval(Real, 0, 1, closed="neither"), None],
    }

    def __init__(self, estimator=None, target_utility=0.8, *, selection="private",
                 epsilon_max=10.0, epsilon_start=0.1, tolerance=0.05, test_ratio="auto",
                 margin="auto", steering="curve", checkpoints=False, test_rows="held_out",
                 max_rungs=8,
                 delta_max=None, scoring=None, measure_on="validation",
                 validation_fraction=0.2, rescale_to_full_data=True, measuring_epsilon=1.0,
                 n_draws=5, expansion="auto", max_fits=None, epsilon_bounds=(1e-3, 1e3),
                 refit=True, n_jobs=None, verbose=0, random_state=None):
        self.estimator = estimator
        self.target_utility = target_utility
        self.selection = selection
        self.epsilon_max = epsilon_max
        self.epsilon_start = epsilon_start
        self.tolerance = tolerance
        self.test_ratio = test_ratio
        self.margin = margin
        self.steering = steering
        self.checkpoints = checkpoints
        self.test_rows = test_rows
        self.max_rungs = max_rungs
        self.delta_max = delta_max
        self.scoring = scoring
        self.measure_on = measure_on
        self.validation_fraction = validation_fraction
        self.rescale_to_full_data = rescale_to_full_data
        self.measuring_epsilon = measuring_epsilon
        self.n_draws = n_draws
        self.expansion = expansion
        self.max_fits = max_fits
        self.epsilon_bounds = epsilon_bounds
        self.refit = refit
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.random_state = random_state

    def _inner(self):
        if self.estimator is None:
            from ..linear_model import ObjPertLogisticRegression

            return ObjPertLogisticRegression()
        return self.estimator

    def _scoring(self, estimator):
        if self.scoring is not None:
            return self.scoring
        return "accuracy" if is_classifier(estimator) else "r2"

    def _check_params(self, estimator):
        params = estimator.get_params()
        for name in ("epsilon", "random_state"):
            if name not in params:
                raise ValueError(f"EpsilonForUtility needs an estimator with an {name!r} "
                                 f"parameter; {type(estimator).__name__} has none.")
        lo, hi = self.epsilon_bounds
        if not 0 < lo < hi < np.inf:
            raise ValueError(f"epsilon_bounds must satisfy 0 < low < high < inf, got "
                             f"{self.epsilon_bounds!r}.")
        points = np.atleast_1d(np.asarray(self.measuring_epsilon, dtype=float))
        if points.size == 0 or not np.all((points > 0) & np.isfinite(points)):
            raise ValueError(f"measuring_epsilon must be finite positive values, got "
                             f"{self.measuring_epsilon!r}.")
        measuring = points.size * self.n_draws
        if self.max_fits is not None and self.max_fits < measuring + int(self.refit):
            raise ValueError(
                f"max_fits={self.max_fits} leaves no room for the {measuring} measuring fits "
                f"(len(measuring_epsilon) * n_draws) and the refit; raise max_fits or lower "
                "n_draws.")
        return points

    def _run(self, points, sources, data, scoring, estimator, purpose):
        X_fit, y_fit, X_eval, y_eval = data
        jobs = [(eps, *sources.next()) for eps in points for _ in range(self.n_draws)]
        return Parallel(n_jobs=self.n_jobs, verbose=11 if self.verbose > 1 else 0)(
            delayed(_measure)(estimator, eps, draw, random_state, X_fit, y_fit, X_eval,
                              y_eval, scoring, purpose)
            for eps, draw, random_state in jobs)

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y, proxy=None, groups=None):
        """Choose epsilon for the target and release a model trained at it.

        %(X_y_rows)s
        proxy : tuple (X_public, y_public), default=None
            Public data of the same kind (never private rows): with
            ``selection="private"`` the analytic method runs on it and its answer,
            rescaled to the private data's size, is the first rung.
        groups : array-like of shape (n_samples,), default=None
            The person of each row (any labels), ``selection="private"`` only. Given,
            the unit of privacy is the person: everything released is private with
            respect to adding or removing all of one person's rows. Each person goes
            whole to the training or the validation part by one public coin, the
            counts count persons, the tests read each person's mean utility, and
            every rung is fitted with ``fit(X, y, groups=...)`` on the training
            part's persons, so the estimator must take ``groups`` (refused before
            any data is read otherwise; see the user guide, "Persons as the unit").

        Returns
        -------
        self : object
        """
        if groups is not None and self.selection != "private":
            raise ValueError(
                "groups (persons as the unit of privacy) are taken by selection='private' "
                "only: the analytic selection is covered by no guarantee, for rows or "
                "persons. Nothing was fitted.")
        if self.selection == "private":
            return self._fit_private(X, y, proxy, groups)
        if proxy is not None:
            raise ValueError("proxy is used by selection='private' only; with "
                             "selection='analytic' pass the public data as X, y.")
        return self._fit_analytic(X, y)

    def check_before_data(self, persons=False):
        """Every refusal of the private selection that reads no data.

        Parameters
        ----------
        persons : bool, default=False
            Whether the selection is fitted with ``groups``.

        Returns
        -------
        account : tuple
            ``(account, rung_params)``: the training rows' account and the
            parameters every rung is fitted with.
        """
        estimator = self._inner()
        self._check_private_target(estimator)
        check_private_step_params(estimator, persons=persons)
        if persons:
            check_person_selection(estimator, self.checkpoints)
        if self.checkpoints and not supports_checkpoints(estimator):
            raise ValueError("checkpoints=True needs DPSGDClassifier(sample_rate=1.0) with "
                             "learning_rate_schedule='constant' and noise_multiplier=None.")
        account = training_account(estimator, self.epsilon_max, self.delta_max,
                                   self.epsilon_start, self.max_rungs,
                                   self.checkpoints, persons=persons)
        check_test_rows(self.test_rows, account)
        return account

    def _fit_private(self, X, y, proxy, groups=None):
        """Accuracy-first private selection (module ``_private_selection``)."""
        estimator = self._inner()
        final, _ = private_step(estimator)
        account = self.check_before_data(groups is not None)  # refusals first
        y_bound = self._check_private_target(estimator)
        X, y = validate_private_input(self, estimator, X, y)
        if groups is not None:
            check_groups(groups, len(y))  # bad groups: refused before any noise
        classes = whole_label_set(final, y) if is_classifier(estimator) else None
        rows_epsilon = None
        if proxy is not None:
            proxy_state = _SelectionStreams(self._private_random_state(estimator)).proxy()
            rows_epsilon = self._proxy_rows_epsilon(proxy, proxy_state)
        result = select_epsilon_privately(
            estimator, X, y, target=self.target_utility, epsilon_max=self.epsilon_max,
            epsilon_start=self.epsilon_start, rows_epsilon=rows_epsilon,
            validation_fraction=self.validation_fraction, margin=self.margin,
            tolerance=self.tolerance, test_ratio=self.test_ratio, steering=self.steering,
            max_rungs=self.max_rungs, delta_max=self.delta_max, classes=classes,
            y_bound=y_bound, random_state=self._private_random_state(estimator),
            verbose=self.verbose, account=account, checkpoints=self.checkpoints,
            test_rows=self.test_rows, groups=groups)
        self.expansion_ = None
        self.measurements_ = result.rungs
        self.n_fits_ = result.n_fits
        self.privacy_report_ = private_report(
            result, type(final).__name__, self.target_utility,
            utility="accuracy" if y_bound is None else "bounded squared-error utility")
        self.epsilon_ = result.epsilon
        self.predicted_utility_ = (result.rungs[-1]["noisy_utility"] if result.estimator
                                   is not None else None)
        if result.resolution["sampling_sd"] > self.tolerance:
            records = "persons" if groups is not None else "records"
            warnings.warn(
                f"The validation part (about {result.noisy_validation_count:.0f} {records}, a "
                f"noisy count) has a sampling error of "
                f"{result.resolution['sampling_sd']:.2g} at the target, above the "
                f"tolerance {self.tolerance:g}: the test cannot tell the target from "
                "utilities that far below it. More records, or a coarser target, are "
                "needed for that precision.", UnreachableUtilityWarning, stacklevel=3)
        if result.estimator is None:
            warnings.warn(
                f"No rung reached the target utility {self.target_utility} within "
                f"epsilon_max={self.epsilon_max} ({result.stop_reason}): nothing is released "
                "(epsilon_ is None). " + _NO_RELEASE_HINTS[result.stop_reason],
                UnreachableUtilityWarning, stacklevel=3)
        else:
            self.best_estimator_ = result.estimator
        if self.verbose:
            print(f"[EpsilonForUtility] {self.privacy_report_['statement']}", flush=True)
        return self

    def _check_private_target(self, estimator):
        """Refuse, before any data is read, a target or utility the test cannot bound.

        Returns the regressor's public ``y_bound`` (``None`` for a classifier).
        """
        target = self.target_utility
        if not (np.isfinite(target) and 0.0 <= target <= 1.0):
            raise ValueError(
                f"target_utility={target!r}: selection='private' tests a per-row utility in "
                "[0, 1] (accuracy, or a regressor's bounded squared-error utility), so the "
                "target must be a finite number in [0, 1].")
        if self.scoring is not None:
            raise ValueError(
                "selection='private' tests accuracy (a classifier) or the bounded "
                "squared-error utility (a regressor with a public y_bound), per-row "
                "utilities in [0, 1] whose test has sensitivity 1; scoring must be None. "
                "Use selection='analytic' (not covered by the guarantee) for other scorers.")
        if is_classifier(estimator):
            return None
        y_bound = private_step_params(estimator).get("y_bound")
        if y_bound is None or not np.isfinite(y_bound) or y_bound <= 0:
            raise ValueError(
                "selection='private' with a regressor tests the utility 1 - min(1, (y - "
                "y_hat)^2 / (4 y_bound^2)), with y clipped to the public y_bound: set the "
                f"regressor's y_bound to a finite public bound on |y| (got {y_bound!r}).")
        return float(y_bound)

    def _private_random_state(self, estimator):
        if self.random_state is not None:
            return self.random_state
        return private_step_params(estimator).get("random_state")

    def _proxy_rows_epsilon(self, proxy, random_state):
        """``n_proxy * epsilon`` at the target, by the analytic method on public data
        (its noise on a stream of its own, never the rungs')."""
        X_public, y_public = proxy
        analytic = clone(self).set_params(selection="analytic", refit=False, verbose=0,
                                          random_state=random_state)
        analytic.fit(X_public, y_public)
        return analytic.epsilon_ * len(y_public)

    def _fit_analytic(self, X, y):
        """The source paper's method: measure, solve for the target, refit."""
        estimator = self._inner()
        if isinstance(estimator, Pipeline):
            raise ValueError("selection='analytic' needs a private estimator itself, not a "
                             "Pipeline; selection='private' accepts a Pipeline.")
        points = self._check_params(estimator)
        X, y = validate_data(self, X, y, accept_sparse=("csr", "csc"), dtype=None,
                             ensure_all_finite=True)
        if is_classifier(estimator):
            check_classification_targets(y)
        inner_random_state = estimator.get_params()["random_state"]
        sources = _NoiseSources(self.random_state, inner_random_state)
        scoring = self._scoring(estimator)
        self.expansion_ = (get_privacy_tags(estimator).epsilon_expansion
                           if self.expansion == "auto" else self.expansion)
        data = self._split(X, y, estimator, sources, scoring)
        epsilon, predicted = self._measure_and_refine(points, sources, data, scoring, estimator)
        self._answer(epsilon, predicted)
        fits = [fit for m in self.measurements_ for fit in m["fits"]]
        if self.refit:
            draw, random_state = sources.next()
            self.best_estimator_ = self._refit(estimator, random_state, X, y)
            # the released estimator keeps the user's random_state, never a derived one
            self.best_estimator_.set_params(random_state=inner_random_state)
            fits.append(_fit_record(self.best_estimator_, "refit (released model)", draw))
        self.n_fits_ = len(fits)
        if self.verbose:
            print(f"[EpsilonForUtility] epsilon_={self.epsilon_:.4g} (predicted utility "
                  f"{self.predicted_utility_:.4f}); {self.n_fits_} private fits"
                  + (", the refit included" if self.refit else ""), flush=True)
        self.privacy_report_ = _privacy_report(fits, self.refit)
        return self

    def _split(self, X, y, estimator, sources, scoring):
        """``(X_fit, y_fit, X_eval, y_eval)``: the measuring fits' rows and the utility's."""
        if self.measure_on == "validation":
            stratify = y if is_classifier(estimator) else None
            split = np.random.RandomState(sources.public().integers(2**32))
            X_fit, X_eval, y_fit, y_eval = train_test_split(
                X, y, test_size=self.validation_fraction, random_state=split,
                stratify=stratify)
        else:
            X_fit, X_eval, y_fit, y_eval = X, X, y, y
        # rows the utility is measured on: their sampling error of accuracy is in the band
        self._n_evaluated = (y_eval.shape[0] if scoring == "accuracy" else None)
        self._size_ratio = (X.shape[0] / X_fit.shape[0]
                            if self.rescale_to_full_data and self.measure_on == "validation"
                            else 1.0)
        return X_fit, y_fit, X_eval, y_eval

    def _measure_and_refine(self, points, sources, data, scoring, estimator):
        """Measure at ``points``, then re-measure at the answer while ``max_fits`` allows.

        Returns the answer on the measuring scale, ``(epsilon, predicted utility)``.
        """
        self.measurements_ = self._run(points, sources, data, scoring, estimator, "measure")
        epsilon, predicted = self._curve().solve()
        self._progress(points, epsilon, "measured")
        n_fits = sum(len(m["fits"]) for m in self.measurements_)
        budget = self.max_fits - int(self.refit) if self.max_fits is not None else n_fits
        # the bounds apply to the full-data epsilon; measuring fits run at ratio times it
        lo, hi = (b * self._size_ratio for b in self.epsilon_bounds)
        while (n_fits + self.n_draws <= budget
               and not np.isclose(epsilon, self.measurements_[-1]["epsilon"], rtol=1e-9, atol=0)):
            # a trust region: re-measure at most a factor MAX_STEP away from the last point
            last = self.measurements_[-1]["epsilon"]
            target_point = float(np.clip(epsilon, max(lo, last / MAX_STEP),
                                         min(hi, last * MAX_STEP)))
            try:
                new = self._run([target_point], sources, data, scoring, estimator, "refine")
            except PrivacyBudgetError:
                break  # the estimator cannot train at so small an epsilon: stop refining
            self.measurements_ += new
            n_fits += sum(len(m["fits"]) for m in new)
            epsilon, predicted = self._curve().solve()
            self._progress([target_point], epsilon, "refined")
        return epsilon, predicted

    def _answer(self, epsilon, predicted):
        """``epsilon_`` and ``predicted_utility_`` on the full-data scale, in the trust region."""
        if any(p.derivative <= 0 for p in self._curve().points):
            warnings.warn(
                "The utility's measured derivative in epsilon is not positive at some "
                "measuring point: the noise of the measurement dominates there. Increase "
                "n_draws, measure on more data or at another epsilon.",
                UnreachableUtilityWarning, stacklevel=4)
        epsilon, predicted = self._release(epsilon, predicted)
        self.epsilon_ = float(epsilon / self._size_ratio)
        self.predicted_utility_ = float(predicted)

    def _progress(self, epsilons, answer, what):
        """With ``verbose``: one line per measuring epsilon of the round just made."""
        if not self.verbose:
            return
        ratio = self._size_ratio
        for point in self._curve().points:
            if point.epsilon in epsilons:
                print(f"[EpsilonForUtility] {what} at epsilon={point.epsilon / ratio:.4g} "
                      f"({self.n_draws} draws): utility {point.utility:.4f}, derivative "
                      f"{point.derivative * ratio:.4g}; answer so far "
                      f"epsilon={answer / ratio:.4g}", flush=True)

    def _release(self, epsilon, predicted):
        """The answer (on the measuring scale) kept in the trust region and the bounds.

        Unless two measuring points bracket the target (then the answer lies between
        them), the answer is at most a factor ``MAX_STEP`` below the smallest or above
        the largest measuring epsilon; beyond that, it is the trust-region boundary,
        with a warning. When that boundary is itself at or beyond ``epsilon_bounds``,
        the answer is clipped to the bound (the target is out of reach inside them).
        Returns ``(epsilon, predicted utility)``.
        """
        lo, hi = (b * self._size_ratio for b in self.epsilon_bounds)
        points = self._curve().points
        trusted = float(np.clip(epsilon, points[0].epsilon / MAX_STEP,
                                points[-1].epsilon * MAX_STEP))
        if trusted != epsilon and lo < trusted < hi:
            warnings.warn(
                f"The target utility {self.target_utility} is not reached within the trust "
                f"region (a factor {MAX_STEP:g} in epsilon beyond the measured points; the "
                f"expansion gives {epsilon / self._size_ratio:.4g}); epsilon_ is its boundary. "
                "Raise max_fits for more refinement fits." + self._split_hint(epsilon),
                UnreachableUtilityWarning, stacklevel=5)
            return trusted, self._curve().at(trusted)[0]
        if not lo <= epsilon <= hi:
            warnings.warn(
                f"The target utility {self.target_utility} is out of reach inside "
                f"epsilon_bounds={self.epsilon_bounds} (the expansion gives "
                f"{epsilon / self._size_ratio:.4g}); epsilon_ is clipped to the nearest bound.",
                UnreachableUtilityWarning, stacklevel=5)
            epsilon = float(np.clip(epsilon, lo, hi))
            return epsilon, self._curve().at(epsilon)[0]
        return epsilon, predicted

    def _split_hint(self, epsilon):
        """For an answer above the measurements on the held-out split: its sampling error."""
        top = self._curve().points[-1]
        if (self.measure_on != "validation" or not getattr(self, "_n_evaluated", None)
                or epsilon < top.epsilon):
            return ""
        u = float(np.clip(top.utility, 0.0, 1.0))
        error = np.sqrt(u * (1.0 - u) / self._n_evaluated)
        return (f" Near the utility's plateau the held-out split's sampling error (about "
                f"{error:.2g} on its {self._n_evaluated} rows) can hide the target; "
                "measure_on='train' measures on all the rows.")

    def _refit(self, estimator, random_state, X, y):
        """Fit at ``epsilon_``; raise it (with a warning) if the estimator cannot train there."""
        for _ in range(60):
            try:
                return clone(estimator).set_params(epsilon=self.epsilon_,
                                                   random_state=random_state).fit(X, y)
            except PrivacyBudgetError:
                warnings.warn(
                    f"{type(estimator).__name__} cannot train at epsilon={self.epsilon_:.4g}; "
                    "the target is met below the smallest epsilon it can use, so epsilon_ is "
                    "raised to the smallest feasible value found.", UnreachableUtilityWarning,
                    stacklevel=4)
                self.epsilon_ *= 1.25
        raise PrivacyBudgetError(f"{type(estimator).__name__} could not be fitted at any "
                                 "epsilon tried.")

    def _curve(self):
        """The utility curve of the measurements (on the measuring scale)."""
        return UtilityCurve(self.measurements_, self.expansion_, self.target_utility,
                            self.epsilon_bounds)

    def predict_utility(self, epsilons):
        """Estimated utility at each epsilon, with an error band.

        Parameters
        ----------
        epsilons : array-like of shape (n_points,)
            Where to estimate the utility (on the full-data scale).

        Returns
        -------
        utility : ndarray of shape (n_points,)
            Interpolation between measuring points, first-order expansion outside
            them; on the full-data scale (see ``rescale_to_full_data``). Private
            mode: the law ``U_inf - a / epsilon`` fitted to the rungs' noisy
            utilities (released quantities only; the one noisy utility when a
            single rung ran, NaN when none did).
        error : ndarray of shape (n_points,)
            Standard error from the spread of the noise draws (NaN with one draw)
            and, for accuracy, the sampling error ``sqrt(u (1 - u) / m)`` of the
            ``m`` rows it is measured on, shared by all the measurements: with
            ``measure_on="validation"`` the held-out split's ``m`` is small, and
            targets within about two of these errors of the curve's plateau cannot
            be told apart from unreachable ones.
        """
        check_is_fitted(self, "measurements_")
        if getattr(self, "privacy_report_", {}).get("selection") == "private":
            return private_utility_curve(self.privacy_report_, epsilons)
        values = [self._curve().at(float(e) * self._size_ratio)
                  for e in np.atleast_1d(epsilons)]
        utility = np.array([v for v, _ in values])
        error = np.array([e for _, e in values])
        if getattr(self, "_n_evaluated", None):
            share = np.clip(utility, 0.0, 1.0)
            error = np.hypot(error, np.sqrt(share * (1.0 - share) / self._n_evaluated))
        return utility, error

    def plot(self, ax=None):
        """Plot the measured utilities, the estimated curve and the answer.

        Private mode: the transcript (each rung's noisy utility with two standard
        deviations of its test's error, passed or failed, the thresholds, the
        target and the released epsilon), from released quantities only.

        Parameters
        ----------
        ax : matplotlib Axes, default=None
            Axes to draw on; a new figure when ``None``.

        Returns
        -------
        ax : matplotlib Axes
        """
        check_is_fitted(self, "measurements_")
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots()
        if getattr(self, "privacy_report_", {}).get("selection") == "private":
            return plot_private_transcript(self.privacy_report_, self.target_utility, ax)
        points = self._curve().points
        measured = [p.epsilon / self._size_ratio for p in points]
        lo = min(measured + [self.epsilon_]) / 3
        hi = max(measured + [self.epsilon_]) * 3
        grid = np.geomspace(lo, hi, 200)
        value, error = self.predict_utility(grid)
        ax.plot(grid, value, label=f"estimate ({self.expansion_} expansion)")
        ax.fill_between(grid, value - 2 * error, value + 2 * error, alpha=0.2)
        ax.errorbar(measured, [p.utility for p in points],
                    yerr=[2 * p.utility_sem if np.isfinite(p.utility_sem) else 0
                          for p in points], fmt="o", label="measured")
        ax.axhline(self.target_utility, color="k", ls="--", lw=1, label="target")
        ax.axvline(self.epsilon_, color="C3", lw=1, label=f"epsilon_ = {self.epsilon_:.3g}")
        log_epsilon_axis(ax)
        ax.set_xlabel("epsilon")
        ax.set_ylabel("utility")
        ax.legend()
        return ax

    def _released(self):
        """``best_estimator_``, or NotFittedError saying why there is none."""
        check_is_fitted(self)
        if not hasattr(self, "best_estimator_"):
            raise NotFittedError(
                "EpsilonForUtility released no model: "
                + ("no rung met the target within epsilon_max." if self.selection == "private"
                   else "refit=False."))
        return self.best_estimator_
