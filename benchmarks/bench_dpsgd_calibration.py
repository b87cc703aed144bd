"""DP-SGD's predicted probabilities on Adult, and the accuracy of its defaults elsewhere.

Clipping every per-example gradient below the largest norm a logistic gradient has on
Adult (``sqrt(data_norm**2 + intercept_scaling**2)``) caps the residuals of the rows the
model gets most wrong, mostly positives (the minority class), so the intercept settles
below the maximum-likelihood one and the mean predicted probability falls below the
base rate. ``DPSGDClassifier``'s defaults clip at ``max_grad_norm=0.5`` (tuned for
accuracy), with a short intercept column (``intercept_scaling=0.25``: a row's gradient
norm ``|r_i| sqrt(||x_i||^2 + 0.0625)`` is clipped less than with 1, and the intercept's
noise is smaller) and end with the intercept correction (one noisy Newton step on the
intercept alone, inside the count's share of the budget), which puts the mean predicted
probability on the training rows at the base rate.

Part 1, Adult at epsilon 1, every method on the same clipped rows (norm 1):

* ``DPSGDClassifier()``: the defaults (delta 1e-5);
* ``DPSGDClassifier(intercept_scaling=1.0, intercept_correction=False)``: the defaults
  before the correction (``max_grad_norm=0.5``);
* the defaults without the correction, and the correction with ``intercept_scaling=1``
  (what each of the two changes does alone);
* ``DPSGDClassifier(max_grad_norm="auto", intercept_scaling=1.0,
  intercept_correction=False)``: no clipping (the largest gradient norm);
* ``ObjPertLogisticRegression()``: objective perturbation, its defaults (pure epsilon);
* non-private scikit-learn ``LogisticRegression(C=1e4)``: the maximum-likelihood
  reference, fitted once.

Units: ``rows`` (add/remove one row) and ``persons`` (add/remove one person with all
their rows: ``fit(..., groups=persons)``, the persons of ``bench_person_level``'s public
rule: runs of 1 to 20 rows of a fixed-seed permutation). Figures on Adult's test rows
over 10 seeds (mean and standard error): mean predicted probability of the positive
class (against the test base rate), log loss, Brier score and accuracy, and the changes
of log loss and accuracy from the first method, paired by seed.

Part 2, test accuracy of the defaults, of the defaults before the correction and of
``max_grad_norm="auto"`` on the sets where ``"auto"`` lost accuracy: the wide sparse
text-like rows of ``examples/text_like_sparse.py`` (50,000 documents of a 20,000-word
vocabulary, delta ``1 / n**2``), MNIST (10 classes, softmax: no correction there) and
KDDCup99 (delta 1e-5), at epsilon 0.1 and 1 over 5 seeds, with the change from the
defaults before the correction paired by seed.

Run ``python -m benchmarks.bench_dpsgd_calibration [--quick] [--n-jobs N]``.
"""

import argparse
import importlib.util
import warnings
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import brier_score_loss, log_loss

from skdp import DPSGDClassifier, ObjPertLogisticRegression
from skdp.datasets import load_adult, load_kddcup99, load_mnist

from ._common import N_JOBS_HELP, map_seeds, summarise, write_results
from .bench_person_level import visit_persons

NAME = "dpsgd_calibration"
EPSILON, DELTA = 1.0, 1e-5
BEFORE = dict(intercept_scaling=1.0, intercept_correction=False)
AUTO = dict(max_grad_norm="auto", **BEFORE)


def _dpsgd(**params):
    return lambda **kw: DPSGDClassifier(data_norm=1.0, **params, **kw)


ESTIMATORS = {
    "DP-SGD, defaults (intercept_scaling=0.25, intercept correction)": _dpsgd(),
    "DP-SGD, defaults before (intercept_scaling=1, no correction)": _dpsgd(**BEFORE),
    "DP-SGD, intercept_scaling=0.25, no correction":
        _dpsgd(intercept_correction=False),
    "DP-SGD, intercept_scaling=1, intercept correction": _dpsgd(intercept_scaling=1.0),
    "DP-SGD, max_grad_norm='auto' (intercept_scaling=1, no correction)": _dpsgd(**AUTO),
    "ObjPertLogisticRegression":
        lambda **kw: ObjPertLogisticRegression(data_norm=1.0, **kw),
}
SHORT_NAMES = ("defaults", "before", "s=0.25 only", "corr. only", "auto", "ObjPert")
UNITS = ("rows", "persons")
METRICS = ("mean_probability", "log_loss", "brier", "accuracy")
PAIRED = ("log_loss", "accuracy")
# part 2: the defaults against the defaults before and "auto", away from Adult
ACCURACY_ESTIMATORS = {"defaults": {}, "defaults before": BEFORE, "max_grad_norm='auto'": AUTO}
ACCURACY_SETS = ("text", "mnist", "kddcup99")
ACCURACY_EPSILONS = (0.1, 1.0)


def scores(probabilities, y_test):
    """The four figures of one model on the test rows (``y_test`` in {0, 1})."""
    return {"mean_probability": float(probabilities.mean()),
            "log_loss": float(log_loss(y_test, probabilities, labels=[0, 1])),
            "brier": float(brier_score_loss(y_test, probabilities)),
            "accuracy": float(np.mean((probabilities > 0.5) == (y_test == 1)))}


def _fit_score(seed, name, unit, data):
    X, y, persons, X_test, y_test = data
    model = ESTIMATORS[name](epsilon=EPSILON, random_state=seed)
    if "DP-SGD" in name:
        model.set_params(delta=DELTA)
    fit_params = {"groups": persons} if unit == "persons" else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, y, **fit_params)
    positive = list(model.classes_).index(1)
    return scores(model.predict_proba(X_test)[:, positive], y_test), model.neighboring_


