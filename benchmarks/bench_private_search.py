"""Private hyperparameter search against the honest non-private search, at one total budget.

``PrivateGridSearchCV`` (random stopping: a secret random number of trials, each a
random candidate fitted with fresh noise and scored by a noisy bounded sum, only the
best released) spends one public whole-search budget ``E`` that covers the choice. This
script measures the test accuracy of the model it releases on UCI Adult and KDDCup99,
for objective perturbation, output perturbation and DP-SGD, against:

* the **honest baseline**: scikit-learn's ``GridSearchCV(est(epsilon=e_b), grid,
  cv=3)`` (refit=True) over the same hyperparameter grid, with every fit's epsilon
  ``e_b = E / (n_candidates * 3 + 1)`` so that its total by basic composition
  (``privacy_cost_of_search(search)["basic_epsilon"]``: every fold fit and the refit
  counted) is ``E``; for DP-SGD each fit also gets ``delta = 1e-5 / n_fits``, and a
  second baseline gives each fit the largest epsilon whose fits compose by Renyi to
  ``(E, 1e-5)`` (``privacy_cost_of_search``'s headline total for DP-SGD). Even so
  its choice is covered by no guarantee: the exact cross-validation scores that choose
  are not noised, only the fits are counted;
* the **best single configuration** (an oracle, no search cost paid): every value of
  the grid's hyperparameter at ``epsilon = E`` on the whole training split, mean test
  accuracy over the seeds; the best value's mean is the reference. The same at the
  param-only search's candidate epsilon ``cap`` (what each of its trials gets) splits
  the gap into the repetition's price (E against cap) and the selection's (noisy
  choice among candidates at cap). The non-private best (``epsilon = inf``, seed 0) is
  given for context.

Whole-search budgets ``E`` in {0.3, 1, 3}; 20 repetitions (seeds 0..19) per cell.
Two private searches per mechanism, both at their defaults apart from the grid,
``epsilon = E`` and ``random_state = seed`` (reproducibility mode; the search derives
an independent stream per trial): over ``(epsilon, C)`` (``(epsilon, learning_rate)``
for DP-SGD) with the grid's epsilons ``cap / 4, cap / 2, cap`` (DP-SGD: ``cap / 2,
cap``), ``cap = PrivateGridSearchCV(est, {"C": Cs}, epsilon=E).plan().candidate_epsilon``
the largest candidate epsilon the budget allows (under Renyi accounting the larger
grid's default mean number of trials, twice its size, costs more and the plan refuses
that cap: DP-SGD's ``cap`` is then the candidate epsilon of the ``learning_rate``-only
search at that mean number of trials); and over ``C`` (``learning_rate``) alone,
every candidate at the plan's ``candidate_epsilon`` (what a user usually runs).
Objective and output perturbation are pure (``delta = 0``, the search costs ``2 + 0``
trials under the default logarithmic law); DP-SGD is searched with ``delta = 1e-5``
(Renyi accounting).

The baseline's fits use ``random_state=None`` (fresh cryptographic noise for every
fold fit: scikit-learn clones the estimator, seed included, for every fold, so a seed
would give every fit the same noise): the baseline is therefore not reproducible run
to run; the private searches and the oracle are.

KDDCup99's default sample has 56,000 training rows; the script uses a public
subsample of ``KDD_ROWS`` of them (``numpy.random.default_rng(SUBSAMPLE_SEED)``, without
replacement, the same for every repetition and method) to keep output perturbation's
exact SVM fits within the run time; every test row is kept. Adult is used whole.

Run ``python -m benchmarks.bench_private_search [--quick] [--n-jobs N] [--budgets E
...] [--add]`` (``--quick``: 2 seeds on 3,000-row subsamples, written to
``private_search_quick.*``; ``--add``: keep the cells of other budgets already in the
JSON).
"""

import argparse
import json
import time
import warnings
from collections import Counter

import numpy as np
from sklearn.model_selection import GridSearchCV

from skdp import DPSGDClassifier, ObjPertLogisticRegression, OutputPertSVM
from skdp.datasets import load_adult, load_kddcup99
from skdp.exceptions import PrivacyBudgetError
from skdp.model_selection import PrivateGridSearchCV, privacy_cost_of_search

from . import _common
from .bench_selection_cap import uncommitted_skdp_files

NAME = "private_search"
SUBSAMPLE_SEED = 20261127
GOAL_POINTS = 1.0
CV = 3
DPSGD_DELTA = 1e-5
FULL = {"budgets": [0.3, 1.0, 3.0], "seeds": list(range(20)),
        "rows": {"adult": None, "kddcup99": 20000}}
