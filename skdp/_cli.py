"""Command line entry point: ``python -m skdp`` or ``skdp``."""

import argparse
import sys

import numpy as np

BUILTIN_DATASETS = ("breast_cancer", "adult", "kddcup99")


def _load(name, data_home):
    """Train/test split of a built-in dataset, rows scaled without looking at the data."""
    if name == "breast_cancer":
        from sklearn.datasets import load_breast_cancer
        from sklearn.model_selection import train_test_split
        from sklearn.preprocessing import normalize

        X, y = load_breast_cancer(return_X_y=True)
        X = normalize(X)  # per-row scaling: depends on each row only, costs no privacy
        return train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    from . import datasets

    loader = {"adult": datasets.load_adult, "kddcup99": datasets.load_kddcup99}[name]
    bunch = loader(data_home=data_home)
    return bunch.X_train, bunch.X_test, bunch.y_train, bunch.y_test


def _parser():
    parser = argparse.ArgumentParser(
        prog="skdp",
        description="Fit a differentially private logistic regression at several privacy "
                    "budgets and report its test accuracy.")
    parser.add_argument("--dataset", default="breast_cancer", choices=BUILTIN_DATASETS,
                        help="built-in dataset (default: breast_cancer, shipped with "
                             "scikit-learn, no download)")
    parser.add_argument("--data-home", default=None,
                        help="folder with the Adult/KDDCup99 files (default: $SKDP_DATA_HOME "
                             "or ~/skdp_data; downloaded when missing)")
    parser.add_argument("--epsilons", default="0.5,1,2,5,10,inf",
                        help="comma-separated privacy budgets (default: %(default)s)")
    parser.add_argument("--C", type=float, default=100.0, help="inverse regularisation")
    parser.add_argument("--seeds", type=int, default=10, help="noise draws per epsilon")
    return parser


def main(argv=None):
    """Run the demo; returns the process exit status."""
    args = _parser().parse_args(argv)
    from .linear_model import ObjPertLogisticRegression

    X_train, X_test, y_train, y_test = _load(args.dataset, args.data_home)
    epsilons = [float(e) for e in args.epsilons.split(",")]
    print(f"dataset {args.dataset}: {X_train.shape[0]} training rows, {X_test.shape[0]} test "
          f"rows, {X_train.shape[1]} features; objective perturbation, C={args.C}, "
          f"add/remove-one neighbours, mean over {args.seeds} noise draws")
    print(f"{'epsilon':>8}  {'test accuracy':>13}  {'std':>6}")
    for epsilon in epsilons:
        scores = [
            ObjPertLogisticRegression(epsilon=epsilon, C=args.C, random_state=seed)
            .fit(X_train, y_train).score(X_test, y_test)
            for seed in range(args.seeds if np.isfinite(epsilon) else 1)
        ]
        print(f"{epsilon:>8g}  {np.mean(scores):>13.4f}  {np.std(scores):>6.4f}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
