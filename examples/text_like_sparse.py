"""Private classifiers on wide, sparse, text-like CSR data (a small measurement).

A bag-of-words stand-in: each document draws about 30 distinct words from a Zipf-like
vocabulary of 20,000 terms, and documents of class 1 draw a few of their words from a
set of 200 topic words (class 0 from another 200). Rows are binary term indicators
normalised to unit L2 norm, so ``data_norm=1`` clips nothing. The matrix stays CSR
throughout.

Each private classifier runs at its defaults with only the budget given (``epsilon``;
``delta = 1 / n_train**2`` for the estimators that take it), over a few noise draws,
and is scored on held-out rows; scikit-learn's ``LogisticRegression`` is the
non-private reference. ``docs/choosing.rst`` quotes the numbers of the full run.

Run ``python examples/text_like_sparse.py [--quick] [--out-dir DIR]``. It writes
``text_like_sparse.json`` (the numbers, the script's SHA-256 and the versions used;
``examples/_record.py``) to ``DIR``; the docs quote the full run recorded in
``docs/_static``.
"""

import argparse
import time

import numpy as np
import scipy.sparse as sp
from sklearn.linear_model import LogisticRegression

from skdp import DPSGDClassifier, ObjPertLogisticRegression, OutputPertSVM

N_WORDS, N_TOPIC, WORDS_PER_DOC, TOPIC_WORDS_PER_DOC = 20_000, 200, 30, 3
FULL = dict(n_train=50_000, n_test=10_000, epsilons=[0.1, 1.0], seeds=[0, 1, 2])
QUICK = dict(n_train=5_000, n_test=2_000, epsilons=[1.0], seeds=[0])


def make_documents(n_samples, seed):
    """Binary bag-of-words rows (CSR, unit L2 norm) and balanced labels."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n_samples)
    weights = 1.0 / np.arange(1, N_WORDS + 1)          # Zipf-like word frequencies
    weights /= weights.sum()
    common = rng.choice(N_WORDS, size=(n_samples, WORDS_PER_DOC), p=weights)
    topic = rng.integers(0, N_TOPIC, size=(n_samples, TOPIC_WORDS_PER_DOC))
    # the topic words of class c are the vocabulary's entries N_WORDS - (c + 1) * N_TOPIC ...
    topic = N_WORDS - (y[:, None] + 1) * N_TOPIC + topic
    cols = np.hstack([common, topic])
    rows = np.repeat(np.arange(n_samples), cols.shape[1])
    X = sp.csr_matrix((np.ones(cols.size), (rows, cols.ravel())), shape=(n_samples, N_WORDS))
    X.data[:] = 1.0                                      # repeated words count once
    X = sp.csr_matrix(sp.diags(1.0 / np.sqrt(X.getnnz(axis=1))) @ X)
    return X, y


def estimators(epsilon, n_train, seed):
    delta = 1.0 / n_train**2
    return {
        "DPSGDClassifier": DPSGDClassifier(epsilon=epsilon, delta=delta, data_norm=1.0,
                                           random_state=seed),
        "ObjPertLogisticRegression": ObjPertLogisticRegression(epsilon=epsilon,
                                                               data_norm=1.0,
                                                               random_state=seed),
        "ObjPertLogisticRegression(delta)": ObjPertLogisticRegression(
            epsilon=epsilon, delta=delta, data_norm=1.0, random_state=seed),
        "OutputPertSVM": OutputPertSVM(epsilon=epsilon, data_norm=1.0, random_state=seed),
    }


def main(quick=False):
    """Measure held-out accuracy of each private classifier.

    Parameters
    ----------
    quick : bool, default=False
        5,000 training rows, epsilon 1 and one noise draw.

    Returns
    -------
    result : dict
        ``n_train``, ``n_test``, ``shape``, ``nnz_per_row``, ``nonprivate``
        (``LogisticRegression``), ``epsilons``, ``accuracy`` (per estimator, shape
        ``(n_epsilons, n_seeds)``) and ``seconds`` (per estimator, the mean fit time at
        each epsilon: a timing, which the docs check does not compare).
    """
    params = QUICK if quick else FULL
    X_train, y_train = make_documents(params["n_train"], seed=0)
    X_test, y_test = make_documents(params["n_test"], seed=1)
    nonprivate = LogisticRegression(max_iter=1000).fit(X_train, y_train).score(X_test, y_test)
    epsilons, seeds = params["epsilons"], params["seeds"]
    names = list(estimators(1.0, params["n_train"], 0))
    accuracy = {name: np.empty((len(epsilons), len(seeds))) for name in names}
    seconds = {name: np.empty((len(epsilons), len(seeds))) for name in names}
    for i, epsilon in enumerate(epsilons):
        for j, seed in enumerate(seeds):
            for name, est in estimators(epsilon, params["n_train"], seed).items():
                start = time.perf_counter()
                est.fit(X_train, y_train)
                seconds[name][i, j] = time.perf_counter() - start
                accuracy[name][i, j] = est.score(X_test, y_test)
    return dict(n_train=params["n_train"], n_test=params["n_test"], shape=X_train.shape,
                nnz_per_row=X_train.nnz / X_train.shape[0], nonprivate=nonprivate,
                epsilons=epsilons, accuracy=accuracy,
                seconds={name: t.mean(axis=1) for name, t in seconds.items()})


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rows, one budget, one draw")
    parser.add_argument("--out-dir", default=".", help="folder of the record")
    args = parser.parse_args()
    start = time.perf_counter()
    result = main(quick=args.quick)
    run_seconds = time.perf_counter() - start
    n, d = result["shape"]
    print(f"CSR {n} x {d}, {result['nnz_per_row']:.1f} stored entries per row; "
          f"LogisticRegression (non-private) accuracy {result['nonprivate']:.3f}")
    for name, acc in result["accuracy"].items():
        for epsilon, row, fit in zip(result["epsilons"], acc, result["seconds"][name]):
            print(f"epsilon {epsilon:g}  {name:34s} accuracy {row.mean():.3f} ± "
                  f"{row.std():.3f} over {row.size} draws, fit {fit:.2f} s")
    from _record import write_record   # examples/ is on sys.path when run as a script
    print("wrote", write_record(__file__, main, result, quick=args.quick, seconds=run_seconds,
                                out_dir=args.out_dir), f"({run_seconds:.0f} s)")
