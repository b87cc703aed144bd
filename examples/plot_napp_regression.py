"""Private linear regression with NAPPLasso: public scaling, and the rows it needs.

``NAPPLasso`` with the squared loss needs three public bounds, and each one has a
consequence worth knowing before the first fit:

* ``data_norm``: every row of ``X`` is clipped to this L2 norm. The intercept is an
  extra constant column (``intercept_scaling``, 1 by default), so a row's norm in the
  privacy analysis is ``sqrt(data_norm**2 + intercept_scaling**2)``.
* ``y_bound``: the target is clipped to ``[-y_bound, y_bound]``, an interval
  **symmetric around 0**. A raw target such as a disease score between 25 and 346 would
  be clipped to ``[-y_bound, 346]`` at best and the bound (which sets the noise) would
  be twice what the spread needs. Centre and scale ``y`` first, with public constants.
* ``coef_bound``: the released vector lies in the ball of this radius, and the
  **intercept counts inside it**: ``||(coef_, intercept_ / intercept_scaling)|| <=
  coef_bound``. A target left uncentred needs a large intercept, which uses up the ball
  and inflates the noise (the noise grows with ``R * coef_bound + y_bound``).

Public constants are constants that do not come from the private rows: a data
dictionary (units, plausible range of each variable), a published range or reference
population, or the design of a survey. Here:

* the diabetes features ship standardised (each column has mean 0 and sum of squares 1,
  as the data description says); ``sqrt(442)`` turns them back into z-scores, and a
  row of ten z-scores has norm about ``sqrt(10)``, so the rows are divided by
  ``2 sqrt(10)`` (typical norm 0.5) and clipped to ``data_norm=1`` (scikit-learn's
  standardisation was computed from all 442 rows; the example takes it as published,
  which a real private release could not: there, scale each feature by its documented
  range or unit instead);
* the target is documented as a progression score between 25 and 346 (Efron et al.,
  2004); it is centred at 150 and divided by 100, round numbers from that range, and
  clipped to ``y_bound=2``;
* ``coef_bound=4``: a typical row has norm 0.5 and the scaled target lies in
  ``[-2, 2]``, so a coefficient vector of norm ``2 / 0.5 = 4`` already reaches the edge
  of the target's range from a typical row. The left panel also shows the tighter
  public choice ``coef_bound=2``: less noise, but a ball that may not contain the
  best fit (the ``epsilon=inf`` lines show what the constraint alone costs).

None of these numbers is computed from the rows being fitted.

The left panel shows held-out R^2 on diabetes (331 training rows) against epsilon, with
the same estimator at ``epsilon=inf`` and scikit-learn's ``LinearRegression`` (on the
same clipped rows) as references. The right panel answers "how many rows does it need?" on a simulated
regression with the same shape (ten standard normal features, the same public
scaling, noise set so that the population R^2 is 0.5): R^2 against the number of
training rows at epsilon 1, 3 and 10 (``coef_bound=4``). The script reports the smallest
simulated size at which the mean R^2 is within 0.05 of the same estimator at
``epsilon=inf`` (which is within 0.01 of ``LinearRegression`` here).

Offline; ``--quick`` uses fewer budgets, sizes and noise draws.

Run ``python examples/plot_napp_regression.py [--quick] [--out-dir DIR]``.

Beside the PNG it writes ``napp_regression.json``: the numbers behind the figure, the
script's SHA-256 and the versions used (``examples/_record.py``). The docs quote
the full run recorded in ``docs/_static`` (``--out-dir docs/_static``).
"""

import argparse
import time
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure
from sklearn.datasets import load_diabetes
from sklearn.linear_model import LinearRegression
from sklearn.metrics import r2_score
from sklearn.model_selection import train_test_split

from skdp import NAPPLasso
from skdp.utils import clip_rows_to_norm

# Public constants (see the docstring): none is computed from the training rows.
N_FEATURES = 10
ROW_SCALE = 2.0 * np.sqrt(N_FEATURES)    # z-scores of 10 features / this: norm about 0.5
Y_CENTRE, Y_SCALE = 150.0, 100.0         # diabetes: documented range 25..346
BOUNDS = dict(data_norm=1.0, y_bound=2.0)
COEF_BOUND = 4.0                          # y_bound / typical row norm (0.5)
TIGHT_COEF_BOUND = 2.0                    # a tighter public choice, shown on diabetes
ALPHA = 1.0
TRUE_COEF = np.array([1.0, -1.0, 0.8, -0.8, 0.6, -0.6, 0.4, -0.4, 0.2, -0.2])
TOLERANCE = 0.05                          # "close enough" to the non-private R^2
POPULATION_R2 = 0.5                       # of the simulation

