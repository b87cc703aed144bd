"""Paper-faithful NAPP variants that are NOT differentially private (research modes).

Reconstructions of Li & Liu's MOOR iterations, NAPP-VS / VS+ and the recycling
loop of Algorithm 2, in the ``n_aug -> infinity`` limit of the pseudo-rows (each
iteration's weighted-ridge objective is solved exactly). ``docs/privacy/napp.rst``
and the exact audits of :mod:`skdp.audit` show why none of them is DP:

* MOOR: weights ``max(Delta, u_j(theta^(t)))`` computed from the previous
  iterate of the same data and noise; the fixed point's penalty has zero
  curvature on ``0 < |theta_j| < alpha / Delta``.
* VS+: the DP term ``sum_j |b_j| |theta_j|`` with half-distribution noise; an
  output event has probability 0 under one dataset and about 0.22 under its
  neighbour.
* VS: the same with noise left-truncated at ``t0 < 0``; non-convex objective.
* Recycling: a second run on the same data with a noise level chosen from
  the first run's output; composition costs both runs.

:class:`ResearchNAPPLasso` and :class:`ResearchNAPPLassoClassifier` run them:
they warn with :class:`~skdp.exceptions.PrivacyLeakWarning`, set
``privacy_guarantee_=False`` and report ``epsilon_spent_=inf``. No public estimator
of :mod:`skdp.linear_model` imports this module.
"""

import warnings
from numbers import Real

import numpy as np
from scipy import stats

from ..exceptions import PrivacyLeakWarning
from ..linear_model import NAPPLasso, NAPPLassoClassifier
from ..linear_model._napp._mechanism import NAPPSolution, build_problem
from ..mechanisms import draw_noise
from ..mechanisms._napp import (jacobian_curvature, jacobian_epsilon, napp_calibration,
                                napp_gaussian_std)
from ..solvers import CompositeProblem, solve_composite, solve_napp
from ..utils._sklearn_compat import Interval, StrOptions

RESEARCH_MODES = ("moor", "vs", "vs_plus", "recycling")


def moor_iterations(X, y, loss, penalty, noise, *, floor, coef_bound, n_iter, solver):
    """MOOR fixed-point iteration: ``theta <- argmin sum l + <b, theta> + 1/2 sum w_j theta_j^2``.

    ``w_j = max(floor, u_j(theta_prev))`` with ``u`` the penalty's LQA weight;
    start ``max(alpha, floor)``. Returns ``(theta, weights)``.
    """
    d = X.shape[1]
    base = penalty.l1_weight + penalty.l2_weight + penalty.bridge_weight * penalty.q
    cap = 1e8 * max(1.0, floor, base)
    weights = np.full(d, max(base, floor))
    theta = np.zeros(d)
    total = 0
    for _ in range(n_iter):
        problem = CompositeProblem(X, y, loss, noise, 0.0, weights, 0.0, 2.0, coef_bound)
        result = solve_composite(problem, theta, tol=solver["tol"], max_iter=solver["max_iter"])
        theta, total = result.theta, total + result.n_iter
        weights = np.maximum(floor, penalty.lqa_weight(theta, cap))
    big = np.max(np.abs(theta), initial=0.0)
    theta = np.where(np.abs(theta) < 1e-8 * big, 0.0, theta)
    return theta, weights, total


def _solution(theta, n_iter, calibration, draw, X, y, loss):
    problem = CompositeProblem(X, y, loss, np.zeros(X.shape[1]), 0.0, 0.0)
    return NAPPSolution(theta, n_iter, n_iter, np.nan, True, calibration, draw, problem)


def research_moor(X, y, loss, penalty, calibration, rng, *, coef_bound, n_iter, solver):
    """Paper MOOR: default calibration, weights ``max(Delta, u_j)`` iterated (not DP)."""
    draw = draw_noise(calibration.noise, X.shape[1], rng)
    noise = np.zeros(X.shape[1]) if draw is None else draw.vector(calibration.noise_scale)
    theta, _, total = moor_iterations(X, y, loss, penalty, noise, floor=calibration.curvature,
                                      coef_bound=coef_bound, n_iter=n_iter, solver=solver)
    return _solution(theta, total, calibration, draw, X, y, loss)


