"""Choosing epsilon inside the guarantee: private selection against its alternatives.

For each dataset (Adult, KDDCup99), estimator and target accuracy, on the test split:

* the **oracle epsilon**: the smallest epsilon on a dense grid at which the estimator
  trained on all the private training rows meets the target on average over the seeds
  (log-linear interpolation between grid points);
* per method and repetition: the realised privacy loss of the whole search over
  the oracle (for the private searches also the training part's alone), the released
  model's test accuracy, whether it is within 0.5 points of the target (at least
  ``target - 0.005``), and the number of private fits.

Methods, in one run:

* ``private``: ``EpsilonForUtility`` (default private mode, curve steering; for
  ``OutputPertSVM(noise="laplace")`` the rungs are one fit's noise path released at
  increasing epsilons, noise reduction, and cost the last rung's epsilon);
* ``private+proxy``: the same, started from the analytic method on a public proxy
  (a fixed disjoint sample of the training file, never part of the private rows);
* ``all rows`` and ``all rows+proxy`` (pure rungs, Laplace noise reduction included,
  DP-GD and Gaussian objective perturbation):
  ``test_rows="all"``, every rung trained on all the private rows and tested on them,
  by Laplace tests added to the pure rungs' sum or Gaussian tests in DP-GD's
  Gaussian-DP odometer or in Gaussian objective perturbation's Renyi odometer;
* ``doubling``: the public doubling ladder (``steering="geometric"``), each rung
  tested by its own Laplace comparison like ``private``'s;
* ``random ladder`` and ``all rows, random ladder``: the randomised ladder
  (``steering="random"``: a public random offset, ratio 3 for pure rungs and
  ``sqrt(3)`` for rungs composed in squares), on a held-out part or on all the rows;
* ``checkpoints`` and ``all rows, checkpoints`` (DP-GD): ``checkpoints=True``, the
  rungs are checkpoints of one continuing full-batch run of ``CHECKPOINT_EPOCHS``
  epochs (the setting the option is measured best at; against the 200-epoch
  estimator's oracle), tested on a held-out part or on all the rows in the run's
  Gaussian-DP odometer;
* ``random stopping``: private selection over a grid with random stopping
  (Liu & Talwar 2019; Papernot & Steinke 2022): a geometric number of candidates,
  each a rung at a uniformly drawn grid epsilon with a Laplace validation accuracy;
  the smallest candidate epsilon whose noisy accuracy meets the target is released;
  pure-DP cost ``3 * max(grid epsilon)`` (Liu & Talwar, Theorem 3.4);
* ``analytic``: today's analytic mode (the source paper's method; not covered by a
  guarantee), its fits composed by basic composition.

DP-GD rungs (delta > 0) are accounted by a Gaussian-DP odometer (filters at levels 1.1
apart, the realised claim the level reached); random stopping's pure-DP formula and the analytic mode (no derivative
for DP-SGD) do not apply to them. Gaussian output perturbation rungs are
releases of one noise path (the Brownian bridge), accounted by the same odometer at
the last rung's ``mu``. For the noise-reduction rows the ratio is also given against
the oracle of the Gamma-norm output perturbation (the same ``C``), the estimator a
user would otherwise run.

Beside each ratio: the **test floor** over the oracle, the privacy cost of the test
alone that tells the target from half a point below it with one-sided error 10 %
(Laplace on the held-out part of ``m = 0.2 n`` rows: ``ln 5 / (0.005 m)``, or on all
``n`` rows: ``ln 5 / (0.005 n)``; the Gaussian test on all rows: ``mu = z_0.9 / (0.005
n)`` at the search's delta); and per
target the oracle fit's **own share** within half a point (its ``oracle_seeds`` fits at
the oracle epsilon), the share a search's released models can be held to.

The oracle curve is measured in two passes: five seeds over the whole grid, then all
the seeds at the grid points on either side of each target's crossing.

Hyperparameters of the estimators are fixed and public (stated in the JSON). The
searches keep ``EpsilonForUtility``'s defaults otherwise (``tolerance``, ``test_ratio``,
``margin="auto"``). The JSON's ``design`` names the selection it measured: the
committed numbers may predate the current one (``_report.private_selection`` says so).
"""

import argparse
import json

import numpy as np
from skdp import (AnalyticEpsilonForUtility, DPSGDClassifier, EpsilonForUtility,
                  ObjPertLogisticRegression, OutputPertSVM)
from skdp.exceptions import PrivacyBudgetError
from skdp.model_selection._selection_tests import FLOOR_BAND, floor_epsilon

from . import _common

