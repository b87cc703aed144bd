"""The child processes of the dask driver-memory and fault tests: the source they share
(a ``LocalCluster`` of worker processes, rows generated block by block on its workers,
the driver's cap and measures), and how the test runs one."""

import json
import subprocess
import sys
import textwrap

import pytest

PRELUDE = textwrap.dedent('''
    import json, os, resource, signal, sys, warnings
    import numpy as np
    import dask
    import dask.array as da
    from dask.distributed import Client, LocalCluster


    def vm_size():
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) * 1024 for line in status
                        if line.startswith("VmSize:"))


    def peak():
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


    def start_cluster(n_workers=1):
        """A LocalCluster of one-thread worker processes and its client; where none can
        start, a skip printed for the test."""
        try:
            cluster = LocalCluster(n_workers=n_workers, threads_per_worker=1,
                                   processes=True, dashboard_address=None, memory_limit=0)
            return cluster, Client(cluster)
        except Exception as exc:   # e.g. no sockets or no processes in a sandbox
            print(json.dumps({"skip": repr(exc)}))
            sys.exit(0)


    def lazy_data(n_rows, n_features, chunk, scale, label_weight, n_persons):
        """Rows, labels, targets and persons as dask arrays generated on the workers,
        block ``i`` from seed ``i`` (recomputed alike in every pass, anywhere); the label
        is ``x_0 + label_weight x_1 > 0``, row ``j``'s person ``j mod n_persons``."""
        blocks = ((chunk,) * (n_rows // chunk), (n_features,))

        def rows(block_info=None):
            i = block_info[None]["chunk-location"][0]
            return np.random.default_rng(i).standard_normal((chunk, n_features)) / scale

        def labels(block_info=None):
            block = rows({None: block_info[None]})
            return (block[:, 0] + label_weight * block[:, 1] > 0).astype(int)

        def targets(block_info=None):
            block = rows({None: block_info[None]})
            return 30.0 * block[:, 0] - 10.0 * block[:, 2]

        def persons(block_info=None):
            start = block_info[None]["array-location"][0][0]
            return (start + np.arange(chunk)) % n_persons

        return (da.map_blocks(rows, chunks=blocks, dtype=float),
                da.map_blocks(labels, chunks=blocks[:1], dtype=int),
                da.map_blocks(targets, chunks=blocks[:1], dtype=float),
                da.map_blocks(persons, chunks=blocks[:1], dtype=int))


    def cap_driver(headroom):
        """Cap this process's address space at what it maps plus ``headroom`` bytes (the
        workers run in processes of their own: only the driver is capped) and return its
        peak resident memory before the fits."""
        limit = vm_size() + headroom
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        return peak()


    def finish(out, X, before, client, cluster):
        """Record the driver's peak growth since ``before`` and the control (allocating
        the data's size under the cap), close the cluster and print ``out``."""
        out["driver_peak_increase"] = peak() - before
        try:
            np.ones(X.shape)
            out["control"] = "allocated"
        except MemoryError:
            out["control"] = "MemoryError"
        client.close()
        cluster.close()
        print(json.dumps(out))
''')


def run_child(body, *args, timeout, one_arena=True):
    """Run :data:`PRELUDE` and ``body`` in a child Python with one BLAS thread (and one
    malloc arena with ``one_arena``, so that every allocation maps new pages), with
    ``args`` on its command line; return its last line of output, or skip the test
    where it could start no cluster."""
    env = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "PATH": "/usr/bin:/bin", **({"MALLOC_ARENA_MAX": "1"} if one_arena else {})}
    result = subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(body),
                             *map(str, args)],
                            capture_output=True, text=True, timeout=timeout, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    if "skip" in out:
        pytest.skip(f"cannot start a dask LocalCluster here: {out['skip']}")
    return out


def check_driver_memory(out):
    """The data are larger than everything the driver could allocate beyond what it had
    mapped when the fits began, so gathering them fails under the cap while the fits
    succeeded; and the driver's resident memory grew by far less than the data."""
    assert out["data_bytes"] > 2 * out["limit_over_mapped"]
    assert out["control"] == "MemoryError"
    assert out["driver_peak_increase"] < out["data_bytes"] / 4
