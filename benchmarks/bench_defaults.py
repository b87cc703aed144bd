"""Each estimator's defaults against the best setting of a grid, at epsilon 0.1, 1 and 5.

On Adult, KDDCup99 and MNIST (10 classes), each estimator is given only ``epsilon`` and a
``random_state``; everything else is its default: ``ObjPertLogisticRegression`` and
``OutputPertSVM`` are pure epsilon-DP (``C="auto"``), ``DPSGDClassifier`` is DP-SGD with
Poisson sampling at rate 0.1 for 10 epochs at ``delta=1e-5`` (``learning_rate="auto"``,
Renyi accounting). Against it, every setting of a grid
of the hyperparameter(s) that matter, at the same epsilon: ``C`` for the two
perturbation estimators, and for DP-GD / DP-SGD the number of epochs, the step size,
and two Poisson-subsampled recipes. The score is test accuracy, averaged over seeds;
the target is a default within one point of the grid's best mean (the best of many
noisy means is biased upwards, so the comparison is conservative).

Output perturbation's released model is ``theta* + noise`` with ``theta*`` the same for
every epsilon and seed: on the grid each ``theta*`` is computed once and the noise drawn
for each seed and epsilon (the same law as separate fits). Its default is scored the same
way, at the ``C_`` its rule resolved and with the grid's noise draws (common random
numbers: the gap is not swamped by a noise whose spread is several points on MNIST);
the real default fits are reported beside it as a check. The grid reads the training
rows without noise, outside any reported epsilon: it is the yardstick, not a way to
choose.

Run ``python -m benchmarks.bench_defaults [--quick] [--datasets ...] [--n-jobs N]
[--estimators ... [--defaults-only]]``. ``--defaults-only`` refits the defaults of the
given estimators and scores them against the grid already recorded (for a change of
defaults that leaves every grid setting as it was).
"""

import argparse
import dataclasses
import itertools
import json
import warnings

import numpy as np
from joblib import Parallel, delayed

from skdp import DPSGDClassifier, ObjPertLogisticRegression, OutputPertSVM
from skdp.datasets import load_adult, load_kddcup99, load_mnist
from skdp.exceptions import ConvergenceError
from skdp.mechanisms import draw_noise

from ._common import (N_JOBS_HELP, RESULTS_DIR, _to_builtin, environment, summarise,
                      write_results)

NAME = "defaults"
ESTIMATORS = {"ObjPertLogisticRegression": ObjPertLogisticRegression,
              "OutputPertSVM": OutputPertSVM, "DPSGDClassifier": DPSGDClassifier}
# half decades of C; output perturbation's optimum on MNIST one-vs-rest is near 1e-5
HALF_DECADES = [float(f"{c:.4g}") for c in np.logspace(-6, 1, 15)]
GRIDS = {
    "ObjPertLogisticRegression": [{"C": c} for c in HALF_DECADES[4:]],
    "OutputPertSVM": [{"C": c} for c in HALF_DECADES[:13]],
    "DPSGDClassifier": [
        *({"sample_rate": 1.0, "epochs": e, "learning_rate": lr}
          for e, lr in itertools.product((100, 300), (1.0, 4.0, 16.0))),
        {"sample_rate": 0.01, "epochs": 30, "learning_rate": 8.0, "alpha": 1e-4,
         "accountant": "pld"},
        {"sample_rate": 0.033, "epochs": 60, "learning_rate": 16.0, "accountant": "pld"},
    ],
}
LOADERS = {"adult": load_adult, "kddcup99": load_kddcup99, "mnist": load_mnist}
FULL = {"datasets": list(LOADERS), "epsilons": [0.1, 1.0, 5.0], "seeds": [0, 1, 2, 3],
        "seeds_mnist": [0, 1], "noise_seeds": 10, "grids": GRIDS}
QUICK = {"datasets": ["adult"], "epsilons": [1.0], "seeds": [0], "seeds_mnist": [0],
         "noise_seeds": 2, "grids": {"ObjPertLogisticRegression": [{"C": 0.1}],
                                     "OutputPertSVM": [{"C": 0.01}],
                                     "DPSGDClassifier": [{"epochs": 10}]}}


