"""The source paper's Table 2 rows that the offline data allows, side by side with its numbers.

Yu et al. (IJCAI 2020), Table 2: test accuracy at epsilon 0.1 (binary: Adult,
KDDCup99, Gisette, RCV1) and epsilon 1 (MNIST, 10 classes), delta = 1/n^2 with n the
training rows, logistic / softmax regression, 20 runs. Methods here, all add/remove-one:

* ``DP-GD``: ``DPSGDClassifier(sample_rate=1)``;
* ``DP-SGD``: ``DPSGDClassifier(sample_rate=0.1, learning_rate_schedule="step")`` (the
  paper's sampling ratio and halved step);
* ``ObjPert (pure)``: ``ObjPertLogisticRegression`` at delta 0 (Chaudhuri et al.'s
  pure epsilon-DP, a fortiori (epsilon, delta)), and ``ObjPert (Gaussian)`` at delta;
* ``OutputPert``: ``OutputPertSVM(loss="logistic")`` at delta (Gaussian output
  perturbation of the regularised minimiser);
* each estimator with its defaults (only epsilon and delta given), and non-private
  scikit-learn ``LogisticRegression()``.

Hyperparameters are chosen per method and dataset by mean accuracy over the selection
seeds on a validation split (the training rows divided 80/20, stratified,
random_state 0), never on the test rows; the chosen setting is refitted on the whole
training split for the final seeds and scored on the test split. The selection reads
the training rows without noise and is outside the reported epsilon (as in the paper).
Gisette and RCV1 cannot be had offline: synthetic designs of their shapes (dense
6,000 x 5,000; CSR 20,000 x 47,236 with about 75 stored entries per row, rows scaled
into the unit ball, labels from a noisy sparse linear model, split 80/20) stand in for
them; their accuracies are not comparable with the paper's.

Run ``python -m benchmarks.bench_paper_table [--quick] [--datasets ...] [--n-jobs N]``.
"""

import argparse
import itertools
import json
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split

from skdp import DPSGDClassifier, ObjPertLogisticRegression, OutputPertSVM
from skdp.datasets import load_adult, load_kddcup99, load_mnist
from skdp.exceptions import ConvergenceError

from ._common import (N_JOBS_HELP, RESULTS_DIR, _to_builtin, environment, map_seeds,
                      summarise, write_results)

NAME = "paper_table"
EPSILON = {"adult": 0.1, "kddcup99": 0.1, "mnist": 1.0, "gisette-shaped": 0.1,
           "rcv1-shaped": 0.1}
# Yu et al. 2020, Table 2 (percent); AMP is approximate minima perturbation
PAPER = {
    "DP-GD": {"adult": 80.9, "kddcup99": 98.7, "mnist": 88.6},
    "DP-SGD": {"adult": 80.4, "kddcup99": 98.7, "mnist": 87.5},
    "AMP": {"adult": 79.3, "kddcup99": 97.5, "mnist": 71.9},
    "non-private": {"adult": 84.8, "kddcup99": 99.1, "mnist": 91.9},
}
GRIDS = {
    "DP-GD": {"epochs": [100, 300], "learning_rate": [1.0, 4.0, 16.0]},
    "DP-SGD": {"epochs": [10, 30], "learning_rate": [0.5, 2.0, 8.0]},
    "ObjPert (pure)": {"C": [0.1, 1.0, 10.0, 100.0], "eps_jacobian_frac": [0.5, 0.05]},
    "ObjPert (Gaussian)": {"C": [0.1, 1.0, 10.0, 100.0]},
    "OutputPert": {"C": [0.001, 0.01, 0.1, 1.0]},
}
# the larger designs get fewer final seeds
LARGE = ("mnist", "gisette-shaped", "rcv1-shaped")
FULL = {"datasets": list(EPSILON), "selection_seeds": [0, 1], "final_seeds": list(range(20)),
        "final_seeds_large": list(range(5)), "grids": GRIDS}
QUICK = {"datasets": ["adult"], "selection_seeds": [0], "final_seeds": [0, 1],
         "final_seeds_large": [0],
         "grids": {"DP-GD": {"epochs": [20], "learning_rate": [4.0]},
                   "DP-SGD": {"epochs": [2], "learning_rate": [2.0]},
                   "ObjPert (pure)": {"C": [1.0], "eps_jacobian_frac": [0.5]},
                   "ObjPert (Gaussian)": {"C": [1.0]}, "OutputPert": {"C": [0.01]}}}
