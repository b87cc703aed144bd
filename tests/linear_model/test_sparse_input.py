"""Sparse input end to end, and the memory check that runs before any work."""

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose

from skdp import (DPSGDClassifier, NAPPLasso, NAPPLassoClassifier, ObjPertLogisticRegression,
                  OutputPertSVM)
from skdp.utils import _memory

from ..solvers._memory import peak_allocation


def _data(seed=0, n=120, d=6):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.4, format="csr", random_state=seed)
    y = (X @ rng.normal(size=d) > 0.1).astype(int)
    return X, y


@pytest.mark.parametrize("estimator", [
    ObjPertLogisticRegression(random_state=3),
    OutputPertSVM(C=0.1, random_state=3),
    DPSGDClassifier(random_state=3),
    NAPPLassoClassifier(alpha=0.1, random_state=3),
    NAPPLasso(alpha=0.1, coef_bound=5.0, y_bound=1.0, random_state=3),
], ids=lambda e: type(e).__name__)
def test_sparse_input_gives_the_dense_model(estimator):
    """Same seed, same data as CSR or as an array: the same model and predictions
    (up to the solvers' certified tolerance)."""
    X, y = _data()
    dense = estimator.__class__(**estimator.get_params()).fit(X.toarray(), y)
    sparse = estimator.__class__(**estimator.get_params()).fit(X, y)
    assert_allclose(sparse.coef_, dense.coef_, atol=1e-6)
    assert_allclose(sparse.predict(X), dense.predict(X.toarray()), atol=1e-6)


@pytest.mark.parametrize("estimator", [NAPPLasso(coef_bound=5.0, y_bound=1.0),
                                       NAPPLassoClassifier()], ids=["NAPPLasso", "classifier"])
def test_napp_refuses_a_design_whose_gram_matrices_cannot_fit_before_any_noise(estimator,
                                                                               monkeypatch):
    """NAPP reads a CSR design in place but its solvers form d x d Gram and Hessian
    matrices: with 1 GiB free, a 2,000 x 50,000 CSR design (56 GiB of such matrices)
    is refused with the reason, before any noise is drawn."""
    monkeypatch.setattr(_memory, "available_memory", lambda: 2.0**30)
    X = sp.random(2000, 50_000, density=1e-4, format="csr", random_state=0)
    y = np.arange(2000) % 2
    rng = np.random.default_rng(0)
    before = rng.bit_generator.state
    with pytest.raises(MemoryError, match="NAPP's solver.*d x d Gram.*50001 "
                                          "coefficients.*no privacy budget"):
        estimator.set_params(random_state=rng).fit(X, y)
    assert rng.bit_generator.state == before


def test_a_dense_design_that_cannot_fit_is_refused_before_any_noise(monkeypatch):
    """The hinge solver (liblinear) needs the clipped design explicitly; the Newton
    solvers do not: they apply the row factors and the intercept inside the products."""
    monkeypatch.setattr(_memory, "available_memory", lambda: 1e5)
    X = np.random.default_rng(0).normal(size=(2000, 10))
    y = np.arange(2000) % 2
    rng = np.random.default_rng(0)
    before = rng.bit_generator.state
    with pytest.raises(MemoryError, match="clipped design.*GiB"):
        OutputPertSVM(random_state=rng).fit(X, y)
    assert rng.bit_generator.state == before
    ObjPertLogisticRegression(random_state=0).fit(X, y)
    OutputPertSVM(loss="logistic", random_state=0).fit(X, y)


def test_available_memory_reads_a_positive_number():
    assert _memory.available_memory() > 0


@pytest.mark.parametrize("estimator", [
    NAPPLasso(alpha=1.0, coef_bound=1.0, y_bound=1.0, random_state=0),
    NAPPLassoClassifier(alpha=1.0, random_state=0),
], ids=lambda e: type(e).__name__)
def test_napp_reads_x_in_place_and_holds_two_gram_sized_matrices(estimator):
    """No copy of X (a third of its rows clipped, an intercept): the fit's peak is
    the d x d Gram matrix, one Hessian block factorised in place, the Gram's buffer of
    256 rows and a few vectors of n (the former clipped copy and Hessian copies: 19
    Gram sizes here)."""
    n, d = 6000, 400
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, d))
    X /= 1.01 * np.linalg.norm(X, axis=1, keepdims=True)
    X[::3] *= 1.5
    y = X[:, :5].sum(axis=1) + 0.1 * rng.normal(size=n)
    y = y if isinstance(estimator, NAPPLasso) else (y > 0).astype(int)
    estimator.fit(X[:100], y[:100])
    peak = peak_allocation(lambda: estimator.fit(X, y))
    coefficients = d + 1
    assert peak < 8 * (2 * coefficients**2 + 256 * coefficients + 10 * n), peak
