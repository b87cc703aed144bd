"""OutputPertSVM on Adult and KDDCup99: accuracy against epsilon, fit time against LinearSVC.

Run from the repository root::

    python -m benchmarks.bench_output_perturbation [--quick] [--timing-only]

(``--timing-only``: the fit times alone, written to ``output_perturbation_timing.json``.)

Setting (stated in the JSON and on the figure): neighbouring relation add/remove-one,
pure epsilon-DP (``delta=0``, Gamma-norm noise), epsilon in {0.1, 0.5, 1, 2, 5}, 10
seeds. The same ``C`` is used for the private model and its non-private references:
``C=0.01`` for the linear models (sum form ``C sum loss + 0.5 ||theta||^2``: the
sensitivity ``C sqrt(2)`` is small enough for epsilon >= 1 on ~30,000 rows, at the
cost of some regularisation bias). Non-private references: ``LinearSVC(C)`` with
default settings (squared hinge, its own penalised intercept column of value 1) on the
rows clipped to norm 1, i.e. the same clipped, intercept-augmented design; the exact
hinge minimiser (``epsilon=inf``); and ``ObjPertLogisticRegression`` at the same ``C``.

RBF kernel: the estimator's public defaults, ``gamma="auto"`` (``1 / data_norm**2`` = 1)
and ``n_components=100``, with ``C=C_rbf=0.03``. How they were chosen is recorded under
``rbf_defaults_study``: a grid (gamma, n_components, C) scored on a validation split
(20 %, stratified, ``random_state=0``) of Adult's *training* rows, never on the test
rows, two feature maps and five noise draws each; Adult stands in for public proxy data
there. The grid is rerun by this script (smaller with --quick); the choice was the best
mean validation accuracy at epsilon = 1.

Speed: fit times of the private linear model (epsilon=1), ``LinearSVC(C)`` (defaults,
clipped rows) and ``ObjPertLogisticRegression`` are measured in interleaved repetitions
(ours, LinearSVC, ObjPert, ours, ...) in the same process, and the ratio of the medians
is reported, so that load from other processes hits both sides alike ("matched": the
same C and clipped design, scikit-learn's tolerance; ``LinearSVC(C, loss="hinge")`` on
that design, the same problem with no certificate, is timed in the same rounds). "As
run": ``OutputPertSVM(epsilon=1.0, data_norm=1.0, random_state=0)`` with its defaults
(``C="auto"``) against ``LinearSVC()`` with scikit-learn's, interleaved in one process,
the median of the per-round ratios (see ``AS_RUN_NOTE``).

Accuracy over seeds and epsilons reuses one certified solve per seed: the released
coefficients at epsilon are ``theta* + scale(epsilon) * u`` with the seed's standard
draws ``u`` (exactly what ``fit(epsilon=...)`` returns; checked once below).
"""

import argparse
import itertools
import os
import time
from dataclasses import replace

import numpy as np
from sklearn.model_selection import train_test_split
from sklearn.svm import LinearSVC

from skdp import ObjPertLogisticRegression, OutputPertSVM
from skdp.linear_model._base import split_coefficients
from skdp.mechanisms import draw_gamma_norm
from skdp.utils.validation import clip_rows_to_norm

from ._common import (RESULTS_DIR, environment, figure_footer, interleaved_ratio, summarise,
                      write_results)

NAME = "output_perturbation"
PARAMS = {
    "datasets": ["adult", "kddcup99"],
    "epsilons": [0.1, 0.5, 1.0, 2.0, 5.0],
    "seeds": list(range(10)),
    "C_linear": 0.01,
    "C_rbf": 0.03,
    "n_components": 100,
    "gamma": "auto",
    "neighboring": "add_remove",
    "delta": 0.0,
    "timing_repeats": 7,
    "study": {"gamma": [0.5, 1.0, 2.0], "n_components": [50, 100, 200],
              "C": [0.01, 0.02, 0.03, 0.05], "epsilons": [1.0, 2.0, 5.0],
              "feature_seeds": [0, 1], "noise_seeds": [0, 1, 2, 3, 4]},
}
QUICK = {**PARAMS, "epsilons": [1.0, 5.0], "seeds": [0, 1], "max_train": 5000,
         "timing_repeats": 3,
         "study": {"gamma": [1.0], "n_components": [50, 100], "C": [0.03],
                   "epsilons": [1.0], "feature_seeds": [0], "noise_seeds": [0, 1]}}
