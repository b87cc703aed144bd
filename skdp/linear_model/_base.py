"""The private linear models' base (``fit`` written once) and the pieces they share."""

from functools import partial
import warnings
from numbers import Real

import numpy as np
import scipy.sparse as sp
from scipy.special import expit, softmax
from sklearn.base import BaseEstimator
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted, validate_data

from ..accounting import gdp_mu
from ..accounting._rdp import ORDERS
from ..base import (EpsilonRelease, PrivacyParamsMixin, PrivacyTags, atomic_fit,
                    copy_with_coefficients, warn_noise_floor, with_privacy_tags)
from ..exceptions import ConvergenceError, DataNormWarning
from ..mechanisms._quantile import DATA_NORM_EPSILON_SHARE, NORM_QUANTILE, private_quantile
from ..losses import make_loss
from ..utils._docstrings import fill_doc
from ..utils._groups import check_groups
from ..solvers._design import ScaledDesign, WideRows, canonical_csr
from ..solvers._partitioned import is_dask_collection, kept_values
from ..utils._memory import check_allocation
from ..utils._random import data_norm_generator
from ..utils._sklearn_compat import Interval, StrOptions
from ..utils.validation import (augment_intercept, check_data_norm, clip_rows_to_norm,
                                row_clipping)


def design_matrix(X, *, data_norm, fit_intercept, intercept_scaling):
    """Clip rows to ``data_norm`` and append the public intercept column.

    Dense input with an intercept is built in one allocation: the same values as
    clipping then appending, bit for bit (rows inside the ball are multiplied by
    exactly 1), without the intermediate copy.
    """
    if sp.issparse(X) or not fit_intercept:
        X = clip_rows_to_norm(X, data_norm)
        return augment_intercept(X, intercept_scaling) if fit_intercept else X
    check_data_norm(data_norm)
    X = np.asarray(X, dtype=np.float64)
    check_allocation(8.0 * X.shape[0] * (X.shape[1] + 1), "The clipped design (a copy of X)")
    design = np.empty((X.shape[0], X.shape[1] + 1))
    if np.isinf(data_norm):
        design[:, :-1] = X
    else:
        clipping = row_clipping(X, data_norm)
        np.multiply(X, clipping.factors[:, None], out=design[:, :-1])
        design[clipping.wide, :-1] = clipping.wide_rows
    design[:, -1] = intercept_scaling
    return design


DEFAULT_DATA_NORM = 1.0
"""The bound that ``data_norm="warn"`` (the default) resolves to, with a
:class:`~skdp.DataNormWarning`."""


def row_norms(X):
    """The L2 norm of every row of a dense or sparse ``X``, free of overflow (``inf``
    only for a norm beyond float64's range)."""
    X = (canonical_csr(X).astype(np.float64, copy=False) if sp.issparse(X)
         else np.asarray(X, dtype=np.float64))
    return row_clipping(X, np.inf).norms


def private_data_norm(X, epsilon, rng):
    """``data_norm="private"``: the exponential-mechanism quantile
    (:func:`~skdp.mechanisms.private_quantile`, epsilon-DP) of the row norms of ``X``."""
    return private_quantile(row_norms(X), epsilon, rng)


def solver_design(X, *, data_norm, fit_intercept, intercept_scaling):
    """The design of :func:`design_matrix` for the solvers, without a copy of ``X``
    (:class:`~skdp.solvers._design.ScaledDesign` applies the row factors and the
    intercept column inside the products). A sparse ``X`` is read in CSR form without
    duplicate entries (a copy only when it is not already one). The few rows whose
    norm may overflow (wide rows) are held clipped beside ``X``
    (:class:`~skdp.solvers._design.WideRows`)."""
    check_data_norm(data_norm)
    X = (canonical_csr(X).astype(np.float64, copy=False) if sp.issparse(X)
         else np.asarray(X, dtype=np.float64))
    clipping = row_clipping(X, data_norm)
    factors = clipping.factors
    intercept = float(intercept_scaling) if fit_intercept else None
    largest = float(np.hypot(clipping.norms.max(initial=0.0), intercept or 0.0))
    return ScaledDesign(X, None if np.all(factors == 1.0) else factors, intercept, largest,
                        WideRows.of(clipping.wide, clipping.wide_rows))