QUICK = {"budgets": [1.0], "seeds": [0, 1], "rows": {"adult": 3000, "kddcup99": 3000}}
# Per mechanism: the searched hyperparameter, its grid (public: it brackets each
# estimator's "auto" value at the candidate epsilons of E in {0.3, 1, 3}, see
# bench_defaults), the search's delta and the grid's epsilons as shares of the cap.
MECHANISMS = {
    "ObjPertLogisticRegression()": {"make": ObjPertLogisticRegression, "param": "C",
                                    "values": [0.01, 0.03, 0.1, 0.3], "delta": 0.0,
                                    "shares": [0.25, 0.5, 1.0]},
    "OutputPertSVM()": {"make": OutputPertSVM, "param": "C",
                        "values": [0.001, 0.003, 0.01, 0.03], "delta": 0.0,
                        "shares": [0.25, 0.5, 1.0]},
    "DPSGDClassifier()": {"make": DPSGDClassifier, "param": "learning_rate",
                          "values": [4.0, 16.0, 64.0], "delta": DPSGD_DELTA,
                          "shares": [0.5, 1.0]},
}
PRIVATE_ROWS = ("private_eps_grid", "private_param_grid")


# -- data ------------------------------------------------------------------------------------

def load(name, rows):
    """``(X_train, y_train, X_test, y_test)`` and the number of training rows available.

    Parameters
    ----------
    name : {"adult", "kddcup99"}
        The dataset.
    rows : int or None
        Training rows kept: a public subsample (``default_rng(SUBSAMPLE_SEED)``, without
        replacement, sorted), or every row (``None``).

    Returns
    -------
    data : tuple of ndarray
    n_available : int
    """
    bunch = load_adult() if name == "adult" else load_kddcup99()
    X, y = bunch.X_train, bunch.y_train
    n_available = len(y)
    if rows is not None and rows < n_available:
        keep = np.sort(np.random.default_rng(SUBSAMPLE_SEED).choice(n_available, rows,
                                                                    replace=False))
        X, y = X[keep], y[keep]
    return (X, y, bunch.X_test, bunch.y_test), n_available


# -- the plan (public parameters only) ---------------------------------------------------------

def grids(mechanism, budget):
    """The two private searches' grids and the baseline's, from public parameters.

    Returns
    -------
    plan : dict
        ``cap`` (the param-only search's candidate epsilon), ``eps_grid_cap`` (the
        largest epsilon of the (epsilon, param) grid: ``cap``, or, when the plan refuses
        ``cap`` there (``refusal_at_param_cap``), the param-only search's candidate
        epsilon at the larger grid's mean number of trials), the grids, the baseline's
        per-fit epsilon and delta, and both searches' a priori guarantees.
    """
    spec = MECHANISMS[mechanism]
    param_grid = {spec["param"]: list(spec["values"])}
    search = PrivateGridSearchCV(spec["make"](), param_grid, epsilon=budget,
                                 delta=spec["delta"])
    plan = search.plan()
    cap = float(plan.candidate_epsilon)
    # The (epsilon, param) grid is larger, so its default mean number of trials is too
    # (twice the grid's size): under Renyi accounting that costs more, and the
    # param-only cap can be refused. Its cap is then the param-only search's at the
    # larger grid's mean number of trials (in pure DP the two are the same).
    n_eps_grid = len(spec["values"]) * len(spec["shares"])
    eps_mean_trials = max(10, 2 * n_eps_grid)
    refusal = None
    try:
        PrivateGridSearchCV(spec["make"](), {**param_grid, "epsilon": [
            share * cap for share in spec["shares"]]}, epsilon=budget,
            delta=spec["delta"]).plan()
        eps_cap = cap
    except PrivacyBudgetError as exc:
        refusal = str(exc)
        eps_cap = float(PrivateGridSearchCV(spec["make"](), param_grid, epsilon=budget,
                                            delta=spec["delta"],
                                            mean_trials=eps_mean_trials).plan()
                        .candidate_epsilon)
    eps_grid = {**param_grid, "epsilon": [share * eps_cap for share in spec["shares"]]}
    eps_plan = PrivateGridSearchCV(spec["make"](), eps_grid, epsilon=budget,
                                   delta=spec["delta"]).plan()  # raises if it does not fit
    n_fits = len(spec["values"]) * CV + 1
    baseline = {"n_fits": n_fits, "epsilon_per_fit": budget / n_fits,
                "delta_per_fit": spec["delta"] / n_fits}
    if spec["delta"]:
        baseline["renyi_epsilon_per_fit"] = renyi_epsilon_per_fit(spec, budget, n_fits)
    return {"cap": cap, "eps_grid_cap": eps_cap, "refusal_at_param_cap": refusal,
            "param_grid": param_grid, "eps_grid": eps_grid,
            "a_priori": {"private_param_grid": list(plan.a_priori),
                         "private_eps_grid": list(eps_plan.a_priori)},
            "mean_trials": {"private_param_grid": plan.mean_trials,
                            "private_eps_grid": eps_plan.mean_trials},
            "baseline": baseline}