TARGETS = {"adult": (0.80, 0.82, 0.83), "kddcup99": (0.97, 0.98, 0.985)}
PROXY_ROWS = 5000
# the selection measured (recorded in the JSON; the report flags results without it)
DESIGN = ("one cap epsilon_max on the whole search; per-rung Laplace tests at test_ratio "
          "times the rung's epsilon on a held-out part, or (all rows) Gaussian tests on "
          "every row in the rungs' GDP odometer; ex-post and a priori figures from "
          "privacy_report_")
VALIDATION_FRACTION = 0.2  # EpsilonForUtility's default
HALF_POINT = FLOOR_BAND
# Output perturbation at C=0.03: at C=0.01 the non-private hinge model trained on the
# training part scores about 0.79 on Adult, below the lowest target.
OBJPERT, OBJPERT_GAUSSIAN, OUTPUT, LAPLACE, GAUSSIAN, DPGD = (
    "objective perturbation (pure, C=1)",
    "objective perturbation (Gaussian, delta_max 1e-5 over the rungs, C=1)",
    "output perturbation (pure, C=0.03)",
    "output perturbation, Laplace noise reduction (pure, C=0.03)",
    "output perturbation, Gaussian noise reduction (delta=1e-6 per rung, odometer delta "
    "1e-5, C=0.03)",
    "DP-GD (delta=1e-6 per rung, odometer delta 1e-5)")
ESTIMATORS = {
    OBJPERT: lambda: ObjPertLogisticRegression(C=1.0, data_norm=1.0),
    OBJPERT_GAUSSIAN: lambda: ObjPertLogisticRegression(C=1.0, delta=1e-6, data_norm=1.0),
    OUTPUT: lambda: OutputPertSVM(C=0.03, data_norm=1.0),
    LAPLACE: lambda: OutputPertSVM(C=0.03, noise="laplace", data_norm=1.0),
    GAUSSIAN: lambda: OutputPertSVM(C=0.03, delta=1e-6, data_norm=1.0),
    DPGD: lambda: DPSGDClassifier(delta=1e-6, sample_rate=1.0, epochs=200, data_norm=1.0),
}
SHORT_NAMES = {"objpert": OBJPERT, "objpert_gaussian": OBJPERT_GAUSSIAN,
               "output": OUTPUT, "laplace": LAPLACE,
               "gaussian": GAUSSIAN, "dpgd": DPGD}
PURE_METHODS = ("private", "private+proxy", "all rows", "all rows+proxy", "doubling",
                "random ladder", "all rows, random ladder", "random stopping", "analytic")
METHODS_OF = {
    # noise reduction needs no ladder of fits: "doubling" would rerun "private"
    LAPLACE: ("private", "private+proxy", "all rows", "all rows+proxy", "random stopping",
              "analytic"),
    # random stopping's formula and the analytic total are pure-DP figures
    GAUSSIAN: ("private", "private+proxy"),
    OBJPERT_GAUSSIAN: ("private", "private+proxy", "all rows", "all rows+proxy", "doubling",
                       "random ladder", "all rows, random ladder"),
    DPGD: ("private", "private+proxy", "all rows", "all rows+proxy", "doubling",
           "all rows, random ladder", "checkpoints", "all rows, checkpoints"),
}
CHECKPOINT_EPOCHS = 10  # DPSGDClassifier's default
REFERENCE_ORACLE = {LAPLACE: OUTPUT, GAUSSIAN: OUTPUT}
GRID = np.geomspace(0.003, 30.0, 25)
PS_GRID = np.geomspace(0.05, 5.0, 8)


def _load(name):
    from skdp import datasets

    bunch = {"adult": datasets.load_adult, "kddcup99": datasets.load_kddcup99}[name]()
    rng = np.random.default_rng(12345)  # public split of the proxy rows
    public = np.zeros(len(bunch.y_train), dtype=bool)
    public[rng.choice(len(public), PROXY_ROWS, replace=False)] = True
    return (bunch.X_train[~public], bunch.y_train[~public], bunch.X_train[public],
            bunch.y_train[public], bunch.X_test, bunch.y_test)


def _score(make, epsilon, seed, X, y, X_test, y_test):
    """Test accuracy of one fit; nan when the estimator refuses the budget before any
    work (DP-GD at an epsilon too small for its number of steps)."""
    try:
        model = make().set_params(epsilon=epsilon, random_state=seed).fit(X, y)
    except PrivacyBudgetError:
        return float("nan")
    return float(model.score(X_test, y_test))


def _seed_score(seed, label, epsilon, X, y, X_test, y_test):
    return _score(ESTIMATORS[label], epsilon, seed, X, y, X_test, y_test)


