"""Objective perturbation on UCI Adult and KDDCup99: test accuracy against epsilon, fit time.

Methods, all with the same C grid; hyperparameters chosen per method and epsilon by
mean accuracy on a validation split of the training data (never the test set). That
selection reads the protected training rows without noise and its cost is in no reported
epsilon: the tables show what each method can reach with well-chosen hyperparameters, not
what a private pipeline that must also choose them would get.


* skdp ObjPertLogisticRegression, pure epsilon-DP (Chaudhuri et al. Algorithm 2), under
  replace-one (to compare with diffprivlib) and add/remove-one (skdp's default), with
  ``eps_jacobian_frac`` (any value is equally private) tuned alongside C;
* skdp, Gaussian (KST) variant with delta = 1e-5, replace-one;
* diffprivlib LogisticRegression (replace-one, pure epsilon), when importable (0.6.6
  needs scikit-learn < 1.8: run this script in such an environment to include it);
* non-private scikit-learn LogisticRegression.

Every dataset gets the same epsilons, seeds, grids and selection protocol (the official
training split divided 80/20, stratified, random_state 0; the selected setting's test
accuracy is reported). KDDCup99 is skdp's default 70,000-row sample (56,000 train).

Fit time: best of 3 on the whole training split at C = 1, as a ratio to scikit-learn's
LogisticRegression(C=1) measured in the same run, per dataset; and "as run", each
estimator with its defaults (``ObjPertLogisticRegression(epsilon=1.0, data_norm=1.0)``
against ``LogisticRegression()``), timed in turn in one process, the median of the
per-round ratios. ``--timing-only`` measures both alone (BLAS on one thread) into
``objective_perturbation_timing.json``; ``--as-run-only`` measures the as-run figure
and the matched one at C = 1 in interleaved pairs alone and merges them into that file,
with their own environment, keeping the rest.

Run ``python -m benchmarks.bench_objective_perturbation [--quick] [--n-jobs N]
[--datasets adult kddcup99]`` from the repo root. ``--n-jobs`` runs the seed repetitions of the accuracy curves through joblib
(same results for any value); the fit times are always measured one after another.
"""

import argparse
import json
import warnings

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split

from skdp import ObjPertLogisticRegression
from skdp.datasets import load_adult, load_kddcup99

from ._common import (N_JOBS_HELP, best_time, figure_footer, interleaved_ratio, map_seeds,
                      optional_import, summarise, write_results)

NAME = "objective_perturbation"
PARAMS = {
    "epsilons": [0.05, 0.1, 0.5, 1.0, 2.0, 5.0],
    "C_grid": [0.1, 1.0],
    "eps_jacobian_frac_grid": [0.5, 0.05, 0.02],
    "intercept_scaling_grid": [0.5, 1.0],
    "seeds": list(range(10)),
    "delta": 1e-5,
    "datasets": ["adult", "kddcup99"],
}
QUICK = {"epsilons": [0.1, 1.0], "C_grid": [1.0], "eps_jacobian_frac_grid": [0.5, 0.05],
         "intercept_scaling_grid": [1.0], "seeds": [0, 1], "delta": 1e-5,
         "datasets": ["adult", "kddcup99"]}
LOADERS = {"adult": load_adult, "kddcup99": load_kddcup99}
# diffprivlib's Adult accuracies quoted in the issue (there is none for KDDCup99)
DIFFPRIVLIB_REFERENCE = {"adult": {0.1: 0.760, 0.5: 0.810, 1.0: 0.823}}


def make_data(name="adult", seed=0):
    """A dataset's official split; the training part split again 80/20 for validation."""
    data = LOADERS[name]()
    X_fit, X_val, y_fit, y_val = train_test_split(data.X_train, data.y_train, test_size=0.2,
                                                  random_state=seed, stratify=data.y_train)
    return X_fit, X_val, y_fit, y_val, data.X_test, data.y_test, data.X_train, data.y_train