TIMING_NOTE = ("Fit times: interleaved repetitions (OutputPertSVM linear epsilon=1, LinearSVC, "
               "ObjPertLogisticRegression epsilon=1) in one process, OPENBLAS_NUM_THREADS as "
               "set by the caller; *_s are medians, ratios are ratios of medians. LinearSVC: "
               "LinearSVC(C=C_linear) with scikit-learn's default settings (squared hinge, "
               "dual='auto', tol=1e-4, fit_intercept=True with intercept_scaling=1) fitted on "
               "the rows clipped to norm 1: the same clipped design with the same penalised "
               "intercept column as OutputPertSVM (which clips inside its own, timed, fit).")


AS_RUN_NOTE = ("As run: each estimator with its defaults as a user fits it on the training "
               "rows, OutputPertSVM(epsilon=1.0, data_norm=1.0, random_state=0) (hinge, "
               "C='auto', tol=1e-3) against LinearSVC() (squared hinge, C=1, tol=1e-4), "
               "timed in turn in one process; ratio = median of the per-round ratios. "
               "'uncertified hinge': LinearSVC(C=C_, loss='hinge', random_state=0) on the "
               "rows clipped to norm 1, the problem OutputPertSVM solves (C_ its C='auto' "
               "value) at liblinear's tolerance with no certificate; ours_over it is what "
               "the certificate costs.")


def as_run_timing(X, y, repeats):
    """OutputPertSVM and LinearSVC with their defaults, interleaved (see AS_RUN_NOTE)."""
    ours = lambda: OutputPertSVM(epsilon=1.0, data_norm=1.0, random_state=0).fit(X, y)
    C_auto = ours().C_   # public: epsilon, the norm bound and the dimension
    X_clipped = clip_rows_to_norm(X, 1.0)
    timing = interleaved_ratio(ours, lambda: LinearSVC().fit(X, y), repeats, {
        "uncertified_hinge": lambda: LinearSVC(C=C_auto, loss="hinge", random_state=0)
        .fit(X_clipped, y)})
    return {**timing, "C_auto": C_auto, "note": AS_RUN_NOTE}


def matched_timing(X, y, params):
    """The interleaved fit times at the benchmark's C on the same clipped design (see
    TIMING_NOTE); ratios of medians, as recorded since the first run."""
    C = params["C_linear"]
    X_clipped = clip_rows_to_norm(X, 1.0)
    times = interleaved_times({
        "outputpert_linear": lambda: make_estimator(params, "linear", 0).fit(X, y),
        "linearsvc_default": lambda: LinearSVC(C=C).fit(X_clipped, y),
        "objpert": lambda: ObjPertLogisticRegression(epsilon=1.0, C=C, random_state=0).fit(X, y),
        "uncertified_hinge": lambda: LinearSVC(C=C, loss="hinge", random_state=0)
        .fit(X_clipped, y),
    }, params["timing_repeats"])
    median = {k: float(np.median(v)) for k, v in times.items()}
    return {
        "linearsvc_default_s": median["linearsvc_default"],
        "outputpert_linear_s": median["outputpert_linear"],
        "objpert_s": median["objpert"],
        "uncertified_hinge_s": median["uncertified_hinge"],
        "ratio_outputpert_linear": median["outputpert_linear"] / median["linearsvc_default"],
        "ratio_objpert": median["objpert"] / median["linearsvc_default"],
        "ratio_outputpert_to_uncertified_hinge":
            median["outputpert_linear"] / median["uncertified_hinge"],
        "repeats": params["timing_repeats"], "all_s": times, "note": TIMING_NOTE,
    }


