"""Noise-augmented solver for penalised, perturbed GLM objectives (sum form).

The objective (``docs/privacy/napp.rst``) is::

    F(theta) = sum_i l(<x_i, theta>, y_i) + <b, theta>
               + sum_j l1_j |theta_j| + 1/2 sum_j ridge_j theta_j**2
               + bridge_weight * sum_j |theta_j|**q,       subject to ||theta||_2 <= coef_bound.

It is solved in three steps:

1. NAPP iterations (the warm start): the L1 and bridge terms are replaced by
   their local quadratic approximations (Claim-2 weights ``ridge_j + u_j``)
   and the linear term ``<b, theta>`` and those weights are realised by
   pseudo-rows appended to the data, so every iteration is one ordinary
   weighted least-squares fit (an IRLS step of the GLM) on augmented data
   (:func:`augmentation_rows`, :func:`napp_iterations`).
2. Exact polish: proximal Newton, whose subproblems (quadratic + L1) are
   solved exactly by feature-sign search (an active-set method), and a
   one-dimensional search over the Lagrange multiplier of the norm ball when
   the constraint is active (:func:`solve_composite`).
3. Certificate: the KKT residual (:func:`kkt_residual`) must be at most the
   public ``tol`` (absolute: never scaled by a quantity of the data); on an
   active ball, a certified bracket of the multiplier bounds the distance to the
   exact minimiser by a public radius.

A loss of constant curvature (the squared loss) makes the data term a quadratic:
its Gram matrix is computed once, and every value, gradient and Hessian after
that costs ``O(d^2)`` without reading ``X``. Rows in partitions (a dask array) are
read by reductions over them: once for that Gram matrix, else once per value,
gradient or Hessian.
"""

from dataclasses import dataclass, field

import numpy as np
from scipy.linalg import LinAlgError, cho_factor, cho_solve

from ..losses import unweighted
from ..utils._docstrings import fill_doc
from ._check import check_loss
from ._design import as_design
from ._partitioned import (loss_gradient_pass, loss_hessian_pass, loss_value_pass,
                           zero_pass)

_ZERO_GUARD = 1e-8   # relative size below which an LQA coordinate is "at zero"
_WEIGHT_CAP = 1e8    # cap of the LQA weight, relative to the largest base weight
_STRADDLE = 1e3      # brackets this many certified widths wide straddle the secant point
_ROW_BLOCK_ENTRIES = 2**20   # entries of a block of rows of a d x d matrix (8 MB)


_THETA = """Parameters
        ----------
        theta : ndarray of shape (n_coefficients,)
            The point."""


@fill_doc(fragments={"theta": _THETA, "theta_mu": _THETA + """
        mu : float, default=0.0
            Extra L2 curvature (a multiplier of the norm ball)."""})
