"""The one gate of the composers, attacked as the review attacked it.

Each attack is a function of a composer (something that runs fits on private rows and
states one guarantee): it returns ``None`` when the composer resists and a description
of the violation otherwise. Every composer of the library runs through every attack that
applies to it, and a planted composer that fits without the gate must be caught.
"""

import contextlib
import functools
import io
import inspect
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.compose import ColumnTransformer, make_column_selector
from sklearn.datasets import make_classification
from sklearn.impute import SimpleImputer
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler, scale

from skdp import (DataNormWarning, DPSGDClassifier, EpsilonForUtility,
                  ObjPertLogisticRegression, PrivacyLedger, PrivateGridSearchCV,
                  PrivateRandomizedSearchCV)
from skdp.accounting._rdp import ORDERS, dpsgd_rdp
from skdp.model_selection import _private_search, privacy_cost_of_search

X, y = make_classification(n_samples=400, n_features=4, random_state=0)
X /= np.linalg.norm(X, axis=1).max()
GROUPS = np.arange(len(y)) // 2


_FORBIDDEN = False


def _forbid_fits(monkeypatch):
    """Any fit of a private estimator or of a data-learning step fails the attack."""
    def guarded(cls):
        original = cls.fit

        @functools.wraps(original)
        def fit(self, *args, **kwargs):
            if _FORBIDDEN:
                raise AssertionError("a fit ran before the refusal")
            return original(self, *args, **kwargs)
        return fit

    for cls in (ObjPertLogisticRegression, DPSGDClassifier, SimpleImputer, StandardScaler,
                FunctionTransformer):
        monkeypatch.setattr(cls, "fit", guarded(cls))
    monkeypatch.setattr(f"{__name__}._FORBIDDEN", True)


@contextlib.contextmanager
def _fits_allowed():
    global _FORBIDDEN
    before, _FORBIDDEN = _FORBIDDEN, False
    try:
        yield
    finally:
        _FORBIDDEN = before


# -- the composers, one calling convention: compose(estimator, space, X, y, **fit) -------

def _selection(estimator, space, X, y, **fit):
    return EpsilonForUtility(estimator, target_utility=0.6, epsilon_max=2.0,
                             random_state=0).fit(X, y, **fit)


def _search_delta(estimator):
    """A search's delta: 0 for pure candidates, else one for Renyi accounting."""
    final = estimator.steps[-1][1] if isinstance(estimator, Pipeline) else estimator
    return 1e-5 if final.get_params().get("delta", 0.0) else 0.0


def _grid(estimator, space, X, y, **fit):
    return PrivateGridSearchCV(estimator, space, epsilon=2.0, delta=_search_delta(estimator),
                               mean_trials=3, random_state=0).fit(X, y, **fit)


def _randomized(estimator, space, X, y, **fit):
    return PrivateRandomizedSearchCV(estimator, space, epsilon=2.0,
                                     delta=_search_delta(estimator), n_iter=3,
                                     random_state=0).fit(X, y, **fit)


def _ledger(estimator, space, X, y, **fit):
    return PrivacyLedger(epsilon=10.0).fit(estimator, X, y, **fit)


def _cost_report(estimator, space, X, y, **fit):
    """privacy_cost_of_search reports on a search already run (exactly, outside any
    guarantee): it must refuse to certify what the gate refuses."""
    search = GridSearchCV(estimator, space or {}, cv=2, error_score="raise")
    with _fits_allowed():
        search.fit(X, y)
    return privacy_cost_of_search(search)


def _bypass(estimator, space, X, y, **fit):
    """A planted composer that forgets the gate: it fits the estimator as given."""
    model = clone(estimator).set_params(**{k: v[0] for k, v in (space or {}).items()})
    return model.fit(X, y, **fit)


FITTING = {"EpsilonForUtility": _selection, "PrivateGridSearchCV": _grid,
           "PrivateRandomizedSearchCV": _randomized, "PrivacyLedger": _ledger}
ALL = {**FITTING, "privacy_cost_of_search": _cost_report}


def _refused_before_any_fit(compose, monkeypatch, estimator, space=None, match="", **fit):
    """``None`` when ``compose`` refuses with a ValueError matching ``match`` before any
    fit of the private rows ran; else what happened."""
    import re

    _forbid_fits(monkeypatch)
    try:
        compose(estimator, space or {}, X, y, **fit)
    except ValueError as error:
        return None if re.search(match, str(error)) else f"another refusal: {error}"
    except AssertionError as error:
        return str(error)
    return "accepted"


def _clf(**params):
    return ObjPertLogisticRegression(epsilon=0.5, data_norm=1.0, **params)


