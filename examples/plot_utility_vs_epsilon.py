"""Test accuracy against epsilon on UCI Adult, for every skdp classifier.

Each private classifier is fitted on the Adult training set at a range of privacy
budgets epsilon, with several noise draws per budget, and scored on the official test
set. The dotted line of each colour is the same estimator at ``epsilon=np.inf`` (no
noise: the price of its loss and penalty alone); the dashed black line is scikit-learn's
``LogisticRegression``.

The hyperparameters are fixed in advance (from ``benchmarks/``), not tuned on this data:
tuning on private data would spend budget that these curves do not count.

Adult is read from ``$SKDP_DATA_HOME`` (or ``~/skdp_data``) and never downloaded here;
when it is missing the example runs on scikit-learn's breast cancer data instead and
says so in the plot title.

Run ``python examples/plot_utility_vs_epsilon.py [--quick] [--out-dir DIR]``.

Beside the PNG it writes ``utility_vs_epsilon.json``: the numbers behind the figure, the
script's SHA-256 and the versions used (``examples/_record.py``). The docs quote
the full run recorded in ``docs/_static`` (``--out-dir docs/_static``).
"""

import argparse
import time
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split

from skdp import DPSGDClassifier, NAPPLassoClassifier, ObjPertLogisticRegression, OutputPertSVM
from skdp.datasets import load_adult
from skdp.utils import clip_rows_to_norm

FULL = dict(epsilons=[0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0], seeds=[0, 1, 2, 3, 4])
QUICK = dict(epsilons=[0.1, 1.0, 10.0], seeds=[0])
ADULT_ROWS = 30162   # training rows of Adult, where NAPP's penalty below was chosen


def load_data(dataset="auto"):
    """Return ``(title, X_train, X_test, y_train, y_test)``.

    ``"auto"`` is Adult when it is on disk, else the breast cancer data.
    """
    if dataset in ("auto", "adult"):
        try:
            data = load_adult(download_if_missing=False)
            return "UCI Adult", data.X_train, data.X_test, data.y_train, data.y_test
        except FileNotFoundError:
            if dataset == "adult":
                raise
    X, y = load_breast_cancer(return_X_y=True)
    # A public teaching dataset, so its column maxima may stand in for public bounds.
    # With private data these bounds must come from outside the data.
    X = clip_rows_to_norm(X / X.max(axis=0) / np.sqrt(X.shape[1]), 1.0)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, stratify=y,
                                                        random_state=0)
    return "breast cancer (Adult not found)", X_train, X_test, y_train, y_test


def make_estimators(epsilon, seed, n_samples):
    """The classifiers compared, at one budget and one noise seed.

    Objective and output perturbation set ``C`` from the budget (``C="auto"``, their
    default). NAPP's objective is a sum over rows, so its penalty, chosen for Adult,
    is scaled with ``n_samples`` (public) to keep the same balance between data and
    penalty on another dataset.
    """
    alpha = 10.0 * n_samples / ADULT_ROWS
    return {
        "ObjPertLogisticRegression": ObjPertLogisticRegression(epsilon=epsilon,
                                                               data_norm=1.0,
                                                               random_state=seed),
        "OutputPertSVM": OutputPertSVM(epsilon=epsilon, data_norm=1.0,
                                       random_state=seed),
        "DPSGDClassifier (delta=1e-5)": DPSGDClassifier(epsilon=epsilon, delta=1e-5,
                                                        data_norm=1.0, random_state=seed),
        f"NAPPLassoClassifier (alpha={alpha:.2g})": NAPPLassoClassifier(
            alpha=alpha, epsilon=epsilon, data_norm=1.0, random_state=seed),
    }


def main(quick=False, out_dir="."):
    """Fit every classifier over the epsilon grid, plot, and return the accuracies.

    Parameters
    ----------
    quick : bool, default=False
        Three budgets and one noise draw instead of eight budgets and five draws.
    out_dir : str or path-like, default="."
        Folder of the PNG.

    Returns
    -------
    result : dict
        ``dataset``, ``n_train``, ``epsilons``, ``accuracy`` (per estimator, an array
        of shape ``(n_epsilons, n_seeds)``), ``C`` (per estimator with ``C="auto"``,
        the ``C_`` used at each epsilon), ``nonprivate`` (per estimator, at
        ``epsilon=inf``), ``sklearn`` (``LogisticRegression``), ``majority`` (the
        test accuracy of predicting the most frequent test label) and ``path``.
    """
    params = QUICK if quick else FULL
    title, X_train, X_test, y_train, y_test = load_data()
    epsilons, n = params["epsilons"], len(y_train)
    names = list(make_estimators(1.0, 0, n))
    accuracy = {name: np.empty((len(epsilons), len(params["seeds"]))) for name in names}
    C = {}    # the C that C="auto" chose (a function of public parameters only)
    for i, epsilon in enumerate(epsilons):
        for j, seed in enumerate(params["seeds"]):
            for name, estimator in make_estimators(epsilon, seed, n).items():
                estimator.fit(X_train, y_train)
                accuracy[name][i, j] = estimator.score(X_test, y_test)
                if j == 0 and hasattr(estimator, "C_"):
                    C.setdefault(name, []).append(estimator.C_)
    nonprivate = {name: est.fit(X_train, y_train).score(X_test, y_test)
                  for name, est in make_estimators(np.inf, 0, n).items()}
    sklearn = LogisticRegression(max_iter=1000).fit(X_train, y_train).score(X_test, y_test)
    majority = max(np.mean(y_test == label) for label in np.unique(y_test))

    fig = Figure(figsize=(7.5, 4.5), layout="constrained")
    ax = fig.subplots()
    for k, name in enumerate(names):
        mean, std = accuracy[name].mean(axis=1), accuracy[name].std(axis=1)
        ax.errorbar(epsilons, mean, yerr=std, marker="o", ms=4, capsize=2, color=f"C{k}",
                    label=name)
        ax.axhline(nonprivate[name], color=f"C{k}", ls=":", lw=1)
    ax.axhline(sklearn, color="k", ls="--", lw=1, label="sklearn LogisticRegression")
    ax.axhline(majority, color="0.5", lw=1, label="majority class")
    ax.set_xscale("log")
    ax.set_xlabel("epsilon")
    ax.set_ylabel("test accuracy")
    ax.set_title(f"{title}: test accuracy against epsilon "
                 f"({len(params['seeds'])} noise draws; dotted: epsilon = inf)", fontsize=10)
    ax.legend(fontsize=8, loc="lower right")
    path = Path(out_dir) / "utility_vs_epsilon.png"
    fig.savefig(path, dpi=90)
    return dict(dataset=title, n_train=n, epsilons=epsilons, accuracy=accuracy, C=C,
                nonprivate=nonprivate, sklearn=sklearn, majority=majority, path=path)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small grid, one draw")
    parser.add_argument("--out-dir", default=".", help="folder of the PNG")
    args = parser.parse_args()
    start = time.perf_counter()
    result = main(quick=args.quick, out_dir=args.out_dir)
    seconds = time.perf_counter() - start
    for name, acc in result["accuracy"].items():
        print(f"{name:32s}", " ".join(f"{v:.3f}" for v in acc.mean(axis=1)))
    print("wrote", result["path"], f"({seconds:.0f} s)")
    from _record import write_record   # examples/ is on sys.path when run as a script
    print("wrote", write_record(__file__, main, result, quick=args.quick, seconds=seconds))