def _scores(label, epsilon, seeds, X, y, X_test, y_test, n_jobs=1):
    return np.asarray(_common.map_seeds(_seed_score, seeds, n_jobs, label=label,
                                        epsilon=float(epsilon), X=X, y=y, X_test=X_test,
                                        y_test=y_test))


def _oracle_curve(label, X, y, X_test, y_test, seeds, targets, n_jobs=1):
    """Mean test accuracy per grid epsilon (nan where the budget is refused): five seeds
    over the grid, then every seed at the two grid points around each target's
    crossing (and the next ones out while the crossing moves)."""
    def mean(epsilon, some):
        return float(np.mean(_scores(label, epsilon, some, X, y, X_test, y_test, n_jobs)))

    curve = [mean(e, seeds[:5]) for e in GRID]
    done = set()
    for target in targets:
        while True:
            above = np.flatnonzero(np.asarray(curve) >= target)
            if not above.size:
                break
            k = int(above[0])
            todo = [j for j in (k - 1, k) if 0 <= j and j not in done]
            if not todo:
                break
            for j in todo:
                curve[j] = mean(GRID[j], seeds)
                done.add(j)
    return curve


def _oracle_share(label, epsilon, target, seeds, X, y, X_test, y_test, n_jobs=1):
    """The oracle fit's own share within half a point of the target, at its epsilon."""
    scores = _scores(label, epsilon, seeds, X, y, X_test, y_test, n_jobs)
    return float(np.mean(scores >= target - HALF_POINT))


def _test_floor(method, make, n_private):
    """The cost of the test alone that tells the target from half a point below it with
    one-sided error 10 % (:func:`floor_epsilon`): Laplace on the held-out part, or the
    Gaussian test on every row (at the search's delta); None where no such test is run."""
    if method in ("random stopping", "analytic"):
        return None
    all_rows = method.startswith("all rows")
    rows = n_private if all_rows else VALIDATION_FRACTION * n_private
    gaussian = all_rows and _is_gaussian(make)
    return floor_epsilon(rows, _search_params(make)["delta_max"] if gaussian else None)


def _oracle(curve, target):
    curve = np.asarray(curve)
    above = np.flatnonzero(curve >= target)
    if not above.size:
        return None
    k = above[0]
    if k == 0 or np.isnan(curve[k - 1]):  # nothing below to interpolate from
        return float(GRID[k])
    lo, hi = np.log(GRID[k - 1]), np.log(GRID[k])
    t = (target - curve[k - 1]) / (curve[k] - curve[k - 1])
    return float(np.exp(lo + t * (hi - lo)))


def _is_gaussian(make):
    return bool(make().get_params().get("delta", 0.0))


def _search_params(make):
    if isinstance(make(), DPSGDClassifier):
        # 0.004: about the smallest epsilon DP-GD accepts at delta 1e-6 with 200 steps;
        # rungs compose in mu^2, so starting low costs little
        return dict(epsilon_max=1.0, delta_max=1e-5, epsilon_start=0.004)
    if _is_gaussian(make):
        return dict(epsilon_max=10.0, delta_max=1e-5, epsilon_start=0.1)
    return dict(epsilon_max=10.0, epsilon_start=0.1)


def _private(make, target, seed, data, proxy=False, steering="curve", test_rows="held_out",
             checkpoints=False):
    X, y, Xp, yp, X_test, y_test = data
    estimator = make().set_params(epochs=CHECKPOINT_EPOCHS) if checkpoints else make()
    search = EpsilonForUtility(estimator, target_utility=target, steering=steering,
                               test_rows=test_rows, checkpoints=checkpoints,
                               random_state=seed, **_search_params(make))
    search.fit(X, y, proxy=(Xp, yp) if proxy else None)
    report = search.privacy_report_
    loss = report["ex_post"]["epsilon"]
    acc = search.score(X_test, y_test) if search.epsilon_ is not None else None
    return loss, acc, search.n_fits_, report["parts"]["training"]["ex_post"]["epsilon"]


def _random_stopping(make, target, seed, data, stop_probability=0.1, validation_fraction=0.2):
    """Liu & Talwar's random stopping over PS_GRID, pure-DP candidates."""
    X, y, _, _, X_test, y_test = data
    rng = np.random.default_rng(seed)
    val = rng.random(len(y)) < validation_fraction
    eps_val = 0.5
    best, n_fits = None, 0
    while True:
        epsilon = float(rng.choice(PS_GRID))
        model = make().set_params(epsilon=epsilon, random_state=int(rng.integers(2**31)))
        model.fit(X[~val], y[~val])
        n_fits += 1
        noisy = (np.sum(model.predict(X[val]) == y[val]) + rng.laplace(scale=1 / eps_val)) \
            / val.sum()
        if noisy >= target and (best is None or epsilon < best[0]):
            best = (epsilon, model)
        if rng.random() < stop_probability or n_fits >= 100:
            break
    loss = 3 * max(float(PS_GRID.max()), eps_val)
    acc = best[1].score(X_test, y_test) if best else None
    return loss, acc, n_fits


