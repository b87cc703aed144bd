"""Confidence intervals of a fit with ``inference=True``: ``bse_``, ``conf_int`` and
``summary`` in statsmodels' layout (the intercept first, as ``const``).

Each estimator computes its point estimate and covariance (the sampling variability
and the privacy noise, whose law is known) from released values only, in the
coordinates of its augmented design (the intercept's last, divided by
``intercept_scaling``); :func:`public_coordinates` turns them into the reported
order. The derivations are in ``docs/privacy/inference.rst``.
"""

import numpy as np
import pandas as pd
from scipy import stats
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from ..exceptions import InferenceError
from ..mechanisms._glm_inference import (INFORMATION_SHARE, glm_inference,
                                         information_calibration, release_information)
from ..utils._secret_trial import in_secret_trial
from ._base import split_coefficients

SUMMARY_COLUMNS = ("coef", "std err", "lower", "upper")


def public_coordinates(theta, covariance, deviations=None, *, fit_intercept,
                       intercept_scaling):
    """The estimate, its covariance and bootstrap deviations in the reported order:
    the intercept (``c`` times the last augmented coordinate) first, then the
    features.

    Parameters
    ----------
    theta : ndarray of shape (dim,)
    covariance : ndarray of shape (dim, dim)
    deviations : ndarray of shape (draws, dim) or None
    fit_intercept : bool
    intercept_scaling : float

    Returns
    -------
    estimate : ndarray of shape (dim,)
    covariance : ndarray of shape (dim, dim)
    deviations : ndarray of shape (draws, dim) or None

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.linear_model._inference import public_coordinates
    >>> estimate, _, _ = public_coordinates(np.array([1.0, 2.0, 3.0]), np.eye(3),
    ...                                     fit_intercept=True, intercept_scaling=2.0)
    >>> estimate.tolist()
    [6.0, 1.0, 2.0]
    """
    dim = theta.size
    order, scale = np.arange(dim), np.ones(dim)
    if fit_intercept:
        order = np.r_[dim - 1, np.arange(dim - 1)]
        scale[0] = float(intercept_scaling)
    return (theta[order] * scale, covariance[np.ix_(order, order)] * np.outer(scale, scale),
            None if deviations is None else deviations[:, order] * scale)


IQR_PER_SD = 2.0 * stats.norm.ppf(0.75)
"""The interquartile range of a normal law in standard deviations (1.349)."""


def bootstrap_standard_errors(deviations):
    """The standard errors of bootstrap deviations: their interquartile range over
    :data:`IQR_PER_SD`, the standard deviation of a normal law of that spread.

    Robust where the bootstrap's law has heavy tails (a noisy matrix near the refusal
    rule), where a standard deviation would be dominated by a few draws that the
    intervals' quantiles ignore; for normal deviations it is their standard deviation.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.linear_model._inference import bootstrap_standard_errors
    >>> draws = np.random.default_rng(0).normal(0.0, [1.0, 3.0], (100_000, 2))
    >>> np.round(bootstrap_standard_errors(draws), 1).tolist()
    [1.0, 3.0]
    """
    return stats.iqr(deviations, axis=0) / IQR_PER_SD


def _has_inference(estimator):
    return bool(getattr(estimator, "inference", False))


INFERENCE_ATTRIBUTES = ("bse_", "bootstrap_deviations_", "df_resid_", "_intervals_refusal")


