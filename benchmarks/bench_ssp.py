"""SSPLinearRegression against AdaSSP (Wang 2018, implemented from the paper), NAPPLasso,
diffprivlib's LinearRegression (when it imports) and non-private least squares.

Tasks (public scaling only: every constant below is declared, none is measured on the
rows):

* ``diabetes``: scikit-learn's diabetes data (442 rows, 10 features, its published
  scaled form times 5, rows clipped to ``data_norm=1``), target ``(y - 150) / 100``,
  ``y_bound=2``;
* ``adult_age``: UCI Adult's age from the other 13 columns (:func:`~skdp.datasets.
  adult_preprocessor`, the age column dropped: 104 columns in [0, 1], ``data_norm=
  sqrt(13)`` clips nothing), target ``(age - 50) / 40`` (age documented in [17, 90]),
  ``y_bound=1``; official train/test split;
* ``synthetic``: ``d = 10`` features ``N(0, I / d)`` clipped to norm 1, a coefficient
  vector of norm 1, noise 0.1, ``y_bound=1``, ``n`` in a grid.

Every private method works on the same clipped, intercept-augmented design
(``intercept_scaling=1``) and clipped target, at ``delta = 1e-6`` (AdaSSP and SSP
Gaussian) or ``delta = 0`` (SSP pure, NAPPLasso), add/remove-one. Per cell: test MSE
and R^2 over ``draws`` noise draws (the data split is fixed). AdaSSP: the three
releases at ``(epsilon / 3, delta / 3)`` each with the classical Gaussian mechanism's
``sqrt(log(6 / delta)) / (epsilon / 3)`` factor, symmetric noise with unit-variance
entries, and its ridge ``max(0, sqrt(d log(6 / delta) log(2 d^2 / rho)) B^2 / (epsilon /
3) - lambda_tilde)`` (Algorithm 2 of the paper, ``rho = 0.05``).

Selection: ``EpsilonForUtility(SSPLinearRegression(...))`` on the synthetic task at
each of ``selection_sizes`` rows, on the routes of ``ROUTES`` (Gaussian or Laplace
noise, the utility's scale, the tests' rows), against each route's oracle epsilon and
beside its floor (``_selection_floor.py``).

Run ``python -m benchmarks.bench_ssp [--quick]`` from the repo root
(``--selection-only`` reruns the selection into the existing JSON, ``--accuracy-only``
the accuracy grid with the selection kept); writes ``results/ssp.json``
(``ssp_quick.json``). BLAS is limited to one thread.

Noise-dominated cells (AdaSSP's excess test MSE over least squares above least squares'
own) also get the floor of SSP's family on the same seeds (``_ssp_floor.py``), and the
JSON checks the issue's goals: SSP's test MSE at most AdaSSP's in 90 % of the cells, and
at most 0.9 times it in the noise-dominated cells, beside whether the family's oracle
reaches that there.
"""

import argparse
import json
import os
import time
import warnings

import numpy as np
from sklearn.datasets import load_diabetes
from threadpoolctl import threadpool_limits

from skdp import NAPPLasso, SSPLinearRegression
from skdp.accounting import gdp_mu
from skdp.datasets import adult_preprocessor, load_adult

from skdp.mechanisms._sufficient_statistics import SSPStatistics

from ._selection_floor import selection_floor
from ._ssp_floor import GOAL_RATIO, family_floor, noise_dominated
from ._common import RESULTS_DIR, environment, optional_import, summarise, write_results

NAME = "ssp"
DELTA = 1e-6
PARAMS = {"epsilons": [0.1, 0.3, 1.0, 3.0, 10.0], "draws": 20,
          "tasks": ["diabetes", "adult_age", "synthetic"],
          "synthetic_sizes": [1000, 10000, 100000], "napp": True,
          "selection_sizes": [5000, 50000], "selection_seeds": 20, "oracle_draws": 40}
QUICK = {"epsilons": [0.3, 3.0], "draws": 3, "synthetic_sizes": [2000], "napp": False,
         "selection_sizes": [5000], "selection_seeds": 2, "oracle_draws": 5}
ORACLE_GRID = 0.005 * 1.03 ** np.arange(300)
RHO = 0.05