def make_data(name, params):
    os.environ.setdefault("SKDP_DATA_HOME", os.path.join(os.path.dirname(__file__), "..", "..",
                                                         "shared", "datasets"))
    from skdp.datasets import load_adult, load_kddcup99
    bunch = load_adult() if name == "adult" else load_kddcup99()
    X, y = bunch.X_train, bunch.y_train
    if params.get("max_train"):
        X, y = X[: params["max_train"]], y[: params["max_train"]]
    return X, y, bunch.X_test, bunch.y_test


def make_estimator(params, kernel, seed, epsilon=1.0, **overrides):
    C = params["C_rbf"] if kernel == "rbf" else params["C_linear"]
    kw = dict(epsilon=epsilon, C=C, kernel=kernel, n_components=params["n_components"],
              gamma=params["gamma"], neighboring=params["neighboring"], delta=params["delta"],
              feature_random_state=0, random_state=seed)
    return OutputPertSVM(**{**kw, **overrides})


def _release(est, solutions, epsilon):
    """Set the coefficients released at ``epsilon`` from the transient solutions."""
    n_coef = est.n_components if est.kernel == "rbf" else est.n_features_in_
    est.coef_, est.intercept_ = split_coefficients(
        [s.released(epsilon) for s in solutions], n_coef, est.fit_intercept, est.intercept_scaling)
    return est


def _elapsed(fit):
    start = time.perf_counter()
    fit()
    return time.perf_counter() - start


def interleaved_times(fits, repeats):
    """``{name: [seconds, ...]}``: the fits timed in turn, ``repeats`` rounds."""
    times = {name: [] for name in fits}
    for _ in range(repeats):
        for name, fit in fits.items():
            times[name].append(_elapsed(fit))
    return times


def rbf_defaults_study(X, y, params):
    """Validation accuracy of RBF candidates on a split of the training rows only."""
    study = params["study"]
    X_fit, X_val, y_fit, y_val = train_test_split(X, y, test_size=0.2, random_state=0,
                                                  stratify=y)
    rows = []
    for gamma, n_components, C in itertools.product(study["gamma"], study["n_components"],
                                                    study["C"]):
        scores = {str(eps): [] for eps in study["epsilons"]}
        exact = []
        for feature_seed in study["feature_seeds"]:
            est = make_estimator(params, "rbf", 0, gamma=gamma, n_components=n_components, C=C,
                                 feature_random_state=feature_seed)
            solutions = est._releases(X_fit, y_fit)
            exact.append(_release(est, solutions, np.inf).score(X_val, y_val))
            for noise_seed in study["noise_seeds"]:
                # the same certified solve with fresh standard draws (pure epsilon)
                rng = np.random.default_rng(noise_seed)
                noisy = [replace(s, draw=draw_gamma_norm(s.theta_star.size, rng))
                         for s in solutions]
                for eps in study["epsilons"]:
                    scores[str(eps)].append(_release(est, noisy, eps).score(X_val, y_val))
        rows.append({"gamma": gamma, "n_components": n_components, "C": C,
                     "validation_exact": float(np.mean(exact)),
                     "validation_accuracy": {k: summarise(v) for k, v in scores.items()}})
    first = str(study["epsilons"][0])
    best = max(rows, key=lambda r: r["validation_accuracy"][first]["mean"])
    return {"split": "train_test_split(X_train, y_train, test_size=0.2, stratify=y, "
                     "random_state=0); scores on the 20 % validation part",
            "rule": f"best mean validation accuracy at epsilon = {first}",
            "best": {k: best[k] for k in ("gamma", "n_components", "C")},
            "majority_class_validation_accuracy": float(max(np.mean(y_val == c)
                                                            for c in np.unique(y_val))),
            "grid": rows}


