"""Persons on a dask array: ``fit(X, y, groups=...)`` gives the in-memory person-level model.

The persons' rows are spread over the partitions (a person's rows in several of them).
Their codes, row counts and (for DP-SGD) their rows are brought together by person key
on the dask graph, so a fit with a given ``random_state`` is the in-memory one whatever
the chunking: DP-SGD up to the order of the partial sums (1e-10 relative; the same
persons in every batch), objective perturbation within the solvers' certified distance
(two solves certified to ``tol`` are within ``2 tol / ridge``, ridge >= 1).
"""

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

from sklearn.datasets import make_classification  # noqa: E402

import skdp.utils._random as skdp_random  # noqa: E402
from skdp import (DPSGDClassifier, NAPPLasso, NAPPLassoClassifier,  # noqa: E402
                  ObjPertLogisticRegression, OutputPertSVM)
from skdp.linear_model import (_dpsgd, _objective_perturbation,  # noqa: E402
                               _output_perturbation)
from skdp.linear_model._napp import _estimators as _napp_estimators  # noqa: E402
from skdp.solvers._partitioned_persons import (partition_person_sums,  # noqa: E402
                                               partitioned_person_codes,
                                               partitioned_person_weights, reduce_by_person)
from skdp.utils._groups import check_groups, person_row_weights  # noqa: E402
from tests._dask_persons import dask_persons, spanning_persons  # noqa: E402
from tests._dpsgd_steps import StepRecorder  # noqa: E402

N_ROWS = 300
N_PERSONS = 70
CHUNKINGS = {"even": 60, "uneven": (1, 120, 47, 132), "one-row chunk": (150, 1, 149),
             "single": N_ROWS}


pytestmark = pytest.mark.usefixtures("synchronous_dask")


@pytest.fixture(scope="module")
def data():
    """Rows of 70 persons (1 to 12 rows each) in random order, so that most persons
    have rows in several partitions; labels and persons are strings."""
    X, y = make_classification(n_samples=N_ROWS, n_features=5, n_informative=3,
                               random_state=0)
    X[150, 0] = 40.0         # the one-row chunk, far outside the ball
    persons = np.random.default_rng(0).integers(0, N_PERSONS, N_ROWS)
    return X, np.where(y == 1, "yes", "no"), np.array([f"p{p:02d}" for p in persons])


@pytest.fixture(scope="module")
def three_classes(data):
    X, _, groups = data
    _, y = make_classification(n_samples=N_ROWS, n_features=5, n_informative=3,
                               n_classes=3, random_state=1)
    return X, np.array(["a", "b", "c"])[y], groups


@pytest.mark.parametrize("chunks", list(CHUNKINGS.values())[:3], ids=list(CHUNKINGS)[:3])
def test_persons_span_partitions(data, chunks):
    """The data of these tests: most persons are spread over partitions."""
    _, _, groups = data
    Xd = da.from_array(data[0], chunks=(chunks, -1))
    assert spanning_persons(groups, Xd.chunks[0]) >= N_PERSONS // 3


# -- the person-keyed reductions --------------------------------------------------------

LABEL_KINDS = {
    "strings": lambda g: g,
    "objects": lambda g: g.astype(object),
    "integers": lambda g: np.char.add("1", np.char.lstrip(g, "p")).astype(int) - 150,
    "floats": lambda g: np.char.lstrip(g, "p").astype(float) / 7.0 - 3.0,
}