PARTITIONED_SUPPORT = (
    "A fit on a dask array is supported by DPSGDClassifier (Poisson-sampled DP-SGD or "
    "full-batch DP-GD), ObjPertLogisticRegression, OutputPertSVM(kernel='linear', "
    "loss='logistic' or 'huber'), NAPPLasso, NAPPLassoClassifier and "
    "SSPLinearRegression, any number of classes, for numpy or scipy.sparse chunks, "
    "through fit() (no fit_release); fit in memory otherwise.")
"""What a fit on partitioned data supports (named by every refusal)."""


def partitioned_design(estimator, X, y, *, data_norm, fit_intercept, intercept_scaling,
                       max_classes=np.inf, groups=None, persons="weights"):
    """Validate a dask ``(X, y)`` as a map-reduce and return its
    :class:`~skdp.solvers._partitioned.PartitionedDesign` (nothing is computed on the
    driver but flags and label sets; no noise is drawn). Sets ``n_features_in_``,
    ``feature_names_in_`` (a dask DataFrame) and ``classes_``: the declared
    ``classes`` or the union of the partitions' labels (then treated as public, as in
    memory); at most ``max_classes`` of them. The design's targets are +-1 with
    ``classes_[-1]`` as +1 (two classes; :meth:`~skdp.solvers._partitioned.
    PartitionedDesign.with_targets` gives one-vs-rest's).

    With ``groups`` (one person label per row) the persons are found by a person-keyed
    reduction (:mod:`skdp.solvers._partitioned_persons`), and the design carries them
    as ``persons`` says: ``"weights"``, each row weighted ``min(1, M / k)`` as in
    memory (:func:`~skdp.utils._groups.person_row_weights`, ``M =
    max_rows_per_group``); ``"keyed"``, each row's person code and person's number
    of rows, the rows left in their partitions (DP-SGD's person clipping, by
    :meth:`~skdp.solvers._partitioned.PartitionedDesign.reduce_by_person`).
    ``n_persons`` is set on the design (private: for the DP count)."""
    from ..solvers._partitioned import PartitionedDesign, check_partitioned_input

    check_data_norm(data_norm)
    X, y, classes, _, names = check_partitioned_input(X, y, estimator.classes,
                                                      max_classes=max_classes)
    record_features(estimator, X, names)
    estimator.classes_ = classes
    intercept = float(intercept_scaling) if fit_intercept else None
    options = _with_persons(estimator, X, groups, persons)
    return PartitionedDesign(X, y, classes, data_norm, intercept, **options)


def _with_persons(estimator, X, groups, persons):
    """The :class:`~skdp.solvers._partitioned.PartitionedDesign` arguments of the
    persons of ``groups`` (none without groups)."""
    from ..solvers import _partitioned_persons as by_person

    if groups is None:
        return {}
    found = by_person.partitioned_person_codes(groups, X)
    if persons == "keyed":
        return dict(persons=found.codes, person_sizes=by_person.partitioned_person_sizes(found),
                    n_persons=found.n_persons)
    weights = by_person.partitioned_person_weights(found, estimator.max_rows_per_group)
    return dict(weights=weights, n_persons=found.n_persons)


def partitioned_regression_design(estimator, X, y, *, data_norm, fit_intercept,
                                  intercept_scaling, low, high, nonnegative=False,
                                  groups=None, scan=True):
    """:func:`partitioned_design` for a regression: the targets are clipped to the
    public ``[low, high]`` inside each partition; ``nonnegative`` refuses a negative
    target (before any noise); ``groups`` weigh a person's rows as there. ``scan=False``
    leaves the values' check to the fit's one pass
    (:meth:`~skdp.solvers._partitioned.PartitionedDesign.checked_reduce`)."""
    from ..solvers._partitioned import (PartitionedDesign, check_partitioned_input,
                                        clipped_values)

    check_data_norm(data_norm)
    X, y, _, negative, names = check_partitioned_input(X, y, regression=True, scan=scan)
    if nonnegative and negative:
        raise ValueError("Some value(s) of y are negative: the Poisson loss needs counts "
                         "y >= 0.")
    record_features(estimator, X, names)
    intercept = float(intercept_scaling) if fit_intercept else None
    options = _with_persons(estimator, X, groups, "weights")
    return PartitionedDesign(X, y, None, data_norm, intercept,
                             encode=partial(clipped_values, low=low, high=high),
                             targets=kept_values, **options)