FULL = dict(epsilons=[0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0],
            sizes=[250, 500, 1000, 2000, 4000, 8000, 16000, 32000],
            size_epsilons=[1.0, 3.0, 10.0], seeds=list(range(10)), n_test=10000)
QUICK = dict(epsilons=[1.0, 10.0, 100.0], sizes=[500, 4000, 16000],
             size_epsilons=[1.0, 10.0], seeds=[0, 1], n_test=5000)


def load_diabetes_public():
    """Diabetes with the public scaling of the docstring; 331 training, 111 test rows."""
    X, y = load_diabetes(return_X_y=True)
    X = X * np.sqrt(X.shape[0]) / ROW_SCALE   # sqrt(442): the documented column scaling
    y = (y - Y_CENTRE) / Y_SCALE
    return train_test_split(X, y, test_size=0.25, random_state=0)


def make_simulation(n_samples, seed):
    """A linear model with ten standard normal features and population R^2 = 0.5.

    The features are standard normal by construction, so the same public row scaling
    applies; the target is divided by ``2 * ||TRUE_COEF||`` (its standard deviation is
    then about 0.7), a constant of the simulation's design, public because we chose it.
    """
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_samples, N_FEATURES))
    signal_sd = np.linalg.norm(TRUE_COEF)
    noise_sd = signal_sd * np.sqrt(1.0 / POPULATION_R2 - 1.0)
    y = X @ TRUE_COEF + noise_sd * rng.standard_normal(n_samples)
    return X / ROW_SCALE, y / (2.0 * signal_sd)


def r2(estimator, X_train, y_train, X_test, y_test):
    return r2_score(y_test, estimator.fit(X_train, y_train).predict(X_test))


def private(epsilon, seed, coef_bound=COEF_BOUND):
    return NAPPLasso(alpha=ALPHA, epsilon=epsilon, coef_bound=coef_bound, random_state=seed,
                     **BOUNDS)


