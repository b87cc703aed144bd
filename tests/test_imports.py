"""Imports point down: the graph of skdp's subpackages has no cycle.

Every import is read from the source, the ones inside functions included (a lazy
import still ties two packages together), and resolved to the top-level unit of skdp
it reaches (``accounting``, ``model_selection``, ``base``, ...).
"""

import ast
import pathlib
from collections import defaultdict

import skdp

ROOT = pathlib.Path(skdp.__file__).parent


def _package(path):
    """The dotted package a module's relative imports start from."""
    parts = ["skdp", *path.relative_to(ROOT).with_suffix("").parts]
    return parts if path.name == "__init__.py" else parts[:-1]


def _unit(dotted):
    """The top-level unit of skdp a dotted module name belongs to, or None."""
    parts = dotted.split(".")
    return parts[1] if parts[0] == "skdp" and len(parts) > 1 else None


def _is_module(package, name):
    folder = ROOT.joinpath(*package[1:])
    return (folder / f"{name}.py").exists() or (folder / name).is_dir()


def _imported_units(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = _package(path)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                dotted = ".".join(base + ([node.module] if node.module else []))
                if not node.module:  # "from . import x": a module x, or a name of base
                    yield from (_unit(f"{dotted}.{alias.name}") if _is_module(base, alias.name)
                                else _unit(dotted) or "__init__" for alias in node.names)
                    continue
            else:
                dotted = node.module or ""
            yield _unit(dotted)
        elif isinstance(node, ast.Import):
            yield from (_unit(alias.name) for alias in node.names)


def _graph():
    edges = defaultdict(set)
    for path in ROOT.rglob("*.py"):
        source = _unit(".".join(["skdp", *path.relative_to(ROOT).with_suffix("").parts]))
        for target in _imported_units(path):
            if target is not None and source not in (None, "__init__") and target != source:
                edges[source].add(target)
    return edges


def _cycle(edges):
    """One cycle of the graph as a list of units, or None."""
    state = {}

    def visit(node, stack):
        state[node] = "open"
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt, stack + [nxt])):
                return found
        state[node] = "done"
        return None

    for node in sorted(edges):
        if node not in state and (found := visit(node, [node])):
            return found
    return None


def test_no_import_cycle_between_skdps_units():
    assert _cycle(_graph()) is None


def test_the_accounting_core_imports_nothing_above_it():
    assert _graph()["accounting"] <= {"exceptions", "utils"}


def test_the_cycle_finder_finds_a_planted_cycle():
    planted = {"accounting": {"model_selection"}, "model_selection": {"accounting"}}
    assert _cycle(planted) == ["accounting", "model_selection", "accounting"]


def _estimator_names():
    from sklearn.base import BaseEstimator

    return {name for name in skdp.__all__
            if isinstance(getattr(skdp, name), type)
            and issubclass(getattr(skdp, name), BaseEstimator)}


def _code_names(path, skip_functions=()):
    """The names a module's code refers to (docstrings, strings and comments aside),
    outside the functions named in ``skip_functions``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name in skip_functions:
            skipped |= {id(child) for child in ast.walk(node)}
    names = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.alias):
            names.add(node.asname or node.name.split(".")[-1])
    return names


def test_composers_and_accounts_never_name_an_estimator_class():
    """The composers (model_selection) and the accounts (accounting) read what a fit
    costs from the estimators' declarations, never from their classes: no code there
    names an skdp estimator, except the default estimator of the selections."""
    estimators = _estimator_names() - {"AnalyticEpsilonForUtility", "EpsilonForUtility",
                                       "PrivacyLedger", "PrivateGridSearchCV",
                                       "PrivateRandomizedSearchCV"}
    assert {"DPSGDClassifier", "ObjPertLogisticRegression", "OutputPertSVM"} <= estimators
    offenders = {}
    for folder in ("model_selection", "accounting"):
        for path in sorted((ROOT / folder).glob("*.py")):
            named = _code_names(path, skip_functions={"default_estimator"}) & estimators
            if named:
                offenders[path.name] = sorted(named)
    assert not offenders, offenders


def test_the_class_name_check_catches_a_planted_switch(tmp_path):
    planted = tmp_path / "composer.py"
    planted.write_text("def cost(final):\n"
                       "    from ..linear_model import DPSGDClassifier\n"
                       "    return type(final) is DPSGDClassifier\n", encoding="utf-8")
    assert "DPSGDClassifier" in _code_names(planted) & _estimator_names()