def hyperparameter_grid(method, params):
    """The hyperparameter combinations tried for one method (diffprivlib: C only)."""
    grid = [{"C": C} for C in params["C_grid"]]
    if method.startswith("skdp"):
        grid = [{**g, "intercept_scaling": s} for g in grid for s in params["intercept_scaling_grid"]]
    if method.startswith("skdp_pure"):
        grid = [{**g, "eps_jacobian_frac": f} for g in grid
                for f in params["eps_jacobian_frac_grid"]]
    return grid


def make_estimator(method, epsilon, hyper, seed, delta):
    """The estimator of one method at one epsilon, hyperparameter setting and seed."""
    if method == "skdp_pure_replace":
        return ObjPertLogisticRegression(epsilon=epsilon, neighboring="replace",
                                         random_state=seed, **hyper)
    if method == "skdp_pure_add_remove":
        return ObjPertLogisticRegression(epsilon=epsilon, random_state=seed, **hyper)
    if method == "skdp_gaussian_replace":
        return ObjPertLogisticRegression(epsilon=epsilon, delta=delta, neighboring="replace",
                                         random_state=seed, **hyper)
    if method == "diffprivlib":
        from diffprivlib.models import LogisticRegression as DPLogisticRegression

        return DPLogisticRegression(epsilon=epsilon, data_norm=1.0, random_state=seed,
                                    max_iter=1000, **hyper)
    raise ValueError(method)


def _seed_accuracy(seed, method, epsilon, hyper, delta, data):
    """Validation and test accuracy of the fit with one seed."""
    X_fit, X_val, y_fit, y_val, X_test, y_test = data
    est = make_estimator(method, epsilon, hyper, seed, delta)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # diffprivlib's convergence chatter
        est.fit(X_fit, y_fit)
    return est.score(X_val, y_val), est.score(X_test, y_test)


def _accuracy_curves(methods, params, split, n_jobs=1):
    curves = {}
    for method in methods:
        curves[method] = []
        for epsilon in params["epsilons"]:
            tried = []
            for hyper in hyperparameter_grid(method, params):
                scores = map_seeds(_seed_accuracy, params["seeds"], n_jobs, method=method,
                                   epsilon=epsilon, hyper=hyper, delta=params["delta"],
                                   data=split[:6])
                val, test = [v for v, _ in scores], [t for _, t in scores]
                tried.append({"hyperparameters": hyper, "validation_accuracy": float(np.mean(val)),
                              "test_accuracy": float(np.mean(test)), "_test": test})
            best = max(tried, key=lambda t: t["validation_accuracy"])
            row = {"epsilon": epsilon, "hyperparameters": best["hyperparameters"],
                   "test_accuracy": summarise(best.pop("_test")),
                   "grid": [{k: v for k, v in t.items() if k != "_test"} for t in tried]}
            curves[method].append(row)
            print(f"{method:>24} eps={epsilon:<5} {best['hyperparameters']} "
                  f"acc={row['test_accuracy']['mean']:.4f} +- {row['test_accuracy']['sem']:.4f}")
    return curves


def _non_private(params, split):
    X_fit, X_val, y_fit, y_val, X_test, y_test = split[:6]
    by_C = {}
    for C in params["C_grid"]:
        est = LogisticRegression(C=C, max_iter=5000).fit(X_fit, y_fit)
        by_C[C] = (est.score(X_val, y_val), est.score(X_test, y_test))
    best_C = max(by_C, key=lambda c: by_C[c][0])
    return {"C": best_C, "test_accuracy": by_C[best_C][1]}


def _fit_times(split, delta):
    """Best-of-3 fit times at C = 1 on the whole training split, and ratios to sklearn."""
    # sequential whatever --n-jobs: the ratios compare fits measured in one quiet run
    X_train, y_train = split[6], split[7]
    times = {"sklearn_LogisticRegression": best_time(
        lambda: LogisticRegression(C=1.0).fit(X_train, y_train))}
    for method in ("skdp_pure_add_remove", "skdp_gaussian_replace"):
        times[method] = best_time(
            lambda m=method: make_estimator(m, 1.0, {"C": 1.0}, 0, delta).fit(X_train, y_train))
    if optional_import("diffprivlib") is not None:
        def fit_diffprivlib():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                make_estimator("diffprivlib", 1.0, {"C": 1.0}, 0, delta).fit(X_train, y_train)
        times["diffprivlib"] = best_time(fit_diffprivlib)
    base = times["sklearn_LogisticRegression"]
    return {name: {"seconds": t, "ratio_to_sklearn": t / base} for name, t in times.items()}