def run_dataset(name, params):
    X, y, X_test, y_test = make_data(name, params)
    out = {"n_train": int(X.shape[0]), "n_features": int(X.shape[1]), "kernels": {}}
    C = params["C_linear"]
    X_clipped = clip_rows_to_norm(X, 1.0)
    out["linearsvc_default_accuracy"] = float(LinearSVC(C=C).fit(X_clipped, y)
                                              .score(X_test, y_test))
    out["majority_class_test_accuracy"] = float(max(np.mean(y_test == c)
                                                    for c in np.unique(y_test)))
    # --- timing (linear kernel): interleaved, medians, ratio to LinearSVC default
    out["timing"] = matched_timing(X, y, params)
    out["timing"]["as_run"] = as_run_timing(X, y, params["timing_repeats"])
    median = {"outputpert_linear": out["timing"]["outputpert_linear_s"],
              "linearsvc_default": out["timing"]["linearsvc_default_s"]}
    # --- ObjPertLogisticRegression at the same C
    objpert = {}
    for eps in params["epsilons"]:
        accs = [ObjPertLogisticRegression(epsilon=eps, C=C, random_state=s).fit(X, y)
                .score(X_test, y_test) for s in params["seeds"]]
        objpert[str(eps)] = summarise(accs)
    out["objpert"] = objpert
    # --- OutputPertSVM, linear and RBF
    for kernel in ("linear", "rbf"):
        accuracy = {str(eps): [] for eps in params["epsilons"]}
        exact = None
        for seed in params["seeds"]:
            est = make_estimator(params, kernel, seed)
            solutions = est._releases(X, y)
            assert all(s.converged for s in solutions)
            if exact is None:
                exact = float(_release(est, solutions, np.inf).score(X_test, y_test))
            for eps in params["epsilons"]:
                accuracy[str(eps)].append(_release(est, solutions, eps).score(X_test, y_test))
            if seed == params["seeds"][0]:  # the shortcut is what fit() releases
                eps = params["epsilons"][0]
                ref = make_estimator(params, kernel, seed, epsilon=eps).fit(X, y)
                np.testing.assert_allclose(_release(est, solutions, eps).coef_, ref.coef_,
                                           rtol=1e-10, atol=1e-12)
        est = make_estimator(params, kernel, 0)
        t_kernel = (median["outputpert_linear"] if kernel == "linear" else
                    float(np.median([_elapsed(lambda: est.fit(X, y)) for _ in range(3)])))
        summary = {k: summarise(v) for k, v in accuracy.items()}
        out["kernels"][kernel] = {
            "C": est.C,
            "gamma": params["gamma"] if kernel == "rbf" else None,
            "gamma_value": est._gamma(X.shape[1]) if kernel == "rbf" else None,
            "n_components": est.n_components if kernel == "rbf" else None,
            "nonprivate_exact_hinge_accuracy": exact,
            "accuracy": summary,
            "fit_time_s": t_kernel,
            "fit_time_ratio_to_linearsvc": t_kernel / median["linearsvc_default"],
            "within_1_point_of_nonprivate": {
                k: bool(v["mean"] >= exact - 0.01) for k, v in summary.items()},
        }
    if name == "adult":
        out["rbf_defaults_study"] = rbf_defaults_study(X, y, params)
    return out


def plot(payload, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    params = payload["params"]
    fig, axes = plt.subplots(1, len(payload["results"]), figsize=(6 * len(payload["results"]), 4.5))
    axes = np.atleast_1d(axes)
    eps = params["epsilons"]
    for ax, (name, res) in zip(axes, payload["results"].items()):
        for kernel, style in (("linear", "o-"), ("rbf", "s-")):
            k = res["kernels"][kernel]
            m = [k["accuracy"][str(e)]["mean"] for e in eps]
            se = [k["accuracy"][str(e)]["sem"] for e in eps]
            label = f"OutputPertSVM {kernel} (C={k['C']}"
            label += f", D={k['n_components']})" if kernel == "rbf" else ")"
            ax.errorbar(eps, m, yerr=se, fmt=style, label=label)
            ax.axhline(k["nonprivate_exact_hinge_accuracy"], ls=":", color=ax.lines[-1].get_color(),
                       label=f"exact hinge, {kernel} (eps=inf)")
        m = [res["objpert"][str(e)]["mean"] for e in eps]
        ax.plot(eps, m, "^-", label=f"ObjPertLogisticRegression (C={params['C_linear']})")
        ax.axhline(res["linearsvc_default_accuracy"], ls="--", color="k",
                   label="LinearSVC default (non-private)")
        ax.axhline(res["majority_class_test_accuracy"], ls="-.", color="grey",
                   label="majority class")
        t = res["timing"]
        ax.set_title(f"{name}: n_train={res['n_train']}; fit time OutputPert/LinearSVC = "
                     f"{t['ratio_outputpert_linear']:.2f}x (medians)", fontsize=9)
        ax.set_xscale("log")
        ax.set_xlabel("epsilon (pure, delta=0)")
        ax.set_ylabel("test accuracy")
        ax.legend(fontsize=7)
    fig.text(0.01, 0.01, figure_footer(payload["environment"], params["seeds"],
                                       params["neighboring"]), fontsize=7)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)


