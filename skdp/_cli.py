"""Command line main job: ``python -m skdp`` (or the ``skdp`` console script).

Given a dataset, a private estimator and a target accuracy, it runs
:class:`~skdp.EpsilonForUtility`, prints the chosen epsilon, the predicted and the
measured accuracy there and the privacy cost of the selection, and writes a PNG of
the utility-versus-epsilon curve.
"""

import argparse
import sys
import time
from pathlib import Path

BUILTIN_DATASETS = ("breast_cancer", "adult", "kddcup99")
ESTIMATORS = ("objpert", "dpsgd", "napp", "outputpert")


def _split(X, y, seed):
    from sklearn.model_selection import train_test_split

    return train_test_split(X, y, test_size=0.3, random_state=seed, stratify=y)


def load_dataset(name, data_home=None, label_column=None, seed=0):
    """Train/test split of a built-in dataset or a CSV file, rows scaled per row only.

    Per-row scaling (dividing each row by its own norm) depends on that row alone, so
    it costs no privacy; no statistic of the whole data set is computed.
    """
    from sklearn.preprocessing import normalize

    if name == "breast_cancer":
        from sklearn.datasets import load_breast_cancer

        X, y = load_breast_cancer(return_X_y=True)
        return _split(normalize(X), y, seed)
    if name in ("adult", "kddcup99"):
        from . import datasets

        loader = {"adult": datasets.load_adult, "kddcup99": datasets.load_kddcup99}[name]
        bunch = loader(data_home=data_home)
        return bunch.X_train, bunch.X_test, bunch.y_train, bunch.y_test
    path = Path(name)
    if not path.is_file():
        raise SystemExit(f"skdp: {name!r} is neither a built-in dataset "
                         f"({', '.join(BUILTIN_DATASETS)}) nor a CSV file.")
    import pandas as pd

    frame = pd.read_csv(path)
    label = label_column or frame.columns[-1]
    if label not in frame.columns:
        raise SystemExit(f"skdp: no column {label!r} in {path}; choose --label-column.")
    y = frame.pop(label).to_numpy()
    features = pd.get_dummies(frame, dtype=float)  # categories of this file: see the docs
    return _split(normalize(features.to_numpy(dtype=float)), y, seed)


def make_estimator(name):
    """A private estimator with settings that suit row-normalised data."""
    from . import DPSGDClassifier, NAPPLassoClassifier, ObjPertLogisticRegression

    if name == "objpert":
        return ObjPertLogisticRegression(C=100.0)
    if name == "dpsgd":
        return DPSGDClassifier()
    if name == "napp":
        return NAPPLassoClassifier()
    from . import OutputPertSVM

    return OutputPertSVM()


def _parser():
    parser = argparse.ArgumentParser(
        prog="skdp",
        description="Find the smallest privacy budget epsilon at which a differentially "
                    "private classifier reaches a target accuracy, then fit it there.")
    parser.add_argument("--dataset", default="breast_cancer",
                        help="built-in dataset (breast_cancer [default, ships with "
                             "scikit-learn], adult, kddcup99) or a CSV file path")
    parser.add_argument("--label-column", default=None,
                        help="label column of a CSV file (default: the last column)")
    parser.add_argument("--data-home", default=None,
                        help="folder with the Adult/KDDCup99 files (default: $SKDP_DATA_HOME "
                             "or ~/skdp_data; downloaded when missing)")
    parser.add_argument("--estimator", default="objpert", choices=ESTIMATORS)
    parser.add_argument("--target", type=float, default=0.85,
                        help="target accuracy (default: %(default)s)")
    parser.add_argument("--measuring-epsilon", type=float, default=5.0,
                        help="where to measure the utility and its derivative")
    parser.add_argument("--draws", type=int, default=5, help="noise draws per measurement")
    parser.add_argument("--max-fits", type=int, default=None,
                        help="private fits allowed in total, the refit included "
                             "(default: draws + 1 + draws, one refinement)")
    parser.add_argument("--output", default="skdp_utility_curve.png",
                        help="where to write the utility-versus-epsilon plot")
    parser.add_argument("--seed", type=int, default=None,
                        help="reproducibility mode: derive the noise of every private fit "
                             "from this integer (never publish a model with its seed). "
                             "Default: fresh cryptographic noise for every fit")
    parser.add_argument("--quiet", action="store_true",
                        help="no progress lines (by default one per round of measuring fits)")
    return parser


def main(argv=None):
    """Run the main job; returns the process exit status."""
    args = _parser().parse_args(argv)
    from . import EpsilonForUtility

    start = time.perf_counter()
    # the train/test split of the demonstration data is public: a fixed seed
    X_train, X_test, y_train, y_test = load_dataset(args.dataset, args.data_home,
                                                    args.label_column, seed=0)
    estimator = make_estimator(args.estimator)
    max_fits = args.max_fits if args.max_fits is not None else 2 * args.draws + 1
    print(f"[skdp] {args.dataset}: {X_train.shape[0]} training rows, {X_test.shape[0]} test "
          f"rows, {X_train.shape[1]} features; estimator {type(estimator).__name__}; "
          f"target accuracy {args.target}", flush=True)
    print(f"[skdp] measuring at epsilon={args.measuring_epsilon} with {args.draws} draws, "
          f"at most {max_fits} private fits ...", flush=True)
    search = EpsilonForUtility(estimator, target_utility=args.target,
                               measuring_epsilon=args.measuring_epsilon, n_draws=args.draws,
                               max_fits=max_fits, verbose=0 if args.quiet else 1,
                               random_state=args.seed)
    search.fit(X_train, y_train)
    measured = search.score(X_test, y_test)
    report = search.privacy_report_
    print(f"[skdp] done in {time.perf_counter() - start:.1f} s")
    print(f"chosen epsilon            : {search.epsilon_:.4g}")
    print(f"predicted accuracy there  : {search.predicted_utility_:.4f} (validation split)")
    print(f"measured test accuracy    : {measured:.4f} (refit model, held-out test rows)")
    print(f"released model            : ({report['released_model']['epsilon']:.4g}, "
          f"{report['released_model']['delta']:.3g})-DP, "
          f"neighbouring {search.best_estimator_.neighboring_}")
    print(f"cost of the selection     : {len(report['fits'])} private fits, total epsilon "
          f"{report['total_epsilon']:.4g}, total delta {report['total_delta']:.3g} "
          f"({report['composition']})")
    print(f"note: {report['statement']}")
    try:
        import matplotlib
    except ImportError:
        print("matplotlib is not installed: no plot written (pip install 'skdp[plot]').")
        return 0
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    search.plot(ax=ax)
    ax.plot([search.epsilon_], [measured], "k*", ms=10, label="refit, test accuracy")
    ax.legend(fontsize=8)
    ax.set_title(f"{type(estimator).__name__} on {args.dataset}")
    fig.tight_layout()
    fig.savefig(args.output, dpi=110)
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