def adassp(design, y, epsilon, delta, row_norm, y_bound, rng):
    """AdaSSP, Algorithm 2 of Wang (2018), on the clipped design and target."""
    d = design.shape[1]
    gram, moment = design.T @ design, design.T @ y
    if np.isinf(epsilon):
        return np.linalg.lstsq(gram, moment, rcond=None)[0]
    third = epsilon / 3.0
    factor = np.sqrt(np.log(6.0 / delta)) / third
    lam_min = np.linalg.eigvalsh(gram)[0]
    lam_tilde = max(lam_min + factor * row_norm**2 * rng.standard_normal()
                    - np.log(6.0 / delta) / third * row_norm**2, 0.0)
    lam = max(0.0, np.sqrt(d * np.log(6.0 / delta) * np.log(2.0 * d**2 / RHO))
              * row_norm**2 / third - lam_tilde)
    upper = np.triu(rng.standard_normal((d, d)))
    noise = upper + np.triu(upper, 1).T
    gram_hat = gram + factor * row_norm**2 * noise
    moment_hat = moment + factor * row_norm * y_bound * rng.standard_normal(d)
    return np.linalg.lstsq(gram_hat + lam * np.eye(d), moment_hat, rcond=None)[0]


def _clipped(X, data_norm):
    norms = np.linalg.norm(X, axis=1)
    return X * np.minimum(1.0, data_norm / np.maximum(norms, 1e-300))[:, None]


def load_task(task, n=None, seed=0):
    """``(X_train, y_train, X_test, y_test, data_norm, y_bound)``, publicly scaled."""
    if task == "diabetes":
        X, y = load_diabetes(return_X_y=True)
        X, y = 5.0 * X, (y - 150.0) / 100.0
        rng = np.random.default_rng(0)
        test = rng.permutation(len(y)) < len(y) // 3
        return X[~test], y[~test], X[test], y[test], 1.0, 2.0
    if task == "adult_age":
        data = load_adult(as_frame=True)
        prep = adult_preprocessor().fit(data.X_train)
        names = list(prep.get_feature_names_out())
        keep = [i for i, name in enumerate(names) if not name.endswith("age")]

        def split(frame):
            return (prep.transform(frame)[:, keep],
                    (frame["age"].to_numpy(dtype=float) - 50.0) / 40.0)
        X_train, y_train = split(data.X_train)
        X_test, y_test = split(data.X_test)
        return X_train, y_train, X_test, y_test, float(np.sqrt(13.0)), 1.0
    rng = np.random.default_rng(seed)
    d = 10
    coef = rng.standard_normal(d)
    coef /= np.linalg.norm(coef)

    def draw(m):
        X = _clipped(rng.standard_normal((m, d)) / np.sqrt(d), 1.0)
        return X, np.clip(X @ coef + 0.1 * rng.standard_normal(m), -1.0, 1.0)
    X_train, y_train = draw(n)
    X_test, y_test = draw(5000)
    return X_train, y_train, X_test, y_test, 1.0, 1.0


def make_estimator(method, epsilon, data_norm, y_bound, seed):
    """The skdp estimator of a method."""
    kw = dict(epsilon=epsilon, data_norm=data_norm, y_bound=y_bound, random_state=seed)
    if method == "ssp_gaussian":
        return SSPLinearRegression(delta=DELTA, **kw)
    if method == "ssp_pure":
        return SSPLinearRegression(delta=0.0, **kw)
    return NAPPLasso(alpha=1.0, coef_bound=4.0, **kw)


def scores(prediction, y_test):
    mse = float(np.mean((prediction - y_test) ** 2))
    return mse, float(1.0 - mse / np.mean((y_test - y_test.mean()) ** 2))


def run_cell(task_data, method, epsilon, draws):
    """Test MSE and R^2 of ``draws`` fits of one method at one epsilon."""
    X_train, y_train, X_test, y_test, data_norm, y_bound = task_data
    row_norm = np.hypot(data_norm, 1.0)
    design = np.c_[_clipped(X_train, data_norm), np.ones(len(X_train))]
    test_design = np.c_[_clipped(X_test, data_norm), np.ones(len(X_test))]
    target = np.clip(y_train, -y_bound, y_bound)
    mses, r2s, seconds = [], [], []
    for draw in range(draws):
        seed = 1000 * draw + int(round(100 * epsilon))
        start = time.perf_counter()
        if method == "adassp":
            theta = adassp(design, target, epsilon, DELTA, row_norm, y_bound,
                           np.random.default_rng(seed))
            prediction = test_design @ theta
        elif method == "diffprivlib":
            dpl = optional_import("diffprivlib")
            width = np.full(X_train.shape[1], data_norm)   # public bounds, as ours
            model = dpl.models.LinearRegression(
                epsilon=epsilon, bounds_X=(-width, width), bounds_y=(-y_bound, y_bound),
                random_state=seed).fit(X_train, target)
            prediction = model.predict(X_test)
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = make_estimator(method, epsilon, data_norm, y_bound, seed)
                prediction = model.fit(X_train, y_train).predict(X_test)
        seconds.append(time.perf_counter() - start)
        mse, r2 = scores(prediction, y_test)
        mses.append(mse)
        r2s.append(r2)
    return dict(mse=summarise(mses), r2=summarise(r2s), mse_draws=mses,
                median_seconds=float(np.median(seconds)))


