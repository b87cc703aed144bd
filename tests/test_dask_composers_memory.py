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

import json
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("dask.distributed")
resource = pytest.importorskip("resource")

HEADROOM = 160 * 2**20

_CHILD = textwrap.dedent("""
    import json, resource, sys
    import numpy as np
    import dask.array as da
    from dask.distributed import Client, LocalCluster
    from skdp import DPSGDClassifier
    from skdp.model_selection import PrivateGridSearchCV

    n_rows, n_features, chunk, headroom = map(int, sys.argv[1:5])
    n_persons = n_rows // 5

    def vm_size():
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) * 1024 for line in status
                        if line.startswith("VmSize:"))

    def peak():
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

    try:
        cluster = LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                               dashboard_address=None, memory_limit=0)
        client = Client(cluster)
    except Exception as exc:   # e.g. no sockets or no processes in a sandbox
        print(json.dumps({"skip": repr(exc)}))
        sys.exit(0)
    blocks = ((chunk,) * (n_rows // chunk), (n_features,))

    def rows(block_info=None):
        i = block_info[None]["chunk-location"][0]
        return np.random.default_rng(i).standard_normal((chunk, n_features)) / 10.0

    def labels(block_info=None):
        block = rows({None: block_info[None]})
        return (block[:, 0] + 0.5 * block[:, 1] > 0).astype(int)

    def persons(block_info=None):
        start = block_info[None]["array-location"][0][0]
        return (start + np.arange(chunk)) % n_persons     # five rows each, far apart

    X = da.map_blocks(rows, chunks=blocks, dtype=float)
    y = da.map_blocks(labels, chunks=blocks[:1], dtype=int)
    groups = da.map_blocks(persons, chunks=blocks[:1], dtype=int)
    limit = vm_size() + headroom
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    before = peak()
    out = {"data_bytes": X.nbytes, "limit_over_mapped": headroom}
    dpgd = DPSGDClassifier(sample_rate=1.0, epochs=2, data_norm=1.0)
    search = PrivateGridSearchCV(dpgd, {"learning_rate": [0.5]}, epsilon=4.0, delta=1e-5,
                                 mean_trials=2.0, validation_fraction=0.3, random_state=0)
    search.fit(X, y, groups=groups)
    out["search_unit"] = search.privacy_report_["neighboring"]
    out["search_coef"] = search.best_estimator_.coef_.tolist()
    out["driver_peak_increase"] = peak() - before
    try:   # what gathering X would need (the data's size), under the same cap
        np.ones(X.shape)
        out["control"] = "allocated"
    except MemoryError:
        out["control"] = "MemoryError"
    client.close()
    cluster.close()
    print(json.dumps(out))
""")


def _run_child(n_rows, n_features, chunk):
    result = subprocess.run(
        [sys.executable, "-c", _CHILD, str(n_rows), str(n_features), str(chunk),
         str(HEADROOM)],
        capture_output=True, text=True, timeout=900,
        env={"MALLOC_ARENA_MAX": "1", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
             "MKL_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stderr[-3000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    if "skip" in out:
        pytest.skip(f"cannot start a dask LocalCluster here: {out['skip']}")
    return out


@pytest.mark.slow
def test_driver_memory_of_a_person_level_search():
    """A person-level search of DP-GD trials (two steps, each person's gradient
    reduced by person key) on 5e5 x 100 float64 rows (400 MB) of 1e5 persons, each
    spread over five partitions, the driver capped at 160 MB over what it maps."""
    out = _run_child(500_000, 100, 50_000)
    assert out["data_bytes"] > 2 * out["limit_over_mapped"]
    assert out["control"] == "MemoryError"
    assert out["search_unit"] == "add_remove_person"
    assert len(out["search_coef"][0]) == 100
    assert out["driver_peak_increase"] < out["data_bytes"] / 4
