"""Private evaluation and description: skdp.metrics, skdp.stats and the ledger's
cross-validation against the exact numbers (Adult, KDDCup99).

Three studies:

* **Metrics.** Two models per dataset are fitted once on the training rows (scikit-learn's
  ``LogisticRegression(C=1e4)`` and ``ObjPertLogisticRegression(epsilon=1)``, fixed
  seed); each private metric of their predictions on the test rows is drawn 20 times
  (seeds 0..19) at epsilon 0.01, 0.1 and 1 (pure, Laplace noise), for two units: a row,
  and a person (the test rows grouped by ``bench_person_level``'s public rule, runs of 1
  to 20 rows of a fixed-seed permutation; ``max_rows_per_group=1``, so each person
  weighs 1). The figure is the median over the draws of the absolute error against the
  exact scikit-learn metric of the same predictions (for persons, with each row weighted
  ``1 / its person's rows``, the quantity the person-level metric estimates). Log loss
  is compared with scikit-learn's on probabilities clipped to ``[1e-4, 1 - 1e-4]`` (the
  default public bound); MSE and R^2 treat the positive-class probability as a
  prediction of the 0/1 label (``y_bound=1``; R^2 is then Efron's pseudo-R^2); the AUC
  is compared with scikit-learn's on the raw scores (the 32 public bins' rounding is
  part of the error). Calibration: each of the default 5 equal bins, both curves.
* **Table 1** of Adult's training rows (7 columns and the label) at a total epsilon of
  1 (``skdp.stats.describe``: ``1 / 9`` to the count and to each column), one draw
  beside the exact table, and each entry's median absolute error over 20 draws.
* **Cross-validation** of ``ObjPertLogisticRegression`` in a ``PrivacyLedger`` of total
  epsilon 2: 5 folds by public coins, each fit at epsilon 0.45 and each fold's accuracy
  at 0.2 (``4 x 0.45 + 0.2 = 2``), against scikit-learn's exact ``cross_val_score`` of
  the same estimator on the same folds; two runs, each with fresh noise.

Run ``python -m benchmarks.bench_metrics [--quick]`` (a few minutes; ``--quick``: 5
draws, Adult only, one cross-validation on a subsample).
"""

import argparse
import time
import warnings

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import (accuracy_score, balanced_accuracy_score, brier_score_loss,
                             log_loss, mean_squared_error, r2_score, roc_auc_score)
from sklearn.model_selection import PredefinedSplit, cross_val_score

from skdp import ObjPertLogisticRegression, PrivacyLedger
from skdp.datasets import load_adult, load_kddcup99
from skdp.datasets._loaders import ADULT_NUMERIC_BOUNDS
from skdp.metrics import (private_accuracy_score, private_balanced_accuracy_score,
                          private_brier_score_loss, private_calibration_curve,
                          private_log_loss, private_mean_squared_error, private_r2_score,
                          private_roc_auc_score)
from skdp.model_selection._ledger_analysis import _folds
from skdp.stats import describe

from ._common import write_results
from .bench_person_level import visit_persons

NAME = "metrics"
EPSILONS = (0.01, 0.1, 1.0)
UNITS = ("rows", "persons")
CALIBRATION_BINS = 5
LOG_LOSS_FLOOR = 1e-4
MODEL_SEED = 0
GOAL = {"epsilon": 0.1, "accuracy": 0.002, "brier_score_loss": 0.002, "roc_auc": 0.01,
        "calibration_bin": 0.02}
TABLE_EPSILON = 1.0
TABLE_COLUMNS = {"age": {"bounds": [0.0, ADULT_NUMERIC_BOUNDS["age"]]},
                 "education-num": {"bounds": [0.0, ADULT_NUMERIC_BOUNDS["education-num"]]},
                 "hours-per-week": {"bounds": [0.0, ADULT_NUMERIC_BOUNDS["hours-per-week"]]},
                 "capital-gain": {"bounds": [0.0, ADULT_NUMERIC_BOUNDS["capital-gain"]]},
                 "sex": {"categories": ["Female", "Male"]},
                 "race": {"categories": ["White", "Black", "Asian-Pac-Islander",
                                         "Amer-Indian-Eskimo", "Other"]},
                 "marital-status": {"categories": [
                     "Married-civ-spouse", "Never-married", "Divorced", "Separated",
                     "Widowed", "Married-spouse-absent", "Married-AF-spouse"]}}