def renyi_epsilon_per_fit(spec, budget, n_fits):
    """The largest per-fit epsilon whose ``n_fits`` DP-SGD fits (each at ``delta / n_fits``)
    compose by Renyi to at most ``(budget, delta)``: what ``privacy_cost_of_search``
    reports as the total (its ``renyi_epsilon``), from the fits' public parameters.
    Bisection in log between the basic-composition share and the budget."""
    from skdp.accounting._rdp import rdp_to_epsilon
    from skdp.accounting._costs import DPSGDRungCost

    cost = DPSGDRungCost.from_params({**spec["make"]().get_params(),
                                      "delta": spec["delta"] / n_fits})

    def total(epsilon):
        return rdp_to_epsilon(n_fits * cost.rdp(epsilon), spec["delta"])

    low, high = budget / n_fits, budget
    if total(high) <= budget:
        return float(high)
    for _ in range(40):
        middle = np.sqrt(low * high)
        low, high = (middle, high) if total(middle) <= budget else (low, middle)
    return float(low)


# -- one repetition ----------------------------------------------------------------------------

def _private_search(spec, grid, budget, seed, data):
    X, y, X_test, y_test = data
    search = PrivateGridSearchCV(spec["make"](), grid, epsilon=budget, delta=spec["delta"],
                                 random_state=seed)
    start = time.perf_counter()
    search.fit(X, y)
    seconds = time.perf_counter() - start
    report = search.privacy_report_
    prior = report["a_priori"]
    return {"test_accuracy": float(search.score(X_test, y_test)),
            "best_params": {k: float(v) for k, v in search.best_params_.items()},
            "a_priori": [prior["epsilon"], prior["delta"]],
            "candidate_epsilon": report["plan"]["candidate_epsilon"],
            "released_epsilon": report["released_model"]["epsilon"],
            "mean_trials": report["plan"]["mean_trials"],
            "best_noisy_score": report["transcript"]["best_noisy_score"],
            "seconds": seconds}


def _baseline(spec, plan, data, epsilon_key="epsilon_per_fit"):
    X, y, X_test, y_test = data
    base = plan["baseline"]
    params = {"epsilon": base[epsilon_key], "random_state": None}
    if spec["delta"]:
        params["delta"] = base["delta_per_fit"]
    search = GridSearchCV(spec["make"](**params), plan["param_grid"], cv=CV, refit=True)
    start = time.perf_counter()
    search.fit(X, y)
    seconds = time.perf_counter() - start
    cost = privacy_cost_of_search(search)
    return {"test_accuracy": float(search.score(X_test, y_test)),
            "best_params": {k: float(v) for k, v in search.best_params_.items()},
            "basic_epsilon": cost["basic_epsilon"], "total_epsilon": cost["total_epsilon"],
            "renyi_epsilon": cost["renyi_epsilon"], "total_delta": cost["total_delta"],
            "n_fits": cost["n_fits"], "seconds": seconds}


def _oracle(spec, budget, seed, data):
    X, y, X_test, y_test = data
    accuracy = {}
    for value in spec["values"]:
        params = {spec["param"]: value, "epsilon": budget, "random_state": seed}
        if spec["delta"]:
            params["delta"] = spec["delta"]
        accuracy[str(value)] = float(spec["make"](**params).fit(X, y).score(X_test, y_test))
    return accuracy


