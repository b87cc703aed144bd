"""The documentation builds without warnings and covers the public API."""

import doctest
import importlib
import inspect
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