@dataclass
class CompositeProblem:
    """Data and public constants of ``F`` (see the module docstring).

    Attributes
    ----------
    X : ndarray, sparse matrix, ScaledDesign or PartitionedDesign
        The design (see :mod:`skdp.solvers._design`), or rows in partitions that hold
        their targets (:mod:`skdp.solvers._partitioned`).
    y : ndarray or None
        The targets (``None`` with a partitioned design).
    loss : object
        See :data:`~skdp.solvers.REQUIRED_LOSS_ATTRIBUTES`.
    linear : ndarray of shape (n_coefficients,)
        The linear (noise) term ``b``.
    l1, ridge : ndarray of shape (n_coefficients,)
        Per-coordinate L1 and L2 weights.
    bridge_weight, q : float
        Weight and exponent of the bridge term.
    coef_bound : float or None
        Radius of the norm ball (``None``: unconstrained).
    scale : float
        The problem's gradient scale at zero (for relative solver steps).
    """

    X: np.ndarray
    y: np.ndarray
    loss: object
    linear: np.ndarray
    l1: np.ndarray
    ridge: np.ndarray
    bridge_weight: float = 0.0
    q: float = 2.0
    coef_bound: float = None
    scale: float = field(init=False)
    _constant_gram: np.ndarray = field(init=False, default=None, repr=False)
    _last_predictor: tuple = field(init=False, default=None, repr=False)

    def __post_init__(self):
        check_loss(self.loss, "solve_napp")
        d = self.X.shape[1]
        self.linear = np.broadcast_to(np.asarray(self.linear, dtype=float), (d,)).copy()
        self.l1 = np.broadcast_to(np.asarray(self.l1, dtype=float), (d,)).copy()
        self.ridge = np.broadcast_to(np.asarray(self.ridge, dtype=float), (d,)).copy()
        if self.partitioned:
            # one pass over the partitions: the loss sum and gradient at zero and, for
            # a constant curvature, the Gram matrix (each partition its own targets)
            value, self._gradient_at_zero, gram = self.X.reduce(zero_pass, self.loss,
                                                               self.quadratic)
            self._value_at_zero = float(value[0]) if self.quadratic else None
            self._constant_gram = gram if self.quadratic else None
        else:
            zeros = np.zeros(self.X.shape[0])
            self._gradient_at_zero = self.X.T @ self.loss.dz(zeros, self.y)
            self._value_at_zero = (float(np.sum(self.loss.loss(zeros, self.y)))
                                   if self.quadratic else None)
        self.scale = float(max(1.0, np.max(np.abs(self._gradient_at_zero), initial=0.0),
                               np.max(np.abs(self.linear), initial=0.0),
                               np.max(self.l1, initial=0.0)))

    @property
    def partitioned(self):
        """Whether the rows live in partitions (a
        :class:`~skdp.solvers._partitioned.PartitionedDesign`, which holds the
        targets): every pass over the data is then a reduction over them."""
        return bool(getattr(self.X, "partitioned", False))

    @property
    def quadratic(self):
        """Whether the loss's curvature is constant: the data term is then the
        quadratic ``L(0) + <g(0), theta> + 1/2 theta^T G theta`` (``G`` the Gram
        matrix, computed once), evaluated in ``O(d^2)`` without reading ``X``."""
        return bool(getattr(self.loss, "constant_curvature", False))

    def _predictor(self, theta):
        """``X @ theta``, read-only; the last one is kept for the next call at the same
        point (bit for bit): the solvers take the value, the gradient and the Hessian
        at one point in turn (a NAPP fit on KDDCup99: 39 of its 57 products repeated
        the one before). One vector of ``n`` held, the old one dropped first."""
        theta = np.ascontiguousarray(theta, dtype=float)
        last = self._last_predictor
        if last is not None and np.array_equal(last[0].view(np.int64), theta.view(np.int64)):
            return last[1]
        self._last_predictor = None
        predictor = np.asarray(self.X @ theta)
        predictor.setflags(write=False)
        self._last_predictor = (theta.copy(), predictor)
        return predictor

    def data_value(self, theta):
        """``sum_i l(<x_i, theta>, y_i)`` (``inf`` where it overflows).

        %(theta)s

        Returns
        -------
        value : float
        """
        if self.quadratic:
            return (self._value_at_zero + float(self._gradient_at_zero @ theta)
                    + 0.5 * float(theta @ self._gram() @ theta))
        if self.partitioned:
            return float(self.X.reduce(loss_value_pass, theta, self.loss)[0])
        with np.errstate(over="ignore", invalid="ignore"):
            return float(np.sum(self.loss.loss(self._predictor(theta), self.y)))

    def data_gradient(self, theta):
        """Gradient of :meth:`data_value` (a new array).

        %(theta)s

        Returns
        -------
        gradient : ndarray of shape (n_coefficients,)
        """
        if self.quadratic:
            return self._gradient_at_zero + self._gram() @ theta
        if self.partitioned:
            return self.X.reduce(loss_gradient_pass, theta, self.loss)
        return self.X.T @ self.loss.dz(self._predictor(theta), self.y)

    # -- smooth part: loss + linear + ridge (+ mu) + bridge -------------------------
    def smooth_value(self, theta, mu=0.0):
        """``F`` without the L1 term, plus ``mu / 2 ||theta||^2``.

        %(theta_mu)s

        Returns
        -------
        value : float
        """
        value = self.data_value(theta)
        value += self.linear @ theta + 0.5 * ((self.ridge + mu) * theta) @ theta
        if self.bridge_weight:
            value += self.bridge_weight * np.sum(np.abs(theta) ** self.q)
        return float(value) if np.isfinite(value) else np.inf

    def value(self, theta, mu=0.0):
        """``F`` plus ``mu / 2 ||theta||^2``.

        %(theta_mu)s

        Returns
        -------
        value : float
        """
        return self.smooth_value(theta, mu) + float(self.l1 @ np.abs(theta))

    def smooth_gradient(self, theta, mu=0.0):
        """Gradient of :meth:`smooth_value`.

        %(theta_mu)s

        Returns
        -------
        gradient : ndarray of shape (n_coefficients,)
        """
        grad = self.data_gradient(theta) + self.linear
        grad += (self.ridge + mu) * theta
        if self.bridge_weight:
            grad += self.bridge_weight * self.q * np.sign(theta) * np.abs(theta) ** (self.q - 1)
        return grad

    def smooth_hessian(self, theta, mu=0.0):
        """Hessian of :meth:`smooth_value`, the data's Gram part and the diagonal kept
        apart (the constant Gram of the squared loss is shared, not copied).

        %(theta_mu)s

        Returns
        -------
        hessian : GramPlusDiagonal
        """
        gram = self._gram() if self.quadratic else self.data_hessian(theta)
        diagonal = self.ridge + mu
        if self.bridge_weight:
            a = np.maximum(np.abs(theta), 1e-12)
            curvature = self.bridge_weight * self.q * (self.q - 1) * a ** (self.q - 2)
            diagonal = diagonal + np.minimum(curvature, _WEIGHT_CAP * (1.0 + self.scale))
        return GramPlusDiagonal(gram, diagonal)

    def data_hessian(self, theta):
        """``X^T diag(l''(X theta)) X`` (a new array), the loss's part of the Hessian.

        Computed once per problem when the loss's curvature does not depend on the
        point (the squared loss).

        %(theta)s

        Returns
        -------
        hessian : ndarray of shape (n_coefficients, n_coefficients)
        """
        if not self.quadratic and self.partitioned:
            return self.X.reduce(loss_hessian_pass, theta, self.loss)
        if not self.quadratic:
            return weighted_gram(self.X, self.loss.d2z(self._predictor(theta), self.y))
        return self._gram().copy()

    def _gram(self):
        if self._constant_gram is None:
            self._constant_gram = weighted_gram(self.X, self.loss.d2z(np.zeros(len(self.y)),
                                                                      self.y))
        return self._constant_gram


