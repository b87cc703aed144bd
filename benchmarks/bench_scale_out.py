"""One private fit on rows no process holds: a dask array read from zarr on a LocalCluster.

Run from the repository root::

    python -m benchmarks.bench_scale_out [--quick] [--rows N]

The rows (float64, ``n_features`` columns, scaled to norm about 1, labels from a noisy
linear model) are generated block by block on the workers and written to a zarr store
under ``/tmp`` (deleted at the end): they never exist whole in any process. A
``LocalCluster`` of ``n_workers`` worker processes of one thread each, every one with
the stated ``memory_limit`` (well below the data's size), then fits from the store,
every pass reading every block from disk (or the page cache) again:
``DPSGDClassifier`` (Poisson-sampled, a few steps: each step is a pass),
``ObjPertLogisticRegression`` (certified Newton, one pass per iterate),
``NAPPLasso`` (squared loss on the labels as +-1: one Gram pass) and, as the reference
a user would otherwise pick, dask-ml's non-private ``LogisticRegression`` (L-BFGS).
Recorded per fit: wall-clock time, the driver's and every worker's peak resident set
(``VmHWM``, reset through ``/proc/self/clear_refs`` before the fit) and the test
accuracy on rows generated apart. Per-pass times (a Newton pass: loss, gradient and
Hessian; a DP-GD pass: the clipped gradient sum) are measured on ``memory_rows`` rows
in three places: numpy on rows in the driver's memory, dask on the same rows persisted
on the workers, and dask reading them from zarr; and on all the rows from zarr.
"""

import argparse
import contextlib
import os
import shutil
import time
from pathlib import Path

import numpy as np

from . import _common

STORE = Path(os.environ.get("SKDP_BENCH_SCALE_OUT_DATA", "/tmp/skdp_bench_scale_out"))

FULL = dict(rows=10_000_000, features=100, chunk_rows=250_000, workers=2,
            memory_limit_gib=2.5, memory_rows=1_000_000, test_rows=200_000,
            dpsgd=dict(sample_rate=0.1, epochs=0.5), dask_ml_max_iter=10)
QUICK = dict(rows=40_000, features=20, chunk_rows=5_000, workers=2, memory_limit_gib=1.0,
             memory_rows=10_000, test_rows=5_000, dpsgd=dict(sample_rate=0.1, epochs=0.3),
             dask_ml_max_iter=5)
EPSILON, DELTA = 1.0, 1e-6
_WEIGHT_SEED = 12345


# -- data: one seed per block, generated where it is written ---------------------------------

def _weights(n_features):
    return np.random.default_rng(_WEIGHT_SEED).standard_normal(n_features)


