"""SSPLinearRegression with persons on a dask array: ``fit(X, y, groups=...)`` is the
in-memory person-level fit.

The person codes and each row's weight ``min(1, M / k)`` come from the person-keyed
reductions of :mod:`skdp.solvers._partitioned_persons` (a person's rows spread over
partitions); the statistics are then one pass of weighted partial sums, so the model is
the in-memory one up to the order of those sums, with the same noise.
"""

import numpy as np
import pytest
from numpy.testing import assert_allclose

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

import skdp.linear_model._sufficient_statistics as ssp_module  # noqa: E402
from skdp import SSPLinearRegression  # noqa: E402
from tests.linear_model.test_ssp import _gdp_mu, _loss  # noqa: E402
from tests._dask_persons import dask_persons, spanning_persons  # noqa: E402

N_ROWS, N_PERSONS = 300, 70
CHUNKINGS = {"even": 60, "uneven": (1, 120, 47, 132), "one-row chunk": (150, 1, 149),
             "single": N_ROWS}
R, Y = 3.0, 10.0


pytestmark = pytest.mark.usefixtures("synchronous_dask")


@pytest.fixture(scope="module")
def data():
    """Rows of 70 persons (1 to 12 rows each) in random order, so that most persons have
    rows in several partitions; some rows and targets beyond the bounds."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(N_ROWS, 5))
    X[150, 0] = 40.0                          # the one-row chunk, far outside the ball
    y = X @ np.arange(5.0) + rng.normal(size=N_ROWS)
    persons = rng.integers(0, N_PERSONS, N_ROWS)
    return X, y, np.array([f"p{p:02d}" for p in persons])


@pytest.mark.parametrize("chunks", CHUNKINGS.values(), ids=CHUNKINGS.keys())
@pytest.mark.parametrize("params", [dict(delta=0.0), dict(delta=1e-6),
                                    dict(alpha=0.5, max_rows_per_group=1.0)],
                         ids=["laplace", "gaussian", "fixed ridge"])
def test_persons_equal_in_memory_in_one_pass(data, chunks, params, monkeypatch):
    X, y, groups = data
    kw = {**dict(epsilon=1.0, data_norm=R, y_bound=Y, max_rows_per_group=2.0,
                 random_state=3), **params}
    memory = SSPLinearRegression(**kw).fit(X, y, groups=groups)
    passes, original = [], ssp_module.statistics_pass

    def counted(design, targets):
        passes.append(design.shape[0])
        return original(design, targets)
    monkeypatch.setattr(ssp_module, "statistics_pass", counted)
    Xd, yd, gd = dask_persons(X, y, groups, chunks)
    if len(Xd.chunks[0]) > 1:
        assert spanning_persons(groups, Xd.chunks[0]) >= N_PERSONS // 3
    partitioned = SSPLinearRegression(**kw).fit(Xd, yd, groups=gd)
    assert sorted(passes) == sorted(Xd.chunks[0])     # one pass of the statistics
    assert_allclose(partitioned.coef_, memory.coef_, rtol=1e-10, atol=1e-12)
    assert partitioned.intercept_ == pytest.approx(memory.intercept_, rel=1e-10, abs=1e-12)
    assert partitioned.alpha_ == pytest.approx(memory.alpha_, rel=1e-10, abs=1e-12)
    assert partitioned.weight_bound_ == memory.weight_bound_ == kw["max_rows_per_group"]
    assert partitioned.noise_floor_ == memory.noise_floor_
    assert partitioned.epsilon_spent_ == memory.epsilon_spent_
    assert partitioned.neighboring_ == memory.neighboring_ == "add_remove_person"


def test_noise_free_persons_are_the_person_weighted_ridge(data):
    """Without noise, the dask person-level fit is the ridge on the clipped rows, each
    weighted ``min(1, M / k)`` (``k`` its person's rows), computed here with numpy; it
    is not the row-level fit."""
    X, y, groups = data
    M, alpha = 2.0, 1.0
    kw = dict(epsilon=np.inf, alpha=alpha, data_norm=R, y_bound=Y, max_rows_per_group=M)
    Xd, yd, gd = dask_persons(X, y, groups, (1, 120, 47, 132))
    persons = SSPLinearRegression(**kw).fit(Xd, yd, groups=gd)
    rows = SSPLinearRegression(**kw).fit(Xd, yd)
    Z = np.c_[X * np.minimum(1.0, R / np.linalg.norm(X, axis=1))[:, None], np.ones(N_ROWS)]
    _, codes, sizes = np.unique(groups, return_inverse=True, return_counts=True)
    w = np.minimum(1.0, M / sizes[codes])
    assert np.mean(w < 1) > 0.5                          # the person weights bind
    target = np.clip(y, -Y, Y)
    theta = np.linalg.solve(Z.T @ (w[:, None] * Z) + alpha * np.eye(6), Z.T @ (w * target))
    assert_allclose(persons.coef_, theta[:-1], rtol=1e-10)
    assert persons.intercept_ == pytest.approx(theta[-1], rel=1e-10)
    assert not np.allclose(rows.coef_, persons.coef_, rtol=1e-3)


def test_replace_counts_persons_for_the_noise_floor(data):
    X, y, groups = data
    kw = dict(epsilon=1.0, data_norm=R, y_bound=Y, neighboring="replace", random_state=1)
    memory = SSPLinearRegression(**kw).fit(X, y, groups=groups)
    partitioned = SSPLinearRegression(**kw).fit(*dask_persons(X, y, groups, 60)[:2],
                                                groups=dask_persons(X, y, groups, 60)[2])
    assert partitioned.neighboring_ == "replace_person"
    assert partitioned.noise_floor_ == memory.noise_floor_
    assert_allclose(partitioned.coef_, memory.coef_, rtol=1e-10)


@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_person_neighbours_on_the_dask_path_lose_at_most_the_budget(delta):
    """An exact replay on the dask path: D against D plus one person of ``k`` extreme
    rows, each in its own partition; the released statistics' privacy loss (the
    worst-case log-ratio of the noise densities, from the statistics the dask path
    computed) stays within the budget, and the person's rows weighted alone would
    exceed it (the weights must be the person's, across partitions)."""
    rng = np.random.default_rng(4)
    d, epsilon, M = 2, 0.5, 2.0
    budget = _gdp_mu(epsilon, delta) if delta else epsilon
    kw = dict(epsilon=epsilon, delta=delta, data_norm=1.0, y_bound=1.0,
              max_rows_per_group=M, random_state=0)

    def release(X, y, groups):
        return SSPLinearRegression(**kw)._releases(
            da.from_array(X, chunks=(1, -1)), da.from_array(y, chunks=1),
            groups=da.from_array(groups, chunks=1))[0]

    worst = 0.0
    for k in (1, 3, 5):
        X, y = rng.uniform(-0.5, 0.5, (4, d)), rng.uniform(-1, 1, 4)
        groups = np.array([0, 1, 1, 2])
        row = np.full(d, 50.0)                        # clipped to the L1-extreme corner
        X2 = np.vstack([X, np.tile(row, (k, 1))])
        y2, g2 = np.r_[y, np.full(k, 40.0)], np.r_[groups, np.full(k, 9)]
        loss, _ = _loss(release(X, y, groups), release(X2, y2, g2))
        assert loss <= budget * (1 + 1e-9)
        worst = max(worst, loss)
        if k > M:   # the same rows as k single-row persons move the statistics more
            rows, _ = _loss(release(X, y, groups), release(X2, y2, np.r_[groups,
                                                                        10 + np.arange(k)]))
            assert rows > budget * 1.2
    assert worst >= 0.5 * budget


# -- refusals before any partition is computed ------------------------------------------------

def _unreadable(X, y, groups, chunks):
    """Dask arrays whose partitions raise when computed."""
    def boom(block):
        raise RuntimeError("a partition was computed")

    return tuple(a.map_blocks(boom, dtype=a.dtype) for a in dask_persons(X, y, groups, chunks))


@pytest.mark.parametrize("params, fit, message", [
    (dict(inference=True), {}, "pass no groups"),
    (dict(data_norm="private"), {}, "data_norm='private'"),
    (dict(y_bound=None), {}, "y_bound=None"),
    (dict(), dict(sample_weight=np.ones(N_ROWS)), "sample_weight and class_weight are not "
                                                  "supported on a dask array"),
])
def test_unsupported_refused_before_any_partition(data, no_ssp_noise, params, fit, message):
    Xd, yd, gd = _unreadable(*data, 60)
    estimator = SSPLinearRegression(**{**dict(data_norm=R, y_bound=Y), **params})
    with pytest.raises(ValueError, match=message):
        estimator.fit(Xd, yd, groups=gd, **fit)
    assert not hasattr(estimator, "coef_")


def test_bad_groups_refused_before_noise(data, no_ssp_noise):
    """As in memory; the message states no length (the row count is private)."""
    X, y, groups = data
    Xd, yd, _ = dask_persons(X, y, groups, 60)
    estimator = SSPLinearRegression(data_norm=R, y_bound=Y)
    with pytest.raises(ValueError, match="another number of labels") as refusal:
        estimator.fit(Xd, yd, groups=da.from_array(groups[:-1], chunks=60))
    assert str(N_ROWS - 1) not in str(refusal.value) and str(N_ROWS) not in str(refusal.value)
    assert not hasattr(estimator, "coef_")


@pytest.mark.parametrize("with_groups", [False, True], ids=["rows", "persons"])
def test_each_partition_of_the_rows_is_read_once(data, with_groups):
    """One read of the data: the input check, the clipping and the statistics run in
    one task per partition (the persons' pass reads ``groups`` only)."""
    X, y, groups = data
    reads = []

    def read(block):
        if block.size:   # not dask's call on an empty array for the meta
            reads.append(block.shape[0])
        return block

    Xd, yd, gd = dask_persons(X, y, groups, (1, 120, 47, 132))
    kw = dict(epsilon=1.0, data_norm=R, y_bound=Y, random_state=0)
    fit = dict(groups=gd) if with_groups else {}
    model = SSPLinearRegression(**kw).fit(Xd.map_blocks(read, dtype=float), yd, **fit)
    assert sorted(reads) == sorted(Xd.chunks[0])
    memory = SSPLinearRegression(**kw).fit(X, y, **({"groups": groups} if with_groups else {}))
    assert_allclose(model.coef_, memory.coef_, rtol=1e-10)


@pytest.mark.parametrize("where", ["X", "y"])
def test_a_non_finite_value_is_refused_after_the_pass_before_any_noise(data, no_ssp_noise,
                                                                       where):
    X, y, groups = data
    X, y = X.copy(), y.copy()
    if where == "X":
        X[200, 1] = np.nan
    else:
        y[3] = np.inf
    estimator = SSPLinearRegression(data_norm=R, y_bound=Y)
    with pytest.raises(ValueError, match="NaN or infinity"):
        estimator.fit(*dask_persons(X, y, groups, 60)[:2], groups=dask_persons(X, y, groups, 60)[2])
    assert not hasattr(estimator, "coef_")
