"""The driver of a fit on a dask array holds O(d) or O(d^2), not O(n).

A child process starts a ``LocalCluster`` (its worker in a process of its own), then
caps its own address space (``RLIMIT_AS``) at what it maps plus ``HEADROOM`` bytes and
fits on rows generated lazily, block by block, on the worker: the data are larger
than the headroom and never exist whole anywhere. A driver that gathered ``X`` (or any
vector of ``n`` values per column) could not allocate it: the control at the end,
allocating the data's size under the same cap, raises ``MemoryError`` (one arena:
``MALLOC_ARENA_MAX=1``, so that every allocation maps new pages). The child also reports its
peak resident memory during the fits.
"""

import pytest

from tests._dask_child import check_driver_memory, run_child

pytest.importorskip("dask.distributed")
pytest.importorskip("resource")

HEADROOM = 192 * 2**20

_CHILD = """
    from skdp import DPSGDClassifier, NAPPLasso, ObjPertLogisticRegression

    n_rows, n_features, chunk, headroom, slow = map(int, sys.argv[1:6])
    cluster, client = start_cluster()
    X, y, target, _ = lazy_data(n_rows, n_features, chunk, scale=10.0, label_weight=0.5,
                                n_persons=1)
    before = cap_driver(headroom)
    out = {"data_bytes": X.nbytes, "limit_over_mapped": headroom}
    clf = DPSGDClassifier(sample_rate=1.0, epochs=2, random_state=0).fit(X, y)
    out["dpgd_coef"] = clf.coef_.tolist()
    reg = NAPPLasso(alpha=10.0, y_bound=5.0, coef_bound=20.0, random_state=0).fit(X, target)
    out["napp_coef"] = reg.coef_.tolist()
    if slow:
        obj = ObjPertLogisticRegression(random_state=0).fit(X, y)
        out["objpert_coef"] = obj.coef_.tolist()
    finish(out, X, before, client, cluster)
"""


def _run_child(n_rows, n_features, chunk, slow=False):
    return run_child(_CHILD, n_rows, n_features, chunk, HEADROOM, int(slow), timeout=600)


def _check(out):
    check_driver_memory(out)
    assert len(out["dpgd_coef"][0]) == len(out["napp_coef"])


def test_driver_memory_does_not_grow_with_rows():
    """DP-GD (two steps) and the squared-loss NAPP (one Gram pass) on 6e5 x 100
    float64 rows (480 MB), the driver capped at 192 MB over what it maps."""
    _check(_run_child(600_000, 100, 60_000))


@pytest.mark.slow
def test_driver_memory_does_not_grow_with_rows_large():
    """The same with objective perturbation too, on 4e6 x 100 (3.2 GB)."""
    _check(_run_child(4_000_000, 100, 200_000, slow=True))
