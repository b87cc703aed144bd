"""NAPP (noise-augmented private lasso): the paper's simulations, UCI Adult and KDDCup99.

Part 1 - simulations (Li & Liu, section 5, reconstructed in spec napp_erm.md section 9):
p = 30 features, 8 non-zero coefficients, rows x ~ N(0, I) clipped to norm 1, no
intercept; linear (n in {200, 500}), logistic and Poisson (n in {500, 1000}); epsilon in
{0.4, 0.6, 0.8, 1.0}, pure epsilon-DP, add/remove-one; a grid of lasso weights alpha.
Methods:

* ``nonprivate``: the lasso (epsilon = inf, same pipeline);
* ``napp``: NAPPLasso / NAPPLassoClassifier default (exact Kifer objective with only the
  missing curvature, Delta = beta_H / (exp(eps/2) - 1), noise eps/2);
* ``two_stage``: the two-stage adaptive estimator (30 % / 70 % split, retrieval and
  recycling in stage 2);
* ``kifer``: existing DP-ERM (Kifer, Smith & Thakurta 2012): lasso + Delta = 2 beta_H /
  eps on top, Gamma-norm noise of scale 2 zeta / eps, same solver.

Per alpha: variable selection (TPR, FPR: the ROC points) and test prediction error
(linear: MSE; logistic: misclassification; Poisson: mean Poisson deviance) on 2000
fresh rows. The tables report, per method, the best alpha on average (an oracle
choice, as in the paper's figures, applied to every method alike).

Part 2 - classification on UCI Adult and KDDCup99 (skdp's default 70,000-row sample),
lasso-logistic misclassification against epsilon (NAPPLassoClassifier default and
two-stage; non-private about 15.2 % on Adult). Same epsilons, seeds and protocol on both:
alpha is chosen per method and epsilon on a validation split of the training data (80/20,
stratified, random_state 0), never on the test set. That selection reads the protected
training rows without noise and is outside every reported epsilon.

Fit time: best of 3, as a ratio to scikit-learn's Lasso (simulation, linear n = 500)
and LogisticRegression(l1_ratio=1, liblinear) on each dataset, measured in the same run;
and "as run", each estimator with its defaults (``NAPPLassoClassifier(epsilon=1.0,
data_norm=1.0)`` against ``LogisticRegression(l1_ratio=1.0, solver="liblinear")``), timed
in turn in one process, the median of the per-round ratios. ``--timing-only`` measures
the classification fit times alone (matched, interleaved, and as run) into
``napp_timing.json``. BLAS is limited to one thread (two shared cores: multithreaded BLAS
thrashes).

Run ``python -m benchmarks.bench_napp [--quick] [--n-jobs N] [--datasets adult kddcup99]
[--keep-simulations] [--timing-only]`` from the repo root. ``--n-jobs`` runs the simulation repetitions
and the classification seeds through joblib (same results for any value); the fit times
are always measured one after another. ``--keep-simulations`` reruns part 2 only and
copies part 1 (with the environment of the run that produced it) from the existing JSON.
"""

import argparse
import json
import time
import warnings

import numpy as np
from sklearn.linear_model import Lasso, LogisticRegression
from sklearn.metrics import mean_poisson_deviance
from sklearn.model_selection import train_test_split

from skdp import NAPPLasso, NAPPLassoClassifier
from skdp.datasets import load_adult, load_kddcup99
from skdp.linear_model._napp._mechanism import napp_release
from skdp.losses import LogisticLoss, PoissonLoss, SquaredLoss
from skdp.mechanisms._napp import kifer_calibration
from skdp.penalties import L1

from ._common import (N_JOBS_HELP, RESULTS_DIR, best_time, environment, figure_footer,
                      interleaved_ratio, map_seeds, summarise, write_results)

