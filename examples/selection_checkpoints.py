"""The smallest epsilon that works, with DP-GD: checkpoints of one run against fresh fits.

``EpsilonForUtility(checkpoints=True)`` around full-batch
``DPSGDClassifier(sample_rate=1.0)`` (constant step size) tests checkpoints of one
continuing run: the rungs up to the last cost what the last one costs, as under noise
reduction. By default (``checkpoints=False``) every rung is a fresh fit and the rungs
compose; the default Poisson-sampled ``DPSGDClassifier()`` composes its fresh rungs in
Renyi DP. This script measures the three on UCI Adult (the whole training split, cap
10, targets 0.80 and 0.82), five seeds each: the realised (ex-post) epsilon of the
whole search, the chosen epsilon and the released model's test accuracy.

Run ``python examples/selection_checkpoints.py`` (about a minute on two cores).
"""

import warnings

import numpy as np

from skdp import DPSGDClassifier, EpsilonForUtility
from skdp.datasets import load_adult

SEARCHES = {
    "DPSGDClassifier(sample_rate=1.0), checkpoints=True":
        (lambda: DPSGDClassifier(sample_rate=1.0, data_norm=1.0), True),
    "DPSGDClassifier(sample_rate=1.0)  [fresh rungs]":
        (lambda: DPSGDClassifier(sample_rate=1.0, data_norm=1.0), False),
    "DPSGDClassifier()  [Poisson, fresh rungs]":
        (lambda: DPSGDClassifier(data_norm=1.0), False),
}


def main(quick=False):
    """Run the comparison; return ``{(name, target): list of per-seed dicts}``."""
    data = load_adult()
    X, y, X_test, y_test = data.X_train, data.y_train, data.X_test, data.y_test
    seeds, targets = (range(1), (0.80,)) if quick else (range(5), (0.80, 0.82))
    if quick:
        X, y = X[:8000], y[:8000]
    results = {}
    for name, (make, checkpoints) in SEARCHES.items():
        for target in targets:
            runs = []
            for seed in seeds:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # a search may release nothing
                    search = EpsilonForUtility(make(), target_utility=target,
                                               epsilon_max=10.0, checkpoints=checkpoints,
                                               random_state=seed).fit(X, y)
                released = search.epsilon_ is not None
                runs.append({"realised": search.privacy_report_["ex_post"]["epsilon"],
                             "chosen": search.epsilon_, "fits": search.n_fits_,
                             "accuracy": search.score(X_test, y_test) if released else None})
            results[(name, target)] = runs
    return results


def _median(values):
    values = [v for v in values if v is not None]
    return float(np.median(values)) if values else float("nan")


if __name__ == "__main__":
    print(f"{'search':<55} target  realised  chosen  accuracy  released")
    for (name, target), runs in main().items():
        print(f"{name:<55} {target:.2f}  {_median([r['realised'] for r in runs]):8.3f}  "
              f"{_median([r['chosen'] for r in runs]):6.3f}  "
              f"{_median([r['accuracy'] for r in runs]):8.4f}  "
              f"{sum(r['chosen'] is not None for r in runs)}/{len(runs)}")
