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
    from skdp import DPSGDClassifier, NAPPLasso, ObjPertLogisticRegression

    n_rows, n_features, chunk, headroom, slow = map(int, sys.argv[1:6])

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
        # block i's rows from its own seed: recomputed alike in every pass
        i = block_info[None]["chunk-location"][0]
        return np.random.default_rng(i).standard_normal((chunk, n_features)) / 10.0

    def labels(block_info=None):
        block = rows({None: block_info[None]})
        return (block[:, 0] + 0.5 * block[:, 1] > 0).astype(int)

    def targets(block_info=None):
        block = rows({None: block_info[None]})
        return 30.0 * block[:, 0] - 10.0 * block[:, 2]

    X = da.map_blocks(rows, chunks=blocks, dtype=float)
    y = da.map_blocks(labels, chunks=blocks[:1], dtype=int)
    target = da.map_blocks(targets, chunks=blocks[:1], dtype=float)
    # the worker is running: only this process (the driver) is capped from here on
    limit = vm_size() + headroom
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    before = peak()
    out = {"data_bytes": X.nbytes, "limit_over_mapped": headroom}
    clf = DPSGDClassifier(sample_rate=1.0, epochs=2, random_state=0).fit(X, y)
    out["dpgd_coef"] = clf.coef_.tolist()
    reg = NAPPLasso(alpha=10.0, y_bound=5.0, coef_bound=20.0, random_state=0).fit(X, target)
    out["napp_coef"] = reg.coef_.tolist()
    if slow:
        obj = ObjPertLogisticRegression(random_state=0).fit(X, y)
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
        capture_output=True, text=True, timeout=600,
        env={"MALLOC_ARENA_MAX": "1", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
             "MKL_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stderr[-3000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    if "skip" in out:
        pytest.skip(f"cannot start a dask LocalCluster here: {out['skip']}")
    return out


def _check(out):
    # the data are larger than everything the driver could allocate beyond what it
    # had mapped when the fits began ...
    assert out["data_bytes"] > 2 * out["limit_over_mapped"]
    # ... so gathering them fails under the cap, while the fits succeeded
    assert out["control"] == "MemoryError"
    assert len(out["dpgd_coef"][0]) == len(out["napp_coef"])
    # the driver's resident memory grew by far less than the data
    assert out["driver_peak_increase"] < out["data_bytes"] / 4


def test_driver_memory_does_not_grow_with_rows():
    """DP-GD (two steps) and the squared-loss NAPP (one Gram pass) on 6e5 x 100
    float64 rows (480 MB), the driver capped at 192 MB over what it maps."""
    _check(_run_child(600_000, 100, 60_000))


@pytest.mark.slow
def test_driver_memory_does_not_grow_with_rows_large():
    """The same with objective perturbation too, on 4e6 x 100 (3.2 GB)."""
    _check(_run_child(4_000_000, 100, 200_000, slow=True))