def repetition(seed, mechanism, budget, plan, data):
    """One seed of one cell: both private searches, the baseline and the oracle fits
    (at ``E``, and at the param-only search's candidate epsilon ``cap``)."""
    spec = MECHANISMS[mechanism]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence warnings of noisy fits
        run = {"seed": seed,
               "private_eps_grid": _private_search(spec, plan["eps_grid"], budget, seed, data),
               "private_param_grid": _private_search(spec, plan["param_grid"], budget, seed,
                                                     data),
               "baseline": _baseline(spec, plan, data),
               **({"baseline_renyi": _baseline(spec, plan, data, "renyi_epsilon_per_fit")}
                  if "renyi_epsilon_per_fit" in plan["baseline"] else {}),
               "oracle": _oracle(spec, budget, seed, data),
               "oracle_at_cap": _oracle(spec, plan["cap"], seed, data)}
    for key in PRIVATE_ROWS:  # the guarantee is the plan's, on every run, within the budget
        assert run[key]["a_priori"] == plan["a_priori"][key], (run[key], plan)
        assert run[key]["a_priori"][0] <= budget * (1 + 1e-9)
    assert abs(run["baseline"]["basic_epsilon"] - budget) < 1e-9 * budget, run["baseline"]
    if "baseline_renyi" in run:  # its counted total (Renyi) is the budget
        renyi = run["baseline_renyi"]["renyi_epsilon"]
        assert budget * (1 - 1e-3) <= renyi <= budget * (1 + 1e-9), run["baseline_renyi"]
    return run


def non_private(mechanism, data):
    """Test accuracy at ``epsilon = inf`` (seed 0) for every value of the grid."""
    spec = MECHANISMS[mechanism]
    X, y, X_test, y_test = data
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for value in spec["values"]:
            model = spec["make"](**{spec["param"]: value, "epsilon": np.inf, "random_state": 0})
            out[str(value)] = float(model.fit(X, y).score(X_test, y_test))
    return out


# -- summaries ---------------------------------------------------------------------------------

def _accuracy_summary(values, oracle):
    values = np.asarray(values, dtype=float)
    return {**_common.summarise(values), "median": float(np.median(values)),
            "q25": float(np.percentile(values, 25)), "q75": float(np.percentile(values, 75)),
            "min": float(values.min()), "max": float(values.max()),
            "gap_points": 100 * (oracle - float(np.median(values))),
            "mean_gap_points": 100 * (oracle - float(values.mean())),
            "within_goal_share": float(np.mean(values >= oracle - GOAL_POINTS / 100))}


def _value_summary(values):
    return {**_common.summarise(values), "median": float(np.median(values))}


def _chosen(runs, key):
    counts = Counter(json.dumps(r[key]["best_params"], sort_keys=True) for r in runs)
    return [{"params": json.loads(k), "count": n} for k, n in counts.most_common()]


def summarise_cell(runs, spec):
    """The figures of one (dataset, mechanism, budget) cell."""
    per_value = {str(v): _value_summary([r["oracle"][str(v)] for r in runs])
                 for v in spec["values"]}
    best_value = max(per_value, key=lambda v: per_value[v]["mean"])
    oracle = per_value[best_value]["mean"]
    at_cap = {str(v): _value_summary([r["oracle_at_cap"][str(v)] for r in runs])
              for v in spec["values"]}
    best_at_cap = max(at_cap, key=lambda v: at_cap[v]["mean"])
    summary = {"oracle": {"per_value": per_value, "best_value": float(best_value),
                          "best_mean": oracle, "best": per_value[best_value]},
               "oracle_at_cap": {"per_value": at_cap, "best_value": float(best_at_cap),
                                 "best_mean": at_cap[best_at_cap]["mean"],
                                 "best": at_cap[best_at_cap]}}
    for key in PRIVATE_ROWS:
        summary[key] = {
            **_accuracy_summary([r[key]["test_accuracy"] for r in runs], oracle),
            "a_priori": sorted({tuple(r[key]["a_priori"]) for r in runs}),
            "mean_trials": runs[0][key]["mean_trials"],
            "candidate_epsilon": runs[0][key]["candidate_epsilon"],
            "chosen": _chosen(runs, key),
            "median_seconds": float(np.median([r[key]["seconds"] for r in runs]))}
    for key in ("baseline", "baseline_renyi"):
        if key in runs[0]:
            summary[key] = _baseline_summary([r[key] for r in runs], oracle, runs, key)
    return summary


def _baseline_summary(base, oracle, runs, key):
    return {
        **_accuracy_summary([b["test_accuracy"] for b in base], oracle),
        "basic_epsilon": max(b["basic_epsilon"] for b in base),
        "total_epsilon": max(b["total_epsilon"] for b in base),
        "renyi_epsilon": (max(b["renyi_epsilon"] for b in base)
                          if base[0]["renyi_epsilon"] is not None else None),
        "total_delta": max(b["total_delta"] for b in base),
        "n_fits": base[0]["n_fits"], "chosen": _chosen(runs, key),
        "median_seconds": float(np.median([b["seconds"] for b in base]))}


