"""DP-SGD / DP-GD on UCI Adult and KDDCup99: test accuracy against epsilon, and speed.

Methods (delta = 1e-5, add/remove-one for every private method):

* skdp ``DPSGDClassifier`` as full-batch DP-GD (``sample_rate=1, epochs=200``, exact GDP
  accounting: the defaults until git revision 9bad62b);
* skdp ``DPSGDClassifier`` with the documented mini-batch recipe (``RECIPE``: Poisson
  sampling at the public rate 0.033, an expected batch of about 1,000 rows on Adult, 60
  epochs, PLD accounting of the DP row count and the steps);
* Opacus (when importable) with the same epochs, expected batch size, clipping norm,
  learning rate and momentum as the recipe, Poisson sampling, its default PRV
  accountant (``make_private_with_epsilon``), last iterate, one torch thread; 3 seeds
  (it costs 15-40 s per fit here);
* skdp ``ObjPertLogisticRegression`` (Gaussian variant, same delta, add/remove, C = 1);
* non-private scikit-learn ``LogisticRegression`` (C = 1 and C = 10).

No hyperparameter is tuned here; the skdp values were tuned earlier on a validation
split of the Adult training set (see the ``DPSGDClassifier`` docstring). That tuning read
the protected training rows without noise and is in no reported epsilon.

Speed, as ratios measured in the same run (best of 3):

* 20 epochs of the recipe on Adult at a fixed noise multiplier (training only; the
  calibration time is reported separately), skdp against Opacus;
* cost per epoch of skdp (defaults and recipe) against scikit-learn's SGDClassifier.

Small batches (``--small-batch``, written to ``dpsgd_small_batch.json``): 20 epochs of
DP-SGD at an expected batch of 256 rows and at the default rate 0.1 on Adult against
SGDClassifier with the same epochs, CPU time (``time.process_time``) with one BLAS
thread, in interleaved rounds (medians of the per-round ratios): the fit as it is
(Poisson batches drawn by blocks for ``q <= 1/64``), the same fit with every batch
drawn by rows (the sampler before the draw by blocks: the same law, a word per two
rows), and a floor where the sampler costs nothing (precomputed batches); and the
sampler alone, a step's draw by rows and by blocks at a batch of 256 on Adult's rows
and on 10^6 rows, the keying of the AES generator with a step's key (both pay it), and
the mean cost a step of the steps drawn together as a fit draws them (on Adult's rows,
many steps' blocks at once, keyed by state from round keys expanded together);
and the same fits at a batch of 256 on a tall synthetic design (200,000 x 100, rows
scaled into the unit ball, 2 epochs, 3 rounds), where a word per two rows costs far
more than the batch.

Run ``python -m benchmarks.bench_dpsgd [--quick] [--n-jobs N]`` from the repo root.
``--n-jobs`` runs the seed repetitions of the accuracy curves through joblib (same
results for any value); the speed ratios are always measured one fit after another.
"""

import argparse
import json
import os
import time
import warnings
from unittest import mock

import numpy as np
from randomgen import ChaCha
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression, SGDClassifier
from threadpoolctl import threadpool_limits

from skdp import DPSGDClassifier, ObjPertLogisticRegression
from skdp.accounting import calibrate_noise_multiplier, default_count_noise_std
from skdp.datasets import load_adult, load_kddcup99
from skdp.linear_model import _dpsgd
from skdp.mechanisms import _poisson_sampling

from ._common import (N_JOBS_HELP, RESULTS_DIR, _to_builtin, best_time, environment,
                      figure_footer, map_seeds, optional_import, summarise, write_results)

NAME = "dpsgd"
RECIPE = dict(sample_rate=0.033, epochs=60, learning_rate=16.0, momentum=0.9,
              max_grad_norm=0.5, alpha=0.0, average=0.5, accountant="pld")
PARAMS = {
    "datasets": ["adult", "kddcup99"],
    "epsilons": [0.1, 0.5, 1.0, 2.0, 5.0],
    "delta": 1e-5,
    "seeds": list(range(10)),
    "opacus_seeds": [0, 1, 2],          # Opacus is ~15-40 s per fit here: 3 seeds
    "timing_epochs": 20,
    "subsample": None,
}
QUICK = {
    "datasets": ["adult"],
    "epsilons": [0.1, 1.0],
    "delta": 1e-5,
    "seeds": [0, 1],
    "opacus_seeds": [],
    "timing_epochs": 2,
    "subsample": 6000,
}
TARGETS = {"adult": {0.1: 0.810, 1.0: 0.840}}
LOADERS = {"adult": load_adult, "kddcup99": load_kddcup99}
_CACHE = {}


