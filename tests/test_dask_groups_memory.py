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

import json
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("dask.distributed")
resource = pytest.importorskip("resource")

HEADROOM = 192 * 2**20

_CHILD = textwrap.dedent("""
    import json, resource, sys
    import numpy as np
    import dask, dask.array as da
    from dask.distributed import Client, LocalCluster
    from skdp import (DPSGDClassifier, NAPPLasso, ObjPertLogisticRegression,
                      SSPLinearRegression)

    n_rows, n_features, chunk, headroom, slow = map(int, sys.argv[1:6])
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

    def targets(block_info=None):
        block = rows({None: block_info[None]})
        return 30.0 * block[:, 0] - 10.0 * block[:, 2]

    def persons(block_info=None):
        start = block_info[None]["array-location"][0][0]
        return (start + np.arange(chunk)) % n_persons     # five rows each, far apart

    X = da.map_blocks(rows, chunks=blocks, dtype=float)
    y = da.map_blocks(labels, chunks=blocks[:1], dtype=int)
    target = da.map_blocks(targets, chunks=blocks[:1], dtype=float)
    groups = da.map_blocks(persons, chunks=blocks[:1], dtype=int)
    limit = vm_size() + headroom
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    before = peak()
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


def _run_child(n_rows, n_features, chunk, slow=False):
    result = subprocess.run(
        [sys.executable, "-c", _CHILD, str(n_rows), str(n_features), str(chunk),
         str(HEADROOM), str(int(slow))],
        capture_output=True, text=True, timeout=900,
        env={"MALLOC_ARENA_MAX": "1", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
             "MKL_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stderr[-3000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    if "skip" in out:
        pytest.skip(f"cannot start a dask LocalCluster here: {out['skip']}")
    return out


def _check(out):
    assert out["data_bytes"] > 2 * out["limit_over_mapped"]
    assert out["control"] == "MemoryError"
    assert out["dpgd_unit"] == "add_remove_person"
    assert len(out["dpgd_coef"][0]) == len(out["napp_coef"]) == len(out["ssp_coef"])
    assert out["ssp_unit"] == "add_remove_person"
    assert out["driver_peak_increase"] < out["data_bytes"] / 4


@pytest.mark.slow
def test_driver_memory_with_persons():
    """DP-GD with persons (two steps, each person's gradient summed over its
    partitions by a person-keyed reduction), the squared-loss NAPP and SSP with person
    weights on 6e5 x 100 float64 rows (480 MB) of 1.2e5 persons, each spread over five
    partitions, the driver capped at 192 MB over what it maps."""
    _check(_run_child(600_000, 100, 60_000))
