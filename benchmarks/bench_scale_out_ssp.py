"""SSPLinearRegression on rows no process holds: the zarr store of the scale-out benchmark
with a continuous target, on its LocalCluster.

Run from the repository root::

    python -m benchmarks.bench_scale_out_ssp [--quick] [--rows N]

The rows of ``bench_scale_out.py`` (its generator, cluster and store; 1e7 x 100 in full)
with their linear score as the target (``X w + 0.5 e``, the classifier's labels before
the threshold), written beside them by the workers and deleted at the end. Timed
interleaved, ``repeats`` rounds of: one read of the data (every block of ``X`` and
``y`` read from the store and summed), the non-private statistics a user would compute
with dask (``X^T X`` and ``X^T y``, one pass) and ``SSPLinearRegression.fit`` on the
dask arrays; medians reported. Recorded once: the fit's reads of the data (the tasks
that read a block of ``X`` from the store, over the number of blocks), the driver's and
every worker's peak resident set, R^2 on rows generated apart against the same fit in
memory on the first ``memory_rows`` rows and against least squares on those rows, that
the dask fit on those rows is the in-memory one (same ``random_state``), and a
person-level fit (persons of ``person_rows`` rows by a public rule, each spread over
partitions).
"""

import json
import os
import time

import numpy as np

from . import _common
from .bench_scale_out import (STORE, PeakMemory, block_scores, cluster_with_store,
                              read_store, scale_out_arguments, scale_out_config,
                              scale_out_versions)

EPSILON, DELTA, DATA_NORM, Y_BOUND = 1.0, 1e-6, 1.0, 4.0
REPEATS = {"full": 3, "quick": 2}
PERSON_ROWS = 5


def _block_score(block_info=None, n_features=None):
    location, shape = block_info[None]["chunk-location"][0], block_info[None]["chunk-shape"]
    return block_scores(location, shape[0], n_features)[1]


def write_scores(config, path):
    """The rows' scores (the target), generated and written by the workers."""
    import dask.array as da

    X, _ = read_store(path)
    score = da.map_blocks(_block_score, n_features=config["features"],
                          chunks=(X.chunks[0],), dtype=np.float64)
    da.to_zarr(score, str(path / "score.zarr"), compressors=None)
    return da.from_zarr(str(path / "score.zarr"))


def _estimator(**params):
    from skdp import SSPLinearRegression

    return SSPLinearRegression(epsilon=EPSILON, delta=DELTA, data_norm=DATA_NORM,
                               y_bound=Y_BOUND, random_state=0, **params)


def _r2(y, prediction):
    return float(1.0 - np.mean((y - prediction) ** 2) / np.var(y))


def _seconds(work):
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def _read_pass(X, y):
    import dask

    dask.compute(X.sum(axis=0), y.sum())


def _gram_pass(X, y):
    import dask

    dask.compute(X.T @ X, X.T @ y, X.sum(axis=0))


def interleaved_times(X, y, repeats):
    """Seconds of a read pass, a Gram pass and the SSP fit, ``repeats`` rounds in turn."""
    times = {"read pass": [], "dask X^T X, X^T y (non-private)": [],
             "SSPLinearRegression.fit": []}
    for _ in range(repeats):
        times["read pass"].append(_seconds(lambda: _read_pass(X, y)))
        times["dask X^T X, X^T y (non-private)"].append(_seconds(lambda: _gram_pass(X, y)))
        times["SSPLinearRegression.fit"].append(_seconds(lambda: _estimator().fit(X, y)))
        print(f"[scale_out_ssp] round: { {k: round(v[-1], 1) for k, v in times.items()} }",
              flush=True)
    return {name: {"median_s": float(np.median(v)), "runs_s": v} for name, v in times.items()}


def reads_of(client, X, work):
    """How many times ``work`` reads each block of ``X`` from the store: its tasks that
    read a block of ``X``, over the number of blocks."""
    from dask.distributed import get_task_stream

    with get_task_stream(client) as stream:
        work()
    block = f"('{X.name}', "      # a block's key, not the store's own task
    keys = [str(task["key"]) for task in stream.data]
    return sum(key.startswith(block) for key in keys) / X.npartitions


def measured_fit(client, X, y, X_test, y_test, **fit):
    """One fit with its reads of the data, memory peaks and test R^2."""
    model = _estimator()
    with PeakMemory(client) as memory:
        start = time.perf_counter()
        reads = reads_of(client, X, lambda: model.fit(X, y, **fit))
        seconds = time.perf_counter() - start
    return model, {"time_s": seconds, "reads_of_the_data": reads,
                   "test_r2": _r2(y_test, model.predict(X_test)),
                   "epsilon_spent": model.epsilon_spent_, "delta_spent": model.delta_spent_,
                   "neighboring": model.neighboring_, **memory.record()}