def make_data(params, name):
    """Train/test arrays of one dataset (optionally a subsample of the training rows)."""
    if name not in _CACHE:
        _CACHE[name] = LOADERS[name]()
    data = _CACHE[name]
    X, y = data.X_train, data.y_train
    if params["subsample"]:
        keep = np.random.default_rng(0).permutation(len(X))[: params["subsample"]]
        X, y = X[keep], y[keep]
    return X, y, data.X_test, data.y_test


def make_estimator(method, epsilon, seed, delta, epochs=None):
    """The skdp estimator of one method."""
    if method == "skdp_dpsgd_default":  # the defaults since 9bad62b
        return DPSGDClassifier(epsilon=epsilon, delta=delta, random_state=seed)
    if method == "skdp_dpgd_default":  # the defaults until 9bad62b: full-batch DP-GD
        return DPSGDClassifier(epsilon=epsilon, delta=delta, random_state=seed,
                               sample_rate=1.0, epochs=200)
    if method == "skdp_dpsgd_recipe":
        recipe = dict(RECIPE) if epochs is None else {**RECIPE, "epochs": epochs}
        return DPSGDClassifier(epsilon=epsilon, delta=delta, random_state=seed, **recipe)
    if method == "skdp_objpert_gaussian":
        return ObjPertLogisticRegression(epsilon=epsilon, delta=delta, C=1.0,
                                         neighboring="add_remove", random_state=seed)
    raise ValueError(method)


# -- Opacus -----------------------------------------------------------------------------

