"""One private fit on a dask array: the same model as in memory, the same guarantee.

The rows stay in their partitions: clipping, the intercept column and the labels are
applied inside each partition, only partial sums reach the driver, and every noise
draw happens on the driver from the fit's secret stream in the in-memory order. So a
fit with a given ``random_state`` gives the in-memory model: DP-GD up to the order of
the partial sums (1e-10 relative), objective perturbation within the solver's
certified distance (two solves certified to ``tol`` are within ``2 tol / ridge``).
"""

import copy
import math
import warnings

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

from sklearn.datasets import make_classification  # noqa: E402

import skdp.utils._random as skdp_random  # noqa: E402
from skdp import DPSGDClassifier, ObjPertLogisticRegression, OutputPertSVM  # noqa: E402
from skdp.linear_model import (_dpsgd, _objective_perturbation,  # noqa: E402
                               _output_perturbation)
from skdp.mechanisms._poisson_sampling import poisson_sample  # noqa: E402
from tests._dpsgd_steps import StepRecorder  # noqa: E402

N_ROWS = 300
CHUNKINGS = {"even": 60, "uneven": (1, 120, 47, 132), "one-row chunk": (150, 1, 149),
             "single": N_ROWS}


pytestmark = pytest.mark.usefixtures("synchronous_dask")


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(n_samples=N_ROWS, n_features=5, n_informative=3,
                               random_state=0)
    X[7, 2] = 1e200          # a wide row (its norm overflows): clipped like in memory
    X[150, 0] = 40.0         # the one-row chunk, far outside the ball
    return X, np.where(y == 1, "yes", "no")


def _dask(X, y, chunks):
    Xd = da.from_array(X, chunks=(chunks, -1))
    return Xd, da.from_array(y, chunks=(Xd.chunks[0],))


def _dpgd(**kw):
    return DPSGDClassifier(sample_rate=1.0, epochs=40, random_state=7, **kw)


@pytest.mark.parametrize("chunks", CHUNKINGS.values(), ids=CHUNKINGS.keys())
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_dpgd_equals_in_memory(data, chunks, fit_intercept):
    X, y = data
    memory = _dpgd(fit_intercept=fit_intercept).fit(X, y)
    partitioned = _dpgd(fit_intercept=fit_intercept).fit(*_dask(X, y, chunks))
    np.testing.assert_allclose(partitioned.coef_, memory.coef_, rtol=1e-10, atol=0)
    np.testing.assert_allclose(partitioned.intercept_, memory.intercept_, rtol=1e-10,
                               atol=1e-14)
    assert partitioned.noise_multiplier_ == memory.noise_multiplier_
    assert partitioned.learning_rate_ == memory.learning_rate_
    assert partitioned.epsilon_spent_ == memory.epsilon_spent_
    assert partitioned.classes_.tolist() == ["no", "yes"]
    assert partitioned.n_features_in_ == 5


@pytest.mark.parametrize("chunks", CHUNKINGS.values(), ids=CHUNKINGS.keys())
@pytest.mark.parametrize("kw", [dict(), dict(fit_intercept=False, sample_rate=0.05, epochs=3,
                                            momentum=0.5, alpha=0.01)],
                         ids=["default", "options"])
def test_poisson_dpsgd_equals_in_memory(data, chunks, kw, monkeypatch):
    """The default Poisson-sampled DP-SGD: each partition draws its rows' part of every
    step's mask, so the batches and the model are those of the in-memory fit."""
    X, y = data
    recorder = StepRecorder(monkeypatch)
    kw = dict(dict(epsilon=1.0, delta=1e-5, random_state=3), **kw)
    memory = DPSGDClassifier(**kw).fit(X, y)
    partitioned = DPSGDClassifier(**kw).fit(*_dask(X, y, chunks))
    sizes = {where: recorder.batch_sizes(where) for where in (True, False)}
    assert partitioned.sample_rate_ == memory.sample_rate_ < 1.0
    assert partitioned.n_steps_ == memory.n_steps_
    np.testing.assert_array_equal(sizes[True], sizes[False])   # the same batches, step by step
    assert sizes[False].min() > 0 and sizes[False].max() < N_ROWS
    np.testing.assert_allclose(partitioned.coef_, memory.coef_, rtol=1e-10, atol=0)
    np.testing.assert_allclose(partitioned.intercept_, memory.intercept_, rtol=1e-10,
                               atol=1e-300)
    assert partitioned.noise_multiplier_ == memory.noise_multiplier_
    assert partitioned.learning_rate_ == memory.learning_rate_
    assert partitioned.epsilon_spent_ == memory.epsilon_spent_


