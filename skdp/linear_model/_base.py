"""Pieces shared by the private linear classifiers."""

import numpy as np
import scipy.sparse as sp
from scipy.special import expit
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted, validate_data

from ..exceptions import ConvergenceError
from ..utils.validation import (augment_intercept, check_data_norm, clip_rows_to_norm,
                                row_clip_factors)


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
    design = np.empty((X.shape[0], X.shape[1] + 1))
    norms = np.sqrt(np.einsum("ij,ij->i", X, X))
    np.multiply(X, row_clip_factors(norms, data_norm)[:, None], out=design[:, :-1])
    design[:, -1] = intercept_scaling
    return design


def release_nothing(estimator):
    """Remove every fitted attribute, so that a failed fit leaves nothing behind."""
    for name in [k for k in vars(estimator) if k.endswith("_") and not k.startswith("_")]:
        delattr(estimator, name)


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
        classes_, y_idx = np.unique(y, return_inverse=True)
        check_two_classes(classes_)
        return classes_, y_idx
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


class _LinearClassifierMixin:
    """Prediction for linear classifiers fitted on rows clipped to ``data_norm``.

    The model was fitted on clipped rows, so prediction clips the rows the same
    way: the decision function is that of the clipped row.
    """

    def _prediction_input(self, X):
        X = validate_data(self, X, dtype=np.float64, reset=False, accept_sparse=("csr", "csc"))
        return clip_rows_to_norm(X, self.data_norm)

    def decision_function(self, X):
        """Signed distance to the separating hyperplane(s).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
            For two classes, positive scores favour ``classes_[1]``.
        """
        check_is_fitted(self)
        scores = np.asarray(self._prediction_input(X) @ self.coef_.T) + self.intercept_
        return scores.ravel() if scores.shape[1] == 1 else scores

    def predict(self, X):
        """Predict class labels.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
        """
        scores = self.decision_function(X)
        if scores.ndim == 1:
            indices = (scores > 0).astype(int)
        else:
            indices = scores.argmax(axis=1)
        return self.classes_[indices]

    def _set_fitted(self, thetas, n_coefficients, converged):
        """Fitted attributes and spend from the per-problem solutions.

        When the solver did not reach its public tolerance on every problem,
        nothing is released: the fitted attributes are removed and
        :class:`~skdp.ConvergenceError` is raised, with no statistic of
        the data in its message. The solver's iteration count depends on the
        private data and no guarantee covers it, so it is not kept (no ``n_iter_``).
        """
        if not all(converged):
            release_nothing(self)
            raise ConvergenceError(
                f"{type(self).__name__}: the solver did not reach the public tolerance "
                f"tol={self.tol} within max_iter={self.max_iter}; nothing is released. "
                "Increase max_iter, or tol if it is near the rounding level of the "
                "gradient (the tolerance is part of the privacy guarantee).")
        self.coef_, self.intercept_ = split_coefficients(
            thetas, n_coefficients, self.fit_intercept, self.intercept_scaling)
        self._record_spend(self.epsilon, self.delta, self.neighboring)

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

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
        """
        return self._probabilities(self.decision_function(X))

    @available_if(lambda self: self._has_proba())
    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        log_proba : ndarray of shape (n_samples, n_classes)
        """
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))