@pytest.mark.parametrize("chunks", CHUNKINGS.values(), ids=CHUNKINGS.keys())
@pytest.mark.parametrize("kind", LABEL_KINDS.values(), ids=LABEL_KINDS.keys())
def test_codes_and_weights_are_the_in_memory_ones(data, chunks, kind):
    """The codes of :func:`~skdp.utils._groups.check_groups` (ranks among the labels
    as sorted objects), for labels of every kind (negative numbers included)."""
    X, _, groups = data
    groups = kind(groups)
    Xd = da.from_array(X, chunks=(chunks, -1))
    persons = partitioned_person_codes(da.from_array(groups, chunks=(Xd.chunks[0],)), Xd)
    codes = check_groups(groups, N_ROWS)
    assert persons.n_persons == codes.max() + 1
    assert persons.codes.chunks == (Xd.chunks[0],)
    np.testing.assert_array_equal(persons.codes.compute(), codes)
    for bound in (1.0, 2.5, 12.0):   # the same floating-point values, bit for bit
        np.testing.assert_array_equal(partitioned_person_weights(persons, bound).compute(),
                                      person_row_weights(codes, bound))


def _clipped_total(sums, sizes, bound=2.0):
    """Each person's summed rows clipped to ``bound``, added (a ``finish``)."""
    return np.minimum(1.0, bound / np.linalg.norm(sums, axis=1)) @ sums


@pytest.mark.parametrize("split_every", [2, 8])
@pytest.mark.parametrize("chunks", CHUNKINGS.values(), ids=CHUNKINGS.keys())
def test_reduction_by_person_clips_whole_persons(data, chunks, split_every):
    """Each partition sums its rows by person; the persons spread over partitions are
    added up the tree until whole, and only then clipped: the total of the persons'
    clipped sums of rows, computed directly, whatever the chunking and the fan-in."""
    X, _, groups = data
    codes = check_groups(groups, N_ROWS)
    sizes = np.bincount(codes)[codes]
    parts, start = [], 0
    for size in da.from_array(X, chunks=(chunks, -1)).chunks[0]:
        rows = slice(start, start + size)
        present, inverse = np.unique(codes[rows], return_inverse=True)
        sums = np.array([X[rows][inverse == j].sum(axis=0) for j in range(present.size)])
        parts.append(dask.delayed(partition_person_sums)(
            codes[rows], sizes[rows], present, sums.reshape(present.size, 5), _clipped_total))
        start += size
    total, n_persons = reduce_by_person(parts, _clipped_total, split_every=split_every)
    person_sums = np.array([X[codes == p].sum(axis=0) for p in range(codes.max() + 1)])
    norms = np.linalg.norm(person_sums, axis=1)
    assert np.mean(norms > 2.0) > 0.5                      # the clip binds
    expected = (np.minimum(1.0, 2.0 / norms)[:, None] * person_sums).sum(axis=0)
    np.testing.assert_allclose(total, expected, rtol=1e-12)
    assert n_persons == len(np.unique(groups))


def test_reduction_by_person_refuses_a_person_not_seen_whole(data):
    """A person some of whose rows never reached the reduction is an error (the
    partial sum is never clipped as if whole), and the message states no size."""
    parts = [dask.delayed(partition_person_sums)(np.array([0, 1]), np.array([1, 3]),
                                                 np.array([0, 1]), np.ones((2, 1)),
                                                 _clipped_total)]
    with pytest.raises(RuntimeError, match="not all summed") as error:
        reduce_by_person(parts, _clipped_total)
    assert not any(ch.isdigit() for ch in str(error.value))


# -- DP-SGD -------------------------------------------------------------------------------

DPSGD_OPTIONS = {
    "dp-gd": dict(sample_rate=1.0, epochs=20),
    "poisson": dict(sample_rate=0.2, epochs=3),
    "clipped persons": dict(sample_rate=0.2, epochs=3, max_grad_norm=0.02, momentum=0.5,
                            fit_intercept=False, alpha=0.01),
}