DEFAULTS = {"DPSGDClassifier()": DPSGDClassifier, "ObjPertLogisticRegression()":
            ObjPertLogisticRegression, "OutputPertSVM()": OutputPertSVM}


def synthetic(n, d, row_entries, seed):
    """A stand-in shaped like Gisette (dense) or RCV1 (CSR, about ``row_entries`` entries
    per row), about as easy for a non-private linear model as the real data (test
    accuracy 96-97 %, theirs 97-98 %): rows in the unit ball, labels ``sign(x w +
    0.1 sd noise)`` with ``w`` on a few columns (50 dense columns of ten times the
    others' scale; 100 frequent sparse columns, ten of each row's entries); split
    80/20."""
    rng = np.random.default_rng(seed)
    if row_entries is None:
        X = rng.standard_normal((n, d))
        signal = rng.choice(d, 50, replace=False)
        X[:, signal] *= 10.0
        X /= np.linalg.norm(X, axis=1, keepdims=True)
    else:
        signal = np.arange(100)
        frequent = sp.random(n, signal.size, density=0.1, format="csr", random_state=seed,
                             data_rvs=rng.random)
        rare = sp.random(n, d - signal.size, density=(row_entries - 10) / (d - signal.size),
                         format="csr", random_state=seed + 1, data_rvs=rng.random)
        X = sp.hstack([frequent, rare], format="csr")
        norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
        X = sp.csr_matrix(sp.diags(1.0 / np.maximum(norms, 1e-12)) @ X)
    w = np.zeros(d)
    w[signal] = rng.standard_normal(signal.size)
    margin = np.asarray(X @ w).ravel()
    y = (margin + 0.1 * margin.std() * rng.standard_normal(n) > 0).astype(int)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, random_state=0,
                                                        stratify=y)
    return X_train, X_test, y_train, y_test


def load(name, data_home=None):
    if name == "gisette-shaped":
        return synthetic(7_500, 5_000, None, 1)
    if name == "rcv1-shaped":
        return synthetic(25_000, 47_236, 75, 2)
    loader = {"adult": load_adult, "kddcup99": load_kddcup99, "mnist": load_mnist}[name]
    bunch = loader(data_home=data_home)
    return bunch.X_train, bunch.X_test, bunch.y_train, bunch.y_test


def make(method, params, epsilon, delta, seed):
    if method == "DP-GD":
        return DPSGDClassifier(epsilon=epsilon, delta=delta, sample_rate=1.0,
                               random_state=seed, **params)
    if method == "DP-SGD":
        return DPSGDClassifier(epsilon=epsilon, delta=delta, sample_rate=0.1,
                               learning_rate_schedule="step", random_state=seed, **params)
    if method.startswith("ObjPert ("):
        return ObjPertLogisticRegression(epsilon=epsilon, delta=delta if "Gaussian" in method
                                         else 0.0, random_state=seed, **params)
    if method == "OutputPert":
        return OutputPertSVM(epsilon=epsilon, delta=delta, loss="logistic", random_state=seed,
                             **params)
    return DEFAULTS[method](epsilon=epsilon, delta=delta, random_state=seed)


