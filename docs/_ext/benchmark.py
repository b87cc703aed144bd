"""The ``benchmark`` role: quote a number from a committed benchmark result.

Every full benchmark run writes ``benchmarks/results/<name>.json`` (``RESULTS.md`` is
generated from those files by ``benchmarks/_report.py``). In the docs, ::

    :benchmark:`defaults/results/mnist/estimators/DPSGDClassifier/1.0/default/mean|.1%`

is replaced at build time by the number found in ``defaults.json``, so the text cannot
drift from the committed result. A target that does not resolve is an error (a failed
``sphinx-build -W``). README.md and docstrings are not built by Sphinx: the test suite
checks the benchmark numbers they quote with :func:`resolve` (``tests/test_docs.py``).

The target is ``<result>/<step>/<step>...`` followed by an optional ``|<format spec>``
(Python's format mini-language: ``.2f``, ``.1%``, ``,d``). The steps are the keys of a
JSON pointer (RFC 6901): separated by ``/``, with ``~1`` standing for a ``/`` inside a
key and ``~0`` for ``~`` (``~2`` for ``|``, which separates the format). A step is

* a key of an object, written out in full (``objective perturbation (pure, C=1)``,
  ``0.82``), or a prefix of keys ending in ``*`` (``objective perturbation (pure*``);
  a bare ``*`` takes every key of an object or every item of a list;
* an integer: an item of a list (``-1`` is the last);
* ``<field>=<value>``, several joined by ``&``: the items of a list of objects whose
  fields have those values (``estimators/estimator=OutputPertSVM()&pipeline=null``;
  numbers compare as numbers, ``null``, ``true`` and ``false`` as JSON);
* ``@min``, ``@max``, ``@mean`` or ``@median``, last: that statistic of the numbers
  collected (``1.5 to 1.7`` over the targets is ``.../targets/*/.../median_ratio@min``
  and ``...@max``).

A ``*``, a prefix or a selector that matches several keys or items makes the following
steps apply to each match; such a target must end with a statistic. One that matches
nothing is an error, as is an unknown key, a null or a non-number where a number is
quoted.
"""

import json
import math
import statistics
from pathlib import Path

from docutils import nodes

DOCS = Path(__file__).resolve().parents[1]
RESULTS = DOCS.parent / "benchmarks" / "results"
STATISTICS = {"@min": min, "@max": max, "@mean": statistics.fmean,
              "@median": statistics.median}


class BenchmarkError(LookupError):
    """A ``benchmark`` target that does not resolve."""


def load_result(name, folder=RESULTS):
    """The parsed ``<folder>/<name>.json``."""
    path = Path(folder) / f"{name}.json"
    if not path.is_file():
        raise BenchmarkError(f"no benchmark result {path.name} in {folder}")
    return json.loads(path.read_text(encoding="utf-8"))


def _unescape(step):
    return step.replace("~2", "|").replace("~1", "/").replace("~0", "~")


def _same(field, wanted):
    if field is None or isinstance(field, bool):
        return json.dumps(field) == wanted
    if isinstance(field, (int, float)):
        try:
            return math.isclose(field, float(wanted))
        except ValueError:
            return False
    return str(field) == wanted


def _matches(item, step):
    """Whether the object ``item`` has every ``field=value`` of ``step``."""
    conditions = [condition.partition("=") for condition in step.split("&")]
    return isinstance(item, dict) and all(
        key in item and _same(item[key], wanted) for key, _, wanted in conditions)


def _children(value, step):
    """The values a (non-statistic) step selects in ``value``: a list, several for a
    wildcard or prefix."""
    if isinstance(value, dict):
        if step == "*":
            return list(value.values())
        if step.endswith("*"):
            found = [v for k, v in value.items() if k.startswith(step[:-1])]
            if not found:
                raise BenchmarkError(f"no key starts with {step[:-1]!r} (keys: {sorted(value)})")
            return found
        if step not in value:
            raise BenchmarkError(f"no key {step!r} (keys: {sorted(value)})")
        return [value[step]]
    if isinstance(value, list):
        if step == "*":
            return list(value)
        if "=" in step:
            found = [item for item in value if _matches(item, step)]
            if not found:
                raise BenchmarkError(f"no item of the list has {step!r}")
            return found
        try:
            index = int(step)
        except ValueError:
            raise BenchmarkError(f"{step!r} is not an index of a list") from None
        if not -len(value) <= index < len(value):
            raise BenchmarkError(f"index {index} outside a list of {len(value)}")
        return [value[index]]
    raise BenchmarkError(f"cannot apply {step!r} to the value {value!r}")


def _number(value, where):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (
            isinstance(value, float) and math.isnan(value)):
        raise BenchmarkError(f"{where} is {value!r}, not a number")
    return value


def value_of(target, folder=RESULTS):
    """The number ``target`` (without its format) addresses, and the result's name."""
    name, *steps = target.strip().split("/")
    statistic = None
    if steps and "@" in steps[-1]:
        last, _, stat = steps[-1].rpartition("@")
        statistic = "@" + stat
        if statistic not in STATISTICS:
            raise BenchmarkError(f"unknown statistic {statistic!r} ({sorted(STATISTICS)})")
        steps = steps[:-1] + ([last] if last else [])
    values = [load_result(name, folder)]
    for step in map(_unescape, steps):
        values = [child for value in values for child in _children(value, step)]
    if statistic is None:
        if len(values) != 1:
            raise BenchmarkError(f"{target.strip()} selects {len(values)} values: "
                                 f"end it with one of {sorted(STATISTICS)}")
        return _number(values[0], target.strip()), name
    numbers = [_number(v, target.strip()) for v in values]
    return STATISTICS[statistic](numbers), name


def resolve(target, folder=RESULTS):
    """The text that ``:benchmark:`target``` stands for, and the result's name."""
    path, _, spec = target.partition("|")
    value, name = value_of(path, folder)
    try:
        return format(value, spec.strip()), name
    except (ValueError, TypeError) as error:
        raise BenchmarkError(f"format {spec.strip()!r} of {value!r}: {error}") from error


def benchmark_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    env = inliner.document.settings.env
    folder = Path(env.config.benchmark_results)
    try:
        value, result = resolve(text, folder)
    except BenchmarkError as error:
        message = inliner.reporter.error(f"benchmark number {text!r}: {error}", line=lineno)
        problem = inliner.problematic(rawtext, rawtext, message)
        return [problem], [message]
    # reread the page when the result changes
    env.note_dependency(str(folder / f"{result}.json"))
    return [nodes.inline(rawtext, value, classes=["benchmark"])], []


def setup(app):
    # where the results are; a test points it at a copy
    app.add_config_value("benchmark_results", str(RESULTS), "env")
    app.add_role("benchmark", benchmark_role)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
