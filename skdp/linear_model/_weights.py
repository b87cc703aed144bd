"""Public, bounded row weights: ``sample_weight``, ``class_weight`` and their bound.

A row's weight multiplies its loss in the sum-form objective. Every mechanism's
sensitivity is linear in the largest weight a record can carry, ``W``: the loss
``w l`` with ``0 <= w <= W`` has ``W`` times ``l``'s gradient and curvature bounds
(:class:`~skdp.losses.WeightedLoss`), so each mechanism is calibrated exactly as the
unweighted one at ``C W`` (``docs/privacy/objective_perturbation.rst``, "Sample
weights"). ``W`` is public: ``max_sample_weight`` when ``sample_weight`` is given,
times the largest weight of ``class_weight`` over the label set.
"""

import warnings
from numbers import Real

import numpy as np
from sklearn.utils.class_weight import compute_class_weight

from ..base import atomic_fit
from ..exceptions import SampleWeightWarning
from ..losses import WeightedLoss, weighted_targets
from ..solvers._partitioned import is_dask_collection
from ..utils._groups import check_groups, person_relation, person_row_weights
from ..utils._sklearn_compat import Interval, StrOptions, _check_sample_weight

BALANCED_REFUSAL = (
    "class_weight='balanced' is refused: it divides by the class counts, which are "
    "computed from the private labels, and no privacy budget pays for them (the fitted "
    "model would carry them without a guarantee). Pass an explicit dict of public "
    "weights, {label: weight}, chosen without reading the training labels (from a "
    "published prevalence, or the cost of each error).")


def person_constraints():
    """Parameter constraint of ``max_rows_per_group``."""
    return {"max_rows_per_group": [Interval(Real, 0, None, closed="neither")]}


def weight_constraints(class_weight=True):
    """Parameter constraints of ``max_sample_weight`` (and ``class_weight``)."""
    constraints = {"max_sample_weight": [Interval(Real, 0, None, closed="neither")]}
    if class_weight:
        # "balanced" is accepted here so that fit refuses it with the reason
        constraints["class_weight"] = [dict, StrOptions({"balanced"}), None]
    return constraints


def check_class_weight(class_weight):
    """Refuse ``"balanced"`` and non-positive or non-finite weights (parameters only,
    before any data is read)."""
    if class_weight is None:
        return
    if isinstance(class_weight, str):
        raise ValueError(BALANCED_REFUSAL)
    values = np.asarray(list(class_weight.values()), dtype=float)
    if not np.all(np.isfinite(values) & (values > 0)):
        raise ValueError("class_weight must map labels to finite positive weights; got "
                         f"{class_weight!r}.")


def warn_default_weight_bound(estimator):
    """:class:`~skdp.SampleWeightWarning` when ``max_sample_weight`` is 1 (its default):
    read from the parameter alone, for a fit given ``sample_weight``, never from the
    weights, so the warning tells nothing about them."""
    if float(estimator.max_sample_weight) == 1.0:
        warnings.warn(
            f"{type(estimator).__name__}: sample_weight was passed with max_sample_weight "
            "at its default 1.0, so every weight above 1 is lowered to 1 before the fit "
            "(weights in [0, 1] are unchanged; this warning reads the parameter, not the "
            "weights). If the weights can exceed 1, pass a public bound on them as "
            "max_sample_weight (the noise grows in proportion to it); if they lie in "
            "[0, 1], silence this warning with warnings.filterwarnings('ignore', "
            "category=skdp.SampleWeightWarning).", SampleWeightWarning, stacklevel=2)


def weight_bound(estimator, sample_weight, classes=None):
    """The public bound ``W`` on a record's weight.

    ``max_sample_weight`` when ``sample_weight`` is given (else 1: every record
    weighs 1), times the largest class weight over ``classes`` (a class missing from
    the dict weighs 1) when ``class_weight`` is given. Reads parameters and the label
    set, which is public (declared ``classes``, or treated as public).
    """
    bound = float(estimator.max_sample_weight) if sample_weight is not None else 1.0
    class_weight = getattr(estimator, "class_weight", None)
    if class_weight is not None and classes is not None:
        bound *= max(float(class_weight.get(c, 1.0)) for c in classes)
    return bound