NAME = "napp"
P = 30
BETA_BASE = np.array([1.0, -0.9, 0.8, -0.7, 0.6, -0.5, 0.5, -0.5])
FAMILIES = {
    # sizes, signal scale, estimator bounds, alpha grid (sum form)
    "linear": dict(sizes=[200, 500], scale=2.7, noise=0.5, y_bound=4.0, coef_bound=8.0,
                   alphas=[3.0, 10.0, 30.0, 100.0, 300.0]),
    "logistic": dict(sizes=[500, 1000], scale=5.5, alphas=[1.0, 3.0, 10.0, 30.0, 100.0]),
    "poisson": dict(sizes=[500, 1000], scale=1.4, y_bound=10.0, coef_bound=3.0,
                    alphas=[3.0, 10.0, 30.0, 100.0, 300.0]),
}
PARAMS = {"epsilons": [0.4, 0.6, 0.8, 1.0], "reps": 100, "n_test": 2000,
          "datasets": ["adult", "kddcup99"],
          "classification_epsilons": [0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0],
          "classification_alphas": [1.0, 10.0, 100.0], "classification_seeds": list(range(5))}
QUICK = {"epsilons": [0.6, 1.0], "reps": 2, "n_test": 500, "classification_epsilons": [0.5, 5.0],
         "classification_alphas": [10.0], "classification_seeds": [0],
         "families": ["linear", "logistic"], "classification_rows": 5000}
SIMULATION_PARAMS = ("epsilons", "reps", "n_test")
LOADERS = {"adult": load_adult, "kddcup99": load_kddcup99}
METHODS = ["nonprivate", "napp", "two_stage", "kifer"]


def true_coef():
    beta = np.zeros(P)
    beta[:8] = BETA_BASE
    return beta


def make_data(family, n, seed):
    """Rows N(0, I) clipped to norm 1; targets from the family's GLM."""
    rng = np.random.default_rng(seed)
    spec = FAMILIES[family]
    beta = spec["scale"] * true_coef()
    X = rng.standard_normal((n, P))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    eta = X @ beta
    if family == "linear":
        y = eta + spec["noise"] * rng.standard_normal(n)
    elif family == "logistic":
        y = np.where(rng.random(n) < 1.0 / (1.0 + np.exp(-eta)), 1, 0)
    else:
        y = rng.poisson(np.exp(eta)).astype(float)
    return X, y


def make_estimator(family, method, alpha, epsilon, seed):
    """The public estimator of a method (the Kifer baseline has none: see fit_kifer)."""
    spec = FAMILIES[family]
    kw = dict(alpha=alpha, fit_intercept=False, random_state=seed,
              epsilon=np.inf if method == "nonprivate" else epsilon,
              adaptive_two_stage=method == "two_stage")
    if family == "logistic":
        return NAPPLassoClassifier(**kw)
    loss = "squared" if family == "linear" else "poisson"
    return NAPPLasso(loss=loss, y_bound=spec["y_bound"], coef_bound=spec["coef_bound"], **kw)


def fit_kifer(family, X, y, alpha, epsilon, seed):
    """Existing DP-ERM: the same worker with the KST calibration (lasso + 2 beta_H / eps)."""
    spec = FAMILIES[family]
    if family == "logistic":
        loss, target, y_bound, coef_bound = LogisticLoss(), np.where(y == 1, 1.0, -1.0), None, None
    elif family == "linear":
        loss, y_bound, coef_bound = SquaredLoss(), spec["y_bound"], spec["coef_bound"]
        target = np.clip(y, -y_bound, y_bound)
    else:
        loss, y_bound, coef_bound = PoissonLoss(), spec["y_bound"], spec["coef_bound"]
        target = np.minimum(y, y_bound)
    G, beta_h = loss.bounds(1.0, y_bound=y_bound, coef_bound=coef_bound)
    solution = napp_release(X, target, loss, L1(alpha), epsilon=epsilon, delta=0.0,
                            gradient_bound=G, hessian_bound=beta_h, coef_bound=coef_bound,
                            eps_jacobian_frac=0.5, neighboring="add_remove",
                            retrieval="recycle", solver=dict(tol=1e-8, max_iter=100),
                            rng=np.random.default_rng(seed), calibrate=kifer_calibration)
    return solution.theta, solution.converged


def prediction_error(family, coef, X, y):
    eta = X @ coef
    if family == "linear":
        return float(np.mean((eta - y) ** 2))
    if family == "logistic":
        return float(np.mean((eta > 0).astype(int) != y))
    return float(mean_poisson_deviance(y, np.exp(np.clip(eta, -30, 30))))


def selection(coef):
    support = coef != 0
    truth = true_coef() != 0
    return float(support[truth].mean()), float(support[~truth].mean())


