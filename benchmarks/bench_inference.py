"""Coverage and width of the intervals of ``inference=True`` (issue 46).

Simulated data with a known population parameter, rows inside the public bounds (so
the covered parameter is the model's): ``d`` features uniform on ``[-1, 1]`` divided by
``sqrt(d)`` (``data_norm=1`` clips nothing), coefficients cycling through ``(1, -2,
0.5)``, intercept 0.5; linear: Gaussian errors of standard deviation 0.5,
``y_bound=4`` (clips with probability below 1e-12); logistic: Bernoulli labels. Per
cell (estimator, n, d, epsilon, delta) and per draw: a fresh dataset, the private fit
(``random_state`` = the draw) and the non-private fit with the same ``inference=True``
(``epsilon=np.inf``). Estimators: ``linear`` (:class:`~skdp.SSPLinearRegression`),
``logistic`` (:class:`~skdp.ObjPertLogisticRegression`), and on request
``output_logistic`` (:class:`~skdp.OutputPertSVM` with ``loss="logistic"``, not in
the default grid: as costly per fit as ``logistic``) and ``dpsgd_logistic``
(:class:`~skdp.DPSGDClassifier` with its defaults, ``delta > 0`` only; its non-private
interval is the logit MLE's Wald interval, ``ObjPertLogisticRegression(epsilon=np.inf,
C=1e4)``, equal to it within 1e-5 standard errors). Recorded per coefficient: the
coverage of the nominal 95 % interval, and the median ratio of its width to the
non-private interval's; and the number of refused fits (:class:`~skdp.InferenceError`).

The non-private fits do not depend on the budget: one set per ``(estimator, n, d)``
serves its six cells. Each cell records its refusal rate, each coefficient's coverage
with its 95 % Clopper-Pearson interval, the share of coefficients covering in [0.93,
0.97] and the median width ratios; the JSON is rewritten after every cell (``complete``
false until the last), so a stopped run is usable.

Run ``python -m benchmarks.bench_inference [--quick] [--estimators K ...] [--sizes N ...]
[--epsilons E ...] [--draws K] [--largest-draws K] [--output NAME]`` (any grid option
narrows the grid) from the repo root; writes ``results/inference.json``
(``inference_quick.json``, or ``results/NAME.json`` for a partial run beside others) and
its PNG. ``--merge A.json B.json ...`` writes one result from partial runs (a cell's
draws are seeded by their index, so a cell is the same in any run; a cell in several
runs is taken from the last); ``--plot-only`` redraws the PNG. Then ``python -m
benchmarks._interval_width_floor`` adds to each cell the width its release allows to first
order, against which the report checks the re-scoped width goal. BLAS is limited to one thread. Timings are not recorded.
"""

import argparse
import itertools
import json
import warnings
from pathlib import Path

import numpy as np
from scipy import stats
from scipy.special import expit
from threadpoolctl import threadpool_limits

from skdp import (DPSGDClassifier, InferenceError, ObjPertLogisticRegression, OutputPertSVM,
                  SSPLinearRegression)

from ._common import RESULTS_DIR, environment, write_results

NAME = "inference"
PARAMS = {"estimators": ["linear", "logistic"],
          "sizes": [2_000, 20_000, 200_000], "dims": [5, 20], "epsilons": [0.3, 1.0, 3.0],
          "deltas": [0.0, 1e-6], "draws": 500}
QUICK = {"sizes": [2_000], "dims": [5], "epsilons": [1.0], "draws": 20}
INTERCEPT = 0.5
ERROR_SD = 0.5   # of the linear model's Gaussian errors


def population(d):
    """The intercept (first) and the coefficients."""
    return np.r_[INTERCEPT, np.resize([1.0, -2.0, 0.5], d)]


def make_data(kind, n, d, seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, d)) / np.sqrt(d)
    theta = population(d)
    score = theta[0] + X @ theta[1:]
    if kind == "linear":
        return X, score + rng.normal(0.0, ERROR_SD, n)
    return X, (rng.uniform(size=n) < expit(score)).astype(int)


def make_estimator(kind, epsilon, delta, seed):
    if kind == "linear":
        return SSPLinearRegression(epsilon=epsilon, delta=delta, data_norm=1.0, y_bound=4.0,
                                   inference=True, random_state=seed)
    if kind == "dpsgd_logistic":
        if np.isinf(epsilon):   # the non-private reference: the logit Wald interval
            return ObjPertLogisticRegression(epsilon=np.inf, C=1e4, data_norm=1.0,
                                             inference=True)
        return DPSGDClassifier(epsilon=epsilon, delta=delta, data_norm=1.0, inference=True,
                               random_state=seed)
    if kind == "output_logistic":
        return OutputPertSVM(epsilon=epsilon, delta=delta, loss="logistic", data_norm=1.0,
                             inference=True, random_state=seed)
    return ObjPertLogisticRegression(epsilon=epsilon, delta=delta, data_norm=1.0,
                                     inference=True, random_state=seed)


