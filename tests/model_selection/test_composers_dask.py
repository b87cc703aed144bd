"""The private searches on a dask array with persons: the in-memory search's release.

``PrivateGridSearchCV.fit(X, y, groups=...)`` with dask ``X``, ``y`` and ``groups``
splits the persons by the in-memory search's public coins on the dask graph (a
person's rows all on one side, persons spread over partitions), fits every trial on
the dask training part through the gate and scores it partition by partition: the
released model, its parameters and its noisy score are the in-memory search's, for
any chunking (the models within the dask fits' own tolerance against memory:
1e-10 relative for DP-SGD, the certified distance for objective perturbation).
"""

import warnings

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

from dask.callbacks import Callback  # noqa: E402
from sklearn.base import clone  # noqa: E402
from sklearn.datasets import make_classification, make_regression  # noqa: E402
from sklearn.pipeline import Pipeline  # noqa: E402
from sklearn.preprocessing import FunctionTransformer, StandardScaler  # noqa: E402

from skdp import (DPSGDClassifier, EpsilonForUtility, ObjPertLogisticRegression,  # noqa: E402
                  SSPLinearRegression)
from skdp.model_selection import PrivateGridSearchCV  # noqa: E402
from skdp.model_selection import _private_search  # noqa: E402
from skdp.model_selection._partitioned_rows import (check_partitioned_rows,  # noqa: E402
                                                    coin_parts)
from skdp.model_selection._private_selection import _SelectionStreams  # noqa: E402
from skdp.model_selection._selection_tests import person_shares  # noqa: E402
from skdp.preprocessing import BoundedScaler, Clipper  # noqa: E402
from skdp.utils._groups import check_groups  # noqa: E402
from tests._dask_persons import dask_persons, spanning_persons  # noqa: E402

from ._persons import _person_coins, _straddling  # noqa: E402

N_ROWS, N_PERSONS = 400, 90
CHUNKINGS = {"even": 80, "uneven": (1, 170, 47, 182), "one-row chunk": (200, 1, 199),
             "single": N_ROWS}


pytestmark = pytest.mark.usefixtures("synchronous_dask")


@pytest.fixture(scope="module")
def data():
    """Rows of 90 persons in random order (most persons in several partitions),
    persons labelled by strings so that codes are not row positions."""
    X, y = make_classification(n_samples=N_ROWS, n_features=4, n_informative=2,
                               n_redundant=0, flip_y=0.05, random_state=0)
    X /= np.linalg.norm(X, axis=1).max()
    persons = np.random.default_rng(1).integers(0, N_PERSONS, N_ROWS)
    return X, y, np.array([f"p{p:03d}" for p in persons])


@pytest.mark.parametrize("chunks", list(CHUNKINGS.values())[:3], ids=list(CHUNKINGS)[:3])
def test_the_split_is_the_in_memory_persons_split(data, chunks):
    """Each side of the dask split holds the rows of the persons whose public coin fell
    there (the coins drawn by hand), in row order, each person whole; the scored
    side's shares are ``1 / k``; persons span the partitions."""
    X, y, groups = data
    Xd, yd, gd = dask_persons(X, y, groups, chunks)
    assert spanning_persons(groups, Xd.chunks[0]) >= N_PERSONS // 3
    rows = check_partitioned_rows(ObjPertLogisticRegression(), ObjPertLogisticRegression(),
                                  Xd, yd, gd, "test")
    train, validation = coin_parts(rows, 0.3, _SelectionStreams(4).coins())
    codes = check_groups(groups, N_ROWS)
    in_validation = _person_coins(4, codes, 0.3)
    assert _straddling(codes, in_validation) == 0 and 0.15 < in_validation.mean() < 0.45
    np.testing.assert_array_equal(validation.X.compute(), X[in_validation])
    np.testing.assert_array_equal(train.X.compute(), X[~in_validation])
    np.testing.assert_array_equal(train.y.compute(), y[~in_validation])
    np.testing.assert_array_equal(train.groups.compute(), codes[~in_validation])
    np.testing.assert_array_equal(validation.shares.compute(),
                                  person_shares(codes)[in_validation])
    assert not np.isnan(train.X.shape[0]) and min(train.X.chunks[0]) > 0


