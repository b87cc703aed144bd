"""The ``recorded`` role: quote a number from a worked example's recorded run.

Every full run of ``examples/plot_<name>.py`` writes ``docs/_static/<name>.json``
(``examples/_record.py``; ``text_like_sparse.py`` writes ``text_like_sparse.json``).
In the docs, ::

    :recorded:`utility_vs_epsilon/accuracy/ObjPertLogisticRegression/mean/epsilons=0.05|.3f`

is replaced at build time by the number found in ``utility_vs_epsilon.json``, so the
text cannot drift from the record. The role warns (an error under ``sphinx-build -W``)
when the record is stale: its script changed since the run, the figure beside it is
not the one the run drew, or it comes from a ``--quick`` run. ``tests/test_docs.py``
checks the same for every example, quoted or not.

The target is ``<record>/<step>/<step>...`` followed by an optional ``|<format spec>``
(Python's format mini-language; ``,d`` gives 16,000). The steps walk the record's
``numbers``:

* a key of a dict (``accuracy``, ``ObjPertLogisticRegression``, ``4.0``);
* an integer: an item of a list (``-1`` is the last);
* ``<list>=<value>``: the item at the position of ``value`` in the record's top-level
  list ``<list>``, e.g. ``epsilons=0.05`` or ``sizes=2000``;
* ``mean``, ``std``, ``min``, ``max``: that statistic over the last axis of an array
  (the noise draws).
"""

import hashlib
import json
import math
import re
from pathlib import Path

import numpy as np
from docutils import nodes

DOCS = Path(__file__).resolve().parents[1]
STATIC = DOCS / "_static"
EXAMPLES = DOCS.parent / "examples"
STATISTICS = {"mean": np.mean, "std": np.std, "min": np.min, "max": np.max}


class RecordError(LookupError):
    """A ``recorded`` target that does not resolve."""


def load_record(name, folder=STATIC):
    """The parsed ``<folder>/<name>.json``."""
    path = Path(folder) / f"{name}.json"
    if not path.is_file():
        raise RecordError(f"no record {path.name} in {folder}")
    return json.loads(path.read_text(encoding="utf-8"))


def _sha256(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def stale_reasons(name, folder=STATIC, examples=EXAMPLES):
    """Why ``<folder>/<name>.json`` is not the record of its script's current full run.

    Empty when the record comes from a full run, its script is unchanged since (same
    SHA-256) and the figure beside it is the one that run drew.
    """
    record = load_record(name, folder)
    script, figure = Path(examples) / record["example"], Path(folder) / str(record["figure"])
    reasons = []
    if record["quick"]:
        reasons.append("it was written by a --quick run")
    if not script.is_file():
        reasons.append(f"its script {script.name} is missing")
    elif _sha256(script) != record["script_sha256"]:
        reasons.append(f"{script.name} changed since the recorded run")
    if record["figure"] is not None and (not figure.is_file()
                                         or _sha256(figure) != record["figure_sha256"]):
        reasons.append(f"{figure.name} is not the figure the recorded run drew")
    if reasons:
        reasons.append(f"rerun python examples/{script.name} --out-dir docs/_static")
    return reasons


_MARKUP = re.compile(r":\w[\w-]*:`[^`]*`|``[^`]*``")
_NUMBER = re.compile(r"(?<![\w.])(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d*\.\d+)")


def unmarked_numbers(text):
    """``(line, number)`` of each decimal or comma-grouped number left in the prose.

    Roles (``:recorded:`` among them), inline literals, directives and indented
    blocks (literal blocks, directive options) are not prose.
    """
    lines = ["" if line.startswith(("..", "   ")) else line for line in text.splitlines()]
    prose = _MARKUP.sub(lambda m: "\n" * m.group(0).count("\n"), "\n".join(lines))
    return [(lineno, m.group(0)) for lineno, line in enumerate(prose.splitlines(), 1)
            for m in _NUMBER.finditer(line)]


def _position(numbers, step):
    """Index of ``value`` in the top-level list ``key`` of a ``key=value`` step."""
    key, _, wanted = step.partition("=")
    values = numbers.get(key)
    if not isinstance(values, list):
        raise RecordError(f"{key!r} is not a top-level list of the record")
    for i, value in enumerate(values):
        if isinstance(value, (int, float)) and math.isclose(value, float(wanted)):
            return i
    raise RecordError(f"{wanted} is not in {key} = {values}")


def _step(value, step, numbers):
    if step in STATISTICS:
        return STATISTICS[step](np.asarray(value, dtype=float), axis=-1).tolist()
    if isinstance(value, dict):
        if step not in value:
            raise RecordError(f"no key {step!r} (keys: {sorted(value)})")
        return value[step]
    if isinstance(value, list):
        index = _position(numbers, step) if "=" in step else int(step)
        if not -len(value) <= index < len(value):
            raise RecordError(f"index {index} outside a list of {len(value)}")
        return value[index]
    raise RecordError(f"cannot apply {step!r} to the number {value!r}")


def resolve(target, folder=STATIC):
    """The text that ``:recorded:`target``` stands for, and the record's name."""
    path, _, spec = target.partition("|")
    name, *steps = path.strip().split("/")
    numbers = load_record(name, folder)["numbers"]
    value = numbers
    for step in steps:
        try:
            value = _step(value, step, numbers)
        except (ValueError, TypeError) as error:
            raise RecordError(f"step {step!r}: {error}") from error
    if isinstance(value, (dict, list)):
        raise RecordError(f"{path.strip()} is not a single number")
    try:
        return format(value, spec.strip()), name
    except (ValueError, TypeError) as error:
        raise RecordError(f"format {spec.strip()!r} of {value!r}: {error}") from error


def recorded_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    try:
        value, record = resolve(text)
    except RecordError as error:
        message = inliner.reporter.error(f"recorded number {text!r}: {error}", line=lineno)
        problem = inliner.problematic(rawtext, rawtext, message)
        return [problem], [message]
    env = inliner.document.settings.env
    # reread the page when the record or its script changes
    env.note_dependency(str(STATIC / f"{record}.json"))
    env.note_dependency(str(EXAMPLES / load_record(record)["example"]))
    messages = []
    warned = env.temp_data.setdefault("recorded_stale_warned", set())   # once a page
    if record not in warned and (reasons := stale_reasons(record)):
        warned.add(record)
        messages.append(inliner.reporter.warning(
            f"{record}.json is stale: " + "; ".join(reasons), line=lineno))
    return [nodes.inline(rawtext, value, classes=["recorded"])], messages


def setup(app):
    app.add_role("recorded", recorded_role)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
