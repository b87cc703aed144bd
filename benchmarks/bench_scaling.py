"""Fit time and peak memory against scikit-learn on wide, tall and sparse designs.

Run from the repository root::

    python -m benchmarks.bench_scaling [--quick]

Each fit runs alone in a fresh process (``--single``), one after another, with one BLAS
thread: the time is the best of ``repeats`` fits, the memory the growth of the process's
peak resident set (``VmHWM``, reset through ``/proc/self/clear_refs`` just before the
fits) over the resident set at that moment. (``ru_maxrss`` would not do: Linux carries
the parent's peak across ``exec``.) The designs are synthetic, generated once with fixed seeds and stored (npz)
so that every process loads the same arrays without generation temporaries: rows scaled
into the unit ball (the private estimators' ``data_norm=1``), labels from a noisy linear
model. Pairs (skdp at epsilon = 1, random_state = 0; scikit-learn with the same C and
objective where there is one): ``ObjPertLogisticRegression(C=1)`` against
``LogisticRegression(C=1)`` (lbfgs, default tolerance, and liblinear);
``OutputPertSVM(C=0.01)`` (hinge) against ``LinearSVC(C=0.01, loss="hinge",
random_state=0)`` (the coordinate order OutputPertSVM gives liblinear: with a random
order liblinear's iterations vary by up to 40 % from fit to fit);
``DPSGDClassifier()`` against ``SGDClassifier(loss="log_loss")``;
``NAPPLasso(alpha=1, y_bound=1, coef_bound=10)`` against ``Lasso(alpha=1 / n)`` (the same
lasso objective; targets the labels as +-1, score R^2). The private
estimators solve to their certified tolerances (gradient norm 1e-8 in sum form for
objective perturbation), scikit-learn to its default ones, so the ratios include the
price of the certificate. Each LogisticRegression fit records the sum-form gradient norm
where it stopped (``tol=1e-8`` is the tighter reference, still far from the certificate);
each DPSGDClassifier fit, the time of its noise draws alone. Target (issue 15): every ratio
at most 1.5, memory at most 2x.

``--interleaved ROUNDS`` measures issue 48's ratios instead: each pair's fits timed in turn
in one process, and the sparse pairs' peak memory, each fit in a fresh process, the two
sides alternating (:func:`sparse_memory`).
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from . import _common

DATA_DIR = Path(os.environ.get("SKDP_BENCH_SCALING_DATA", "/tmp/skdp_bench_scaling"))

CASES = {
    "dense 20000 x 100": ("dense", 20_000, 100, None),
    "dense 20000 x 1000": ("dense", 20_000, 1_000, None),
    "dense 20000 x 5000": ("dense", 20_000, 5_000, None),
    "dense 10000 x 100": ("dense", 10_000, 100, None),
    "dense 100000 x 100": ("dense", 100_000, 100, None),
    "dense 1000000 x 100": ("dense", 1_000_000, 100, None),
    "Gisette-shaped dense 6000 x 5000": ("dense", 6_000, 5_000, None),
    "RCV1-shaped CSR 50000 x 50000, 0.1 %": ("csr", 50_000, 50_000, 1e-3),
}
QUICK_CASES = {
    "dense 2000 x 20": ("dense", 2_000, 20, None),
    "dense 2000 x 300": ("dense", 2_000, 300, None),
    "CSR 2000 x 5000, 0.5 %": ("csr", 2_000, 5_000, 5e-3),
}
# (label, skdp estimator, scikit-learn estimators)
PAIRS = {
    "objective perturbation": ("ObjPertLogisticRegression(C=1)",
                               ["LogisticRegression(C=1) lbfgs",
                                "LogisticRegression(C=1, tol=1e-8) lbfgs",
                                "LogisticRegression(C=1) liblinear"]),
    "output perturbation (hinge)": ("OutputPertSVM(C=0.01)",
                                    ["LinearSVC(C=0.01, hinge, random_state=0)"]),
    "DP-SGD": ("DPSGDClassifier()", ["SGDClassifier(log_loss)"]),
    "NAPP lasso": ("NAPPLasso(alpha=1, coef_bound=10)", ["Lasso(alpha=1/n)"]),
}
# the regression pair's targets: the labels as +-1
REGRESSORS = {"NAPPLasso(alpha=1, coef_bound=10)", "Lasso(alpha=1/n)"}


def make_estimator(name, n_samples=1):
    from sklearn.linear_model import Lasso, LogisticRegression, SGDClassifier
    from sklearn.svm import LinearSVC

    from skdp import DPSGDClassifier, NAPPLasso, ObjPertLogisticRegression, OutputPertSVM

    return {
        "ObjPertLogisticRegression(C=1)": lambda: ObjPertLogisticRegression(
            epsilon=1.0, C=1.0, random_state=0),
        "OutputPertSVM(C=0.01)": lambda: OutputPertSVM(epsilon=1.0, C=0.01, random_state=0),
        "DPSGDClassifier()": lambda: DPSGDClassifier(epsilon=1.0, random_state=0),
        "LogisticRegression(C=1) lbfgs": lambda: LogisticRegression(C=1.0),
        "LogisticRegression(C=1, tol=1e-8) lbfgs": lambda: LogisticRegression(
            C=1.0, tol=1e-8, max_iter=10_000),
        "LogisticRegression(C=1) liblinear": lambda: LogisticRegression(C=1.0,
                                                                        solver="liblinear"),
        "LinearSVC(C=0.01, hinge, random_state=0)": lambda: LinearSVC(C=0.01, loss="hinge",
                                                                      random_state=0),
        "SGDClassifier(log_loss)": lambda: SGDClassifier(loss="log_loss", random_state=0),
        # the same objective: Lasso's alpha is NAPPLasso's (sum form) over n
        "NAPPLasso(alpha=1, coef_bound=10)": lambda: NAPPLasso(
            alpha=1.0, y_bound=1.0, coef_bound=10.0, epsilon=1.0, random_state=0),
        "Lasso(alpha=1/n)": lambda: Lasso(alpha=1.0 / n_samples),
    }[name]()


def data_path(case, spec):
    kind, n, d, density = spec
    return DATA_DIR / f"{kind}_{n}_{d}_{density}.npz"


def make_data(spec, path):
    """Rows in the unit ball, labels ``sign(x w + noise)``; stored once per shape."""
    if path.exists():
        return
    kind, n, d, density = spec
    rng = np.random.default_rng(0)
    if kind == "csr":   # a Generator: RandomState's choice would permute all n d positions
        X = sp.random(n, d, density=density, format="csr", rng=np.random.default_rng(0),
                      dtype=np.float64)
    else:
        X = rng.standard_normal((n, d))
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel() if kind == "csr"
                    else np.einsum("ij,ij->i", X, X))
    scale = 1.0 / np.maximum(norms, 1e-12)
    X = sp.csr_matrix(X.multiply(scale[:, None])) if kind == "csr" else X * scale[:, None]
    informative = min(d, 50)
    w = np.zeros(d)
    w[:informative] = rng.standard_normal(informative)
    margin = np.asarray(X @ w).ravel()
    y = (margin + 0.5 * margin.std() * rng.standard_normal(n) > 0).astype(np.int64)
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "csr":
        sp.save_npz(path, X)
        np.save(path.with_suffix(".y.npy"), y)
    else:
        np.savez(path, X=X, y=y)


def load_data(path):
    if sp.issparse(loaded := _try_sparse(path)):
        return loaded, np.load(path.with_suffix(".y.npy"))
    with np.load(path) as f:
        return f["X"], f["y"]


def _try_sparse(path):
    try:
        return sp.load_npz(path)
    except (ValueError, KeyError):
        return None


def _status_mb(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def _reset_peak_memory():
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def single(path, estimator, repeats):
    """One process: load, fit ``repeats`` times; print time, memory and accuracy (JSON)."""
    X, y = load_data(Path(path))
    if estimator in REGRESSORS:
        y = 2.0 * y - 1.0
    try:  # a warm-up fit on a few rows: lazy imports before the memory baseline
        make_estimator(estimator, 200).fit(X[:200], y[:200])
    except (ValueError, MemoryError):
        pass
    _reset_peak_memory()
    before = _status_mb("VmRSS")
    best, error, accuracy = np.inf, None, None
    for _ in range(repeats):
        model = make_estimator(estimator, X.shape[0])
        start = time.perf_counter()
        try:
            model.fit(X, y)
        except (MemoryError, ValueError, RuntimeError) as exc:
            error = f"{type(exc).__name__}: {exc}"
            break
        best = min(best, time.perf_counter() - start)
    peak = _status_mb("VmHWM")
    extras = {}
    if error is None:
        accuracy = float(model.score(X, y))
        extras = stopping_point(model, X, y)
    print(json.dumps({"time_s": None if error else best, "memory_mb": max(peak - before, 0.0),
                      "accuracy_train": accuracy, "error": error, **extras}))


def stopping_point(model, X, y):
    """What a fit's time buys, measured after it (outside the timed fits).

    ``LogisticRegression``: the norm of its objective's gradient in sum form,
    ``C sum_i log(1 + exp(-y_i z_i)) + ||w||^2 / 2`` (coefficients and intercept), at
    the point where it stopped; objective perturbation certifies at most its ``tol``
    (1e-8) on its perturbed objective. ``DPSGDClassifier``: the time of its noise draws
    alone, ``n_steps_`` vectors of the coefficients' size from the stream its steps draw
    from (AES-128 in counter mode; a ChaCha20 stream in runs recorded before that
    change, whose JSON names no generator), the part of the fit no implementation can
    skip. ``Lasso``: the largest violation of the
    optimality conditions of its objective in sum form, ``1/2 ||y - X w - b||^2 + n
    alpha ||w||_1``, at its stop; NAPPLasso certifies at most its ``tol`` (1e-8).
    """
    from scipy.special import expit
    from sklearn.linear_model import Lasso, LogisticRegression

    from skdp import DPSGDClassifier
    from skdp.linear_model._dpsgd import _call_streams

    if isinstance(model, LogisticRegression):
        signs = np.where(y == model.classes_[1], 1.0, -1.0)
        margins = np.asarray(X @ model.coef_.ravel()).ravel() + model.intercept_[0]
        slopes = -signs * expit(-signs * margins)
        # liblinear penalises the intercept (its bias feature is 1 here); lbfgs does not
        bias_penalty = model.intercept_[0] if model.solver == "liblinear" else 0.0
        gradient = np.append(model.C * np.asarray(X.T @ slopes).ravel() + model.coef_.ravel(),
                             model.C * slopes.sum() + bias_penalty)
        return {"gradient_norm": float(np.linalg.norm(gradient))}
    if isinstance(model, Lasso):
        residuals = np.asarray(X @ model.coef_).ravel() + model.intercept_ - y
        gradient = np.asarray(X.T @ residuals).ravel()
        weight = model.alpha * X.shape[0]
        coef = model.coef_
        violations = np.where(coef != 0, np.abs(gradient + weight * np.sign(coef)),
                              np.maximum(np.abs(gradient) - weight, 0.0))
        return {"kkt_residual": float(max(violations.max(), abs(residuals.sum())))}
    if isinstance(model, DPSGDClassifier):
        _, _, noise = _call_streams(0, 0)   # the first call's step-noise stream
        shape = (model.coef_.shape[0], model.coef_.shape[1] + int(model.fit_intercept))
        start = time.perf_counter()
        for _ in range(model.n_steps_):
            noise.standard_normal(shape)
        return {"noise_draw_s": time.perf_counter() - start,
                "noise_generator": type(noise.bit_generator).__name__}
    return {}


def measure(path, estimator, repeats, timeout):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
           "MKL_NUM_THREADS": "1"}
    command = [sys.executable, "-W", "ignore", "-m", "benchmarks.bench_scaling", "--single",
               str(path), estimator, str(repeats)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, env=env,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {"time_s": None, "memory_mb": None, "accuracy_train": None,
                "error": f"timeout after {timeout} s"}
    if done.returncode != 0:
        return {"time_s": None, "memory_mb": None, "accuracy_train": None,
                "error": (done.stderr.strip().splitlines() or ["crashed"])[-1]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def run(cases, timeout):
    results = {}
    for case, spec in cases.items():
        path = data_path(case, spec)
        make_data(spec, path)
        kind, n, d, density = spec
        # one fit for the large cases (by stored entries), best of three otherwise
        repeats = 1 if n * d * (density or 1.0) >= 2e7 else 3
        results[case] = {}
        for pair, (ours, theirs) in PAIRS.items():
            row = {"skdp": {"estimator": ours, **measure(path, ours, repeats, timeout)}}
            row["sklearn"] = [{"estimator": name, **measure(path, name, repeats, timeout)}
                              for name in theirs]
            for reference in row["sklearn"]:
                if row["skdp"]["time_s"] and reference["time_s"]:
                    reference["time_ratio"] = row["skdp"]["time_s"] / reference["time_s"]
                if row["skdp"]["memory_mb"] and reference["memory_mb"]:
                    reference["memory_ratio"] = (row["skdp"]["memory_mb"]
                                                 / max(reference["memory_mb"], 1.0))
            results[case][pair] = row
            print(case, pair, json.dumps(row), flush=True)
    return results


# The ratios of issue 48, each pair timed in turn in one process (interleaved rounds,
# one BLAS thread): the sparse paths on the RCV1-shaped design, DP-SGD at small batches
# and DP-SGD's person-level fit against its row-level one on Adult.
INTERLEAVED_CASE = "RCV1-shaped CSR 50000 x 50000, 0.1 %"
SMALL_BATCH = dict(batch=256, epochs=20)


def _interleaved_pairs():
    """(label, ours, reference, floors) of :func:`interleaved`, data loaded once;
    ``floors`` (name -> fit) are parts of a DP-SGD fit timed alone in the same rounds."""
    from sklearn.linear_model import SGDClassifier

    from skdp import DPSGDClassifier
    from skdp.datasets import load_adult

    from .bench_person_level import visit_persons

    path = data_path(INTERLEAVED_CASE, CASES[INTERLEAVED_CASE])
    make_data(CASES[INTERLEAVED_CASE], path)
    X, y = load_data(path)
    adult = load_adult()
    A, b = adult.X_train, adult.y_train
    persons = visit_persons(len(b))
    rate = SMALL_BATCH["batch"] / len(b)

    def small_batch():
        return DPSGDClassifier(epsilon=np.inf, noise_multiplier=1.0, sample_rate=rate,
                               epochs=SMALL_BATCH["epochs"], data_norm=1.0,
                               random_state=0).fit(A, b)

    return [
        (f"{INTERLEAVED_CASE}: OutputPertSVM(C=0.01) / LinearSVC(C=0.01, hinge)",
         lambda: make_estimator("OutputPertSVM(C=0.01)").fit(X, y),
         lambda: make_estimator("LinearSVC(C=0.01, hinge, random_state=0)").fit(X, y), {}),
        (f"{INTERLEAVED_CASE}: DPSGDClassifier() / SGDClassifier(log_loss)",
         lambda: make_estimator("DPSGDClassifier()").fit(X, y),
         lambda: make_estimator("SGDClassifier(log_loss)").fit(X, y),
         _dpsgd_floors(make_estimator("DPSGDClassifier()").fit(X, y), X)),
        # the noise multiplier given: the fit without the calibration's one-off cost
        ("Adult: DPSGDClassifier(batch 256, 20 epochs, noise_multiplier=1) / "
         "SGDClassifier(log_loss, 20 epochs)", small_batch,
         lambda: SGDClassifier(loss="log_loss", max_iter=SMALL_BATCH["epochs"], tol=None,
                               random_state=0).fit(A, b),
         _dpsgd_floors(small_batch(), A)),
        ("Adult: DPSGDClassifier() with groups (persons of 1-20 rows) / without",
         lambda: DPSGDClassifier(epsilon=1.0, random_state=0).fit(A, b, groups=persons),
         lambda: DPSGDClassifier(epsilon=1.0, random_state=0).fit(A, b), {}),
    ]


def _dpsgd_floors(model, X):
    """Parts of a DP-SGD fit that no implementation avoids, each timed alone: its
    ``n_steps_`` Gaussian draws of the coefficients' size from its noise stream
    (AES-128 in counter mode), its Poisson samples (the sampler, as a fit draws them),
    the gathers of those batches' rows (a copy of each batch), and those gathers with
    the two products a step makes with its batch (scores ``X_b w``, then ``X_b^T r``):
    together the work of the steps, against which the rest of the fit is overhead."""
    from randomgen import ChaCha

    from skdp.linear_model._dpsgd import _call_streams
    from skdp.mechanisms._poisson_sampling import poisson_step_samples

    steps, rate, width = model.n_steps_, model.sample_rate_, model.coef_.size + 1
    n = X.shape[0]
    batches = list(poisson_step_samples(n, rate, np.random.Generator(ChaCha(seed=1)), steps))

    def noise():
        rng = _call_streams(0, 0)[2]
        for _ in range(steps):
            rng.standard_normal((1, width))

    def samples():
        list(poisson_step_samples(n, rate, np.random.Generator(ChaCha(seed=1)), steps))

    def gathers():
        for idx in batches:
            X[idx]

    w = np.random.default_rng(2).standard_normal(X.shape[1]) / np.sqrt(X.shape[1])

    def gathers_and_products():
        for idx in batches:
            block = X[idx]
            block.T @ np.tanh(block @ w)

    return {"noise draws": noise, "Poisson samples": samples, "batch gathers": gathers,
            "batch gathers and products": gathers_and_products}


def interleaved(repeats):
    """Each pair of :func:`_interleaved_pairs` in ``repeats`` interleaved rounds
    (:func:`_common.interleaved_ratio`, wall time, the floors timed in the same rounds),
    one BLAS thread, after one warm-up fit of each side."""
    from threadpoolctl import threadpool_limits

    out = {}
    with threadpool_limits(limits=1, user_api="blas"):
        for label, ours, reference, floors in _interleaved_pairs():
            ours(), reference()
            out[label] = _common.interleaved_ratio(ours, reference, repeats, floors)
            print(label, f"{out[label]['ratio']:.2f}", flush=True)
    return out


# The sparse pairs' peak memory (issue 48's goal: at most 2x), as users run them.
MEMORY_PAIRS = (("OutputPertSVM(C=0.01)", "LinearSVC(C=0.01, hinge, random_state=0)"),
                ("DPSGDClassifier()", "SGDClassifier(log_loss)"))


def dpsgd_memory_floor_mb(X):
    """The growth (MB) that a mini-batch DP-SGD fit with defaults must have with
    numpy/scipy on the CSR ``X``: its four vectors of the coefficients' size (the
    iterate, its tail's sum, the momentum's velocity, the step's product and then its
    noise) and its
    default Poisson batch gathered as CSR rows (the expected ``q nnz`` values and
    column indices; one block of the fit, at most 4 MiB of values). SGDClassifier
    updates one vector in place, row by row, and gathers nothing."""
    from skdp import DPSGDClassifier

    vectors = 4 * 8 * (X.shape[1] + 1)
    batch = DPSGDClassifier().sample_rate * X.nnz * (X.data.itemsize + X.indices.itemsize)
    return (vectors + batch) / 2**20


def sparse_memory(rounds, timeout):
    """Peak memory of each fit of :data:`MEMORY_PAIRS` on :data:`INTERLEAVED_CASE`.

    Each fit runs alone in a fresh process (:func:`measure`: the growth of the peak
    resident set over the resident set after loading the data and a warm-up fit, one
    BLAS thread), so allocations outside Python (liblinear's copy of the rows) count
    too; the two sides' processes alternate for ``rounds`` rounds. Per pair: the
    median of each side, their ratio, and the stored CSR's size for scale; for DP-SGD
    its floor (:func:`dpsgd_memory_floor_mb`) and the floor over the reference.
    """
    path = data_path(INTERLEAVED_CASE, CASES[INTERLEAVED_CASE])
    make_data(CASES[INTERLEAVED_CASE], path)
    X, _ = load_data(path)
    data_mb = (X.data.nbytes + X.indices.nbytes + X.indptr.nbytes) / 2**20
    out = {}
    for ours, reference in MEMORY_PAIRS:
        runs = {"ours": [], "reference": []}
        for _ in range(rounds):
            for side, name in (("ours", ours), ("reference", reference)):
                runs[side].append(measure(path, name, 1, timeout)["memory_mb"])
        medians = {side: float(np.median(values)) if None not in values else None
                   for side, values in runs.items()}
        ratio = (medians["ours"] / medians["reference"]
                 if medians["ours"] is not None and medians["reference"] else None)
        out[f"{ours} / {reference}"] = {
            "ours_mb": medians["ours"], "reference_mb": medians["reference"],
            "ratio": ratio, "data_mb": data_mb, "rounds": int(rounds), "all_mb": runs}
        if ours.startswith("DPSGDClassifier"):
            floor = dpsgd_memory_floor_mb(X)
            out[f"{ours} / {reference}"].update(
                floor_mb=floor, floor_ratio=(floor / medians["reference"]
                                             if medians["reference"] else None))
        print(ours, reference, medians, flush=True)
    return out


def plot(payload, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels, ratios = [], []
    for case, pairs in payload["results"].items():
        for pair, row in pairs.items():
            for reference in row["sklearn"]:
                if reference.get("time_ratio"):
                    labels.append(f"{case} | {pair} vs {reference['estimator']}")
                    ratios.append(reference["time_ratio"])
    fig, ax = plt.subplots(figsize=(9, 0.25 * len(labels) + 1.5))
    ax.barh(range(len(ratios)), ratios)
    ax.set_yticks(range(len(ratios)), labels, fontsize=6)
    ax.axvline(1.5, color="k", ls="--", lw=1)
    ax.set_xscale("log")
    ticks = [0.25, 0.5, 1.0, 1.5, 2.0, 4.0, 8.0]
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
    ax.set_xlabel("fit time, skdp / scikit-learn (one BLAS thread, same run)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--single", nargs=3, metavar=("DATA", "ESTIMATOR", "REPEATS"),
                        help=argparse.SUPPRESS)
    parser.add_argument("--timeout", type=float, default=900.0,
                        help="seconds allowed to one process (default 900)")
    parser.add_argument("--interleaved", type=int, metavar="ROUNDS", default=0,
                        help="only the interleaved ratios and the sparse pairs' peak "
                             "memory (scaling_timing.json)")
    args = parser.parse_args(argv)
    if args.single:
        single(args.single[0], args.single[1], int(args.single[2]))
        return
    if args.interleaved:
        _common.write_results("scaling_timing", {
            "params": {"blas_threads": 1, "rounds": args.interleaved,
                       "small_batch": SMALL_BATCH, "target_time_ratio": 1.5,
                       "target_person_ratio": 1.3, "target_small_batch_ratio": 1.3,
                       "target_memory_ratio": 2.0, "target_memory_over_floor": 1.5},
            "ratios": interleaved(args.interleaved),
            "memory": sparse_memory(args.interleaved, args.timeout)})
        return
    cases = QUICK_CASES if args.quick else CASES
    name = "scaling" + ("_quick" if args.quick else "")
    payload = {"params": {"seeds": [0], "neighboring": "add_remove", "epsilon": 1.0,
                          "blas_threads": 1, "target_time_ratio": 1.5,
                          "target_memory_ratio": 2.0},
               "cases": {case: list(spec) for case, spec in cases.items()},
               "results": run(cases, args.timeout)}
    _common.write_results(name, payload)
    plot(payload, _common.RESULTS_DIR / f"{name}.png")


if __name__ == "__main__":
    main()