@pytest.mark.slow   # about 30 s: the exact densities (as the in-memory audit)
@pytest.mark.parametrize("n", [2, 3])
def test_exact_profile_of_a_dask_person_level_step(n):
    """An exact audit on the dask path: the one-step DP-GD release on D (``n``
    single-row persons) against D plus one person of three rows, each row in another
    partition. The release is ``-eta (S + z C xi) / max(P_tilde, 1)`` (replayed from
    the noise streams); ``S`` is read from the dask path's noise-free fits, so the
    person's three aligned gradients (3 C) must be clipped to C across the partitions;
    the exact hockey-stick divergence of the two release laws is then within the
    claimed (epsilon, delta). The in-memory audit is in
    tests/linear_model/test_dpsgd_groups.py; its helpers are reused."""
    from skdp.linear_model._dpsgd import _call_streams
    from tests.audit.test_dpsgd_privacy import _hockey_stick, _release_density
    from tests.linear_model.test_dpsgd_groups import CLIP, ETA, _one_step, _person_neighbours

    epsilon, delta = 1.0, 1e-3
    (X, y, g), (Xp, yp, gp) = _person_neighbours(n)

    def fit(X, y, groups, **kw):   # one row per partition: the person's rows apart
        return _one_step(**kw).fit(da.from_array(X, chunks=(1, -1)),
                                   da.from_array(y, chunks=1),
                                   groups=da.from_array(groups, chunks=1))

    S = -fit(X, y, g, epsilon=np.inf).coef_[0, 0] * n / ETA
    S_person = -fit(Xp, yp, gp, epsilon=np.inf).coef_[0, 0] * (n + 1) / ETA
    assert abs((S_person - S) - CLIP) <= 1e-12      # 3 C clipped to C, not 3 C
    est = fit(Xp, yp, gp, epsilon=epsilon, delta=delta, random_state=11)
    count_rng, _, noise_rng = _call_streams(11, 0)
    p_tilde = n + 1 + est.count_noise_std_ * count_rng.standard_normal()
    xi = noise_rng.standard_normal()
    expected = -ETA * (S_person + est.noise_multiplier_ * CLIP * xi) / max(p_tilde, 1)
    np.testing.assert_allclose(est.coef_[0, 0], expected, rtol=1e-12)
    z, s = est.noise_multiplier_, est.count_noise_std_
    grid = np.linspace(-60, 60, 30_001) * ETA * CLIP
    p = _release_density(grid, S, n, z, s)
    q = _release_density(grid, S_person, n + 1, z, s)
    assert _hockey_stick(p, q, est.epsilon_spent_, grid) <= delta * 1.01
    q_rows = _release_density(grid, S + 3 * CLIP, n + 1, z, s)   # rows clipped alone
    assert _hockey_stick(p, q_rows, est.epsilon_spent_, grid) > 10 * delta


@pytest.mark.parametrize("chunks", CHUNKINGS.values(), ids=CHUNKINGS.keys())
@pytest.mark.parametrize("kw", DPSGD_OPTIONS.values(), ids=DPSGD_OPTIONS.keys())
def test_dpsgd_persons_equal_in_memory(data, chunks, kw, monkeypatch):
    """The same persons in every batch (each partition draws its persons' uniforms,
    addressed by the person's code), each person's summed gradient clipped as in
    memory: the in-memory model up to the order of the partial sums."""
    X, y, groups = data
    recorder = StepRecorder(monkeypatch)
    kw = dict(kw, epsilon=1.0, data_norm=3.0, random_state=3)
    memory = DPSGDClassifier(**kw).fit(X, y, groups=groups)
    partitioned = DPSGDClassifier(**kw).fit(*dask_persons(X, y, groups, chunks)[:2],
                                            groups=dask_persons(X, y, groups, chunks)[2])
    sizes = {where: recorder.batch_sizes(where) for where in (True, False)}
    np.testing.assert_array_equal(sizes[True], sizes[False])   # persons, step by step
    assert sizes[False].max() <= N_PERSONS
    np.testing.assert_allclose(partitioned.coef_, memory.coef_, rtol=1e-10, atol=0)
    np.testing.assert_allclose(partitioned.intercept_, memory.intercept_, rtol=1e-10,
                               atol=1e-300)
    assert partitioned.neighboring_ == memory.neighboring_ == "add_remove_person"
    for name in ("noise_multiplier_", "learning_rate_", "epsilon_spent_", "n_steps_"):
        assert getattr(partitioned, name) == getattr(memory, name)


