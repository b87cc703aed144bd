"""The Newton solver's two directions: the dense Hessian and Hessian-vector products."""

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose

from skdp import ObjPertLogisticRegression, OutputPertSVM
from skdp.losses import HuberHingeLoss, LogisticLoss
from skdp.solvers import (_design, _newton, glm_gradient, glm_hessian, glm_hessian_solve,
                          newton_minimise, uses_hessian_products)

from ._memory import peak_allocation


def _problem(sparse, seed=0, n=400, d=30):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.2, random_state=seed, format="csr") if sparse else \
        rng.normal(size=(n, d)) / np.sqrt(d)
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    return X, y, rng.normal(size=d)


@pytest.fixture
def direction(monkeypatch):
    """Force the solver's direction: ``direction("products")`` or ``("cholesky")``."""
    def force(kind):
        monkeypatch.setattr(_newton, "uses_hessian_products", lambda X: kind == "products")
    return force


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("loss", [LogisticLoss(), HuberHingeLoss(h=0.3)])
def test_both_directions_reach_the_same_certified_minimiser(direction, sparse, loss):
    """Each run is certified (its gradient norm, recomputed independently, is at most
    tol) and so within tol / ridge of the exact minimiser: the two runs are within
    2 tol / ridge of each other."""
    X, y, linear = _problem(sparse)
    C, ridge, tol = 5.0, 1.5, 1e-9
    thetas = []
    for kind in ("cholesky", "products"):
        direction(kind)
        result = newton_minimise(X, y, loss, C=C, ridge=ridge, linear=linear, tol=tol,
                                 max_iter=100)
        gradient = glm_gradient(result.theta, X, y, loss, C, ridge, linear)
        assert result.converged and np.linalg.norm(gradient) <= tol
        thetas.append(result.theta)
    assert np.linalg.norm(thetas[0] - thetas[1]) <= 2 * tol / ridge


@pytest.mark.parametrize("sparse", [False, True])
def test_hessian_solve_by_products_equals_the_dense_solve(direction, sparse):
    X, y, theta = _problem(sparse, seed=1)
    loss, C, ridge = LogisticLoss(), 3.0, 0.7
    rhs = np.random.default_rng(2).normal(size=X.shape[1])
    expected = np.linalg.solve(glm_hessian(theta, X, y, loss, C, ridge), rhs)
    direction("products")
    assert_allclose(glm_hessian_solve(theta, X, y, loss, C, ridge, rhs), expected,
                    rtol=1e-8, atol=1e-10)



def test_blocked_hessian_equals_the_textbook_formula(monkeypatch):
    """Blocks of a few rows (the last one partial) sum to ``C X^T diag(l'') X + ridge I``."""
    X, y, theta = _problem(False, seed=3, n=1000, d=20)
    loss, C, ridge = LogisticLoss(), 2.0, 0.3
    monkeypatch.setattr(_design, "_CACHE_BYTES", 8 * 20 * 64)  # 64-row blocks
    weights = C * loss.d2z(X @ theta, y)
    expected = X.T @ (weights[:, None] * X) + ridge * np.eye(20)
    assert_allclose(glm_hessian(theta, X, y, loss, C, ridge), expected, rtol=1e-12)


def test_tall_fit_reuses_the_exact_hessian(monkeypatch):
    """After the subsampled steps, one exact Hessian serves the last (chord) steps, and
    the certified minimiser is the one found with a fresh Hessian at every step."""
    X, y, linear = _problem(False, seed=4, n=20_000, d=20)
    loss, C, ridge, tol = LogisticLoss(), 1.0, 1.0, 1e-8
    formed = []
    hessian_at = _newton._hessian_at
    monkeypatch.setattr(_newton, "_hessian_at",
                        lambda z, X_, *args: formed.append(len(z)) or hessian_at(z, X_, *args))
    result = newton_minimise(X, y, loss, C=C, ridge=ridge, linear=linear, tol=tol,
                             max_iter=100)
    assert result.converged
    assert formed.count(len(y)) == 1 and len(formed) > 1  # subsampled ones first
    monkeypatch.setattr(_newton, "_CHORD_RATE", 0.0)  # a fresh Hessian at every step
    formed.clear()
    fresh = newton_minimise(X, y, loss, C=C, ridge=ridge, linear=linear, tol=tol,
                            max_iter=100)
    assert fresh.converged and formed.count(len(y)) >= 2
    assert np.linalg.norm(result.theta - fresh.theta) <= 2 * tol / ridge

def test_the_direction_rule_reads_only_the_shape():
    """Zero-strided views and empty sparse matrices have the shape without the data."""
    def dense(n, d):
        return np.broadcast_to(0.0, (n, d))

    assert not uses_hessian_products(dense(1_000_000, 100))  # tall: the Hessian is cheap
    assert uses_hessian_products(dense(20_000, 1_000))  # wide: products
    assert uses_hessian_products(dense(20_000, 5_000))
    assert uses_hessian_products(dense(10, 10_000))  # a d x d Hessian above the cap
    assert uses_hessian_products(sp.csr_array((50_000, 50_000)))
    assert not uses_hessian_products(sp.csr_array(np.eye(20)))


@pytest.mark.parametrize("estimator", [
    ObjPertLogisticRegression(epsilon=1.0, random_state=0),
    OutputPertSVM(epsilon=1.0, loss="logistic", C=0.1, random_state=0),
])
def test_wide_sparse_fit_never_forms_a_dense_hessian(estimator):
    """A 3,000 x 20,000 CSR design: its Hessian would take 3.2 GB; the fit's peak
    allocation stays under 40 MB and its certificate holds."""
    X = sp.random(3000, 20_000, density=0.002, format="csr", random_state=0)
    y = np.random.default_rng(0).integers(0, 2, size=3000)
    peak = peak_allocation(lambda: estimator.fit(X, y))
    assert peak < 40e6
    assert estimator.coef_.shape == (1, 20_000)