SEARCHES = {   # (estimator, grid, the search's parameters)
    "objective perturbation": (ObjPertLogisticRegression(data_norm=1.0,
                                                         max_rows_per_group=2.0),
                               {"C": [0.1, 1.0, 10.0]}, dict(epsilon=4.0)),
    "DP-SGD": (DPSGDClassifier(data_norm=1.0, sample_rate=0.3, epochs=2),
               {"learning_rate": [0.05, 0.5]}, dict(epsilon=4.0, delta=1e-5)),
}


def _close(dask_model, memory_model, estimator):
    if isinstance(estimator, DPSGDClassifier):
        np.testing.assert_allclose(dask_model.coef_, memory_model.coef_, rtol=1e-10)
    else:   # two solves certified to tol: within 2 tol / ridge (ridge >= 1)
        distance = np.linalg.norm(np.r_[dask_model.coef_.ravel() - memory_model.coef_.ravel(),
                                        dask_model.intercept_ - memory_model.intercept_])
        assert distance <= 2 * memory_model.tol


CASES = [("objective perturbation", chunks, 0.3) for chunks in CHUNKINGS] + [
    ("objective perturbation", "uneven", None), ("DP-SGD", "uneven", 0.3),
    ("DP-SGD", "one-row chunk", None)]


@pytest.mark.parametrize("name, chunking, validation_fraction", CASES)
def test_search_on_dask_persons_is_the_in_memory_search(data, name, chunking,
                                                        validation_fraction):
    X, y, groups = data
    estimator, grid, kw = SEARCHES[name]
    chunks = CHUNKINGS[chunking]
    kw = dict(kw, validation_fraction=validation_fraction, random_state=7)
    memory = PrivateGridSearchCV(estimator, grid, **kw).fit(X, y, groups=groups)
    Xd, yd, gd = dask_persons(X, y, groups, chunks)
    partitioned = PrivateGridSearchCV(estimator, grid, **kw).fit(Xd, yd, groups=gd)
    assert partitioned.best_params_ == memory.best_params_
    np.testing.assert_allclose(partitioned.best_score_, memory.best_score_, rtol=1e-9)
    _close(partitioned.best_estimator_, memory.best_estimator_, estimator)
    assert partitioned.best_estimator_.neighboring_ == "add_remove_person"
    assert partitioned.privacy_report_["statement"] == memory.privacy_report_["statement"]
    assert partitioned.n_features_in_ == 4


def test_scores_are_read_on_the_scored_persons_only(data, monkeypatch):
    """Each trial's score before noise is ``sum_i u_i / k_i`` over the scored persons'
    rows (by hand, on the in-memory rows), read from the dask part."""
    X, y, groups = data
    seen, original = [], _private_search.trial_sum
    monkeypatch.setattr(_private_search, "trial_sum",
                        lambda *args: seen.append((args, original(*args))) or seen[-1][1])
    estimator, grid, _ = SEARCHES["objective perturbation"]
    PrivateGridSearchCV(estimator, grid, epsilon=4.0, validation_fraction=0.3,
                        random_state=7).fit(*dask_persons(X, y, groups, (1, 170, 47, 182)))
    codes = check_groups(groups, N_ROWS)
    scored = _person_coins(7, codes, 0.3)
    shares = person_shares(codes)[scored]
    assert seen
    for (_, model, *_), value in seen:
        right = model.predict(X[scored]) == y[scored]
        np.testing.assert_allclose(value, np.sum(shares * right), rtol=1e-12)


class _Counting(Callback):
    def __init__(self):
        super().__init__()
        self.tasks = 0

    def _pretask(self, key, dsk, state):
        self.tasks += 1


PIPELINE = Pipeline([("clip", Clipper(lower=-1.0, upper=1.0)),
                     ("scale", BoundedScaler(lower=-1.0, upper=1.0,
                                             feature_range=(-0.5, 0.5))),
                     ("model", ObjPertLogisticRegression(data_norm=1.0,
                                                         max_rows_per_group=2.0))])