TABLE_SCHEMA = {"label": {"name": "income", "classes": ["<=50K", ">50K"]},
                "columns": TABLE_COLUMNS}
CV = {"total_epsilon": 2.0, "folds": 5, "fit_epsilon": 0.45, "score_epsilon": 0.2,
      "scoring": "accuracy", "coin_seed": 20261202}
MODELS = {  # keys without "=" (the docs' :benchmark: role reads "=" as a selector)
    "LogisticRegression": lambda: LogisticRegression(C=1e4, max_iter=2000),
    "ObjPertLogisticRegression": lambda: ObjPertLogisticRegression(
        epsilon=1.0, data_norm=1.0, random_state=MODEL_SEED)}
MODEL_PARAMS = {"LogisticRegression": "C=1e4 (non-private)",
                "ObjPertLogisticRegression": "epsilon=1, data_norm=1"}


# -- the metrics: private draws against the exact scikit-learn values --------------------

def _scalar_metrics(y01, proba):
    """``name -> (private function of (epsilon, weights, groups, seed), exact function of
    sample_weight)`` for the metrics that release one number."""
    pred = (proba > 0.5).astype(int)
    clipped = np.clip(proba, LOG_LOSS_FLOOR, 1 - LOG_LOSS_FLOOR)
    private = {
        "accuracy": lambda **kw: private_accuracy_score(y01, pred, **kw),
        "balanced_accuracy": lambda **kw: private_balanced_accuracy_score(y01, pred, **kw),
        "roc_auc": lambda **kw: private_roc_auc_score(y01, proba, labels=[0, 1], **kw),
        "brier_score_loss": lambda **kw: private_brier_score_loss(y01, proba, labels=[0, 1],
                                                                  **kw),
        "log_loss": lambda **kw: private_log_loss(y01, proba, labels=[0, 1], **kw),
        "mean_squared_error": lambda **kw: private_mean_squared_error(y01, proba, y_bound=1.0,
                                                                      **kw),
        "r2": lambda **kw: private_r2_score(y01, proba, y_bound=1.0, **kw),
    }
    exact = {
        "accuracy": lambda w: accuracy_score(y01, pred, sample_weight=w),
        "balanced_accuracy": lambda w: balanced_accuracy_score(y01, pred, sample_weight=w),
        "roc_auc": lambda w: roc_auc_score(y01, proba, sample_weight=w),
        "brier_score_loss": lambda w: brier_score_loss(y01, proba, sample_weight=w),
        "log_loss": lambda w: log_loss(y01, clipped, sample_weight=w, labels=[0, 1]),
        "mean_squared_error": lambda w: mean_squared_error(y01, proba, sample_weight=w),
        "r2": lambda w: r2_score(y01, proba, sample_weight=w),
    }
    return private, exact