def _analytic(make, target, seed, data):
    X, y, _, _, X_test, y_test = data
    search = AnalyticEpsilonForUtility(make(), target_utility=target,
                                       max_fits=11, random_state=seed)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search.fit(X, y)
    return search.privacy_report_["total_epsilon"], search.score(X_test, y_test), search.n_fits_


METHODS = {
    "private": _private,
    "private+proxy": lambda *a: _private(*a, proxy=True),
    "all rows": lambda *a: _private(*a, test_rows="all"),
    "all rows+proxy": lambda *a: _private(*a, proxy=True, test_rows="all"),
    "doubling": lambda *a: _private(*a, steering="geometric"),
    "random ladder": lambda *a: _private(*a, steering="random"),
    "all rows, random ladder": lambda *a: _private(*a, steering="random", test_rows="all"),
    "checkpoints": lambda *a: _private(*a, checkpoints=True),
    "all rows, checkpoints": lambda *a: _private(*a, checkpoints=True, test_rows="all"),
    "random stopping": _random_stopping,
    "analytic": _analytic,
}


def _search_run(seed, method, label, target, data):
    return METHODS[method](ESTIMATORS[label], target, seed, data)


def _summary(runs, oracle, target, reference_oracle=None, floor=None):
    losses = np.array([r[0] for r in runs], dtype=float)
    accs = [r[1] for r in runs]
    released = [a for a in accs if a is not None]
    return {
        "test_floor": floor,
        "test_floor_ratio": floor / oracle if floor is not None and oracle else None,
        "median_ratio": float(np.median(losses) / oracle) if oracle else None,
        "median_training_ratio": (float(np.median([r[3] for r in runs]) / oracle)
                                  if oracle and len(runs[0]) > 3 else None),
        "median_ratio_to_reference": (float(np.median(losses) / reference_oracle)
                                      if reference_oracle else None),
        "median_loss": float(np.median(losses)),
        "released": len(released) / len(runs),
        "mean_accuracy": float(np.mean(released)) if released else None,
        "within_half_point": float(np.mean([a is not None and a >= target - HALF_POINT
                                            for a in accs])),
        "median_fits": float(np.median([r[2] for r in runs])),
    }


def _oracle_row(label, target, curve, out, seeds, data, n_jobs):
    """A target's row before any search: its oracle, the reference estimator's, and
    the oracle fit's own share within half a point."""
    X, y, _, _, X_test, y_test = data
    oracle = _oracle(curve, target)
    reference = out.get(REFERENCE_ORACLE.get(label), {})  # run before this row
    reference = reference.get("targets", {}).get(str(target), {}).get("oracle_epsilon")
    row = {"oracle_epsilon": oracle, "methods": {}, "reference_oracle_epsilon": reference}
    if oracle is not None:
        row["oracle_within_half_point"] = _oracle_share(label, oracle, target, seeds, X, y,
                                                        X_test, y_test, n_jobs)
    return row


def run(dataset, reps, oracle_seeds, methods, checkpoint=None, labels=None, out=None,
        n_jobs=1, add=False):
    """The rows of one dataset; ``checkpoint(rows so far)`` after each estimator, so
    that a run that dies keeps what it finished. ``labels``: only these estimators,
    replacing their rows in ``out`` (the rows of an earlier run); with ``add``, only
    ``methods`` are run and added to those rows, whose oracle curves are reused.
    ``n_jobs``: the seeds of each cell on that many workers (the results do not
    depend on it)."""
    data = _load(dataset)
    X, y, _, _, X_test, y_test = data
    out = {label: rows for label, rows in (out or {}).items() if label in ESTIMATORS}
    for label, make in ESTIMATORS.items():
        if labels is not None and label not in labels:
            continue
        seeds = list(range(oracle_seeds))
        if add:
            curve, rows = out[label]["oracle_curve"], out[label]["targets"]
        else:
            curve = _oracle_curve(label, X, y, X_test, y_test, seeds, TARGETS[dataset],
                                  n_jobs)
            rows = {str(t): _oracle_row(label, t, curve, out, seeds, data, n_jobs)
                    for t in TARGETS[dataset]}
        for target in TARGETS[dataset]:
            row = rows[str(target)]
            if row["oracle_epsilon"] is None:
                continue
            for name in (m for m in METHODS_OF.get(label, PURE_METHODS) if m in methods):
                runs = _common.map_seeds(_search_run, range(1000, 1000 + reps), n_jobs,
                                         method=name, label=label, target=target, data=data)
                row["methods"][name] = {
                    **_summary(runs, row["oracle_epsilon"], target,
                               row["reference_oracle_epsilon"], _test_floor(name, make, len(y))),
                    "runs": [{"loss": r[0], "accuracy": r[1], "fits": r[2],
                              **({"training_loss": r[3]} if len(r) > 3 else {})}
                             for r in runs]}
                print(dataset, label, target, name, {k: v for k, v in row["methods"][name].items()
                                                     if k != "runs"}, flush=True)
        out[label] = {"grid": GRID.tolist(), "oracle_curve": curve, "targets": rows}
        if checkpoint is not None:
            checkpoint({k: out[k] for k in ESTIMATORS if k in out})
    return {k: out[k] for k in ESTIMATORS if k in out}


