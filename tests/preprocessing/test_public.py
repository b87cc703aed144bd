"""Transformers of declared bounds: sklearn-compatible, and nothing learned from rows."""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone
from sklearn.preprocessing import MinMaxScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from skdp.preprocessing import BoundedScaler, Clipper


@parametrize_with_checks([BoundedScaler(-3.0, 3.0), BoundedScaler(-3.0, 3.0, clip=False),
                          Clipper(-1.0, 1.0)])
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_scaling_matches_min_max_scaler_with_declared_bounds(seed):
    rng = np.random.default_rng(seed)
    lower, upper = np.array([0.0, -5.0, 10.0]), np.array([100.0, 5.0, 11.0])
    X = rng.uniform(lower, upper, size=(50, 3))
    # MinMaxScaler learns the extremes: give it rows that contain exactly the bounds
    reference = MinMaxScaler((-1.0, 2.0)).fit(np.vstack([lower, upper]))
    ours = BoundedScaler(lower, upper, feature_range=(-1.0, 2.0)).fit(X)
    assert_allclose(ours.transform(X), reference.transform(X))
    assert_allclose(ours.inverse_transform(ours.transform(X)), X)


@pytest.mark.parametrize("make", [lambda: BoundedScaler(0, 10), lambda: Clipper(0, 10)])
def test_fit_learns_nothing_from_the_values(make, seed):
    """Two datasets of the same shape give the same fitted transformer: its output on
    new rows is the same, and so is every fitted attribute."""
    rng = np.random.default_rng(seed)
    a, b = rng.normal(5, 1, size=(40, 2)), rng.normal(-50, 100, size=(40, 2))
    fitted_a, fitted_b = make().fit(a), make().fit(b)
    new = rng.normal(5, 20, size=(10, 2))
    assert_array_equal(fitted_a.transform(new), fitted_b.transform(new))
    assert sorted(vars(fitted_a)) == sorted(vars(fitted_b))
    for name, value in vars(fitted_a).items():
        assert_array_equal(value, vars(fitted_b)[name])


def test_fit_does_not_check_the_values_for_infinity():
    # an error on an infinite value would itself depend on the rows
    X = np.array([[np.inf, -np.inf], [np.nan, 1.0]])
    assert_array_equal(BoundedScaler(0, 2).fit_transform(X), [[1.0, 0.0], [np.nan, 0.5]])
    assert_array_equal(Clipper(0, 2).fit_transform(X), [[2.0, 0.0], [np.nan, 1.0]])


def test_values_outside_the_bounds_are_clipped_or_not():
    X = [[-10.0], [5.0], [20.0]]
    assert_allclose(BoundedScaler(0, 10).fit_transform(X).ravel(), [0.0, 0.5, 1.0])
    assert_allclose(BoundedScaler(0, 10, clip=False).fit_transform(X).ravel(),
                    [-1.0, 0.5, 2.0])


def test_per_feature_bounds_and_feature_names():
    pd = pytest.importorskip("pandas")
    X = pd.DataFrame({"age": [30.0, 95.0], "hours": [40.0, 100.0]})
    scaler = BoundedScaler([0, 0], [100, 80]).set_output(transform="pandas").fit(X)
    out = scaler.transform(X)
    assert list(out.columns) == ["age", "hours"]
    assert_allclose(out.to_numpy(), [[0.3, 0.5], [0.95, 1.0]])
    assert_array_equal(scaler.lower_, [0.0, 0.0])
    assert_array_equal(scaler.upper_, [100.0, 80.0])


def test_float32_is_preserved():
    X = np.array([[1.0, 2.0]], dtype=np.float32)
    assert BoundedScaler(0, 4).fit_transform(X).dtype == np.float32
    assert Clipper(0, 1).fit_transform(X).dtype == np.float32