def parametric_weight_bound(estimator):
    """``W`` of a fit without ``sample_weight``, from the parameters alone (before any
    data): the largest class weight over the declared ``classes``, or, with no label
    set declared, the largest weight of the dict and 1 (a class missing from the dict
    weighs 1): at least the ``weight_bound_`` of any such fit."""
    class_weight = getattr(estimator, "class_weight", None)
    if class_weight is None:
        return 1.0
    classes = getattr(estimator, "classes", None)
    if classes is not None:
        return weight_bound(estimator, None, classes)
    return max(1.0, *(float(value) for value in class_weight.values()))


def row_weights(estimator, sample_weight, X, y_idx=None, classes=None, groups=None):
    """Every row's weight in ``[0, W]``, and ``W`` (:func:`weight_bound`); with
    ``groups``, the weights of a person's rows sum to at most ``W``.

    ``sample_weight`` is validated as scikit-learn does (shape, finite, non-negative:
    a malformed input is refused before any noise) and clipped into ``[0,
    max_sample_weight]``: a weight above the bound is lowered to it, never refused
    (a refusal that depends on a private weight would tell it), with a
    :class:`~skdp.SampleWeightWarning` when the bound is left at 1
    (:func:`warn_default_weight_bound`). ``class_weight``
    (a dict) multiplies the weight of the rows of each class; a label of the dict
    outside the label set is refused as scikit-learn does. ``groups`` (one person
    label per row) multiplies each row's weight by ``min(1, M / k)``, ``k`` its
    person's number of rows and ``M = max_rows_per_group`` (public): a person's
    weights then sum to at most ``W = M`` times the bound without groups, which is
    the ``W`` returned (:mod:`skdp.utils._groups`).

    Returns
    -------
    weights : ndarray of shape (n_samples,) or None
        ``None`` when none is given (the unweighted fit).
    bound : float
    """
    if groups is not None:
        codes = check_groups(groups, X.shape[0])
        weights, bound = row_weights(estimator, sample_weight, X, y_idx, classes)
        person = person_row_weights(codes, estimator.max_rows_per_group)
        return (person if weights is None else weights * person,
                bound * float(estimator.max_rows_per_group))
    class_weight = getattr(estimator, "class_weight", None)
    if sample_weight is None and class_weight is None:
        return None, 1.0
    weights = np.ones(X.shape[0])
    if sample_weight is not None:
        warn_default_weight_bound(estimator)
        weights = np.minimum(
            _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True,
                                 allow_all_zero_weights=True),
            float(estimator.max_sample_weight))
    if class_weight is not None:
        weights = weights * compute_class_weight(class_weight, classes=classes,
                                                 y=classes[y_idx])[y_idx]
    return weights, weight_bound(estimator, sample_weight, classes)


def weighted_problem(loss, targets, weights, bound):
    """The loss and targets of one problem: ``loss`` and ``targets`` unchanged
    without weights, else :class:`~skdp.losses.WeightedLoss` with rows ``(y_i, w_i)``."""
    if weights is None:
        return loss, targets
    return WeightedLoss(loss, bound), weighted_targets(targets, weights)


def _fit_params(sample_weight, groups=None):
    """``sample_weight`` and ``groups`` for ``_releases``, each only when given: a
    fit without them calls ``_releases(X, y)`` exactly as before they existed."""
    params = {} if sample_weight is None else {"sample_weight": sample_weight}
    return params if groups is None else {**params, "groups": groups}


PARTITIONED_SOFTMAX_PERSONS = (
    "groups on a dask array are fitted one-vs-rest only (the partitioned softmax "
    "solver reads unweighted rows): pass multi_class='ovr', or fit in memory.")