def record_features(estimator, X, names):
    """Set ``n_features_in_`` from the dask ``X`` and ``feature_names_in_`` to ``names``
    (removing an earlier fit's when ``None``), as ``validate_data`` does in memory."""
    estimator.n_features_in_ = int(X.shape[1])
    if names is not None:
        estimator.feature_names_in_ = names
    elif hasattr(estimator, "feature_names_in_"):
        del estimator.feature_names_in_


def one_vs_rest_targets(y_idx, n_classes):
    """Targets in {-1, +1}: one problem for two classes, else one per class."""
    if n_classes == 2:
        return [np.where(y_idx == 1, 1.0, -1.0)]
    return [np.where(y_idx == k, 1.0, -1.0) for k in range(n_classes)]


def encode_labels(y, classes=None):
    """``classes_`` and the index of each label in it.

    ``classes=None`` takes the label set from ``y`` (the set of labels is then
    treated as public). A declared ``classes`` is the public label set: labels
    outside it are an error, and a class absent from ``y`` still fits.
    """
    if classes is None:
        # np.unique's inverse holds four vectors of n at once; a search holds one
        classes_ = np.unique(y)
        check_two_classes(classes_)
        return classes_, np.searchsorted(classes_, y)
    classes_ = np.unique(np.asarray(classes))
    if len(classes_) != len(classes):
        raise ValueError(f"classes={list(classes)!r} holds repeated labels.")
    check_two_classes(classes_)
    y = np.asarray(y)
    outside = ~np.isin(y, classes_)
    if outside.any():
        raise ValueError(
            "y holds labels outside the declared classes; every label must be one of "
            f"classes={classes_.tolist()!r}.")
    return classes_, np.searchsorted(classes_, y)


def classes_constraint():
    """Parameter constraint of ``classes`` (the public label set)."""
    return ["array-like", None]


def linear_classifier_constraints(losses):
    """The parameter constraints the private linear classifiers share.

    ``losses`` narrows the registry :data:`skdp.losses.LOSSES` to the losses the
    mechanism supports.
    """
    return {
        **PrivacyParamsMixin._privacy_parameter_constraints,
        "loss": [StrOptions(set(losses))],
        "huber_h": [Interval(Real, 0, None, closed="neither")],
        "fit_intercept": ["boolean"],
        "intercept_scaling": [Interval(Real, 0, None, closed="neither")],
        "classes": classes_constraint(),
    }


def check_two_classes(classes):
    """Every classifier needs samples of at least two classes."""
    if len(classes) < 2:
        raise ValueError(
            f"This solver needs samples of at least 2 classes in the data, but the data "
            f"contains only one class: {classes[0]!r}."
        )


def split_coefficients(thetas, n_features, fit_intercept, intercept_scaling):
    """``coef_`` and ``intercept_`` from the stacked augmented solutions."""
    thetas = np.atleast_2d(np.asarray(thetas, dtype=float))
    coef = thetas[:, :n_features]
    if fit_intercept:
        intercept = thetas[:, n_features] * intercept_scaling
    else:
        intercept = np.zeros(thetas.shape[0])
    return coef, intercept


def _count_persons(groups, X):
    """The number of persons of ``groups`` (public under ``neighboring="replace"``
    only): in memory, or by the person-keyed reduction of a dask fit."""
    if is_dask_collection(groups) or is_dask_collection(X):
        from ..solvers._partitioned_persons import partitioned_person_codes

        if hasattr(X, "to_dask_array"):
            X = X.to_dask_array(lengths=True)
        return partitioned_person_codes(groups, X).n_persons
    return int(check_groups(groups, X.shape[0]).max()) + 1


