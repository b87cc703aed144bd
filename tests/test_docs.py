"""The documentation builds without warnings, covers the public API, and quotes the
worked examples' numbers from their current recorded runs."""

import doctest
import importlib
import importlib.util
import inspect
import json
import re
from pathlib import Path

import pytest
from sklearn.base import BaseEstimator

import skdp
import skdp.accounting
import skdp.audit
import skdp.io
import skdp.base
import skdp.datasets
import skdp.metrics
import skdp.model_selection
import skdp.preprocessing
import skdp.research
import skdp.stats

DOCS = Path(__file__).resolve().parents[1] / "docs"
PUBLIC_MODULES = [skdp, skdp.audit, skdp.model_selection, skdp.accounting, skdp.datasets,
                  skdp.base, skdp.research, skdp.preprocessing, skdp.io, skdp.metrics,
                  skdp.stats]


def test_docs_build_without_warnings(tmp_path):
    pytest.importorskip("sphinx")
    pytest.importorskip("numpydoc")
    from sphinx.cmd.build import build_main

    status = build_main(["-W", "--keep-going", "-b", "html", "-q",
                         "-d", str(tmp_path / "doctrees"), str(DOCS), str(tmp_path / "html")])
    assert status == 0, "sphinx-build -W failed: see the captured stderr for the warnings"
    api = (tmp_path / "html" / "api.html").read_text(encoding="utf-8")
    assert 'id="skdp.ObjPertLogisticRegression"' in api


def documented_objects():
    """The objects api.rst documents with an ``auto*`` directive."""
    module, found = None, []
    for line in (DOCS / "api.rst").read_text(encoding="utf-8").splitlines():
        if m := re.match(r"\.\. currentmodule:: (\S+)", line):
            module = m.group(1)
        elif m := re.match(r"\.\. auto(?:class|function|exception):: (\S+)", line):
            obj = importlib.import_module(module)
            for part in m.group(1).split("."):
                obj = getattr(obj, part)
            found.append(obj)
    return found


def test_api_reference_lists_every_public_name():
    documented = {id(obj) for obj in documented_objects()}
    missing = [f"{module.__name__}.{name}" for module in PUBLIC_MODULES
               for name in module.__all__
               if not name.startswith("__") and id(getattr(module, name)) not in documented]
    assert not missing, f"not in docs/api.rst: {missing}"


def public_estimators():
    return sorted((name for name, obj in inspect.getmembers(skdp, inspect.isclass)
                   if issubclass(obj, BaseEstimator)))


@pytest.mark.parametrize("name", public_estimators())
def test_estimator_docstring_has_examples(name):
    docstring = getattr(skdp, name).__doc__
    assert re.search(r"^\s*Examples\n\s*-{8}\n", docstring, flags=re.M), name
    # the section holds code that --doctest-modules runs
    tests = doctest.DocTestFinder(recurse=False).find(getattr(skdp, name), name)
    assert sum(len(t.examples) for t in tests) >= 2, name


def test_every_page_is_in_the_toctree():
    index = (DOCS / "index.rst").read_text(encoding="utf-8")
    pages = {p.stem for p in DOCS.glob("*.rst")} - {"index"}
    listed = set(re.findall(r"^   (\w+)$", index, flags=re.M))
    assert pages <= listed
    assert {"user_guide", "examples", "api", "auditing", "scaling", "benchmarks"} <= listed


def test_example_figures_are_small():
    figures = sorted((DOCS / "_static").glob("*.png"))
    names = {p.name for p in figures}
    assert {"utility_vs_epsilon.png", "choose_epsilon.png",
            "napp_variable_selection.png"} <= names
    for path in figures:
        assert 0 < path.stat().st_size < 200_000, path.name


# -- numbers quoted from the worked examples ---------------------------------------------
# Each full run of examples/plot_<name>.py (and text_like_sparse.py) writes
# docs/_static/<name>.json; the docs quote it with the :recorded: role of
# docs/_ext/recorded.py (resolved at build time).