class WeightedFitMixin:
    """``fit(X, y, sample_weight=None)`` for the estimators whose mechanisms take
    bounded row weights (mixed in left of
    :class:`~skdp.linear_model._base.PrivateLinearModel`)."""

    def _fit_releases(self, X, y, with_derivative=False, **fit_params):
        """The fit; with ``groups``, the guarantee's relation is the person's."""
        releases = super()._fit_releases(X, y, with_derivative=with_derivative, **fit_params)
        if fit_params.get("groups") is not None:
            self.neighboring_ = person_relation(self.neighboring)
        return releases

    def _partitioned_groups_refusal(self):
        """Why this estimator cannot fit ``groups`` on a dask array, or ``None`` when
        it can: its rows are weighted inside the partitions (binary or one-vs-rest
        problems, and regressions); from the parameters alone."""
        if getattr(self, "multi_class", None) == "multinomial":
            return PARTITIONED_SOFTMAX_PERSONS
        return None

    def _check_weight_params(self, X, y, sample_weight, groups=None):
        """Before any work on the data: ``"balanced"``, and a dask fit with weights or
        with groups the estimator cannot fit on partitions, are refused by name."""
        check_class_weight(getattr(self, "class_weight", None))
        if not any(is_dask_collection(v) for v in (X, y, sample_weight, groups)):
            return
        from ._base import PARTITIONED_SUPPORT

        if sample_weight is not None or getattr(self, "class_weight", None) is not None:
            raise ValueError(f"{type(self).__name__}: sample_weight and class_weight are "
                             "not supported on a dask array (the weights are not "
                             "partitioned alongside the rows); fit in memory, or without "
                             f"them. {PARTITIONED_SUPPORT}")
        refusal = None if groups is None else self._partitioned_groups_refusal()
        if refusal is not None:
            raise ValueError(f"{type(self).__name__}: {refusal} {PARTITIONED_SUPPORT}")

    @atomic_fit(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None, groups=None):
        """Fit the private model.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training rows; rows longer than ``data_norm`` are clipped.
        y : array-like of shape (n_samples,)
            Class labels (classifiers) or target values (regressors).
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weight of each row's loss, clipped to ``max_sample_weight``
            (see that parameter). A weight is part of its record: the guarantee
            protects it with the row. ``None``: every row weighs 1.
        groups : array-like of shape (n_samples,), default=None
            The person of each row (any labels). Given, the unit of privacy is the
            person: the guarantee covers adding or removing all of one person's rows
            (``neighboring_`` ends in ``"_person"``), a person's rows weighing at most
            ``max_rows_per_group`` rows in all (see that parameter).

        Returns
        -------
        self : object
            The fitted estimator.
        """
        self._check_weight_params(X, y, sample_weight, groups)
        self._fit_releases(X, y, **_fit_params(sample_weight, groups))
        return self

    @atomic_fit(prefer_skip_nested_validation=True)
    def fit_release(self, X, y, sample_weight=None, groups=None):
        """Fit, and return the released coefficients with their derivative in epsilon.

        The derivative holds the noise's standard draws fixed (see
        :class:`~skdp.base.EpsilonRelease`); the fit is the same as :meth:`fit`'s,
        with the same spend and the same row weights. Available when the estimator's
        privacy tags declare ``epsilon_derivative``. The derivatives are not private
        (they are computed from the noise): only the fitted model carries the
        guarantee.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training rows.
        y : array-like of shape (n_samples,)
            Class labels (classifiers) or target values (regressors).
        sample_weight : array-like of shape (n_samples,), default=None
            As in :meth:`fit`.
        groups : array-like of shape (n_samples,), default=None
            As in :meth:`fit`.

        Returns
        -------
        release : EpsilonRelease
            ``coef_``, ``intercept_`` and their derivatives in ``epsilon``.
        """
        self._check_weight_params(X, y, sample_weight, groups)
        return self._fit_release(X, y, **_fit_params(sample_weight, groups))


PRIVATE_NORM_PERSON_REFUSAL = (
    "data_norm='private' is refused with groups: its differentially private quantile "
    "protects one row, not one person's rows (a person with many rows moves it by "
    "more). Pass a public data_norm.")


def check_person_params(estimator, groups):
    """Refuse, before any noise, what a fit with ``groups`` cannot calibrate per person:
    ``data_norm="private"`` (a row-level quantile)."""
    if groups is not None and estimator._private_norm():
        raise ValueError(f"{type(estimator).__name__}: {PRIVATE_NORM_PERSON_REFUSAL}")