@pytest.mark.parametrize("chunks", CHUNKINGS.values(), ids=CHUNKINGS.keys())
@pytest.mark.parametrize("loss", ["logistic", "huber"])
@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_objective_perturbation_within_certified_distance(data, chunks, loss, delta):
    X, y = data
    kw = dict(loss=loss, delta=delta, C=5.0, random_state=11)
    memory = ObjPertLogisticRegression(**kw).fit(X, y)
    partitioned = ObjPertLogisticRegression(**kw).fit(*_dask(X, y, chunks))
    # both solves are certified within tol / ridge of the same exact minimiser (ridge
    # >= 1) and the same noise is added around them
    gap = np.linalg.norm(np.append(partitioned.coef_ - memory.coef_,
                                   partitioned.intercept_ - memory.intercept_))
    assert gap <= 2 * memory.tol
    assert partitioned.C_ == memory.C_ and partitioned.epsilon_spent_ == memory.epsilon_spent_


@pytest.fixture(scope="module")
def three_classes(data):
    X, _ = data
    _, y = make_classification(n_samples=N_ROWS, n_features=5, n_informative=3,
                               n_classes=3, random_state=1)
    return X, np.array(["a", "b", "c"])[y]


@pytest.mark.parametrize("chunks", CHUNKINGS.values(), ids=CHUNKINGS.keys())
@pytest.mark.parametrize("loss, delta", [("logistic", 0.0), ("huber", 1e-6)])
def test_objective_perturbation_one_vs_rest(three_classes, chunks, loss, delta):
    """Three classes, one binary problem per class over the same partitions (each maps
    its own labels to +-1 against class k), each with epsilon / 3: every problem
    within the certified distance of the in-memory one."""
    X, y = three_classes
    kw = dict(multi_class="ovr", loss=loss, delta=delta, random_state=4)
    memory = ObjPertLogisticRegression(**kw).fit(X, y)
    partitioned = ObjPertLogisticRegression(**kw).fit(*_dask(X, y, chunks))
    assert partitioned.classes_.tolist() == ["a", "b", "c"]
    gaps = np.linalg.norm(np.column_stack([partitioned.coef_ - memory.coef_,
                                           partitioned.intercept_ - memory.intercept_]),
                          axis=1)
    assert gaps.shape == (3,) and np.all(gaps <= 2 * memory.tol)
    assert partitioned.C_ == memory.C_ and partitioned.epsilon_spent_ == memory.epsilon_spent_
    # the released problems differ from each other (not one problem three times)
    assert np.ptp(partitioned.coef_, axis=0).max() > 1e-3


@pytest.mark.parametrize("chunks", CHUNKINGS.values(), ids=CHUNKINGS.keys())
@pytest.mark.parametrize("kw", [dict(), dict(delta=1e-6, fit_intercept=False, C=3.0)],
                         ids=["pure", "gaussian"])
def test_softmax_within_certified_distance(three_classes, chunks, kw):
    """The softmax problem (multi_class='auto', three classes): each partition maps its
    labels to one-hot rows; the Newton-CG iterates, products and certificate are
    reductions over the partitions; the noise is the in-memory draw."""
    X, y = three_classes
    kw = dict(random_state=4, **kw)
    memory = ObjPertLogisticRegression(**kw).fit(X, y)
    partitioned = ObjPertLogisticRegression(**kw).fit(*_dask(X, y, chunks))
    assert partitioned.coef_.shape == (3, 5)
    assert _output_gap(partitioned, memory) <= 2 * memory.tol
    assert partitioned.C_ == memory.C_ and partitioned.epsilon_spent_ == memory.epsilon_spent_