def run_task(task_data, params, label):
    methods = ["ssp_gaussian", "ssp_pure", "adassp"] + (["napp"] if params["napp"] else [])
    if optional_import("diffprivlib") is not None:
        methods.append("diffprivlib")
    X_train, y_train, X_test, y_test, data_norm, y_bound = task_data
    exact = SSPLinearRegression(epsilon=np.inf, data_norm=data_norm, y_bound=y_bound)
    baseline = scores(exact.fit(X_train, y_train).predict(X_test), y_test)
    result = {"n_train": int(len(y_train)), "n_features": int(X_train.shape[1]),
              "data_norm": data_norm, "y_bound": y_bound,
              "nonprivate": {"mse": baseline[0], "r2": baseline[1]}, "cells": {}}
    for epsilon in params["epsilons"]:
        cell = {}
        for method in methods:
            cell[method] = run_cell(task_data, method, epsilon, params["draws"])
            print(f"{label} eps={epsilon} {method}: R^2 {cell[method]['r2']['mean']:.3f}",
                  flush=True)
        cell["ssp_over_adassp_mse"] = (cell["ssp_gaussian"]["mse"]["mean"]
                                       / cell["adassp"]["mse"]["mean"])
        cell["noise_dominated"] = bool(noise_dominated(cell["adassp"]["mse"]["mean"],
                                                       baseline[0]))
        if cell["noise_dominated"]:
            cell["floor"] = cell_floor(task_data, epsilon, params["draws"],
                                       cell["adassp"]["mse"]["mean"], baseline[0])
        result["cells"][str(epsilon)] = cell
    return result


def cell_floor(task_data, epsilon, draws, adassp_mse, ols_mse):
    """The family's oracles in a noise-dominated cell (``_ssp_floor.py``) on the
    benchmark's own seeds, beside the signal: what least squares gains over predicting
    0."""
    X_train, y_train, X_test, y_test, data_norm, y_bound = task_data
    design = np.c_[_clipped(X_train, data_norm), np.ones(len(X_train))]
    target = np.clip(y_train, -y_bound, y_bound)
    statistics = SSPStatistics.from_sums(design.T @ design, design.T @ target)
    test_design = np.c_[_clipped(X_test, data_norm), np.ones(len(X_test))]
    seeds = [1000 * draw + int(round(100 * epsilon)) for draw in range(draws)]
    floor = family_floor(statistics, test_design, y_test, epsilon=epsilon, delta=DELTA,
                         data_norm=data_norm, y_bound=y_bound, seeds=seeds,
                         adassp_mse=adassp_mse)
    floor["signal"] = float(np.mean(y_test**2) - ols_mse)
    return floor


def noise_dominated_goal(tasks):
    """The issue's goal where the noise dominates: SSP's test MSE at most
    ``GOAL_RATIO`` times AdaSSP's, per cell beside whether the family's oracle reaches
    it (at the shipped split; at the best split)."""
    cells = [dict(task=task, epsilon=float(epsilon), ratio=cell["ssp_over_adassp_mse"],
                  met=cell["ssp_over_adassp_mse"] <= GOAL_RATIO,
                  reachable=cell["floor"]["ratios"]["shipped_split"] <= GOAL_RATIO,
                  reachable_any_split=cell["floor"]["ratios"]["best_split"] <= GOAL_RATIO)
             for task, result in tasks.items() for epsilon, cell in result["cells"].items()
             if cell.get("noise_dominated")]
    reachable = [c for c in cells if c["reachable"]]
    return dict(cells=cells, noise_dominated=len(cells), met=sum(c["met"] for c in cells),
                reachable=len(reachable), met_where_reachable=sum(c["met"] for c in reachable),
                goal_ratio=GOAL_RATIO)