def _opacus_train(X, y, *, epochs, seed, noise_multiplier=None, epsilon=None, delta=1e-5,
                  report_epsilon=True):
    """Logistic regression by Opacus DP-SGD with the recipe's hyperparameters.

    Returns ``(model, epsilon_spent)``; ``epsilon`` calibrates the noise with
    ``make_private_with_epsilon``, ``noise_multiplier`` fixes it.
    """
    import torch
    from opacus import PrivacyEngine

    torch.set_num_threads(1)            # as skdp: one BLAS thread (2 shared cores)
    torch.manual_seed(seed)
    Xt = torch.tensor(X, dtype=torch.float32)
    yt = torch.tensor((y == 1).astype(np.float32))[:, None]
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(Xt, yt),
                                         batch_size=_expected_batch(len(X)))
    model = torch.nn.Linear(X.shape[1], 1)
    torch.nn.init.zeros_(model.weight)
    torch.nn.init.zeros_(model.bias)
    optimizer = torch.optim.SGD(model.parameters(), lr=RECIPE["learning_rate"],
                                momentum=RECIPE["momentum"])
    engine = PrivacyEngine()
    common = dict(module=model, optimizer=optimizer, data_loader=loader,
                  max_grad_norm=RECIPE["max_grad_norm"], poisson_sampling=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if epsilon is None:
            model, optimizer, loader = engine.make_private(noise_multiplier=noise_multiplier,
                                                           **common)
        else:
            model, optimizer, loader = engine.make_private_with_epsilon(
                target_epsilon=epsilon, target_delta=delta, epochs=epochs, **common)
        loss_fn = torch.nn.BCEWithLogitsLoss()
        for _ in range(epochs):
            for xb, yb in loader:
                if len(xb) == 0:
                    continue
                optimizer.zero_grad()
                loss_fn(model(xb), yb).backward()
                optimizer.step()
        spent = engine.get_epsilon(delta) if report_epsilon else None
    return model, spent


def _opacus_accuracy(model, X, y):
    import torch

    with torch.no_grad():
        scores = model(torch.tensor(X, dtype=torch.float32)).numpy().ravel()
    return float(np.mean((scores > 0) == (y == 1)))


# -- runs -------------------------------------------------------------------------------

def _seed_fit(seed, method, epsilon, delta, data):
    """Test accuracy, epsilon spent, noise multiplier and fit seconds of one seed's fit."""
    X, y, X_test, y_test = data
    est = make_estimator(method, epsilon, seed, delta)
    start = time.perf_counter()
    est.fit(X, y)
    seconds = time.perf_counter() - start
    return (est.score(X_test, y_test), est.epsilon_spent_,
            getattr(est, "noise_multiplier_", np.nan), seconds)


def _opacus_seed_fit(seed, epsilon, delta, data):
    """``(test accuracy, epsilon spent)`` of one seed's Opacus fit, or its error message."""
    X, y, X_test, y_test = data
    try:
        model, eps_spent = _opacus_train(X, y, epochs=RECIPE["epochs"], seed=seed,
                                         epsilon=epsilon, delta=delta)
    except Exception as exc:  # noqa: BLE001 - e.g. calibration failure
        return f"{type(exc).__name__}: {exc}"
    return _opacus_accuracy(model, X_test, y_test), eps_spent


SKDP_METHODS = ("skdp_dpsgd_default", "skdp_dpgd_default", "skdp_dpsgd_recipe",
                "skdp_objpert_gaussian")


def _accuracy_curves(params, name, torch_available, n_jobs=1, methods=SKDP_METHODS):
    X, y, X_test, y_test = make_data(params, name)
    out = {"n_train": int(len(X)), "n_features": int(X.shape[1]), "methods": {}}
    non_private = {}
    for C in (1.0, 10.0):
        est = LogisticRegression(C=C, max_iter=5000).fit(X, y)
        non_private[f"C={C:g}"] = est.score(X_test, y_test)
    out["non_private_LogisticRegression"] = non_private
    print(f"[{name}] non-private LogisticRegression: {non_private}")
    for method in methods:
        rows = []
        for epsilon in params["epsilons"]:
            # fit_seconds_mean is for information only: with n_jobs > 1 the fits share cores
            acc, spent, noise, times = zip(*map_seeds(
                _seed_fit, params["seeds"], n_jobs, method=method, epsilon=epsilon,
                delta=params["delta"], data=(X, y, X_test, y_test)))
            row = {"epsilon": epsilon, "test_accuracy": summarise(acc),
                   "epsilon_spent_max": float(max(spent)),
                   "noise_multiplier": float(noise[0]), "fit_seconds_mean": float(np.mean(times))}
            rows.append(row)
            print(f"[{name}] {method:>22} eps={epsilon:<4} acc={row['test_accuracy']['mean']:.4f}"
                  f" +- {row['test_accuracy']['sem']:.4f} spent<={row['epsilon_spent_max']:.4f}"
                  f" z={row['noise_multiplier']:.4g} fit={row['fit_seconds_mean']:.2f}s",
                  flush=True)
        out["methods"][method] = rows
    if torch_available and params["opacus_seeds"]:
        rows = []
        for epsilon in params["epsilons"]:
            fits = map_seeds(_opacus_seed_fit, params["opacus_seeds"], n_jobs, epsilon=epsilon,
                             delta=params["delta"], data=(X, y, X_test, y_test))
            errors = [f for f in fits if isinstance(f, str)]
            row = {"epsilon": epsilon}
            if not errors:
                acc, spent = zip(*fits)
                row.update(test_accuracy=summarise(acc), epsilon_spent_max=float(max(spent)))
                print(f"[{name}] {'opacus':>22} eps={epsilon:<4} acc={np.mean(acc):.4f}",
                      flush=True)
            else:
                row["error"] = errors[0]
                print(f"[{name}] {'opacus':>22} eps={epsilon:<4} failed: {errors[0]}", flush=True)
            rows.append(row)
        out["methods"]["opacus_dpsgd_recipe"] = rows
    return out


def _expected_batch(n_rows):
    """Opacus's batch size for the recipe's sampling rate (its Poisson rate is B / n)."""
    return max(1, int(round(RECIPE["sample_rate"] * n_rows)))


def _timings(params, torch_available):
    """Speed ratios on Adult, all measured in this run (best of 3).

    Always sequential, whatever --n-jobs: concurrent fits would distort the ratios.
    """
    X, y, _, _ = make_data(params, "adult")
    epochs = params["timing_epochs"]
    q = RECIPE["sample_rate"]
    n_steps = int(np.ceil(epochs / q - 1e-9))
    start = time.perf_counter()
    z = calibrate_noise_multiplier(1.0, params["delta"], q, n_steps,
                                   count_noise_std=default_count_noise_std(1.0, params["delta"]))
    calibration_seconds = time.perf_counter() - start
    fixed = {**RECIPE, "epochs": epochs, "noise_multiplier": z, "epsilon": np.inf}
    skdp_recipe = best_time(lambda: DPSGDClassifier(random_state=0, **fixed).fit(X, y))
    default = DPSGDClassifier(epsilon=1.0, random_state=0, sample_rate=1.0, epochs=200)
    skdp_default = best_time(lambda: default.fit(X, y))
    default_epochs = default.epochs
    sgd = best_time(lambda: SGDClassifier(loss="log_loss", max_iter=epochs, tol=None,
                                          random_state=0).fit(X, y))
    out = {
        "epochs": epochs, "sample_rate": q, "noise_multiplier": z,
        "calibration_seconds_pld": calibration_seconds,
        "skdp_recipe_seconds": skdp_recipe,
        "skdp_default_seconds_incl_calibration": skdp_default,
        "sklearn_SGDClassifier_seconds": sgd,
        "per_epoch_ratio_recipe_vs_SGDClassifier": (skdp_recipe / epochs) / (sgd / epochs),
        "per_epoch_ratio_default_vs_SGDClassifier": (skdp_default / default_epochs)
        / (sgd / epochs),
    }
    if torch_available:
        opacus = best_time(lambda: _opacus_train(X, y, epochs=epochs, seed=0,
                                                 noise_multiplier=z, report_epsilon=False))
        out["opacus_seconds"] = opacus
        out["opacus_over_skdp_ratio"] = opacus / skdp_recipe
    for key, value in out.items():
        print(f"[timing] {key}: {value:.4g}" if isinstance(value, float) else
              f"[timing] {key}: {value}")
    return out


SMALL_BATCH = {"batch": 256, "epochs": 20, "rounds": 7, "noise_multiplier": 1.0,
               "sampler_steps": 300, "tall_rows": 200_000, "tall_epochs": 2, "tall_rounds": 3}


def _cpu_seconds(fit):
    start = time.process_time()
    fit()
    return time.process_time() - start


def _free_batches(n, q, count):
    """``count`` Poisson batches drawn ahead of a fit, handed out in turn at no cost:
    the sampler's floor."""
    rng = np.random.default_rng(0)
    batches = [np.flatnonzero(rng.random(n) < q) for _ in range(count)]

    def samples(n_rows, sample_rate, sampling_rng, n_steps):
        sampling_rng.bit_generator.random_raw(2 * n_steps)   # the keys the fit would draw
        for step in range(n_steps):
            yield batches[step % count]
    return samples


def _small_batch_fits(X, y, sample_rate, settings):
    """Per-round CPU seconds of the fit variants and SGDClassifier, interleaved."""
    def dpsgd():
        DPSGDClassifier(epsilon=np.inf, noise_multiplier=settings["noise_multiplier"],
                        sample_rate=sample_rate, epochs=settings["epochs"], data_norm=1.0,
                        random_state=0).fit(X, y)

    def by_rows():
        with mock.patch.object(_poisson_sampling, "_BLOCKS_MAX_NUMERATOR", 0):
            dpsgd()

    def free_sampler():
        free = _free_batches(len(X), sample_rate, 64)
        with mock.patch.object(_dpsgd, "_poisson_step_samples", free):
            dpsgd()

    def sgd():
        SGDClassifier(loss="log_loss", max_iter=settings["epochs"], tol=None,
                      random_state=0).fit(X, y)

    fits = {"dpsgd": dpsgd, "dpsgd_batches_by_rows": by_rows,
            "dpsgd_free_sampler": free_sampler, "SGDClassifier": sgd}
    times = {name: [] for name in fits}
    load = [os.getloadavg()[0]]
    with threadpool_limits(limits=1, user_api="blas"):
        for _ in range(settings["rounds"]):
            for name, fit in fits.items():
                times[name].append(_cpu_seconds(fit))
    load.append(os.getloadavg()[0])
    sgd_times = np.asarray(times["SGDClassifier"])
    out = {"sample_rate": sample_rate, "load_average": load, "cpu_s": times,
           "median_cpu_s": {name: float(np.median(t)) for name, t in times.items()}}
    for name in ("dpsgd", "dpsgd_batches_by_rows", "dpsgd_free_sampler"):
        ratios = np.asarray(times[name]) / sgd_times
        out[f"{name}_over_SGDClassifier"] = float(np.median(ratios))
        out[f"{name}_over_SGDClassifier_range"] = [float(ratios.min()), float(ratios.max())]
    return out


def _sampler_steps(n, q, steps):
    """CPU microseconds of one step's draw, by rows and by blocks, interleaved by step,
    and of keying the AES generator with the step's key alone (both draws pay it)."""
    keys = np.random.default_rng(0).integers(0, 2**64, size=(steps, 2), dtype=np.uint64)
    m = _poisson_sampling.inclusion_numerator(q)
    generator = _poisson_sampling._generator()
    draws = {"by_rows": lambda key: _poisson_sampling._rows_by_rows(key, m, 0, n),
             "by_blocks": lambda key: _poisson_sampling._rows_by_blocks(key, m, 0, n),
             "keying_alone": lambda key: _poisson_sampling._read(generator, key, 0, 2)}
    times = {name: [] for name in draws}
    for key in keys:
        for name, draw in draws.items():
            times[name].append(_cpu_seconds(lambda: draw(key)) * 1e6)
    ratios = np.asarray(times["by_rows"]) / np.asarray(times["by_blocks"])
    # the steps drawn together, as a fit draws them (poisson_step_samples)
    rng = np.random.Generator(ChaCha(seed=0))
    together = _cpu_seconds(lambda: list(_poisson_sampling.poisson_step_samples(n, q, rng,
                                                                                steps)))
    return {"n": n, "sample_rate": q,
            "median_us": {name: float(np.median(t)) for name, t in times.items()},
            "steps_together_mean_us": together / steps * 1e6,
            "by_rows_over_by_blocks": float(np.median(ratios))}


def _small_batch(params):
    """Small batches on Adult (see the module docstring); load is recorded: the figures
    are from a shared machine."""
    X, y, _, _ = make_data(params, "adult")
    settings = dict(SMALL_BATCH)
    if params is QUICK:
        settings.update(rounds=2, epochs=2, sampler_steps=30, tall_rows=20_000, tall_rounds=1)
    tall = make_classification(n_samples=settings["tall_rows"], n_features=100,
                               random_state=0)
    tall_X = tall[0] / np.linalg.norm(tall[0], axis=1).max()
    tall_settings = {**settings, "epochs": settings["tall_epochs"],
                     "rounds": settings["tall_rounds"]}
    out = {"settings": settings, "n_train": len(X),
           "batch_256": _small_batch_fits(X, y, settings["batch"] / len(X), settings),
           "default_rate": _small_batch_fits(X, y, 0.1, settings),
           "tall_batch_256": _small_batch_fits(tall_X, tall[1],
                                               settings["batch"] / settings["tall_rows"],
                                               tall_settings),
           "sampler_alone": [_sampler_steps(n, settings["batch"] / n, settings["sampler_steps"])
                             for n in (len(X), 1_000_000)]}
    for name in ("batch_256", "default_rate", "tall_batch_256"):
        print(f"[small batch] {name}: " + ", ".join(
            f"{k} {v:.3g}" for k, v in out[name].items() if k.endswith("_SGDClassifier")))
    for row in out["sampler_alone"]:
        print(f"[small batch] sampler, n={row['n']}: {row['median_us']} us a step")
    return out


def _plot(payload, params, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(payload["accuracy"])
    fig, axes = plt.subplots(1, len(names), figsize=(6 * len(names), 4.6), squeeze=False)
    labels = {"skdp_dpsgd_default": "skdp DP-SGD (defaults: rate 0.1, 10 epochs)",
              "skdp_dpgd_default": "skdp DP-GD (full batch, 200 epochs)",
              "skdp_dpsgd_recipe": "skdp DP-SGD (B=1000, 60 ep.)",
              "skdp_objpert_gaussian": "skdp ObjPert (Gaussian, C=1)",
              "opacus_dpsgd_recipe": f"Opacus DP-SGD (same recipe, last iterate, "
                                     f"seeds {params['opacus_seeds']})"}
    for ax, name in zip(axes[0], names):
        result = payload["accuracy"][name]
        for method, rows in result["methods"].items():
            ok = [r for r in rows if "test_accuracy" in r]
            if not ok:
                continue
            eps = [r["epsilon"] for r in ok]
            mean = [r["test_accuracy"]["mean"] for r in ok]
            sem = [r["test_accuracy"]["sem"] for r in ok]
            ax.errorbar(eps, mean, yerr=sem, marker="o", capsize=3,
                        label=labels.get(method, method))
        for label, acc in result["non_private_LogisticRegression"].items():
            ax.axhline(acc, ls="--", lw=1, color="grey")
            ax.text(params["epsilons"][0], acc, f" non-private LR {label}", fontsize=7,
                    va="bottom", color="grey")
        for eps, target in TARGETS.get(name, {}).items():
            ax.plot([eps], [target], marker="*", ms=12, color="red", ls="none")
        ax.set_xscale("log")
        ax.set_xlabel("epsilon (delta = 1e-5, add/remove-one)")
        ax.set_ylabel("test accuracy")
        ax.set_title(f"{name} (n_train = {result['n_train']})")
        ax.legend(fontsize=7, loc="lower right")
        ax.grid(alpha=0.3)
    timing = payload["timing"]
    ratio = timing.get("opacus_over_skdp_ratio", float("nan"))
    text = (f"{timing['epochs']}-epoch speed: Opacus/skdp = {ratio:.1f}x;"
            f" per epoch vs SGDClassifier: recipe "
            f"{timing['per_epoch_ratio_recipe_vs_SGDClassifier']:.2f}x, defaults "
            f"{timing['per_epoch_ratio_default_vs_SGDClassifier']:.2f}x. Red stars: targets.")
    fig.text(0.01, 0.05, text, fontsize=8)
    fig.text(0.01, 0.01, figure_footer(payload["environment"], params["seeds"], "add_remove"),
             fontsize=7)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small CI-sized run")
    parser.add_argument("--timing-only", action="store_true",
                        help="only the speed ratios (written to dpsgd_timing.json)")
    parser.add_argument("--small-batch", action="store_true",
                        help="only the small-batch speed figures (dpsgd_small_batch.json)")
    parser.add_argument("--n-jobs", type=int, default=1, help=N_JOBS_HELP)
    parser.add_argument("--methods", nargs="+", choices=SKDP_METHODS,
                        help="run only these skdp accuracy curves and add them to the "
                             "existing JSON (its other rows and timing are kept; the rerun "
                             "is recorded)")
    args = parser.parse_args(argv)
    params = QUICK if args.quick else PARAMS
    name = NAME + ("_quick" if args.quick else "")
    if args.methods:
        path = RESULTS_DIR / f"{name}.json"
        payload = json.loads(path.read_text())
        for dataset in params["datasets"]:
            curves = _accuracy_curves(params, dataset, False, args.n_jobs, args.methods)
            recorded = payload["accuracy"][dataset]
            # the curves run now first, so that the table opens with them
            recorded["methods"] = {**curves["methods"],
                                   **{k: v for k, v in recorded["methods"].items()
                                      if k not in curves["methods"]}}
        payload.setdefault("reruns", []).append(
            {"methods": args.methods, "datasets": params["datasets"],
             "environment": environment()})
        path.write_text(json.dumps(payload, indent=2, default=_to_builtin) + "\n")
        _plot(payload, params, path.with_suffix(".png"))
        return
    torch_available = (optional_import("torch") is not None
                       and optional_import("opacus") is not None)
    if not torch_available:
        print("Opacus not importable: skipping the Opacus comparison.")
    if args.small_batch:
        path = write_results(name + "_small_batch", _small_batch(params))
        print("wrote", path)
        return
    if args.timing_only:
        path = write_results(name + "_timing", {"params": params, "recipe": RECIPE,
                                                "timing": _timings(params, torch_available)})
        print("wrote", path)
        return
    payload = {"params": params, "recipe": RECIPE, "targets": {
        k: {str(e): t for e, t in v.items()} for k, v in TARGETS.items()},
        "opacus_available": torch_available}
    payload["timing"] = _timings(params, torch_available)
    payload["accuracy"] = {d: _accuracy_curves(params, d, torch_available, args.n_jobs)
                           for d in params["datasets"]}
    path = write_results(name, payload)
    payload["environment"] = environment()
    _plot(payload, params, path.with_suffix(".png"))
    print(f"wrote {path} and {path.with_suffix('.png')}")


if __name__ == "__main__":
    main()