def truncated_noise(calibration, dim, rng, truncation):
    """Noise of spec Eqs 9-10: the DP law left-truncated at ``truncation`` in every coordinate.

    ``truncation = 0`` (VS+): reflection ``|b_j|`` of the untruncated draw
    (valid for sign-symmetric laws). ``truncation < 0`` (VS): exact truncated
    normal per coordinate (Gaussian); rejection sampling of whole vectors for
    the Gamma-norm law.
    """
    scale = calibration.noise_scale
    if calibration.noise == "none":
        return np.zeros(dim)
    if truncation == 0.0:
        return np.abs(draw_noise(calibration.noise, dim, rng).vector(scale))
    if calibration.noise == "gaussian":
        a = truncation / scale
        return stats.truncnorm.rvs(a, np.inf, scale=scale, size=dim, random_state=rng)
    for _ in range(200):
        radius = rng.gamma(dim, scale, size=2000)
        direction = rng.standard_normal((2000, dim))
        direction /= np.linalg.norm(direction, axis=1, keepdims=True)
        vectors = radius[:, None] * direction
        ok = np.flatnonzero(np.all(vectors >= truncation, axis=1))
        if len(ok):
            return vectors[ok[0]]
    raise ValueError(f"vs_truncation={truncation} is too close to 0 for {dim} coordinates: "
                     "the truncated Gamma-norm law could not be sampled by rejection. Use a "
                     "more negative truncation.")


def default_truncation(calibration, dim):
    """Our default ``t0`` for VS (the paper's value is lost): -2 coordinate standard deviations."""
    if calibration.noise == "gamma_norm":
        return -2.0 * calibration.noise_scale * np.sqrt(dim + 1.0)
    return -2.0 * calibration.noise_scale


def research_vs(X, y, loss, penalty, calibration, rng, *, coef_bound, truncation, n_iter,
                solver):
    """NAPP-VS (``truncation < 0``) and VS+ (``truncation = 0``): DP term ``sum_j b_j |theta_j|``.

    VS+ (every ``b_j >= 0``) is a weighted lasso, solved exactly: exact zeros.
    VS uses the paper's sign iteration: the term is realised as
    ``sum_j sign(theta_j^(t)) b_j theta_j``; coordinates whose sign still flips
    in the last iterations are set to 0.
    """
    d = X.shape[1]
    b = truncated_noise(calibration, d, rng, truncation)
    if truncation == 0.0:
        problem = build_problem(X, y, loss, penalty, linear=np.zeros(d),
                                extra_ridge=calibration.extra_ridge, coef_bound=coef_bound)
        problem.l1 = problem.l1 + b
        result = solve_napp(problem, **solver)
        return _solution(result.theta, result.n_iter, calibration, None, X, y, loss)
    signs = np.ones(d)
    flips = np.zeros(d, dtype=int)
    theta = np.zeros(d)
    total = 0
    for it in range(n_iter):
        problem = build_problem(X, y, loss, penalty, linear=signs * b,
                                extra_ridge=calibration.extra_ridge, coef_bound=coef_bound)
        result = solve_napp(problem, theta0=theta, **solver)
        theta, total = result.theta, total + result.n_iter
        new_signs = np.where(theta != 0, np.sign(theta), signs)
        if it >= n_iter - 5:
            flips += new_signs != signs
        signs = new_signs
    theta = np.where(flips > 0, 0.0, theta)
    return _solution(theta, total, calibration, None, X, y, loss)