def plot(payload, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    datasets = list(payload["datasets"])
    fig, axes = plt.subplots(1, len(datasets), figsize=(6 * len(datasets), 4), squeeze=False)
    for ax, dataset in zip(axes[0], datasets):
        labels, values = [], []
        for est, result in payload["datasets"][dataset].items():
            for target, row in result["targets"].items():
                for name, summary in row["methods"].items():
                    if summary["median_ratio"] is not None:
                        short = {v: k for k, v in SHORT_NAMES.items()}.get(est, est[:10])
                        labels.append(f"{short} {target} {name}")
                        values.append(summary["median_ratio"])
        ax.barh(range(len(values)), values)
        ax.set_yticks(range(len(values)), labels, fontsize=5)
        ax.axvline(1.5, color="k", ls="--", lw=1)
        ax.set_xscale("log")
        ax.set_xlabel("median realised privacy loss / oracle epsilon")
        ax.set_title(dataset)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--datasets", nargs="+", default=list(TARGETS))
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--n-jobs", type=int, default=1,
                        help="workers for the seeds of each cell (results unchanged)")
    parser.add_argument("--merge", action="store_true",
                        help="run nothing: merge the per-dataset JSON files of separate "
                             "runs (--datasets X) into one, with its figure")
    parser.add_argument("--estimators", nargs="+", choices=list(SHORT_NAMES),
                        help="rerun only these estimators, replacing their rows in the "
                             "per-dataset JSON files of an earlier run")
    parser.add_argument("--methods", nargs="+", choices=list(METHODS),
                        help="run only these methods and add them to the per-dataset "
                             "JSON files of an earlier run (its oracle curves reused)")
    parser.add_argument("--skip", nargs="+", choices=list(METHODS), default=[],
                        help="leave these methods out (to add them later with --methods)")
    args = parser.parse_args(argv)
    reps, seeds = (2, 2) if args.quick else (args.reps, 20)
    name = "private_selection" + ("_quick" if args.quick else "")
    payload = {"design": DESIGN, "reps": reps, "oracle_seeds": seeds, "proxy_rows": PROXY_ROWS,
               "ps_grid": PS_GRID.tolist(), "oracle_grid": GRID.tolist(),
               "search": {label: _search_params(make) for label, make in ESTIMATORS.items()},
               "datasets": {}}
    if args.merge:
        parts = [json.loads((_common.RESULTS_DIR / f"{name}_{d}.json").read_text())
                 for d in args.datasets]
        payload = {**parts[0], "datasets": {d: p["datasets"][d]
                                            for d, p in zip(args.datasets, parts)}}
        payload.pop("benchmark", None)  # the runs' environment (revision) is kept
    else:
        labels = [SHORT_NAMES[e] for e in args.estimators] if args.estimators else None
        if args.methods and labels is None:
            labels = list(ESTIMATORS)
        for dataset in args.datasets:
            def checkpoint(rows, dataset=dataset):
                payload["datasets"][dataset] = rows
                _common.write_results(f"{name}_{dataset}", payload)

            earlier = None
            if labels is not None:
                part = _common.RESULTS_DIR / f"{name}_{dataset}.json"
                earlier = json.loads(part.read_text())["datasets"][dataset]
            methods = [m for m in args.methods or METHODS if m not in args.skip]
            run(dataset, reps, seeds, methods, checkpoint, labels, earlier, args.n_jobs,
                add=bool(args.methods))
    path = _common.write_results(name, payload)
    plot(payload, path.with_suffix(".png"))


if __name__ == "__main__":
    main()
