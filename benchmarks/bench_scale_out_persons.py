"""One person-level private fit on a visit table no process holds (dask, zarr, LocalCluster).

Run from the repository root::

    python -m benchmarks.bench_scale_out_persons [--quick] [--rows N]

The setting of :mod:`benchmarks.bench_scale_out` (its store writing, peak memory and
pass counting are reused), with persons: a visit table of ``rows`` rows of
``features`` float64 columns whose rows belong to persons of 1 to 20 rows by a public
rule (:func:`person_of_rows`: every run of 210 rows holds 20 persons, of 1, 2, ..., 20
rows in a fixed order; the row chunks cut persons, so persons span partitions). The
rows, labels and person labels are generated block by block on the workers and
written to zarr (deleted at the end). Fitted from the store, on a ``LocalCluster`` of
one-thread workers with the stated ``memory_limit``:

* ``person``: ``fit(X, y, groups=persons)``, the unit of privacy one person with all
  of their rows (``DPSGDClassifier`` samples persons and clips each person's summed
  gradient: each partition sums its sampled persons' clipped row gradients by person,
  the persons spread over partitions added by person on the workers, ``X`` read in
  place; ``ObjPertLogisticRegression`` weights each row ``min(1, M / k)``, ``M = 1``,
  by a person-keyed reduction);
* ``row``: the same estimator without groups on the same dask array (one row the unit);
* ``person, in memory``: the person-level fit on the first ``subsample_rows`` rows
  (whole persons) held in the driver's memory, the reference a user without dask has.

Recorded per fit: wall-clock time, the reductions over the partitions (passes), the
driver's and every worker's peak resident set, and the accuracy on rows generated
apart. The results are written after every fit (``"finished": false`` until the last),
so a long run that is stopped keeps the fits it finished.
"""

import time

import numpy as np

from . import _common
from .bench_scale_out import (STORE, PeakMemory, _counted_passes, cluster_with_store,
                              read_store, scale_out_arguments, scale_out_config,
                              scale_out_versions, test_rows)


FULL = dict(rows=10_000_000, features=100, chunk_rows=250_000, workers=2,
            memory_limit_gib=2.5, subsample_rows=199_920, test_rows=200_000,
            dpsgd=dict(sample_rate=0.1, epochs=0.5))
QUICK = dict(rows=100_000, features=20, chunk_rows=12_500, workers=2, memory_limit_gib=1.0,
             subsample_rows=20_160, test_rows=5_000, dpsgd=dict(sample_rate=0.1, epochs=0.3))
EPSILON, DELTA = 1.0, 1e-6
LARGEST_PERSON = 20
_CYCLE = LARGEST_PERSON * (LARGEST_PERSON + 1) // 2          # 210 rows, 20 persons
# the persons of one cycle, in a fixed order of sizes: 7, 1, 14, ...: a public rule
_SIZES = np.random.default_rng(20261202).permutation(np.arange(1, LARGEST_PERSON + 1))
_PERSON_IN_CYCLE = np.repeat(np.arange(LARGEST_PERSON), _SIZES)


