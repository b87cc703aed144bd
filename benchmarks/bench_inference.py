"""Coverage and width of the intervals of ``inference=True`` (issue 46).

Simulated data with a known population parameter, rows inside the public bounds (so
the covered parameter is the model's): ``d`` features uniform on ``[-1, 1]`` divided by
``sqrt(d)`` (``data_norm=1`` clips nothing), coefficients cycling through ``(1, -2,
0.5)``, intercept 0.5; linear: Gaussian errors of standard deviation 0.5,
``y_bound=4`` (clips with probability below 1e-12); logistic: Bernoulli labels. Per
cell (estimator, n, d, epsilon, delta) and per draw: a fresh dataset, the private fit
(``random_state`` = the draw) and the non-private fit with the same ``inference=True``
(``epsilon=np.inf``). Estimators: ``linear`` (:class:`~skdp.SSPLinearRegression`),
``logistic`` (:class:`~skdp.ObjPertLogisticRegression`), ``output_logistic``
(:class:`~skdp.OutputPertSVM` with ``loss="logistic"``), ``dpsgd_logistic``
(:class:`~skdp.DPSGDClassifier` with its defaults, ``delta > 0`` only; its non-private
interval is the logit MLE's Wald interval, ``ObjPertLogisticRegression(epsilon=np.inf,
C=1e4)``, equal to it within 1e-5 standard errors). Recorded per coefficient: the
coverage of the nominal 95 % interval, and the median ratio of its width to the
non-private interval's; and the number of refused fits (:class:`~skdp.InferenceError`).

Run ``python -m benchmarks.bench_inference [--quick] [--sizes N ...] [--epsilons E ...]
[--draws K]`` (any grid option narrows the grid) from the
repo root; writes ``results/inference.json`` (``inference_quick.json``). BLAS is
limited to one thread. Timings are not recorded.
"""

import argparse
import itertools
import warnings

import numpy as np
from scipy.special import expit
from threadpoolctl import threadpool_limits

from skdp import (DPSGDClassifier, InferenceError, ObjPertLogisticRegression, OutputPertSVM,
                  SSPLinearRegression)

from ._common import environment, write_results

NAME = "inference"
PARAMS = {"estimators": ["linear", "logistic", "output_logistic", "dpsgd_logistic"],
          "sizes": [2_000, 20_000, 200_000], "dims": [5, 20], "epsilons": [0.3, 1.0, 3.0],
          "deltas": [0.0, 1e-6], "draws": 500}
QUICK = {"sizes": [2_000], "dims": [5], "epsilons": [1.0], "draws": 20}
INTERCEPT = 0.5


def population(d):
    """The intercept (first) and the coefficients."""
    return np.r_[INTERCEPT, np.resize([1.0, -2.0, 0.5], d)]


def make_data(kind, n, d, seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, d)) / np.sqrt(d)
    theta = population(d)
    score = theta[0] + X @ theta[1:]
    if kind == "linear":
        return X, score + rng.normal(0.0, 0.5, n)
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


def run_cell(kind, n, d, epsilon, delta, draws):
    theta = population(d)
    hits, widths, refused = [], [], 0
    for seed in range(draws):
        X, y = make_data(kind, n, d, 1_000_000 + seed)
        try:
            private = make_estimator(kind, epsilon, delta, seed).fit(X, y).conf_int()
        except InferenceError:
            refused += 1
            continue
        exact = make_estimator(kind, np.inf, 0.0, None).fit(X, y).conf_int()
        hits.append((private[:, 0] <= theta) & (theta <= private[:, 1]))
        widths.append(np.diff(private, axis=1).ravel() / np.diff(exact, axis=1).ravel())
    kept = len(hits)
    coverage = np.mean(hits, axis=0) if kept else np.full(d + 1, np.nan)
    return {"estimator": kind, "n": n, "d": d, "epsilon": epsilon, "delta": delta,
            "draws": draws, "refused": refused, "coverage": coverage.tolist(),
            "median_width_ratio": (np.median(widths, axis=0) if kept
                                   else np.full(d + 1, np.nan)).tolist(),
            "share_in_0.93_0.97": float(np.mean((coverage >= 0.93) & (coverage <= 0.97)))}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--estimators", nargs="*")
    parser.add_argument("--sizes", nargs="*", type=int)
    parser.add_argument("--dims", nargs="*", type=int)
    parser.add_argument("--epsilons", nargs="*", type=float)
    parser.add_argument("--deltas", nargs="*", type=float)
    parser.add_argument("--draws", type=int)
    args = parser.parse_args(argv)
    params = {**PARAMS, **(QUICK if args.quick else {})}
    params.update({k: v for k, v in vars(args).items() if k != "quick" and v})
    warnings.simplefilter("ignore")
    cells = []
    with threadpool_limits(1):
        for kind, n, d, epsilon, delta in itertools.product(
                params["estimators"], params["sizes"], params["dims"], params["epsilons"],
                params["deltas"]):
            if kind == "dpsgd_logistic" and delta == 0:   # DP-SGD needs delta > 0
                continue
            cells.append(run_cell(kind, n, d, epsilon, delta, params["draws"]))
            print(cells[-1], flush=True)
    path = write_results(f"{NAME}_quick" if args.quick else NAME,
                         {"params": params, "cells": cells})
    print(f"wrote {path}; environment {environment()['git_sha']}")


if __name__ == "__main__":
    main()