@pytest.mark.parametrize("chunking", list(CHUNKINGS))
def test_search_of_a_pipeline_on_dask_persons_is_the_in_memory_search(data, chunking):
    """Declared-bounds preprocessing, fitted on the shape and mapped over the
    partitions lazily, searched over too: the in-memory search's release."""
    X, y, groups = data
    grid = {"model__C": [0.1, 1.0, 10.0], "scale__upper": [0.5, 1.0]}
    kw = dict(epsilon=4.0, validation_fraction=0.3, random_state=7)
    memory = PrivateGridSearchCV(PIPELINE, grid, **kw).fit(X, y, groups=groups)
    Xd, yd, gd = dask_persons(X, y, groups, CHUNKINGS[chunking])
    partitioned = PrivateGridSearchCV(PIPELINE, grid, **kw).fit(Xd, yd, groups=gd)
    assert partitioned.best_params_ == memory.best_params_
    np.testing.assert_allclose(partitioned.best_score_, memory.best_score_, rtol=1e-9)
    released, expected = partitioned.best_estimator_, memory.best_estimator_
    assert type(released) is Pipeline and released[-1].neighboring_ == "add_remove_person"
    for name in ("clip", "scale"):
        np.testing.assert_array_equal(released[name].upper_, expected[name].upper_)
    _close(released[-1], expected[-1], expected[-1])
    np.testing.assert_array_equal(released.predict(Xd).compute(), released.predict(X))


def test_a_pipeline_private_step_declares_the_classes_on_dask(data):
    """The label set a Pipeline's private step declares is the one the dask checks
    hold the labels to (a label outside it refused before any noise)."""
    X, y, groups = data
    pipe = clone(PIPELINE).set_params(model__classes=[0, 5])
    with pytest.raises(ValueError, match="declared"):
        PrivateGridSearchCV(pipe, {"model__C": [1.0]}, epsilon=2.0,
                            validation_fraction=0.3).fit(*dask_persons(X, y, groups, 80))


def _refused_steps():
    """A step that would fit on the private rows, and a public one that would bring
    them into memory (the gate's message, and the dask one)."""
    final = ("model", ObjPertLogisticRegression(data_norm=1.0))
    return {"fitted": (Pipeline([("scale", StandardScaler()), final]),
                       "would be fitted on the private rows"),
            "in memory": (Pipeline([("log", FunctionTransformer(np.log1p)),
                                    ("scale", BoundedScaler(lower=0.0, upper=1.0)), final]),
                          "'log' .FunctionTransformer. is public but would transform")}


@pytest.mark.parametrize("step", ["fitted", "in memory"])
def test_a_pipeline_step_on_dask_is_refused_before_any_partition(data, step):
    X, y, groups = data
    pipe, match = _refused_steps()[step]
    with _Counting() as counting, pytest.raises(ValueError, match=match):
        PrivateGridSearchCV(pipe, {"model__C": [1.0]}, epsilon=2.0,
                            validation_fraction=0.3).fit(*dask_persons(X, y, groups, 80)[:2],
                                                         groups=dask_persons(X, y, groups, 80)[2])
    assert counting.tasks == 0


