"""NAPP on a dask array: the in-memory release within the certified distance.

The squared loss's data term is read in one pass (each partition's clipped rows give
``Z^T Z``, ``Z^T y`` with ``y`` clipped to ``y_bound`` and ``sum y^2 / 2``); every other
loss (Poisson, the logistic NAPP) takes one pass per value, gradient or Hessian of the
solver. The noise and the cover are drawn on the driver in the in-memory order, so
both releases are the same noise around minimisers each certified within the public
radius ``r`` of the exact one (:func:`skdp.linear_model._napp._mechanism.distance_bound`).
"""

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

from sklearn.datasets import make_classification, make_regression  # noqa: E402

import skdp.utils._random as skdp_random  # noqa: E402
from skdp import NAPPLasso, NAPPLassoClassifier  # noqa: E402
from skdp.linear_model._napp import _mechanism  # noqa: E402

from .test_dask_fit import CHUNKINGS, N_ROWS, _dask, _unreadable  # noqa: E402


pytestmark = pytest.mark.usefixtures("synchronous_dask")


@pytest.fixture(scope="module")
def regression():
    X, y = make_regression(n_samples=N_ROWS, n_features=5, n_informative=2, noise=5.0,
                           random_state=0)
    X /= 3.0
    X[7, 2] = 1e200          # a wide row, clipped inside its partition
    X[150, 0] = 40.0         # the one-row chunk, outside the ball
    return X, y              # |y| up to 162: y_bound=150 clips some


@pytest.fixture(scope="module")
def classification():
    X, y = make_classification(n_samples=N_ROWS, n_features=5, n_informative=4,
                               n_redundant=0, n_classes=3, random_state=0)
    X[150, 0] = 40.0
    return X, np.array(["a", "b", "c"])[y]


def _radius(estimator):
    """The public distance within which each solve is certified: ``sqrt(d) tol /
    lambda``, doubled on a norm ball (``distance_bound``)."""
    last = estimator.privacy_report_["stages"][-1]     # the released stage's
    curvature = last["penalty_curvature"] + last["extra_ridge"]
    assert curvature > 0
    d = estimator.n_features_in_ + int(estimator.fit_intercept)
    radius = np.sqrt(d) * estimator.tol / curvature
    return 2.0 * radius if estimator.coef_bound is not None else radius


def _gap(partitioned, memory):
    return np.linalg.norm(np.column_stack([np.atleast_2d(partitioned.coef_ - memory.coef_),
                                           np.atleast_1d(partitioned.intercept_
                                                         - memory.intercept_)]), axis=1)


def _assert_same_release(partitioned, memory):
    assert np.all(_gap(partitioned, memory) <= 2 * _radius(memory))
    assert partitioned.epsilon_spent_ == memory.epsilon_spent_
    if memory.adaptive_two_stage:   # stage 2's public weights come from stage 1's release
        for ours, theirs in zip(partitioned.privacy_report_["stages"],
                                memory.privacy_report_["stages"]):
            for key, value in theirs.items():
                expected = value if isinstance(value, str) else pytest.approx(value, rel=1e-9)
                assert ours[key] == expected, key
    else:
        assert partitioned.privacy_report_ == memory.privacy_report_
    # the lasso's exact zeros are kept: the same coordinates released as zero
    np.testing.assert_array_equal(partitioned.coef_ == 0, memory.coef_ == 0)


def _lasso(**kw):
    return NAPPLasso(**{**dict(alpha=200.0, epsilon=10.0, y_bound=150.0, coef_bound=300.0,
                               data_norm=3.0, random_state=0), **kw})


@pytest.fixture
def gram_passes(monkeypatch):
    """The passes over partitions, by kernel name (one reduction each)."""
    from skdp.solvers._partitioned import PartitionedDesign

    calls = []
    reduce = PartitionedDesign.reduce

    def recorded(self, kernel, *args, **kwargs):
        calls.append(kernel.__name__)
        return reduce(self, kernel, *args, **kwargs)

    monkeypatch.setattr(PartitionedDesign, "reduce", recorded)
    return calls


@pytest.mark.parametrize("chunks", CHUNKINGS.values(), ids=CHUNKINGS.keys())
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_squared_loss_in_one_pass(regression, chunks, fit_intercept, gram_passes):
    X, y = regression
    memory = _lasso(fit_intercept=fit_intercept).fit(X, y)
    partitioned = _lasso(fit_intercept=fit_intercept).fit(*_dask(X, y, chunks))
    _assert_same_release(partitioned, memory)
    assert gram_passes == ["zero_pass"]      # the data read once (X^T X, X^T y, sum y^2)
    assert 0 < np.count_nonzero(memory.coef_) < 5    # a lasso: some zeros, some not


@pytest.mark.parametrize("options", [
    dict(delta=1e-6), dict(penalty="elasticnet"), dict(penalty="l2", retrieval="return"),
    dict(adaptive_two_stage=True), dict(augmentation="random", n_aug=50),
    dict(coef_bound=None, penalty="l2", neighboring="replace"),
    dict(loss="poisson", y_bound=4.0, coef_bound=2.0, alpha=1.0, data_norm=1.0),
], ids=["gaussian", "elastic net", "ridge, return", "two stages", "random rows",
        "no ball", "poisson"])
