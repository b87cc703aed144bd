"""Sparse input end to end, and the memory check that runs before any work."""

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose

from skdp import (DPSGDClassifier, NAPPLasso, NAPPLassoClassifier, ObjPertLogisticRegression,
                  OutputPertSVM)
from skdp.utils import _memory


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
def test_napp_refuses_a_sparse_design_too_large_to_densify_before_any_noise(estimator,
                                                                              monkeypatch):
    """NAPP's solvers need the dense design and d x d Gram matrices: with 1 GiB free,
    a 2,000 x 50,000 CSR design (0.8 GB dense, 40 GB of Gram matrices) is refused
    with the reason, before any noise is drawn."""
    monkeypatch.setattr(_memory, "available_memory", lambda: 2.0**30)
    X = sp.random(2000, 50_000, density=1e-4, format="csr", random_state=0)
    y = np.arange(2000) % 2
    rng = np.random.default_rng(0)
    before = rng.bit_generator.state
    with pytest.raises(MemoryError, match="NAPP densifies sparse input.*d x d Gram.*"
                                          "no privacy budget"):
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