def bounded_utility(model, X, y, y_bound, scale=None):
    """The selection's per-row utility ``1 - min(1, (y - y_hat)^2 / s^2)`` (``s`` the
    public ``utility_scale``, by default ``2 y_bound``), averaged over the held-out rows."""
    scale = 2.0 * y_bound if scale is None else scale
    error = np.clip(y, -y_bound, y_bound) - model.predict(X)
    return float(np.mean(1.0 - np.minimum(1.0, error**2 / scale**2)))


UTILITY_SCALE = 0.5
"""The public error scale of the selection's routes: declared from the synthetic task's
design (noise 0.1 on a signal of standard deviation about 0.3), never measured on the
rows. The target (80 % of the way from predicting 0 to the non-private fit) is then a
clipped root mean squared error of about 0.15, a third of the scale."""

ROUTES = {
    "Gaussian, held-out, scale 2 y_bound": dict(delta=DELTA, scale=None, test_rows="held_out"),
    "Gaussian, held-out": dict(delta=DELTA, scale=UTILITY_SCALE, test_rows="held_out"),
    "Gaussian, all rows": dict(delta=DELTA, scale=UTILITY_SCALE, test_rows="all"),
    "Laplace, held-out": dict(delta=0.0, scale=UTILITY_SCALE, test_rows="held_out"),
    "Laplace, all rows": dict(delta=0.0, scale=UTILITY_SCALE, test_rows="all"),
    "Laplace, held-out, persons of 2 rows": dict(delta=0.0, scale=UTILITY_SCALE,
                                                 test_rows="held_out", person_rows=2),
}
"""The selection's routes: SSP's noise (Gaussian at ``DELTA`` or Laplace), the utility's
scale and where the tests read (``test_rows``); every other parameter the default.
``person_rows``: ``groups`` of that many consecutive rows (a public rule) and
``max_rows_per_group`` equal to it, so that the oracle and the selection are the
person-level fit (each row weighing 1, the noise that of a person's rows)."""


def oracle_curve(X, y, X_test, y_test, base, scale, draws, target, groups=None):
    """The mean test utility of one fit on all the rows (with ``groups``, person-level)
    over ``ORACLE_GRID`` (``draws`` seeds), from its start to six times the first
    epsilon that meets ``target``; ``(epsilons, utilities)``."""
    fit = {} if groups is None else {"groups": groups}
    epsilons, utilities, oracle = [], [], None
    for epsilon in ORACLE_GRID:
        if oracle is not None and epsilon > 6 * oracle:
            break
        utilities.append(float(np.mean([bounded_utility(
            SSPLinearRegression(epsilon=epsilon, random_state=s, **base).fit(X, y, **fit),
            X_test,
            y_test, base["y_bound"], scale) for s in range(draws)])))
        epsilons.append(float(epsilon))
        if oracle is None and utilities[-1] >= target:
            oracle = epsilon
    return np.array(epsilons), np.array(utilities)


def _route_tests(route, epsilon_max, epsilon_start, delta):
    """``(count, test_ratio)`` the selection uses on a route under its defaults (for the
    floor): the count's budget (epsilon, or ``mu`` for Gaussian tests on all the rows)
    and a test's budget per unit of its rung's increment."""
    from skdp.model_selection._selection_tests import (GAUSSIAN_COUNT_RATIO,
                                                       PURE_ALL_ROWS_TEST_RATIO,
                                                       regression_count_epsilon)
    if route == "held_out":
        return regression_count_epsilon(epsilon_max, 1.0, epsilon_start), 1.0
    if delta > 0:
        return GAUSSIAN_COUNT_RATIO * gdp_mu(epsilon_start, delta), 1.0
    return PURE_ALL_ROWS_TEST_RATIO * epsilon_start, PURE_ALL_ROWS_TEST_RATIO