def _extension(name):
    """docs/_ext/<name>.py, imported by path (docs/ is not a package)."""
    spec = importlib.util.spec_from_file_location(f"skdp_docs_{name}",
                                                  DOCS / "_ext" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def recorded():
    return _extension("recorded")


EXAMPLE_SCRIPTS = sorted([*(DOCS.parent / "examples").glob("plot_*.py"),
                          DOCS.parent / "examples" / "text_like_sparse.py"])
ROLE = re.compile(r":recorded:`([^`]+)`")


def quoted_targets():
    """``(page, line, target)`` of every ``:recorded:`` role in the docs."""
    for page in sorted(DOCS.rglob("*.rst")):
        text = page.read_text(encoding="utf-8")
        for match in ROLE.finditer(text):
            yield page.name, text.count("\n", 0, match.start()) + 1, match.group(1)


@pytest.mark.parametrize("script", EXAMPLE_SCRIPTS, ids=lambda p: p.stem)
def test_example_record_is_current(script):
    """The figure and numbers in docs/_static come from the script as it is now."""
    name = script.stem.removeprefix("plot_")
    assert (DOCS / "_static" / f"{name}.json").is_file(), (
        f"no record: run python examples/{script.name} --out-dir docs/_static")
    assert recorded().stale_reasons(name) == []


def test_every_quoted_number_resolves():
    module = recorded()
    targets = list(quoted_targets())
    assert len(targets) >= 20      # examples.rst and the user guide quote the records
    failures = []
    for page, line, target in targets:
        try:
            module.resolve(target)
        except module.RecordError as error:
            failures.append(f"{page}:{line}: {target}: {error}")
    assert not failures, "\n".join(failures)


def test_examples_page_quotes_numbers_only_from_records():
    """A decimal (or 16,000-style) number in the examples page's prose is a number a
    reader will compare with the figure: it has to be a :recorded: role."""
    text = (DOCS / "examples.rst").read_text(encoding="utf-8")
    assert recorded().unmarked_numbers(text) == []


def fake_record(folder, numbers):
    (folder / "examples").mkdir()
    script = folder / "examples" / "plot_demo.py"
    script.write_text("print('demo')\n")
    (folder / "demo.png").write_bytes(b"png bytes")
    sha = recorded()._sha256
    record = dict(example=script.name, script_sha256=sha(script), figure="demo.png",
                  figure_sha256=sha(folder / "demo.png"), quick=False, numbers=numbers)
    (folder / "demo.json").write_text(json.dumps(record), encoding="utf-8")
    return script


def test_stale_record_is_caught(tmp_path):
    module = recorded()
    script = fake_record(tmp_path, {})

    def check():
        return module.stale_reasons("demo", tmp_path, tmp_path / "examples")

    assert check() == []
    script.write_text("print('demo, edited')\n")
    assert any("changed since" in reason for reason in check())
    (tmp_path / "demo.png").write_bytes(b"another figure")
    assert any("is not the figure" in reason for reason in check())


def test_quoted_number_resolution(tmp_path):
    module = recorded()
    fake_record(tmp_path, {"epsilons": [0.05, 1.0], "rows": [2000, 16000],
                           "accuracy": {"A": [[0.7, 0.8], [0.81, 0.83]]}, "needed": None})

    def resolve(target):
        return module.resolve(target, tmp_path)[0]

    assert resolve("demo/accuracy/A/mean/epsilons=0.05|.3f") == "0.750"
    assert resolve("demo/accuracy/A/max/-1|.2f") == "0.83"
    assert resolve("demo/rows/1|,d") == "16,000"
    for bad in ("demo/accuracy/B", "demo/accuracy/A/mean/epsilons=0.5", "demo/accuracy/A",
                "demo/needed|,d", "missing/epsilons/0"):
        with pytest.raises(module.RecordError):
            resolve(bad)


def test_unmarked_numbers_are_found():
    text = ("ObjPert falls to about 0.70 at :recorded:`u/epsilons/0`, and needs\n"
            "``n = 16,000`` rows; 16,000 rows at epsilon 1.\n"
            ".. image:: x.png\n   :width: 0.5\n")
    assert recorded().unmarked_numbers(text) == [(1, "0.70"), (2, "16,000")]


# -- numbers quoted from the benchmarks ---------------------------------------------------
# Each full benchmark run writes benchmarks/results/<name>.json; the docs quote it with
# the :benchmark: role of docs/_ext/benchmark.py (resolved at build time, an unknown
# target fails the -W build). README.md and docstrings are not built by Sphinx: the
# test below checks what they quote with the same resolver.

def benchmark():
    return _extension("benchmark")


BENCHMARK_ROLE = re.compile(r":benchmark:`([^`]+)`")


def test_every_benchmark_number_resolves():
    module = benchmark()
    failures, count = [], 0
    for page in sorted(DOCS.rglob("*.rst")):
        text = page.read_text(encoding="utf-8")
        for match in BENCHMARK_ROLE.finditer(text):
            count += 1
            try:
                module.resolve(match.group(1))
            except module.BenchmarkError as error:
                line = text.count("\n", 0, match.start()) + 1
                failures.append(f"{page.name}:{line}: {match.group(1)}: {error}")
    assert not failures, "\n".join(failures)
    assert count >= 100     # choosing.rst, the user guide and private_selection.rst


FAKE_RESULT = {
    "datasets": {"adult": {
        "output perturbation, Laplace (pure, C=0.03)": {"targets": {
            "0.8": {"oracle_epsilon": 1.75, "methods": {"all rows": {"median_ratio": 0.605}}},
            "0.82": {"oracle_epsilon": 3.12, "methods": {"all rows": {"median_ratio": 0.711}}},
        }},
        "a/b|c~d": 7,
    }},
    "rows": [{"estimator": "SVM(delta=1e-5)", "pipeline": None, "epsilon": 0.1, "acc": 0.69},
             {"estimator": "SVM(delta=1e-5)", "pipeline": "scaled", "epsilon": 0.1, "acc": 0.7},
             {"estimator": "SVM()", "pipeline": None, "epsilon": 1.0, "acc": 0.81}],
    "n_train": 30162, "missing": None, "curve": [0.5, float("nan")],
}


def test_benchmark_number_resolution(tmp_path):
    module = benchmark()
    (tmp_path / "demo.json").write_text(json.dumps(FAKE_RESULT), encoding="utf-8")

    def resolve(target):
        return module.resolve(target, tmp_path)[0]

    laplace = "demo/datasets/adult/output perturbation, Laplace (pure, C=0.03)/targets"
    assert resolve(f"{laplace}/0.8/methods/all rows/median_ratio|.2f") == "0.60"
    assert resolve("demo/datasets/adult/output perturbation, Lap*/targets/0.82/"
                   "methods/all rows/median_ratio|.2f") == "0.71"
    # a range over the targets
    assert resolve(f"{laplace}/*/methods/all rows/median_ratio@min|.2f") == "0.60"
    assert resolve(f"{laplace}/*/oracle_epsilon@max|.1f") == "3.1"
    assert resolve(f"{laplace}/*/oracle_epsilon@mean|.3f") == "2.435"
    # a key holding the separators, escaped as in a JSON pointer
    assert resolve("demo/datasets/adult/a~1b~2c~0d|d") == "7"
    # items of a list picked by their fields
    assert resolve("demo/rows/estimator=SVM(delta=1e-5)&pipeline=null/acc|.2f") == "0.69"
    assert resolve("demo/rows/epsilon=0.1/acc@max|.1%") == "70.0%"
    assert resolve("demo/rows/-1/acc") == "0.81"
    assert resolve("demo/n_train|,d") == "30,162"
    for bad in (f"{laplace}/0.83/oracle_epsilon",                 # unknown key
                "demo/datasets/adult/output perturbation, Gauss*/targets",  # no such prefix
                f"{laplace}/*/oracle_epsilon",                    # several values, no statistic
                f"{laplace}/0.8/oracle_epsilon@mode",             # unknown statistic
                f"{laplace}/0.8",                                 # not a number
                "demo/rows/estimator=SVM(delta=1e-5)/acc",        # two items
                "demo/rows/estimator=LR()/acc", "demo/rows/3/acc", "demo/rows/x/acc",
                "demo/missing", "demo/curve/1", "demo/n_train|.2q", "absent/n_train"):
        with pytest.raises(module.BenchmarkError):
            resolve(bad)


def test_stale_benchmark_number_changes_or_fails_the_build(tmp_path):
    """A change of the committed JSON changes the rendered number (the page is reread),
    and a number whose key disappeared fails the -W build."""
    pytest.importorskip("sphinx")
    from sphinx.cmd.build import build_main

    results, source = tmp_path / "results", tmp_path / "source"
    results.mkdir()
    source.mkdir()
    (source / "conf.py").write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(DOCS / '_ext')!r})\n"
        "extensions = ['benchmark']\n"
        f"benchmark_results = {str(results)!r}\n", encoding="utf-8")
    (source / "index.rst").write_text(
        "Demo\n====\n\nThe search cost :benchmark:`demo/datasets/adult/output perturbation, "
        "Lap*/targets/0.8/methods/all rows/median_ratio|.2f` times its oracle.\n",
        encoding="utf-8")
    result = json.loads(json.dumps(FAKE_RESULT))
    laplace = result["datasets"]["adult"]["output perturbation, Laplace (pure, C=0.03)"]

    def build():
        (results / "demo.json").write_text(json.dumps(result), encoding="utf-8")
        status = build_main(["-W", "-b", "html", "-q", "-d", str(tmp_path / "doctrees"),
                             str(source), str(tmp_path / "html")])
        return status, (tmp_path / "html" / "index.html").read_text(encoding="utf-8")

    status, page = build()
    assert status == 0 and "cost <span class=\"benchmark\">0.60</span> times" in page
    laplace["targets"]["0.8"]["methods"]["all rows"]["median_ratio"] = 0.75
    status, page = build()      # same doctrees: the page depends on demo.json
    assert status == 0 and "cost <span class=\"benchmark\">0.75</span> times" in page
    del laplace["targets"]["0.8"]["methods"]["all rows"]
    status, _ = build()
    assert status != 0


