"""Choose epsilon for a target accuracy with EpsilonForUtility, on proxy data.

``EpsilonForUtility`` finds the smallest epsilon at which a private estimator reaches a
target utility, from a few private fits and their derivatives in epsilon. Its measuring
fits look at the data they are given, so the choice is only covered by a privacy
guarantee when it is made on data that need no protection. This example follows that
*proxy-data pattern*:

1. one half of the Adult training set plays the role of public proxy data (for example
   an older release from the same population); ``EpsilonForUtility`` runs on it;
2. the other half plays the private data, fitted **once** at the chosen epsilon: that
   fit is the only use of the private data, so its (epsilon, delta) guarantee is the
   whole story. Both halves have the same size, so the epsilon carries over unchanged
   (utility depends on epsilon mostly through ``n_samples * epsilon``).

The plot shows the estimated utility curve and the measuring points of the search
(``EpsilonForUtility.plot``), and, as a check that the search never sees, the test
accuracy of fits on the private half at a grid of epsilons around the answer.

Adult is read from ``$SKDP_DATA_HOME`` (or ``~/skdp_data``) and never downloaded here;
when it is missing the example runs on scikit-learn's breast cancer data instead and
says so in the plot title.

Run ``python examples/plot_choose_epsilon.py [--quick] [--out-dir DIR]``.

Beside the PNG it writes ``choose_epsilon.json``: the numbers behind the figure, the
script's SHA-256 and the versions used (``examples/_record.py``). The docs quote
the full run recorded in ``docs/_static`` (``--out-dir docs/_static``).
"""

import argparse
import time
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import train_test_split

from skdp import AnalyticEpsilonForUtility, ObjPertLogisticRegression
from skdp.datasets import load_adult
from skdp.utils import clip_rows_to_norm

FULL = dict(grid_factors=[0.25, 0.4, 0.63, 1.0, 1.6, 2.5, 4.0], seeds=[0, 1, 2, 3, 4, 5, 6, 7])
QUICK = dict(grid_factors=[0.25, 1.0, 4.0], seeds=[0, 1])
TARGET = {"adult": 0.82, "breast_cancer": 0.75}
DELTA = 1e-5
# the C of the documentation's figure and text (made before C="auto" was the default)
C = 1.0


def load_data(dataset="auto"):
    """Return ``(key, title, X_train, X_test, y_train, y_test)``.

    ``"auto"`` is Adult when it is on disk, else the breast cancer data.
    """
    if dataset in ("auto", "adult"):
        try:
            data = load_adult(download_if_missing=False)
            return "adult", "UCI Adult", data.X_train, data.X_test, data.y_train, data.y_test
        except FileNotFoundError:
            if dataset == "adult":
                raise
    X, y = load_breast_cancer(return_X_y=True)
    # A public teaching dataset, so its column maxima may stand in for public bounds.
    # With private data these bounds must come from outside the data.
    X = clip_rows_to_norm(X / X.max(axis=0) / np.sqrt(X.shape[1]), 1.0)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, stratify=y,
                                                        random_state=0)
    return ("breast_cancer", "breast cancer (Adult not found)", X_train, X_test, y_train,
            y_test)


def main(quick=False, out_dir="."):
    """Search epsilon on the proxy half, fit the private half once, check, and plot.

    Parameters
    ----------
    quick : bool, default=False
        Three check epsilons and two noise draws instead of seven and eight.
    out_dir : str or path-like, default="."
        Folder of the PNG.

    Returns
    -------
    result : dict
        ``dataset``, ``target``, ``epsilon`` (the answer), ``predicted`` (the utility
        the search predicts there), ``n_fits`` (fits on the proxy data),
        ``private_accuracy`` (test accuracy of the one private fit),
        ``grid_epsilons`` and ``grid_accuracy`` (check fits, shape
        ``(n_grid, n_seeds)``) and ``path``.
    """
    params = QUICK if quick else FULL
    key, title, X_train, X_test, y_train, y_test = load_data()
    target = TARGET[key]
    X_proxy, X_private, y_proxy, y_private = train_test_split(
        X_train, y_train, test_size=0.5, stratify=y_train, random_state=0)

    # 1. The search, on the proxy half only.
    search = AnalyticEpsilonForUtility(ObjPertLogisticRegression(delta=DELTA, C=C, data_norm=1.0),
                                       target_utility=target,
                                       n_draws=3, max_fits=7, random_state=0)
    search.fit(X_proxy, y_proxy)
    epsilon = search.epsilon_

    # 2. The one fit on the private half.
    model = ObjPertLogisticRegression(epsilon=epsilon, delta=DELTA, C=C, data_norm=1.0,
                                      random_state=1)
    private_accuracy = model.fit(X_private, y_private).score(X_test, y_test)

    # 3. A check the search never sees: private-half fits around the answer, on test data.
    grid = epsilon * np.asarray(params["grid_factors"])
    grid_accuracy = np.array([
        [ObjPertLogisticRegression(epsilon=e, delta=DELTA, C=C, data_norm=1.0,
                                   random_state=100 + seed)
         .fit(X_private, y_private).score(X_test, y_test) for seed in params["seeds"]]
        for e in grid])

    fig = Figure(figsize=(7.5, 4.5), layout="constrained")
    ax = fig.subplots()
    search.plot(ax=ax)
    ax.errorbar(grid, grid_accuracy.mean(axis=1), yerr=grid_accuracy.std(axis=1), fmt="s",
                ms=4, capsize=2, color="C2",
                label=f"check: test accuracy, private half ({len(params['seeds'])} draws)")
    ax.plot([epsilon], [private_accuracy], "*", ms=12, color="C3",
            label=f"the private fit: {private_accuracy:.3f}")
    ax.set_ylabel("accuracy")
    ax.set_title(f"{title}: smallest epsilon for accuracy {target} "
                 f"(ObjPert, delta={DELTA:g}; {search.n_fits_} proxy fits)", fontsize=10)
    ax.legend(fontsize=8, loc="lower right")
    path = Path(out_dir) / "choose_epsilon.png"
    fig.savefig(path, dpi=90)
    return dict(dataset=title, target=target, epsilon=epsilon,
                predicted=search.predicted_utility_, n_fits=search.n_fits_,
                private_accuracy=private_accuracy, grid_epsilons=grid,
                grid_accuracy=grid_accuracy, path=path)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer check fits")
    parser.add_argument("--out-dir", default=".", help="folder of the PNG")
    args = parser.parse_args()
    start = time.perf_counter()
    result = main(quick=args.quick, out_dir=args.out_dir)
    seconds = time.perf_counter() - start
    print(f"epsilon_ = {result['epsilon']:.3g} (predicted accuracy "
          f"{result['predicted']:.3f}, target {result['target']}); "
          f"private fit: {result['private_accuracy']:.3f}")
    print("wrote", result["path"], f"({seconds:.0f} s)")
    from _record import write_record   # examples/ is on sys.path when run as a script
    print("wrote", write_record(__file__, main, result, quick=args.quick, seconds=seconds))