class GramPlusDiagonal:
    """``G + diag(D)`` for a symmetric ``G`` that is never modified nor copied whole
    except into a block the caller factorises: with a ``d x d`` Gram matrix shared by
    every solve (the squared loss), a solve holds one more ``d x d`` array, not two.

    Parameters
    ----------
    gram : ndarray of shape (d, d)
    diagonal : float or ndarray of shape (d,)
    """

    def __init__(self, gram, diagonal):
        self.gram = gram
        self.shape = gram.shape
        self.diagonal = np.broadcast_to(np.asarray(diagonal, dtype=float), (gram.shape[0],))

    def __matmul__(self, v):
        return self.gram @ v + self.diagonal * v

    def block(self, index=None):
        """The principal block on ``index`` (all of it when ``None``), a new array in
        Fortran order (LAPACK factorises it in place; a C-ordered one it copies)."""
        block = self.gram.copy() if index is None else self.gram[np.ix_(index, index)]
        block.flat[:: block.shape[0] + 1] += (self.diagonal if index is None
                                              else self.diagonal[index])
        return _fortran(block)

    def shifted(self, extra):
        """``G + diag(D + extra)``."""
        return GramPlusDiagonal(self.gram, self.diagonal + extra)

    def largest_row_sum(self):
        """``max_i sum_j |A_ij|``, a bound on the largest eigenvalue (rows of ``G`` by
        blocks: no temporary of its size)."""
        d = self.shape[0]
        largest, rows = 0.0, max(1, _ROW_BLOCK_ENTRIES // max(d, 1))
        for start in range(0, d, rows):
            stop = min(start + rows, d)
            part = self.gram[start:stop]
            own = part[np.arange(stop - start), np.arange(start, stop)]
            sums = np.abs(part).sum(axis=1) - np.abs(own) + np.abs(own + self.diagonal[start:stop])
            largest = max(largest, float(np.max(sums, initial=0.0)))
        return largest


def weighted_gram(X, weights):
    """``X^T diag(weights) X`` for non-negative weights (blocked SYRK: no ``n x d``
    temporary)."""
    return as_design(X).weighted_gram(weights)


def kkt_residual(problem, theta, mu=0.0):
    """Largest violation of the optimality conditions of ``F + mu/2 ||theta||^2``.

    ``|g_j + l1_j sign(theta_j)|`` where ``theta_j != 0`` and
    ``max(0, |g_j| - l1_j)`` where ``theta_j == 0`` (``g`` the smooth gradient).
    """
    return _kkt(problem, theta, mu)[0]


def _kkt(problem, theta, mu):
    """:func:`kkt_residual` and the smooth gradient it was computed from."""
    g = problem.smooth_gradient(theta, mu)
    nonzero = theta != 0
    r = np.where(nonzero, np.abs(g + problem.l1 * np.sign(theta)),
                 np.maximum(0.0, np.abs(g) - problem.l1))
    return float(np.max(r, initial=0.0)), g


def quadratic_l1(H, c, l1, z0, *, max_steps=None, tol=None):
    """Exact minimiser of ``1/2 z^T H z - c^T z + sum_j l1_j |z_j|`` (H positive definite).

    Feature-sign search (an active-set method, finite in exact arithmetic):
    on the current active set and sign pattern the problem is a linear system;
    a discrete line search towards its solution stops at the first sign change
    that lowers the objective; zero coordinates that violate the optimality
    condition most enter the active set one at a time. Warm-started from
    ``z0``'s support, so the proximal Newton iterations usually need a few
    steps. The solution is exact to rounding (no coordinate-descent tolerance).

    The search ends at an exact solve on its final active set, so once ``z``
    has moved a violation of the optimality conditions of at most ``1e-12 max(1,
    |c|, l1)`` (a rounding guard relative to the problem's scale) is accepted.
    The warm start ``z0`` itself is returned unmoved only within ``tol`` when
    that is smaller: a caller certifying an absolute tolerance passes a
    fraction of it, else a warm start that close to the solution, yet not
    within the caller's tolerance, would come back unmoved (a large noise
    term makes ``|c|`` large, and the guard with it).
    """
    if not isinstance(H, GramPlusDiagonal):
        H = GramPlusDiagonal(np.asarray(H, dtype=float), 0.0)
    c = np.asarray(c, dtype=float)
    l1 = np.asarray(l1, dtype=float)
    d = len(c)
    if not np.any(l1 > 0):
        return _solve_spd(H.block, c)
    z = np.array(z0, dtype=float)
    signs = np.sign(z)
    guard = 1e-12 * max(1.0, np.max(np.abs(c)), np.max(l1))
    tol = guard if tol is None else min(guard, tol)   # the warm start's acceptance

    max_steps = 20 * d + 100 if max_steps is None else max_steps
    for _ in range(max_steps):
        grad = H @ z - c
        active = z != 0
        signs = np.where(active, np.sign(z), 0.0)
        if not np.any(active) or np.max(np.abs(grad + l1 * signs)[active]) <= tol:
            violation = np.where(active, -np.inf, np.abs(grad) - l1)
            i = int(np.argmax(violation))
            if violation[i] <= tol:
                return z
            signs[i] = -np.sign(grad[i])
            active[i] = True
        idx = np.flatnonzero(active)
        rhs = c[idx] - l1[idx] * signs[idx]
        # the active block (all of H when every coordinate is active): one copy,
        # factorised in place
        index = None if idx.size == d else idx
        target = _solve_spd(lambda: H.block(index), rhs)
        current = z[idx]
        # the target, and the points of the segment where a coordinate changes sign
        step = target - current
        crossing = np.flatnonzero((current != 0) & (np.sign(target) != np.sign(current)))
        ts = np.concatenate([[1.0], current[crossing] / (current[crossing] - target[crossing])])
        step_all = np.zeros(d)
        step_all[idx] = step
        changes = _segment_changes(grad[idx] @ step, step_all @ (H @ step_all), l1[idx],
                                   current, step, ts, crossing)
        best = int(np.argmin(changes))
        best_value = changes[best]
        if best:
            target = current + ts[best] * step
            target[crossing[best - 1]] = 0.0
        if not best_value < 0.0:
            return z   # no progress (rounding): the caller's certificate decides
        z[idx] = target
        tol = guard   # z has moved: the search ends at an exact solve
    return z


def _segment_changes(slope, curvature, l1, current, step, ts, crossing):
    """Objective change of ``1/2 z^T H z - c^T z + l1 |z|`` from ``current`` to
    ``current + t step`` for each ``t`` of ``ts``, computed stably from the
    gradient's ``slope = g . step`` and ``curvature = step^T H step`` (differences
    of objective values lose everything near the optimum); the point of ``ts[i]``,
    ``i >= 1``, has coordinate ``crossing[i - 1]`` exactly zero. ``H`` enters only
    through ``curvature`` (one product for all the points); the L1 parts are taken by
    blocks of points."""
    changes = ts * slope + 0.5 * ts**2 * curvature
    size_now = np.abs(current)
    rows = max(1, 2**22 // max(len(current), 1))
    for start in range(0, len(ts), rows):
        stop = min(start + rows, len(ts))
        points = current + ts[start:stop, None] * step
        zeroed = np.arange(max(start, 1), stop)
        points[zeroed - start, crossing[zeroed - 1]] = 0.0
        np.abs(points, out=points)
        points -= size_now   # differences by coordinate first: the sum keeps its digits
        changes[start:stop] += points @ l1
    return changes


def _fortran(symmetric):
    """A symmetric array in Fortran order without a copy (its transpose)."""
    return symmetric if symmetric.flags.f_contiguous else symmetric.T


def _solve_spd(make_matrix, b):
    """``A^{-1} b`` by Cholesky, by least squares if that fails; ``make_matrix()`` gives
    a new copy of ``A``, factorised in place (and made again for the least squares)."""
    try:
        return cho_solve(cho_factor(make_matrix(), overwrite_a=True, check_finite=False), b,
                         check_finite=False)
    except LinAlgError:
        return np.linalg.lstsq(make_matrix(), b, rcond=None)[0]


@dataclass
class SolverResult:
    theta: np.ndarray
    n_iter: int
    residual: float
    converged: bool
    multiplier: float = 0.0
    napp_iter: int = 0
    distance: float = 0.0


def _well_conditioned(H, diagonal_floor=0.0):
    """``H`` (a :class:`GramPlusDiagonal`) plus a tiny ridge when it is (numerically)
    singular.

    ``H`` is a positive semi-definite matrix plus a diagonal whose entries are at
    least ``diagonal_floor`` (a public ridge), so its smallest eigenvalue is at
    least that. Only the search direction of proximal Newton changes (a damped
    Newton model); the certificate is always computed on the true objective.
    """
    # floor' = 1e-10 times a bound on the largest eigenvalue (the largest absolute
    # row sum): the smallest eigenvalue is above it when the ridge is, or else when
    # H - floor' I is positive definite (one Cholesky factorisation)
    floor_bound = 1e-10 * max(H.largest_row_sum(), 1e-300)
    if diagonal_floor >= floor_bound:
        return H
    try:
        cho_factor(H.shifted(-floor_bound).block(), overwrite_a=True, check_finite=False)
        return H
    except LinAlgError:
        pass
    eigenvalues = np.linalg.eigvalsh(H.block())
    floor = 1e-10 * max(eigenvalues[-1], 1e-300)
    if eigenvalues[0] < floor:
        return H.shifted(floor - eigenvalues[0])
    return H


def prox_newton(problem, theta0, *, mu=0.0, tol, max_iter):
    """Proximal Newton on ``F + mu/2 ||theta||^2``, certified by :func:`kkt_residual`."""
    theta = np.array(theta0, dtype=float)
    target = tol
    value = problem.value(theta, mu)
    residual, g = _kkt(problem, theta, mu)
    n_iter = 0
    for n_iter in range(max_iter + 1):
        if residual <= target or n_iter == max_iter:
            break
        H = _well_conditioned(problem.smooth_hessian(theta, mu),
                              float(np.min(problem.ridge + mu, initial=np.inf)))
        # the model's violation at theta is the true one: a warm start within the
        # subproblem's rounding guard but not within the target must still move
        z = quadratic_l1(H, H @ theta - g, problem.l1, theta, tol=0.1 * target)
        step = z - theta
        decrease = g @ step + problem.l1 @ (np.abs(z) - np.abs(theta))
        t = 1.0
        candidate = z
        candidate_value = problem.value(candidate, mu)
        # Near the optimum the decrease is below the rounding of F: take the
        # full step and let the KKT certificate decide.
        if decrease < -1e-13 * (1.0 + abs(value)) or not np.isfinite(candidate_value):
            while (not candidate_value <= value + 1e-4 * t * decrease) and t > 1e-12:
                t *= 0.5
                candidate = theta + t * step
                candidate_value = problem.value(candidate, mu)
            if not candidate_value <= value:
                # fall back on a proximal-gradient step (always a descent step)
                lipschitz = np.linalg.eigvalsh(H.block())[-1]
                point = theta - g / lipschitz
                candidate = np.sign(point) * np.maximum(np.abs(point) - problem.l1 / lipschitz,
                                                        0.0)
                candidate_value = problem.value(candidate, mu)
        del H   # a loss of varying curvature forms the next Hessian while this one is held
        if np.array_equal(candidate, theta):
            break   # a step that moves nothing repeats itself: rounding level reached
        theta, value = candidate, candidate_value
        residual, g = _kkt(problem, theta, mu)
    return SolverResult(theta, n_iter, residual, residual <= target)


def solve_composite(problem, theta0, *, tol, max_iter, ball_radius=None,
                    unconstrained_norm=None):
    """Exact minimiser of ``F`` over ``||theta|| <= coef_bound``, with its certificate.

    When the unconstrained minimiser lies outside the ball, the constrained one
    minimises ``F + mu/2 ||theta||^2`` for the multiplier ``mu* > 0`` at which
    its norm equals ``coef_bound = B``. ``mu*`` is bracketed by regula falsi
    (Illinois) on ``1/||theta(mu)||`` (nearly linear in ``mu``), and each end
    is certified: with ``lambda`` the least public ridge, ``e(mu) = sqrt(d)
    residual / (lambda + mu)`` bounds the distance of a point solved at ``mu`` to
    the exact ``theta(mu)``, so ``||theta(lo)|| - e(lo) > B`` proves ``lo <=
    mu*`` and ``||theta(hi)|| + e(hi) <= B`` proves ``mu* <= hi`` (the norm
    decreases in ``mu``). The point solved at ``hi`` is released: the minimisers'
    path puts it within ``e(hi) + (hi - lo) B / (lambda + lo)`` of the exact
    constrained minimiser (``docs/privacy/napp.rst``), and the search stops when
    that is at most ``ball_radius``.

    Parameters
    ----------
    problem : CompositeProblem
        The objective.
    theta0 : ndarray of shape (n_coefficients,)
        Starting point.
    tol : float
        Public KKT tolerance (of the unconstrained solve).
    max_iter : int
        Maximum number of proximal Newton steps per solve.
    ball_radius : float, default=None
        Public bound on the released point's distance to the exact minimiser when
        the ball is active. ``None``: ``2 sqrt(d) tol / lambda`` (``lambda`` the
        least ridge, or 1 when there is none).
    unconstrained_norm : float, default=None
        An estimate of the unconstrained minimiser's norm (the NAPP warm start's).
        When it is at least twice ``coef_bound`` the search starts from ``theta0``
        without solving the unconstrained problem (``lo = 0`` needs no solve to be
        certified; the estimate only steers the first secant step).

    Returns
    -------
    result : object
        ``theta``, the iteration counts, the KKT ``residual``, the certified
        ``distance`` on an active ball and ``converged``.
    """
    bound = problem.coef_bound
    ball = bound is not None and np.isfinite(bound)
    if ball and unconstrained_norm is not None and unconstrained_norm >= 2.0 * bound:
        result = SolverResult(np.array(theta0, dtype=float), 0, np.inf, False)
    else:
        result = prox_newton(problem, theta0, tol=tol, max_iter=max_iter)
        if not ball or np.linalg.norm(result.theta) <= bound:
            return result
        unconstrained_norm = np.linalg.norm(result.theta)
    lam = max(float(np.min(problem.ridge, initial=np.inf)), 0.0)
    if ball_radius is None:
        ball_radius = 2.0 * np.sqrt(len(problem.ridge)) * tol / (lam if lam > 0 else 1.0)
    # the multiplier search needs the inner minimisers more accurately than the
    # certificate does: the norm of a sloppy solution is noisy at the 1e-10 level
    search = _BallSearch(problem, bound, lam, 1e-2 * tol, max_iter, result, unconstrained_norm)
    hi = _feasible_multiplier(problem, bound, lam)
    while not search.hi_found and hi <= 1e300:
        search.solve(hi)
        hi *= 10.0
    for _ in range(200):
        if not search.hi_found or search.distance() <= ball_radius:
            break
        bracket = (search.lo, search.hi)
        mid = search.next_multiplier()
        # a bracket (lo, hi) certifies when hi - lo <= width
        width = ball_radius * (lam + search.lo) / bound
        if search.hi - search.lo > _STRADDLE * width and search.solve(mid):
            continue
        # the secant point is then accurate to a fraction of the width (or within its
        # own error of the root): two points 3/8 of the width away on each side
        # certify the bracket with a quarter of the radius to spare
        for probe in (mid - 0.375 * width, mid + 0.375 * width):
            if search.lo < probe < search.hi:
                search.solve(probe)
        if (search.lo, search.hi) == bracket:
            break   # rounding level: the certificate below decides
    return search.result(ball_radius)


def _feasible_multiplier(problem, bound, lam):
    """A multiplier whose exact minimiser lies in the ball.

    With ``g`` the smooth part's gradient at 0, ``(lambda + mu) ||theta(mu)||^2 <=
    sum_j (|g_j| - l1_j) |theta_j|`` (optimality at ``theta(mu)`` and monotonicity
    of the convex part's gradient), so ``mu = ||(|g| - l1)_+|| / B - lambda`` gives
    ``||theta(mu)|| <= B``; it is close to the root when ``mu`` dominates the data's
    curvature, as it does when the ball binds hard.
    """
    gradient = problem._gradient_at_zero + problem.linear   # computed with the problem
    reach = np.linalg.norm(np.maximum(np.abs(gradient) - problem.l1, 0.0))
    return max(reach / bound - lam, 1e-12 * problem.scale / bound)


class _BallSearch:
    """Bracket ``[lo, hi]`` of the ball's multiplier whose ends are certified (see
    :func:`solve_composite`); ``hi``'s point is the one released."""

    def __init__(self, problem, bound, lam, inner_tol, max_iter, start, start_norm):
        self.problem, self.bound, self.lam = problem, bound, lam
        self.inner_tol, self.max_iter = inner_tol, max_iter
        self.n_iter = start.n_iter
        # mu* >= 0 needs no certificate: lo = 0 is an end from the start, with the
        # unconstrained minimiser's norm (or an estimate) for the secant steps
        self.lo, self.lo_result = 0.0, start
        self.phi_lo = 1.0 / start_norm - 1.0 / bound
        self.hi = self.phi_hi = self.hi_result = None
        self.kept = None

    @property
    def hi_found(self):
        return self.hi_result is not None

    def error(self, mu, result):
        """Distance bound of a point solved at ``mu`` to the exact ``theta(mu)``."""
        curvature = self.lam + mu
        return (np.sqrt(len(result.theta)) * result.residual / curvature if curvature > 0
                else np.inf)

    def solve(self, mu):
        """Solve at ``mu`` and make it an end; ``False`` when neither side is certified."""
        start = (self.hi_result if self.hi_found else self.lo_result).theta
        result = prox_newton(self.problem, start, mu=mu, tol=self.inner_tol,
                             max_iter=self.max_iter)
        self.n_iter += result.n_iter
        norm, error = np.linalg.norm(result.theta), self.error(mu, result)
        phi = 1.0 / max(norm, 1e-300) - 1.0 / self.bound
        if norm + error <= self.bound:
            self.hi, self.phi_hi, self.hi_result = mu, phi, result
            if self.kept == "lo":
                self.phi_lo *= 0.5   # Illinois: an end kept twice in a row counts half
            self.kept = "lo"
        elif norm - error > self.bound:
            self.lo, self.phi_lo, self.lo_result = mu, phi, result
            if self.kept == "hi" and self.hi_found:
                self.phi_hi *= 0.5
            self.kept = "hi"
        else:
            return False
        return True

    def next_multiplier(self):
        """Regula falsi on ``phi(mu) = 1/||theta(mu)|| - 1/B`` (bisection as a guard)."""
        lo, hi = self.lo, self.hi
        mid = lo - self.phi_lo * (hi - lo) / (self.phi_hi - self.phi_lo)
        return mid if lo < mid < hi else 0.5 * (lo + hi)

    def distance(self):
        """Certified bound on the distance of ``hi``'s point to ``theta(mu*)``."""
        curvature = self.lam + self.lo
        path = (self.hi - self.lo) * self.bound / curvature if curvature > 0 else np.inf
        return self.error(self.hi, self.hi_result) + path

    def result(self, ball_radius):
        if not self.hi_found:
            return SolverResult(self.lo_result.theta, self.n_iter, np.inf, False)
        distance = self.distance()
        return SolverResult(self.hi_result.theta, self.n_iter, self.hi_result.residual,
                            distance <= ball_radius, multiplier=self.hi, distance=distance)


# -- noise augmentation ---------------------------------------------------------------

def pseudo_responses(loss, n_aug):
    """Pseudo-responses ``y^e`` with ``l'(0; y^e) != 0`` (spec section 2.1).

    Squared loss: 1; Poisson: 0; logistic (labels +-1): +1 for the first half,
    -1 for the second. Returns ``(y_e, g, kappa)`` with ``g_k = l'(0; y^e_k)``
    and ``kappa = l''(0; y^e)``.
    """
    name = getattr(loss, "name", None)
    if name == "squared":
        y_e = np.ones(n_aug)
    elif name == "poisson":
        y_e = np.zeros(n_aug)
    else:
        y_e = np.where(np.arange(n_aug) < n_aug // 2, 1.0, -1.0)
    zeros = np.zeros(n_aug)
    g = loss.dz(zeros, y_e)
    kappa = float(loss.d2z(zeros[:1], y_e[:1])[0])
    return y_e, g, kappa


def augmentation_rows(b, weights, loss, n_aug, rng, *, augmentation="exact_moment", basis=None):
    """Pseudo-rows ``E = E_dp + E_reg`` realising ``<b, theta> + 1/2 sum_j w_j theta_j^2``.

    ``E_dp[k] = b / (n_aug g_k)`` so that ``sum_k g_k E_dp[k] = b``; ``E_reg`` has
    zero column sums within every group of equal pseudo-response and
    ``kappa E_reg^T E_reg = diag(weights)`` exactly (``augmentation="exact_moment"``,
    needs ``n_aug >= d + 2``) or in expectation (``"random"``, centred Gaussian).
    The second-order expansion of ``sum_k l(<e_k, theta>; y^e_k)`` is then
    ``const + <b, theta> + 1/2 sum_j w_j theta_j^2 + kappa (b^T theta)^2 / (2 n_aug g^2)``
    (spec section 2.4; exact for the squared loss).

    ``basis`` (the standardised draws, shape ``(n_aug, d)``) may be passed to
    reuse one draw across iterations; it is returned with the rows.
    """
    b = np.asarray(b, dtype=float)
    d = len(b)
    y_e, g, kappa = pseudo_responses(loss, n_aug)
    if basis is None:
        Z = rng.standard_normal((n_aug, d))
        for value in np.unique(y_e):
            group = y_e == value
            Z[group] -= Z[group].mean(axis=0)
        if augmentation == "exact_moment":
            if n_aug < d + 2:
                raise ValueError(f"n_aug={n_aug} must be at least n_features + 2 = {d + 2} "
                                 "for exact-moment pseudo-rows.")
            basis = np.linalg.qr(Z, mode="reduced")[0]
        elif augmentation == "random":
            basis = Z / np.sqrt(n_aug)
        else:
            raise ValueError(f"Unknown augmentation {augmentation!r}.")
    E_reg = basis * np.sqrt(np.asarray(weights, dtype=float) / kappa)
    E_dp = b[None, :] / (n_aug * g[:, None])
    return E_dp + E_reg, y_e, basis


def warm_start_hessian(problem):
    """The data Hessian of the warm start's IRLS steps, as a function of ``theta``.

    With many rows in memory and a curvature that varies (``n >= 40 d``, not the
    squared loss), it is estimated from every ``stride``-th row, ``stride = n // (20
    d)``, the fixed pattern of :func:`~skdp.solvers.newton_minimise`'s first steps:
    each step then forms a ``d x d`` matrix from about ``20 d`` rows instead of ``n``
    (the cost of a NAPP fit on many rows). Only the warm start's path changes; the
    polish and its certificate use the exact Hessian and gradient.
    """
    n, d = problem.X.shape
    stride = max(1, n // (20 * d))
    if stride == 1 or problem.quadratic or problem.partitioned:
        return problem.data_hessian
    rows = as_design(problem.X).every(stride)
    targets = problem.y[::stride]

    def hessian(theta):
        return stride * weighted_gram(rows, problem.loss.d2z(rows @ theta, targets))

    return hessian


def _surrogate(problem, theta, weights):
    value = problem.data_value(theta)
    value += problem.linear @ theta + 0.5 * (weights * theta) @ theta
    return value if np.isfinite(value) else np.inf


def napp_iterations(problem, theta0=None, *, max_iter=10, rtol=1e-4, augmentation="expected",
                    n_aug=None, rng=None):
    """Claim-2 NAPP iterations, used as the warm start of :func:`solve_composite`.

    Iteration ``t`` replaces the penalty by the weighted ridge with weights
    ``ridge_j + u_j(theta^(t))`` (LQA of the L1 and bridge parts, spec Table 2,
    no MOOR) and takes one IRLS step of the GLM on the data augmented by
    pseudo-rows (the data Hessian from :func:`warm_start_hessian`).
    ``augmentation="expected"`` uses ``d`` exact rows ``sqrt(w_j) e_j``
    with responses ``-b_j / sqrt(w_j)`` (so the augmented least-squares
    problem equals the weighted-ridge objective exactly); ``"exact_moment"``
    and ``"random"`` use ``n_aug`` noisy pseudo-rows of the paper (spec 2.3).
    Stops when the relative change of ``theta`` is below ``rtol``, or, for a loss
    of constant curvature (each iteration then an exact weighted-ridge solve), when
    the sign pattern repeats: the later iterations would only refine magnitudes,
    one factorisation each, that the exact polish computes anyway.
    """
    pseudo_loss = unweighted(problem.loss)
    d = problem.X.shape[1]
    theta = np.zeros(d) if theta0 is None else np.array(theta0, dtype=float)
    base = problem.ridge + problem.l1 + problem.bridge_weight * problem.q
    cap = _WEIGHT_CAP * max(1.0, np.max(base))
    penalty_weights = _lqa(problem, theta, cap) if theta0 is not None else base
    basis = None
    n_iter = 0
    data_hessian = warm_start_hessian(problem)
    for n_iter in range(1, max_iter + 1):
        if augmentation == "expected":
            # X^T Omega z with the working response z = eta - l'/l'': H theta - gradient
            A = data_hessian(theta)
            rhs = A @ theta - problem.data_gradient(theta) - problem.linear
            A.flat[:: d + 1] += penalty_weights
        else:
            n_e = n_aug if n_aug is not None else max(1000, 10 * d)
            # the pseudo-rows realise the noise and the ridge with unit weights
            E, y_e, basis = augmentation_rows(problem.linear, penalty_weights, pseudo_loss,
                                              n_e, rng, augmentation=augmentation, basis=basis)
            # the IRLS system of the rows of X stacked over the pseudo-rows E; the rows
            # of X give X^T Omega X and X^T (Omega eta - l') = X^T Omega X theta - X^T l'
            A = data_hessian(theta)
            rhs = A @ theta - problem.data_gradient(theta)
            eta = E @ theta
            omega = pseudo_loss.d2z(eta, y_e)
            A += weighted_gram(E, omega)
            rhs += E.T @ (omega * eta - pseudo_loss.dz(eta, y_e))
        try:
            new = cho_solve(cho_factor(_fortran(A), overwrite_a=True, check_finite=False), rhs,
                            check_finite=False)
        except LinAlgError:
            break
        del A   # else the next iteration's matrix is formed while this one is held
        if not np.all(np.isfinite(new)):
            break
        # damp the IRLS step if it increases the weighted-ridge surrogate (Poisson)
        old_value = _surrogate(problem, theta, penalty_weights)
        t = 1.0
        while _surrogate(problem, theta + t * (new - theta), penalty_weights) > old_value \
                and t > 1e-6:
            t *= 0.5
        new = theta + t * (new - theta)
        change = np.max(np.abs(new - theta)) / (np.max(np.abs(theta)) + 1e-12)
        settled = problem.quadratic and np.array_equal(_sign_pattern(new),
                                                       _sign_pattern(theta))
        theta = new
        penalty_weights = _lqa(problem, theta, cap)
        if change < rtol or settled:
            break
    return np.where(_sign_pattern(theta) == 0, 0.0, theta), n_iter


def _sign_pattern(theta):
    """Signs, with coordinates below ``_ZERO_GUARD`` of the largest counted as zero."""
    big = np.max(np.abs(theta), initial=0.0)
    return np.where(np.abs(theta) < _ZERO_GUARD * big, 0.0, np.sign(theta))


def _lqa(problem, theta, cap):
    a = np.maximum(np.abs(theta), 1e-300)
    w = problem.ridge + problem.l1 / a
    if problem.bridge_weight:
        w = w + problem.bridge_weight * problem.q * a ** (problem.q - 2.0)
    return np.minimum(w, cap)


def solve_napp(problem, *, tol, max_iter, napp_max_iter=10, augmentation="expected", n_aug=None,
               rng=None, theta0=None, ball_radius=None):
    """NAPP warm start, exact polish and KKT certificate.

    Requires of ``problem.loss`` (checked when the problem is built):
    :data:`~skdp.solvers.REQUIRED_LOSS_ATTRIBUTES`.

    Parameters
    ----------
    problem : CompositeProblem
        The objective.
    tol : float
        Public KKT tolerance.
    max_iter : int
        Maximum number of proximal Newton steps of the polish.
    napp_max_iter : int, default=10
        Maximum number of NAPP iterations of the warm start.
    augmentation : {"expected", "exact_moment", "random"}, default="expected"
        Pseudo-rows of the NAPP iterations.
    n_aug : int, default=None
        Number of pseudo-rows for ``"exact_moment"`` and ``"random"``.
    rng : numpy.random.Generator, default=None
        Public stream of the random pseudo-rows.
    theta0 : ndarray of shape (n_coefficients,), default=None
        Starting point.
    ball_radius : float, default=None
        As :func:`solve_composite`'s.

    Returns
    -------
    result : object
        As :func:`solve_composite`'s, with ``napp_iter``.
    """
    warm, napp_iter = napp_iterations(problem, theta0, max_iter=napp_max_iter,
                                      augmentation=augmentation,
                                      n_aug=n_aug, rng=rng)
    norm = None
    if problem.coef_bound is not None and np.isfinite(problem.coef_bound):
        norm = np.linalg.norm(warm)
        if norm > problem.coef_bound:
            warm = warm * (problem.coef_bound / norm)
    result = solve_composite(problem, warm, tol=tol, max_iter=max_iter,
                             ball_radius=ball_radius, unconstrained_norm=norm)
    result.napp_iter = napp_iter
    return result
