"""One cap on the whole private search: EpsilonForUtility at its defaults, on every cohort.

``EpsilonForUtility`` (private selection) spends within one public cap ``epsilon_max``
(and ``delta_max``): the a priori guarantee is the cap on every run, the ex-post one is
what the run realised. This script shows it on UCI Adult, in two parts.

* **Cohorts** (``cohorts``): subsamples of Adult's training rows of n = 100, 300,
  1000, 3000 and the whole training split; ``EpsilonForUtility()`` at its defaults
  (``ObjPertLogisticRegression()``, target 0.8) with ``epsilon_max`` = 1 and 10,
  ``random_state`` = repetition seed 0..49. Each repetition draws a fresh subsample
  by a public rule: the rows ``numpy.random.default_rng((SUBSAMPLE_SEED, n,
  seed)).choice(n_train, n, replace=False)`` (the whole split: every row, every
  repetition). Per run: the realised (ex-post) and a priori epsilon of the whole
  search, whether a model was released, the stop reason, the released model's test
  accuracy, the test's resolution from ``privacy_report_["resolution"]`` and the
  number of fits.
* **Estimators** (``estimators``): on the whole training split, every private
  classifier at its defaults (and a few documented variants), alone and after public
  preprocessing in a ``Pipeline`` (``BoundedScaler(lower=0, upper=1)``, which maps
  Adult's [0, 1] features onto themselves), ``epsilon_max=10``, target 0.8, seeds
  0..4; and ``NAPPLasso`` on a public synthetic regression
  (:func:`regression_data`), whose private utility is ``1 - min(1, (y - y_hat)^2 /
  (4 y_bound^2))``, against a stated target.

The script asserts, run by run, that the ex-post figures never exceed the a priori
ones and that the a priori epsilon is the cap. Run ``python -m
benchmarks.bench_selection_cap [--quick] [--n-jobs N]`` (``--quick``: a smoke run of
a few seeds and sizes, written to ``selection_cap_quick.json``).
"""

import argparse
import subprocess
import time
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
from sklearn.datasets import make_regression
from sklearn.pipeline import make_pipeline

from skdp import (DPSGDClassifier, EpsilonForUtility, NAPPLasso, NAPPLassoClassifier,
                  ObjPertLogisticRegression, OutputPertSVM)
from skdp.datasets import load_adult
from skdp.preprocessing import BoundedScaler

from . import _common

NAME = "selection_cap"
SUBSAMPLE_SEED = 20261126
HALF_POINT = 0.005
CAPS = (1.0, 10.0)
FULL = {"sizes": [100, 300, 1000, 3000, None], "cohort_seeds": list(range(50)),
        "estimator_seeds": list(range(5))}
QUICK = {"sizes": [100, 1000, None], "cohort_seeds": [0, 1],
         "estimator_seeds": [0]}
# The figures for the previous design (epsilon_max=1), quoted, not measured here.
PREVIOUS_DESIGN = {
    "epsilon_max": 1.0,
    "median_realised_loss": {"100": 79.0, "300": 26.0, "1000": 7.2, "3000": 2.5},
    "max_realised_loss": 1897.0,
    "source": "issue text: \"With epsilon_max=1, the median realised loss was 79 / 26 / "
              "7.2 / 2.5 at n = 100 / 300 / 1000 / 3000 (max 1897)\"",
}
CLASSIFIERS = {
    "ObjPertLogisticRegression()": ObjPertLogisticRegression,
    "ObjPertLogisticRegression(delta=1e-5)": lambda: ObjPertLogisticRegression(delta=1e-5),
    "OutputPertSVM()": OutputPertSVM,
    "OutputPertSVM(noise=\"laplace\")": lambda: OutputPertSVM(noise="laplace"),
    "OutputPertSVM(delta=1e-5)": lambda: OutputPertSVM(delta=1e-5),
    "DPSGDClassifier()": DPSGDClassifier,
    "DPSGDClassifier(sample_rate=1.0)": lambda: DPSGDClassifier(sample_rate=1.0),
    "NAPPLassoClassifier()": NAPPLassoClassifier,
}
PREPROCESSING = "make_pipeline(BoundedScaler(lower=0.0, upper=1.0), E)"
# The regression: public synthetic data, scaled by public constants.
REGRESSION = {"n_samples": 30000, "n_train": 22500, "n_features": 10, "n_informative": 5,
              "noise": 10.0, "random_state": 0, "x_scale": 1 / 6, "y_scale": 1 / 300,
              "y_bound": 1.0, "coef_bound": 3.0, "target": 0.99}