def test_bad_input_on_dask_is_refused_before_any_noise(data, monkeypatch):
    """A NaN in one partition, or a missing person label: refused by the one pass of
    checks, before the search draws anything."""
    X, y, groups = data
    drawn = []
    monkeypatch.setattr(_private_search, "draw_runs",
                        lambda *a: drawn.append(a) or 1)
    search = PrivateGridSearchCV(SEARCHES["objective perturbation"][0], {"C": [1.0]},
                                 epsilon=2.0, validation_fraction=0.3)
    bad = X.copy()
    bad[250, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        search.fit(*dask_persons(bad, y, groups, 80))
    missing = groups.astype(object)
    missing[3] = None
    with pytest.raises(ValueError, match="missing"):
        search.fit(*dask_persons(X, y, missing, 80))
    assert drawn == []


@pytest.mark.parametrize("final", ["Pipeline", "estimator"])
def test_a_search_on_a_dask_dataframe_releases_the_column_names(data, final):
    """The released model records the frame's column names where a fit on pandas does
    (its first step), so that it predicts on the pandas frame without a warning."""
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    X, y, _ = data
    frame = pd.DataFrame(X, columns=["age", "dose", "weight", "visits"])
    estimator = PIPELINE if final == "Pipeline" else PIPELINE[-1]
    grid = {"model__C" if final == "Pipeline" else "C": [0.1, 1.0]}
    kw = dict(epsilon=4.0, validation_fraction=0.3, random_state=7)
    memory = PrivateGridSearchCV(estimator, grid, **kw).fit(frame, y).best_estimator_
    released = PrivateGridSearchCV(estimator, grid, **kw).fit(
        dd.from_pandas(frame, npartitions=3), dd.from_pandas(pd.Series(y), npartitions=3)
    ).best_estimator_
    first = (lambda model: model[0]) if final == "Pipeline" else (lambda model: model)
    assert first(released).feature_names_in_.tolist() == first(memory).feature_names_in_.tolist()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(released.predict(frame), memory.predict(frame))


# -- EpsilonForUtility ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def cohort():
    """3,000 rows of 800 persons: a validation part of about 160 persons."""
    X, y = make_classification(n_samples=3000, n_features=4, n_informative=2,
                               n_redundant=0, flip_y=0.02, class_sep=2.0, random_state=2)
    X /= np.linalg.norm(X, axis=1).max()
    persons = np.random.default_rng(2).integers(0, 800, 3000)
    return X, y, np.array([f"q{p:04d}" for p in persons])


@pytest.mark.parametrize("chunks", [(1, 1400, 599, 1000), 3000], ids=["uneven", "single"])
def test_selection_on_dask_persons_is_the_in_memory_selection(cohort, chunks):
    """The same persons' split, label counts, rungs, tests and released model."""
    X, y, groups = cohort
    selection = dict(target_utility=0.75, epsilon_max=8.0, tolerance=0.2, random_state=3)
    estimator = ObjPertLogisticRegression(data_norm=1.0, max_rows_per_group=2.0)
    memory = EpsilonForUtility(estimator, **selection).fit(X, y, groups=groups)
    Xd, yd, gd = dask_persons(X, y, groups, chunks)
    partitioned = EpsilonForUtility(estimator, **selection).fit(Xd, yd, groups=gd)
    assert memory.epsilon_ is not None and len(memory.measurements_) >= 1
    # the sums of shares in another order: the noisy count, hence the rungs, to 1e-12
    np.testing.assert_allclose(partitioned.epsilon_, memory.epsilon_, rtol=1e-12)
    assert len(partitioned.measurements_) == len(memory.measurements_)
    for ours, theirs in zip(partitioned.measurements_, memory.measurements_):
        assert ours["passed"] == theirs["passed"]
        np.testing.assert_allclose(ours["noisy_utility"], theirs["noisy_utility"], rtol=1e-9)
    counts = [m.privacy_report_["transcript"]["noisy_label_counts"]
              for m in (partitioned, memory)]
    np.testing.assert_allclose(*counts, rtol=1e-12)
    _close(partitioned.best_estimator_, memory.best_estimator_, estimator)
    assert partitioned.privacy_report_["statement"] == memory.privacy_report_["statement"]


@pytest.mark.parametrize("chunks", [(1, 1400, 599, 1000), 3000], ids=["uneven", "single"])
def test_selection_of_a_pipeline_on_dask_persons_is_the_in_memory_selection(cohort, chunks):
    X, y, groups = cohort
    selection = dict(target_utility=0.75, epsilon_max=8.0, tolerance=0.2, random_state=3)
    memory = EpsilonForUtility(PIPELINE, **selection).fit(X, y, groups=groups)
    Xd, yd, gd = dask_persons(X, y, groups, chunks)
    partitioned = EpsilonForUtility(PIPELINE, **selection).fit(Xd, yd, groups=gd)
    np.testing.assert_allclose(partitioned.epsilon_, memory.epsilon_, rtol=1e-12)
    assert [m["passed"] for m in partitioned.measurements_] == [
        m["passed"] for m in memory.measurements_]
    assert type(partitioned.best_estimator_) is Pipeline
    _close(partitioned.best_estimator_[-1], memory.best_estimator_[-1],
           memory.best_estimator_[-1])


def test_a_selection_on_a_dask_dataframe_releases_the_column_names(cohort):
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    X, y, _ = cohort
    frame = pd.DataFrame(X, columns=["age", "dose", "weight", "visits"])
    selection = dict(target_utility=0.75, epsilon_max=8.0, tolerance=0.2, random_state=3)
    memory = EpsilonForUtility(PIPELINE, **selection).fit(frame, y).best_estimator_
    released = EpsilonForUtility(PIPELINE, **selection).fit(
        dd.from_pandas(frame, npartitions=3), dd.from_pandas(pd.Series(y), npartitions=3)
    ).best_estimator_
    assert released.feature_names_in_.tolist() == memory.feature_names_in_.tolist()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(released.predict(frame), memory.predict(frame))


def test_ssp_selection_of_a_pipeline_on_dask_persons_is_the_in_memory_selection():
    """SSP's rungs are releases of one noise-reduction path, fitted on the transformed
    rows (the Pipeline's head fitted on the dask array's shape, mapped lazily)."""
    X, y = make_regression(n_samples=3000, n_features=3, noise=5.0, random_state=0)
    y /= np.abs(y).max()
    groups = np.random.default_rng(2).integers(0, 800, 3000)
    pipe = Pipeline([("scale", BoundedScaler(lower=-4.0, upper=4.0,
                                             feature_range=(-0.5, 0.5))),
                     ("model", SSPLinearRegression(data_norm=1.0, y_bound=1.0,
                                                   max_rows_per_group=2.0))])
    selection = dict(target_utility=0.3, epsilon_max=8.0, tolerance=0.2, random_state=3)
    memory = EpsilonForUtility(pipe, **selection).fit(X, y, groups=groups)
    Xd, yd, gd = dask_persons(X, y, groups, (1, 1400, 599, 1000))
    partitioned = EpsilonForUtility(pipe, **selection).fit(Xd, yd, groups=gd)
    np.testing.assert_allclose(partitioned.epsilon_, memory.epsilon_, rtol=1e-12)
    # the statistics summed in another order: the released coefficients to rounding
    np.testing.assert_allclose(partitioned.best_estimator_[-1].coef_,
                               memory.best_estimator_[-1].coef_, rtol=1e-9)
    np.testing.assert_array_equal(partitioned.best_estimator_["scale"].upper_,
                                  memory.best_estimator_["scale"].upper_)


@pytest.mark.parametrize("step", ["fitted", "in memory"])
def test_selection_pipeline_step_on_dask_is_refused_before_any_partition(cohort, step):
    X, y, groups = cohort
    pipe, match = _refused_steps()[step]
    Xd, yd, gd = dask_persons(X, y, groups, 1000)
    with _Counting() as counting, pytest.raises(ValueError, match=match):
        EpsilonForUtility(pipe, target_utility=0.75, epsilon_max=8.0).fit(Xd, yd, groups=gd)
    assert counting.tasks == 0


def test_search_on_dask_rows_is_the_in_memory_search(data):
    """Without groups: row ``i``'s coin is the ``i``-th draw, as in memory."""
    X, y, _ = data
    estimator, grid, kw = SEARCHES["objective perturbation"]
    kw = dict(kw, validation_fraction=0.3, random_state=8)
    memory = PrivateGridSearchCV(estimator, grid, **kw).fit(X, y)
    Xd, yd, _ = dask_persons(X, y, y, CHUNKINGS["uneven"])
    partitioned = PrivateGridSearchCV(estimator, grid, **kw).fit(Xd, yd)
    assert partitioned.best_params_ == memory.best_params_
    np.testing.assert_allclose(partitioned.best_score_, memory.best_score_, rtol=1e-9)
    _close(partitioned.best_estimator_, memory.best_estimator_, estimator)
    assert partitioned.best_estimator_.neighboring_ == "add_remove"


def test_search_and_selection_on_a_local_cluster(cohort, thread_cluster):
    """On worker threads of a LocalCluster (the coins persisted on the worker): the
    in-memory releases."""
    X, y, groups = cohort
    estimator = ObjPertLogisticRegression(data_norm=1.0, max_rows_per_group=2.0)
    Xd, yd, gd = dask_persons(X, y, groups, 700)
    kw = dict(epsilon=4.0, validation_fraction=0.3, random_state=5)
    search = PrivateGridSearchCV(estimator, {"C": [0.1, 1.0]}, **kw)
    memory = PrivateGridSearchCV(estimator, {"C": [0.1, 1.0]}, **kw).fit(X, y, groups=groups)
    search.fit(Xd, yd, groups=gd)
    assert search.best_params_ == memory.best_params_
    _close(search.best_estimator_, memory.best_estimator_, estimator)
    selection = dict(target_utility=0.75, epsilon_max=8.0, tolerance=0.2, random_state=3)
    chosen = EpsilonForUtility(estimator, **selection).fit(Xd, yd, groups=gd)
    memory = EpsilonForUtility(estimator, **selection).fit(X, y, groups=groups)
    np.testing.assert_allclose(chosen.epsilon_, memory.epsilon_, rtol=1e-12)
    _close(chosen.best_estimator_, memory.best_estimator_, estimator)
