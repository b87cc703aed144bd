"""Private variable selection with NAPPLasso on a simulated sparse regression.

The data follow a linear model with 20 features of which 5 matter. ``NAPPLasso``
releases the exact minimiser of a lasso objective plus a random linear term, so its
noise can make a null coefficient non-zero (a false positive) and the lasso penalty
``alpha`` has to fight the noise as well as the sampling error. The left panel shows
the coefficient paths against epsilon for one ``alpha`` (mean over noise draws;
coloured: the 5 true features, grey: the 15 null ones). The right panel shows support
recovery for three values of ``alpha``: the share of true features selected (TPR, solid)
and of null features selected (FPR, dashed).

The bounds the privacy analysis needs are public facts of the design, not measured on
the data: rows have L2 norm at most 1 (``data_norm``), targets are clipped to
``[-y_bound, y_bound]`` and the coefficient vector lies in a ball of radius
``coef_bound``. The design has no intercept, so ``fit_intercept=False``.

The simulation is offline; ``--quick`` uses fewer rows, budgets and draws.

Run ``python examples/plot_napp_variable_selection.py [--quick] [--out-dir DIR]``.

Beside the PNG it writes ``napp_variable_selection.json``: the numbers behind the figure, the
script's SHA-256 and the versions used (``examples/_record.py``). The docs quote
the full run recorded in ``docs/_static`` (``--out-dir docs/_static``).
"""

import argparse
import time
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from skdp import NAPPLasso

N_FEATURES = 20
TRUE_COEF = np.r_[3.0, -2.5, 2.0, -2.0, 1.5, np.zeros(N_FEATURES - 5)]
BOUNDS = dict(data_norm=1.0, y_bound=3.0, coef_bound=8.0)
FULL = dict(n_samples=5000, epsilons=[0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0],
            alphas=[30.0, 100.0, 300.0], path_alpha=100.0, seeds=list(range(10)))
QUICK = dict(n_samples=2000, epsilons=[0.5, 5.0, 50.0], alphas=[30.0, 100.0],
             path_alpha=100.0, seeds=[0, 1])


def make_data(n_samples, seed=0):
    """Gaussian rows scaled to norm about 1 (clipped at 1), a sparse linear target."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_samples, N_FEATURES)) / np.sqrt(N_FEATURES)
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y = X @ TRUE_COEF + 0.3 * rng.standard_normal(n_samples)
    return X, y


def main(quick=False, out_dir="."):
    """Fit NAPPLasso over epsilon, alpha and noise draws; plot; return the selection rates.

    Parameters
    ----------
    quick : bool, default=False
        2,000 rows, three budgets, two values of ``alpha`` and two noise draws.
    out_dir : str or path-like, default="."
        Folder of the PNG.

    Returns
    -------
    result : dict
        ``n_samples``, ``epsilons``, ``alphas``, ``tpr`` and ``fpr`` (per alpha, an
        array over epsilons, averaged over draws), ``paths`` (mean coefficients at
        ``path_alpha``, shape ``(n_epsilons, n_features)``), ``nonprivate_coef``
        (``epsilon=inf`` at ``path_alpha``), ``true_coef`` and ``path``.
    """
    params = QUICK if quick else FULL
    X, y = make_data(params["n_samples"])
    epsilons, alphas, seeds = params["epsilons"], params["alphas"], params["seeds"]
    truth = TRUE_COEF != 0

    def fit(alpha, epsilon, seed):
        return NAPPLasso(alpha=alpha, epsilon=epsilon, fit_intercept=False, random_state=seed,
                         **BOUNDS).fit(X, y).coef_

    coefs = {alpha: np.array([[fit(alpha, e, s) for s in seeds] for e in epsilons])
             for alpha in alphas}                     # (n_epsilons, n_seeds, n_features)
    selected = {alpha: c != 0 for alpha, c in coefs.items()}
    tpr = {alpha: s[:, :, truth].mean(axis=(1, 2)) for alpha, s in selected.items()}
    fpr = {alpha: s[:, :, ~truth].mean(axis=(1, 2)) for alpha, s in selected.items()}
    path_alpha = params["path_alpha"]
    paths = coefs[path_alpha].mean(axis=1)
    nonprivate_coef = fit(path_alpha, np.inf, 0)

    fig = Figure(figsize=(10, 4.2), layout="constrained")
    left, right = fig.subplots(1, 2)
    for j in range(N_FEATURES):
        if truth[j]:
            left.plot(epsilons, paths[:, j], marker="o", ms=3, color=f"C{j}",
                      label=f"x{j} (true {TRUE_COEF[j]:g})")
            left.axhline(nonprivate_coef[j], color=f"C{j}", ls=":", lw=1)
        else:
            left.plot(epsilons, paths[:, j], color="0.6", lw=0.8)
    left.axhline(0.0, color="k", lw=0.5)
    left.set_xscale("log")
    left.set_xlabel("epsilon")
    left.set_ylabel("mean coefficient")
    left.set_title(f"coefficient paths, alpha = {path_alpha:g} (dotted: epsilon = inf)",
                   fontsize=9)
    left.set_ylim(top=max(paths.max(), nonprivate_coef.max()) + 1.0)   # room for the legend
    left.legend(fontsize=7, ncol=3, loc="upper center")
    for k, alpha in enumerate(alphas):
        right.plot(epsilons, tpr[alpha], marker="o", ms=3, color=f"C{k}",
                   label=f"TPR, alpha = {alpha:g}")
        right.plot(epsilons, fpr[alpha], marker="s", ms=3, ls="--", color=f"C{k}",
                   label=f"FPR, alpha = {alpha:g}")
    right.set_xscale("log")
    right.set_ylim(-0.03, 1.03)
    right.set_xlabel("epsilon")
    right.set_ylabel("share of features selected")
    right.set_title("support recovery (5 true, 15 null features)", fontsize=9)
    right.legend(fontsize=7)
    fig.suptitle(f"NAPPLasso, n = {params['n_samples']}, pure epsilon-DP, "
                 f"{len(seeds)} noise draws", fontsize=10)
    path = Path(out_dir) / "napp_variable_selection.png"
    fig.savefig(path, dpi=90)
    return dict(n_samples=params["n_samples"], epsilons=epsilons, alphas=alphas, tpr=tpr,
                fpr=fpr, paths=paths, nonprivate_coef=nonprivate_coef, true_coef=TRUE_COEF,
                path=path)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller simulation")
    parser.add_argument("--out-dir", default=".", help="folder of the PNG")
    args = parser.parse_args()
    start = time.perf_counter()
    result = main(quick=args.quick, out_dir=args.out_dir)
    seconds = time.perf_counter() - start
    for alpha in result["alphas"]:
        print(f"alpha={alpha:g} TPR", np.round(result["tpr"][alpha], 2),
              "FPR", np.round(result["fpr"][alpha], 2))
    print("wrote", result["path"], f"({seconds:.0f} s)")
    from _record import write_record   # examples/ is on sys.path when run as a script
    print("wrote", write_record(__file__, main, result, quick=args.quick, seconds=seconds))