def test_squared_loss_options(regression, options):
    X, y = regression
    if options.get("loss") == "poisson":
        y = np.abs(y) / 40.0
    if options.get("coef_bound", 300.0) is None:
        options = {**options, "loss": "squared"}
    try:
        memory = _lasso(**options).fit(X, y)
    except ValueError as exc:   # the squared loss needs its ball
        with pytest.raises(ValueError, match=str(exc)[:40]):
            _lasso(**options).fit(*_dask(X, y, CHUNKINGS["uneven"]))
        return
    partitioned = _lasso(**options).fit(*_dask(X, y, CHUNKINGS["uneven"]))
    _assert_same_release(partitioned, memory)


@pytest.mark.parametrize("chunks", CHUNKINGS.values(), ids=CHUNKINGS.keys())
def test_logistic_napp_binary(classification, chunks):
    X, y = classification
    y = np.where(y == "a", "a", "not a")
    kw = dict(alpha=2.0, random_state=1)
    memory = NAPPLassoClassifier(**kw).fit(X, y)
    partitioned = NAPPLassoClassifier(**kw).fit(*_dask(X, y, chunks))
    assert partitioned.classes_.tolist() == ["a", "not a"]
    _assert_same_release(partitioned, memory)


def test_logistic_napp_one_vs_rest(classification, gram_passes):
    X, y = classification
    kw = dict(alpha=2.0, delta=1e-6, random_state=1)
    memory = NAPPLassoClassifier(**kw).fit(X, y)
    partitioned = NAPPLassoClassifier(**kw).fit(*_dask(X, y, CHUNKINGS["one-row chunk"]))
    assert partitioned.coef_.shape == (3, 5)
    _assert_same_release(partitioned, memory)
    np.testing.assert_array_equal(partitioned.predict(X), memory.predict(X))
    # three problems, each from its own pass at zero, then passes per iterate
    assert gram_passes.count("zero_pass") == 3 and "loss_hessian_pass" in gram_passes


def test_labels_and_targets_mapped_in_partitions(regression):
    """Targets beyond y_bound are clipped inside the partitions: the same release as
    the targets clipped by hand in memory."""
    X, y = regression
    assert np.abs(y).max() > 150.0
    clipped = _lasso().fit(X, np.clip(y, -150.0, 150.0))
    partitioned = _lasso().fit(*_dask(X, y, 60))
    assert np.all(_gap(partitioned, clipped) <= 2 * _radius(clipped))


@pytest.fixture
def no_noise(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a noise generator was created")

    monkeypatch.setattr(skdp_random, "privacy_streams", refuse)
    monkeypatch.setattr(_mechanism, "draw_noise", refuse)


@pytest.mark.parametrize("estimator, message", [
    (NAPPLasso(), "needs coef_bound.*y_bound"),
    (NAPPLasso(penalty="bridge", y_bound=1.0), "needs coef_bound"),
    (NAPPLassoClassifier(augmentation="exact_moment", n_aug=3), "n_aug=3 is too small"),
])
def test_parameter_refusals_read_no_partition(regression, no_noise, estimator, message):
    X, y = regression
    with pytest.raises(ValueError, match=message):
        estimator.fit(*_unreadable(X, y, 60))


def test_matrices_too_large_refused_before_any_pass(no_noise, monkeypatch):
    from skdp.utils import _memory

    monkeypatch.setattr(_memory, "available_memory", lambda: 1e6)
    Xd = da.zeros((10, 300), chunks=(5, 300)).map_blocks(
        lambda b: (_ for _ in ()).throw(RuntimeError("a partition was computed")),
        dtype=float)
    yd = da.zeros(10, chunks=5)
    with pytest.raises(MemoryError, match="d x d Gram and Hessian matrices for 301"):
        NAPPLasso(y_bound=1.0, coef_bound=1.0).fit(Xd, yd)


def test_input_refusals_before_any_noise(regression, no_noise):
    X, y = regression
    bad_y = y.copy()
    bad_y[200] = np.nan
    with pytest.raises(ValueError, match="NaN or infinity"):
        _lasso().fit(*_dask(X, bad_y, 60))
    with pytest.raises(ValueError, match="negative: the Poisson loss needs counts"):
        _lasso(loss="poisson", y_bound=4.0, coef_bound=2.0).fit(*_dask(X, y, 60))
    with pytest.raises(ValueError, match="y must hold numbers"):
        _lasso().fit(*_dask(X, np.where(y > 0, "p", "n"), 60))


@pytest.mark.parametrize("chunks", CHUNKINGS.values(), ids=CHUNKINGS.keys())
def test_csr_chunks(regression, chunks):
    """CSR blocks: the Gram pass of each partition on its block in CSR form."""
    sparse = pytest.importorskip("scipy.sparse")
    X, y = regression
    X = np.where(np.abs(X) < 0.2, 0.0, X)
    memory = _lasso().fit(sparse.csr_matrix(X), y)
    Xd, yd = _dask(X, y, chunks)
    partitioned = _lasso().fit(Xd.map_blocks(sparse.csr_matrix,
                                             meta=sparse.csr_matrix((0, 0))), yd)
    _assert_same_release(partitioned, memory)


def test_local_cluster_smoke_squared_loss(regression, thread_cluster):
    """The squared-loss NAPP on worker threads of a LocalCluster: the in-memory release."""
    X, y = regression
    partitioned = _lasso().fit(*_dask(X, y, 60))
    _assert_same_release(partitioned, _lasso().fit(X, y))
