"""Person-level privacy on a visit-style table: the person, not the row, as the unit.

No offline clinical table exists, so Adult's training rows are grouped into persons of
1 to 20 rows by a public rule that never reads the data: a fixed-seed permutation of
the row indices, cut into consecutive runs whose lengths are drawn uniformly from 1 to
20 by the same fixed-seed generator. Each estimator is fitted at epsilon 1 (DP-SGD at
delta 1e-5) in three ways, and scored by test accuracy over seeds:

* ``person``: ``fit(X, y, groups=persons)``, the guarantee covers one person with all
  their rows (``max_rows_per_group`` at its default 1: each person's loss is the mean
  over their rows; DP-SGD clips each person's summed gradient);
* ``row``: the row-level fit at epsilon 1, which protects one person of ``k`` rows only
  at ``k`` epsilon (group privacy): up to 20 here, not the person-level claim;
* ``group privacy``: the row-level fit at ``epsilon / 20`` (and, for DP-SGD, delta
  ``delta / (20 e^{19 epsilon / 20})``), which group privacy turns into a person-level
  (epsilon, delta) for persons of at most 20 rows: the route available without
  ``groups``, whose bound on the largest person must be known and public.

Run ``python -m benchmarks.bench_person_level [--quick] [--n-jobs N]``.
"""

import argparse
import warnings

import numpy as np

from skdp import DPSGDClassifier, NAPPLassoClassifier, ObjPertLogisticRegression, OutputPertSVM
from skdp.datasets import load_adult

from ._common import N_JOBS_HELP, map_seeds, summarise, write_results

NAME = "person_level"
EPSILON, DELTA, LARGEST_PERSON = 1.0, 1e-5, 20
PUBLIC_SEED = 20261127
ESTIMATORS = {
    "ObjPertLogisticRegression": lambda **kw: ObjPertLogisticRegression(data_norm=1.0, **kw),
    "OutputPertSVM": lambda **kw: OutputPertSVM(data_norm=1.0, **kw),
    "NAPPLassoClassifier": lambda **kw: NAPPLassoClassifier(data_norm=1.0, **kw),
    "DPSGDClassifier": lambda **kw: DPSGDClassifier(data_norm=1.0, delta=DELTA, **kw),
}
ROUTES = ("person", "row", "group privacy")


def visit_persons(n_rows, largest=LARGEST_PERSON, seed=PUBLIC_SEED):
    """Each row's person: a fixed-seed permutation cut into runs of 1 to ``largest``
    rows (lengths uniform, from the same generator). Reads only ``n_rows``."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, largest + 1, size=n_rows)
    starts = np.cumsum(lengths)
    person_of_position = np.searchsorted(starts, np.arange(n_rows), side="right")
    persons = np.empty(n_rows, dtype=np.intp)
    persons[rng.permutation(n_rows)] = person_of_position
    return persons


def _group_privacy_delta(epsilon, delta, k):
    """The row-level delta whose ``k``-fold group privacy is ``delta`` at person-level
    ``epsilon`` (row level ``epsilon / k``): ``delta / (k e^{(k - 1) epsilon / k})``."""
    return delta / (k * np.exp((k - 1) * epsilon / k))


def _fit_score(seed, name, route, data):
    X, y, persons, X_test, y_test = data
    kwargs, fit_params = {"random_state": seed}, {}
    if route == "person":
        kwargs["epsilon"], fit_params["groups"] = EPSILON, persons
    elif route == "row":
        kwargs["epsilon"] = EPSILON
    else:
        kwargs["epsilon"] = EPSILON / LARGEST_PERSON
    model = ESTIMATORS[name](**kwargs)
    if route == "group privacy" and name == "DPSGDClassifier":
        model.set_params(delta=_group_privacy_delta(EPSILON, DELTA, LARGEST_PERSON))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, y, **fit_params)
    return float(model.score(X_test, y_test)), model.neighboring_


def run(seeds, n_jobs=1):
    bunch = load_adult()
    X, y, X_test, y_test = bunch.X_train, bunch.y_train, bunch.X_test, bunch.y_test
    persons = visit_persons(len(y))
    sizes = np.bincount(persons)
    data = (X, y, persons, X_test, y_test)
    results = {}
    for name in ESTIMATORS:
        results[name] = {}
        for route in ROUTES:
            runs = map_seeds(_fit_score, seeds, n_jobs, name=name, route=route, data=data)
            results[name][route] = {"accuracy": summarise([r[0] for r in runs]),
                                    "neighboring": runs[0][1]}
            print(name, route, results[name][route], flush=True)
    majority = float(max(np.mean(y_test == c) for c in np.unique(y_test)))
    return {"persons": int(len(sizes)), "rows": int(len(y)),
            "person_sizes": {"min": int(sizes.min()), "max": int(sizes.max()),
                             "mean": float(sizes.mean())},
            "majority_rate": majority, "results": results}


def plot(payload, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(payload["results"])
    fig, ax = plt.subplots(figsize=(8, 3.5))
    width = 0.8 / len(ROUTES)
    for i, route in enumerate(ROUTES):
        means = [payload["results"][n][route]["accuracy"]["mean"] for n in names]
        sems = [payload["results"][n][route]["accuracy"]["sem"] for n in names]
        ax.bar(np.arange(len(names)) + (i - 1) * width, means, width, yerr=sems, label=route)
    ax.axhline(payload["majority_rate"], color="k", ls="--", lw=1, label="majority class")
    ax.set_xticks(range(len(names)), names, fontsize=8)
    ax.set_ylim(0.6, 0.9)
    ax.set_ylabel("test accuracy")
    ax.set_title(f"Adult as a visit table, epsilon {payload['params']['epsilon']:g}")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--n-jobs", type=int, default=1, help=N_JOBS_HELP)
    args = parser.parse_args(argv)
    seeds = list(range(2 if args.quick else 10))
    payload = {"params": {"epsilon": EPSILON, "delta": DELTA, "largest_person": LARGEST_PERSON,
                          "public_seed": PUBLIC_SEED, "seeds": seeds},
               **run(seeds, args.n_jobs)}
    path = write_results(NAME + ("_quick" if args.quick else ""), payload)
    plot(payload, path.with_suffix(".png"))


if __name__ == "__main__":
    main()