REGRESSOR = f"NAPPLasso(y_bound={REGRESSION['y_bound']}, coef_bound={REGRESSION['coef_bound']})"


# -- data ----------------------------------------------------------------------------------

def subsample_rows(n_train, n, seed):
    """The public subsample of ``n`` of ``n_train`` rows for one repetition.

    Parameters
    ----------
    n_train : int
        Number of training rows.
    n : int or None
        Subsample size; ``None`` means every row.
    seed : int
        The repetition's seed.

    Returns
    -------
    rows : ndarray of int
        Sorted row indices.
    """
    if n is None:
        return np.arange(n_train)
    rng = np.random.default_rng((SUBSAMPLE_SEED, n, seed))
    return np.sort(rng.choice(n_train, size=n, replace=False))


def regression_data():
    """The public synthetic regression, scaled by the public constants of ``REGRESSION``.

    Returns
    -------
    X_train, y_train, X_test, y_test : ndarray
        The first ``n_train`` rows and the rest (``make_regression`` draws i.i.d. rows).
    info : dict
        The scaled true coefficients' norm, and the bounded test utility of the
        prediction 0 and of the true coefficients.
    """
    p = REGRESSION
    X, y, coef = make_regression(n_samples=p["n_samples"], n_features=p["n_features"],
                                 n_informative=p["n_informative"], noise=p["noise"],
                                 coef=True, random_state=p["random_state"])
    X, y = X * p["x_scale"], y * p["y_scale"]
    theta = coef * p["y_scale"] / p["x_scale"]
    k = p["n_train"]
    info = {"true_coef_norm": float(np.linalg.norm(theta)),
            "rows_with_norm_above_1": float(np.mean(np.linalg.norm(X, axis=1) > 1.0)),
            "targets_clipped_by_y_bound": float(np.mean(np.abs(y) > p["y_bound"])),
            "test_utility_of_zero": bounded_utility(np.zeros(len(y) - k), y[k:]),
            "test_utility_of_true_coef": bounded_utility(X[k:] @ theta, y[k:])}
    return X[:k], y[:k], X[k:], y[k:], info


def bounded_utility(prediction, y, y_bound=REGRESSION["y_bound"]):
    """Mean of ``1 - min(1, (y - y_hat)^2 / (4 y_bound^2))``, ``y`` clipped to the bound.

    Parameters
    ----------
    prediction, y : ndarray
        Predictions and targets.
    y_bound : float
        The public bound on ``|y|``.

    Returns
    -------
    utility : float
    """
    error = np.clip(y, -y_bound, y_bound) - prediction
    return float(np.mean(1.0 - np.minimum(1.0, error**2 / (4.0 * y_bound**2))))


# -- one search ------------------------------------------------------------------------------

def check_cap(report, epsilon_max, delta_max):
    """Assert that the run stayed within the cap and that the a priori figure is the cap.

    Parameters
    ----------
    report : dict
        ``privacy_report_`` of a private search.
    epsilon_max, delta_max : float
        The cap (``delta_max``: the a priori delta expected).
    """
    post, prior = report["ex_post"], report["a_priori"]
    assert prior["epsilon"] == epsilon_max, (prior, epsilon_max)
    assert prior["delta"] == delta_max, (prior, delta_max)
    assert post["epsilon"] <= prior["epsilon"], (post, prior)
    assert post["delta"] <= prior["delta"], (post, prior)