def main(quick=False, out_dir="."):
    """Fit NAPPLasso over epsilon (diabetes) and over the number of rows (simulation).

    Parameters
    ----------
    quick : bool, default=False
        Three budgets, three sizes and two noise draws.
    out_dir : str or path-like, default="."
        Folder of the PNG.

    Returns
    -------
    result : dict
        ``population_r2`` and ``tolerance`` (constants of the simulation),
        ``epsilons``, ``diabetes_r2`` (per coef_bound, shape ``(n_epsilons,
        n_seeds)``), ``diabetes_nonprivate`` (per coef_bound, ``epsilon=inf``),
        ``diabetes_ols`` (``LinearRegression`` on the same clipped rows), ``n_train``;
        ``sizes``, ``size_epsilons``, ``size_r2`` (per epsilon, shape ``(n_sizes,
        n_seeds)``), ``size_nonprivate`` (``epsilon=inf`` per size), ``size_ols``,
        ``needed`` (per epsilon, the
        smallest size whose mean R^2 is within 0.05 of ``epsilon=inf`` at that size, or
        None), ``needed_n_epsilon`` (per epsilon, that size times epsilon) and ``path``.
    """
    params = QUICK if quick else FULL
    epsilons, seeds, sizes = params["epsilons"], params["seeds"], params["sizes"]

    X_train, X_test, y_train, y_test = load_diabetes_public()
    diabetes_r2, diabetes_nonprivate = {}, {}
    for bound in (COEF_BOUND, TIGHT_COEF_BOUND):
        diabetes_r2[bound] = np.array([[r2(private(e, s, bound), X_train, y_train, X_test,
                                               y_test) for s in seeds] for e in epsilons])
        diabetes_nonprivate[bound] = r2(private(np.inf, 0, bound), X_train, y_train,
                                        X_test, y_test)
    diabetes_ols = r2(LinearRegression(), clip_rows_to_norm(X_train, 1.0), y_train,
                      clip_rows_to_norm(X_test, 1.0), y_test)

    X_test_sim, y_test_sim = make_simulation(params["n_test"], seed=10_000)
    size_r2, size_nonprivate, size_ols = {}, [], []
    for n in sizes:
        X_n, y_n = make_simulation(n, seed=n)
        size_nonprivate.append(r2(private(np.inf, 0), X_n, y_n, X_test_sim, y_test_sim))
        size_ols.append(r2(LinearRegression(), clip_rows_to_norm(X_n, 1.0), y_n,
                           clip_rows_to_norm(X_test_sim, 1.0), y_test_sim))
        for e in params["size_epsilons"]:
            size_r2.setdefault(e, []).append(
                [r2(private(e, s), X_n, y_n, X_test_sim, y_test_sim) for s in seeds])
    size_r2 = {e: np.array(v) for e, v in size_r2.items()}
    size_nonprivate, size_ols = np.array(size_nonprivate), np.array(size_ols)
    needed = {}
    for e, values in size_r2.items():
        close = values.mean(axis=1) >= size_nonprivate - TOLERANCE
        needed[e] = int(np.asarray(sizes)[close][0]) if close.any() else None

    fig = Figure(figsize=(10, 4.2), layout="constrained")
    left, right = fig.subplots(1, 2)
    lowest = 0.0
    for k, (bound, values) in enumerate(diabetes_r2.items()):
        mean, sd = values.mean(axis=1), values.std(axis=1)
        left.errorbar(epsilons, mean, yerr=sd, marker="o", ms=4, capsize=3, color=f"C{k}",
                      label=f"coef_bound = {bound:g}")
        left.axhline(diabetes_nonprivate[bound], color=f"C{k}", ls=":", lw=1,
                     label=f"coef_bound = {bound:g}, epsilon = inf")
        lowest = min(lowest, float((mean - sd).min()))
    left.axhline(diabetes_ols, color="k", ls="--", lw=1, label="LinearRegression")
    left.axhline(0.0, color="k", lw=0.5)
    left.set_xscale("log")
    left.set_ylim(max(-1.0, lowest - 0.05), 0.6)
    left.set_xlabel("epsilon")
    left.set_ylabel("held-out R^2")
    left.set_title(f"diabetes, n_train = {len(y_train)} (mean ± sd over noise draws)",
                   fontsize=9)
    left.legend(fontsize=7, loc="lower right")
    for k, (e, values) in enumerate(size_r2.items()):
        right.errorbar(sizes, values.mean(axis=1), yerr=values.std(axis=1), marker="o",
                       ms=4, capsize=3, color=f"C{k + 2}", label=f"epsilon = {e:g}")
    right.plot(sizes, size_nonprivate, color="C0", ls=":", label="epsilon = inf")
    right.plot(sizes, size_ols, color="k", ls="--", lw=1, label="LinearRegression")
    right.axhline(0.0, color="k", lw=0.5)
    right.set_xscale("log")
    right.set_ylim(max(-1.0, min(float(v.mean(axis=1).min()) for v in size_r2.values())
                       - 0.1), 0.6)
    right.set_xlabel("training rows")
    right.set_ylabel("held-out R^2")
    right.set_title(f"simulated, 10 features, population R^2 = 0.5, "
                    f"coef_bound = {COEF_BOUND:g}", fontsize=9)
    right.legend(fontsize=7, loc="lower right")
    fig.suptitle(f"NAPPLasso regression, alpha = {ALPHA:g}, data_norm = 1, y_bound = 2, "
                 f"pure epsilon-DP, {len(seeds)} noise draws", fontsize=10)
    path = Path(out_dir) / "napp_regression.png"
    fig.savefig(path, dpi=90)
    return dict(population_r2=POPULATION_R2, tolerance=TOLERANCE, epsilons=epsilons,
                diabetes_r2=diabetes_r2,
                diabetes_nonprivate=diabetes_nonprivate, diabetes_ols=diabetes_ols,
                n_train=len(y_train), sizes=sizes, size_epsilons=params["size_epsilons"],
                size_r2=size_r2, size_nonprivate=size_nonprivate, size_ols=size_ols,
                needed=needed, needed_n_epsilon={e: None if n is None else n * e
                                                 for e, n in needed.items()},
                path=path)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer budgets, sizes, draws")
    parser.add_argument("--out-dir", default=".", help="folder of the PNG")
    args = parser.parse_args()
    start = time.perf_counter()
    result = main(quick=args.quick, out_dir=args.out_dir)
    seconds = time.perf_counter() - start
    print(f"diabetes, n_train = {result['n_train']}: LinearRegression R^2 "
          f"{result['diabetes_ols']:.3f}")
    for bound, r2s in result["diabetes_r2"].items():
        print(f" coef_bound {bound:g}: epsilon=inf R^2 {result['diabetes_nonprivate'][bound]:.3f}")
        for e, values in zip(result["epsilons"], r2s):
            print(f"  epsilon {e:g}: R^2 {values.mean():.3f} ± {values.std():.3f}")
    print("simulation, epsilon=inf R^2 per size:",
          dict(zip(result["sizes"], np.round(result["size_nonprivate"], 3).tolist())))
    print("simulation, LinearRegression R^2 per size:",
          dict(zip(result["sizes"], np.round(result["size_ols"], 3).tolist())))
    for e, values in result["size_r2"].items():
        print(f"  epsilon {e:g}: mean R^2 per size",
              dict(zip(result["sizes"], np.round(values.mean(axis=1), 3).tolist())),
              f"-> within {TOLERANCE} of epsilon=inf from n = {result['needed'][e]}")
    print("wrote", result["path"], f"({seconds:.0f} s)")
    from _record import write_record   # examples/ is on sys.path when run as a script
    print("wrote", write_record(__file__, main, result, quick=args.quick, seconds=seconds))
