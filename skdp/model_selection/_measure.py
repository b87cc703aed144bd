"""One measuring fit of EpsilonForUtility: utility, its derivative in epsilon, the spend.

The derivative comes from the estimator's own ``fit_release`` when its privacy tags
declare one (:class:`~skdp.base.PrivacyTags`), else from common-noise reruns; the
utility's derivative follows from the scores, which are affine in the coefficients.
:class:`_NoiseSources` hands each internal fit its noise source, and
:func:`compose_fits` adds the certified spends of independent fits.
"""

import secrets

import numpy as np
from scipy.special import expit
from sklearn.base import clone
from sklearn.metrics import check_scoring

from ..base import copy_with_coefficients, get_privacy_tags
from ..utils._random import _seed_sequence


def _scores(estimator, X):
    """Raw scores of a fitted linear estimator: decision function or prediction."""
    if hasattr(estimator, "decision_function"):
        return np.asarray(estimator.decision_function(X), dtype=float)
    return np.asarray(estimator.predict(X), dtype=float)


def _with_coefficients(estimator, coef, intercept):
    """A copy of the fitted ``estimator`` with other coefficients; never the estimator itself.

    Estimators of the private contract provide ``with_coefficients``; any other
    linear model gets :func:`~skdp.base.copy_with_coefficients`.
    """
    if hasattr(estimator, "with_coefficients"):
        return estimator.with_coefficients(coef, intercept)
    return copy_with_coefficients(estimator, coef, intercept)


def _score_derivative(estimator, X, dcoef, dintercept):
    """``d scores / d epsilon``: the scores are linear in ``(coef_, intercept_)``."""
    return _scores(_with_coefficients(estimator, dcoef, dintercept), X)


def _true_class_margins(estimator, scores, y):
    """Margin of the true class over the best other class, and its selector."""
    if scores.ndim == 1:
        sign = np.where(y == estimator.classes_[1], 1.0, -1.0)
        return sign * scores, lambda ds: sign * ds
    true = np.searchsorted(estimator.classes_, y)
    rows = np.arange(len(y))
    others = scores.copy()
    others[rows, true] = -np.inf
    rival = others.argmax(axis=1)
    return (scores[rows, true] - scores[rows, rival],
            lambda ds: ds[rows, true] - ds[rows, rival])


def smoothed_accuracy_derivative(estimator, X, y, dcoef, dintercept):
    """Derivative in epsilon of a kernel-smoothed accuracy.

    Accuracy is the mean of ``1[r_i > 0]`` for the true-class margins ``r_i``;
    it is replaced by the mean of ``expit(r_i / tau)``, whose bandwidth ``tau``
    follows Silverman's rule on the margins (``tau = 0.55 * 1.06 * std(r) *
    n**(-1/5)``, the 0.55 matching a logistic kernel to a Gaussian one), and
    differentiated along the path.

    Parameters
    ----------
    estimator : fitted classifier
        A linear classifier with ``decision_function`` and ``classes_``.
    X : array-like of shape (n_samples, n_features)
        The rows the accuracy is measured on.
    y : array-like of shape (n_samples,)
        Their labels.
    dcoef, dintercept : ndarray
        The derivative in epsilon of ``coef_`` and ``intercept_``.

    Returns
    -------
    derivative : float
        ``d accuracy / d epsilon`` of the smoothed accuracy.
    """
    scores = _scores(estimator, X)
    margins, select = _true_class_margins(estimator, scores, np.asarray(y))
    spread = np.std(margins)
    if spread == 0:
        return 0.0
    tau = 0.55 * 1.06 * spread * len(margins) ** (-0.2)
    dmargins = select(_score_derivative(estimator, X, dcoef, dintercept))
    p = expit(margins / tau)
    return float(np.mean(p * (1.0 - p) * dmargins) / tau)


def _scorer_derivative(scorer, estimator, X, y, dcoef, dintercept):
    """Central difference of a smooth scorer along the tangent ``(dcoef, dintercept)``."""
    size = max(np.max(np.abs(dcoef)), np.max(np.abs(dintercept)), 1e-300)
    scale = max(np.max(np.abs(estimator.coef_)), np.max(np.abs(estimator.intercept_)), 1.0)
    h = 1e-5 * scale / size
    values = []
    for sign in (1.0, -1.0):
        moved = _with_coefficients(
            estimator, estimator.coef_ + sign * h * np.reshape(dcoef, np.shape(estimator.coef_)),
            estimator.intercept_ + sign * h * np.reshape(dintercept,
                                                         np.shape(estimator.intercept_)))
        values.append(scorer(moved, X, y))
    return float((values[0] - values[1]) / (2.0 * h))