# -- the study -----------------------------------------------------------------------------------

def study(datasets, budgets, seeds, n_jobs=1):
    """Every (dataset, budget, mechanism) cell.

    Returns
    -------
    cells : list of dict
        ``dataset``, ``budget``, ``mechanism``, ``plan``, ``summary``, ``runs``,
        ``non_private`` and ``seconds`` (wall clock of the cell, on ``n_jobs`` workers).
    """
    cells = []
    for name, (data, _) in datasets.items():
        for mechanism, spec in MECHANISMS.items():
            reference = non_private(mechanism, data)
            for budget in budgets:
                plan = grids(mechanism, budget)
                start = time.perf_counter()
                runs = _common.map_seeds(repetition, seeds, n_jobs=n_jobs, mechanism=mechanism,
                                         budget=budget, plan=plan, data=data)
                seconds = time.perf_counter() - start
                summary = summarise_cell(runs, spec)
                cells.append({"dataset": name, "budget": budget, "mechanism": mechanism,
                              "param": spec["param"], "plan": plan, "summary": summary,
                              "non_private": reference, "seconds": seconds, "runs": runs})
                s = summary
                print(f"{name} E={budget:g} {mechanism}: oracle {s['oracle']['best_mean']:.4f} "
                      f"(at {spec['param']}={s['oracle']['best_value']:g}); private "
                      f"(eps, {spec['param']}) median {s['private_eps_grid']['median']:.4f}, "
                      f"({spec['param']}) median {s['private_param_grid']['median']:.4f}; "
                      f"baseline median {s['baseline']['median']:.4f}; cap {plan['cap']:.4g} "
                      f"({seconds:.0f} s)", flush=True)
    return cells


def goal(cells):
    """Whether the private search is within the goal of the oracle on Adult at E = 1."""
    out = []
    for cell in cells:
        if cell["dataset"] != "adult" or cell["budget"] != 1.0:
            continue
        s = cell["summary"]
        for key in PRIVATE_ROWS:
            out.append({"mechanism": cell["mechanism"], "search": key,
                        "oracle": s["oracle"]["best_mean"], "median": s[key]["median"],
                        "mean": s[key]["mean"], "gap_points": s[key]["gap_points"],
                        "mean_gap_points": s[key]["mean_gap_points"],
                        "met": s[key]["gap_points"] <= GOAL_POINTS})
    return out


# -- figure ---------------------------------------------------------------------------------------

LABELS = {"private_eps_grid": "private search over (epsilon, param)",
          "private_param_grid": "private search over param",
          "baseline": "GridSearchCV, total epsilon E (basic composition)",
          "baseline_renyi": "GridSearchCV, total epsilon E (Renyi, DP-SGD)"}
MARKERS = {"private_eps_grid": ("o", "C0"), "private_param_grid": ("s", "C2"),
           "baseline": ("v", "C3"), "baseline_renyi": ("^", "C1")}