class PrivateLinearModel(PrivacyParamsMixin, BaseEstimator):
    """Base of the private linear models: ``fit`` is written once, over one hook.

    A subclass implements ``_releases(X, y, with_derivative=False)``: validate
    (every error before any noise is drawn), run the mechanism once per problem
    (one-vs-rest class, or one multinomial problem) and return the transient
    releases, each with ``theta`` (the released coefficients, the intercept's
    last), ``converged`` (the solver met its public tolerance) and, when
    ``with_derivative``, ``theta_derivative()`` (``d theta / d epsilon`` in the
    estimator's epsilon, the noise's standard draws held fixed). The releases
    hold the noise and are never stored on the estimator.
    """

    # PrivacyTags.epsilon_expansion (chosen per mechanism from EpsilonForUtility's benchmark)
    _epsilon_expansion = "inverse"

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return with_privacy_tags(tags, PrivacyTags(
            # a private bound is a discrete draw: the release has no derivative in epsilon
            epsilon_derivative=self._has_epsilon_derivative() and not self._private_norm(),
            epsilon_expansion=self._epsilon_expansion))

    def _has_epsilon_derivative(self):
        return True

    def _private_norm(self):
        """Whether ``data_norm="private"`` (the bound chosen by a DP quantile)."""
        return isinstance(self.data_norm, str) and self.data_norm == "private"

    def _data_norm_epsilon(self):
        """Epsilon that ``data_norm="private"`` spends on the bound, 0 otherwise (read
        from the parameters: public)."""
        return float(self.epsilon) * DATA_NORM_EPSILON_SHARE if self._private_norm() else 0.0

    def _mechanism_epsilon(self):
        """Epsilon left to the mechanism once the private bound took its share."""
        epsilon = float(self.epsilon)
        return epsilon if np.isinf(epsilon) else epsilon - self._data_norm_epsilon()

    def _resolve_data_norm(self, X=None):
        """Set and return ``data_norm_``, the bound the rows are clipped to, and
        ``data_norm_epsilon_``, what choosing it spent.

        Called once ``X`` and ``y`` are validated and before any noise is drawn.
        ``"warn"`` (the default) is :data:`DEFAULT_DATA_NORM` with a
        :class:`~skdp.DataNormWarning`, raised from the parameter alone;
        ``"private"`` draws the bound from the rows of ``X`` with the exponential
        mechanism at ``_data_norm_epsilon()``, from a stream of its own.
        """
        data_norm = self.data_norm
        if isinstance(data_norm, str) and data_norm == "warn":
            warnings.warn(
                f"{type(self).__name__}: data_norm was left at its default, so every row "
                f"is clipped to L2 norm {DEFAULT_DATA_NORM}; raw features (ages, amounts) "
                "then keep only their direction, and the model can fall to the majority "
                "class. Pass a public bound on the rows' L2 norm (from the features' known "
                "ranges, e.g. after skdp.preprocessing.BoundedScaler), data_norm='private' "
                f"to choose it by a differentially private quantile ({NORM_QUANTILE:g}) of "
                f"the row norms that spends {DATA_NORM_EPSILON_SHARE:.0%} of epsilon, or "
                f"data_norm={DEFAULT_DATA_NORM} to keep this bound without this warning.",
                DataNormWarning, stacklevel=4)
            data_norm = DEFAULT_DATA_NORM
        elif self._private_norm():
            data_norm = private_data_norm(X, self._data_norm_epsilon(),
                                          data_norm_generator(self.random_state))
        self.data_norm_ = None if data_norm is None else float(data_norm)
        self.data_norm_epsilon_ = self._data_norm_epsilon()
        return self.data_norm_

    @property
    def _loss_name(self):
        return self.loss

    def _make_loss(self):
        """The loss of the ``loss`` parameter (narrowed by each estimator's constraints)."""
        return make_loss(self._loss_name, huber_h=getattr(self, "huber_h", 0.5))

    @atomic_fit(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Fit the private model.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training rows; rows longer than ``data_norm`` are clipped.
        y : array-like of shape (n_samples,)
            Class labels (classifiers) or target values (regressors).

        Returns
        -------
        self : object
            The fitted estimator.
        """
        self._fit_releases(X, y)
        return self

    @atomic_fit(prefer_skip_nested_validation=True)
    def fit_release(self, X, y):
        """Fit, and return the released coefficients with their derivative in epsilon.

        The derivative holds the noise's standard draws fixed (see
        :class:`~skdp.base.EpsilonRelease`); the fit is the same as :meth:`fit`'s,
        with the same spend. Available when the estimator's privacy tags declare
        ``epsilon_derivative``. The derivatives are not private (they are
        computed from the noise): only the fitted model carries the guarantee.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training rows.
        y : array-like of shape (n_samples,)
            Class labels (classifiers) or target values (regressors).

        Returns
        -------
        release : EpsilonRelease
            ``coef_``, ``intercept_`` and their derivatives in ``epsilon``.
        """
        return self._fit_release(X, y)

    def _fit_release(self, X, y, **fit_params):
        if not self._has_epsilon_derivative() or self._private_norm():
            raise NotImplementedError(
                f"{type(self).__name__} with these parameters has no derivative in "
                "epsilon (its privacy tags say so).")
        releases = self._fit_releases(X, y, with_derivative=True, **fit_params)
        dcoef, dintercept = self._derivative_coefficients(releases)
        return EpsilonRelease(self.coef_.copy(), np.array(self.intercept_, dtype=float),
                              dcoef.reshape(np.shape(self.coef_)),
                              dintercept.reshape(np.shape(self.intercept_)))

    def with_coefficients(self, coef, intercept):
        """A copy of the fitted model with other coefficients (the original is untouched).

        Useful to evaluate a direction in coefficient space, for example the
        derivative of an :class:`~skdp.base.EpsilonRelease`: the model's
        decision function is affine in ``(coef_, intercept_)``. The copy has no
        privacy guarantee of its own.

        Parameters
        ----------
        coef : array-like of the shape of ``coef_``
            The coefficients of the copy.
        intercept : array-like of the shape of ``intercept_``
            Its intercepts.

        Returns
        -------
        model : estimator
            A shallow copy with ``coef_`` and ``intercept_`` replaced.
        """
        check_is_fitted(self)
        return copy_with_coefficients(self, coef, intercept)

    def _partitioned_refusal(self, with_derivative):
        """Why this estimator with these parameters cannot fit on a dask array, or
        ``None`` when it can (estimators that support it override this)."""
        return f"{type(self).__name__} does not fit on a dask array."

    def _fit_releases(self, X, y, with_derivative=False, **fit_params):
        """Check a dask input, run :meth:`_releases` and set the fitted attributes;
        ``fit_params`` (``sample_weight``) go to :meth:`_releases`."""
        if is_dask_collection(X) or is_dask_collection(y):
            # before any work on the data and before any noise
            if self._private_norm():
                raise ValueError("data_norm='private' needs the rows in memory; pass a "
                                 f"public data_norm for a fit on a dask array. "
                                 f"{PARTITIONED_SUPPORT}")
            refusal = ("fit_release() needs the data in memory." if with_derivative
                       else self._partitioned_refusal(with_derivative))
            if refusal is not None:
                raise ValueError(f"{refusal} {PARTITIONED_SUPPORT}")
        releases = self._releases(X, y, with_derivative=with_derivative, **fit_params)
        self._set_fitted(releases)
        self._set_noise_floor(releases, X, fit_params.get("groups"))
        return releases

    def _set_noise_floor(self, releases, X, groups):
        """``noise_floor_`` from public quantities; under ``neighboring="replace"``, where
        the number of rows (of persons, with ``groups``) is public, a warning when the
        data have fewer (:func:`~skdp.base.warn_noise_floor`)."""
        self.noise_floor_ = max((r.noise_floor() for r in releases
                                 if hasattr(r, "noise_floor")), default=0.0)
        if self.neighboring != "replace" or np.isnan(X.shape[0]):
            return
        count = X.shape[0] if groups is None else _count_persons(groups, X)
        unit = "row" if groups is None else "person"
        warn_noise_floor(type(self).__name__, count, self.noise_floor_, unit,
                         f"{count:,} {unit}s (public under neighboring='replace')")

    def _n_coefficients(self):
        return self.n_features_in_

    def _coefficients(self, thetas):
        """``coef_`` and ``intercept_`` from the per-problem augmented vectors (or matrices,
        one row per class)."""
        return split_coefficients(np.vstack(thetas), self._n_coefficients(), self.fit_intercept,
                                  self.intercept_scaling)

    def _derivative_coefficients(self, releases):
        return self._coefficients([r.theta_derivative() for r in releases])

    def _check_converged(self, releases):
        """Raise, releasing nothing, unless every problem met the public tolerance
        (:func:`~skdp.base.atomic_fit` restores the attributes of before the fit).

        The message holds no statistic of the data. The solver's iteration count
        depends on the private data and no guarantee covers it, so it is never
        kept (no ``n_iter_``).
        """
        if not all(r.converged for r in releases):
            raise ConvergenceError(
                f"{type(self).__name__}: the solver did not reach the public tolerance "
                f"tol={self.tol} within max_iter={self.max_iter}; nothing is released. "
                "Increase max_iter, or tol if it is near the rounding level of the "
                "gradient (the tolerance is part of the privacy guarantee).")

    def _set_fitted(self, releases):
        self._check_converged(releases)
        self.coef_, self.intercept_ = self._coefficients([r.theta for r in releases])
        self._record_spend(self._mechanism_epsilon() + self.data_norm_epsilon_, self.delta,
                           self.neighboring)


class GaussianDPMixin:
    """Estimators whose Gaussian fits (``delta > 0``, a public ``data_norm``) are one
    ``mu``-GDP release with ``mu = gdp_mu(epsilon, delta)`` (the analytic Gaussian
    calibration of Balle & Wang; one-vs-rest problems split ``(epsilon, delta)`` and
    compose to at most that ``mu``): their declared costs."""

    def _is_gaussian_dp(self):
        return bool(self.delta) and not self._private_norm()

    def _renyi_cost(self, n_classes=None, persons=False):
        """A ``mu``-GDP fit's Renyi curve is ``alpha mu^2 / 2``; other fits as any."""
        if self._is_gaussian_dp():
            epsilon, delta = self._claimed_spend()
            return ORDERS * gdp_mu(epsilon, delta) ** 2 / 2
        return super()._renyi_cost(n_classes, persons)

    def _gdp_mu_spent(self):
        """``gdp_mu(epsilon_spent_, delta_spent_)`` of a Gaussian fit, else ``None``."""
        if float(self.delta_spent_) and self._is_gaussian_dp():
            return gdp_mu(self.epsilon_spent_, self.delta_spent_)
        return None