def simulation_rep(rep, family, n, epsilons, test):
    """The rows of one repetition: data seed ``rep``, every alpha, epsilon and method."""
    X_test, y_test = test
    X, y = make_data(family, n, seed=rep)
    rows = []
    for alpha in FAMILIES[family]["alphas"]:
        coef = make_estimator(family, "nonprivate", alpha, np.inf, rep).fit(X, y).coef_
        coef = np.ravel(coef)
        tpr, fpr = selection(coef)
        for epsilon in epsilons:
            rows.append(dict(family=family, n=n, rep=rep, alpha=alpha,
                             epsilon=epsilon, method="nonprivate", tpr=tpr, fpr=fpr,
                             error=prediction_error(family, coef, X_test, y_test),
                             certified=True))
        for epsilon in epsilons:
            seed = 1_000_000 + 1000 * rep + int(100 * epsilon)
            for method in ("napp", "two_stage", "kifer"):
                if method == "kifer":
                    coef, ok = fit_kifer(family, X, y, alpha, epsilon, seed)
                else:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        est = make_estimator(family, method, alpha, epsilon, seed).fit(X, y)
                    coef, ok = np.ravel(est.coef_), est.privacy_guarantee_
                tpr, fpr = selection(coef)
                rows.append(dict(family=family, n=n, rep=rep, alpha=alpha,
                                 epsilon=epsilon, method=method, tpr=tpr, fpr=fpr,
                                 error=prediction_error(family, coef, X_test, y_test),
                                 certified=bool(ok)))
    return rows


def run_simulations(params, families, n_jobs=1):
    rows = []
    for family in families:
        for n in FAMILIES[family]["sizes"]:
            test = make_data(family, params["n_test"], seed=10_000)
            for rep_rows in map_seeds(simulation_rep, range(params["reps"]), n_jobs,
                                      family=family, n=n, epsilons=params["epsilons"],
                                      test=test):
                rows.extend(rep_rows)
    return rows


def summarise_simulations(rows):
    """Per (family, n, epsilon, method): best mean error over alpha; ROC points per alpha."""
    table = []
    keys = sorted({(r["family"], r["n"], r["epsilon"], r["method"]) for r in rows},
                  key=lambda k: (k[0], k[1], k[2], METHODS.index(k[3])))
    for family, n, epsilon, method in keys:
        sub = [r for r in rows if (r["family"], r["n"], r["epsilon"], r["method"])
               == (family, n, epsilon, method)]
        per_alpha = {}
        for alpha in sorted({r["alpha"] for r in sub}):
            these = [r for r in sub if r["alpha"] == alpha]
            per_alpha[alpha] = dict(error=summarise([r["error"] for r in these]),
                                    tpr=float(np.mean([r["tpr"] for r in these])),
                                    fpr=float(np.mean([r["fpr"] for r in these])))
        best_alpha = min(per_alpha, key=lambda a: per_alpha[a]["error"]["mean"])
        best_sel = max(per_alpha, key=lambda a: per_alpha[a]["tpr"] - per_alpha[a]["fpr"])
        table.append(dict(family=family, n=n, epsilon=epsilon, method=method,
                          best_alpha=best_alpha, error=per_alpha[best_alpha]["error"],
                          youden=per_alpha[best_sel]["tpr"] - per_alpha[best_sel]["fpr"],
                          youden_alpha=best_sel, roc=per_alpha,
                          certified=float(np.mean([r["certified"] for r in sub]))))
    return table


def target_check(table, epsilons):
    """Two-stage beats Kifer on error or selection at every eps >= 0.6, per family."""
    verdict = {}
    for family in sorted({t["family"] for t in table}):
        wins = []
        for n in sorted({t["n"] for t in table if t["family"] == family}):
            for epsilon in [e for e in epsilons if e >= 0.6]:
                get = {t["method"]: t for t in table
                       if (t["family"], t["n"], t["epsilon"]) == (family, n, epsilon)}
                two, kif = get["two_stage"], get["kifer"]
                wins.append(two["error"]["mean"] < kif["error"]["mean"]
                            or two["youden"] > kif["youden"])
        verdict[family] = bool(all(wins))
    return verdict