def _fit_score(estimator, epsilon, seed, params, data):
    """Test accuracy of one fit; nan when the solver does not certify its tolerance."""
    X_train, X_test, y_train, y_test = data
    model = ESTIMATORS[estimator](epsilon=epsilon, random_state=seed, **params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            model.fit(X_train, y_train)
        except ConvergenceError:
            return float("nan"), None
    resolved = {k: getattr(model, k) for k in ("C_", "learning_rate_") if hasattr(model, k)}
    return float(model.score(X_test, y_test)), resolved


def _output_perturbation_grid(params, epsilons, n_seeds, data):
    """Accuracies ``{epsilon: [per noise seed]}`` of one ``C``, one ``theta*`` for all."""
    X_train, X_test, y_train, y_test = data
    model = OutputPertSVM(epsilon=1.0, random_state=0, **params)
    solutions = model._releases(X_train, y_train)
    accuracies = {}
    for epsilon in epsilons:
        rng = np.random.default_rng(1000)
        scores = []
        for _ in range(n_seeds):
            thetas = [dataclasses.replace(s, draw=draw_noise(s.noise, s.theta_star.size, rng))
                      .released(epsilon) for s in solutions]
            model.coef_, model.intercept_ = model._coefficients(thetas)
            scores.append(float(model.score(X_test, y_test)))
        accuracies[epsilon] = scores
    return accuracies


def run_defaults(name, config, n_jobs, estimators, recorded):
    """Refit the defaults of ``estimators`` and score them against the recorded grid."""
    bunch = LOADERS[name]()
    data = (bunch.X_train, bunch.X_test, bunch.y_train, bunch.y_test)
    seeds = config["seeds_mnist" if name == "mnist" else "seeds"]
    fits = [(est, eps, seed) for est in estimators for eps in config["epsilons"]
            for seed in seeds]
    scores = Parallel(n_jobs=n_jobs)(delayed(_fit_score)(est, eps, seed, {}, data)
                                     for est, eps, seed in fits)
    for est in estimators:
        for eps in config["epsilons"]:
            row = recorded[est][str(eps)]
            default = [scores[i] for i, f in enumerate(fits) if f[:2] == (est, eps)]
            row["default"] = summarise([s for s, _ in default])
            row["resolved"] = default[0][1]
            row["gap_points"] = 100 * (row["best"]["test"]["mean"] - row["default"]["mean"])
            print(name, est, eps, row["resolved"], f"default {row['default']['mean']:.4f}",
                  f"gap {row['gap_points']:.2f}", flush=True)


def run_dataset(name, config, n_jobs, data_home=None, estimators=tuple(ESTIMATORS)):
    bunch = LOADERS[name](data_home=data_home)
    data = (bunch.X_train, bunch.X_test, bunch.y_train, bunch.y_test)
    seeds = config["seeds_mnist" if name == "mnist" else "seeds"]
    epsilons = config["epsilons"]
    fits = [(est, eps, seed, params) for est in estimators for eps in epsilons for seed in seeds
            for params in [{}] + ([] if est == "OutputPertSVM" else config["grids"][est])]
    output = "OutputPertSVM" in estimators
    grid_c = config["grids"]["OutputPertSVM"] if output else []
    parallel = Parallel(n_jobs=n_jobs)
    scores = parallel(delayed(_fit_score)(est, eps, seed, params, data)
                      for est, eps, seed, params in fits)
    perturbed = parallel(delayed(_output_perturbation_grid)(params, epsilons,
                                                            config["noise_seeds"], data)
                         for params in grid_c)
    defaults = {(est, eps): [scores[i] for i, f in enumerate(fits)
                             if f[:2] == (est, eps) and not f[3]]
                for est in estimators for eps in epsilons}
    # output perturbation's default at its resolved C_, with the grid's noise draws
    resolved_output = parallel(
        delayed(_output_perturbation_grid)({"C": defaults["OutputPertSVM", eps][0][1]["C_"]},
                                           [eps], config["noise_seeds"], data)
        for eps in (epsilons if output else []))
    results = {}
    for est in estimators:
        for eps in epsilons:
            row = results.setdefault(est, {}).setdefault(str(eps), {"grid": []})
            default = defaults[est, eps]
            row["default"] = summarise([s for s, _ in default])
            row["resolved"] = default[0][1]
            if est == "OutputPertSVM":
                row["default_fits"] = row["default"]
                row["default"] = summarise(resolved_output[epsilons.index(eps)][eps])
            if est == "OutputPertSVM":
                grid = [(params, acc[eps]) for params, acc in zip(grid_c, perturbed)]
            else:
                grid = [(params, [scores[i][0] for i, f in enumerate(fits)
                                  if f[:2] == (est, eps) and f[3] == params])
                        for params in config["grids"][est]]
            row["grid"] = [{"params": p, "test": summarise(acc)} for p, acc in grid]
            best = max(row["grid"], key=lambda g: np.nan_to_num(g["test"]["mean"], nan=-1.0))
            row["best"] = best
            row["gap_points"] = 100 * (best["test"]["mean"] - row["default"]["mean"])
            print(name, est, eps, row["resolved"], f"default {row['default']['mean']:.4f}",
                  f"best {best['test']['mean']:.4f} at {best['params']}",
                  f"gap {row['gap_points']:.2f}", flush=True)
    return {"n_train": int(bunch.X_train.shape[0]), "seeds": seeds, "estimators": results}


def plot(payload, path):
    """Default (bars) and the grid's best (marks) per dataset, estimator and epsilon."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    results = payload["results"]
    fig, axes = plt.subplots(1, len(results), figsize=(4.6 * len(results), 3.6),
                             squeeze=False)
    for ax, (name, result) in zip(axes[0], results.items()):
        labels, defaults, bests = [], [], []
        for est, rows in result["estimators"].items():
            for eps, row in rows.items():
                labels.append(f"{est.replace('Classifier', '').replace('LogisticRegression', '')}"
                              f" eps {eps}")
                defaults.append(100 * row["default"]["mean"])
                bests.append(100 * row["best"]["test"]["mean"])
        y = np.arange(len(labels))
        ax.barh(y, defaults, color="tab:blue", label="default")
        ax.plot(bests, y, "k|", ms=12, mew=2, label="grid's best")
        ax.set_yticks(y, labels, fontsize=7)
        ax.set_xlim(max(0.0, min(defaults + bests) - 5), 100)
        ax.set_title(f"{name} (n {result['n_train']})", fontsize=9)
        ax.set_xlabel("test accuracy (%)")
    axes[0][0].legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--datasets", nargs="+", choices=list(LOADERS))
    parser.add_argument("--n-jobs", type=int, default=1, help=N_JOBS_HELP)
    parser.add_argument("--estimators", nargs="+", choices=list(ESTIMATORS),
                        help="run only these estimators (default and grid) and replace their "
                             "rows in the existing JSON (the others are kept; the rerun is "
                             "recorded)")
    parser.add_argument("--defaults-only", action="store_true",
                        help="with --estimators: refit their defaults only, against the "
                             "recorded grid")
    args = parser.parse_args(argv)
    config = dict(QUICK if args.quick else FULL)
    if args.datasets:
        config["datasets"] = args.datasets
    estimators = tuple(args.estimators or ESTIMATORS)
    stem = NAME + ("_quick" if args.quick else "")
    path = RESULTS_DIR / f"{stem}.json"
    if args.estimators:  # the other rows, and the first run's environment, stay as they were
        payload = json.loads(path.read_text())
        for name in config["datasets"]:
            recorded = payload["results"][name]["estimators"]
            if args.defaults_only:
                run_defaults(name, config, args.n_jobs, estimators, recorded)
            else:
                recorded.update(run_dataset(name, config, args.n_jobs,
                                            estimators=estimators)["estimators"])
        what = [e + (" (defaults)" if args.defaults_only else "") for e in estimators]
        payload.setdefault("reruns", []).append(
            {"estimators": what, "datasets": config["datasets"],
             "environment": environment()})
        path.write_text(json.dumps(payload, indent=2, default=_to_builtin) + "\n")
    else:
        results = {name: run_dataset(name, config, args.n_jobs)
                   for name in config["datasets"]}
        payload = {"params": {**config, "neighboring": "add_remove", "target_points": 1.0},
                   "results": results}
        path = write_results(stem, payload)
    plot(payload, path.with_suffix(".png"))


if __name__ == "__main__":
    main()
