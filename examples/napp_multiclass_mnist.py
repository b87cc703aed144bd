"""NAPPLassoClassifier on MNIST against the estimators that work there.

Fits, on the MNIST training rows (all 60,000, or a subsample with ``--rows``), at one
epsilon, each estimator at its defaults given only ``epsilon`` (and ``delta = 1e-5``
for DP-SGD), NAPP with Gaussian noise and a small Jacobian share, and scikit-learn's one-vs-rest L1 logistic regression (liblinear,
``C = 1``, the non-private counterpart of ``NAPPLassoClassifier(alpha=1)``); prints the
fit time and the accuracy on the 10,000 test images, and writes them as JSON with
``--out``. One process, one BLAS thread, noise seed 0: a reproducibility run, not a
release. ``docs/choosing.rst`` (*Three classes or more*) quotes its numbers::

    SKDP_DATA_HOME=... python examples/napp_multiclass_mnist.py --rows 15000
    SKDP_DATA_HOME=... python examples/napp_multiclass_mnist.py
"""

import argparse
import json
import time
import warnings

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.multiclass import OneVsRestClassifier
from threadpoolctl import threadpool_limits

from skdp import (DPSGDClassifier, NAPPLassoClassifier, NoiseDominanceWarning,
                  ObjPertLogisticRegression)
from skdp.datasets import load_mnist


def estimators(epsilon, verbose):
    """The fits compared, by name (the private ones with noise seed 0)."""
    private = dict(epsilon=epsilon, data_norm=1.0, random_state=0)
    return {
        "NAPPLassoClassifier()": NAPPLassoClassifier(verbose=verbose, **private),
        "NAPPLassoClassifier(delta=1e-5, eps_jacobian_frac=0.05)": NAPPLassoClassifier(
            delta=1e-5, eps_jacobian_frac=0.05, verbose=verbose, **private),
        "ObjPertLogisticRegression()": ObjPertLogisticRegression(verbose=verbose, **private),
        "DPSGDClassifier()": DPSGDClassifier(delta=1e-5, verbose=verbose, **private),
        "LogisticRegression(l1, one-vs-rest, C=1)": OneVsRestClassifier(
            LogisticRegression(l1_ratio=1.0, solver="liblinear", C=1.0)),
    }


def measure(estimator, data, rows):
    """Fit time (s) and test accuracy of one estimator."""
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NoiseDominanceWarning)
        estimator.fit(data.X_train[rows], data.y_train[rows])
    seconds = time.perf_counter() - start
    return {"seconds": round(seconds, 1),
            "accuracy": round(float(estimator.score(data.X_test, data.y_test)), 4)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=None,
                        help="subsample this many training rows (seed 0); default all")
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--only", nargs="*", default=None,
                        help="fit only the estimators whose names contain one of these")
    parser.add_argument("--verbose", type=int, default=1)
    parser.add_argument("--out", default=None, help="JSON file for the numbers")
    args = parser.parse_args(argv)
    data = load_mnist()
    n = len(data.y_train)
    rows = (np.arange(n) if args.rows is None
            else np.random.default_rng(0).choice(n, args.rows, replace=False))
    results = {}
    with threadpool_limits(limits=1, user_api="blas"):
        for name, estimator in estimators(args.epsilon, args.verbose).items():
            if args.only and not any(part in name for part in args.only):
                continue
            results[name] = measure(estimator, data, rows)
            print(f"{name}: {results[name]}", flush=True)
    record = {"rows": len(rows), "epsilon": args.epsilon, "results": results}
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(record, f, indent=1)
    return record


if __name__ == "__main__":
    main()
