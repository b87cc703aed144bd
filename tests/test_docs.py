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
import skdp.base
import skdp.datasets
import skdp.model_selection
import skdp.preprocessing
import skdp.research

DOCS = Path(__file__).resolve().parents[1] / "docs"
PUBLIC_MODULES = [skdp, skdp.audit, skdp.model_selection, skdp.accounting, skdp.datasets,
                  skdp.base, skdp.research, skdp.preprocessing]


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

def recorded():
    """docs/_ext/recorded.py, imported by path (docs/ is not a package)."""
    spec = importlib.util.spec_from_file_location("skdp_docs_recorded",
                                                  DOCS / "_ext" / "recorded.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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
