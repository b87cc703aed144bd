"""OutputPertSVM on Adult and KDDCup99: accuracy against epsilon, fit time against LinearSVC.

Run from the repository root::

    python -m benchmarks.bench_output_perturbation [--quick]

Setting (stated in the JSON and on the figure): neighbouring relation add/remove-one,
pure epsilon-DP (``delta=0``, Gamma-norm noise), epsilon in {0.1, 0.5, 1, 2, 5}, 10
seeds. The same ``C`` is used for the private model and its non-private references:
``C=0.01`` for the linear models (sum form ``C sum loss + 0.5 ||theta||^2``: the
sensitivity ``C sqrt(2)`` is small enough for epsilon >= 1 on ~30,000 rows, at the
cost of some regularisation bias), ``C=1`` for the RBF model (random Fourier features
have norm <= 1 and 500 dimensions; smaller ``C`` underfits to the majority class even
without noise). Non-private references: ``LinearSVC`` with default settings
(squared hinge), the exact hinge minimiser (``epsilon=inf``), and
``ObjPertLogisticRegression`` at the same ``C``.

Speed: the private fit (linear kernel, epsilon=1) is timed against ``LinearSVC(C)``
with default settings in the same run, best of 3, and reported as a ratio.

Accuracy over seeds and epsilons reuses one certified solve per seed: the released
coefficients at epsilon are ``theta* + scale(epsilon) * u`` with the seed's standard
draws ``u`` (exactly what ``fit(epsilon=...)`` returns; checked once below).
"""

import argparse
import os

import numpy as np
from sklearn.svm import LinearSVC

from skdp import ObjPertLogisticRegression, OutputPertSVM
from skdp.linear_model._base import split_coefficients

from ._common import RESULTS_DIR, best_time, environment, figure_footer, summarise, write_results

NAME = "output_perturbation"
PARAMS = {
    "datasets": ["adult", "kddcup99"],
    "epsilons": [0.1, 0.5, 1.0, 2.0, 5.0],
    "seeds": list(range(10)),
    "C_linear": 0.01,
    "C_rbf": 1.0,
    "n_components": 500,
    "neighboring": "add_remove",
    "delta": 0.0,
}
QUICK = {**PARAMS, "epsilons": [1.0, 5.0], "seeds": [0, 1], "n_components": 100,
         "max_train": 5000}


def make_data(name, params):
    os.environ.setdefault("SKDP_DATA_HOME", os.path.join(os.path.dirname(__file__), "..", "..",
                                                         "shared", "datasets"))
    from skdp.datasets import load_adult, load_kddcup99
    bunch = load_adult() if name == "adult" else load_kddcup99()
    X, y = bunch.X_train, bunch.y_train
    if params.get("max_train"):
        X, y = X[: params["max_train"]], y[: params["max_train"]]
    return X, y, bunch.X_test, bunch.y_test


def make_estimator(params, kernel, seed, epsilon=1.0):
    C = params["C_rbf"] if kernel == "rbf" else params["C_linear"]
    return OutputPertSVM(epsilon=epsilon, C=C, kernel=kernel, n_components=params["n_components"],
                         neighboring=params["neighboring"], delta=params["delta"],
                         feature_random_state=0, random_state=seed)


def _release(est, solutions, epsilon):
    """Set the coefficients released at ``epsilon`` from the transient solutions."""
    n_coef = est.n_components if est.kernel == "rbf" else est.n_features_in_
    est.coef_, est.intercept_ = split_coefficients(
        [s.theta(epsilon) for s in solutions], n_coef, est.fit_intercept, est.intercept_scaling)
    return est


def run_dataset(name, params):
    X, y, X_test, y_test = make_data(name, params)
    out = {"n_train": int(X.shape[0]), "n_features": int(X.shape[1]), "kernels": {}}
    C = params["C_linear"]
    out["linearsvc_default_accuracy"] = float(LinearSVC(C=C).fit(X, y).score(X_test, y_test))
    # --- timing (linear kernel): ratio to LinearSVC default, same run, best of 3
    t_ref = best_time(lambda: LinearSVC(C=C).fit(X, y))
    t_ours = best_time(lambda: make_estimator(params, "linear", 0).fit(X, y))
    t_objpert = best_time(lambda: ObjPertLogisticRegression(epsilon=1.0, C=C,
                                                            random_state=0).fit(X, y))
    out["timing"] = {"linearsvc_default_s": t_ref, "outputpert_linear_s": t_ours,
                     "objpert_s": t_objpert, "ratio_outputpert_linear": t_ours / t_ref,
                     "ratio_objpert": t_objpert / t_ref}
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
            solutions = est._solve(X, y)
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
        t_kernel = (t_ours if kernel == "linear" else
                    best_time(lambda: make_estimator(params, kernel, 0).fit(X, y), repeats=1))
        C_k = params["C_rbf"] if kernel == "rbf" else C
        out["kernels"][kernel] = {
            "C": C_k,
            "nonprivate_exact_hinge_accuracy": exact,
            "accuracy": {k: summarise(v) for k, v in accuracy.items()},
            "fit_time_s": t_kernel,
        }
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
            ax.errorbar(eps, m, yerr=se, fmt=style, label=f"OutputPertSVM {kernel} (C={k['C']})")
            ax.axhline(k["nonprivate_exact_hinge_accuracy"], ls=":", color=ax.lines[-1].get_color(),
                       label=f"exact hinge, {kernel} (eps=inf)")
        m = [res["objpert"][str(e)]["mean"] for e in eps]
        ax.plot(eps, m, "^-", label=f"ObjPertLogisticRegression (C={params['C_linear']})")
        ax.axhline(res["linearsvc_default_accuracy"], ls="--", color="k",
                   label="LinearSVC default (non-private)")
        t = res["timing"]
        ax.set_title(f"{name}: n_train={res['n_train']}; fit time OutputPert/LinearSVC = "
                     f"{t['ratio_outputpert_linear']:.1f}x", fontsize=9)
        ax.set_xscale("log")
        ax.set_xlabel("epsilon (pure, delta=0)")
        ax.set_ylabel("test accuracy")
        ax.legend(fontsize=7)
    fig.text(0.01, 0.01, figure_footer(payload["environment"], params["seeds"],
                                       params["neighboring"]), fontsize=7)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small run for CI (< 1 minute)")
    args = parser.parse_args(argv)
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
                  f"{accs}")
        accs = ", ".join(f"{e}: {res['objpert'][str(e)]['mean']:.4f}" for e in params["epsilons"])
        print(f"  objpert: {accs}")
    print("wrote", path)


if __name__ == "__main__":
    main()