# -- finding 2: a search key turns a public step into a fitted one -----------------------

def _imputer_pipeline():
    return Pipeline([("imp", SimpleImputer(strategy="constant", keep_empty_features=True)),
                     ("clf", _clf())])


@pytest.mark.parametrize("name", ["PrivateGridSearchCV", "PrivateRandomizedSearchCV",
                                  "privacy_cost_of_search"])
@pytest.mark.parametrize("pipeline, space", [
    (_imputer_pipeline, {"imp__strategy": ["mean"]}),
    (lambda: Pipeline([("f", FunctionTransformer(np.log1p)), ("clf", _clf())]),
     {"f__func": [scale]}),
], ids=["imputer-mean", "function-scale"])
def test_a_candidate_cannot_turn_a_public_step_into_a_fitted_one(name, pipeline, space,
                                                                   monkeypatch):
    assert _refused_before_any_fit(ALL[name], monkeypatch, pipeline(), space,
                                   match="would be fitted on the private rows") is None


def test_the_released_imputer_keeps_its_declared_constant():
    search = PrivateGridSearchCV(_imputer_pipeline(), {"clf__C": [0.1, 1.0]},
                                 random_state=0).fit(X, y)
    imputer = search.best_estimator_.named_steps["imp"]
    assert imputer.strategy == "constant" and np.all(imputer.statistics_ == 0)


# -- finding 3: one descent rule (a Pipeline subclass is refused everywhere) -------------

class _MyPipeline(Pipeline):
    pass


@pytest.mark.parametrize("name", sorted(ALL))
def test_a_pipeline_subclass_is_refused_by_every_composer(name, monkeypatch):
    estimator = _MyPipeline([("scale", StandardScaler()), ("clf", _clf())])
    assert _refused_before_any_fit(ALL[name], monkeypatch, estimator,
                                   match="subclass of Pipeline") is None


@pytest.mark.parametrize("name", sorted(ALL))
def test_a_data_fitted_step_is_refused_by_every_composer(name, monkeypatch):
    estimator = Pipeline([("scale", StandardScaler()), ("clf", _clf())])
    assert _refused_before_any_fit(ALL[name], monkeypatch, estimator,
                                   match="StandardScaler") is None


# -- finding 4: replace-one fits are never stated as add/remove --------------------------

@pytest.mark.parametrize("name", sorted(ALL))
def test_replace_one_fits_are_refused_by_every_composer(name, monkeypatch):
    assert _refused_before_any_fit(ALL[name], monkeypatch, _clf(neighboring="replace"),
                                   match="neighboring='replace'") is None


@pytest.mark.parametrize("name", sorted(FITTING))
def test_replace_person_fits_are_refused_by_every_composer(name, monkeypatch):
    estimator = _clf(neighboring="replace")
    assert _refused_before_any_fit(FITTING[name], monkeypatch, estimator,
                                   match="neighboring='replace'", groups=GROUPS) is None


def test_the_replace_distinguisher_no_longer_runs():
    """Under replace the fit warns from the public row count (its noise floor): a
    perfect distinguisher of n and n + 1 rows. No composer runs such a fit now; the
    estimator alone still may, stating replace."""
    model = _clf(neighboring="replace").fit(X[:8], y[:8])
    assert model.neighboring_ == "replace"
    with pytest.raises(ValueError, match="neighboring='replace'"):
        PrivacyLedger(epsilon=5.0).fit(_clf(neighboring="replace"), X[:8], y[:8])


# -- finding 6: columns by declared names, never by inferred dtype -----------------------

def _frame():
    return pd.DataFrame(X, columns=["a", "b", "c", "d"])


@pytest.mark.parametrize("name", sorted(ALL))
def test_a_dtype_column_selector_is_refused_by_every_composer(name, monkeypatch):
    estimator = Pipeline([("cols", ColumnTransformer([
        ("num", "passthrough", make_column_selector(dtype_include=np.number))],
        sparse_threshold=0)), ("clf", _clf())])
    _forbid_fits(monkeypatch)
    with pytest.raises(ValueError, match="dtype_include"):
        ALL[name](estimator, {}, _frame(), y)


def test_a_name_pattern_selector_is_accepted():
    estimator = Pipeline([("cols", ColumnTransformer([
        ("num", "passthrough", make_column_selector(pattern="^[ab]$"))],
        sparse_threshold=0)), ("clf", _clf())])
    model = PrivacyLedger(epsilon=1.0).fit(estimator, _frame(), y)
    assert model.named_steps["clf"].coef_.shape == (1, 2)


# -- finding 1: secret trials are silent; only the released one speaks ------------------