def person_of_rows(start, stop):
    """The person of rows ``start .. stop - 1``: row ``i`` belongs to person ``20 (i //
    210) + j`` for the ``j`` of ``i % 210`` (persons of 1 to 20 rows). Reads no data."""
    rows = np.arange(start, stop)
    return LARGEST_PERSON * (rows // _CYCLE) + _PERSON_IN_CYCLE[rows % _CYCLE]


def _block_persons(block_info=None):
    location = block_info[None]["array-location"][0]
    return person_of_rows(*location)


def write_persons(config, path):
    """Write each row's person to ``path / "groups.zarr"`` (with the row chunks)."""
    import dask.array as da

    n, c = config["rows"], config["chunk_rows"]
    chunks = ((c,) * (n // c) + ((n % c,) if n % c else ()),)
    groups = da.map_blocks(_block_persons, chunks=chunks, dtype=np.int64)
    da.to_zarr(groups, str(path / "groups.zarr"), compressors=None)


def estimators(config):
    from skdp import DPSGDClassifier, ObjPertLogisticRegression

    return {
        "DPSGDClassifier": lambda: DPSGDClassifier(epsilon=EPSILON, delta=DELTA,
                                                   random_state=0, **config["dpsgd"]),
        "ObjPertLogisticRegression": lambda: ObjPertLogisticRegression(epsilon=EPSILON,
                                                                       random_state=0),
    }


def _timed_fit(client, model, X, y, groups):
    """Fit (groups when given), recording seconds, passes and memory peaks."""
    counter, restore = _counted_passes()
    try:
        with PeakMemory(client) as memory:
            start = time.perf_counter()
            model.fit(X, y, **({} if groups is None else {"groups": groups}))
            seconds = time.perf_counter() - start
    finally:
        restore()
    return {"time_s": seconds, "passes": counter["passes"], **memory.record()}


def _subsample(config, X, y, groups):
    """The first ``subsample_rows`` rows (whole persons), in the driver's memory."""
    import dask

    m = config["subsample_rows"]
    return dask.compute(X[:m], y[:m], groups[:m])


def run_fits(client, config, X, y, groups, X_test, y_test, checkpoint=lambda fits: None):
    """Every estimator on every route; ``checkpoint(results)`` after each fit."""
    X_sub, y_sub, groups_sub = _subsample(config, X, y, groups)
    results = {}
    for name, make in estimators(config).items():
        results[name] = {}
        for route, (rows, labels, persons) in {
                "person": (X, y, groups), "row": (X, y, None),
                "person, in memory": (X_sub, y_sub, groups_sub)}.items():
            model = make()
            try:
                record = _timed_fit(client, model, rows, labels, persons)
            except Exception as exc:  # noqa: BLE001 - a fit failing is a result
                results[name][route] = {"error": f"{type(exc).__name__}: {exc}"}
                print(f"[scale_out_persons] {name}, {route}: failed: {exc}", flush=True)
                checkpoint(results)
                continue
            record["test_accuracy"] = float(np.mean(model.predict(X_test) == y_test))
            record["epsilon_spent"] = float(model.epsilon_spent_)
            record["neighboring"] = model.neighboring_
            results[name][route] = record
            print(f"[scale_out_persons] {name}, {route}: {record['time_s']:.1f} s, "
                  f"{record['passes']} passes, accuracy {record['test_accuracy']:.4f}",
                  flush=True)
            checkpoint(results)
    return results


def plot(payload, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    names = list(payload["fits"])
    routes = ["person", "row", "person, in memory"]
    width = 0.8 / len(routes)
    for i, route in enumerate(routes):
        times = [payload["fits"][n].get(route, {}).get("time_s", np.nan) for n in names]
        left.bar(np.arange(len(names)) + i * width, times, width, label=route)
        peaks = [max(payload["fits"][n].get(route, {}).get("worker_peak_mb", [np.nan]))
                 for n in names]
        right.bar(np.arange(len(names)) + i * width, peaks, width, label=route)
    for ax, label in ((left, "seconds"), (right, "largest worker peak, MB")):
        ax.set_xticks(np.arange(len(names)) + 0.4 - width / 2)
        ax.set_xticklabels(names, fontsize=8)
        ax.set_ylabel(label)
        ax.legend(fontsize=7)
    right.axhline(payload["params"]["memory_limit_gib"] * 1024, color="k", ls="--")
    right.set_title(f"data: {payload['data_gb']:.1f} GB, "
                    f"{payload['params']['workers']} workers", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _payload(config, write_s, disk_bytes, fits, finished):
    n_persons = int(person_of_rows(config["rows"] - 1, config["rows"])[0]) + 1
    return {
        "params": {**config, "epsilon": EPSILON, "delta": DELTA, "seeds": [0],
                   "neighboring": "add_remove_person (person routes), add_remove (row)",
                   "persons": n_persons, "largest_person": LARGEST_PERSON,
                   "store": "zarr, uncompressed, on local disk",
                   "scale_out_versions": scale_out_versions()},
        "data_gb": config["rows"] * config["features"] * 8 / 1e9,
        "store_write_s": write_s, "store_bytes": disk_bytes, "fits": fits,
        "finished": finished,
    }


def main(argv=None):
    args = scale_out_arguments(__doc__, "100,000 rows", argv)
    config = scale_out_config(args, FULL, QUICK)
    store = STORE / ("persons_quick" if args.quick else "persons_full")
    stem = "scale_out_persons" + ("_quick" if args.quick else "")
    with cluster_with_store(config, store, "scale_out_persons") as (client, write_s,
                                                                     disk_bytes):
        import dask.array as da

        def checkpoint(fits):
            _common.write_results(stem, _payload(config, write_s, disk_bytes, fits, False))

        write_persons(config, store)
        X, y = read_store(store)
        groups = da.from_zarr(str(store / "groups.zarr"))
        X_test, y_test = test_rows(config)
        fits = run_fits(client, config, X, y, groups, X_test, y_test, checkpoint)
    payload = _payload(config, write_s, disk_bytes, fits, True)
    path = _common.write_results(stem, payload)
    plot(payload, path.with_suffix(".png"))
    print("[scale_out_persons] wrote", path, flush=True)
    return payload


if __name__ == "__main__":
    main()