def classification_fit(seed, alpha, epsilon, two_stage, data):
    """Misclassification on the evaluation rows and certification of one seed's fit."""
    X_fit, y_fit, X_eval, y_eval = data
    est = NAPPLassoClassifier(alpha=alpha, epsilon=epsilon, random_state=seed,
                              adaptive_two_stage=two_stage)
    est.fit(X_fit, y_fit)
    return 1 - est.score(X_eval, y_eval), est.privacy_guarantee_


def run_classification(name, params, n_jobs=1):
    """Part 2 on one dataset: misclassification against epsilon, baselines, fit times."""
    print(f"== {name}", flush=True)
    data = LOADERS[name]()
    X_train, y_train = data.X_train, data.y_train
    rows_limit = params.get("classification_rows")
    if rows_limit:
        X_train, y_train = X_train[:rows_limit], y_train[:rows_limit]
    X_fit, X_val, y_fit, y_val = train_test_split(X_train, y_train, test_size=0.2,
                                                  random_state=0, stratify=y_train)
    results = []
    alpha_np = nonprivate_alpha(X_fit, y_fit, X_val, y_val, params["classification_alphas"])
    ref = NAPPLassoClassifier(alpha=alpha_np, epsilon=np.inf).fit(X_train, y_train)
    nonprivate = 1 - ref.score(data.X_test, data.y_test)
    sk = LogisticRegression(l1_ratio=1.0, C=1.0 / alpha_np, solver="liblinear",
                            fit_intercept=False)
    from skdp.utils import augment_intercept
    design_train = augment_intercept(X_train, 1.0)
    sk_error = 1 - sk.fit(design_train, y_train).score(augment_intercept(data.X_test, 1.0),
                                                       data.y_test)
    for method in ("napp", "two_stage"):
        for epsilon in params["classification_epsilons"]:
            val_err = {}
            for alpha in params["classification_alphas"]:
                fits = map_seeds(classification_fit, params["classification_seeds"], n_jobs,
                                 alpha=alpha,
                                 epsilon=epsilon, two_stage=method == "two_stage",
                                 data=(X_fit, y_fit, X_val, y_val))
                val_err[alpha] = np.mean([err for err, _ in fits])
            alpha = min(val_err, key=val_err.get)
            test_err, certified = zip(*map_seeds(
                classification_fit, [100 + seed for seed in params["classification_seeds"]],
                n_jobs, alpha=alpha,
                epsilon=epsilon, two_stage=method == "two_stage",
                data=(X_train, y_train, data.X_test, data.y_test)))
            results.append(dict(method=method, epsilon=epsilon, alpha=alpha,
                                error=summarise(test_err), certified=float(np.mean(certified))))
            print(f"  {method:10s} eps {epsilon:5.2f} alpha {alpha:6.1f} "
                  f"{100 * results[-1]['error']['mean']:.2f} %", flush=True)
    # fit times: sequential whatever n_jobs, so that the ratio compares quiet fits
    repeats = 3
    t_sk = best_time(lambda: LogisticRegression(l1_ratio=1.0, C=1.0 / alpha_np,
                                                solver="liblinear", fit_intercept=False)
                     .fit(design_train, y_train), repeats)
    t_napp = best_time(lambda: NAPPLassoClassifier(alpha=alpha_np, epsilon=1.0, random_state=0)
                       .fit(X_train, y_train), repeats)
    return dict(nonprivate_error=nonprivate, nonprivate_alpha=alpha_np,
                sklearn_liblinear_error=sk_error, rows=results, n_train=len(y_train),
                timing=dict(sklearn_seconds=t_sk, napp_seconds=t_napp, ratio=t_napp / t_sk,
                            as_run=as_run_timing(X_train, y_train, AS_RUN_REPEATS)))


def nonprivate_alpha(X_fit, y_fit, X_val, y_val, alphas):
    """The non-private reference's alpha: least validation error at epsilon = inf."""
    val = {a: 1 - NAPPLassoClassifier(alpha=a, epsilon=np.inf).fit(X_fit, y_fit).score(X_val, y_val)
           for a in alphas}
    return min(val, key=val.get)