def test_dpsgd_first_step_clips_persons_as_computed_independently(data):
    """One noise-free DP-GD step on the dask array against numpy: each row's gradient
    ``r_i z_i`` (``r_i = -y_i / 2`` at zero) clipped to ``C``, each person's sum of
    them clipped to ``C`` (most persons here), the sum over persons divided by the
    number of persons (the DP count without noise)."""
    X, y, groups = data
    C = 0.02
    kw = dict(epsilon=np.inf, sample_rate=1.0, epochs=1, average=0.0, max_grad_norm=C,
              learning_rate=1.0, data_norm=3.0, intercept_scaling=1.0,
              intercept_correction=False, random_state=0)   # the step alone
    Xd, yd, gd = dask_persons(X, y, groups, (1, 120, 47, 132))
    fitted = DPSGDClassifier(**kw).fit(Xd, yd, groups=gd)
    Z = np.column_stack([X * np.minimum(1.0, 3.0 / np.linalg.norm(X, axis=1))[:, None],
                         np.ones(N_ROWS)])
    G = (-0.5 * np.where(y == "yes", 1.0, -1.0))[:, None] * Z
    G *= np.minimum(1.0, C / np.linalg.norm(G, axis=1))[:, None]
    sums = np.array([G[groups == p].sum(axis=0) for p in np.unique(groups)])
    norms = np.linalg.norm(sums, axis=1)
    assert np.mean(norms > C) > 0.5                       # the person clip binds
    theta = -(sums * np.minimum(1.0, C / norms)[:, None]).sum(axis=0) / len(sums)
    np.testing.assert_allclose(fitted.coef_[0], theta[:-1], rtol=1e-12)
    np.testing.assert_allclose(fitted.intercept_, theta[-1:], rtol=1e-12)


def test_dpsgd_one_row_per_person_is_the_row_level_fit(data):
    X, y, groups = data
    kw = dict(DPSGD_OPTIONS["poisson"], data_norm=3.0, random_state=5)
    Xd, yd, _ = dask_persons(X, y, groups, (1, 120, 47, 132))
    rows = DPSGDClassifier(**kw).fit(Xd, yd)
    persons = DPSGDClassifier(**kw).fit(Xd, yd, groups=da.arange(N_ROWS, chunks=100))
    np.testing.assert_allclose(persons.coef_, rows.coef_, rtol=1e-10, atol=0)
    assert (rows.neighboring_, persons.neighboring_) == ("add_remove", "add_remove_person")


@pytest.mark.parametrize("chunks", [60, (1, 120, 47, 132)], ids=["even", "uneven"])
@pytest.mark.parametrize("loss", ["logistic", "hinge"])
def test_dpsgd_persons_several_classes(three_classes, chunks, loss):
    X, y, groups = three_classes
    kw = dict(sample_rate=0.25, epochs=2, loss=loss, data_norm=3.0, random_state=2)
    memory = DPSGDClassifier(**kw).fit(X, y, groups=groups)
    Xd, yd, gd = dask_persons(X, y, groups, chunks)
    partitioned = DPSGDClassifier(**kw).fit(Xd, yd, groups=gd)
    np.testing.assert_allclose(partitioned.coef_, memory.coef_, rtol=1e-10, atol=0)
    assert partitioned.classes_.tolist() == ["a", "b", "c"]


# -- objective perturbation ---------------------------------------------------------------

def _certified_gap(a, b):
    return np.linalg.norm(np.append(a.coef_ - b.coef_, a.intercept_ - b.intercept_))