def persons(n_rows):
    """Persons of ``PERSON_ROWS`` rows by a public rule that spreads each person over
    partitions: row ``i`` belongs to person ``i mod (n / PERSON_ROWS)``."""
    import dask.array as da

    return da.arange(n_rows, chunks=n_rows) % (n_rows // PERSON_ROWS)


def subsample_comparison(X, y, X_test, y_test, rows):
    """On the first ``rows`` rows: the in-memory SSP fit, least squares, and the dask fit
    on the same rows (it must be the in-memory model)."""
    import dask
    from sklearn.linear_model import LinearRegression

    X_mem, y_mem = dask.compute(X[:rows], y[:rows])
    memory = _estimator().fit(X_mem, y_mem)
    ols = LinearRegression().fit(X_mem, y_mem)
    partitioned = _estimator().fit(X[:rows], y[:rows])
    gap = np.max(np.abs(partitioned.coef_ - memory.coef_)) / np.max(np.abs(memory.coef_))
    return {"rows": rows, "ssp_in_memory_test_r2": _r2(y_test, memory.predict(X_test)),
            "least_squares_test_r2": _r2(y_test, ols.predict(X_test)),
            "dask_equals_memory_max_relative_gap": float(gap)}


def plot(payload, path):
    """The interleaved times (each round's, and the medians) and the fits' peaks."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    times = payload["times"]
    for i, (name, t) in enumerate(times.items()):
        left.scatter([i] * len(t["runs_s"]), t["runs_s"], color="0.6", s=12)
        left.bar(i, t["median_s"], 0.6, alpha=0.7)
    left.set_xticks(range(len(times)))
    left.set_xticklabels([n.replace(" (", "\n(") for n in times], fontsize=7)
    left.set_ylabel("seconds (bars: medians; dots: rounds)")
    fits = {"rows": payload["fit"], "persons": payload["fit_persons"]}
    for i, (name, fit) in enumerate(fits.items()):
        right.bar(i - 0.2, fit["driver_peak_mb"], 0.4, color="C0",
                  label="driver peak" if i == 0 else None)
        right.bar(i + 0.2, max(fit["worker_peak_mb"]), 0.4, color="C1",
                  label="largest worker peak" if i == 0 else None)
    right.axhline(payload["params"]["memory_limit_gib"] * 1024, color="k", ls="--",
                  label="worker memory limit")
    right.set_xticks(range(len(fits)))
    right.set_xticklabels([f"SSP fit, {n}" for n in fits], fontsize=8)
    right.set_ylabel("MB")
    right.set_title(f"data: {payload['data_gb']:.1f} GB", fontsize=9)
    right.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    args = scale_out_arguments(__doc__, "a few thousand rows", argv,
                               ("--plot-only", "redraw the figure from the existing JSON"))
    stem = "scale_out_ssp" + ("_quick" if args.quick else "")
    if args.plot_only:
        path = _common.RESULTS_DIR / f"{stem}.json"
        plot(json.loads(path.read_text()), path.with_suffix(".png"))
        return None
    config = scale_out_config(args)
    repeats = REPEATS["quick" if args.quick else "full"]
    store = STORE / ("ssp_quick" if args.quick else "ssp")
    with cluster_with_store(config, store, "scale_out_ssp") as (client, write_s, disk_bytes):
        X, _ = read_store(store)
        y = write_scores(config, store)
        X_test, y_test = block_scores(10**9, config["test_rows"], config["features"])
        _, rows = measured_fit(client, X, y, X_test, y_test)
        print(f"[scale_out_ssp] rows: {rows}", flush=True)
        times = interleaved_times(X, y, repeats)
        _, by_person = measured_fit(client, X, y, X_test, y_test,
                                    groups=persons(config["rows"]))
        print(f"[scale_out_ssp] persons: {by_person}", flush=True)
        subsample = subsample_comparison(X, y, X_test, y_test, config["memory_rows"])
        print(f"[scale_out_ssp] subsample: {subsample}", flush=True)
    payload = {
        "params": {**config, "epsilon": EPSILON, "delta": DELTA, "data_norm": DATA_NORM,
                   "y_bound": Y_BOUND, "repeats": repeats, "person_rows": PERSON_ROWS,
                   "seeds": [0], "neighboring": "add_remove",
                   "store": "zarr, uncompressed, on local disk",
                   "scale_out_versions": scale_out_versions(),
                   "load_average": os.getloadavg()},
        "data_gb": config["rows"] * config["features"] * 8 / 1e9,
        "store_write_s": write_s, "store_bytes": disk_bytes,
        "fit": rows, "fit_persons": by_person, "times": times, "subsample": subsample,
    }
    path = _common.write_results(stem, payload)
    plot(payload, path.with_suffix(".png"))
    print("[scale_out_ssp] wrote", path, flush=True)
    return payload


if __name__ == "__main__":
    main()