def _run_capturing(compose, estimator, space):
    out = io.StringIO()
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(out), \
            contextlib.redirect_stderr(out):
        warnings.simplefilter("always")
        result = compose(estimator, space, X, y)
    return result, out.getvalue(), [w for w in caught if issubclass(w.category,
                                                                     DataNormWarning)]


def _n_fits(result):
    return getattr(result, "n_fits_", None)


@pytest.mark.parametrize("name", ["EpsilonForUtility", "PrivateGridSearchCV",
                                  "PrivateRandomizedSearchCV"])
def test_secret_fits_print_and_warn_nothing(name):
    """A DP-SGD candidate with verbose=1 and the default data_norm (a warning per fit):
    the composer prints nothing of its trials and warns at most once (the released
    fit's warning), whatever the number of secret fits."""
    estimator = DPSGDClassifier(epsilon=1.0, epochs=2, verbose=1, data_norm="warn")
    space = {"epochs": [1, 2]}
    result, printed, data_norm_warnings = _run_capturing(FITTING[name], estimator, space)
    assert printed == ""
    assert len(data_norm_warnings) <= 1
    released = getattr(result, "best_estimator_", None)
    if released is not None:
        assert released.verbose == 1  # the user's parameter comes back unchanged
        assert len(data_norm_warnings) == 1
    else:
        assert not data_norm_warnings


def test_the_planted_composer_prints_its_trials():
    estimator = DPSGDClassifier(epsilon=1.0, epochs=2, verbose=1)
    _, printed, _ = _run_capturing(_bypass, estimator, {"epochs": [1]})
    assert printed  # the attack works on a composer that skips the gate


def test_a_selection_with_several_rungs_warns_once():
    estimator = DPSGDClassifier(epochs=2, data_norm="warn")
    search, printed, caught = _run_capturing(
        lambda e, s, X, y: EpsilonForUtility(e, target_utility=0.85, epsilon_max=8.0,
                                             epsilon_start=0.01, random_state=1).fit(X, y),
        estimator, {})
    assert search.n_fits_ >= 2
    assert len(caught) == hasattr(search, "best_estimator_")


# -- finding 5: the Renyi ledger charges a fit's whole curve -----------------------------

def _fitted_dpsgd_curve(model):
    """A fitted DP-SGD's count and steps, recomputed from its fitted mechanism."""
    return dpsgd_rdp(model.noise_multiplier_, model.sample_rate_, model.n_steps_,
                     model.count_noise_std_)


def test_renyi_ledger_charges_dpsgd_with_a_private_bound_its_whole_curve():
    ledger = PrivacyLedger(9.92, 1e-5, composition="renyi")
    index = int(np.flatnonzero(ORDERS == ledger.order)[0])
    model = ledger.fit(DPSGDClassifier(epsilon=0.5, epochs=1, data_norm="private"), X, y)
    share = model.data_norm_epsilon_  # pure: min(e, alpha e^2 / 2) (Bun & Steinke 2016)
    curve = _fitted_dpsgd_curve(model) + np.minimum(share, ORDERS * share**2 / 2)
    assert model.data_norm_epsilon_ > 0
    assert ledger.entries[-1]["rdp"] == pytest.approx(curve[index], rel=1e-9)


def test_renyi_ledger_charge_equals_the_fitted_curve_without_a_private_bound():
    ledger = PrivacyLedger(9.92, 1e-5, composition="renyi")
    index = int(np.flatnonzero(ORDERS == ledger.order)[0])
    model = ledger.fit(DPSGDClassifier(epsilon=0.5, epochs=1, data_norm=1.0), X, y)
    assert ledger.entries[-1]["rdp"] == pytest.approx(_fitted_dpsgd_curve(model)[index], rel=1e-9)


# -- finding 7: scoring of the wrong shape, refused on public input ----------------------

@pytest.mark.parametrize("name", ["PrivateGridSearchCV", "PrivateRandomizedSearchCV"])
@pytest.mark.parametrize("scoring", [
    lambda model, X, y: model.score(X, y),                                  # a scalar
    lambda model, X, y: np.c_[model.predict(X) == y, model.predict(X) == y],  # 2 columns
], ids=["scalar", "two-columns"])
def test_scoring_of_the_wrong_shape_is_refused_before_any_noise(name, scoring, monkeypatch):
    search_class = {"PrivateGridSearchCV": PrivateGridSearchCV,
                    "PrivateRandomizedSearchCV": PrivateRandomizedSearchCV}[name]
    space = {"C": [0.1, 1.0]}
    search = (search_class(_clf(), space, scoring=scoring, random_state=0) if
              name == "PrivateGridSearchCV" else
              search_class(_clf(), space, n_iter=3, scoring=scoring, random_state=0))
    _forbid_fits(monkeypatch)
    # the number of trials is the search's first draw of its secret stream
    monkeypatch.setattr(_private_search, "draw_runs", lambda *a: pytest.fail("noise drawn"))
    with pytest.raises(ValueError, match="per-row utility") as error:
        search.fit(X, y)
    for count in {str(len(y)), str(int(0.8 * len(y))), str(int(0.2 * len(y)))}:
        assert count not in str(error.value)


