"""Paper-faithful NAPP variants that are NOT differentially private (research modes).

Reconstructions of Li & Liu's MOOR iterations, NAPP-VS / VS+ and the recycling
loop of Algorithm 2 (``spec/napp_erm.md`` sections 2.5, 4 and 8), in the
``n_aug -> infinity`` limit of the pseudo-rows (each iteration's weighted-ridge
objective is solved exactly). ``spec/napp_erm.md`` section 6 and the exact
audits of :mod:`._napp_audit` show why none of them is DP:

* MOOR: weights ``max(Delta, u_j(theta^(t)))`` computed from the previous
  iterate of the same data and noise; the fixed point's penalty has zero
  curvature on ``0 < |theta_j| < alpha / Delta``.
* VS+: the DP term ``sum_j |b_j| |theta_j|`` with half-distribution noise; an
  output event has probability 0 under one dataset and about 0.22 under its
  neighbour.
* VS: the same with noise left-truncated at ``t0 < 0``; non-convex objective.
* Recycling: a second run on the same data with a noise level chosen from
  the first run's output; composition costs both runs.

The estimators run them only behind ``research_mode``, warn with
:class:`~skdp.exceptions.PrivacyLeakWarning` and set ``privacy_guarantee_=False``.
"""

import numpy as np
from scipy import stats

from ..mechanisms import draw_noise
from ..mechanisms._napp import jacobian_curvature, jacobian_epsilon, napp_gaussian_std
from ._napp_mechanism import NAPPSolution, build_problem
from ..solvers import CompositeProblem, solve_composite, solve_napp

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