def research_recycling(X, y, loss, penalty, calibration, rng, *, coef_bound, n_iter, solver):
    """Algorithm 2 as the paper states it (spec section 8), one recycling round.

    First run: MOOR. Retrieval (Eq 13): ``Delta* = min_j w_j``,
    ``eps_r = max(0, eps_J - log(1 + beta_H / Delta*))``. When ``eps_r > 0``
    the mechanism runs again on the same data with ``eps_b + eps_r`` and weights
    ``max(u_j, Delta, Delta')``, ``Delta' = beta_H / (exp(eps_J - eps_r) - 1)``
    (Eqs 14-15), and releases the second run.
    """
    d = X.shape[1]
    draw = draw_noise(calibration.noise, d, rng)
    noise = np.zeros(d) if draw is None else draw.vector(calibration.noise_scale)
    theta, weights, total = moor_iterations(X, y, loss, penalty, noise,
                                            floor=calibration.curvature,
                                            coef_bound=coef_bound, n_iter=n_iter, solver=solver)
    if draw is None:
        return _solution(theta, total, calibration, draw, X, y, loss)
    eps_j = calibration.eps_jacobian
    eps_r = max(0.0, eps_j - jacobian_epsilon(np.min(weights), calibration.hessian_bound))
    if eps_r <= 0.0:
        return _solution(theta, total, calibration, draw, X, y, loss)
    floor = max(calibration.curvature,
                jacobian_curvature(eps_j - eps_r, calibration.hessian_bound)
                if eps_j > eps_r else np.inf)
    if calibration.noise == "gaussian":
        scale = napp_gaussian_std(calibration.eps_noise + eps_r, calibration.delta,
                                  calibration.sensitivity, calibration.neighboring)
    else:
        scale = calibration.sensitivity / (calibration.eps_noise + eps_r)
    second = draw_noise(calibration.noise, d, rng)
    theta, _, more = moor_iterations(X, y, loss, penalty, second.vector(scale), floor=floor,
                                     coef_bound=coef_bound, n_iter=n_iter, solver=solver)
    return _solution(theta, total + more, calibration, second, X, y, loss)


class _ResearchNAPP:
    """A NAPP estimator whose release is a published variant that is NOT private.

    Takes every parameter of the NAPP estimator it extends, plus ``research_mode``
    and ``vs_truncation``; it is never differentially private.
    """

    _research_constraints = {
        "research_mode": [StrOptions(set(RESEARCH_MODES))],
        "vs_truncation": [Interval(Real, None, 0, closed="neither"), None],
    }

    def __init__(self, *, research_mode="moor", vs_truncation=None, **params):
        super().__init__(**params)
        self.research_mode = research_mode
        self.vs_truncation = vs_truncation

    @classmethod
    def _private_estimator(cls):
        """The private NAPP estimator this research variant extends."""
        return next(c for c in cls.__mro__ if c not in (cls, _ResearchNAPP))

    @classmethod
    def _get_param_names(cls):
        # the private estimator's parameters (its signature) and the two of research
        return sorted({*cls._private_estimator()._get_param_names(), "research_mode",
                       "vs_truncation"})

    def _check_params(self, n_coefficients):
        super()._check_params(n_coefficients)
        if self.adaptive_two_stage:
            raise ValueError("research_mode cannot be combined with adaptive_two_stage=True.")

    def _partitioned_refusal(self, with_derivative):
        return (f"{type(self).__name__} (a research variant, not private) does not fit on "
                "a dask array.")

    def _check_groups(self, groups):
        if groups is not None:
            raise ValueError(f"{type(self).__name__} (a research variant, not private) does "
                             "not take groups: it has no privacy guarantee for a row, let "
                             "alone for a person.")

    def _claimed_spend(self):
        """``(inf, delta)``: a research variant is not differentially private."""
        return np.inf, float(self.delta)

    def _has_epsilon_derivative(self):
        return False

    def _mechanism_name(self):
        return f"research:{self.research_mode}"

    def _check_converged(self, releases):
        """The research variants are reproduced as published, certificate or not."""

    def _release_problem(self, X, y, loss, penalty, common):
        calibration = napp_calibration(
            common["epsilon"], common["delta"], gradient_bound=common["gradient_bound"],
            hessian_bound=common["hessian_bound"],
            penalty_curvature=penalty.strong_convexity(self.coef_bound),
            eps_jacobian_frac=self.eps_jacobian_frac, neighboring=self.neighboring)
        kw = dict(coef_bound=self.coef_bound, n_iter=self.napp_max_iter,
                  solver=common["solver"])
        rng = common["rng"]
        if self.research_mode == "moor":
            return research_moor(X, y, loss, penalty, calibration, rng, **kw)
        if self.research_mode == "recycling":
            return research_recycling(X, y, loss, penalty, calibration, rng, **kw)
        if self.research_mode == "vs_plus":
            truncation = 0.0
        else:
            truncation = (default_truncation(calibration, X.shape[1])
                          if self.vs_truncation is None else self.vs_truncation)
        return research_vs(X, y, loss, penalty, calibration, rng, truncation=truncation, **kw)

    def _set_fitted(self, solutions):
        super()._set_fitted(solutions)
        warnings.warn(
            f"research_mode={self.research_mode!r} reproduces a published NAPP variant that "
            "is NOT differentially private (docs/privacy/napp.rst: exact audits find "
            "violations). privacy_guarantee_=False and epsilon_spent_=inf; use "
            f"{self._private_estimator().__name__} for a private fit.", PrivacyLeakWarning,
            stacklevel=4)
        self.privacy_guarantee_ = False
        self._record_spend(np.inf, self.delta, self.neighboring)