def run_search(estimator, X, y, X_test, y_test, epsilon_max, seed, score=None, **params):
    """Fit one private search and record what its report and the test split say.

    Parameters
    ----------
    estimator : estimator or None
        The estimator to wrap (``None``: the default).
    X, y : ndarray
        The private rows.
    X_test, y_test : ndarray
        The test split.
    epsilon_max : float
        The cap.
    seed : int
        ``random_state`` of the search.
    score : callable, default=None
        ``score(model, X_test, y_test)``; ``None``: the search's own score (accuracy).
    **params
        Other parameters of ``EpsilonForUtility`` (``target_utility``).

    Returns
    -------
    run : dict
    """
    search = EpsilonForUtility(estimator, epsilon_max=epsilon_max, random_state=seed,
                               **params)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # no release: UnreachableUtilityWarning
        search.fit(X, y)
    seconds = time.perf_counter() - start
    report = search.privacy_report_
    final = search._inner()
    final = final.steps[-1][1] if hasattr(final, "steps") else final
    check_cap(report, epsilon_max, float(final.get_params().get("delta", 0.0)))
    released = search.epsilon_ is not None
    if released:
        score = score or (lambda model, X_, y_: model.score(X_, y_))
        utility = float(score(search.best_estimator_, X_test, y_test))
    resolution = report["resolution"]
    return {"seed": seed, "ex_post": report["ex_post"], "a_priori": report["a_priori"],
            "released": released, "epsilon": search.epsilon_,
            "stop_reason": report["transcript"]["stop_reason"],
            "test_utility": utility if released else None,
            "test_noise_sd": resolution["test_noise_sd"],
            "sampling_sd": resolution["sampling_sd"], "total_sd": resolution["total_sd"],
            "noisy_validation_count": resolution["noisy_validation_count"],
            # the epsilon of the validation part's Laplace label counts (the report's
            "count_epsilon": report["parts"]["validation"]["count_epsilon"],
            "n_fits": search.n_fits_, "n_rungs": len(report["transcript"]["rungs"]),
            "fit_seconds": seconds}


# -- summaries -------------------------------------------------------------------------------

def summarise_runs(runs, target, expected_validation_rows=None):
    """The figures of one cell of runs.

    Parameters
    ----------
    runs : list of dict
        Runs from :func:`run_search`.
    target : float
        The target utility.
    expected_validation_rows : float, default=None
        ``validation_fraction * n``: the validation part's expected size. Given, the
        tests' noise is also restated on it (the report's figure is on the noisy
        count), with the count's own noise in rows.

    Returns
    -------
    summary : dict
    """
    post = np.array([r["ex_post"]["epsilon"] for r in runs])
    if expected_validation_rows is not None:
        m = float(expected_validation_rows)
        count_sd = np.sqrt(2.0) / np.median([r["count_epsilon"] for r in runs])
        at_expected = [r["test_noise_sd"] * max(r["noisy_validation_count"], 1.0) / m
                       for r in runs]
        expected = {"expected_validation_rows": m, "count_noise_sd_rows": float(count_sd),
                    "median_test_noise_sd_at_expected_rows": float(np.median(at_expected)),
                    "sampling_sd_at_expected_rows": float(np.sqrt(target * (1 - target) / m))}
    else:
        expected = {}
    released = [r["test_utility"] for r in runs if r["released"]]
    chosen = [r["epsilon"] for r in runs if r["released"]]
    within = [u >= target - HALF_POINT for u in released]
    return {
        "n_runs": len(runs),
        "ex_post_epsilon": {"median": float(np.median(post)),
                            "p90": float(np.percentile(post, 90)), "max": float(post.max())},
        "ex_post_delta_max": max(r["ex_post"]["delta"] for r in runs),
        "a_priori": sorted({(r["a_priori"]["epsilon"], r["a_priori"]["delta"]) for r in runs}),
        "released_share": len(released) / len(runs),
        "stop_reasons": dict(Counter(r["stop_reason"] for r in runs).most_common()),
        "mean_test_utility": float(np.mean(released)) if released else None,
        "min_test_utility": float(np.min(released)) if released else None,
        "within_half_point_of_runs": float(np.sum(within) / len(runs)),
        "within_half_point_of_released": float(np.mean(within)) if released else None,
        "chosen_epsilon": ({"median": float(np.median(chosen)), "min": float(np.min(chosen)),
                            "max": float(np.max(chosen))} if chosen else None),
        "median_test_noise_sd": float(np.median([r["test_noise_sd"] for r in runs])),
        "median_sampling_sd": float(np.median([r["sampling_sd"] for r in runs])),
        "median_total_sd": float(np.median([r["total_sd"] for r in runs])),
        "median_noisy_validation_count": float(np.median(
            [r["noisy_validation_count"] for r in runs])),
        "median_fits": float(np.median([r["n_fits"] for r in runs])),
        "median_rungs": float(np.median([r["n_rungs"] for r in runs])),
        "median_fit_seconds": (float(np.median([r["fit_seconds"] for r in runs]))
                               if "fit_seconds" in runs[0] else None),
        **expected,
    }


# -- part 1: cohorts --------------------------------------------------------------------------