def exact_calibration(y01, proba, weights, n_bins=CALIBRATION_BINS):
    """Each equal bin's weighted share of positives and mean probability, binned as
    scikit-learn's ``calibration_curve`` (``(a, b]``, the first bin closed), and its
    weight."""
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    bins = np.searchsorted(edges[1:-1], proba, side="left")
    weight = np.bincount(bins, weights=weights, minlength=n_bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        true = np.bincount(bins, weights=weights * y01, minlength=n_bins) / weight
        pred = np.bincount(bins, weights=weights * proba, minlength=n_bins) / weight
    return true, pred, weight


def _median_error(draws, exact):
    errors = np.abs(np.asarray(draws, dtype=float) - exact)
    return {"median_abs_error": float(np.median(errors)),
            "p90_abs_error": float(np.quantile(errors, 0.9)),
            "mean_stated_noise_std": None}


def evaluate_model(y01, proba, persons, draws):
    """The median absolute errors of every metric, per unit and epsilon."""
    private, exact = _scalar_metrics(y01, proba)
    results = {}
    for unit in UNITS:
        groups = persons if unit == "persons" else None
        # each person weighs 1: a row 1 / its person's rows
        weights = (1.0 / np.bincount(persons)[persons] if groups is not None
                   else np.ones(len(y01)))
        exact_values = {name: float(f(weights)) for name, f in exact.items()}
        cal_true, cal_pred, cal_weight = exact_calibration(y01, proba, weights)
        cells = {}
        for epsilon in EPSILONS:
            cell = {}
            for name, function in private.items():
                estimates = [function(epsilon=epsilon, groups=groups, random_state=seed)
                             for seed in draws]
                cell[name] = _median_error([float(e) for e in estimates], exact_values[name])
                cell[name]["mean_stated_noise_std"] = float(np.mean(
                    [e.noise_std for e in estimates]))
            curves = [private_calibration_curve(y01, proba, bins=CALIBRATION_BINS,
                                                labels=[0, 1], epsilon=epsilon, groups=groups,
                                                random_state=seed) for seed in draws]
            for curve, exact_curve in (("calibration_true", cal_true),
                                       ("calibration_pred", cal_pred)):
                which = 0 if curve == "calibration_true" else 1
                cell[curve] = [_median_error([c[which].values[k] for c in curves],
                                             exact_curve[k])
                               for k in range(CALIBRATION_BINS)]
            cells[str(epsilon)] = cell
        results[unit] = {"exact": exact_values,
                         "calibration_exact": {"true": cal_true, "pred": cal_pred,
                                               "weight": cal_weight},
                         "errors": cells}
    return results


def goal_check(result):
    """The goal at epsilon 0.1 on the rows: each figure against its bound."""
    cell = result["rows"]["errors"][str(GOAL["epsilon"])]
    checks = {name: cell[name]["median_abs_error"] for name in
              ("accuracy", "brier_score_loss", "roc_auc")}
    checks["calibration_bin"] = max(bin_["median_abs_error"]
                                    for curve in ("calibration_true", "calibration_pred")
                                    for bin_ in cell[curve])
    return {name: {"error": value, "bound": GOAL[name], "met": bool(value <= GOAL[name])}
            for name, value in checks.items()}


def metrics_study(datasets, draws):
    results = {}
    for dataset, bunch in datasets.items():
        y01_test = (bunch.y_test == 1).astype(int)
        persons = visit_persons(len(y01_test))
        results[dataset] = {"test_rows": int(len(y01_test)),
                            "test_persons": int(persons.max() + 1),
                            "base_rate": float(y01_test.mean()), "models": {}}
        for model_name, make in MODELS.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = make().fit(bunch.X_train, bunch.y_train)
            proba = model.predict_proba(bunch.X_test)[:, list(model.classes_).index(1)]
            result = evaluate_model(y01_test, proba, persons, draws)
            result["goal"] = goal_check(result)
            results[dataset]["models"][model_name] = result
            print(dataset, model_name, {k: v["met"] for k, v in result["goal"].items()},
                  flush=True)
    return results


# -- Table 1 ------------------------------------------------------------------------------

def adult_cohort():
    """Adult's training rows, the Table 1's columns and the label as text."""
    raw = load_adult(as_frame=True)
    frame = raw.X_train[list(TABLE_COLUMNS)].copy()
    frame["income"] = np.where(raw.y_train == 1, ">50K", "<=50K")
    return frame


def table_study(draws):
    frame = adult_cohort()
    exact = describe(frame, TABLE_SCHEMA, epsilon=np.inf)
    tables = [describe(frame, TABLE_SCHEMA, epsilon=TABLE_EPSILON, random_state=seed)
              for seed in draws]
    value = {"N": "count"}

    def column(index):
        return value.get(index[0], "mean" if index[0] in exact["mean"].dropna() else "share")

    rows = []
    for index in exact.index:
        kind = column(index)
        draws_of = np.array([t.loc[index, kind] for t in tables])
        rows.append({"variable": index[0], "level": index[1], "statistic": kind,
                     "exact": float(exact.loc[index, kind]),
                     "private": float(tables[0].loc[index, kind]),
                     "noise_std": float(tables[0].loc[index, "noise_std"]),
                     "median_abs_error": float(np.median(np.abs(draws_of
                                                                - exact.loc[index, kind])))})
    return {"rows": len(frame), "epsilon": TABLE_EPSILON,
            "epsilon_per_release": float(tables[0]["epsilon"].iloc[0]), "table": rows}


# -- cross-validation ---------------------------------------------------------------------

def cross_validation_study(datasets, repeats):
    results = {}
    for dataset, bunch in datasets.items():
        X, y = bunch.X_train, bunch.y_train
        estimator = ObjPertLogisticRegression(epsilon=CV["fit_epsilon"], data_norm=1.0)
        folds = _folds(len(y), None, CV["folds"], CV["coin_seed"])  # the ledger's folds
        runs = []
        for _ in range(repeats):
            ledger = PrivacyLedger(CV["total_epsilon"])
            start = time.perf_counter()
            private = ledger.cross_validate(
                estimator, X, y, cv=CV["folds"], scoring=CV["scoring"],
                epsilon=CV["score_epsilon"], cv_random_state=CV["coin_seed"])
            private_s = time.perf_counter() - start
            start = time.perf_counter()
            exact = cross_val_score(estimator, X, y, cv=PredefinedSplit(folds))
            exact_s = time.perf_counter() - start
            report = ledger.report()
            runs.append({"private": [float(s) for s in private["test_score"]],
                         "noise_std": [s.noise_std for s in private["test_score"]],
                         "exact": exact.tolist(), "private_mean": float(np.mean(
                             [float(s) for s in private["test_score"]])),
                         "exact_mean": float(exact.mean()),
                         "spent": report["spent"], "statement": report["statement"],
                         "private_s": private_s, "exact_s": exact_s})
            print(dataset, "cv", runs[-1]["private_mean"], runs[-1]["exact_mean"], flush=True)
        results[dataset] = {"rows": int(len(y)), "fold_rows": np.bincount(folds).tolist(),
                            "runs": runs}
    return results


# -- the figure ---------------------------------------------------------------------------

def plot(payload, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    datasets = list(payload["metrics"])
    fig, axes = plt.subplots(1, len(datasets), figsize=(4.5 * len(datasets), 3.6),
                             squeeze=False)
    model = next(iter(MODELS))
    for ax, dataset in zip(axes[0], datasets):
        result = payload["metrics"][dataset]["models"][model]
        for unit, style in zip(UNITS, ("-", "--")):
            errors = result[unit]["errors"]
            for name, colour in (("accuracy", "C0"), ("roc_auc", "C1"),
                                 ("brier_score_loss", "C2"), ("calibration_true", "C3")):
                if name.startswith("calibration"):
                    values = [max(b["median_abs_error"] for b in errors[str(e)][name])
                              for e in EPSILONS]
                    label = "calibration (worst bin)"
                else:
                    values = [errors[str(e)][name]["median_abs_error"] for e in EPSILONS]
                    label = name
                ax.loglog(EPSILONS, values, style, color=colour, marker="o",
                          label=f"{label}, {unit}")
        ax.axvline(GOAL["epsilon"], color="k", lw=0.5)
        ax.set_xlabel("epsilon of the metric")
        ax.set_ylabel(f"median |error| over {len(payload['params']['draws'])} draws")
        ax.set_title(f"{dataset}, {model}", fontsize=9)
    axes[0][0].legend(fontsize=6, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    draws = list(range(5 if args.quick else 20))
    start = time.perf_counter()
    datasets = {"adult": load_adult()}
    if not args.quick:
        datasets["kddcup99"] = load_kddcup99()
    payload = {"params": {"epsilons": EPSILONS, "draws": draws, "units": UNITS,
                          "calibration_bins": CALIBRATION_BINS, "goal": GOAL,
                          "model_seed": MODEL_SEED, "models": MODEL_PARAMS,
                          "table_schema": TABLE_SCHEMA, "cv": CV,
                          "persons": "bench_person_level.visit_persons (runs of 1 to 20 "
                                     "rows of a fixed-seed permutation)"},
               "metrics": metrics_study(datasets, draws),
               "table1": table_study(draws)}
    cv_data = datasets
    if args.quick:
        bunch = datasets["adult"]
        cv_data = {"adult": type(bunch)(X_train=bunch.X_train[:6000],
                                        y_train=bunch.y_train[:6000])}
    payload["cross_validation"] = cross_validation_study(cv_data, 1 if args.quick else 2)
    payload["runtime_seconds"] = time.perf_counter() - start
    path = write_results(NAME + ("_quick" if args.quick else ""), payload)
    plot(payload, path.with_suffix(".png"))
    print("wrote", path, f"in {payload['runtime_seconds']:.0f} s")


if __name__ == "__main__":
    main()