class InferenceMixin:
    """``conf_int`` and ``summary`` for a fitted model with ``inference=True``.

    Each fit first clears the intervals of an earlier fit (:meth:`_clear_inference`);
    one with ``inference=True`` then sets, through :meth:`_set_inference`, ``bse_``
    (standard errors, intercept first) and either ``bootstrap_deviations_`` (draws of
    the estimate minus the parameter from a parametric bootstrap with the noise's
    exact law: basic bootstrap intervals) or, without noise, ``df_resid_`` (Student t
    intervals, ``inf`` for normal ones). The intervals are ``intercept_`` and ``coef_``
    minus the deviations' quantiles (or plus and minus the t quantile's multiple of
    ``bse_``).
    """

    def _clear_inference(self):
        for name in INFERENCE_ATTRIBUTES:
            self.__dict__.pop(name, None)

    def _refuse_intervals(self, error):
        """Refuse the intervals: an :class:`~skdp.InferenceError` that releases nothing
        (:func:`~skdp.base.atomic_fit` restores the attributes of before the fit); in a
        composer's secret trial the model is kept without intervals and the refusal
        noted in ``_intervals_refusal`` (the composer treats the trial as failed and
        never releases it: :mod:`skdp.utils._secret_trial`)."""
        if in_secret_trial():
            self._intervals_refusal = str(error)
            return None
        raise InferenceError(f"{type(self).__name__}: {error}") from None

    def _set_inference(self, inference):
        """Keep the standard errors of a
        :class:`~skdp.mechanisms._sufficient_statistics.LinearInference` (augmented
        coordinates) in the reported order, and what its intervals need; its
        estimate must be the fitted ``(coef_, intercept_)``. With bootstrap
        deviations the standard errors are theirs (:func:`bootstrap_standard_errors`),
        so that ``bse_`` and ``conf_int`` describe one law."""
        _, covariance, deviations = public_coordinates(
            inference.theta, inference.covariance, inference.deviations,
            fit_intercept=self.fit_intercept, intercept_scaling=self.intercept_scaling)
        if deviations is None:
            self.bse_ = np.sqrt(np.diag(covariance))
            self.df_resid_ = float(inference.df)
        else:
            self.bse_ = bootstrap_standard_errors(deviations)
            self.bootstrap_deviations_ = deviations

    def _estimates(self):
        coef = np.ravel(self.coef_)
        return np.r_[np.ravel(self.intercept_)[:1], coef] if self.fit_intercept else coef

    def _coefficient_names(self):
        names = getattr(self, "feature_names_in_", None)
        names = ([f"x{i}" for i in range(self.n_features_in_)] if names is None
                 else [str(name) for name in names])
        return ["const", *names] if self.fit_intercept else names

    @available_if(_has_inference)
    def conf_int(self, alpha=0.05):
        """Confidence intervals of the intercept and the coefficients.

        They cover the population minimiser of the unpenalised loss on the clipped
        rows (see ``docs/privacy/inference.rst``) with probability ``1 - alpha``,
        accounting for both the sampling variability and the privacy noise.

        Parameters
        ----------
        alpha : float, default=0.05
            One minus the nominal coverage.

        Returns
        -------
        intervals : ndarray of shape (n_coefficients, 2)
            One row per coefficient, the intercept's first (when fitted): lower and
            upper bounds.
        """
        check_is_fitted(self, "bse_")
        if not 0 < alpha < 1:
            raise ValueError(f"alpha must be in (0, 1), got {alpha!r}.")
        estimates = self._estimates()
        if hasattr(self, "bootstrap_deviations_"):   # basic bootstrap
            low, high = np.quantile(self.bootstrap_deviations_, [alpha / 2, 1 - alpha / 2],
                                    axis=0)
            return np.c_[estimates - high, estimates - low]
        quantile = (stats.norm.ppf(1 - alpha / 2) if np.isinf(self.df_resid_)
                    else stats.t.ppf(1 - alpha / 2, self.df_resid_))
        return np.c_[estimates - quantile * self.bse_, estimates + quantile * self.bse_]

    @available_if(_has_inference)
    def summary(self, alpha=0.05):
        """The coefficients with their standard errors and intervals.

        Parameters
        ----------
        alpha : float, default=0.05
            One minus the nominal coverage of the intervals.

        Returns
        -------
        table : pandas.DataFrame
            Indexed by ``const`` and the feature names (those of a DataFrame ``X``,
            else ``x0``, ``x1``, ...), with columns ``coef``, ``std err``, ``lower``
            and ``upper`` (statsmodels' layout).

        Examples
        --------
        >>> import numpy as np
        >>> import pandas as pd
        >>> from skdp import SSPLinearRegression
        >>> rng = np.random.default_rng(0)
        >>> X = pd.DataFrame(rng.uniform(-1, 1, (5000, 2)), columns=["age", "dose"])
        >>> y = 1.0 + X @ [1.0, -2.0] + rng.normal(0, 1, 5000)
        >>> model = SSPLinearRegression(epsilon=1.0, data_norm=1.5, y_bound=8.0,
        ...                             inference=True, random_state=0).fit(X, y)
        >>> model.summary().index.tolist(), model.conf_int().shape
        (['const', 'age', 'dose'], (3, 2))
        """
        intervals = self.conf_int(alpha)
        return pd.DataFrame(np.c_[self._estimates(), self.bse_, intervals],
                            index=self._coefficient_names(), columns=list(SUMMARY_COLUMNS))


GLM_INFERENCE_OPTIONS = (
    "inference=True gives intervals for one binary problem fitted in memory, unweighted, "
    "with a loss whose information it releases (the logistic loss's Hessian, also the "
    "covariance of its gradient; for output perturbation, the Huber loss's Hessian and "
    "gradient covariance): ")

SANDWICH_LOSSES = ("huber",)
"""Losses whose gradient covariance ``J`` is not their Hessian ``H``: ``inference=True``
releases both and the covariance is the sandwich ``H^{-1} J H^{-1}``."""


