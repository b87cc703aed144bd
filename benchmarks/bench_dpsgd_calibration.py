"""DP-SGD's predicted probabilities on Adult: clipping bias, and ``max_grad_norm="auto"``.

``DPSGDClassifier`` clips every per-example gradient to ``max_grad_norm=0.5`` (its
default, tuned for accuracy), below the largest norm a logistic gradient has on Adult
(``sqrt(data_norm**2 + intercept_scaling**2) = sqrt(2)``). Clipping caps the residuals of
the rows the model gets most wrong, mostly positives (the minority class), so the
intercept settles below the maximum-likelihood one and the mean predicted probability
falls below the base rate. ``max_grad_norm="auto"`` clips at the largest gradient norm:
no gradient is clipped and the noise-free fixed point solves the logistic score
equations, whose intercept equation makes the mean predicted probability on the
training rows the base rate.

Methods, all at epsilon 1 on the same clipped rows (norm 1, intercept column 1):

* ``DPSGDClassifier()``: the default, ``max_grad_norm=0.5`` (delta 1e-5);
* ``DPSGDClassifier(max_grad_norm="auto")`` (delta 1e-5);
* ``DPSGDClassifier(max_grad_norm="auto", intercept_scaling=0.25)``: a shorter
  intercept column, whose gradient bound ``sqrt(1.0625)`` (against ``sqrt(2)``) means
  less noise;
* ``ObjPertLogisticRegression()``: objective perturbation, its defaults (pure epsilon);
* non-private scikit-learn ``LogisticRegression(C=1e4)``: the maximum-likelihood
  reference, fitted once.

Units: ``rows`` (add/remove one row) and ``persons`` (add/remove one person with all
their rows: ``fit(..., groups=persons)``, the persons of ``bench_person_level``'s public
rule: runs of 1 to 20 rows of a fixed-seed permutation). Figures on Adult's test rows
over 10 seeds (mean and standard error): mean predicted probability of the positive
class (against the test base rate), log loss, Brier score and accuracy, and the changes
of log loss and accuracy from the first method, paired by seed.

Run ``python -m benchmarks.bench_dpsgd_calibration [--quick] [--n-jobs N]``.
"""

import argparse
import warnings

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import brier_score_loss, log_loss

from skdp import DPSGDClassifier, ObjPertLogisticRegression
from skdp.datasets import load_adult

from ._common import N_JOBS_HELP, map_seeds, summarise, write_results
from .bench_person_level import visit_persons

NAME = "dpsgd_calibration"
EPSILON, DELTA = 1.0, 1e-5
ESTIMATORS = {
    "DP-SGD, max_grad_norm=0.5 (default)":
        lambda **kw: DPSGDClassifier(data_norm=1.0, delta=DELTA, **kw),
    "DP-SGD, max_grad_norm='auto'":
        lambda **kw: DPSGDClassifier(data_norm=1.0, delta=DELTA, max_grad_norm="auto", **kw),
    "DP-SGD, max_grad_norm='auto', intercept_scaling=0.25":
        lambda **kw: DPSGDClassifier(data_norm=1.0, delta=DELTA, max_grad_norm="auto",
                                     intercept_scaling=0.25, **kw),
    "ObjPertLogisticRegression":
        lambda **kw: ObjPertLogisticRegression(data_norm=1.0, **kw),
}
SHORT_NAMES = ("DP-SGD 0.5", "DP-SGD auto", "auto, s=0.25", "ObjPert")
UNITS = ("rows", "persons")
METRICS = ("mean_probability", "log_loss", "brier", "accuracy")
PAIRED = ("log_loss", "accuracy")


def scores(probabilities, y_test):
    """The four figures of one model on the test rows (``y_test`` in {0, 1})."""
    return {"mean_probability": float(probabilities.mean()),
            "log_loss": float(log_loss(y_test, probabilities, labels=[0, 1])),
            "brier": float(brier_score_loss(y_test, probabilities)),
            "accuracy": float(np.mean((probabilities > 0.5) == (y_test == 1)))}


def _fit_score(seed, name, unit, data):
    X, y, persons, X_test, y_test = data
    model = ESTIMATORS[name](epsilon=EPSILON, random_state=seed)
    fit_params = {"groups": persons} if unit == "persons" else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, y, **fit_params)
    positive = list(model.classes_).index(1)
    return scores(model.predict_proba(X_test)[:, positive], y_test), model.neighboring_


def run(seeds, n_jobs=1):
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
                # paired by seed against the first estimator (the default)
                **{f"{metric}_change": summarise(figures[metric] - before[metric])
                   for metric in PAIRED},
                "neighboring": runs[0][1]}
            print(unit, name, {m: round(results[unit][name][m]["mean"], 4) for m in METRICS},
                  flush=True)
    positive = list(reference.classes_).index(1)
    return {"base_rate_test": float(y_test.mean()), "base_rate_train": float(np.mean(y == 1)),
            "non_private": scores(reference.predict_proba(X_test)[:, positive], y_test),
            "results": results}


def plot(payload, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(ESTIMATORS)
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
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
        ax.set_xticks(range(len(names)), SHORT_NAMES, fontsize=8)
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
    payload = {"params": {"epsilon": EPSILON, "delta": DELTA, "seeds": seeds},
               **run(seeds, args.n_jobs)}
    path = write_results(NAME + ("_quick" if args.quick else ""), payload)
    plot(payload, path.with_suffix(".png"))


if __name__ == "__main__":
    main()