def plot(payload, path):
    """Test accuracy per mechanism: medians (IQR bars) of the searches, the oracle's mean."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cells = payload["cells"]
    datasets = list(dict.fromkeys(c["dataset"] for c in cells))
    budgets = sorted({c["budget"] for c in cells})
    fig, axes = plt.subplots(len(datasets), len(budgets), squeeze=False,
                             figsize=(4.8 * len(budgets), 4.0 * len(datasets) + 0.6))
    for ax, (dataset, budget) in zip(axes.ravel(), [(d, b) for d in datasets
                                                    for b in budgets]):
        row = [c for c in cells if c["dataset"] == dataset and c["budget"] == budget]
        labelled = set()
        for i, cell in enumerate(row):
            s = cell["summary"]
            keys = [k for k in ("private_eps_grid", "private_param_grid", "baseline",
                                "baseline_renyi") if k in s]
            for j, key in enumerate(keys):
                marker, colour = MARKERS[key]
                x = i + (j - (len(keys) - 1) / 2) * 0.18
                ax.errorbar([x], [s[key]["median"]], yerr=[[s[key]["median"] - s[key]["q25"]],
                                                           [s[key]["q75"] - s[key]["median"]]],
                            fmt=marker, color=colour, ms=6, capsize=3,
                            label=LABELS[key] if key not in labelled else None)
                labelled.add(key)
            oracle = s["oracle"]["best_mean"]
            ax.hlines(oracle, i - 0.4, i + 0.4, colors="k", lw=1.5,
                      label="best single configuration at E (oracle)" if i == 0 else None)
            ax.hlines(oracle - GOAL_POINTS / 100, i - 0.4, i + 0.4, colors="k", lw=0.8,
                      linestyles=":", label="oracle - 1 point" if i == 0 else None)
            if "oracle_at_cap" in s:
                ax.hlines(s["oracle_at_cap"]["best_mean"], i - 0.4, i + 0.4, colors="0.5",
                          lw=1.2, linestyles="--",
                          label="best single configuration at cap" if i == 0 else None)
            ax.plot([i + 0.36], [max(cell["non_private"].values())], "k*", ms=7,
                    label="non-private best" if i == 0 else None)
        ax.set_xticks(range(len(row)), [c["mechanism"].replace("()", "").replace(
            "LogisticRegression", "LR").replace("Classifier", "") for c in row], fontsize=8)
        ax.set_title(f"{dataset}, whole-search epsilon E = {budget:g}", fontsize=9)
        ax.grid(axis="y", alpha=0.3)
    for ax in axes[:, 0]:
        ax.set_ylabel("test accuracy of the released model\n(median, IQR)", fontsize=8)
    handles = {}
    for ax in axes.ravel():
        for handle, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, handle)
    fig.legend(list(handles.values()), list(handles), loc="lower center", ncol=4,
               fontsize=7, bbox_to_anchor=(0.5, 0.02))
    seeds = payload["params"]["seeds"]
    environment = payload.get("environment") or _common.environment()
    fig.text(0.01, 0.01, _common.figure_footer(environment, f"{seeds[0]}..{seeds[-1]}",
                                               "add_remove"), fontsize=6)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    fig.savefig(path, dpi=110)


# -- main -----------------------------------------------------------------------------------------

def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke run (2 seeds, subsamples)")
    parser.add_argument("--n-jobs", type=int, default=1, help=_common.N_JOBS_HELP)
    parser.add_argument("--budgets", type=float, nargs="+", default=None,
                        help="whole-search budgets E (default: %(default)s -> "
                             f"{FULL['budgets']})")
    parser.add_argument("--add", action="store_true",
                        help="keep the cells of other budgets already in the JSON")
    args = parser.parse_args(argv)
    params = dict(QUICK if args.quick else FULL)
    budgets = args.budgets or params["budgets"]
    stem = NAME + ("_quick" if args.quick else "")
    start = time.perf_counter()
    datasets = {name: load(name, rows) for name, rows in params["rows"].items()}
    cells = study(datasets, budgets, params["seeds"], args.n_jobs)
    runtime = time.perf_counter() - start
    runs = [{"budgets": budgets, "seconds": runtime, "n_jobs": args.n_jobs,
             "environment": _common.environment()}]
    previous = _common.RESULTS_DIR / f"{stem}.json"
    if args.add and previous.exists():
        old = json.loads(previous.read_text())
        kept = [c for c in old["cells"] if c["budget"] not in budgets]
        cells = sorted(kept + cells, key=lambda c: (
            list(params["rows"]).index(c["dataset"]), c["budget"],
            list(MECHANISMS).index(c["mechanism"])))
        runs = old.get("run_log", []) + runs
    payload = {
        "params": {"seeds": params["seeds"], "budgets": sorted({c["budget"] for c in cells}),
                   "rows": params["rows"], "subsample_seed": SUBSAMPLE_SEED,
                   "n_train_available": {n: d[1] for n, d in datasets.items()},
                   "cv": CV, "goal_points": GOAL_POINTS, "dpsgd_delta": DPSGD_DELTA,
                   "mechanisms": {k: {"param": v["param"], "values": v["values"],
                                      "delta": v["delta"], "epsilon_shares_of_cap": v["shares"]}
                                  for k, v in MECHANISMS.items()},
                   "baseline_random_state": None,
                   "neighboring": "add/remove-one (the estimators' default)"},
        "uncommitted_skdp_files": uncommitted_skdp_files(),
        "cells": cells, "goal": goal(cells), "run_log": runs,
        "runtime_seconds": sum(r["seconds"] for r in runs),
    }
    path = _common.write_results(stem, payload)
    plot(json.loads(path.read_text()), path.with_suffix(".png"))
    print(f"wrote {path} after {runtime:.0f} s", flush=True)


if __name__ == "__main__":
    main()