# Bare decimals that are settings of a measurement, not results: epsilons, targets,
# feature counts.
SETTINGS = re.compile(r"epsilon\s+(?:of\s+)?\d*\.\d+|targets?\s+(?:accuracy\s+)?\d*\.\d+"
                      r"(?:\s+and\s+\d*\.\d+)?|[\d,]+\s+features")


def prose_numbers(text):
    """``(line, number)`` of each decimal or comma-grouped number of the page's text
    that is neither a role, an inline literal, a directive, a directive option, a
    literal block, a setting (``SETTINGS``) nor between ``.. unrecorded: <why>`` and
    ``.. end-unrecorded``. Unlike ``recorded.unmarked_numbers`` it reads table cells."""
    module = recorded()
    kept, unrecorded, literal = [], False, False
    for line in text.splitlines():
        if line.startswith(".. unrecorded:"):
            unrecorded = True
        elif line.startswith(".. end-unrecorded"):
            unrecorded = False
        if literal and line.strip() and not line.startswith(" "):
            literal = False
        skip = (unrecorded or literal or line.startswith("..")
                or re.match(r"\s+:[\w-]+: ", line))
        kept.append("" if skip else line)
        literal = literal or (line.rstrip().endswith("::") and not skip)
    prose = module._MARKUP.sub(lambda m: "\n" * m.group(0).count("\n"), "\n".join(kept))
    prose = SETTINGS.sub(lambda m: re.sub(r"\S", "x", m.group(0)), prose)
    return [(lineno, m.group(0)) for lineno, line in enumerate(prose.splitlines(), 1)
            for m in module._NUMBER.finditer(line)]


