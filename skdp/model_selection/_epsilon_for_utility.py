"""Choose, inside the guarantee, the smallest epsilon that meets a target utility."""

import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, MetaEstimatorMixin, is_classifier
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from ..base import atomic_fit
from ..exceptions import UnreachableUtilityWarning
from ..utils._docstrings import fill_doc
from ..utils._groups import check_groups
from ..utils._sklearn_compat import HasMethods, Interval, StrOptions
from ._analytic_epsilon import AnalyticEpsilonForUtility
from ._gate import private_step
from ._partitioned_rows import check_partitioned_rows, is_partitioned
from ._private_selection import _SelectionStreams, select_epsilon_privately
from ._released import ReleasedModelMixin
from ._selection_accounts import training_account
from ._selection_checks import (
    check_person_selection,
    check_private_step_params,
    default_estimator,
    private_step_params,
    supports_checkpoints,
    validate_private_input,
    whole_label_set,
)
from ._selection_report import private_report
from ._selection_tests import check_test_rows
from ._transcript import axes, plot_private_transcript, private_utility_curve


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

    The choice is made inside the guarantee (accuracy first, after Ligett et al. 2017), within one
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
    analytic method (:class:`~skdp.AnalyticEpsilonForUtility`) run on public proxy
    data points (``fit(X, y, proxy=...)``). A
    target that no rung meets within the cap releases nothing, and a search whose
    noisy utilities level off below the target stops early. The utility is
    accuracy for a classifier and, for a regressor with a public ``y_bound``, ``1 -
    min(1, (y - y_hat)^2 / s^2)`` with ``s`` the public ``utility_scale`` (default ``2
    y_bound``; both per-row utilities in [0, 1]).
    The estimator may be a ``Pipeline`` whose last step is private and whose other
    steps are public preprocessing (:mod:`skdp.preprocessing`, declared
    categories, row-wise maps; checked by type and parameters).
    With ``fit(X, y, groups=...)`` the unit of privacy is one person (all of their
    rows): one public coin per person, counts of persons, tests of each person's mean
    utility, and rungs fitted with the training part's groups by an estimator that
    takes them (see ``fit``).

    Parameters
    ----------
    estimator : estimator object, default=None
        A private estimator with an ``epsilon`` and a ``random_state`` parameter;
        it is cloned, never modified. ``None`` means
        ``ObjPertLogisticRegression()``.

    target_utility : float, default=0.8
        Utility to reach: a finite number in [0, 1] (accuracy, or a regressor's
        bounded utility), checked before any data is read.

    epsilon_max : float, default=10.0
        cap on the whole search, the tests and the counts included
        (5 %% of a cap up to 2, 0.1 above, pays for the validation part's label
        counts; the rungs and their tests share the rest by ``test_ratio``). It is
        the a priori guarantee, on every run; the realised figure is usually far
        below.

    epsilon_start : float, default=0.1
        the first rung's epsilon when no proxy is given.

    tolerance : float, default=0.05
        the coarsest test resolution accepted, as the standard
        deviation in utility of the test's noise. When even a test at the largest
        epsilon the cap allows would be coarser on a cautious (low) reading of the
        noisy size of the validation part, no rung is fitted (only the counts were
        spent) and the report says the cohort is too small for the cap. No test's
        noise exceeds half the tolerance: the first rung is raised until it does
        not. A validation sampling error above the tolerance (a small cohort,
        whatever the cap) is reported and warned about.

    utility_scale : float, default=None
        A regressor's public error scale ``s``: the tested per-row utility is ``1 -
        min(1, (y - y_hat)^2 / s^2)`` (``y`` clipped to ``y_bound``), so the test
        compares the mean of these clipped utilities with ``target_utility``: for
        errors below ``s``, ``1 - MSE / s^2``, and a target ``1 - e^2 / s^2`` asks
        for a clipped mean squared error of ``e^2``. ``None``: ``2 y_bound``, which
        makes every model that predicts within the range of ``y`` score above 0.75
        and leaves the models worth telling apart a few hundredths apart, finer than
        any affordable test (user guide, regression, "Choosing epsilon for a target
        error"). Choose it from public knowledge, never from the rows: a few times
        the prediction error you would accept (say ``2 e`` to ``3 e`` for a root
        mean squared error ``e``). Refused for a classifier.

    test_ratio : float or "auto", default="auto"
        a rung's test budget per unit of the rung's. On a held-out
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
        public margin added to ``target_utility`` to form the test's
        threshold (clamped into [0, 1]). ``"auto"``: under noise reduction, one
        standard deviation of the test's error at the target (its noise and the
        validation sampling error, from the noisy count of the validation part),
        so that a passing model is rarely below the target; 0 for a ladder of
        fresh fits, whose doubling step overshoots the target already.

    steering : {"curve", "geometric", "random"}, default="curve"
        the next rung from the law ``U(epsilon) = U_inf - a /
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
        which rows test the rungs. ``"held_out"``: a validation part
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
        most rungs fitted.

    delta_max : float, default=None
        With Gaussian rungs (``delta > 0``): the search's a priori
        delta (the odometer's a priori budget is ``(epsilon_max, delta_max)``).
        ``None``: derived from the estimator's ``delta`` by a public rule (the
        smallest ``delta_max`` the odometer's levels and rungs need).

    validation_fraction : float, default=0.2
        Share of the rows (of the persons, with ``groups``) that public coins put in
        the validation part, with ``test_rows="held_out"``; also the analytic
        method's held-out share on a ``proxy``.

    verbose : int, default=0
        ``1``: print a line per rung (its epsilon, pass or fail, its noisy utility
        and test noise) and the statement at the end.

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
        The passing rung's epsilon (``None`` when no rung passed and nothing was
        released).

    predicted_utility_ : float or None
        The passing rung's noisy validation utility (``None`` without noisy
        utilities or release).

    measurements_ : list of dict
        One per rung (epsilon, certified spend, pass/fail bit, noisy utility).

    best_estimator_ : estimator
        The passing rung's model, trained on the training part; absent when
        nothing was released.

    n_fits_ : int
        Number of private fits made (the rungs).

    privacy_report_ : dict
        ``ex_post`` and ``a_priori`` (epsilon, delta) over every row, per part in
        ``parts``, each rung's certified spend in ``fits``, the ``transcript``,
        ``distance_to_best`` (where the oracle epsilon lies between the last failed
        and the passing rung, the realised loss over it, the least median ratio any
        ladder of these rungs can have and the test's floor: how far the search is
        from the best possible) and a plain-language ``statement``.

    n_features_in_ : int

    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Defined only when ``X`` has string feature names.

    See Also
    --------
    AnalyticEpsilonForUtility : the source paper's analytic method, not covered by
        any guarantee (for public or proxy data).

    Notes
    -----
    Randomness: ``docs/randomness.rst``.

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
    """

    _parameter_constraints = {
        "estimator": [HasMethods(["fit"]), None],
        "target_utility": [Real],
        "epsilon_max": [Interval(Real, 0, None, closed="neither")],
        "epsilon_start": [Interval(Real, 0, None, closed="neither")],
        "tolerance": [Interval(Real, 0, None, closed="neither")],
        "utility_scale": [Interval(Real, 0, None, closed="neither"), None],
        "test_ratio": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "margin": [Interval(Real, -1, 1, closed="both"), StrOptions({"auto"})],
        "steering": [StrOptions({"curve", "geometric", "random"})],
        "checkpoints": ["boolean"],
        "test_rows": [StrOptions({"held_out", "all"})],
        "max_rungs": [Interval(Integral, 1, None, closed="left")],
        "delta_max": [Interval(Real, 0, 1, closed="neither"), None],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
        "verbose": ["verbose"],
        "random_state": ["random_state", np.random.Generator],
    }

    def __init__(self, estimator=None, target_utility=0.8, *, epsilon_max=10.0,
                 epsilon_start=0.1, tolerance=0.05, utility_scale=None, test_ratio="auto",
                 margin="auto", steering="curve", checkpoints=False, test_rows="held_out",
                 max_rungs=8, delta_max=None, validation_fraction=0.2, verbose=0,
                 random_state=None):
        self.estimator = estimator
        self.target_utility = target_utility
        self.epsilon_max = epsilon_max
        self.epsilon_start = epsilon_start
        self.tolerance = tolerance
        self.utility_scale = utility_scale
        self.test_ratio = test_ratio
        self.margin = margin
        self.steering = steering
        self.checkpoints = checkpoints
        self.test_rows = test_rows
        self.max_rungs = max_rungs
        self.delta_max = delta_max
        self.validation_fraction = validation_fraction
        self.verbose = verbose
        self.random_state = random_state

    def _inner(self):
        return default_estimator(self.estimator)

    @atomic_fit(prefer_skip_nested_validation=False)
    def fit(self, X, y, proxy=None, groups=None):
        """Choose epsilon for the target and release a model trained at it.

        %(X_y_rows)s
        proxy : tuple (X_public, y_public), default=None
            Public data of the same kind (never private rows): the analytic method
            (:class:`~skdp.AnalyticEpsilonForUtility`) runs on it and its answer,
            rescaled to the private data's size, is the first rung.
        groups : array-like of shape (n_samples,), default=None
            The person of each row (any labels, or a dask array or Series: with a
            dask ``X`` and ``y`` the split, the counts, the rungs and the tests run on
            the dask graph, and the release is the in-memory one for any chunking; a
            Pipeline's preprocessing must then be BoundedScaler or Clipper, applied
            lazily, and anything else is refused before any partition is computed).
            Given, the unit of privacy is the person: everything released is private
            with respect to adding or removing all of one person's rows. Each person goes
            whole to the training or the validation part by one public coin, the
            counts count persons, the tests read each person's mean utility, and
            every rung is fitted with ``fit(X, y, groups=...)`` on the training
            part's persons, so the estimator must take ``groups`` (refused before
            any data is read otherwise; see the user guide, "Persons as the unit").

        Returns
        -------
        self : object
        """
        return self._fit_private(X, y, proxy, groups)

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
        rows = None
        if is_partitioned(X, y, groups):  # every check in one pass, before any noise
            rows = check_partitioned_rows(self, estimator, X, y, groups, "EpsilonForUtility")
            classes = rows.classes
        else:
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
            y_bound=y_bound, utility_scale=self.utility_scale,
            random_state=self._private_random_state(estimator),
            verbose=self.verbose, account=account, checkpoints=self.checkpoints,
            test_rows=self.test_rows, groups=groups, rows=rows)
        self.measurements_ = result.rungs
        self.n_fits_ = result.n_fits
        self.privacy_report_ = private_report(
            result, type(final).__name__, self.target_utility,
            utility="accuracy" if y_bound is None else
            f"bounded squared-error utility (error scale {self._utility_scale(y_bound):g})")
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
            self.best_estimator_ = self._named(result.estimator)
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
                f"target_utility={target!r}: EpsilonForUtility tests a per-row utility in "
                "[0, 1] (accuracy, or a regressor's bounded squared-error utility), so the "
                "target must be a finite number in [0, 1] (AnalyticEpsilonForUtility, not "
                "covered by any guarantee, takes other scorers).")
        if is_classifier(estimator):
            if self.utility_scale is not None:
                raise ValueError("utility_scale sets a regressor's error scale; a "
                                 "classifier's utility is accuracy: leave it None.")
            return None
        y_bound = private_step_params(estimator).get("y_bound")
        if y_bound is None or not np.isfinite(y_bound) or y_bound <= 0:
            raise ValueError(
                "EpsilonForUtility with a regressor tests the utility 1 - min(1, (y - "
                "y_hat)^2 / (4 y_bound^2)), with y clipped to the public y_bound: set the "
                f"regressor's y_bound to a finite public bound on |y| (got {y_bound!r}).")
        return float(y_bound)

    def _utility_scale(self, y_bound):
        """The regressor's error scale: ``utility_scale``, or ``2 y_bound``."""
        return 2.0 * y_bound if self.utility_scale is None else float(self.utility_scale)

    def _private_random_state(self, estimator):
        if self.random_state is not None:
            return self.random_state
        return private_step_params(estimator).get("random_state")

    def _proxy_rows_epsilon(self, proxy, random_state):
        """``n_proxy * epsilon`` at the target, by the analytic method on public data
        (its noise on a stream of its own, never the rungs')."""
        X_public, y_public = proxy
        analytic = AnalyticEpsilonForUtility(
            self.estimator, self.target_utility, validation_fraction=self.validation_fraction,
            refit=False, random_state=random_state)
        analytic.fit(X_public, y_public)
        return analytic.epsilon_ * len(y_public)

    def predict_utility(self, epsilons):
        """The utility law fitted to the rungs' noisy utilities, with its error.

        Parameters
        ----------
        epsilons : array-like of shape (n_points,)
            Where to estimate the utility.

        Returns
        -------
        utility : ndarray of shape (n_points,)
            The law ``U_inf - a / epsilon`` fitted to the rungs' noisy utilities
            (released quantities only; the one noisy utility when a single rung
            ran, NaN when none did).
        error : ndarray of shape (n_points,)
            Its standard error from the tests' noise.
        """
        check_is_fitted(self, "measurements_")
        return private_utility_curve(self.privacy_report_, epsilons)

    def plot(self, ax=None):
        """Plot the transcript: each rung's noisy utility with two standard deviations
        of its test's error, passed or failed, the thresholds, the target and the
        released epsilon, from released quantities only.

        Parameters
        ----------
        ax : matplotlib Axes, default=None
            Axes to draw on; a new figure when ``None``.

        Returns
        -------
        ax : matplotlib Axes
        """
        check_is_fitted(self, "measurements_")
        ax = axes(ax)
        return plot_private_transcript(self.privacy_report_, self.target_utility, ax)

    def _released(self):
        """``best_estimator_``, or NotFittedError saying why there is none."""
        check_is_fitted(self)
        if not hasattr(self, "best_estimator_"):
            raise NotFittedError("EpsilonForUtility released no model: no rung met the "
                                 "target within epsilon_max.")
        return self.best_estimator_