def block_scores(seed, rows, n_features):
    """Rows of norm about 1 (about half a percent beyond it: clipped) and their scores
    from a noisy linear model (a continuous target, ``bench_scale_out_ssp.py``)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((rows, n_features)) / np.sqrt(n_features)
    return X, X @ _weights(n_features) + 0.5 * rng.standard_normal(rows)


def _block(seed, rows, n_features):
    """The rows of :func:`block_scores` and their 0/1 labels (a positive score)."""
    X, score = block_scores(seed, rows, n_features)
    return X, (score > 0).astype(np.int8)


def _block_rows(block_info=None, n_features=None):
    location, shape = block_info[None]["chunk-location"][0], block_info[None]["chunk-shape"]
    return _block(location, shape[0], n_features)[0]


def _block_labels(block_info=None, n_features=None):
    location, shape = block_info[None]["chunk-location"][0], block_info[None]["chunk-shape"]
    return _block(location, shape[0], n_features)[1]


def write_store(config, path):
    """Generate the rows on the workers and write them to ``path`` (zarr, uncompressed);
    return the seconds and the bytes on disk."""
    import dask.array as da

    n, d, c = config["rows"], config["features"], config["chunk_rows"]
    chunks = ((c,) * (n // c) + ((n % c,) if n % c else ()),)
    X = da.map_blocks(_block_rows, n_features=d, chunks=(chunks[0], (d,)), dtype=np.float64)
    y = da.map_blocks(_block_labels, n_features=d, chunks=chunks, dtype=np.int8)
    shutil.rmtree(path, ignore_errors=True)
    start = time.perf_counter()
    da.to_zarr(X, str(path / "X.zarr"), compressors=None)
    da.to_zarr(y, str(path / "y.zarr"), compressors=None)
    seconds = time.perf_counter() - start
    size = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    return seconds, size


def read_store(path):
    import dask.array as da

    return da.from_zarr(str(path / "X.zarr")), da.from_zarr(str(path / "y.zarr"))


def test_rows(config):
    """Rows generated apart from the training rows (other seeds), in memory."""
    X, y = _block(10**9, config["test_rows"], config["features"])
    return X, y


# -- memory: peaks of the driver and of every worker --------------------------------------

def _reset_peak():
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")


def _status(field):
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return None


def _peak():
    return _status("VmHWM")


class PeakMemory:
    """Peak resident sets over a block of work: the driver's and each worker's."""

    def __init__(self, client):
        self.client = client

    def __enter__(self):
        _reset_peak()
        self.client.run(_reset_peak)
        self.driver_start = _status("VmRSS")
        return self

    def __exit__(self, *exc):
        self.driver_peak = _peak()
        self.worker_peaks = sorted(self.client.run(_peak).values())
        return False

    def record(self):
        return {"driver_peak_mb": self.driver_peak / 2**20,
                "driver_growth_mb": (self.driver_peak - self.driver_start) / 2**20,
                "worker_peak_mb": [p / 2**20 for p in self.worker_peaks]}


# -- the fits --------------------------------------------------------------------------------

def _counted_passes():
    """Count the reductions over partitions, by rows or by person (each reads every
    block once)."""
    from skdp.solvers._partitioned import PartitionedDesign

    counter = {"passes": 0}
    methods = {name: getattr(PartitionedDesign, name)
               for name in ("partials", "reduce_by_person")}

    def counting(method):
        def counted(self, *args, **kwargs):
            counter["passes"] += 1
            return method(self, *args, **kwargs)
        return counted

    for name, method in methods.items():
        setattr(PartitionedDesign, name, counting(method))

    def restore():
        for name, method in methods.items():
            setattr(PartitionedDesign, name, method)

    return counter, restore


def private_fits(config):
    from skdp import DPSGDClassifier, NAPPLasso, ObjPertLogisticRegression

    return {
        "DPSGDClassifier": DPSGDClassifier(epsilon=EPSILON, delta=DELTA, random_state=0,
                                           **config["dpsgd"]),
        "ObjPertLogisticRegression": ObjPertLogisticRegression(epsilon=EPSILON,
                                                               random_state=0),
        "NAPPLasso": NAPPLasso(alpha=1.0, epsilon=EPSILON, y_bound=1.0, coef_bound=10.0,
                               random_state=0),
    }


def _score(name, model, X_test, y_test):
    if name == "NAPPLasso":   # the labels as +-1: the sign of the prediction
        return float(np.mean((model.predict(X_test) > 0) == (y_test == 1)))
    return float(np.mean(model.predict(X_test) == y_test))


def run_fits(client, config, X, y, X_test, y_test):
    results = {}
    for name, estimator in private_fits(config).items():
        target = (2.0 * y - 1.0) if name == "NAPPLasso" else y
        counter, restore = _counted_passes()
        try:
            with PeakMemory(client) as memory:
                start = time.perf_counter()
                estimator.fit(X, target)
                seconds = time.perf_counter() - start
        finally:
            restore()
        passes = counter["passes"] + 2      # and the input check, and the clipping pass
        results[name] = {"time_s": seconds, "passes": passes,
                         "time_per_pass_s": seconds / passes,
                         "test_accuracy": _score(name, estimator, X_test, y_test),
                         "epsilon_spent": estimator.epsilon_spent_, **memory.record()}
        if name == "DPSGDClassifier":
            results[name]["n_steps"] = int(estimator.n_steps_)
        print(f"[scale_out] {name}: {seconds:.1f} s, {passes} passes", flush=True)
    results["dask-ml LogisticRegression"] = dask_ml_fit(client, config, X, y, X_test, y_test)
    return results


def dask_ml_fit(client, config, X, y, X_test, y_test):
    """dask-ml's non-private LogisticRegression (L-BFGS, C=1) on the same blocks."""
    try:
        from dask_ml.linear_model import LogisticRegression
    except ImportError as exc:
        return {"error": f"dask-ml is not installed ({exc})"}
    model = LogisticRegression(solver="lbfgs", C=1.0, max_iter=config["dask_ml_max_iter"])
    with PeakMemory(client) as memory:
        start = time.perf_counter()
        try:
            model.fit(X, y.astype(np.float64))
        except Exception as exc:  # noqa: BLE001 - the reference failing is a result
            return {"error": f"{type(exc).__name__}: {exc}"}
        seconds = time.perf_counter() - start
    return {"time_s": seconds, "max_iter": config["dask_ml_max_iter"],
            "test_accuracy": float(np.mean(np.asarray(model.predict(X_test)) == y_test)),
            **memory.record()}


