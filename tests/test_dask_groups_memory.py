"""The driver of a person-level fit on a dask array holds no O(n) state.

As ``tests/test_dask_memory.py``, with persons: a child process starts a
``LocalCluster`` (its worker a process of its own), caps its own address space at what
it maps plus ``HEADROOM`` bytes, and fits with ``groups`` on rows, labels and persons
generated lazily on the worker, block by block. Every person's rows are spread over
several partitions (person ``i mod P`` of row ``i``), so the persons' codes, sizes
and (for DP-SGD) summed gradients are brought together by person key on the worker. A driver
that gathered the rows, or one value per row, could not allocate them: the control,
allocating the data's size under the same cap, raises ``MemoryError``.
"""

import pytest

from tests._dask_child import check_driver_memory, run_child

pytest.importorskip("dask.distributed")
pytest.importorskip("resource")

HEADROOM = 192 * 2**20

_CHILD = """
    from skdp import (DPSGDClassifier, NAPPLasso, ObjPertLogisticRegression,
                      SSPLinearRegression)

    n_rows, n_features, chunk, headroom, slow = map(int, sys.argv[1:6])
    cluster, client = start_cluster()
    # five rows a person, far apart
    X, y, target, groups = lazy_data(n_rows, n_features, chunk, scale=10.0,
                                     label_weight=0.5, n_persons=n_rows // 5)
    before = cap_driver(headroom)
    out = {"data_bytes": X.nbytes, "limit_over_mapped": headroom}
    clf = DPSGDClassifier(sample_rate=1.0, epochs=2, data_norm=1.0, random_state=0)
    out["dpgd_coef"] = clf.fit(X, y, groups=groups).coef_.tolist()
    out["dpgd_unit"] = clf.neighboring_
    reg = NAPPLasso(alpha=10.0, y_bound=5.0, coef_bound=20.0, data_norm=1.0,
                    max_rows_per_group=2.0, random_state=0)
    out["napp_coef"] = reg.fit(X, target, groups=groups).coef_.tolist()
    ssp = SSPLinearRegression(delta=1e-6, y_bound=5.0, data_norm=1.0,
                              max_rows_per_group=2.0, random_state=0)
    out["ssp_coef"] = ssp.fit(X, target, groups=groups).coef_.tolist()
    out["ssp_unit"] = ssp.neighboring_
    if slow:
        obj = ObjPertLogisticRegression(data_norm=1.0, max_rows_per_group=2.0,
                                        random_state=0).fit(X, y, groups=groups)
        out["objpert_coef"] = obj.coef_.tolist()
    finish(out, X, before, client, cluster)
"""


def _run_child(n_rows, n_features, chunk, slow=False):
    return run_child(_CHILD, n_rows, n_features, chunk, HEADROOM, int(slow), timeout=900)


def _check(out):
    check_driver_memory(out)
    assert out["dpgd_unit"] == "add_remove_person"
    assert len(out["dpgd_coef"][0]) == len(out["napp_coef"]) == len(out["ssp_coef"])
    assert out["ssp_unit"] == "add_remove_person"


@pytest.mark.slow
def test_driver_memory_with_persons():
    """DP-GD with persons (two steps, each person's gradient summed over its
    partitions by a person-keyed reduction), the squared-loss NAPP and SSP with person
    weights on 6e5 x 100 float64 rows (480 MB) of 1.2e5 persons, each spread over five
    partitions, the driver capped at 192 MB over what it maps."""
    _check(_run_child(600_000, 100, 60_000))