def calibration(seeds, n_jobs=1):
    """Part 1: the calibration figures on Adult, per unit and method."""
    bunch = load_adult()
    X, y = bunch.X_train, bunch.y_train
    X_test, y_test = bunch.X_test, (bunch.y_test == 1).astype(int)
    data = (X, y, visit_persons(len(y)), X_test, y_test)
    reference = LogisticRegression(C=1e4, max_iter=1000).fit(X, y)
    results = {}
    for unit in UNITS:
        results[unit], before = {}, None
        for name in ESTIMATORS:
            runs = map_seeds(_fit_score, seeds, n_jobs, name=name, unit=unit, data=data)
            figures = {metric: np.array([r[0][metric] for r in runs]) for metric in METRICS}
            before = figures if before is None else before
            results[unit][name] = {
                **{metric: summarise(figures[metric]) for metric in METRICS},
                # paired by seed against the first estimator (the defaults)
                **{f"{metric}_change": summarise(figures[metric] - before[metric])
                   for metric in PAIRED},
                "neighboring": runs[0][1]}
            print(unit, name, {m: round(results[unit][name][m]["mean"], 4) for m in METRICS},
                  flush=True)
    positive = list(reference.classes_).index(1)
    return {"base_rate_test": float(y_test.mean()), "base_rate_train": float(np.mean(y == 1)),
            "non_private": scores(reference.predict_proba(X_test)[:, positive], y_test),
            "results": results}


def _text_documents(n_samples, seed):
    """The rows of ``examples/text_like_sparse.py`` (loaded from its file)."""
    path = Path(__file__).resolve().parents[1] / "examples" / "text_like_sparse.py"
    spec = importlib.util.spec_from_file_location("text_like_sparse", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.make_documents(n_samples, seed)


def accuracy_data(name, quick=False):
    """``(X_train, y_train, X_test, y_test, delta)`` of an accuracy set."""
    if name == "text":
        n_train, n_test = (5_000, 2_000) if quick else (50_000, 10_000)
        return (*_text_documents(n_train, 0), *_text_documents(n_test, 1), 1.0 / n_train**2)
    bunch = {"mnist": load_mnist, "kddcup99": load_kddcup99}[name]()
    return bunch.X_train, bunch.y_train, bunch.X_test, bunch.y_test, DELTA


def _accuracy(seed, name, epsilon, data):
    X, y, X_test, y_test, delta = data
    model = DPSGDClassifier(epsilon=epsilon, delta=delta, data_norm=1.0, random_state=seed,
                            **ACCURACY_ESTIMATORS[name])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(model.fit(X, y).score(X_test, y_test))


def accuracies(seeds, n_jobs=1, quick=False):
    """Part 2: test accuracy per set, epsilon and method, and the paired change from
    the defaults before the correction."""
    results = {}
    for set_name in ACCURACY_SETS[:1] if quick else ACCURACY_SETS:
        data = accuracy_data(set_name, quick)
        results[set_name] = {}
        for epsilon in ACCURACY_EPSILONS:
            runs = {name: np.array(map_seeds(_accuracy, seeds, n_jobs, name=name,
                                             epsilon=epsilon, data=data))
                    for name in ACCURACY_ESTIMATORS}
            results[set_name][f"{epsilon:g}"] = {
                name: {"accuracy": summarise(values),
                       "change": summarise(values - runs["defaults before"])}
                for name, values in runs.items()}
            print(set_name, epsilon, {name: round(float(v.mean()), 4)
                                      for name, v in runs.items()}, flush=True)
    return results


def plot(payload, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(ESTIMATORS)
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    width = 0.8 / len(UNITS)
    for ax, metric, label in zip(axes, ("mean_probability", "log_loss"),
                                 ("mean predicted probability", "log loss")):
        for i, unit in enumerate(UNITS):
            cells = [payload["results"][unit][name][metric] for name in names]
            ax.bar(np.arange(len(names)) + (i - 0.5) * width, [c["mean"] for c in cells],
                   width, yerr=[c["sem"] for c in cells], label=unit)
        reference = (payload["base_rate_test"] if metric == "mean_probability"
                     else payload["non_private"]["log_loss"])
        ax.axhline(reference, color="k", ls="--", lw=1,
                   label="test base rate" if metric == "mean_probability" else "non-private")
        ax.set_xticks(range(len(names)), SHORT_NAMES, fontsize=7)
        ax.set_ylabel(label)
        ax.set_ylim(*((0.15, 0.29) if metric == "mean_probability" else (0.3, 0.5)))
        ax.legend(fontsize=7, ncol=3, loc="upper center")
    fig.suptitle(f"Adult, epsilon {payload['params']['epsilon']:g}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--n-jobs", type=int, default=1, help=N_JOBS_HELP)
    args = parser.parse_args(argv)
    seeds = list(range(2 if args.quick else 10))
    accuracy_seeds = list(range(1 if args.quick else 5))
    payload = {"params": {"epsilon": EPSILON, "delta": DELTA, "seeds": seeds,
                          "accuracy_seeds": accuracy_seeds,
                          "accuracy_epsilons": list(ACCURACY_EPSILONS)},
               **calibration(seeds, args.n_jobs),
               "accuracy": accuracies(accuracy_seeds, args.n_jobs, args.quick)}
    path = write_results(NAME + ("_quick" if args.quick else ""), payload)
    plot(payload, path.with_suffix(".png"))


if __name__ == "__main__":
    main()