# -- per-pass times --------------------------------------------------------------------------

def _kernels(d):
    """The two kinds of pass, as ``kind -> (kernel, args at the point theta)``."""
    from skdp.linear_model._dpsgd import _MarginColumns, _partition_clipped_sum
    from skdp.losses import make_loss
    from skdp.solvers._partitioned import _glm_pass

    loss = make_loss("logistic")
    return {"Newton pass (loss, gradient, Hessian)": (
                _glm_pass, lambda theta: (theta, loss, True)),
            "DP-GD pass (clipped gradient sum)": (
                _partition_clipped_sum, lambda theta: (theta[None, :], _MarginColumns(loss),
                                                       1.0))}


def _pass_seconds(design, kernel, args, d, repeats):
    """Best time of ``repeats`` passes, each at another point (a pass at a point already
    computed could be answered from the cluster's memory)."""
    best = np.inf
    for r in range(repeats):
        theta = np.full(d + 1, 0.01 + 1e-6 * r)
        start = time.perf_counter()
        design.reduce(kernel, *args(theta))
        best = min(best, time.perf_counter() - start)
    return best


def pass_times(client, config, X, y):
    """Seconds per pass, per place the rows live (``memory_rows`` rows, and all).

    The persisted copy is made from the rows in memory (keys of its own), so that no
    other place's pass is answered from it."""
    import dask
    import dask.array as da

    from skdp.solvers._partitioned import (InMemoryReductions, PartitionedDesign,
                                           binary_targets, block_design)

    m, d, c = config["memory_rows"], config["features"], config["chunk_rows"]
    classes = np.array([0, 1])
    X_mem, y_mem = dask.compute(X[:m], y[:m])
    X_held, y_held = dask.persist(da.from_array(X_mem, chunks=(c, d)),
                                  da.from_array(y_mem, chunks=c))
    places = {
        "numpy, rows in the driver's memory": InMemoryReductions(
            block_design(X_mem, 1.0, 1.0), binary_targets(y_mem, classes)),
        "dask, rows persisted on the workers": PartitionedDesign(X_held, y_held, classes,
                                                                 1.0, 1.0),
        "dask, rows read from zarr": PartitionedDesign(X[:m], y[:m], classes, 1.0, 1.0),
        "dask, all rows read from zarr": PartitionedDesign(X, y, classes, 1.0, 1.0),
    }
    times = {}
    for place, design in places.items():
        if getattr(design, "partitioned", False):
            design._prepare()
        rows = design.shape[0]
        repeats = 1 if rows > 2 * m else 3
        times[place] = {"rows": rows, **{
            name: _pass_seconds(design, kernel, args, d, repeats)
            for name, (kernel, args) in _kernels(d).items()}}
        print(f"[scale_out] passes, {place}: {times[place]}", flush=True)
    del places, X_mem, X_held
    return times


# -- the run ---------------------------------------------------------------------------------