def timing_only(params, quick=False):
    """The fit times alone (matched and as run) per dataset, BLAS limited to one thread,
    written to ``output_perturbation_timing.json`` beside the accuracy run's JSON."""
    from threadpoolctl import threadpool_limits

    timing = {}
    with threadpool_limits(1):
        for name in params["datasets"]:
            X, y, _, _ = make_data(name, params)
            timing[name] = {"matched": matched_timing(X, y, params),
                            "as_run": as_run_timing(X, y, params["timing_repeats"])}
            m, a = timing[name]["matched"], timing[name]["as_run"]
            print(f"{name}: matched {m['ratio_outputpert_linear']:.2f}x LinearSVC(C), "
                  f"{m['ratio_outputpert_to_uncertified_hinge']:.2f}x the uncertified hinge; "
                  f"as run {a['ratio']:.2f}x LinearSVC() ({a['ours_s']:.3f} s vs "
                  f"{a['reference_s']:.3f} s), {a['ours_over']['uncertified_hinge']:.2f}x the "
                  f"uncertified hinge at C_ = {a['C_auto']:.4g}; load {a['load_average']}")
    stem = NAME + ("_quick" if quick else "") + "_timing"
    print("wrote", write_results(stem, {"params": {"timing_repeats": params["timing_repeats"],
                                                    "C_linear": params["C_linear"],
                                                    "blas_threads": 1},
                                         "timing": timing}))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small run for CI (< 1 minute)")
    parser.add_argument("--timing-only", action="store_true",
                        help="only the fit times, matched and as run, BLAS on one thread "
                             "(output_perturbation_timing.json)")
    args = parser.parse_args(argv)
    if args.timing_only:
        timing_only(QUICK if args.quick else PARAMS, args.quick)
        return
    params = QUICK if args.quick else PARAMS
    name = NAME + ("_quick" if args.quick else "")
    results = {d: run_dataset(d, params) for d in params["datasets"]}
    payload = {"params": params, "results": results}
    path = write_results(name, payload)
    payload["environment"] = environment()
    plot(payload, RESULTS_DIR / f"{name}.png")
    for d, res in results.items():
        t = res["timing"]
        print(f"{d}: LinearSVC {t['linearsvc_default_s']:.3f}s, OutputPert linear "
              f"{t['outputpert_linear_s']:.3f}s (ratio {t['ratio_outputpert_linear']:.2f}), "
              f"ObjPert ratio {t['ratio_objpert']:.2f}; LinearSVC default acc "
              f"{res['linearsvc_default_accuracy']:.4f}")
        for kernel, k in res["kernels"].items():
            accs = ", ".join(f"{e}: {k['accuracy'][str(e)]['mean']:.4f}"
                             for e in params["epsilons"])
            print(f"  {kernel} (C={k['C']}): exact {k['nonprivate_exact_hinge_accuracy']:.4f}; "
                  f"{accs}; fit {k['fit_time_s']:.3f}s")
        accs = ", ".join(f"{e}: {res['objpert'][str(e)]['mean']:.4f}" for e in params["epsilons"])
        print(f"  objpert: {accs}")
        for row in res.get("rbf_defaults_study", {}).get("grid", []):
            accs = ", ".join(f"{e}: {v['mean']:.4f}"
                             for e, v in row["validation_accuracy"].items())
            print(f"  study gamma={row['gamma']} D={row['n_components']} C={row['C']}: "
                  f"exact {row['validation_exact']:.4f}; {accs}")
    print("wrote", path)


if __name__ == "__main__":
    main()