def run_route(task, route, params, curves):
    """EpsilonForUtility(SSP) on one route against its oracle: the smallest epsilon of
    a fine grid (ratio 1.03) at which one fit on all the rows meets the target on
    average (``oracle_draws`` fits), with the floor of :func:`selection_floor`. The
    target is 80 % of the way from the utility of predicting 0 to the non-private
    fit's, on the route's scale. ``curves`` keeps the oracle curves already measured,
    by noise and scale."""
    from skdp import EpsilonForUtility

    X, y, X_test, y_test, data_norm, y_bound = task
    delta, scale, test_rows = route["delta"], route["scale"], route["test_rows"]
    base = dict(data_norm=data_norm, y_bound=y_bound, delta=delta)
    k = route.get("person_rows")
    groups = None if k is None else np.arange(len(y)) // k
    fit, units = ({}, len(y)) if k is None else ({"groups": groups}, len(y) // k)
    if k is not None:
        base["max_rows_per_group"] = float(k)
    exact = bounded_utility(SSPLinearRegression(epsilon=np.inf, **base).fit(X, y), X_test,
                            y_test, y_bound, scale)
    zero = bounded_utility(_Zero(), X_test, y_test, y_bound, scale)
    target = zero + 0.8 * (exact - zero)
    key = (delta, scale, k)
    if key not in curves:
        curves[key] = oracle_curve(X, y, X_test, y_test, base, scale,
                                   params["oracle_draws"], target, groups)
    epsilons, utilities = curves[key]
    oracle = float(epsilons[np.argmax(utilities >= target)])
    settings = dict(epsilon_start=oracle / 10, epsilon_max=100 * oracle)
    runs = []
    for seed in range(params["selection_seeds"]):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            search = EpsilonForUtility(SSPLinearRegression(**base), target_utility=target,
                                       utility_scale=scale, test_rows=test_rows,
                                       random_state=seed, **settings).fit(X, y, **fit)
        report = search.privacy_report_
        runs.append(dict(
            ex_post=report["ex_post"]["epsilon"],
            training=report["parts"]["training"]["ex_post"]["epsilon"],
            rungs=len(report["transcript"]["rungs"]), stop=report["transcript"]["stop_reason"],
            utility=bounded_utility(search.best_estimator_, X_test, y_test, y_bound, scale)
            if hasattr(search, "best_estimator_") else None))
    tolerance = EpsilonForUtility().tolerance
    released = [run["utility"] for run in runs if run["utility"] is not None]
    count, test_ratio = _route_tests(test_rows, settings["epsilon_max"],
                                     settings["epsilon_start"], delta)
    floor = selection_floor(epsilons, utilities, target, oracle, n=units, delta=delta,
                            route=test_rows, count=count, test_ratio=test_ratio,
                            tolerance=tolerance, **settings)
    return dict(n=len(y), persons=units, delta=delta, utility_scale=scale, test_rows=test_rows,
                target=target, nonprivate_utility=exact, zero_utility=zero,
                oracle_epsilon=oracle, floor=floor, runs=runs,
                median_ratio=float(np.median([run["ex_post"] / oracle for run in runs])),
                share_released=len(released) / len(runs),
                share_released_meeting_target=float(np.mean(
                    [u is not None and u >= target for u in (r["utility"] for r in runs)])),
                share_released_within_tolerance=float(np.mean(
                    [u is not None and u >= target - tolerance
                     for u in (r["utility"] for r in runs)])))


class _Zero:
    """The constant prediction 0."""

    def predict(self, X):
        return np.zeros(len(X))


def run_selection(params, routes=None):
    """The routes of ``ROUTES`` (``routes``: these names only) on the synthetic task at
    each of ``selection_sizes``."""
    out = {}
    for n in params["selection_sizes"]:
        task, curves = load_task("synthetic", n=n), {}
        out[str(n)] = {name: run_route(task, route, params, curves)
                       for name, route in ROUTES.items() if routes is None or name in routes}
        for name, cell in out[str(n)].items():
            print(f"selection n={n} {name}: median ratio {cell['median_ratio']:.2f} "
                  f"(floor {cell['floor']['with_tests']:.2f}), meeting the target "
                  f"{cell['share_released_meeting_target']:.2f}", flush=True)
    return out


LABELS = {"ssp_gaussian": "SSP, Gaussian (ours)", "ssp_pure": "SSP, Laplace (ours, pure)",
          "adassp": "AdaSSP (paper)", "napp": "NAPPLasso (pure)", "diffprivlib": "diffprivlib"}


def plot(payload, path):
    """Test R^2 against epsilon, one panel per task, the non-private fit dashed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = payload["tasks"]
    fig, axes = plt.subplots(1, len(tasks), figsize=(3.2 * len(tasks), 3.2), squeeze=False)
    for ax, (task, result) in zip(axes[0], tasks.items()):
        epsilons = [float(e) for e in result["cells"]]
        for method, label in LABELS.items():
            if method in next(iter(result["cells"].values())):
                ax.plot(epsilons, [cell[method]["r2"]["mean"] for cell in
                                   result["cells"].values()], marker="o", label=label)
        ax.axhline(result["nonprivate"]["r2"], color="k", ls="--", lw=1, label="non-private")
        ax.set_xscale("log")
        ax.set_ylim(-0.2, 1.0)
        ax.set_xlabel("epsilon")
        ax.set_title(f"{task} (n={result['n_train']:,})", fontsize=9)
    axes[0][0].set_ylabel("test R^2 (mean of draws)")
    axes[0][0].legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def run_tasks(params):
    """Every task's cells (the synthetic task at each of ``synthetic_sizes``)."""
    tasks = {}
    for task in params["tasks"]:
        if task == "synthetic":
            for n in params["synthetic_sizes"]:
                tasks[f"synthetic_n{n}"] = run_task(load_task(task, n=n), params,
                                                    f"synthetic n={n}")
        else:
            tasks[task] = run_task(load_task(task), params, task)
    return tasks


def accuracy_goals(tasks):
    """The issue's two accuracy goals from the cells: the share of cells where SSP's
    test MSE is at most AdaSSP's, and :func:`noise_dominated_goal`."""
    cells = [cell["ssp_over_adassp_mse"] for result in tasks.values()
             for cell in result["cells"].values()]
    return dict(share_of_cells_ssp_at_most_adassp=float(np.mean(np.array(cells) <= 1.0)),
                noise_dominated_goal=noise_dominated_goal(tasks))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="reduced run (about a minute)")
    parser.add_argument("--tasks", nargs="+", default=None, choices=PARAMS["tasks"])
    parser.add_argument("--plot-only", action="store_true",
                        help="redraw the figure from the existing JSON")
    parser.add_argument("--selection-only", action="store_true",
                        help="rerun the selection study only, into the existing JSON")
    parser.add_argument("--accuracy-only", action="store_true",
                        help="rerun the accuracy grid (every task and epsilon, with the "
                             "floors of the noise-dominated cells) into the existing JSON, "
                             "its selection study kept")
    parser.add_argument("--routes", nargs="+", default=None, choices=list(ROUTES),
                        help="with --selection-only: rerun these routes only, the others "
                             "kept from the existing JSON")
    args = parser.parse_args(argv)
    if args.plot_only:
        path = RESULTS_DIR / f"{NAME}{'_quick' if args.quick else ''}.json"
        plot(json.loads(path.read_text()), path.with_suffix(".png"))
        return
    if args.selection_only:
        path = RESULTS_DIR / f"{NAME}{'_quick' if args.quick else ''}.json"
        payload = json.loads(path.read_text())
        params = {**PARAMS, **QUICK} if args.quick else dict(PARAMS)
        start = time.perf_counter()
        with threadpool_limits(1):
            selection = run_selection(params, args.routes)
        for n, routes in selection.items():
            payload.setdefault("selection", {}).setdefault(n, {}).update(routes)
        payload["selection_runtime_seconds"] = time.perf_counter() - start
        payload["selection_load_average"] = list(os.getloadavg())
        payload.pop("benchmark", None)
        payload.pop("environment", None)
        write_results(path.stem, payload)
        return
    params = {**PARAMS, **QUICK} if args.quick else dict(PARAMS)
    params["tasks"] = list(args.tasks or params["tasks"])
    name = f"{NAME}_quick" if args.quick else NAME
    start = time.perf_counter()
    with threadpool_limits(1):
        tasks = run_tasks(params)
        if args.accuracy_only:
            kept = json.loads((RESULTS_DIR / f"{name}.json").read_text())
            selection = kept.get("selection", {})
            extra = {k: kept[k] for k in ("selection_runtime_seconds",
                                          "selection_load_average") if k in kept}
        else:
            selection, extra = run_selection(params), {}
    payload = dict(params=params, delta=DELTA, tasks=tasks, selection=selection,
                   **accuracy_goals(tasks), runtime_seconds=time.perf_counter() - start,
                   load_average=list(os.getloadavg()), **extra)
    path = write_results(name, payload)
    plot(payload, path.with_suffix(".png"))
    print(f"wrote {path}; environment {environment()['git_sha']}")


if __name__ == "__main__":
    main()