def plot(payload, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    places = payload["pass_times"]
    kinds = [k for k in next(iter(places.values())) if k != "rows"]
    width = 0.8 / len(kinds)
    for i, kind in enumerate(kinds):
        values = [1e6 * row[kind] / row["rows"] for row in places.values()]
        left.bar(np.arange(len(places)) + i * width, values, width, label=kind)
    left.set_xticks(np.arange(len(places)) + 0.4 - width / 2)
    left.set_xticklabels([p.replace(", ", ",\n") for p in places], fontsize=7)
    left.set_ylabel("seconds per pass per 1e6 rows")
    left.legend(fontsize=7)
    fits = {k: v for k, v in payload["fits"].items() if "error" not in v}
    names = list(fits)
    right.bar(np.arange(len(names)) - 0.2, [fits[n]["driver_peak_mb"] for n in names], 0.4,
              label="driver peak")
    right.bar(np.arange(len(names)) + 0.2, [max(fits[n]["worker_peak_mb"]) for n in names],
              0.4, label="largest worker peak")
    right.axhline(payload["params"]["memory_limit_gib"] * 1024, color="k", ls="--",
                  label="worker memory limit")
    right.set_xticks(np.arange(len(names)))
    right.set_xticklabels([n.replace(" ", "\n", 1) for n in names], fontsize=7)
    right.set_ylabel("MB")
    right.set_title(f"data: {payload['data_gb']:.1f} GB", fontsize=9)
    right.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def scale_out_versions():
    """The versions of the scale-out stack (not in the common environment record)."""
    from importlib import metadata

    versions = {}
    for package in ("dask", "distributed", "dask-ml", "dask-glm", "zarr"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    return versions


def scale_out_arguments(doc, quick_help, argv, *extra):
    """A scale-out benchmark's command line (described by the first line of its
    ``doc``): ``--quick``, ``--rows`` and ``extra`` ``(flag, help)`` switches."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=quick_help)
    parser.add_argument("--rows", type=int, default=None, help="override the row count")
    for flag, text in extra:
        parser.add_argument(flag, action="store_true", help=text)
    return parser.parse_args(argv)


def scale_out_config(args, full=None, quick=None):
    """The run's setting: ``quick`` or ``full`` (this module's by default), its rows
    overridden by ``--rows``."""
    config = dict((quick or QUICK) if args.quick else (full or FULL))
    if args.rows:
        config["rows"] = args.rows
    return config


@contextlib.contextmanager
def cluster_with_store(config, store, label):
    """A LocalCluster of one-thread worker processes (their BLAS one thread too) with
    the rows written to ``store``; yields ``(client, write seconds, bytes on disk)``,
    then closes the cluster and deletes the store."""
    from dask.distributed import Client, LocalCluster

    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = "1"    # the workers' BLAS: one thread per worker process
    cluster = LocalCluster(n_workers=config["workers"], threads_per_worker=1,
                           processes=True, memory_limit=config["memory_limit_gib"] * 2**30,
                           dashboard_address=None)
    client = Client(cluster)
    try:
        write_s, disk_bytes = write_store(config, store)
        print(f"[{label}] wrote {disk_bytes / 1e9:.2f} GB in {write_s:.0f} s", flush=True)
        yield client, write_s, disk_bytes
    finally:
        client.close()
        cluster.close()
        shutil.rmtree(store, ignore_errors=True)


def main(argv=None):
    args = scale_out_arguments(__doc__, "a few thousand rows", argv)
    config = scale_out_config(args)
    store = STORE / ("quick" if args.quick else "full")
    with cluster_with_store(config, store, "scale_out") as (client, write_s, disk_bytes):
        X, y = read_store(store)
        X_test, y_test = test_rows(config)
        fits = run_fits(client, config, X, y, X_test, y_test)
        passes = pass_times(client, config, X, y)
    payload = {
        "params": {**config, "epsilon": EPSILON, "delta": DELTA, "seeds": [0],
                   "neighboring": "add_remove", "store": "zarr, uncompressed, on local disk",
                   "scale_out_versions": scale_out_versions()},
        "data_gb": config["rows"] * config["features"] * 8 / 1e9,
        "store_write_s": write_s, "store_bytes": disk_bytes,
        "fits": fits, "pass_times": passes,
    }
    stem = "scale_out" + ("_quick" if args.quick else "")
    path = _common.write_results(stem, payload)
    plot(payload, path.with_suffix(".png"))
    print("[scale_out] wrote", path, flush=True)
    return payload


if __name__ == "__main__":
    main()