@pytest.mark.parametrize("chunks", CHUNKINGS.values(), ids=CHUNKINGS.keys())
@pytest.mark.parametrize("loss, delta", [("logistic", 0.0), ("huber", 1e-6)])
@pytest.mark.parametrize("max_rows", [1.0, 3.0])
def test_objective_perturbation_persons_equal_in_memory(data, chunks, loss, delta, max_rows):
    """Each row weighted ``min(1, M / k)`` inside its partition (``k`` its person's
    rows, counted by person key): the in-memory objective, so the two certified
    solves are within ``2 tol`` of each other, with the same noise."""
    X, y, groups = data
    kw = dict(loss=loss, delta=delta, C=5.0, data_norm=3.0, max_rows_per_group=max_rows,
              random_state=11)
    memory = ObjPertLogisticRegression(**kw).fit(X, y, groups=groups)
    Xd, yd, gd = dask_persons(X, y, groups, chunks)
    partitioned = ObjPertLogisticRegression(**kw).fit(Xd, yd, groups=gd)
    assert _certified_gap(partitioned, memory) <= 2 * memory.tol
    assert partitioned.weight_bound_ == memory.weight_bound_ == max_rows
    assert partitioned.C_ == memory.C_
    assert partitioned.epsilon_spent_ == memory.epsilon_spent_
    assert partitioned.neighboring_ == "add_remove_person"


def test_objective_perturbation_persons_differ_from_rows(data):
    """The person weights change the objective (the test above is not the row-level
    fit): without noise, the person-level and row-level minimisers differ."""
    X, y, groups = data
    kw = dict(epsilon=np.inf, C=5.0, data_norm=3.0, random_state=0)
    Xd, yd, gd = dask_persons(X, y, groups, 60)
    rows = ObjPertLogisticRegression(**kw).fit(Xd, yd)
    persons = ObjPertLogisticRegression(**kw).fit(Xd, yd, groups=gd)
    assert _certified_gap(rows, persons) > 100 * rows.tol


@pytest.mark.parametrize("chunks", [60, (150, 1, 149)], ids=["even", "one-row chunk"])
def test_objective_perturbation_persons_one_vs_rest(three_classes, chunks):
    X, y, groups = three_classes
    kw = dict(C=2.0, data_norm=3.0, multi_class="ovr", max_rows_per_group=2.0,
              random_state=4)
    memory = ObjPertLogisticRegression(**kw).fit(X, y, groups=groups)
    partitioned = ObjPertLogisticRegression(**kw).fit(*dask_persons(X, y, groups, chunks)[:2],
                                                      groups=dask_persons(X, y, groups, chunks)[2])
    assert _certified_gap(partitioned, memory) <= 2 * 3 * memory.tol   # three problems


# -- output perturbation and NAPP: the same person weights ---------------------------------

@pytest.mark.parametrize("chunks", [60, (1, 120, 47, 132)], ids=["even", "uneven"])
@pytest.mark.parametrize("loss, delta", [("logistic", 0.0), ("huber", 1e-6)])
def test_output_perturbation_persons_equal_in_memory(data, chunks, loss, delta):
    """Each solve certified within ``tol C W R`` of the exact weighted minimiser (the
    same objective), the same noise added to each."""
    X, y, groups = data
    kw = dict(loss=loss, delta=delta, C=1.0, tol=1e-8, data_norm=3.0,
              max_rows_per_group=2.0, random_state=1)
    memory = OutputPertSVM(**kw).fit(X, y, groups=groups)
    Xd, yd, gd = dask_persons(X, y, groups, chunks)
    partitioned = OutputPertSVM(**kw).fit(Xd, yd, groups=gd)
    slack = memory.tol * memory.C_ * memory.weight_bound_ * np.hypot(3.0, 1.0)
    assert _certified_gap(partitioned, memory) <= 2 * slack
    assert partitioned.weight_bound_ == memory.weight_bound_ == 2.0
    assert partitioned.epsilon_spent_ == memory.epsilon_spent_
    assert partitioned.neighboring_ == "add_remove_person"