AS_RUN_REPEATS = 7
AS_RUN_NOTE = ("As run: each estimator with its defaults as a user fits it on the training "
               "rows, NAPPLassoClassifier(epsilon=1.0, data_norm=1.0) against "
               "LogisticRegression(l1_ratio=1.0, solver='liblinear') (scikit-learn's "
               "penalty='l1', C=1, with its intercept), timed in turn in one process; ratio = "
               "median of the per-round ratios.")
MATCHED_NOTE = ("Matched: the same problem, NAPPLassoClassifier(alpha, epsilon=1.0, "
                "random_state=0) against LogisticRegression(l1_ratio=1.0, C=1/alpha, "
                "solver='liblinear', fit_intercept=False) on the intercept-augmented rows "
                "(alpha the non-private reference's), liblinear at its tolerance 1e-4; timed "
                "in turn in one process, ratio = median of the per-round ratios.")


def as_run_timing(X, y, repeats):
    """NAPPLassoClassifier and liblinear's L1 logistic regression with their defaults."""
    timing = interleaved_ratio(
        lambda: NAPPLassoClassifier(epsilon=1.0, data_norm=1.0).fit(X, y),
        lambda: LogisticRegression(l1_ratio=1.0, solver="liblinear").fit(X, y), repeats)
    return {**timing, "note": AS_RUN_NOTE}


def matched_timing(X, y, alpha, repeats):
    """NAPP against liblinear on the same L1 problem (see MATCHED_NOTE), interleaved."""
    from skdp.utils import augment_intercept

    design = augment_intercept(X, 1.0)
    timing = interleaved_ratio(
        lambda: NAPPLassoClassifier(alpha=alpha, epsilon=1.0, random_state=0).fit(X, y),
        lambda: LogisticRegression(l1_ratio=1.0, C=1.0 / alpha, solver="liblinear",
                                   fit_intercept=False).fit(design, y), repeats)
    return {**timing, "alpha": alpha, "note": MATCHED_NOTE}


def timing_only(params, quick=False):
    """The classification fit times alone (matched and as run), BLAS on one thread,
    written to ``napp_timing.json`` beside the accuracy run's JSON."""
    timing = {}
    for name in params["datasets"]:
        data = LOADERS[name]()
        X_train, y_train = data.X_train, data.y_train
        if params.get("classification_rows"):
            X_train = X_train[:params["classification_rows"]]
            y_train = y_train[:params["classification_rows"]]
        split = train_test_split(X_train, y_train, test_size=0.2, random_state=0,
                                 stratify=y_train)
        alpha = nonprivate_alpha(split[0], split[2], split[1], split[3],
                                 params["classification_alphas"])
        timing[name] = {"matched": matched_timing(X_train, y_train, alpha, AS_RUN_REPEATS),
                        "as_run": as_run_timing(X_train, y_train, AS_RUN_REPEATS)}
        m, a = timing[name]["matched"], timing[name]["as_run"]
        print(f"{name}: matched {m['ratio']:.2f}x liblinear (alpha {alpha}); as run "
              f"{a['ratio']:.2f}x ({a['ours_s']:.3f} s vs {a['reference_s']:.3f} s); load "
              f"{a['load_average']}", flush=True)
    stem = NAME + ("_quick" if quick else "") + "_timing"
    print("wrote", write_results(stem, {"params": {"repeats": AS_RUN_REPEATS, "blas_threads": 1},
                                         "timing": timing}))


def simulation_timing():
    """Fit-time ratio on one simulated data set, measured sequentially (whatever n_jobs)."""
    X, y = make_data("linear", 500, seed=0)
    t_sk = best_time(lambda: Lasso(alpha=30.0 / 500, fit_intercept=False).fit(X, y))
    t_napp = best_time(lambda: make_estimator("linear", "napp", 30.0, 1.0, 0).fit(X, y))
    return dict(sklearn_seconds=t_sk, napp_seconds=t_napp, ratio=t_napp / t_sk)