class ResearchNAPPLasso(_ResearchNAPP, NAPPLasso):
    """:class:`~skdp.NAPPLasso` with a published NAPP variant that is NOT private.

    For research only (reproducing the source paper): MOOR, VS, VS+ and
    recycling, audited in ``docs/privacy/napp.rst``. Every fit warns with
    :class:`~skdp.exceptions.PrivacyLeakWarning` and reports ``epsilon_spent_ =
    inf``.

    Parameters
    ----------
    research_mode : {"moor", "vs", "vs_plus", "recycling"}, default="moor"
        The published variant.
    vs_truncation : float or None, default=None
        Left truncation ``t0 < 0`` of the noise of ``research_mode="vs"``;
        ``None`` means two coordinate standard deviations below 0.
    **params
        Every parameter of :class:`~skdp.NAPPLasso`.

    See Also
    --------
    skdp.NAPPLasso : the private estimator.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from skdp.research import ResearchNAPPLasso
    >>> rng = np.random.default_rng(0)
    >>> X, y = rng.normal(size=(100, 3)) / 2, rng.normal(size=100)
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     est = ResearchNAPPLasso(y_bound=3.0, coef_bound=5.0, random_state=0).fit(X, y)
    >>> est.epsilon_spent_, est.privacy_guarantee_
    (inf, False)
    """

    _parameter_constraints = {**NAPPLasso._parameter_constraints,
                              **_ResearchNAPP._research_constraints}


class ResearchNAPPLassoClassifier(_ResearchNAPP, NAPPLassoClassifier):
    """:class:`~skdp.NAPPLassoClassifier` with a published NAPP variant that is NOT private.

    For research only; see :class:`ResearchNAPPLasso`.

    Parameters
    ----------
    research_mode : {"moor", "vs", "vs_plus", "recycling"}, default="moor"
        The published variant.
    vs_truncation : float or None, default=None
        Left truncation ``t0 < 0`` of the noise of ``research_mode="vs"``.
    **params
        Every parameter of :class:`~skdp.NAPPLassoClassifier`.

    See Also
    --------
    skdp.NAPPLassoClassifier : the private estimator.
    """

    _parameter_constraints = {**NAPPLassoClassifier._parameter_constraints,
                              **_ResearchNAPP._research_constraints}
