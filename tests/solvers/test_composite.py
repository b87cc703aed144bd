"""The composite (NAPP) solver's Hessians and their conditioning."""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from skdp.losses import LogisticLoss, SquaredLoss
from skdp.solvers._composite import CompositeProblem, _well_conditioned, weighted_gram


def _problem(loss, n=300, d=7, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = rng.standard_normal(n) if isinstance(loss, SquaredLoss) else rng.choice([-1.0, 1.0], n)
    return CompositeProblem(X, y, loss, np.zeros(d), 0.1, 0.0)


def test_weighted_gram_matches_explicit_product():
    rng = np.random.default_rng(1)
    X, weights = rng.standard_normal((1000, 13)), rng.random(1000)
    assert_allclose(weighted_gram(X, weights), X.T @ (weights[:, None] * X), rtol=1e-12)


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


def test_well_conditioned_leaves_a_positive_definite_matrix_alone():
    A = np.random.default_rng(4).standard_normal((50, 8))
    H = A.T @ A + np.eye(8)
    assert_array_equal(_well_conditioned(H), H)


@pytest.mark.parametrize("rank", [0, 3, 7])
def test_well_conditioned_lifts_the_smallest_eigenvalue_to_the_floor(rank):
    # singular (or nearly: rank 7 of 8 plus rounding) matrices get the eigenvalue floor
    A = np.random.default_rng(5).standard_normal((rank, 8))
    H = A.T @ A + (np.eye(8) if rank == 0 else 0.0)
    if rank == 0:
        H[0, 0] = 0.0   # a zero eigenvalue next to ones
    eigenvalues = np.linalg.eigvalsh(H)
    lifted = np.linalg.eigvalsh(_well_conditioned(H))
    floor = 1e-10 * eigenvalues[-1]
    assert lifted[0] == pytest.approx(floor, rel=1e-3, abs=1e-12 * eigenvalues[-1])
    assert_allclose(lifted[1:], np.maximum(eigenvalues[1:] + floor - eigenvalues[0], 0.0),
                    rtol=1e-9, atol=1e-12 * eigenvalues[-1])