def plot(payload, path, families):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    table = payload["simulation"]["table"]
    fig, axes = plt.subplots(2, 4, figsize=(20, 8.5))
    axes[0][3].set_visible(False)
    labels = {"nonprivate": "non-private lasso", "napp": "NAPP (default)",
              "two_stage": "NAPP two-stage", "kifer": "existing DP-ERM (Kifer)"}
    style = {"nonprivate": dict(color="k", marker="s"), "napp": dict(color="C0", marker="o"),
             "two_stage": dict(color="C2", marker="^"),
             "kifer": dict(color="C3", marker="x", ls="--")}
    for ax, family in zip(axes[0], ["linear", "logistic", "poisson"]):
        if family not in families:
            ax.set_visible(False)
            continue
        n = max(FAMILIES[family]["sizes"])
        for method in METHODS:
            pts = [t for t in table if (t["family"], t["n"], t["method"]) == (family, n, method)]
            ax.errorbar([t["epsilon"] for t in pts], [t["error"]["mean"] for t in pts],
                        yerr=[t["error"]["sem"] for t in pts], label=labels[method],
                        **style[method])
        ax.set_title(f"{family}, n = {n}: test error (best alpha)", fontsize=9)
        ax.set_xlabel("epsilon")
        ax.set_yscale("log" if family != "logistic" else "linear")
        ax.legend(fontsize=7)
    for ax, family in zip(axes[1][:2], ["linear", "logistic"]):
        if family not in families:
            ax.set_visible(False)
            continue
        n = max(FAMILIES[family]["sizes"])
        eps = max(payload["params"]["epsilons"])
        for method in METHODS:
            (t,) = [t for t in table
                    if (t["family"], t["n"], t["method"], t["epsilon"]) == (family, n, method, eps)]
            fpr = [v["fpr"] for v in t["roc"].values()]
            tpr = [v["tpr"] for v in t["roc"].values()]
            ax.plot(fpr, tpr, label=labels[method], **style[method])
        ax.plot([0, 1], [0, 1], color="grey", lw=0.5)
        ax.set_title(f"{family}, n = {n}, eps = {eps}: ROC points over alpha", fontsize=9)
        ax.set_xlabel("false-positive rate")
        ax.set_ylabel("true-positive rate")
        ax.legend(fontsize=7)
    for ax in axes[1][2 + len(payload["classification"]):]:
        ax.set_visible(False)
    for ax, (name, result) in zip(axes[1][2:], payload["classification"].items()):
        for method in ("napp", "two_stage"):
            pts = [r for r in result["rows"] if r["method"] == method]
            ax.errorbar([r["epsilon"] for r in pts], [100 * r["error"]["mean"] for r in pts],
                        yerr=[100 * r["error"]["sem"] for r in pts], label=labels[method],
                        **style[method])
        ax.axhline(100 * result["nonprivate_error"], color="k", ls="--", label="non-private")
        ax.set_xscale("log")
        ax.set_xlabel("epsilon")
        ax.set_ylabel("test misclassification (%)")
        ax.set_title(f"{name}, lasso-logistic, n_train = {result['n_train']}\n(alpha chosen "
                     "on validation)", fontsize=9)
        ax.legend(fontsize=7)
    run_env = payload["environment"]
    sim_env = payload["simulation"].get("environment", run_env)
    seeds = (f"{payload['seeds']}; classification: "
             f"{payload['params']['classification_seeds']} (test fits 100 + seed)")
    if sim_env == run_env:
        title = "NAPP: pure epsilon-DP, add/remove-one; " + figure_footer(run_env, seeds,
                                                                          "add_remove")
    else:
        title = ("NAPP: pure epsilon-DP, add/remove-one. Simulations (top row, left two ROC "
                 f"panels): git {sim_env.get('git_sha')}, " + figure_footer(
                     sim_env, payload["seeds"], "add_remove")
                 + f"\nClassification (bottom right): git {run_env.get('git_sha')}, "
                 + figure_footer(run_env, payload["params"]["classification_seeds"],
                                 "add_remove"))
    fig.suptitle(title, fontsize=8)
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def kept_simulations(params, families):
    """Part 1 from the existing full-mode JSON, with the environment that produced it."""
    path = RESULTS_DIR / f"{NAME}.json"
    old = json.loads(path.read_text())
    for key in SIMULATION_PARAMS:
        if old["params"][key] != params[key]:
            raise SystemExit(f"{path}: simulation parameter {key} differs from this script's")
    if sorted(old["families"]) != sorted(families):
        raise SystemExit(f"{path}: simulated families differ from this script's")
    simulation = dict(old["simulation"])  # "environment": only when kept from another run
    simulation.setdefault("environment", old["environment"])
    simulation.setdefault("runtime_seconds", old.get("runtime_seconds"))
    return simulation, old["seeds"]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="reduced run for CI (< 1 min)")
    parser.add_argument("--n-jobs", type=int, default=1, help=N_JOBS_HELP)
    parser.add_argument("--datasets", nargs="+", choices=list(LOADERS), default=None,
                        help="datasets of part 2 (default: all of %(choices)s)")
    parser.add_argument("--keep-simulations", action="store_true",
                        help="do not rerun part 1: copy it from the existing results/napp.json")
    parser.add_argument("--timing-only", action="store_true",
                        help="only the classification fit times, matched and as run "
                             "(napp_timing.json)")
    args = parser.parse_args(argv)
    params = {**PARAMS, **QUICK} if args.quick else dict(PARAMS)
    params["datasets"] = list(args.datasets or params["datasets"])
    families = params.get("families", list(FAMILIES))
    name = f"{NAME}_quick" if args.quick else NAME
    try:
        from threadpoolctl import threadpool_limits
        limiter = threadpool_limits(1)
    except ImportError:  # pragma: no cover
        limiter = None
    if args.timing_only:
        try:
            timing_only(params, args.quick)
        finally:
            if limiter is not None:
                limiter.restore_original_limits()
        return
    start = time.perf_counter()
    if args.keep_simulations:
        simulation, sim_seeds = kept_simulations(params, families)
    else:
        rows = run_simulations(params, families, args.n_jobs)
        table = summarise_simulations(rows)
        simulation = dict(table=table,
                          target_two_stage_beats_kifer=target_check(table, params["epsilons"]),
                          timing=simulation_timing(),
                          runtime_seconds=time.perf_counter() - start)
        sim_seeds = f"data 0..{params['reps'] - 1}, noise 1e6 + 1000 rep + 100 eps"
    classification = {d: run_classification(d, params, args.n_jobs) for d in params["datasets"]}
    payload = dict(params={k: v for k, v in params.items()}, families={
        f: {k: v for k, v in FAMILIES[f].items()} for f in families},
        seeds=sim_seeds, simulation=simulation, classification=classification,
        runtime_seconds=time.perf_counter() - start)
    payload["environment"] = environment()
    path = write_results(name, payload)
    plot(payload, path.with_suffix(".png"), families)
    if limiter is not None:
        limiter.restore_original_limits()
    print_tables(payload)
    print(f"wrote {path} and {path.with_suffix('.png')} in {payload['runtime_seconds']:.0f} s")


