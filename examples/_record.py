"""Record what a worked example produced, beside its figure, for the docs check.

A run of ``examples/plot_<name>.py`` writes ``<name>.json`` next to ``<name>.png``
(``text_like_sparse.py``, which draws no figure, writes ``text_like_sparse.json``): the
numbers its ``main`` returned, the SHA-256 of the script and of the figure, the
versions it ran with and its wall time. A full run also repeats the example with
``quick=True`` and records those numbers, which ``tests/test_examples.py`` compares
with its own quick runs. ``docs/_ext/recorded.py`` quotes the recorded numbers in the
docs and ``tests/test_docs.py`` checks that the records are current.
"""

import hashlib
import inspect
import json
import platform
import re
import subprocess
import tempfile
import time
from pathlib import Path

import matplotlib
import numpy as np
import scipy
import sklearn

import skdp


def file_sha256(path):
    """SHA-256 of a file's bytes, in hex."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def record_name(script):
    """``plot_utility_vs_epsilon.py`` -> ``utility_vs_epsilon``, the figure's stem."""
    return Path(script).stem.removeprefix("plot_")


def jsonable(value):
    """The numbers of a result as JSON values: arrays as nested lists, keys as strings."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items() if k != "path"}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Path):
        return value.name
    return value


def git_revision(folder):
    """``git describe --always --dirty`` of the checkout holding ``folder``, or None."""
    try:
        done = subprocess.run(["git", "-C", str(folder), "describe", "--always", "--dirty",
                               "--abbrev=12"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return done.stdout.strip()


def versions():
    return {"skdp": skdp.__version__, "python": platform.python_version(),
            "numpy": np.__version__, "scipy": scipy.__version__,
            "scikit-learn": sklearn.__version__, "matplotlib": matplotlib.__version__}


def dumps(record):
    """JSON text with one key a line and each innermost list of numbers on one line."""
    text = json.dumps(record, indent=1)
    flat = re.compile(r"\[(?:\s*[-+.\w]+,)*\s*[-+.\w]+\s*\]")
    return flat.sub(lambda m: "[" + ", ".join(re.findall(r"[-+.\w]+", m.group(0))) + "]",
                    text) + "\n"


def quick_numbers(main):
    """The numbers of ``main(quick=True)``, its figure (if any) drawn in a scratch folder."""
    if "out_dir" not in inspect.signature(main).parameters:
        return jsonable(main(quick=True))
    with tempfile.TemporaryDirectory() as scratch:
        return jsonable(main(quick=True, out_dir=scratch))


def write_record(script, main, result, *, quick, seconds, out_dir=None):
    """Write ``<name>.json`` beside the figure of ``result`` and return its path.

    Parameters
    ----------
    script : path-like
        The example's file (``__file__``).
    main : callable
        Its ``main(quick, out_dir)``; a full run calls it again with ``quick=True``.
    result : dict
        What ``main`` returned; ``result["path"]`` is the figure, if it draws one.
    quick : bool
        Whether ``result`` comes from a quick run (the docs check refuses those).
    seconds : float
        Wall time of the run that gave ``result``.
    out_dir : path-like, default=None
        Folder of the record of an example without a figure.
    """
    figure = Path(result["path"]) if "path" in result else None
    folder = figure.parent if figure is not None else Path(out_dir)
    start = time.perf_counter()
    quick_result = None if quick else quick_numbers(main)
    record = {
        "example": Path(script).name,
        "script_sha256": file_sha256(script),
        "figure": None if figure is None else figure.name,
        "figure_sha256": None if figure is None else file_sha256(figure),
        "quick": bool(quick),
        "seconds": round(seconds, 1),
        "quick_seconds": None if quick else round(time.perf_counter() - start, 1),
        "git_revision": git_revision(Path(script).parent),
        "versions": versions(),
        "numbers": jsonable(result),
        "quick_numbers": quick_result,
    }
    path = folder / (record_name(script) + ".json")
    path.write_text(dumps(record), encoding="utf-8")
    return path


def differences(recorded, fresh, *, rtol=1e-3, atol=1e-3, where="numbers",
                skip=("seconds",)):
    """Where two recorded results disagree: numbers beyond the tolerance, other values
    unequal, different keys or lengths. Empty when they agree. Entries under a key in
    ``skip`` (timings) are not compared."""
    if isinstance(recorded, dict) and isinstance(fresh, dict):
        if recorded.keys() != fresh.keys():
            return [f"{where}: keys {sorted(recorded)} recorded, {sorted(fresh)} now"]
        return [line for key in recorded if key not in skip for line in differences(
            recorded[key], fresh[key], rtol=rtol, atol=atol, where=f"{where}/{key}",
            skip=skip)]
    if isinstance(recorded, list) and isinstance(fresh, list):
        if len(recorded) != len(fresh):
            return [f"{where}: {len(recorded)} items recorded, {len(fresh)} now"]
        return [line for i, (a, b) in enumerate(zip(recorded, fresh))
                for line in differences(a, b, rtol=rtol, atol=atol, where=f"{where}/{i}",
                                        skip=skip)]
    numbers = (int, float)
    if (isinstance(recorded, numbers) and isinstance(fresh, numbers)
            and not isinstance(recorded, bool)):
        if np.isclose(fresh, recorded, rtol=rtol, atol=atol, equal_nan=True):
            return []
    elif recorded == fresh:
        return []
    return [f"{where}: {recorded!r} recorded, {fresh!r} now"]