AS_RUN_REPEATS = 7
AS_RUN_NOTE = ("As run: each estimator with its defaults as a user fits it on the training "
               "rows, ObjPertLogisticRegression(epsilon=1.0, data_norm=1.0) against "
               "LogisticRegression(), timed in turn in one process; ratio = median of the "
               "per-round ratios.")


def _as_run_time(split):
    """ObjPertLogisticRegression and LogisticRegression with their defaults, interleaved."""
    X_train, y_train = split[6], split[7]
    timing = interleaved_ratio(
        lambda: ObjPertLogisticRegression(epsilon=1.0, data_norm=1.0).fit(X_train, y_train),
        lambda: LogisticRegression().fit(X_train, y_train), AS_RUN_REPEATS)
    return {**timing, "note": AS_RUN_NOTE}


MATCHED_NOTE = ("Matched: ObjPertLogisticRegression(epsilon=1.0, C=1.0, random_state=0) "
                "against LogisticRegression(C=1.0), the same C, each solver at its own "
                "tolerance; timed in turn in one process, ratio = median of the per-round "
                "ratios.")


def _matched_time(split):
    """ObjPertLogisticRegression and LogisticRegression at C = 1, interleaved."""
    X_train, y_train = split[6], split[7]
    timing = interleaved_ratio(
        lambda: ObjPertLogisticRegression(epsilon=1.0, C=1.0, random_state=0)
        .fit(X_train, y_train),
        lambda: LogisticRegression(C=1.0).fit(X_train, y_train), AS_RUN_REPEATS)
    return {**timing, "note": MATCHED_NOTE}


def _plot(payload, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    results = payload["results"]
    fig, axes = plt.subplots(1, len(results), figsize=(6.5 * len(results), 4.8), squeeze=False)
    for ax, (name, result) in zip(axes[0], results.items()):
        for method, rows in result["curves"].items():
            eps = [r["epsilon"] for r in rows]
            mean = np.array([r["test_accuracy"]["mean"] for r in rows])
            sem = np.array([r["test_accuracy"]["sem"] for r in rows])
            ax.errorbar(eps, mean, yerr=sem, marker="o", capsize=3, label=method)
        ax.axhline(result["non_private"]["test_accuracy"], color="k", ls="--",
                   label="sklearn (non-private)")
        ref = sorted(result.get("diffprivlib_reference", {}).items())
        if ref:
            ax.plot([float(e) for e, _ in ref], [a for _, a in ref], "x", color="grey",
                    label="diffprivlib reference (issue)")
        ax.set_xscale("log")
        ax.set_xlabel("epsilon")
        ax.set_ylabel(f"{name} test accuracy")
        ax.set_title(f"{name}, n_train = {result['n_train']} (hyperparameters chosen on "
                     "validation)", fontsize=9)
        ax.legend(fontsize=8)
    env = payload["environment"]
    fig.suptitle("Objective perturbation (ObjPertLogisticRegression) against epsilon", fontsize=10)
    fig.text(0.01, 0.01, f"git {env.get('git_sha')}, " + figure_footer(
        env, payload["params"]["seeds"], "as labelled (replace / add_remove)")
        + f"; diffprivlib {env['versions']['diffprivlib']}", fontsize=6)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)