def _napp_radius(estimator):
    """The distance within which NAPP's solve is certified (tests/test_dask_napp.py)."""
    last = estimator.privacy_report_["stages"][-1]
    d = estimator.n_features_in_ + int(estimator.fit_intercept)
    radius = np.sqrt(d) * estimator.tol / (last["penalty_curvature"] + last["extra_ridge"])
    return 2.0 * radius if estimator.coef_bound is not None else radius


@pytest.mark.parametrize("chunks", [60, (150, 1, 149)], ids=["even", "one-row chunk"])
@pytest.mark.parametrize("make, target", [
    (lambda: NAPPLasso(alpha=1.0, y_bound=5.0, coef_bound=20.0, data_norm=3.0,
                       max_rows_per_group=2.0, random_state=0), "regression"),
    (lambda: NAPPLassoClassifier(data_norm=3.0, max_rows_per_group=2.0, random_state=0),
     "labels"),
], ids=["lasso", "classifier"])
def test_napp_persons_equal_in_memory(data, chunks, make, target):
    X, y, groups = data
    if target == "regression":
        y = X @ np.arange(5.0) + 0.1
    memory = make().fit(X, y, groups=groups)
    Xd, yd, gd = dask_persons(X, y, groups, chunks)
    partitioned = make().fit(Xd, yd, groups=gd)
    assert _certified_gap(partitioned, memory) <= 2 * _napp_radius(memory)
    assert partitioned.privacy_report_ == memory.privacy_report_
    assert partitioned.weight_bound_ == memory.weight_bound_ == 2.0
    assert partitioned.neighboring_ == "add_remove_person"


# -- other inputs and schedulers -----------------------------------------------------------

def _csr(X, y, groups, chunks):
    sparse = pytest.importorskip("scipy.sparse")
    Xd, yd, gd = dask_persons(X, y, groups, chunks)
    return Xd.map_blocks(sparse.csr_matrix, meta=sparse.csr_matrix((0, 0))), yd, gd


@pytest.mark.parametrize("chunks", [60, (150, 1, 149)], ids=["even", "one-row chunk"])
def test_csr_chunks_with_persons(data, chunks):
    """CSR blocks: the shuffle stacks and reorders CSR rows; the models of the
    in-memory fit on the CSR matrix."""
    sparse = pytest.importorskip("scipy.sparse")
    X, y, groups = data
    X = np.where(np.abs(X) < 0.5, 0.0, X)
    kw = dict(sample_rate=0.2, epochs=3, data_norm=3.0, random_state=3)
    memory = DPSGDClassifier(**kw).fit(sparse.csr_matrix(X), y, groups=groups)
    partitioned = DPSGDClassifier(**kw).fit(*_csr(X, y, groups, chunks)[:2],
                                            groups=_csr(X, y, groups, chunks)[2])
    np.testing.assert_allclose(partitioned.coef_, memory.coef_, rtol=1e-10, atol=0)
    kw = dict(C=5.0, data_norm=3.0, max_rows_per_group=2.0, random_state=11)
    memory = ObjPertLogisticRegression(**kw).fit(sparse.csr_matrix(X), y, groups=groups)
    partitioned = ObjPertLogisticRegression(**kw).fit(*_csr(X, y, groups, chunks)[:2],
                                                      groups=_csr(X, y, groups, chunks)[2])
    assert _certified_gap(partitioned, memory) <= 2 * memory.tol


def test_dask_dataframe_with_persons(data):
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    X, y, groups = data
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(5)])
    labels = pd.Series((y == "yes").astype(int))
    kw = dict(sample_rate=0.2, epochs=3, data_norm=3.0, random_state=3)
    memory = DPSGDClassifier(**kw).fit(frame, labels, groups=groups)
    partitioned = DPSGDClassifier(**kw).fit(
        dd.from_pandas(frame, npartitions=4), dd.from_pandas(labels, npartitions=4),
        groups=dd.from_pandas(pd.Series(groups, dtype=object), npartitions=3))
    np.testing.assert_allclose(partitioned.coef_, memory.coef_, rtol=1e-10, atol=0)
    assert partitioned.feature_names_in_.tolist() == memory.feature_names_in_.tolist()


