"""The NAPP mechanisms as plain workers: arrays, loss, penalty and rng in; solutions out.

* :func:`napp_release` — the default (spec 7.1-7.2): exact minimiser of the Kifer
  objective with the target penalty and only the missing curvature, solved the
  NAPP way (:func:`~skdp.solvers.solve_napp`) and certified.
* :func:`napp_two_stage` — the adaptive estimator of spec 7.3: a default release
  with part of the budget, then a weighted ridge restricted to its support with
  dual-purpose weights, a-priori retrieval and recycling; composition adds up.
"""

from dataclasses import dataclass

import numpy as np

from ...mechanisms import SolverCover, draw_noise, split_budget
from ...mechanisms._dominance import noise_floor
from ...mechanisms._napp import MAX_JACOBIAN_EPSILON, jacobian_curvature, napp_calibration
from ...solvers import CompositeProblem, solve_napp
from ...solvers._design import as_design


@dataclass
class NAPPSolution:
    """One NAPP release, with what derivatives and audits need.

    Transient: returned by the workers, never stored on a fitted estimator (it
    holds the noise draw and the clipped private design).
    """

    theta: np.ndarray
    n_iter: int
    napp_iter: int
    residual: float
    converged: bool
    calibration: object
    draw: object
    problem: CompositeProblem
    support: np.ndarray = None
    stage1: object = None
    released: np.ndarray = None
    cover: object = None
    cover_draw: object = None

    @property
    def noise(self):
        if self.draw is None:
            return np.zeros(self.problem.X.shape[1])
        return self.draw.vector(self.calibration.noise_scale)

    def noise_floor(self):
        """The records whose largest gradients the linear noise outweighs
        (:func:`~skdp.mechanisms._dominance.noise_floor`)."""
        c = self.calibration
        return noise_floor(c.noise, self.problem.X.shape[1], c.noise_scale, c.gradient_bound)


def build_problem(X, y, loss, penalty, *, linear, extra_ridge, coef_bound):
    """The composite objective ``sum l + <b, theta> + P(theta) + extra_ridge/2 ||theta||^2``."""
    return CompositeProblem(X, y, loss, linear, penalty.l1_weight,
                            penalty.l2_weight + extra_ridge, penalty.bridge_weight, penalty.q,
                            coef_bound)


def solve_release(X, y, loss, penalty, calibration, draw, *, coef_bound, solver):
    """Solve one release for a given noise draw (the part EpsilonForUtility re-runs)."""
    noise = np.zeros(X.shape[1]) if draw is None else draw.vector(calibration.noise_scale)
    problem = build_problem(X, y, loss, penalty, linear=noise,
                            extra_ridge=calibration.extra_ridge, coef_bound=coef_bound)
    curvature = penalty.strong_convexity(coef_bound) + calibration.extra_ridge
    radius = distance_bound(problem, solver["tol"], curvature) if curvature > 0 else None
    result = solve_napp(problem, ball_radius=radius, **solver)
    return NAPPSolution(result.theta, result.n_iter + result.napp_iter, result.napp_iter,
                        result.residual, result.converged, calibration, draw, problem,
                        released=result.theta)


def distance_bound(problem, tol, strong_convexity):
    """Public bound on the distance of a certified point to the exact minimiser of ``F``.

    The certificate bounds the minimal subgradient's max-norm by ``tol``, so its
    2-norm by ``sqrt(d) tol``, and ``F`` is ``lambda``-strongly convex: ``r =
    sqrt(d) tol / lambda``. On a ball of radius ``B`` the bound is ``2 r``: there
    the solver certifies a bracket ``[lo, hi]`` of the ball's multiplier ``mu*``
    and releases the point solved at ``hi`` only when its distance to the exact
    ``theta(hi)`` plus the path's ``(hi - lo) B / (lambda + lo)`` from
    ``theta(hi)`` to ``theta(mu*)`` is at most this bound (``docs/privacy/napp.rst``).
    """
    radius = np.sqrt(problem.X.shape[1]) * tol / strong_convexity
    bound = problem.coef_bound
    if bound is not None and np.isfinite(bound):
        radius *= 2.0
    return radius