def run_dataset(name, params, methods, n_jobs=1):
    """Accuracy curves, non-private baseline and fit times on one dataset."""
    print(f"== {name}")
    split = make_data(name)
    result = {
        "n_train": int(len(split[7])),
        "curves": _accuracy_curves(methods, params, split, n_jobs),
        "non_private": _non_private(params, split),
        "fit_time": _fit_times(split, params["delta"]),
        "fit_time_as_run": _as_run_time(split),
    }
    if name in DIFFPRIVLIB_REFERENCE:
        result["diffprivlib_reference"] = DIFFPRIVLIB_REFERENCE[name]
    print("non-private:", result["non_private"])
    for method, t in result["fit_time"].items():
        print(f"fit time {method:>28}: {t['seconds']:.3f} s = {t['ratio_to_sklearn']:.2f}x sklearn")
    return result


def run(quick=False, n_jobs=1, datasets=None):
    params = dict(QUICK if quick else PARAMS)
    params["datasets"] = list(datasets or params["datasets"])
    methods = ["skdp_pure_replace", "skdp_pure_add_remove", "skdp_gaussian_replace"]
    if optional_import("diffprivlib") is not None:
        methods.append("diffprivlib")
    payload = {"params": params,
               "results": {name: run_dataset(name, params, methods, n_jobs)
                           for name in params["datasets"]}}
    name = NAME + ("_quick" if quick else "")
    path = write_results(name, payload)
    payload["environment"] = json.loads(path.read_text())["environment"]
    _plot(payload, path.with_suffix(".png"))
    print("wrote", path, path.with_suffix(".png"))
    return payload


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="CI-sized run")
    parser.add_argument("--timing-only", action="store_true",
                        help="only the fit-time ratios (objective_perturbation_timing.json)")
    parser.add_argument("--as-run-only", action="store_true",
                        help="only the as-run fit times, merged into the existing "
                             "objective_perturbation_timing.json with their own environment "
                             "(its other figures, e.g. diffprivlib's from an environment "
                             "that has it, are kept)")
    parser.add_argument("--n-jobs", type=int, default=1, help=N_JOBS_HELP)
    parser.add_argument("--datasets", nargs="+", choices=list(LOADERS), default=None,
                        help="datasets to run (default: all of %(choices)s)")
    args = parser.parse_args(argv)
    if args.as_run_only:
        from threadpoolctl import threadpool_limits

        from ._common import RESULTS_DIR, environment

        path = RESULTS_DIR / f"{NAME}_timing.json"
        payload = json.loads(path.read_text()) if path.exists() else {"benchmark": NAME + "_timing"}
        payload["as_run"], payload["matched_interleaved"] = {}, {}
        with threadpool_limits(1):
            for name in args.datasets or PARAMS["datasets"]:
                split = make_data(name)
                payload["matched_interleaved"][name] = _matched_time(split)
                payload["as_run"][name] = _as_run_time(split)
                print(f"{name} matched (C = 1, interleaved): "
                      f"{payload['matched_interleaved'][name]['ratio']:.2f}x")
        payload["as_run_environment"] = {**environment(), "blas_threads": 1}
        for name, t in payload["as_run"].items():
            print(f"{name} as run: {t['ratio']:.2f}x LogisticRegression() (load "
                  f"{t['load_average']})")
        path.write_text(json.dumps(payload, indent=2) + "\n")
        print("wrote", path)
        return
    if args.timing_only:
        from threadpoolctl import threadpool_limits

        times, as_run = {}, {}
        with threadpool_limits(1):
            for name in args.datasets or PARAMS["datasets"]:
                split = make_data(name)
                times[name] = _fit_times(split, PARAMS["delta"])
                as_run[name] = _as_run_time(split)
                for method, t in times[name].items():
                    print(f"{name} fit time {method:>28}: {t['seconds']:.3f} s = "
                          f"{t['ratio_to_sklearn']:.2f}x sklearn")
                print(f"{name} as run: {as_run[name]['ratio']:.2f}x LogisticRegression() "
                      f"(load {as_run[name]['load_average']})")
        print("wrote", write_results(NAME + "_timing", {"fit_time": times, "as_run": as_run,
                                                         "blas_threads": 1}))
        return
    run(quick=args.quick, n_jobs=args.n_jobs, datasets=args.datasets)


if __name__ == "__main__":
    main()