# -- finding 8: routing, and groups checked, before any charge ---------------------------

def test_the_ledger_routes_groups_to_a_pipelines_private_step():
    ledger = PrivacyLedger(epsilon=2.0)
    pipeline = Pipeline([("f", FunctionTransformer(np.abs)), ("clf", _clf())])
    ledger.fit(pipeline, X, y, groups=GROUPS)
    assert ledger.unit == "person" and ledger.spent == (0.5, 0.0)
    assert pipeline.named_steps["clf"].neighboring_ == "add_remove_person"


@pytest.mark.parametrize("fit_params, match", [
    ({"nosuchstep__groups": GROUPS}, "names no step"),
    ({"clf__weights": np.ones(len(y))}, "takes no 'weights'"),
    ({"groups": np.c_[GROUPS, GROUPS]}, "1-D"),
    ({"groups": np.array([1, "a"] * (len(y) // 2), dtype=object)}, "one type"),
    ({"groups": GROUPS[:-1]}, "another number of labels"),
], ids=["step", "param", "2-D", "mixed", "length"])
def test_the_ledger_refuses_bad_fit_parameters_before_any_charge(fit_params, match,
                                                                  monkeypatch):
    ledger = PrivacyLedger(epsilon=2.0)
    pipeline = Pipeline([("f", FunctionTransformer(np.abs)), ("clf", _clf())])
    _forbid_fits(monkeypatch)
    with pytest.raises(ValueError, match=match) as error:
        ledger.fit(pipeline, X, y, **fit_params)
    assert ledger.entries == [] and ledger.spent == (0.0, 0.0)
    assert str(len(y)) not in str(error.value) and str(len(y) - 1) not in str(error.value)


# -- the gate is the only door -----------------------------------------------------------

@pytest.mark.parametrize("attack", [
    lambda compose, mp: _refused_before_any_fit(compose, mp, _clf(neighboring="replace"),
                                                match="neighboring='replace'"),
    lambda compose, mp: _refused_before_any_fit(
        compose, mp, _MyPipeline([("s", StandardScaler()), ("clf", _clf())]),
        match="subclass of Pipeline"),
    lambda compose, mp: _refused_before_any_fit(compose, mp, _imputer_pipeline(),
                                                {"imp__strategy": ["mean"]},
                                                match="would be fitted on the private rows"),
], ids=["replace", "subclass", "imputer-mean"])
def test_a_planted_composer_that_skips_the_gate_is_caught(attack, monkeypatch):
    assert attack(_bypass, monkeypatch) is not None


def test_every_composer_of_the_library_fits_only_through_the_gate():
    """No composer module calls ``.fit(`` on a candidate of its own: their trials go
    through the gate's ``SecretTrials`` (whose fits are ``secret_fit``), a noise path's
    releases through ``secret``, the ledger's one released fit after the gate's checks."""
    from skdp.model_selection import _gate, _private_search, _selection_rungs

    for module in (_private_search, _selection_rungs):
        source = inspect.getsource(module)
        assert "model.fit(" not in source and "SecretTrials(" in source
    assert "secret_fit(" in inspect.getsource(_gate.SecretTrials.fit)


def test_no_import_cycle_between_accounting_and_model_selection():
    import ast
    import pathlib

    import skdp

    root = pathlib.Path(skdp.__file__).parent
    for path in (root / "accounting").glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                assert "model_selection" not in node.module, path.name
                assert "linear_model" not in node.module, path.name


def test_a_gaussian_ssp_fit_declares_its_gdp_curve_to_the_renyi_ledger():
    """SSP's three Gaussian releases are one mu-GDP mechanism: at order alpha its
    Renyi divergence is alpha mu^2 / 2, which is what the ledger charges."""
    from skdp import SSPLinearRegression
    from skdp.accounting import gdp_mu

    ledger = PrivacyLedger(4.0, 1e-5, composition="renyi")
    ledger.fit(SSPLinearRegression(epsilon=0.5, delta=1e-6, y_bound=1.0), X, y.astype(float))
    mu = gdp_mu(0.5, 1e-6)
    assert ledger.entries[-1]["rdp"] == pytest.approx(ledger.order * mu**2 / 2, rel=1e-12)