def cover_release(solution, epsilon_cover, tol, strong_convexity, cover_draw):
    """Add the cover's noise to a certified solution, then zero what the noise alone explains.

    The release is ``theta + W`` with ``W`` Gamma-norm of scale ``2 r / epsilon_cover``
    (:mod:`skdp.mechanisms._approximate_minima`); coordinates of the release below the
    public floor ``r + scale (d + 10 sqrt(d))`` (beyond the cover's norm with
    overwhelming probability) are set to zero, post-processing that keeps the exact
    zeros of a sparse solution. ``cover_draw`` is the standard Gamma-norm draw, made
    before the solver runs so that the solver's own use of the stream cannot move it.
    """
    if cover_draw is None:
        return solution
    d = solution.theta.shape[0]
    radius = distance_bound(solution.problem, tol, strong_convexity)
    cover = SolverCover(radius=radius, epsilon=epsilon_cover)
    released = solution.theta + cover_draw.vector(cover.scale)
    released[np.abs(released) <= radius + cover.scale * (d + 10.0 * np.sqrt(d))] = 0.0
    solution.released, solution.cover, solution.cover_draw = released, cover, cover_draw
    return solution


def napp_release(X, y, loss, penalty, *, epsilon, delta, gradient_bound, hessian_bound,
                 coef_bound, eps_jacobian_frac, neighboring, retrieval, solver, rng,
                 calibrate=napp_calibration, persons=False):
    """Default NAPP mechanism (spec 7.1): calibrate, draw ``b`` once, solve, certify, cover.

    ``X`` is the clipped (intercept-augmented) design, ``y`` the clipped target. The
    mechanism gets the share :func:`~skdp.mechanisms.split_budget` leaves it; the rest
    pays for the output noise that covers the solver's distance to the exact minimiser.
    With ``persons`` (``groups``) the bounds are a person's and the Jacobian is bounded
    for a Hessian difference of rank up to the number of coefficients ``X.shape[1]``.
    """
    budget = split_budget(epsilon, delta)
    mu = penalty.strong_convexity(coef_bound)
    calibration = calibrate(budget.epsilon_mechanism, budget.delta_mechanism,
                            gradient_bound=gradient_bound, hessian_bound=hessian_bound,
                            penalty_curvature=mu, eps_jacobian_frac=eps_jacobian_frac,
                            neighboring=neighboring, retrieval=retrieval, persons=persons,
                            dimension=X.shape[1])
    draw = draw_noise(calibration.noise, X.shape[1], rng)
    cover_draw = _cover_draw(draw, X.shape[1], rng)
    solution = solve_release(X, y, loss, penalty, calibration, draw, coef_bound=coef_bound,
                             solver=solver)
    return cover_release(solution, budget.epsilon_cover, solver["tol"],
                         mu + calibration.extra_ridge, cover_draw)


def _columns(X, index):
    """The design of some columns (a partitioned design's view, or in memory)."""
    return X.columns(index) if getattr(X, "partitioned", False) else as_design(X).columns(index)


def _cover_draw(draw, dim, rng):
    """The cover's standard draw (none when the release has no noise)."""
    return None if draw is None else draw_noise("gamma_norm", dim, rng)


class _RidgeWeights:
    """Penalty ``1/2 sum_j w_j theta_j^2`` with per-coordinate public weights."""

    def __init__(self, weights):
        self.l1_weight = 0.0
        self.l2_weight = np.asarray(weights, dtype=float)
        self.bridge_weight = 0.0
        self.q = 2.0

    def strong_convexity(self, coef_bound=None):
        return float(np.min(self.l2_weight, initial=np.inf))