@pytest.mark.parametrize("params, match", [
    (dict(lower=1.0, upper=1.0), "lower < upper"),
    (dict(lower=[0.0, 2.0], upper=1.0), "lower < upper"),
    (dict(lower=[0.0, 1.0, 2.0], upper=5.0), r"shape \(2,\)"),
    (dict(lower=[[0.0, 1.0]], upper=5.0), r"shape \(2,\)"),
    (dict(lower=0.0, upper=np.inf), "finite"),
    (dict(lower=np.nan, upper=1.0), "finite"),
    (dict(lower=[0.0, None], upper=1.0), "finite"),
    (dict(lower=0.0, upper=1.0, feature_range=(1.0, 0.0)), "min < max"),
    (dict(lower=0.0, upper=1.0, feature_range=(0.0, np.inf)), "finite"),
    (dict(lower=0.0, upper=1.0, feature_range=(0.0, 1.0, 2.0)), "two numbers"),
])
def test_bad_bounds_of_the_scaler(params, match):
    with pytest.raises(ValueError, match=match):
        BoundedScaler(**params).fit([[0.5, 0.5]])


@pytest.mark.parametrize("params, match", [
    (dict(lower=2.0, upper=1.0), "lower <= upper"),
    (dict(lower=np.nan, upper=1.0), "not NaN"),
    (dict(lower="a", upper=1.0), "lower"),
])
def test_bad_bounds_of_the_clipper(params, match):
    with pytest.raises(ValueError, match=match):
        Clipper(**params).fit([[0.5, 0.5]])


def test_clipper_accepts_infinite_and_equal_bounds():
    X = [[-5.0, 5.0]]
    assert_array_equal(Clipper(-np.inf, [np.inf, 1.0]).fit_transform(X), [[-5.0, 1.0]])
    assert_array_equal(Clipper(3.0, 3.0).fit_transform(X), [[3.0, 3.0]])


def test_parameters_are_stored_unmodified():
    lower = [0, 1]
    scaler = BoundedScaler(lower, 5)
    assert scaler.get_params()["lower"] is lower
    assert clone(scaler).get_params()["lower"] == lower


def test_sparse_input_is_refused():
    sp = pytest.importorskip("scipy.sparse")
    with pytest.raises(TypeError, match="[Ss]parse"):
        BoundedScaler(0, 1).fit(sp.csr_matrix(np.eye(2)))


@pytest.mark.parametrize("chunks", [7, (1, 20, 3, 16), 40], ids=["even", "uneven", "single"])
@pytest.mark.parametrize("make", [lambda: BoundedScaler([0, -5], [10, 5], clip=False),
                                  lambda: Clipper(0, [10, 2])])
def test_a_dask_array_is_fitted_on_its_shape_and_transformed_lazily(make, chunks, seed):
    """``fit`` computes no partition (a dask callback counts the tasks), the fitted
    attributes are the in-memory ones, and the lazy transform (and inverse) equals the
    in-memory one, bit for bit, for any row chunking."""
    dask = pytest.importorskip("dask")
    import dask.array as da
    from dask.callbacks import Callback

    X = np.random.default_rng(seed).normal(3, 8, size=(40, 2)).astype(np.float32)
    Xd = da.from_array(X, chunks=(chunks, 1))               # two column chunks, too
    tasks = []
    with Callback(pretask=lambda key, dsk, state: tasks.append(key)):
        fitted = make().fit(Xd)
        lazy = fitted.transform(Xd)
    assert tasks == [] and isinstance(lazy, da.Array) and lazy.dtype == np.float32
    in_memory = make().fit(X)
    for name, value in vars(in_memory).items():
        assert_array_equal(getattr(fitted, name), value)
    with dask.config.set(scheduler="synchronous"):
        assert_array_equal(lazy.compute(), in_memory.transform(X))
        if hasattr(fitted, "inverse_transform"):
            assert_array_equal(fitted.inverse_transform(lazy).compute(),
                               in_memory.inverse_transform(in_memory.transform(X)))


def test_a_dask_dataframe_is_refused_with_the_way_to_an_array():
    dd = pytest.importorskip("dask.dataframe")
    import pandas as pd

    frame = dd.from_pandas(pd.DataFrame({"a": [1.0, 2.0], "b": [3.0, 4.0]}), npartitions=1)
    with pytest.raises(TypeError, match="to_dask_array"):
        Clipper(0, 1).fit(frame)