@fill_doc
class _LinearClassifierMixin:
    """Prediction for linear classifiers fitted on rows clipped to ``data_norm``.

    The model was fitted on clipped rows, so prediction clips the rows the same
    way: the decision function is that of the clipped row.
    """

    def _clipping_norm(self):
        """The norm the fit clipped rows to."""
        return self.data_norm_

    def _prediction_input(self, X):
        X = validate_data(self, X, dtype=np.float64, reset=False, accept_sparse=("csr", "csc"))
        return clip_rows_to_norm(X, self._clipping_norm())

    def decision_function(self, X):
        """Signed distance to the separating hyperplane(s).

        %(X_rows)s

        Returns
        -------
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
            For two classes, positive scores favour ``classes_[1]``.
        """
        check_is_fitted(self)
        if is_dask_collection(X):
            width = None if self.coef_.shape[0] == 1 else self.coef_.shape[0]
            return by_partitions(self.decision_function, X, width, float)
        scores = np.asarray(self._prediction_input(X) @ self.coef_.T) + self.intercept_
        return scores.ravel() if scores.shape[1] == 1 else scores

    def predict(self, X):
        """Predict class labels.

        %(X_rows)s

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
        """
        if is_dask_collection(X):
            check_is_fitted(self)
            return by_partitions(self.predict, X, None, self.classes_.dtype)
        scores = self.decision_function(X)
        if scores.ndim == 1:
            indices = (scores > 0).astype(int)
        else:
            indices = scores.argmax(axis=1)
        return self.classes_[indices]

    def score(self, X, y, sample_weight=None):
        """Mean accuracy on ``(X, y)``; lazy (a 0-d dask array) on dask input.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array} of shape (n_samples, n_features)
            The rows (clipped to ``data_norm``, as in the fit).
        y : array-like or dask array of shape (n_samples,)
            The true labels.
        sample_weight : array-like or dask array of shape (n_samples,), default=None
            Weights of the rows.

        Returns
        -------
        score : float or dask array
            The (weighted) share of rows whose prediction is their label.
        """
        if not (is_dask_collection(X) or is_dask_collection(y)):
            return super().score(X, y, sample_weight=sample_weight)
        predicted = self.predict(X if is_dask_collection(X) else _dask_rows(X, None))
        hits = predicted == _dask_rows(y, predicted)
        return _lazy_mean(hits, sample_weight, predicted)

    def _has_proba(self):
        """Probabilities exist for the likelihood (logistic) loss only."""
        return getattr(self, "loss", "logistic") == "logistic"

    def _probabilities(self, scores):
        """Sigmoid of the scores, normalised over classes for one-vs-rest."""
        p = expit(scores)
        if scores.ndim == 1:
            return np.column_stack([1.0 - p, p])
        return p / p.sum(axis=1, keepdims=True)

    @available_if(lambda self: self._has_proba())
    def predict_proba(self, X):
        """Class probabilities (logistic loss only).

        %(X_rows)s

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
        """
        if is_dask_collection(X):
            check_is_fitted(self)
            return by_partitions(self.predict_proba, X, len(self.classes_), float)
        return self._probabilities(self.decision_function(X))

    @available_if(lambda self: self._has_proba())
    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`.

        %(X_rows)s

        Returns
        -------
        log_proba : ndarray of shape (n_samples, n_classes)
        """
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))


def by_partitions(method, X, width, dtype):
    """``method`` on every row partition of a dask ``X``, lazily: a dask array of
    ``width`` columns, or one dimension when ``width`` is None (a fitted model's
    predictions, computed where the rows live)."""
    if hasattr(X, "to_dask_array"):
        X = X.to_dask_array(lengths=True)
    if X.ndim == 2 and len(X.chunks[1]) > 1:
        X = X.rechunk({1: -1})
    if width is None:
        return X.map_blocks(method, drop_axis=1, dtype=dtype)
    return X.map_blocks(method, chunks=(X.chunks[0], (width,)), dtype=dtype)


def _dask_rows(values, like):
    """``values`` (a dask collection or in memory) as a dask array with the row chunks
    of the dask array ``like`` (or one chunk when ``like`` is None)."""
    import dask.array as da

    if hasattr(values, "to_dask_array"):
        values = values.to_dask_array(lengths=True)
    if not isinstance(values, da.Array):
        values = np.asarray(values)
        return da.from_array(values, chunks=(-1,) + (-1,) * (values.ndim - 1)
                             if like is None else (like.chunks[0],) + values.shape[1:])
    if like is not None and values.chunks[0] != like.chunks[0]:
        values = values.rechunk({0: like.chunks[0]})
    return values


def _lazy_mean(values, sample_weight, like):
    """The (weighted) mean of the dask array ``values``, lazily (a 0-d dask array)."""
    if sample_weight is None:
        return values.mean()
    weights = _dask_rows(sample_weight, like)
    return (values * weights).sum() / weights.sum()


class _MultinomialMixin:
    """``multi_class``: one softmax problem or one-vs-rest for three classes or more."""

    multi_class_constraint = [StrOptions({"auto", "multinomial", "ovr"})]

    def _is_multinomial(self, n_classes):
        """Whether ``n_classes`` classes are fitted as one softmax problem.

        ``"auto"`` is multinomial for the logistic loss (the only one with a softmax
        form); two classes are always one binary problem.
        """
        if n_classes < 3 or self.multi_class == "ovr":
            return False
        if self.multi_class == "multinomial" and self.loss != "logistic":
            raise ValueError(f"multi_class='multinomial' needs loss='logistic' (the "
                             f"{self.loss!r} loss has no softmax form); use "
                             "multi_class='ovr' or 'auto'.")
        return self.loss == "logistic"

    def _probabilities(self, scores):
        if scores.ndim == 2 and self._is_multinomial(scores.shape[1]):
            return softmax(scores, axis=1)
        return super()._probabilities(scores)