def coverage_interval(hits, trials, level=0.95):
    """The Clopper-Pearson interval of a coverage of ``hits`` in ``trials``."""
    if trials == 0:
        return [float("nan"), float("nan")]
    interval = stats.binomtest(int(hits), int(trials)).proportion_ci(level, method="exact")
    return [float(interval.low), float(interval.high)]


def wald_widths(kind, n, d, draws):
    """The non-private intervals' widths, one row per draw (shared by every cell of
    ``(kind, n, d)``: the non-private fit does not depend on the budget)."""
    widths = []
    for seed in range(draws):
        X, y = make_data(kind, n, d, 1_000_000 + seed)
        widths.append(np.diff(make_estimator(kind, np.inf, 0.0, None).fit(X, y).conf_int(),
                              axis=1).ravel())
    return np.asarray(widths)


def run_cell(kind, n, d, epsilon, delta, exact_widths):
    """Coverage, width ratio and refusals of one cell over ``len(exact_widths)``
    draws."""
    theta = population(d)
    draws = len(exact_widths)
    hits, ratios, refused = [], [], 0
    for seed in range(draws):
        X, y = make_data(kind, n, d, 1_000_000 + seed)
        try:
            private = make_estimator(kind, epsilon, delta, seed).fit(X, y).conf_int()
        except InferenceError:
            refused += 1
            continue
        hits.append((private[:, 0] <= theta) & (theta <= private[:, 1]))
        ratios.append(np.diff(private, axis=1).ravel() / exact_widths[seed])
    kept = len(hits)
    counts = np.sum(hits, axis=0) if kept else np.zeros(d + 1, dtype=int)
    coverage = counts / kept if kept else np.full(d + 1, np.nan)
    inside = (coverage >= 0.93) & (coverage <= 0.97)
    return {"estimator": kind, "n": n, "d": d, "epsilon": epsilon, "delta": delta,
            "draws": draws, "refused": refused, "refusal_rate": refused / draws,
            "coverage": coverage.tolist(),
            "coverage_ci": [coverage_interval(k, kept) for k in counts],
            "median_width_ratio": (np.median(ratios, axis=0) if kept
                                   else np.full(d + 1, np.nan)).tolist(),
            "share_in_0.93_0.97": float(np.mean(inside)) if kept else None}


def cell_order(params):
    """The cells grouped by ``(estimator, n, d)`` (one set of non-private fits each),
    the smaller ``n`` first, epsilon 1 first in each group."""
    epsilons = sorted(params["epsilons"], key=lambda epsilon: (epsilon != 1.0, epsilon))
    for n, kind, d in itertools.product(params["sizes"], params["estimators"],
                                        params["dims"]):
        deltas = [delta for delta in params["deltas"]   # DP-SGD needs delta > 0
                  if delta > 0 or kind != "dpsgd_logistic"]
        yield kind, n, d, list(itertools.product(epsilons, deltas))


LABELS = {"linear": "SSPLinearRegression", "logistic": "ObjPertLogisticRegression",
          "output_logistic": "OutputPertSVM (logistic)",
          "dpsgd_logistic": "DPSGDClassifier"}