def test_softmax_wide_by_diagonal_preconditioner():
    """Above 120 K coefficients the in-memory rule preconditions by the Hessian's
    diagonal (one more reduction per Newton step), not the Gram matrix."""
    from skdp.solvers._partitioned import PartitionedDesign

    X, y = make_classification(n_samples=200, n_features=400, n_informative=10,
                               n_classes=3, random_state=0)
    memory = ObjPertLogisticRegression(C=5.0, random_state=2).fit(X, y)
    passes = []
    reduce = PartitionedDesign.reduce

    def recorded(self, kernel, *args, **kwargs):
        passes.append(kernel.__name__)
        return reduce(self, kernel, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(PartitionedDesign, "reduce", recorded)
        partitioned = ObjPertLogisticRegression(C=5.0, random_state=2).fit(
            *_dask(X, y, (1, 80, 119)))
    assert {"_iterate_pass", "_hessian_product_pass"} <= set(passes)
    assert "_gram_pass" not in passes
    assert _output_gap(partitioned, memory) <= 2 * memory.tol


def test_softmax_certificate_fallback(fallback_data, monkeypatch):
    """Where the rounding estimate alone exceeds tol, the double-double fallback runs
    over the partitions (each partition's accurate partial gradient and bound)."""
    from skdp.solvers import _partitioned_softmax

    X, y = fallback_data
    noise = np.random.default_rng(1).standard_normal(len(X))
    y = np.digitize(X[:, 1] + 0.3 * noise, [-0.2, 0.2])   # three classes, not separable
    calls = []
    original = _partitioned_softmax._accurate_gradient

    def counted(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(_partitioned_softmax, "_accurate_gradient", counted)
    kw = dict(C=3000.0, random_state=5)
    memory = ObjPertLogisticRegression(**kw).fit(X, y)
    partitioned = ObjPertLogisticRegression(**kw).fit(*_dask(X, y, (1, 9000, 14_999)))
    assert calls
    assert _output_gap(partitioned, memory) <= 2 * memory.tol


def _output_gap(partitioned, memory):
    return np.linalg.norm(np.append(partitioned.coef_ - memory.coef_,
                                    partitioned.intercept_ - memory.intercept_))


def _certified_slack(estimator):
    """The public distance ``tol * C R`` within which each solve is certified (add/remove,
    data_norm 1, an intercept column of 1 if any)."""
    return estimator.tol * estimator.C_ * np.sqrt(1.0 + estimator.fit_intercept)


@pytest.mark.parametrize("chunks", CHUNKINGS.values(), ids=CHUNKINGS.keys())
@pytest.mark.parametrize("loss", ["logistic", "huber"])
@pytest.mark.parametrize("tol", [1e-3, 1e-8])
def test_output_perturbation_within_certified_distance(data, chunks, loss, tol):
    X, y = data
    kw = dict(loss=loss, C=5.0, tol=tol, random_state=11)
    memory = OutputPertSVM(**kw).fit(X, y)
    partitioned = OutputPertSVM(**kw).fit(*_dask(X, y, chunks))
    # both solves are certified within tol * C R of the exact minimiser, and the same
    # noise (the same draws, the same calibration) is added to each
    assert _output_gap(partitioned, memory) <= 2 * _certified_slack(memory)
    assert partitioned.C_ == memory.C_ and partitioned.epsilon_spent_ == memory.epsilon_spent_
    assert partitioned.classes_.tolist() == ["no", "yes"]
    assert not hasattr(partitioned, "random_weights_")


@pytest.mark.parametrize("chunks", CHUNKINGS.values(), ids=CHUNKINGS.keys())
@pytest.mark.parametrize("kw", [dict(loss="logistic"), dict(loss="huber"),
                                dict(loss="logistic", multi_class="ovr", delta=1e-6)],
                         ids=["softmax", "huber one-vs-rest", "logistic one-vs-rest"])
def test_output_perturbation_several_classes(three_classes, chunks, kw):
    X, y = three_classes
    kw = dict(C=5.0, tol=1e-8, random_state=3, **kw)
    memory = OutputPertSVM(**kw).fit(X, y)
    partitioned = OutputPertSVM(**kw).fit(*_dask(X, y, chunks))
    assert partitioned.coef_.shape == (3, 5)
    assert _output_gap(partitioned, memory) <= 2 * _certified_slack(memory)
    assert partitioned.C_ == memory.C_ and partitioned.epsilon_spent_ == memory.epsilon_spent_


@pytest.mark.parametrize("options", [dict(delta=1e-6), dict(noise="laplace"),
                                     dict(C="auto", epsilon=3.0),
                                     dict(fit_intercept=False, loss="huber")],
                         ids=["gaussian", "laplace", "auto C", "no intercept"])
def test_output_perturbation_options(data, options):
    X, y = data
    kw = {**dict(loss="logistic", C=2.0, tol=1e-8, random_state=3), **options}
    memory = OutputPertSVM(**kw).fit(X, y)
    partitioned = OutputPertSVM(**kw).fit(*_dask(X, y, CHUNKINGS["uneven"]))
    assert partitioned.C_ == memory.C_
    assert _output_gap(partitioned, memory) <= 2 * _certified_slack(memory)
    assert (partitioned.epsilon_spent_, partitioned.delta_spent_) == (
        memory.epsilon_spent_, memory.delta_spent_)


@pytest.mark.parametrize("estimator, message", [
    (OutputPertSVM(), "loss='hinge'\\) does not fit on a dask array.*all rows in one "
                      "process.*loss='logistic' or loss='huber'"),
    (OutputPertSVM(kernel="rbf", loss="logistic"), "kernel='rbf'\\) does not fit"),
])
def test_output_perturbation_refusals_read_no_partition(data, no_noise, estimator, message):
    with pytest.raises(ValueError, match=message):
        estimator.fit(*_unreadable(*data, 60))
    assert not hasattr(estimator, "coef_")


@pytest.fixture
def fallback_calls(monkeypatch):
    """Count the passes of the certificate's double-double fallback over partitions."""
    from skdp.solvers import _partitioned

    calls = []
    original = _partitioned.accurate_partitioned_gradient

    def counted(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(_partitioned, "accurate_partitioned_gradient", counted)
    return calls


@pytest.fixture(scope="module")
def fallback_data():
    """Where the rounding estimate alone exceeds the default tol (C n R about 7e7 >
    4.5e7): only the double-double fallback certifies, in memory as on partitions."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((24_000, 20))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return X, (X[:, 0] + 0.5 * rng.standard_normal(24_000) > 0).astype(int)


@pytest.mark.parametrize("chunks", [6000, (1, 9000, 14_999)], ids=["even", "uneven"])
def test_certificate_fallback_over_partitions(fallback_data, fallback_calls, chunks):
    X, y = fallback_data
    kw = dict(C=3000.0, random_state=5)
    memory = ObjPertLogisticRegression(**kw).fit(X, y)
    partitioned = ObjPertLogisticRegression(**kw).fit(*_dask(X, y, chunks))
    assert fallback_calls    # taken (the fast certificate alone raises: below)
    gap = np.linalg.norm(np.append(partitioned.coef_ - memory.coef_,
                                   partitioned.intercept_ - memory.intercept_))
    assert gap <= 2 * memory.tol
    assert partitioned.epsilon_spent_ == memory.epsilon_spent_


def test_without_fallback_the_certificate_fails(fallback_data, monkeypatch):
    """The case above needs the fallback: without it the fit releases nothing."""
    from skdp import ConvergenceError
    from skdp.solvers import _newton

    monkeypatch.setattr(_newton, "_has_fallback", lambda loss: False)
    X, y = fallback_data
    estimator = ObjPertLogisticRegression(C=3000.0, random_state=5)
    with pytest.raises(ConvergenceError):
        estimator.fit(*_dask(X, y, 6000))
    assert not hasattr(estimator, "coef_")


def test_fallback_with_hessian_products(fallback_data, fallback_calls, monkeypatch):
    """The fallback's refinement by conjugate gradients when no Hessian is formed
    (forced here on 21 coefficients)."""
    from skdp.solvers import _newton

    monkeypatch.setattr(_newton, "_MAX_HESSIAN_ENTRIES", 0)
    X, y = fallback_data
    memory = ObjPertLogisticRegression(C=3000.0, random_state=5).fit(X, y)
    partitioned = ObjPertLogisticRegression(C=3000.0, random_state=5).fit(
        *_dask(X, y, 6000))
    assert fallback_calls
    assert _output_gap(partitioned, memory) <= 2 * memory.tol


@pytest.mark.parametrize("n_features", [200, 5000])
def test_wide_designs_by_hessian_products(n_features):
    """Newton-CG over the partitions above 120 coefficients (the in-memory rule): no
    cap of 4096 coefficients, the in-memory model within the certified distance."""
    X, y = make_classification(n_samples=200, n_features=n_features, n_informative=10,
                               random_state=0)
    Xd, yd = _dask(X, y, (1, 80, 119))
    for estimator in (ObjPertLogisticRegression(C=5.0, random_state=2),
                      OutputPertSVM(loss="huber", C=5.0, tol=1e-8, random_state=2)):
        memory = estimator.fit(X, y)
        coef, intercept = memory.coef_.copy(), memory.intercept_.copy()
        partitioned = estimator.fit(Xd, yd)
        gap = np.linalg.norm(np.append(partitioned.coef_ - coef, partitioned.intercept_
                                       - intercept))
        bound = (2 * memory.tol if isinstance(estimator, ObjPertLogisticRegression)
                 else 2 * _certified_slack(memory))
        assert gap <= bound


@pytest.mark.parametrize("loss", ["logistic", "huber"])
def test_fallback_not_taken_on_ordinary_fits(data, fallback_calls, loss):
    X, y = data
    for chunks in CHUNKINGS.values():
        ObjPertLogisticRegression(loss=loss, C=5.0, random_state=11).fit(*_dask(X, y, chunks))
    assert not fallback_calls


@pytest.mark.parametrize("loss", ["huber", "hinge"])
def test_dpgd_other_losses(data, loss):
    X, y = data
    memory = _dpgd(loss=loss).fit(X, y)
    partitioned = _dpgd(loss=loss).fit(*_dask(X, y, CHUNKINGS["uneven"]))
    np.testing.assert_allclose(partitioned.coef_, memory.coef_, rtol=1e-10, atol=0)


@pytest.mark.parametrize("chunks", CHUNKINGS.values(), ids=CHUNKINGS.keys())
@pytest.mark.parametrize("kw", [dict(sample_rate=1.0, epochs=20), dict(),
                                dict(loss="huber", epochs=2)],
                         ids=["DP-GD softmax", "DP-SGD softmax", "DP-SGD huber columns"])
def test_dpsgd_several_classes(three_classes, chunks, kw):
    """Three classes: each partition maps its labels to the in-memory targets (one-hot
    rows for the softmax loss, +-1 columns otherwise); the same batches and noise."""
    X, y = three_classes
    kw = dict(random_state=3, **kw)
    memory = DPSGDClassifier(**kw).fit(X, y)
    partitioned = DPSGDClassifier(**kw).fit(*_dask(X, y, chunks))
    assert partitioned.coef_.shape == (3, 5)
    np.testing.assert_allclose(partitioned.coef_, memory.coef_, rtol=1e-10, atol=0)
    np.testing.assert_allclose(partitioned.intercept_, memory.intercept_, rtol=1e-10,
                               atol=1e-300)
    assert partitioned.epsilon_spent_ == memory.epsilon_spent_


# -- the counter-addressed Poisson sampler ----------------------------------------------

@pytest.mark.parametrize("n, bounds", [
    (1000, [0, 1, 2, 3, 500, 999, 1000]),
    (300_001, [0, 7, 8, 9, 150_000, 262_143, 262_144, 262_145, 300_000, 300_001]),
    (600_000, [0, 262_144, 524_288, 600_000]),
])
def test_sampler_rows_are_the_slice_of_the_whole_sample(n, bounds):
    """The rows ``[a, b)`` draw exactly their own uniforms: a chunking's parts joined are
    the sample of all the rows (and ``poisson_sample``'s, from the same key)."""
    rng = np.random.default_rng(5)
    for q in (0.1, 0.5, 1e-3):
        key = _dpsgd._poisson_key(copy.deepcopy(rng))
        whole = _dpsgd._poisson_rows(key, q, 0, n)
        np.testing.assert_array_equal(whole, poisson_sample(n, q, copy.deepcopy(rng)))
        for a in bounds:
            for b in bounds:
                if a <= b:
                    np.testing.assert_array_equal(_dpsgd._poisson_rows(key, q, a, b),
                                                  whole[(whole >= a) & (whole < b)])
        parts = [_dpsgd._poisson_rows(key, q, a, b) for a, b in zip(bounds[:-1], bounds[1:])]
        np.testing.assert_array_equal(np.concatenate(parts), whole)
        rng.standard_normal()   # another key for the next rate


@pytest.mark.parametrize("chunks", [(1000, 1048, 452), (1, 1023, 1025, 451), 2500],
                         ids=["block edges", "one row and inside blocks", "single"])
def test_small_batch_dpsgd_equals_in_memory(chunks, monkeypatch):
    """Batches of q <= 1/64 are drawn by public blocks of 1024 rows: partitions cutting
    blocks anywhere draw the batches of the in-memory fit, step by step, and the model
    is the in-memory one."""
    X, y = make_classification(n_samples=2500, n_features=4, random_state=1)
    recorder = StepRecorder(monkeypatch)
    kw = dict(epsilon=np.inf, noise_multiplier=1.0, sample_rate=0.012, epochs=1,
              random_state=5)
    memory = DPSGDClassifier(**kw).fit(X, y)
    partitioned = DPSGDClassifier(**kw).fit(*_dask(X, y, chunks))
    sizes = {where: recorder.batch_sizes(where) for where in (True, False)}
    np.testing.assert_array_equal(sizes[True], sizes[False])
    assert abs(sizes[False].mean() - 2500 * 0.012) < 5 * math.sqrt(30 / len(sizes[False]))
    np.testing.assert_allclose(partitioned.coef_, memory.coef_, rtol=1e-10, atol=0)
    np.testing.assert_allclose(partitioned.intercept_, memory.intercept_, rtol=1e-10,
                               atol=1e-300)


@pytest.mark.parametrize("q", [0.1, 0.37, 1e-3])
def test_sampler_inclusion_rate_is_q(q):
    n = 2_000_000
    key = _dpsgd._poisson_key(np.random.default_rng(11))
    idx = _dpsgd._poisson_rows(key, q, 0, n)
    assert abs(idx.size - n * q) < 5 * math.sqrt(n * q * (1 - q))
    assert idx.dtype == np.int64 and np.all(np.diff(idx) > 0)
    assert idx[0] >= 0 and idx[-1] < n
    # the halves of the rows too (each row's uniform is its own)
    half = np.searchsorted(idx, n // 2)
    assert abs(half - n / 2 * q) < 5 * math.sqrt(n / 2 * q * (1 - q))


def test_sampler_keys_come_from_the_secret_stream(data, monkeypatch):
    """Every step's key is drawn on the driver from the fit's secret sampling stream
    (ChaCha20, a child of the noise stream), none from the public stream."""
    from randomgen import ChaCha

    X, y = data
    keys, public = [], []
    draw = _dpsgd._poisson_key

    def recorded(rng):
        assert isinstance(rng.bit_generator, ChaCha)
        keys.append(draw(rng))
        return keys[-1]

    streams = skdp_random.privacy_streams

    def watched(random_state):
        noise, pub = streams(random_state)
        public.append(copy.deepcopy(pub))
        return noise, pub

    monkeypatch.setattr(_dpsgd, "_poisson_key", recorded)
    monkeypatch.setattr(skdp_random, "privacy_streams", watched)
    clf = DPSGDClassifier(epsilon=1.0, delta=1e-5, random_state=3).fit(*_dask(X, y, 60))
    assert len(keys) == clf.n_steps_
    (pub,) = public   # the fit's one pair of streams
    sampling = streams(3)[0].spawn(3)[1]
    for key in keys:
        np.testing.assert_array_equal(key, draw(sampling))
    # the public stream's output is none of the keys
    words = pub.integers(0, 2**64, size=2 * clf.n_steps_ + 64, dtype=np.uint64)
    assert not np.isin(np.concatenate(keys), words).any()


def test_wide_row_is_clipped_inside_its_partition(data):
    """An entry of 1e200 gives the same model as its row clipped by hand."""
    X, y = data
    clipped = X.copy()
    clipped[7] = X[7] / np.linalg.norm(X[7] / 1e200) / 1e200  # norm 1, in memory
    a = _dpgd().fit(*_dask(X, y, 60))
    b = _dpgd().fit(clipped, y)
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-9)


def _fitted_models(data, three_classes):
    from skdp import NAPPLasso, NAPPLassoClassifier

    X, y = data
    X3, y3 = three_classes
    return [
        ("objpert", ObjPertLogisticRegression(random_state=0).fit(*_dask(X, y, 60)), X, y),
        ("dpsgd", DPSGDClassifier(epochs=2, random_state=0).fit(X, y), X, y),
        ("huber svm", OutputPertSVM(loss="huber", C=1.0, random_state=0).fit(X, y), X, y),
        ("rbf svm", OutputPertSVM(kernel="rbf", loss="logistic", C=1.0, random_state=0)
         .fit(X, y), X, y),
        ("softmax", ObjPertLogisticRegression(random_state=0).fit(X3, y3), X3, y3),
        ("ovr", ObjPertLogisticRegression(multi_class="ovr", random_state=0)
         .fit(*_dask(X3, y3, 60)), X3, y3),
        ("napp classifier", NAPPLassoClassifier(random_state=0).fit(X3, y3), X3, y3),
        ("napp lasso", NAPPLasso(y_bound=3.0, coef_bound=10.0, epsilon=50.0, random_state=0)
         .fit(X, X[:, 0] - X[:, 1]), X, X[:, 0] - X[:, 1]),
    ]


@pytest.mark.parametrize("case", range(8))
def test_prediction_and_score_are_lazy_and_equal(data, three_classes, case):
    """On dask input, predict, decision_function, predict_proba and score build dask
    arrays without computing a partition; computed, they equal the in-memory values."""
    name, model, X, y = _fitted_models(data, three_classes)[case]
    Xd, yd = _dask(X, y, CHUNKINGS["uneven"])
    X_boom, y_boom = _unreadable(X, y, CHUNKINGS["uneven"])
    weights = np.linspace(0.5, 2.0, len(y))
    methods = [m for m in ("predict", "decision_function", "predict_proba")
               if hasattr(model, m)]
    for method in methods:
        lazy = getattr(model, method)(X_boom)     # a partition computed would raise
        assert isinstance(lazy, da.Array), method
        result, expected = getattr(model, method)(Xd).compute(), getattr(model, method)(X)
        if method == "predict" and name != "napp lasso":
            np.testing.assert_array_equal(result, expected)
        else:   # a one-row block's product is summed in another order
            np.testing.assert_allclose(result, expected, rtol=1e-13, atol=1e-15)
    assert isinstance(model.score(X_boom, y_boom), da.Array)
    for args in [(Xd, yd), (Xd, y), (X, yd)]:
        for kw in ({}, {"sample_weight": weights}, {"sample_weight": da.from_array(weights)}):
            score = model.score(*args, **kw)
            assert isinstance(score, da.Array) and score.ndim == 0
            assert float(score) == pytest.approx(model.score(X, y, **kw), rel=1e-12, abs=1e-15)


def test_labels_in_memory(data):
    X, y = data
    Xd, _ = _dask(X, y, CHUNKINGS["uneven"])
    np.testing.assert_allclose(_dpgd().fit(Xd, y).coef_, _dpgd().fit(X, y).coef_, rtol=1e-10)


def test_declared_classes_and_unioned_labels(data):
    X, y = data
    Xd, yd = _dask(X, y, 60)
    clf = _dpgd(classes=["no", "yes"]).fit(Xd, yd)
    assert clf.classes_.tolist() == ["no", "yes"]
    with pytest.raises(ValueError, match="outside the declared classes"):
        _dpgd(classes=["no", "maybe"]).fit(Xd, yd)


@pytest.fixture
def no_noise(monkeypatch):
    """Fail the test if any estimator creates its noise generator."""
    def refuse(*args, **kwargs):
        raise AssertionError("a noise generator was created")

    monkeypatch.setattr(skdp_random, "privacy_streams", refuse)
    for module in (_dpsgd, _objective_perturbation, _output_perturbation):
        monkeypatch.setattr(module, "noise_generator", refuse)


def _refusals(data):
    X, y = data
    Xd, yd = _dask(X, y, 60)
    X3 = np.where(np.arange(N_ROWS) % 3 == 0, "maybe", y)
    nan = X.copy()
    nan[250, 1] = np.nan
    return [
        (OutputPertSVM(loss="huber", multi_class="multinomial"),
         (Xd, da.from_array(X3, chunks=(Xd.chunks[0],))), "needs loss='logistic'"),
        (_dpgd(), (Xd, da.from_array(np.full(N_ROWS, "yes"), chunks=(Xd.chunks[0],))),
         "only one class"),
        (ObjPertLogisticRegression(loss="huber", multi_class="multinomial"),
         (Xd, da.from_array(X3, chunks=(Xd.chunks[0],))), "needs loss='logistic'"),
        (_dpgd(), (Xd, da.from_array(y, chunks=50)), "same row chunks"),
        (ObjPertLogisticRegression(), _dask(nan, y, 60), "NaN or infinity"),
        (_dpgd(classes=["no", "maybe"]), (Xd, yd), "outside the declared classes"),
        (ObjPertLogisticRegression(), (Xd[Xd[:, 0] > 0], yd[Xd[:, 0] > 0]),
         "known chunk sizes"),
        (_dpgd(), (Xd[:, :0], yd), "at least one row and one feature"),
        (_dpgd(), (Xd, y[:-1]), "one label per row"),
        (_dpgd(), (X, yd), "not ndarray"),
    ]


@pytest.mark.parametrize("case", range(10))
def test_refusals_before_any_noise(data, no_noise, case):
    estimator, (X, y), message = _refusals(data)[case]
    with pytest.raises(ValueError, match=message):
        estimator.fit(X, y)
    assert not hasattr(estimator, "coef_")


def _unreadable(X, y, chunks):
    """Dask arrays whose partitions raise when computed: a refusal that reads no
    partition raises its ValueError, any work on the data a RuntimeError."""
    def boom(block):
        raise RuntimeError("a partition was computed")

    Xd, yd = _dask(X, y, chunks)
    return Xd.map_blocks(boom, dtype=float), yd.map_blocks(boom, dtype=yd.dtype)


@pytest.mark.parametrize("estimator, message", [
    (DPSGDClassifier(classes=["no", "no"]), "repeated labels"),
    (ObjPertLogisticRegression(classes=["a", "a"]), "repeated labels"),
])
def test_option_refusals_read_no_partition(data, no_noise, estimator, message):
    with pytest.raises(ValueError, match=message):
        estimator.fit(*_unreadable(*data, 60))


def test_other_estimators_refused_before_any_noise(data, no_noise):
    from skdp import NAPPLasso
    from skdp.research import ResearchNAPPLasso, ResearchNAPPLassoClassifier

    X, y = data
    Xd, yd = _unreadable(X, y, 60)
    with pytest.raises(ValueError, match="OutputPertSVM\\(loss='hinge'\\) does not fit on a "
                                         "dask array.*DPSGDClassifier \\(Poisson-sampled"):
        OutputPertSVM().fit(Xd, yd)
    with pytest.raises(ValueError, match="fit_release\\(\\) needs the data in memory"):
        OutputPertSVM(loss="logistic", C=1.0).fit_release(Xd, yd)
    for research in (ResearchNAPPLasso(y_bound=1.0, coef_bound=1.0),
                     ResearchNAPPLassoClassifier()):
        with pytest.raises(ValueError, match=f"{type(research).__name__} \\(a research "
                                             "variant, not private\\) does not fit on a dask"):
            research.fit(Xd, yd)
    for estimator in (ObjPertLogisticRegression(), NAPPLasso(y_bound=1.0, coef_bound=1.0)):
        with pytest.raises(ValueError, match="fit_release\\(\\) needs the data in memory"):
            estimator.fit_release(Xd, yd)


@pytest.fixture(scope="module")
def sparse_data(data):
    """The rows with about 40 % of their entries zero, CSR in memory and in chunks
    (the wide row and the one-row chunk's far row kept)."""
    X, y = data
    X = np.where(np.abs(X) < 0.5, 0.0, X)
    return X, y


def _csr_dask(X, y, chunks):
    sparse = pytest.importorskip("scipy.sparse")
    Xd, yd = _dask(X, y, chunks)
    return Xd.map_blocks(sparse.csr_matrix, meta=sparse.csr_matrix((0, 0))), yd


def _sparse_cases():
    return [
        ("dpgd", _dpgd(), 1e-10),
        ("dpsgd", DPSGDClassifier(epochs=2, random_state=3), 1e-10),
        ("objpert", ObjPertLogisticRegression(C=5.0, random_state=11), None),
        ("output huber", OutputPertSVM(loss="huber", C=5.0, tol=1e-8, random_state=11), None),
    ]


@pytest.mark.parametrize("chunks", CHUNKINGS.values(), ids=CHUNKINGS.keys())
@pytest.mark.parametrize("case", range(4), ids=[c[0] for c in _sparse_cases()])
def test_csr_chunks_equal_in_memory_csr(sparse_data, chunks, case):
    """CSR blocks: each partition reads its block in CSR form (canonical, float64) as
    the in-memory fit reads a CSR X; the same models as the in-memory fit on the CSR
    matrix."""
    sparse = pytest.importorskip("scipy.sparse")
    X, y = sparse_data
    name, estimator, rtol = _sparse_cases()[case]
    memory = copy.deepcopy(estimator).fit(sparse.csr_matrix(X), y)
    partitioned = copy.deepcopy(estimator).fit(*_csr_dask(X, y, chunks))
    if rtol is not None:
        np.testing.assert_allclose(partitioned.coef_, memory.coef_, rtol=rtol, atol=0)
    else:
        slack = (2 * memory.tol if name == "objpert" else 2 * _certified_slack(memory))
        assert _output_gap(partitioned, memory) <= slack
    assert partitioned.epsilon_spent_ == memory.epsilon_spent_
    # predictions on CSR chunks: lazy, the in-memory values
    Xd, _ = _csr_dask(X, y, chunks)
    np.testing.assert_array_equal(partitioned.predict(Xd).compute(), partitioned.predict(X))


@pytest.mark.parametrize("chunks", CHUNKINGS.values(), ids=CHUNKINGS.keys())
def test_csr_chunks_softmax(three_classes, chunks):
    sparse = pytest.importorskip("scipy.sparse")
    X, y = three_classes
    X = np.where(np.abs(X) < 0.5, 0.0, X)
    memory = ObjPertLogisticRegression(random_state=4).fit(sparse.csr_matrix(X), y)
    partitioned = ObjPertLogisticRegression(random_state=4).fit(*_csr_dask(X, y, chunks))
    assert _output_gap(partitioned, memory) <= 2 * memory.tol


def test_refused_hessian_too_large(no_noise, monkeypatch):
    from skdp.solvers import _partitioned

    monkeypatch.setattr(_partitioned, "MAX_PARTITIONED_HESSIAN_ENTRIES", 16)
    Xd = da.zeros((10, 4), chunks=(5, 4))
    yd = da.from_array(np.arange(10) % 2, chunks=5)
    with pytest.raises(ValueError, match="at most 4 coefficients"):
        ObjPertLogisticRegression().fit(Xd, yd)


def test_dask_dataframe(data):
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    X, y = data
    y = (y == "yes").astype(int)
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(5)])
    Xd = dd.from_pandas(frame, npartitions=4)
    yd = dd.from_pandas(pd.Series(y), npartitions=4)
    memory = _dpgd().fit(frame, y)
    partitioned = _dpgd().fit(Xd, yd)
    np.testing.assert_allclose(partitioned.coef_, memory.coef_, rtol=1e-10)
    assert partitioned.feature_names_in_.tolist() == memory.feature_names_in_.tolist()


def test_dask_dataframe_names_are_recorded_as_from_pandas(data):
    """Column labels that are not all strings are not feature names for scikit-learn:
    neither from pandas nor from a dask DataFrame, so predicting on the pandas frame
    says nothing."""
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    X, y = data
    frame = pd.DataFrame(X, columns=range(5))
    partitioned = _dpgd().fit(dd.from_pandas(frame, npartitions=4),
                              dd.from_pandas(pd.Series(y), npartitions=4))
    assert not hasattr(partitioned, "feature_names_in_")
    assert not hasattr(_dpgd().fit(frame, y), "feature_names_in_")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        partitioned.predict(frame)


def test_local_cluster_smoke(data, thread_cluster):
    from skdp import NAPPLassoClassifier

    X, y = data
    partitioned = ObjPertLogisticRegression(random_state=1).fit(*_dask(X, y, 60))
    dpgd = DPSGDClassifier(sample_rate=1.0, epochs=5, random_state=1).fit(
        *_dask(X, y, 60))
    dpsgd = DPSGDClassifier(epochs=2, random_state=1).fit(*_dask(X, y, 60))
    svm = OutputPertSVM(loss="huber", C=1.0, tol=1e-8, random_state=1).fit(*_dask(X, y, 60))
    napp = NAPPLassoClassifier(alpha=2.0, random_state=1).fit(*_dask(X, y, 60))
    assert _output_gap(svm, OutputPertSVM(loss="huber", C=1.0, tol=1e-8, random_state=1)
                       .fit(X, y)) <= 2 * _certified_slack(svm)
    napp_memory = NAPPLassoClassifier(alpha=2.0, random_state=1).fit(X, y)
    assert _output_gap(napp, napp_memory) <= 1e-10
    np.testing.assert_allclose(
        dpsgd.coef_, DPSGDClassifier(epochs=2, random_state=1).fit(X, y).coef_, rtol=1e-10)
    memory = ObjPertLogisticRegression(random_state=1).fit(X, y)
    assert np.linalg.norm(partitioned.coef_ - memory.coef_) <= 2 * memory.tol
    np.testing.assert_allclose(
        dpgd.coef_, DPSGDClassifier(sample_rate=1.0, epochs=5, random_state=1).fit(X, y).coef_,
        rtol=1e-10)


def test_local_cluster_smoke_softmax(three_classes, thread_cluster):
    """The softmax objective perturbation on a LocalCluster: the in-memory release."""
    X, y = three_classes
    softmax = dict(multi_class="multinomial", random_state=2)
    partitioned = ObjPertLogisticRegression(**softmax).fit(*_dask(X, y, 60))
    memory = ObjPertLogisticRegression(**softmax).fit(X, y)
    assert _output_gap(partitioned, memory) <= 2 * memory.tol

