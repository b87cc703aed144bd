"""The partitioned Newton solver against the in-memory one, through one protocol."""

import numpy as np
import pytest
from sklearn.datasets import make_classification

from skdp.losses import make_loss
from skdp.solvers import newton_minimise
from skdp.solvers._partitioned import (InMemoryReductions, block_design, is_dask_collection,
                                       partitioned_newton_minimise)


@pytest.fixture(scope="module")
def problem():
    X, y = make_classification(n_samples=400, n_features=6, random_state=3)
    X[5] *= 1e250                                     # a wide row
    design = block_design(X, 1.0, 1.0)
    targets = np.where(y == 1, 1.0, -1.0)
    linear = np.random.default_rng(0).standard_normal(design.shape[1])
    return X, y, design, targets, linear


@pytest.mark.parametrize("loss", ["logistic", "huber"])
def test_same_minimiser_as_in_memory_newton(problem, loss):
    _, _, design, targets, linear = problem
    loss = make_loss(loss, huber_h=0.5)
    kw = dict(C=3.0, ridge=1.5, linear=linear, tol=1e-9, max_iter=50)
    ours = partitioned_newton_minimise(InMemoryReductions(design, targets), loss, **kw)
    theirs = newton_minimise(design, targets, loss, **kw)
    assert ours.converged and theirs.converged
    # both within tol / ridge of the exact minimiser
    assert np.linalg.norm(ours.theta - theirs.theta) <= 2 * kw["tol"] / kw["ridge"]


def test_one_partition_equals_in_memory_reductions(problem):
    da = pytest.importorskip("dask.array")
    dask = pytest.importorskip("dask")
    from skdp.solvers._partitioned import PartitionedDesign

    X, y, design, targets, linear = problem
    Xd = da.from_array(X, chunks=(X.shape[0], -1))
    partitioned = PartitionedDesign(Xd, da.from_array(y, chunks=(X.shape[0],)),
                                    np.array([0, 1]), 1.0, 1.0)
    assert is_dask_collection(Xd) and not is_dask_collection(X)
    loss = make_loss("logistic")
    kw = dict(C=3.0, ridge=1.5, linear=linear, tol=1e-9, max_iter=50)
    with dask.config.set(scheduler="synchronous"):
        a = partitioned_newton_minimise(partitioned, loss, **kw)
    b = partitioned_newton_minimise(InMemoryReductions(design, targets), loss, **kw)
    np.testing.assert_array_equal(a.theta, b.theta)       # the same arithmetic
    assert a.certified_norm == b.certified_norm and a.n_iter == b.n_iter


def test_inconclusive_certificate_is_not_converged(problem):
    _, _, design, targets, linear = problem
    result = partitioned_newton_minimise(InMemoryReductions(design, targets),
                                         make_loss("logistic"), C=3.0, ridge=1.5,
                                         linear=linear, tol=1e-17, max_iter=20)
    assert not result.converged


def test_accurate_gradient_over_partitions(problem):
    """The fallback's double-double gradient added over partitions agrees with the
    in-memory one within the sum of their proven bounds, which are tiny."""
    da = pytest.importorskip("dask.array")
    dask = pytest.importorskip("dask")
    from skdp.solvers._partitioned import PartitionedDesign, accurate_partitioned_gradient

    X, y, design, targets, linear = problem
    loss = make_loss("logistic")
    point = (np.linspace(-2.0, 2.0, design.shape[1]), np.full(design.shape[1], 1e-20))
    chunks = (1, 150, 100, 149)
    partitioned = PartitionedDesign(da.from_array(X, chunks=(chunks, -1)),
                                    da.from_array(y, chunks=(chunks,)), np.array([0, 1]),
                                    1.0, 1.0)
    with dask.config.set(scheduler="synchronous"):
        (hi, lo), bound = accurate_partitioned_gradient(partitioned, point, loss)
    (mem_hi, mem_lo), mem_bound = accurate_partitioned_gradient(
        InMemoryReductions(design, targets), point, loss)
    assert 0 < bound < 1e-25 and 0 < mem_bound < 1e-25
    assert np.linalg.norm((hi - mem_hi) + (lo - mem_lo)) <= bound + mem_bound
    # the float64 gradient agrees to its rounding
    plain = design.transpose_product(loss.dz(design @ point[0], targets))
    np.testing.assert_allclose(hi, plain, rtol=1e-12, atol=1e-12)


def test_wide_design_uses_hessian_products(monkeypatch):
    """Above 120 coefficients (the in-memory rule) the solver never forms a Hessian:
    Newton-CG on Hessian-vector products over the partitions, the same minimiser as
    the in-memory solver within the certified distance."""
    da = pytest.importorskip("dask.array")
    dask = pytest.importorskip("dask")
    from skdp.solvers._design import ScaledDesign
    from skdp.solvers._partitioned import PartitionedDesign, partitioned_forms_hessian

    assert partitioned_forms_hessian(120) and not partitioned_forms_hessian(121)
    X, y = make_classification(n_samples=300, n_features=150, n_informative=10,
                               random_state=1)
    design, targets = block_design(X, 1.0, 1.0), np.where(y == 1, 1.0, -1.0)
    linear = np.random.default_rng(1).standard_normal(design.shape[1])
    loss = make_loss("logistic")
    kw = dict(C=3.0, ridge=1.5, linear=linear, tol=1e-9, max_iter=50)
    theirs = newton_minimise(design, targets, loss, **kw)

    def no_hessian(*args, **kwargs):
        raise AssertionError("a Hessian was formed")

    monkeypatch.setattr(ScaledDesign, "weighted_gram", no_hessian)
    chunks = (1, 120, 179)
    partitioned = PartitionedDesign(da.from_array(X, chunks=(chunks, -1)),
                                    da.from_array(y, chunks=(chunks,)), np.array([0, 1]),
                                    1.0, 1.0)
    with dask.config.set(scheduler="synchronous"):
        ours = partitioned_newton_minimise(partitioned, loss, **kw)
    assert ours.converged and theirs.converged
    assert np.linalg.norm(ours.theta - theirs.theta) <= 2 * kw["tol"] / kw["ridge"]