def napp_two_stage(X, y, loss, penalty, *, epsilon, delta, gradient_bound, hessian_bound,
                   coef_bound, eps_jacobian_frac, neighboring, stage1_frac, solver, rng,
                   persons=False):
    """Two-stage adaptive NAPP (spec 7.3): rigorous MOOR, retrieval and recycling.

    Stage 1 is :func:`napp_release` with ``(stage1_frac * epsilon, stage1_frac *
    delta)``. Stage 2 only post-processes its output ``theta1``: the support
    ``S = {j : theta1_j != 0}`` and the dual-purpose weights
    ``w_j = max(Delta2, u_j(theta1))`` (``u`` the penalty's LQA weight) are
    public; the Jacobian then costs ``log(1 + beta_H / min_S w_j)`` and the
    rest of the stage-2 budget goes to a fresh noise vector on ``S``
    (recycling). Total budget by sequential composition: ``(epsilon, delta)``.
    With ``persons`` each stage bounds its Jacobian for a person's Hessian
    difference of rank up to its number of coefficients (``X.shape[1]``, then
    ``|S|``, public once stage 1 is released).
    """
    eps1, delta1 = stage1_frac * epsilon, stage1_frac * delta
    eps2, delta2 = (np.inf if np.isinf(epsilon) else epsilon - eps1), delta - delta1
    first = napp_release(X, y, loss, penalty, epsilon=eps1, delta=delta1,
                         gradient_bound=gradient_bound, hessian_bound=hessian_bound,
                         coef_bound=coef_bound, eps_jacobian_frac=eps_jacobian_frac,
                         neighboring=neighboring, retrieval="recycle", solver=solver, rng=rng,
                         persons=persons)
    # stage 2 reads only stage 1's release (public), never its unreleased solution
    support = np.flatnonzero(first.released)
    d = X.shape[1]
    budget2 = split_budget(eps2, delta2)
    rank2 = max(1, len(support)) if persons else 1
    if np.isinf(epsilon):
        floor = 0.0
    else:
        floor = jacobian_curvature(min(eps_jacobian_frac * budget2.epsilon_mechanism,
                                       MAX_JACOBIAN_EPSILON), hessian_bound, rank2)
    cap = 1e8 * max(1.0, floor, penalty.l1_weight + np.max(penalty.l2_weight)
                    + penalty.bridge_weight)
    weights = np.maximum(floor, penalty.lqa_weight(first.released[support], cap))
    ridge = _RidgeWeights(weights)
    calibration = napp_calibration(budget2.epsilon_mechanism, budget2.delta_mechanism,
                                   gradient_bound=gradient_bound,
                                   hessian_bound=hessian_bound,
                                   penalty_curvature=ridge.strong_convexity() if len(support)
                                   else np.inf,
                                   eps_jacobian_frac=eps_jacobian_frac, neighboring=neighboring,
                                   retrieval="recycle", persons=persons, dimension=rank2)
    theta = np.zeros(d)
    if len(support) == 0:
        # nothing to estimate: stage 2 reads no data
        empty = CompositeProblem(_columns(X, []), y, loss, np.zeros(0), 0.0, 0.0,
                                 0.0, 2.0, coef_bound)
        return NAPPSolution(theta, first.n_iter, first.napp_iter, first.residual,
                            first.converged, calibration, None, empty, support, first,
                            released=theta)
    draw = draw_noise(calibration.noise, len(support), rng)
    cover_draw = _cover_draw(draw, len(support), rng)
    second = cover_release(solve_release(_columns(X, support), y, loss, ridge,
                                         calibration, draw, coef_bound=coef_bound,
                                         solver=solver),
                           budget2.epsilon_cover, solver["tol"],
                           ridge.strong_convexity() + calibration.extra_ridge, cover_draw)
    theta[support] = second.theta
    released = np.zeros(d)
    released[support] = second.released
    return NAPPSolution(theta, first.n_iter + second.n_iter, first.napp_iter + second.napp_iter,
                        max(first.residual, second.residual),
                        first.converged and second.converged, calibration, draw,
                        second.problem, support, first, released, second.cover,
                        second.cover_draw)