def _cohort_run(seed, n, cap, X, y, X_test, y_test):
    rows = subsample_rows(len(y), n, seed)
    run = run_search(None, X[rows], y[rows], X_test, y_test, cap, seed)
    run.pop("fit_seconds")  # measured in parallel workers: not a timing
    return run


def cohort_study(data, sizes, seeds, n_jobs=1):
    """Part 1: the default search on subsamples of every size, under each cap.

    Parameters
    ----------
    data : tuple
        ``(X_train, y_train, X_test, y_test)`` of Adult.
    sizes : list of int or None
        Subsample sizes (``None``: the whole training split).
    seeds : list of int
        Repetition seeds.
    n_jobs : int, default=1
        joblib workers (the results do not depend on it).

    Returns
    -------
    cells : list of dict
        One per (size, cap): ``n``, ``epsilon_max``, ``summary`` and ``runs``.
    """
    X, y, X_test, y_test = data
    defaults = EpsilonForUtility()
    target = defaults.target_utility
    cells = []
    for n in sizes:
        for cap in CAPS:
            start = time.perf_counter()
            runs = _common.map_seeds(_cohort_run, seeds, n_jobs=n_jobs, n=n, cap=cap, X=X,
                                     y=y, X_test=X_test, y_test=y_test)
            size = len(y) if n is None else n
            summary = summarise_runs(runs, target, defaults.validation_fraction * size)
            cells.append({"n": size, "whole_split": n is None,
                          "epsilon_max": cap, "summary": summary, "runs": runs})
            print(f"n={n or len(y)} cap={cap:g}: median ex post "
                  f"{summary['ex_post_epsilon']['median']:.3g}, max "
                  f"{summary['ex_post_epsilon']['max']:.3g}, released "
                  f"{summary['released_share']:.2f}, {summary['stop_reasons']} "
                  f"({time.perf_counter() - start:.0f} s)", flush=True)
    return cells


# -- part 2: estimators ----------------------------------------------------------------------

def estimator_study(data, seeds, cap=10.0):
    """Part 2: every classifier, alone and in a Pipeline, on the whole training split.

    Parameters
    ----------
    data : tuple
        ``(X_train, y_train, X_test, y_test)`` of Adult.
    seeds : list of int
        Search seeds.
    cap : float, default=10.0
        ``epsilon_max``.

    Returns
    -------
    rows : list of dict
        One per (estimator, alone or Pipeline): ``summary`` and ``runs``.
    """
    X, y, X_test, y_test = data
    target = EpsilonForUtility().target_utility
    rows = []
    for label, make in CLASSIFIERS.items():
        for wrapped in (False, True):
            estimator = (make_pipeline(BoundedScaler(lower=0.0, upper=1.0), make())
                         if wrapped else make())
            runs = [run_search(estimator, X, y, X_test, y_test, cap, seed) for seed in seeds]
            rows.append(_estimator_row(label, wrapped, target, runs))
        rows[-1]["same_releases_as_bare"] = _releases(rows[-1]) == _releases(rows[-2])
    return rows


def _releases(row):
    """What a row's runs released, for comparing a Pipeline with the bare estimator."""
    return [(r["ex_post"], r["epsilon"], r["stop_reason"], r["test_utility"])
            for r in row["runs"]]


def regressor_study(seeds, cap=10.0):
    """Part 2, the regressor: NAPPLasso on the public synthetic regression.

    Parameters
    ----------
    seeds : list of int
        Search seeds.
    cap : float, default=10.0
        ``epsilon_max``.

    Returns
    -------
    row : dict
        As a row of :func:`estimator_study`, with the data's reference utilities.
    """
    X, y, X_test, y_test, info = regression_data()
    p = REGRESSION

    def score(model, X_, y_):
        return bounded_utility(model.predict(X_), y_)

    runs = [run_search(NAPPLasso(y_bound=p["y_bound"], coef_bound=p["coef_bound"]), X, y,
                       X_test, y_test, cap, seed, score=score, target_utility=p["target"])
            for seed in seeds]
    for epsilon in (0.1, 1.0, np.inf):  # non-private and fixed-epsilon references
        model = NAPPLasso(y_bound=p["y_bound"], coef_bound=p["coef_bound"], epsilon=epsilon,
                          random_state=0).fit(X, y)
        info[f"test_utility_at_epsilon_{epsilon:g}"] = score(model, X_test, y_test)
    row = _estimator_row(REGRESSOR, False, p["target"], runs)
    row.update(data="make_regression (see params.regression)", reference=info)
    return row


