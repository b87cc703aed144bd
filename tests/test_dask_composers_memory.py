"""The driver of a private search or selection with persons on a dask array holds no
O(n) state.

As ``tests/test_dask_groups_memory.py``: a child process starts a ``LocalCluster``
(its worker a process of its own), caps its own address space at what it maps plus
``HEADROOM`` bytes, and runs ``PrivateGridSearchCV`` and ``EpsilonForUtility`` with
``groups`` on rows, labels and persons generated lazily on the worker, every person's
rows spread over several partitions. The split by the persons' public coins, the
trials' fits and their scores all run on the worker: a driver that gathered the
rows, or one value per row, could not allocate them (the control, allocating the
data's size under the same cap, raises ``MemoryError``).
"""

import pytest

from tests._dask_child import check_driver_memory, run_child

pytest.importorskip("dask.distributed")
pytest.importorskip("resource")

HEADROOM = 160 * 2**20

_CHILD = """
    from skdp import DPSGDClassifier
    from skdp.model_selection import PrivateGridSearchCV

    n_rows, n_features, chunk, headroom = map(int, sys.argv[1:5])
    cluster, client = start_cluster()
    # five rows a person, far apart
    X, y, _, groups = lazy_data(n_rows, n_features, chunk, scale=10.0, label_weight=0.5,
                                n_persons=n_rows // 5)
    before = cap_driver(headroom)
    out = {"data_bytes": X.nbytes, "limit_over_mapped": headroom}
    dpgd = DPSGDClassifier(sample_rate=1.0, epochs=2, data_norm=1.0)
    search = PrivateGridSearchCV(dpgd, {"learning_rate": [0.5]}, epsilon=4.0, delta=1e-5,
                                 mean_trials=2.0, validation_fraction=0.3, random_state=0)
    search.fit(X, y, groups=groups)
    out["search_unit"] = search.privacy_report_["neighboring"]
    out["search_coef"] = search.best_estimator_.coef_.tolist()
    finish(out, X, before, client, cluster)
"""


@pytest.mark.slow
def test_driver_memory_of_a_person_level_search():
    """A person-level search of DP-GD trials (two steps, each person's gradient
    reduced by person key) on 5e5 x 100 float64 rows (400 MB) of 1e5 persons, each
    spread over five partitions, the driver capped at 160 MB over what it maps."""
    out = run_child(_CHILD, 500_000, 100, 50_000, HEADROOM, timeout=900)
    check_driver_memory(out)
    assert out["search_unit"] == "add_remove_person"
    assert len(out["search_coef"][0]) == 100