def test_choosing_page_quotes_benchmark_numbers_only_through_the_role():
    """A decimal (or 30,162-style) number on the choosing page is a measurement a reader
    will look up in RESULTS.md: it has to be a :benchmark: (or :recorded:) role, a
    setting, or inside a block marked ``.. unrecorded:`` with the reason."""
    text = (DOCS / "choosing.rst").read_text(encoding="utf-8")
    assert prose_numbers(text) == []
    assert len(BENCHMARK_ROLE.findall(text)) >= 90


def test_prose_numbers_are_found():
    text = ("Costs 0.61 at epsilon 0.1 and targets 0.80 and 0.82, :benchmark:`a/b|.2f`.\n"
            ".. list-table::\n   :widths: 30 0.5\n\n   * - 82.4 %\n     - ``0.3``\n"
            "Run::\n\n    fit(0.5)\n\n.. unrecorded: an example without record\n\n"
            "Took 5.8 s.\n\n.. end-unrecorded\n\nOn 30,162 rows with 104 features, 1.5x.\n")
    assert prose_numbers(text) == [(1, "0.61"), (5, "82.4"), (17, "30,162"), (17, "1.5")]


def _benchmark_value(module, spec):
    """A number as quoted: ``"target|format"``, or ``(statistic, [targets], format)``
    for a statistic over targets in different files."""
    if isinstance(spec, str):
        return module.resolve(spec)[0]
    statistic, targets, fmt = spec
    values = [module.value_of(target)[0] for target in targets]
    return format(module.STATISTICS[statistic](values), fmt)