def _estimator_row(label, wrapped, target, runs):
    summary = summarise_runs(runs, target)
    print(f"{label}{' in a Pipeline' if wrapped else ''}: chosen {summary['chosen_epsilon']}, "
          f"ex post max {summary['ex_post_epsilon']['max']:.3g}, {summary['stop_reasons']}, "
          f"test {summary['mean_test_utility']}, {summary['median_fit_seconds']:.2f} s",
          flush=True)
    return {"estimator": label, "pipeline": PREPROCESSING if wrapped else None,
            "target": target, "summary": summary, "runs": runs}


# -- figure ----------------------------------------------------------------------------------

def plot(payload, path):
    """Realised loss of every cohort run against the cap, one panel per cap."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(CAPS), figsize=(11, 4), sharey=True)
    for ax, cap in zip(np.atleast_1d(axes), CAPS):
        cells = [c for c in payload["cohorts"] if c["epsilon_max"] == cap]
        values = [[r["ex_post"]["epsilon"] for r in c["runs"]] for c in cells]
        ax.boxplot(values, whis=(0, 100))
        ax.set_xticks(range(1, len(cells) + 1),
                      [f"{c['n']}" + (" (all)" if c["whole_split"] else "") for c in cells])
        ax.axhline(cap, color="r", ls="--", lw=1, label=f"cap epsilon_max = {cap:g}")
        previous = payload.get("previous_design", {})
        if previous.get("epsilon_max") == cap:
            quoted = [(k + 1, previous["median_realised_loss"].get(str(c["n"])))
                      for k, c in enumerate(cells)]
            quoted = [(x, v) for x, v in quoted if v is not None]
            ax.plot(*zip(*quoted), "kx", label="previous design, median (issue)")
        ax.set_yscale("log")
        ax.set_xlabel("training rows n")
        ax.set_title(f"epsilon_max = {cap:g}")
        ax.legend(loc="lower right", fontsize=8)
    np.atleast_1d(axes)[0].set_ylabel("realised (ex-post) epsilon of the search")
    seeds = payload["params"]["cohort_seeds"]
    environment = payload.get("environment") or _common.environment()
    fig.text(0.01, 0.01, _common.figure_footer(environment,
                                               f"{seeds[0]}..{seeds[-1]}", "add_remove"),
             fontsize=6)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(path, dpi=110)


# -- main ------------------------------------------------------------------------------------

def uncommitted_skdp_files():
    """The files under ``skdp/`` that differ from the recorded git revision.

    Returns
    -------
    files : list of str or None
        ``git status --porcelain`` lines for ``skdp/`` (``None`` without git): the
        numbers were measured on the revision plus these changes.
    """
    try:
        out = subprocess.run(["git", "status", "--porcelain", "--", "skdp"],
                             capture_output=True, text=True, check=True,
                             cwd=Path(__file__).resolve().parents[1]).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return [line.strip() for line in out.splitlines()]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke run (few seeds, sizes)")
    parser.add_argument("--n-jobs", type=int, default=1, help=_common.N_JOBS_HELP)
    args = parser.parse_args(argv)
    params = QUICK if args.quick else FULL
    start = time.perf_counter()
    adult = load_adult()
    data = (adult.X_train, adult.y_train, adult.X_test, adult.y_test)
    payload = {"params": {**params, "caps": list(CAPS), "subsample_seed": SUBSAMPLE_SEED,
                          "half_point": HALF_POINT, "target": EpsilonForUtility().target_utility,
                          "tolerance": EpsilonForUtility().tolerance,
                          "preprocessing": PREPROCESSING, "regression": REGRESSION,
                          "neighboring": "add/remove-one (the estimators' default)"},
               "previous_design": PREVIOUS_DESIGN,
               "uncommitted_skdp_files": uncommitted_skdp_files()}
    payload["cohorts"] = cohort_study(data, params["sizes"], params["cohort_seeds"],
                                      args.n_jobs)
    payload["estimators"] = estimator_study(data, params["estimator_seeds"])
    payload["estimators"].append(regressor_study(params["estimator_seeds"]))
    payload["runtime_seconds"] = time.perf_counter() - start
    path = _common.write_results(NAME + ("_quick" if args.quick else ""), payload)
    plot(payload, path.with_suffix(".png"))
    print(f"wrote {path} after {payload['runtime_seconds']:.0f} s", flush=True)


if __name__ == "__main__":
    main()