def _accuracy(seed, method, params, epsilon, delta, X_fit, y_fit, X_score, y_score):
    """Test accuracy of one fit; nan when the solver does not certify its tolerance (the
    estimator then releases nothing)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            model = make(method, params, epsilon, delta, seed).fit(X_fit, y_fit)
        except ConvergenceError:
            return float("nan")
    return float(model.score(X_score, y_score))


def settings(grid):
    keys = sorted(grid)
    return [dict(zip(keys, values)) for values in itertools.product(*(grid[k] for k in keys))]


def run_dataset(name, config, n_jobs, data_home=None, methods=None):
    """Select on the validation split, then score the final seeds; ``methods`` restricts
    the run to those rows (grid methods and defaults rows alike)."""
    if methods is not None:
        config = {**config, "grids": {m: g for m, g in config["grids"].items()
                                      if m in methods}}
    X_train, X_test, y_train, y_test = load(name, data_home)
    epsilon, delta = EPSILON[name], 1.0 / X_train.shape[0] ** 2
    X_fit, X_val, y_fit, y_val = train_test_split(X_train, y_train, test_size=0.2,
                                                  random_state=0, stratify=y_train)
    final_seeds = config["final_seeds_large" if name in LARGE else "final_seeds"]
    rows = {}
    for method, grid in config["grids"].items():
        scores = []
        for params in settings(grid):
            accuracies = map_seeds(_accuracy, config["selection_seeds"], n_jobs, method=method,
                                   params=params, epsilon=epsilon, delta=delta, X_fit=X_fit,
                                   y_fit=y_fit, X_score=X_val, y_score=y_val)
            scores.append((float(np.mean(accuracies)), params))
        validation, chosen = max(scores, key=lambda item: np.nan_to_num(item[0], nan=-1.0))
        rows[method] = {"chosen": chosen, "validation_accuracy": validation,
                        "grid": [{"params": p, "validation_accuracy": a} for a, p in scores]}
    for method in list(config["grids"]) + [m for m in DEFAULTS
                                           if methods is None or m in methods]:
        params = rows.get(method, {}).get("chosen", {})
        accuracies = map_seeds(_accuracy, final_seeds, n_jobs, method=method, params=params,
                               epsilon=epsilon, delta=delta, X_fit=X_train, y_fit=y_train,
                               X_score=X_test, y_score=y_test)
        rows.setdefault(method, {})["test"] = summarise(accuracies)
        print(name, method, params, rows[method]["test"], flush=True)
    reference = LogisticRegression(max_iter=1000).fit(X_train, y_train)
    rows["non-private"] = {"test": summarise([reference.score(X_test, y_test)])}
    return {"epsilon": epsilon, "delta": delta, "n_train": int(X_train.shape[0]),
            "final_seeds": final_seeds, "methods": rows}


def plot(payload, path):
    """Test accuracy per method (bars, standard errors) and the paper's numbers (marks)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    results = payload["results"]
    fig, axes = plt.subplots(1, len(results), figsize=(4.2 * len(results), 3.6), squeeze=False)
    for ax, (name, result) in zip(axes[0], results.items()):
        methods = [m for m in result["methods"] if "test" in result["methods"][m]]
        means = [100 * result["methods"][m]["test"]["mean"] for m in methods]
        errors = [100 * result["methods"][m]["test"]["sem"] for m in methods]
        ax.barh(range(len(methods)), means, xerr=errors, color="tab:blue")
        for i, method in enumerate(methods):
            if name in PAPER.get(method, {}):
                ax.plot(PAPER[method][name], i, "k|", ms=14, mew=2)
        ax.set_yticks(range(len(methods)), methods, fontsize=7)
        ax.set_xlim(max(0.0, min(means) - 5), 100)
        ax.set_title(f"{name}, epsilon {result['epsilon']:g}", fontsize=9)
        ax.set_xlabel("test accuracy (%); black mark: paper")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--datasets", nargs="+", choices=list(EPSILON))
    parser.add_argument("--n-jobs", type=int, default=1, help=N_JOBS_HELP)
    parser.add_argument("--rerun", nargs="+", metavar="METHOD",
                        choices=list(GRIDS) + list(DEFAULTS),
                        help="run only these rows and replace them in the existing JSON "
                             "(its other rows and setting are kept; the rerun is recorded); "
                             "a dataset new to the JSON is added")
    args = parser.parse_args(argv)
    config = dict(QUICK if args.quick else FULL)
    if args.datasets:
        config["datasets"] = args.datasets
    stem = NAME + ("_quick" if args.quick else "")
    results = {name: run_dataset(name, config, args.n_jobs, methods=args.rerun)
               for name in config["datasets"]}
    if args.rerun:  # the other rows, and the first run's environment, stay as they were
        path = RESULTS_DIR / f"{stem}.json"
        payload = json.loads(path.read_text())
        for name, result in results.items():
            if name in payload["results"]:
                payload["results"][name]["methods"].update(result["methods"])
            else:  # a dataset not in the first run joins with the rows run now
                payload["results"][name] = result
        payload.setdefault("reruns", []).append(
            {"methods": args.rerun, "datasets": config["datasets"],
             "environment": environment()})
        path.write_text(json.dumps(payload, indent=2, default=_to_builtin) + "\n")
    else:
        payload = {"params": {**config, "neighboring": "add_remove", "epsilon": EPSILON,
                              "delta": "1/n_train^2", "paper": PAPER}, "results": results}
        path = write_results(stem, payload)
    plot(payload, path.with_suffix(".png"))


if __name__ == "__main__":
    main()
