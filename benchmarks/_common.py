"""Helpers shared by the benchmark scripts: timing, environment, JSON and plots."""

import json
import os
import platform
import subprocess
import time
import warnings
from importlib import metadata
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed

from skdp.exceptions import DataNormWarning

# The benchmarks fit rows of norm about 1 (skdp.datasets clips every row to L2 norm 1;
# the scale-out rows are generated so), for which the default bound 1.0 is the right
# public choice: its reminder is noise here.
warnings.filterwarnings("ignore", category=DataNormWarning)

# SKDP_BENCHMARK_RESULTS redirects every result (python -m benchmarks --results-dir; tests)
RESULTS_DIR = Path(os.environ.get("SKDP_BENCHMARK_RESULTS")
                   or Path(__file__).resolve().parent / "results")


def best_time(fit, repeats=3):
    """Best wall-clock time of ``fit()`` over ``repeats`` calls (perf_counter)."""
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        fit()
        best = min(best, time.perf_counter() - start)
    return best


def interleaved_ratio(ours, reference, repeats, others=None):
    """Fit times of ``ours`` against ``reference`` as a user meets them: the fits timed
    in turn (ours, reference, then ``others``), ``repeats`` rounds in one process.

    Each round gives a ratio ``ours / reference`` of two fits run back to back, so load
    from other processes hits both sides of a pair alike; the figure is the median of
    those ratios (``ratio``), with their range. ``others`` (name -> fit) are timed in
    the same rounds, with the median of their own per-round ratios to ``ours``
    (``ours_over``: what the certified fit costs over them). The 1-minute load average
    before and after is recorded (``os.getloadavg``).
    """
    fits = {"ours": ours, "reference": reference, **(others or {})}
    times = {name: [] for name in fits}
    load = [os.getloadavg()[0]]
    for _ in range(repeats):
        for name, fit in fits.items():
            start = time.perf_counter()
            fit()
            times[name].append(time.perf_counter() - start)
    load.append(os.getloadavg()[0])
    mine = np.asarray(times["ours"])
    ratios = mine / np.asarray(times["reference"])
    return {"ours_s": float(np.median(mine)), "reference_s": float(np.median(times["reference"])),
            "ratio": float(np.median(ratios)),
            "ratio_range": [float(ratios.min()), float(ratios.max())],
            "ours_over": {name: float(np.median(mine / np.asarray(times[name])))
                          for name in others or {}},
            "others_s": {name: float(np.median(times[name])) for name in others or {}},
            "repeats": int(repeats), "load_average": load, "all_s": times}


def optional_import(name):
    """Import an optional anchor library, or return None when it is absent or broken.

    (diffprivlib 0.6.6, for one, fails to import under scikit-learn >= 1.8.)
    """
    try:
        return __import__(name)
    except Exception:  # noqa: BLE001 - any failure means "not importable here"
        return None


def environment():
    """Machine, versions and git revision, stored with every result."""
    def version(pkg):
        try:
            return metadata.version(pkg)
        except metadata.PackageNotFoundError:
            return None

    try:
        sha = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, cwd=Path(__file__).parent, check=False).stdout.strip()
    except OSError:
        sha = None
    return {
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "git_sha": sha or None,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "processor": platform.processor() or None,
        "cpu_count": os.cpu_count(),
        "versions": {pkg: version(pkg) for pkg in (
            "skdp", "numpy", "scipy", "scikit-learn", "diffprivlib", "dp-accounting",
            "opacus", "torch")},
    }


def write_results(name, payload):
    """Write ``results/<name>.json`` (payload plus environment); return the path."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"{name}.json"
    payload = {"benchmark": name, "environment": environment(), **payload}
    path.write_text(json.dumps(payload, indent=2, default=_to_builtin) + "\n")
    return path


def _to_builtin(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"cannot serialise {type(value).__name__}")


def figure_footer(payload_env, seeds, neighboring):
    """One line stating machine, versions, seeds and relation, for every figure."""
    v = payload_env["versions"]
    return (f"{payload_env['machine']}, {payload_env['cpu_count']} CPUs; skdp {v['skdp']}, "
            f"scikit-learn {v['scikit-learn']}, numpy {v['numpy']}; seeds {seeds}; "
            f"neighbouring: {neighboring}")


def summarise(values):
    """Mean and standard error of a list of numbers."""
    values = np.asarray(values, dtype=float)
    sem = values.std(ddof=1) / np.sqrt(len(values)) if len(values) > 1 else 0.0
    return {"mean": float(values.mean()), "sem": float(sem), "n": int(len(values))}


# help text of the scripts' --n-jobs option
N_JOBS_HELP = ("joblib workers for the accuracy repetitions (default 1; -1: all cores; a dask "
               "cluster under joblib.parallel_backend('dask')); the results are the same for "
               "any value. The fit-time measurements always run one after another, so that "
               "the ratios measured in one run stay comparable")


def map_seeds(function, seeds, n_jobs=1, **shared):
    """``[function(seed, **shared) for seed in seeds]``, run by joblib on ``n_jobs`` workers.

    Each call is seeded by its own ``seed`` only and joblib returns the results in the
    order of ``seeds``, so they do not depend on ``n_jobs`` or the joblib backend. Pass
    data arrays in ``shared``: joblib memory-maps large arrays instead of copying them
    into every task.
    """
    return Parallel(n_jobs=n_jobs)(delayed(function)(seed, **shared) for seed in seeds)