def plot(payload, path):
    """Per (estimator, delta): the range of the coefficients' coverage per cell (n on
    the x axis, one offset per epsilon, filled markers d = 5, open d = 20), the band
    [0.93, 0.97] shaded; cells refused in every draw are left out."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cells = payload["cells"]
    panels = sorted({(c["estimator"], c["delta"]) for c in cells})
    epsilons = sorted({c["epsilon"] for c in cells})
    fig, axes = plt.subplots(1, len(panels), figsize=(3.4 * len(panels), 3.4), squeeze=False,
                             sharey=True)
    for ax, (kind, delta) in zip(axes[0], panels):
        ax.axhspan(0.93, 0.97, color="0.9")
        for k, epsilon in enumerate(epsilons):
            for d, fill in ((5, None), (20, "none")):
                chosen = [c for c in cells if (c["estimator"], c["delta"], c["epsilon"], c["d"])
                          == (kind, delta, epsilon, d) and c["share_in_0.93_0.97"] is not None]
                if not chosen:
                    continue
                x = [c["n"] * 1.25 ** (k - 1 + (0.3 if d == 20 else 0)) for c in chosen]
                low = [min(c["coverage"]) for c in chosen]
                high = [max(c["coverage"]) for c in chosen]
                mid = [np.median(c["coverage"]) for c in chosen]
                ax.errorbar(x, mid, yerr=[np.subtract(mid, low), np.subtract(high, mid)],
                            fmt="o", color=f"C{k}", mfc=fill, ms=4, lw=1,
                            label=f"epsilon {epsilon:g}" if d == 5 else None)
        ax.set_xscale("log")
        sizes = sorted({c["n"] for c in cells})
        ax.set_xticks(sizes, [f"{n:,}" for n in sizes], fontsize=7)
        ax.minorticks_off()
        ax.set_xlim(sizes[0] / 2, sizes[-1] * 2)
        ax.set_ylim(0.8, 1.005)
        ax.set_xlabel("n (filled d = 5, open d = 20)")
        ax.set_title(f"{LABELS[kind]}, delta {delta:g}", fontsize=8)
    axes[0][0].set_ylabel("95 % coverage (range over coefficients)")
    axes[0][0].legend(fontsize=6, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def cell_key(cell):
    return tuple(cell[k] for k in ("estimator", "n", "d", "epsilon", "delta"))


def merge(paths):
    """One ``inference.json`` from the runs at ``paths`` (each run's parameters kept
    under ``parts``), the cells in the grid's order; a cell in several runs is taken
    from the last of them (a rerun replaces it)."""
    runs = [json.loads(Path(path).read_text()) for path in paths]
    cells = list({cell_key(cell): cell for run in runs for cell in run["cells"]}.values())
    cells.sort(key=lambda c: (c["n"], list(LABELS).index(c["estimator"]), c["d"],
                              c["epsilon"] != 1.0, c["epsilon"], c["delta"]))
    params = {**PARAMS, "draws": max(c["draws"] for c in cells),
              "largest_draws": min(c["draws"] for c in cells if c["n"] == max(PARAMS["sizes"])),
              "parts": [{**run["params"], "complete": run.get("complete", True),
                         "git_sha": run["environment"]["git_sha"]} for run in runs]}
    path = write_results(NAME, {"params": params, "complete": len(cells) == grid_size(PARAMS),
                                "cells": cells})
    plot(json.loads(path.read_text()), path.with_suffix(".png"))
    print(f"wrote {path}: {len(cells)} cells")


def grid_size(params):
    return len(list(itertools.product(*(params[k] for k in ("estimators", "sizes", "dims",
                                                               "epsilons", "deltas")))))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--estimators", nargs="*")
    parser.add_argument("--sizes", nargs="*", type=int)
    parser.add_argument("--dims", nargs="*", type=int)
    parser.add_argument("--epsilons", nargs="*", type=float)
    parser.add_argument("--deltas", nargs="*", type=float)
    parser.add_argument("--draws", type=int)
    parser.add_argument("--largest-draws", type=int,
                        help="draws in the cells of the largest n (default: --draws)")
    parser.add_argument("--output", help="write results/OUTPUT.json (a partial run)")
    parser.add_argument("--plot-only", action="store_true",
                        help="run nothing; draw the PNG of the existing JSON")
    parser.add_argument("--merge", nargs="+", type=Path, metavar="JSON",
                        help="run nothing; write the cells of these partial runs as one "
                             "result (a cell is the same in any run: its draws are seeded "
                             "by their index)")
    args = parser.parse_args(argv)
    if args.merge:
        merge(args.merge)
        return
    if args.plot_only:
        path = RESULTS_DIR / f"{NAME}{'_quick' if args.quick else ''}.json"
        plot(json.loads(path.read_text()), path.with_suffix(".png"))
        return
    params = {**PARAMS, **(QUICK if args.quick else {})}
    params.update({k: v for k, v in vars(args).items()
                   if k not in ("quick", "plot_only", "output") and v})
    params.setdefault("largest_draws", params["draws"])
    name = args.output or (f"{NAME}_quick" if args.quick else NAME)
    warnings.simplefilter("ignore")
    cells = []
    with threadpool_limits(1):
        for kind, n, d, settings in cell_order(params):
            draws = params["largest_draws"] if n == max(params["sizes"]) else params["draws"]
            exact_widths = wald_widths(kind, n, d, draws)
            for epsilon, delta in settings:
                cells.append(run_cell(kind, n, d, epsilon, delta, exact_widths))
                print(cells[-1], flush=True)
                path = write_results(name, {"params": params, "complete": False,
                                            "cells": cells})
    path = write_results(name, {"params": params, "complete": True, "cells": cells})
    plot(json.loads(path.read_text()), path.with_suffix(".png"))
    print(f"wrote {path}; environment {environment()['git_sha']}")


if __name__ == "__main__":
    main()
