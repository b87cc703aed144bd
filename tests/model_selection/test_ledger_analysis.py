"""The ledger as the analysis: scores, a Table 1 and a cross-validation, each charged
before any noise and refused past the budget."""

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import make_classification

import skdp.stats._release as release_module
from skdp import ObjPertLogisticRegression, PrivacyBudgetError, PrivacyLedger

X, y = make_classification(n_samples=400, n_features=4, random_state=0)
X /= np.linalg.norm(X, axis=1).max()


def _forbid_noise(monkeypatch):
    def refuse(random_state):
        raise AssertionError("noise was drawn past the budget")

    monkeypatch.setattr(release_module, "noise_generator", refuse)


def test_score_is_charged_and_refused_past_the_budget_before_any_noise(monkeypatch):
    ledger = PrivacyLedger(1.0)
    model = ledger.fit(ObjPertLogisticRegression(epsilon=0.5, data_norm=1.0), X, y)
    auc = ledger.score(model, X, y, scoring="roc_auc", epsilon=0.3)
    assert 0.0 <= float(auc) <= 1.0
    assert ledger.spent == (pytest.approx(0.8), 0.0)
    assert ledger.entries[-1]["noise_std"] == auc.noise_std
    _forbid_noise(monkeypatch)
    with pytest.raises(PrivacyBudgetError):
        ledger.score(model, X, y, scoring="accuracy", epsilon=0.21)
    assert len(ledger.entries) == 2
    with pytest.raises(ValueError, match="scoring must be one of"):
        ledger.score(model, X, y, scoring="f1", epsilon=0.1)
    with pytest.raises(ValueError, match="finite"):
        ledger.score(model, X, y, scoring="accuracy", epsilon=np.inf)


def test_a_score_keeps_the_ledgers_unit():
    ledger = PrivacyLedger(2.0)
    groups = np.arange(400) // 4
    model = ledger.fit(ObjPertLogisticRegression(epsilon=0.5, data_norm=1.0), X, y,
                       groups=groups)
    with pytest.raises(ValueError, match="unit of privacy"):
        ledger.score(model, X, y, scoring="accuracy", epsilon=0.1)
    ledger.score(model, X, y, scoring="accuracy", epsilon=0.1, groups=groups)
    assert ledger.report()["unit"] == "person"


def test_describe_is_charged_its_whole_budget():
    schema = {"label": {"name": "y", "classes": ["0", "1"]},
              "columns": {"x0": {"bounds": [-1, 1]}}}
    frame = pd.DataFrame({"x0": X[:, 0], "y": y.astype(str)})
    ledger = PrivacyLedger(1.0)
    table = ledger.describe(frame, schema, epsilon=0.6)
    assert ledger.spent == (pytest.approx(0.6), 0.0)
    assert set(ledger.entries[0]["noise_std"]) == set(table.index)
    with pytest.raises(PrivacyBudgetError):
        ledger.describe(frame, schema, epsilon=0.5)


def test_cross_validate_charges_every_fold_fit_and_one_score(monkeypatch):
    ledger = PrivacyLedger(2.0)
    estimator = ObjPertLogisticRegression(epsilon=0.3, data_norm=1.0)
    result = ledger.cross_validate(estimator, X, y, cv=4, scoring="accuracy", epsilon=0.2,
                                   cv_random_state=0)
    assert result["epsilon"] == pytest.approx(3 * 0.3 + 0.2)
    assert ledger.spent[0] == pytest.approx(1.1)
    assert len(result["test_score"]) == 4
    assert all(0.0 <= float(s) <= 1.0 for s in result["test_score"])

    def forbid(self, *args, **kwargs):
        raise AssertionError("a fold was fitted past the budget")

    monkeypatch.setattr(ObjPertLogisticRegression, "fit", forbid)
    with pytest.raises(PrivacyBudgetError):
        ledger.cross_validate(estimator, X, y, cv=4, scoring="accuracy", epsilon=0.2)


def test_cross_validate_refuses_one_seed_for_every_fold():
    ledger = PrivacyLedger(5.0)
    with pytest.raises(ValueError, match="same noise"):
        ledger.cross_validate(ObjPertLogisticRegression(epsilon=0.3, data_norm=1.0,
                                                        random_state=0),
                              X, y, cv=3, scoring="accuracy", epsilon=0.2)
    assert ledger.entries == []