def test_local_cluster_smoke_persons(data, thread_cluster):
    """Poisson DP-SGD and objective perturbation with persons on worker threads of a
    LocalCluster: the in-memory models."""
    X, y, groups = data
    kw = dict(sample_rate=0.2, epochs=2, data_norm=3.0, random_state=1)
    dpsgd = DPSGDClassifier(**kw).fit(*dask_persons(X, y, groups, 60)[:2],
                                      groups=dask_persons(X, y, groups, 60)[2])
    np.testing.assert_allclose(
        dpsgd.coef_, DPSGDClassifier(**kw).fit(X, y, groups=groups).coef_, rtol=1e-10)
    kw = dict(C=5.0, data_norm=3.0, max_rows_per_group=2.0, random_state=1)
    objpert = ObjPertLogisticRegression(**kw).fit(*dask_persons(X, y, groups, 60)[:2],
                                                  groups=dask_persons(X, y, groups, 60)[2])
    memory = ObjPertLogisticRegression(**kw).fit(X, y, groups=groups)
    assert _certified_gap(objpert, memory) <= 2 * memory.tol


@pytest.mark.parametrize("form", ["dask series", "in memory", "unaligned chunks"])
def test_groups_in_other_forms(data, form):
    X, y, groups = data
    Xd, yd, gd = dask_persons(X, y, groups, 60)
    if form == "dask series":
        dd = pytest.importorskip("dask.dataframe")
        pd = pytest.importorskip("pandas")
        given = dd.from_pandas(pd.Series(groups), npartitions=3)
    elif form == "in memory":
        given = list(groups)
    else:
        given = da.from_array(groups, chunks=77)
    kw = dict(C=5.0, data_norm=3.0, max_rows_per_group=2.0, random_state=1)
    memory = ObjPertLogisticRegression(**kw).fit(X, y, groups=groups)
    partitioned = ObjPertLogisticRegression(**kw).fit(Xd, yd, groups=given)
    assert _certified_gap(partitioned, memory) <= 2 * memory.tol


def test_replace_counts_persons_for_the_noise_floor(data):
    """Under neighboring="replace" the number of persons is public: the dask fit
    reports the in-memory noise floor."""
    X, y, groups = data
    kw = dict(C=5.0, data_norm=3.0, neighboring="replace", random_state=1)
    memory = ObjPertLogisticRegression(**kw).fit(X, y, groups=groups)
    partitioned = ObjPertLogisticRegression(**kw).fit(*dask_persons(X, y, groups, 60)[:2],
                                                      groups=dask_persons(X, y, groups, 60)[2])
    assert partitioned.neighboring_ == "replace_person"
    assert partitioned.noise_floor_ == memory.noise_floor_
    assert _certified_gap(partitioned, memory) <= 2 * memory.tol


# -- refusals -----------------------------------------------------------------------------

@pytest.fixture
def no_noise(monkeypatch):
    """Fail the test if any estimator creates its noise generator."""
    def refuse(*args, **kwargs):
        raise AssertionError("a noise generator was created")

    monkeypatch.setattr(skdp_random, "privacy_streams", refuse)
    for module in (_dpsgd, _objective_perturbation, _output_perturbation, _napp_estimators):
        monkeypatch.setattr(module, "noise_generator", refuse)


def _unreadable(X, y, groups, chunks):
    """Dask arrays whose partitions raise when computed: a refusal that reads no
    partition raises its ValueError, any work on the data a RuntimeError."""
    def boom(block):
        raise RuntimeError("a partition was computed")

    return tuple(a.map_blocks(boom, dtype=a.dtype) for a in dask_persons(X, y, groups, chunks))