def _crn_fit_derivative(estimator, X, y, rel_step=1e-4):
    """Common-random-number central difference: two extra fits with the same noise.

    The three fits share one noise source (a generator that ``clone`` copies), so
    their spends do not compose: the report counts them as one noise draw.
    """
    if estimator.random_state is None:
        estimator.set_params(random_state=_secret_generator())
    epsilon = estimator.epsilon
    h = rel_step * epsilon
    ends = [clone(estimator).set_params(epsilon=epsilon + s * h).fit(X, y) for s in (1, -1)]
    estimator.fit(X, y)
    dcoef = (ends[0].coef_ - ends[1].coef_) / (2 * h)
    dintercept = (np.asarray(ends[0].intercept_) - np.asarray(ends[1].intercept_)) / (2 * h)
    return dcoef, dintercept, ends


def _secret_generator():
    """A generator keyed from ``secrets``, for fits that must share one secret draw."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(secrets.randbits(256))))


def _fit_record(estimator, purpose, draw):
    """What the report keeps of one internal fit: its certified spend and noise draw."""
    return {"epsilon": float(estimator.epsilon_spent_), "delta": float(estimator.delta_spent_),
            "purpose": purpose, "noise_draw": draw}


def _measure(estimator, epsilon, draw, random_state, X_fit, y_fit, X_eval, y_eval, scoring,
             purpose):
    """One measuring fit: utility and its pathwise derivative at ``epsilon``.

    ``draw`` labels the fit's noise draw in the report (fits with one label share
    their noise); ``random_state`` is ``None`` (fresh cryptographic noise) or, in
    reproducibility mode, a generator derived for this fit alone.
    """
    estimator = clone(estimator).set_params(epsilon=epsilon, random_state=random_state)
    if get_privacy_tags(estimator).epsilon_derivative:
        release = estimator.fit_release(X_fit, y_fit)
        dcoef, dintercept = release.coef_derivative, release.intercept_derivative
        extra_fits = []
    else:
        # no path for this estimator or configuration: common-noise reruns
        dcoef, dintercept, extra_fits = _crn_fit_derivative(estimator, X_fit, y_fit)
    scorer = check_scoring(estimator, scoring=scoring)
    utility = float(scorer(estimator, X_eval, y_eval))
    if scoring == "accuracy":
        derivative = smoothed_accuracy_derivative(estimator, X_eval, y_eval, dcoef, dintercept)
    else:
        derivative = _scorer_derivative(scorer, estimator, X_eval, y_eval, dcoef, dintercept)
    fits = [_fit_record(estimator, purpose, draw)]
    fits += [_fit_record(end, purpose + " (common-noise difference)", draw)
             for end in extra_fits]
    return {"epsilon": float(epsilon), "draw": draw, "utility": utility,
            "derivative": derivative, "purpose": purpose, "fits": fits}


class _NoiseSources:
    """The ``random_state`` of each internal fit; nothing derived is ever stored.

    With every ``random_state`` ``None`` each internal fit gets ``None``: fresh
    cryptographic noise, independent across fits. Otherwise (reproducibility mode)
    fit ``k`` gets a generator of its own, derived from the given seed on branch
    ``k`` of a seed sequence: reproducible and independent across fits.
    """

    def __init__(self, *random_states):
        given = [rs for rs in random_states if rs is not None]
        self._root = None if not given else _seed_sequence(given[0])
        self._count = 0

    def next(self):
        """``(draw label, random_state)`` of the next internal fit."""
        draw, self._count = self._count, self._count + 1
        if self._root is None:
            return draw, None
        child = np.random.SeedSequence(self._root.entropy, spawn_key=(draw,))
        return draw, np.random.Generator(np.random.PCG64(child))

    def public(self):
        """A generator for public randomness (the validation split)."""
        if self._root is None:
            return np.random.default_rng()
        return np.random.default_rng(np.random.SeedSequence(self._root.entropy,
                                                            spawn_key=(2**32,)))


def compose_fits(fits):
    """Totals of the certified spends, or ``inf`` with the reason when they cannot add up.

    Parameters
    ----------
    fits : list of dict
        With ``epsilon``, ``delta`` (certified spend) and ``noise_draw`` (fits with
        one label share their noise).

    Returns
    -------
    total_epsilon, total_delta : float
    reason : str
        Empty when the totals are finite sums of independent fits.
    """
    draws = [f["noise_draw"] for f in fits]
    if len(set(draws)) < len(draws):
        return np.inf, 1.0, (
            "some internal fits share their noise (common-noise reruns of an estimator "
            "without an analytic derivative): their spends do not compose")
    total_epsilon = float(sum(f["epsilon"] for f in fits))
    total_delta = float(min(1.0, sum(f["delta"] for f in fits)))
    if not np.isfinite(total_epsilon):
        return np.inf, total_delta, ("a fit certified no finite epsilon (a research mode "
                                     "that is not differentially private)")
    return total_epsilon, total_delta, ""