class GLMInferenceMixin(InferenceMixin):
    """``inference=True`` for a perturbed logistic regression (objective or output
    perturbation): a noisy information matrix released with
    :data:`~skdp.mechanisms._glm_inference.INFORMATION_SHARE` of the budget, the
    one-step correction of the ridge's bias and its intervals
    (:func:`~skdp.mechanisms._glm_inference.glm_inference`); for a loss in
    :data:`SANDWICH_LOSSES` the share pays for both ``H~`` and ``J~``."""

    _inference_losses = ("logistic",)
    """The values of ``loss`` that ``inference=True`` accepts."""

    def _mechanism_budget(self):
        """The ``(epsilon, delta)`` of the estimator's own mechanism: all of it, or
        all but the information matrix's share with ``inference``."""
        epsilon, delta = self._mechanism_epsilon(), float(self.delta)
        if not self.inference:
            return epsilon, delta
        return epsilon * (1 - INFORMATION_SHARE), delta * (1 - INFORMATION_SHARE)

    def _check_glm_inference_options(self, partitioned, sample_weight, groups,
                                     more_refusals=()):
        """Refuse, before any noise, the options under which ``inference=True`` has no
        valid interval here (two classes are checked again once the labels are read:
        :meth:`_check_two_classes`)."""
        if not self.inference:
            return
        losses = " or ".join(f"loss={loss!r}" for loss in self._inference_losses)
        refusals = [(self.loss not in self._inference_losses, f"set {losses}"),
                    (partitioned, "fit on rows in memory"),
                    (sample_weight is not None or self.class_weight is not None,
                     "pass no sample_weight or class_weight"),
                    (groups is not None, "pass no groups"),
                    (self.classes is not None and len(self.classes) != 2, "fit two classes"),
                    *more_refusals]
        for refused, remedy in refusals:
            if refused:
                raise ValueError(f"{type(self).__name__}: {GLM_INFERENCE_OPTIONS}{remedy}.")

    def _check_two_classes(self):
        if self.inference and len(self.classes_) != 2:
            raise ValueError(f"{type(self).__name__}: {GLM_INFERENCE_OPTIONS}fit two classes.")

    def _information_calibration(self, loss, weight_bound):
        """The noise of one Gram-like release with row weights in ``[0, weight_bound]``
        at the information's share of the budget (split in two for a sandwich)."""
        return information_calibration(
            self._mechanism_epsilon() * INFORMATION_SHARE, float(self.delta) * INFORMATION_SHARE,
            smoothness=weight_bound, data_norm=self.data_norm_,
            intercept_scaling=self.intercept_scaling if self.fit_intercept else 0.0,
            n_features=self.n_features_in_, neighboring=self.neighboring,
            parts=2 if loss.name in SANDWICH_LOSSES else 1)

    def _release_information(self, design, targets, theta, loss, rng):
        """The loss's Hessian sum at the released ``theta``, with noise from the noise
        stream ``rng`` at the information matrix's share of the budget; returns it
        with its calibration."""
        calibration = self._information_calibration(loss, loss.smoothness)
        curvature = loss.hessian(targets * (design @ theta))
        return release_information(design.weighted_gram(curvature), calibration, rng), calibration

    def _release_gradient_covariance(self, design, targets, theta, loss, rng):
        """For a loss in :data:`SANDWICH_LOSSES`, ``J~ = sum_i l'_i^2 z_i z_i^T`` plus
        noise (weight bound ``lipschitz^2``, after ``H~`` in the noise stream); else
        ``None`` (``J = H``)."""
        if loss.name not in SANDWICH_LOSSES:
            return None
        calibration = self._information_calibration(loss, loss.lipschitz**2)
        slopes = loss.grad(targets * (design @ theta)) ** 2
        return release_information(design.weighted_gram(slopes), calibration, rng)

    def _set_fitted(self, releases):
        """The fitted model, and with ``inference`` its corrected coefficients and
        intervals (a solver's failure is raised first, then the intervals' refusal)."""
        self._clear_inference()
        inference = None
        if self.inference:
            self._check_converged(releases)
            solution = releases[0]
            inference = self._glm_inference(
                solution.theta, solution.information, solution.information_calibration,
                **self._inference_mechanism(solution))
        super()._set_fitted(releases)
        if inference is not None:
            self._set_glm_inference(inference)

    def _glm_inference(self, theta, information, calibration, **mechanism):
        """:func:`~skdp.mechanisms._glm_inference.glm_inference`, or its refusal
        (:meth:`_refuse_intervals`)."""
        try:
            return glm_inference(theta, information, calibration=calibration, **mechanism)
        except InferenceError as error:
            return self._refuse_intervals(error)

    def _set_glm_inference(self, inference):
        """``coef_`` and ``intercept_`` become the corrected estimate, with its
        intervals."""
        self.coef_, self.intercept_ = split_coefficients(
            inference.theta, self.n_features_in_, self.fit_intercept, self.intercept_scaling)
        self._set_inference(inference)
