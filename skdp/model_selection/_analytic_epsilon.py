"""The analytic choice of epsilon for a target utility (AnalyticEpsilonForUtility).

The source paper's method, not covered by any guarantee: the utility and its
derivative in epsilon are measured on the data given to ``fit`` without noise, and
the answer is solved from a first-order expansion. For public or proxy data (and as
the proxy run of :class:`~skdp.EpsilonForUtility`).
"""

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

from ..base import atomic_fit, get_privacy_tags
from ..exceptions import PrivacyBudgetError, UnreachableUtilityWarning
from ..utils._sklearn_compat import HasMethods, Interval, StrOptions
from ._measure import _fit_record, _measure, _NoiseSources, compose_fits
from ._released import ReleasedModelMixin
from ._selection_checks import default_estimator
from ._transcript import axes, log_epsilon_axis
from ._utility_curve import MAX_STEP, UtilityCurve

SELECTION_STATEMENT = (
    "The choice of epsilon used the private data given to fit (utilities measured on it "
    "and the measuring fits listed here). That selection step is not covered by the "
    "released model's guarantee, which is (epsilon_, delta) for the refit model alone. "
    "For a clean guarantee, run AnalyticEpsilonForUtility on public or proxy data and fit "
    "the private data at the chosen epsilon, or choose inside the guarantee with "
    "EpsilonForUtility."
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


class AnalyticEpsilonForUtility(ReleasedModelMixin, MetaEstimatorMixin, BaseEstimator):
    """Estimate the epsilon at which a model reaches a target utility (no guarantee).

    The source paper's analytic method. It measures the utility and its derivative
    on the data given to ``fit`` without noise and refits at the answer, so the
    choice is *not* covered by any guarantee (``privacy_report_`` says so): use it on
    public or proxy data, and :class:`~skdp.EpsilonForUtility` to choose inside the
    guarantee. At a measuring epsilon the wrapped estimator is fitted with
    ``n_draws`` noise draws; each fit gives the utility and its pathwise derivative
    in epsilon (noise draws held fixed: implicit differentiation for objective
    perturbation and NAPP, closed form for output perturbation, forward-mode
    propagation through the steps for DP-SGD, and reruns with the same draws for any
    other estimator with ``epsilon`` and ``random_state``). A first-order expansion
    (see ``expansion``) then gives the epsilon at which the utility reaches
    ``target_utility``; optional refinement fits re-measure there and solve again.

    Parameters
    ----------
    estimator : estimator object, default=None
        A private estimator (not a Pipeline) with an ``epsilon`` and a
        ``random_state`` parameter; it is cloned, never modified. ``None`` means
        ``ObjPertLogisticRegression()``.

    target_utility : float, default=0.8
        Utility to reach, in the units of ``scoring`` (higher is better).

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
    epsilon_ : float
        The chosen epsilon.

    predicted_utility_ : float
        Utility the expansion predicts at ``epsilon_``.

    expansion_ : str
        The expansion used (``expansion`` with ``"auto"`` resolved).

    measurements_ : list of dict
        One entry per measuring fit (epsilon, draw label, utility, derivative,
        purpose, fits).

    best_estimator_ : estimator
        Refitted on all data at ``epsilon_`` (``refit=True``).

    n_fits_ : int
        Number of private fits made (the refit included).

    privacy_report_ : dict
        Every internal fit's certified (epsilon, delta), the label of its noise
        draw, and their totals by basic composition (``inf``, with the reason in
        ``"composition"``, when fits share their noise or one certified no finite
        epsilon), and a statement that the selection is not covered.

    n_features_in_ : int

    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Defined only when ``X`` has string feature names.

    Notes
    -----
    Choosing epsilon this way is itself data-dependent: the measuring fits use the
    data and their utilities are not privatised. ``privacy_report_`` lists every
    fit; the released ``best_estimator_`` carries its own (``epsilon_``, delta)
    guarantee only for the refit, not for the selection. Randomness:
    ``docs/randomness.rst``.

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
    >>> from skdp import AnalyticEpsilonForUtility, ObjPertLogisticRegression
    >>> X, y = make_classification(n_samples=2000, n_features=5, random_state=0)
    >>> search = AnalyticEpsilonForUtility(ObjPertLogisticRegression(C=1.0, data_norm=1.0),
    ...                                    target_utility=0.85, n_draws=3,
    ...                                    random_state=0).fit(X, y)
    >>> search.n_fits_, search.best_estimator_.epsilon == search.epsilon_
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
    }

    def __init__(self, estimator=None, target_utility=0.8, *, scoring=None,
                 measure_on="validation", validation_fraction=0.2,
                 rescale_to_full_data=True, measuring_epsilon=1.0, n_draws=5,
                 expansion="auto", max_fits=None, epsilon_bounds=(1e-3, 1e3), refit=True,
                 n_jobs=None, verbose=0, random_state=None):
        self.estimator = estimator
        self.target_utility = target_utility
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
        return default_estimator(self.estimator)

    def _scoring(self, estimator):
        if self.scoring is not None:
            return self.scoring
        return "accuracy" if is_classifier(estimator) else "r2"

    def _check_params(self, estimator):
        params = estimator.get_params()
        for name in ("epsilon", "random_state"):
            if name not in params:
                raise ValueError(f"AnalyticEpsilonForUtility needs an estimator with an {name!r} "
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

    @atomic_fit(prefer_skip_nested_validation=False)
    def fit(self, X, y):
        """Measure, solve for the target, refit.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The rows (public or proxy: the choice is not private).
        y : array-like of shape (n_samples,)
            Labels or targets.

        Returns
        -------
        self : object
        """
        estimator = self._inner()
        if isinstance(estimator, Pipeline):
            raise ValueError("AnalyticEpsilonForUtility needs a private estimator itself, "
                             "not a Pipeline; EpsilonForUtility accepts a Pipeline.")
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
            print(f"[AnalyticEpsilonForUtility] epsilon_={self.epsilon_:.4g} (predicted utility "
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
                print(f"[AnalyticEpsilonForUtility] {what} at epsilon={point.epsilon / ratio:.4g} "
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
            them; on the full-data scale (see ``rescale_to_full_data``).
        error : ndarray of shape (n_points,)
            Standard error from the spread of the noise draws (NaN with one draw)
            and, for accuracy, the sampling error ``sqrt(u (1 - u) / m)`` of the
            ``m`` rows it is measured on, shared by all the measurements: with
            ``measure_on="validation"`` the held-out split's ``m`` is small, and
            targets within about two of these errors of the curve's plateau cannot
            be told apart from unreachable ones.
        """
        check_is_fitted(self, "measurements_")
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
            raise NotFittedError("AnalyticEpsilonForUtility released no model: refit=False.")
        return self.best_estimator_