def print_tables(payload):
    table = payload["simulation"]["table"]
    print("family    n     eps  method        best-alpha  error (sem)        "
          "Youden  certified")
    for t in table:
        print(f"{t['family']:9s} {t['n']:5d} {t['epsilon']:4.1f}  {t['method']:12s} "
              f"{t['best_alpha']:8.1f}  {t['error']['mean']:9.4f} ({t['error']['sem']:.4f})"
              f"  {t['youden']:6.3f}  {t['certified']:.2f}")
    print("two-stage beats Kifer (error or selection) at every eps >= 0.6:",
          payload["simulation"]["target_two_stage_beats_kifer"])
    for key in ("simulation",):
        tm = payload[key]["timing"]
        print(f"time ratio ({key}, NAPP / sklearn Lasso): {tm['ratio']:.2f}")
    for name, result in payload["classification"].items():
        print(f"{name}: non-private {100 * result['nonprivate_error']:.2f} % (alpha "
              f"{result['nonprivate_alpha']}), sklearn liblinear "
              f"{100 * result['sklearn_liblinear_error']:.2f} %")
        for r in result["rows"]:
            print(f"  {r['method']:10s} eps {r['epsilon']:5.2f}  alpha {r['alpha']:6.1f}  "
                  f"{100 * r['error']['mean']:.2f} % ({100 * r['error']['sem']:.2f})  "
                  f"certified {r['certified']:.2f}")
        tm = result["timing"]
        print(f"time ratio ({name}, NAPP / sklearn liblinear): {tm['ratio']:.2f} "
              f"({tm['napp_seconds']:.2f} s vs {tm['sklearn_seconds']:.2f} s)")


if __name__ == "__main__":
    main()
