"""The composite (NAPP) solver's Hessians and their conditioning."""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from skdp.losses import LogisticLoss, SquaredLoss
from skdp.solvers import _composite
from skdp.solvers._composite import (
    CompositeProblem,
    GramPlusDiagonal,
    _well_conditioned,
    kkt_residual,
    prox_newton,
    quadratic_l1,
    weighted_gram,
)


def _problem(loss, n=300, d=7, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = rng.standard_normal(n) if isinstance(loss, SquaredLoss) else rng.choice([-1.0, 1.0], n)
    return CompositeProblem(X, y, loss, np.zeros(d), 0.1, 0.0)


@pytest.mark.parametrize("d", [13, 300])
@pytest.mark.parametrize("equal", [False, True])
def test_weighted_gram_matches_explicit_product(d, equal):
    # equal weights take one SYRK on X; d = 300 crosses a block of the symmetrisation
    rng = np.random.default_rng(1)
    X = rng.standard_normal((1000, d))
    weights = np.full(1000, 0.7) if equal else rng.random(1000)
    gram = weighted_gram(X, weights)
    assert_array_equal(gram, gram.T)
    assert_allclose(gram, X.T @ (weights[:, None] * X), rtol=1e-12, atol=1e-12 * d)


def test_quadratic_data_terms_come_from_the_gram_alone():
    # the squared loss's value and gradient from L(0), g(0) and the Gram: X is not read
    problem = _problem(SquaredLoss())
    X, y = problem.X, problem.y
    theta = np.random.default_rng(3).standard_normal(X.shape[1])
    value = 0.5 * np.sum((X @ theta - y) ** 2)
    gradient = X.T @ (X @ theta - y)
    problem.data_hessian(theta)
    problem.X = None
    assert problem.data_value(theta) == pytest.approx(value, rel=1e-12)
    assert_allclose(problem.data_gradient(theta), gradient, rtol=1e-11, atol=1e-11)


def test_squared_loss_data_hessian_is_the_gram_computed_once():
    problem = _problem(SquaredLoss())
    theta = np.random.default_rng(2).standard_normal(problem.X.shape[1])
    first = problem.data_hessian(theta)
    assert_allclose(first, problem.X.T @ problem.X, rtol=1e-12)
    first[:] = 0.0  # a caller's copy: the cache is untouched
    second = problem.data_hessian(-theta)
    assert_array_equal(second, problem._constant_gram)
    assert_allclose(second, problem.X.T @ problem.X, rtol=1e-12)


def test_point_dependent_curvature_is_recomputed():
    problem = _problem(LogisticLoss())
    theta = np.random.default_rng(3).standard_normal(problem.X.shape[1])
    curvature = LogisticLoss().d2z(problem.X @ theta, problem.y)
    assert_allclose(problem.data_hessian(theta),
                    problem.X.T @ (curvature[:, None] * problem.X), rtol=1e-12)
    assert problem._constant_gram is None


class _CountingRows(np.ndarray):
    """A dense design (more rows than columns) that counts its products with a vector
    (``X @ theta``; not ``X.T @ v``)."""

    products = 0

    def __matmul__(self, other):
        if np.ndim(other) == 1 and self.shape[0] > self.shape[1]:
            type(self).products += 1
        return np.asarray(self).__matmul__(other)


def test_value_gradient_and_hessian_at_one_point_read_x_once():
    """The last ``X @ theta`` serves the next call at the same point (bit for bit: a
    sign-flipped zero is another point); the terms equal those computed from X."""
    problem = _problem(LogisticLoss())
    X, y, loss = np.asarray(problem.X), problem.y, LogisticLoss()
    problem.X = X.view(_CountingRows)
    _CountingRows.products = 0
    theta = np.random.default_rng(4).standard_normal(X.shape[1])
    theta[0] = 0.0
    z = X @ theta
    assert problem.data_value(theta) == np.sum(loss.loss(z, y))
    assert_array_equal(problem.data_gradient(theta.copy()), X.T @ loss.dz(z, y))
    assert_allclose(problem.data_hessian(theta), X.T @ (loss.d2z(z, y)[:, None] * X),
                    rtol=1e-12)
    assert _CountingRows.products == 1
    assert not problem._last_predictor[1].flags.writeable  # no loss may change it in place
    signed_zero = theta.copy()
    signed_zero[0] = -0.0
    problem.data_value(signed_zero)
    other = theta + 1.0
    assert problem.data_value(other) == np.sum(loss.loss(X @ other, y))
    assert _CountingRows.products == 3


def test_well_conditioned_leaves_a_positive_definite_matrix_alone():
    A = np.random.default_rng(4).standard_normal((50, 8))
    H = GramPlusDiagonal(A.T @ A, 1.0)
    assert _well_conditioned(H) is H


def test_well_conditioned_trusts_a_public_ridge():
    # a semi-definite part plus a ridge far above the floor: no factorisation needed
    A = np.random.default_rng(6).standard_normal((3, 8))
    H = GramPlusDiagonal(A.T @ A, 0.5)
    assert _well_conditioned(H, diagonal_floor=0.5) is H
    # a ridge below the floor proves nothing: the singular part is lifted
    singular = GramPlusDiagonal(A.T @ A, 0.0)
    assert np.linalg.eigvalsh(_well_conditioned(singular, diagonal_floor=1e-300).block())[0] > 0


@pytest.mark.parametrize("rank", [0, 3, 7])
def test_well_conditioned_lifts_the_smallest_eigenvalue_to_the_floor(rank):
    # singular (or nearly: rank 7 of 8 plus rounding) matrices get the eigenvalue floor
    A = np.random.default_rng(5).standard_normal((rank, 8))
    gram = A.T @ A + (np.eye(8) if rank == 0 else 0.0)
    if rank == 0:
        gram[0, 0] = 0.0   # a zero eigenvalue next to ones
    eigenvalues = np.linalg.eigvalsh(gram)
    lifted = np.linalg.eigvalsh(_well_conditioned(GramPlusDiagonal(gram, 0.0)).block())
    floor = 1e-10 * eigenvalues[-1]
    assert lifted[0] == pytest.approx(floor, rel=1e-3, abs=1e-12 * eigenvalues[-1])
    assert_allclose(lifted[1:], np.maximum(eigenvalues[1:] + floor - eigenvalues[0], 0.0),
                    rtol=1e-9, atol=1e-12 * eigenvalues[-1])


def test_gram_plus_diagonal_is_the_explicit_sum(monkeypatch):
    """Products, principal blocks (new arrays: the Gram is never modified), shifts and
    the row-sum bound, against the explicit matrix; rows of the bound by several
    blocks."""
    rng = np.random.default_rng(8)
    A = rng.standard_normal((30, 9))
    gram, diagonal = A.T @ A - 2.0, rng.random(9)
    kept = gram.copy()
    H = GramPlusDiagonal(gram, diagonal)
    explicit = gram + np.diag(diagonal)
    v = rng.standard_normal(9)
    assert_allclose(H @ v, explicit @ v, rtol=1e-13)
    assert_allclose(H.block(), explicit, rtol=1e-15)
    index = np.array([1, 4, 8])
    assert_allclose(H.block(index), explicit[np.ix_(index, index)], rtol=1e-15)
    assert_allclose(H.shifted(3.0).block(), explicit + 3.0 * np.eye(9), rtol=1e-15)
    assert H.largest_row_sum() == pytest.approx(np.abs(explicit).sum(axis=1).max(), rel=1e-14)
    monkeypatch.setattr(_composite, "_ROW_BLOCK_ENTRIES", 4 * 9)   # blocks of 4 rows
    assert H.largest_row_sum() == pytest.approx(np.abs(explicit).sum(axis=1).max(), rel=1e-14)
    assert_array_equal(gram, kept)


def _ball_problem(n, d, coef_bound, seed=0):
    """A squared-loss lasso whose unconstrained minimiser lies outside the ball."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) / np.sqrt(d)
    y = X @ rng.standard_normal(d) * 10.0 + rng.standard_normal(n)
    linear = 50.0 * rng.standard_normal(d)
    return CompositeProblem(X, y, SquaredLoss(), linear, 0.1, 1e-3, coef_bound=coef_bound)


def _ridge_ball_minimiser(problem):
    """Exact minimiser of the L1-free squared-loss objective on the ball, independently:
    an eigendecomposition and bisection of the norm's secular equation in the multiplier."""
    eigenvalues, vectors = np.linalg.eigh(problem.X.T @ problem.X)
    c = vectors.T @ (problem.X.T @ problem.y - problem.linear)
    ridge, bound = problem.ridge[0], problem.coef_bound

    def norm(mu):
        return np.linalg.norm(c / (eigenvalues + ridge + mu))

    lo, hi = 0.0, 1.0
    while norm(hi) > bound:
        lo, hi = hi, 2.0 * hi
    while lo < 0.5 * (lo + hi) < hi:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if norm(mid) > bound else (lo, mid)
    return vectors @ (c / (eigenvalues + ridge + hi))


@pytest.mark.parametrize("estimate", [None, 3.0])
@pytest.mark.parametrize("shape, ridge", [((2000, 50), 1e-3), ((100, 200), 3.0),
                                          ((50, 10), 1e-2), ((300, 300), 0.5)])
def test_ball_certificate_bounds_the_distance_to_the_exact_minimiser(monkeypatch, shape, ridge,
                                                                     estimate):
    # the release is the point solved at the bracket's feasible end; the certified
    # distance (its error plus the path's from that end to mu*) bounds its distance to
    # the exact constrained minimiser and meets the public radius in few inner solves,
    # with or without the unconstrained solve (skipped given a norm estimate >= 2 B)
    import skdp.solvers._composite as composite

    n, d = shape
    problem = _ball_problem(n, d, coef_bound=1.0)
    problem.l1[:] = 0.0
    problem.ridge[:] = ridge
    solves = []
    inner = composite.prox_newton
    monkeypatch.setattr(composite, "prox_newton",
                        lambda *args, **kwargs: solves.append(1) or inner(*args, **kwargs))
    tol = 1e-8
    radius = 2.0 * np.sqrt(d) * tol / ridge
    result = composite.solve_composite(problem, np.zeros(d), tol=tol, max_iter=100,
                                       ball_radius=radius, unconstrained_norm=estimate)
    assert result.converged and result.multiplier > 0
    assert np.linalg.norm(result.theta) <= 1.0
    assert result.distance <= radius
    assert np.linalg.norm(result.theta - _ridge_ball_minimiser(problem)) <= result.distance
    # 8 to 9 before the first multiplier was bounded and the secant point straddled
    assert len(solves) <= 6


def test_ball_search_grows_the_multiplier_until_feasible():
    # a ball far inside the unconstrained minimiser's norm: several infeasible ends
    # before the first feasible one
    from skdp.solvers._composite import solve_composite

    # (the search starts at max|gradient(0)| / B; a flat gradient of 300 coordinates
    # puts the multiplier near sqrt(300) times that)
    d = 300
    X = np.random.default_rng(4).standard_normal((400, d)) / d
    problem = CompositeProblem(X, np.zeros(400), SquaredLoss(), np.full(d, 50.0), 0.0, 0.1,
                               coef_bound=1e-3)
    result = solve_composite(problem, np.zeros(d), tol=1e-8, max_iter=100)
    assert result.converged and result.multiplier > 10 * problem.scale / 1e-3
    assert np.linalg.norm(result.theta - _ridge_ball_minimiser(problem)) <= result.distance


@pytest.mark.parametrize("l1, ridge", [(0.0, 0.5), (0.1, 1e-3), (5.0, 0.0)])
def test_first_multiplier_is_feasible(l1, ridge):
    # ||theta(mu)|| <= ||(|g(0)| - l1)_+|| / (ridge + mu): the search's first multiplier
    # puts the exact minimiser in the ball, close to its edge when the ball binds hard
    from skdp.solvers._composite import _feasible_multiplier

    problem = _ball_problem(300, 40, coef_bound=0.05)
    problem.l1[:] = l1
    problem.ridge[:] = ridge
    mu = _feasible_multiplier(problem, 0.05, ridge)
    theta = prox_newton(problem, np.zeros(40), mu=mu, tol=1e-12, max_iter=100).theta
    assert 0.9 * 0.05 <= np.linalg.norm(theta) <= 0.05


def test_segment_changes_are_the_objective_differences():
    from skdp.solvers._composite import _segment_changes

    rng = np.random.default_rng(7)
    A = rng.standard_normal((30, 12))
    H, c, l1 = A.T @ A, rng.standard_normal(12), rng.random(12)
    current, target = rng.standard_normal(12), rng.standard_normal(12)
    step = target - current
    crossing = np.flatnonzero(np.sign(target) != np.sign(current))
    ts = np.concatenate([[1.0], current[crossing] / (current[crossing] - target[crossing])])

    def objective(z):
        return 0.5 * z @ H @ z - c @ z + l1 @ np.abs(z)

    expected = []
    for i, t in enumerate(ts):
        point = current + t * step
        if i:
            point[crossing[i - 1]] = 0.0
        expected.append(objective(point) - objective(current))
    changes = _segment_changes((H @ current - c) @ step, step @ H @ step, l1, current, step,
                               ts, crossing)
    assert len(crossing) >= 3
    assert_allclose(changes, expected, rtol=1e-9, atol=1e-12)


def test_ball_certificate_is_not_claimed_below_rounding():
    # a bracket narrower than rounding allows cannot be certified: not converged
    from skdp.solvers._composite import solve_composite

    problem = _ball_problem(200, 20, coef_bound=1.0)
    result = solve_composite(problem, np.zeros(20), tol=1e-8, max_iter=100, ball_radius=1e-30)
    assert result.residual <= 1e-8
    assert not result.converged and result.distance > 1e-30


@pytest.mark.parametrize("shape", [(2000, 50), (100, 200)])
def test_ball_search_with_l1_meets_the_default_radius(shape):
    from skdp.solvers._composite import solve_composite

    problem = _ball_problem(*shape, coef_bound=1.0)
    result = solve_composite(problem, np.zeros(shape[1]), tol=1e-8, max_iter=100)
    assert result.converged and result.multiplier > 0
    assert result.distance <= 2.0 * np.sqrt(shape[1]) * 1e-8 / 1e-3


def test_napp_warm_start_of_a_quadratic_stops_when_its_signs_repeat():
    # each iteration of a constant-curvature loss is an exact weighted-ridge solve: once
    # the sign pattern repeats the warm start stops (the logistic loss runs to rtol)
    from skdp.solvers._composite import napp_iterations

    squared = _ball_problem(2000, 50, coef_bound=None)
    theta, n_iter = napp_iterations(squared, max_iter=10, rtol=0.0)
    assert n_iter == 2 and np.all(theta != 0)
    logistic = _problem(LogisticLoss(), n=2000, d=20)
    assert napp_iterations(logistic, max_iter=10, rtol=0.0)[1] == 10


def test_prox_newton_stops_when_a_step_moves_nothing():
    # an unreachable tolerance: the iterations stop at rounding level, not at max_iter
    problem = _ball_problem(500, 20, coef_bound=None)
    result = prox_newton(problem, np.zeros(20), tol=1e-300, max_iter=100)
    assert not result.converged
    assert result.n_iter < 20
    assert result.residual < 1e-8


def _noisy_lasso(seed=0):
    """A lasso whose noise term ``b`` is large (about 8e4, a small epsilon's): the
    gradients, and with them the subproblem's rounding guard ``1e-12 |c|``, are large."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((200, 6))
    X *= 3.0 / np.linalg.norm(X, axis=1, keepdims=True)
    y = 50.0 * rng.standard_normal(200)
    return CompositeProblem(X, y, SquaredLoss(), 8e4 * rng.standard_normal(6), 5.0, 60.0)


def _l1_violation(H, c, l1, z):
    g = H @ z - c
    return np.max(np.where(z != 0, np.abs(g + l1 * np.sign(z)), np.maximum(np.abs(g) - l1, 0.0)))


def test_quadratic_l1_moves_a_warm_start_that_only_its_rounding_guard_accepts():
    # c of size 1e5: the guard 1e-12 max|c| accepts a warm start violating the
    # optimality conditions by 4e-8 and returns it unmoved; a caller's smaller tol
    # makes it solve to rounding
    problem = _noisy_lasso()
    H = problem.smooth_hessian(np.zeros(6))
    c, l1 = -problem._gradient_at_zero - problem.linear, problem.l1
    exact = quadratic_l1(H, c, l1, np.zeros(6))
    assert _l1_violation(H, c, l1, exact) <= 1e-10 and np.all(exact != 0)
    start = exact + 1e-10
    guard = 1e-12 * np.max(np.abs(c))
    assert 1e-8 < _l1_violation(H, c, l1, start) < guard
    assert_array_equal(quadratic_l1(H, c, l1, start), start)
    moved = quadratic_l1(H, c, l1, start, tol=1e-10)
    assert _l1_violation(H, c, l1, moved) <= 1e-10
    assert_allclose(moved, exact, rtol=0, atol=1e-12)


@pytest.mark.parametrize("mu", [1e-10, 3e-10, 1e-9])
def test_prox_newton_meets_a_tolerance_below_the_subproblem_guard_from_a_warm_start(mu):
    # the ball search's probes: the point solved at one multiplier, warm start of a
    # multiplier 1e-10 away, violates the target by mu ||theta|| (6e-8 and up). Before
    # the warm start's acceptance followed the target, the subproblem returned it
    # unmoved and proximal Newton stopped there as if at rounding level, uncertified,
    # which failed every two-stage NAPPLasso fit of the docstring's example
    problem = _noisy_lasso()
    start = prox_newton(problem, np.zeros(6), tol=1e-10, max_iter=100)
    assert start.converged
    assert kkt_residual(problem, start.theta, mu) > 100 * 1e-10
    result = prox_newton(problem, start.theta, mu=mu, tol=1e-10, max_iter=100)
    assert result.converged and result.residual <= 1e-10
    assert kkt_residual(problem, result.theta, mu) <= 1e-10


# -- the warm start's Hessian: a fixed subsample of the rows when they are many ---------

def test_warm_start_hessian_is_exact_for_few_rows_or_constant_curvature():
    few = _problem(LogisticLoss(), n=279, d=7)          # n < 40 d
    assert _composite.warm_start_hessian(few) == few.data_hessian
    squared = _problem(SquaredLoss(), n=3000, d=7)      # the Gram is computed once anyway
    assert _composite.warm_start_hessian(squared) == squared.data_hessian


def test_warm_start_hessian_reads_every_stride_th_row():
    problem = _problem(LogisticLoss(), n=3000, d=7)     # stride 3000 // 140 = 21
    theta = np.linspace(-0.5, 0.5, 7)
    rows, y = problem.X[::21], problem.y[::21]
    expected = 21 * rows.T @ (LogisticLoss().d2z(rows @ theta, y)[:, None] * rows)
    assert_allclose(_composite.warm_start_hessian(problem)(theta), expected, rtol=1e-12)


@pytest.mark.parametrize("l1", [0.1, 30.0])
def test_subsampled_warm_start_releases_the_same_minimiser(monkeypatch, l1):
    """Only the path changes: the certified minimiser is the one of the exact warm start
    (both within the public tolerance of the exact minimiser)."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((4000, 8)) / 3.0
    y = np.where(X @ rng.standard_normal(8) + 0.3 * rng.standard_normal(4000) > 0, 1.0, -1.0)
    problem = CompositeProblem(X, y, LogisticLoss(), rng.standard_normal(8) * 20, l1, 1.0)
    subsampled = _composite.solve_napp(problem, tol=1e-9, max_iter=100)
    monkeypatch.setattr(_composite, "warm_start_hessian", lambda p: p.data_hessian)
    exact = _composite.solve_napp(problem, tol=1e-9, max_iter=100)
    assert subsampled.converged and exact.converged
    assert_allclose(subsampled.theta, exact.theta, atol=2e-9 * np.sqrt(8))
    assert_array_equal(subsampled.theta == 0, exact.theta == 0)