@pytest.mark.parametrize("estimator, message", [
    (OutputPertSVM(loss="logistic", multi_class="multinomial", data_norm=1.0),
     "one-vs-rest only"),
    (OutputPertSVM(data_norm=1.0), "loss='hinge'\\) does not fit on a dask array"),
    (NAPPLassoClassifier(data_norm=1.0, class_weight={"yes": 2.0}),
     "sample_weight and class_weight are not supported on a dask array"),
    (ObjPertLogisticRegression(multi_class="multinomial", data_norm=1.0),
     "one-vs-rest only"),
    (ObjPertLogisticRegression(data_norm="private"), "data_norm='private'"),
    (DPSGDClassifier(data_norm="private"), "data_norm='private' is not offered with groups"),
    (DPSGDClassifier(data_norm=1.0, class_weight={"yes": 2.0}),
     "sample_weight and class_weight need the rows in memory"),
])
def test_unsupported_refused_before_any_partition(data, no_noise, estimator, message):
    Xd, yd, gd = _unreadable(*data, 60)
    with pytest.raises(ValueError, match=message):
        estimator.fit(Xd, yd, groups=gd)
    assert not hasattr(estimator, "coef_")


@pytest.mark.parametrize("Est", [ObjPertLogisticRegression, OutputPertSVM])
def test_multinomial_by_default_refused_before_noise(three_classes, no_noise, Est):
    """``multi_class="auto"`` is softmax for three classes (logistic loss), known from
    the labels' pass: refused then, before any noise."""
    with pytest.raises(ValueError, match="one-vs-rest only"):
        Est(loss="logistic", data_norm=1.0).fit(*dask_persons(*three_classes, 60)[:2],
                                                groups=dask_persons(*three_classes, 60)[2])


@pytest.mark.parametrize("groups, message", [
    (lambda g: da.from_array(g[:-1], chunks=60), "another number of labels than X has rows"),
    (lambda g: g[:-1], "another number of labels than X has rows"),
    (lambda g: da.from_array(np.where(np.arange(N_ROWS) == 200, None, g.astype(object)),
                             chunks=60), "missing value"),
    (lambda g: da.from_array(np.column_stack([g, g]), chunks=60), "1-D array; got an "
                                                                  "array of 2 dimensions"),
    (lambda g: da.from_array(np.where(np.arange(N_ROWS) < 120, g.astype(object), 7),
                             chunks=60), "cannot be ordered together"),   # across partitions
    (lambda g: da.from_array(np.where(np.arange(N_ROWS) == 3, 7, g.astype(object)),
                             chunks=60), "cannot be ordered together"),   # in one
])
@pytest.mark.parametrize("make", [
    lambda: DPSGDClassifier(data_norm=1.0),
    lambda: ObjPertLogisticRegression(data_norm=1.0),
], ids=["dpsgd", "objpert"])
def test_bad_groups_refused_before_noise(data, no_noise, groups, message, make):
    """Refused before any noise, as in memory; no message states a length (the number
    of rows is private under add/remove)."""
    X, y, g = data
    estimator = make()
    with pytest.raises(ValueError, match=message) as refusal:
        estimator.fit(*dask_persons(X, y, g, 60)[:2], groups=groups(g))
    assert not hasattr(estimator, "coef_")
    assert not any(str(n) in str(refusal.value) for n in (N_ROWS, N_ROWS - 1))


def test_a_column_of_labels_is_one_label_per_row(data):
    X, y, groups = data
    Xd, yd, gd = dask_persons(X, y, groups, 60)
    kw = dict(C=5.0, data_norm=3.0, random_state=1)
    column = ObjPertLogisticRegression(**kw).fit(Xd, yd, groups=gd[:, None])
    flat = ObjPertLogisticRegression(**kw).fit(Xd, yd, groups=gd)
    np.testing.assert_array_equal(column.coef_, flat.coef_)