AS_RUN = ["objective_perturbation_timing/as_run/*/ratio@{}",
          "output_perturbation_timing/timing/*/as_run/ratio@{}",
          "napp_timing/timing/*/as_run/ratio@{}"]
MATCHED = ["objective_perturbation_timing/matched_interleaved/*/ratio@max",
           "output_perturbation_timing/timing/*/matched/ratio_outputpert_linear@max",
           "napp_timing/timing/*/matched/ratio@max"]


def _curve(path, key="test_accuracy/mean"):
    return [f"{path}/epsilon={e}/{key}|.3f" for e in (0.1, 0.5, 1, 5)]


QUOTED_BENCHMARK_NUMBERS = [
    # (where, the quoted text with {} for each number, the numbers)
    ("README.md", "with defaults on both sides, {}x to {}x the time of the scikit-learn "
     "estimator on Adult and KDDCup99; on the same problem at each solver's own "
     "tolerance up to {}x",
     [("@min", [t.format("min") for t in AS_RUN], ".2f"),
      ("@max", [t.format("max") for t in AS_RUN], ".1f"), ("@max", MATCHED, ".1f")]),
    ("README.md", "| `ObjPertLogisticRegression`, pure, replace-one | {} | {} | {} | {} | {} |",
     _curve("objective_perturbation/results/adult/curves/skdp_pure_replace")
     + ["objective_perturbation/results/adult/non_private/test_accuracy|.3f"]),
    ("README.md", "| diffprivlib 0.6.6 `LogisticRegression`, same run | {} | {} | {} | {} | |",
     _curve("objective_perturbation/results/adult/curves/diffprivlib")),
    ("README.md", "(DP-SGD, rate 0.1, 10 epochs), delta 1e-5 | {} | {} | {} | {} | |",
     _curve("dpsgd/accuracy/adult/methods/skdp_dpsgd_default")),
    ("README.md", "(`sample_rate=0.033`, PLD), delta 1e-5 | {} | {} | {} | {} | |",
     _curve("dpsgd/accuracy/adult/methods/skdp_dpsgd_recipe")),
    ("README.md", "| `OutputPertSVM`, linear, C=0.01, pure | {} | {} | {} | {} | {} (hinge, same C) |",
     [f"output_perturbation/results/adult/kernels/linear/accuracy/{e}/mean|.3f"
      for e in ("0.1", "0.5", "1.0", "5.0")]
     + ["output_perturbation/results/adult/kernels/linear/nonprivate_exact_hinge_accuracy|.3f"]),
    ("EpsilonForUtility", "(target 0.80, cap 1: 5.8 against {} times the oracle epsilon {})",
     ["private_selection/datasets/adult/DP-GD*/targets/0.8/methods/private/median_ratio|.1f",
      "private_selection/datasets/adult/DP-GD*/targets/0.8/oracle_epsilon|.2g"]),
]


@pytest.mark.parametrize("where, template, numbers", QUOTED_BENCHMARK_NUMBERS,
                         ids=[f"{w}-{i}" for i, (w, _, _) in
                              enumerate(QUOTED_BENCHMARK_NUMBERS)])
def test_readme_and_docstrings_quote_the_benchmarks(where, template, numbers):
    """The benchmark numbers that README.md and docstrings quote (outside Sphinx's
    reach) are those of the committed results."""
    module = benchmark()
    if where == "README.md":
        text = (DOCS.parent / "README.md").read_text(encoding="utf-8")
    else:
        text = getattr(skdp, where).__doc__
    expected = template.format(*(_benchmark_value(module, spec) for spec in numbers))
    assert expected in " ".join(text.split()), f"{where} should quote: {expected}"
