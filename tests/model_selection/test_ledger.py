"""One budget for an analysis: the ledger refuses, before any noise, what would cross it."""

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.model_selection import GridSearchCV

from skdp import (AnalyticEpsilonForUtility, DPSGDClassifier, EpsilonForUtility,
                  ObjPertLogisticRegression, OutputPertSVM, PrivacyBudgetError, PrivacyLedger,
                  PrivateGridSearchCV)
from skdp.accounting._rdp import ORDERS
from skdp.accounting._costs import DPSGDRungCost
from skdp.accounting._filters import rdp_budget

X, y = make_classification(n_samples=400, n_features=4, random_state=0)


def _forbid_fit(monkeypatch, cls):
    def fit(self, *args, **kwargs):
        raise AssertionError("the ledger let a fit run past its budget")

    monkeypatch.setattr(cls, "fit", fit)


def test_basic_ledger_sums_and_refuses_before_any_noise(monkeypatch):
    ledger = PrivacyLedger(1.0, 1e-5)
    ledger.fit(ObjPertLogisticRegression(epsilon=0.4), X, y)
    ledger.fit(OutputPertSVM(epsilon=0.3, delta=1e-6), X, y)
    assert ledger.spent == (pytest.approx(0.7), pytest.approx(1e-6))
    _forbid_fit(monkeypatch, ObjPertLogisticRegression)
    with pytest.raises(PrivacyBudgetError, match="Nothing was fitted"):
        ledger.fit(ObjPertLogisticRegression(epsilon=0.31), X, y)
    with pytest.raises(PrivacyBudgetError):  # delta too
        ledger.fit(ObjPertLogisticRegression(epsilon=0.1, delta=2e-5), X, y)
    assert len(ledger.entries) == 2  # the refused fits were not charged
    monkeypatch.undo()
    ledger.fit(ObjPertLogisticRegression(epsilon=0.3), X, y)  # exactly what is left
    assert ledger.remaining[0] == pytest.approx(0.0, abs=1e-12)


def test_ledger_charges_the_a_priori_cap_of_a_selection_and_records_its_ex_post():
    ledger = PrivacyLedger(3.0)
    selection = EpsilonForUtility(ObjPertLogisticRegression(), target_utility=0.6,
                                  epsilon_max=2.0, epsilon_start=0.05)
    entry_count = len(ledger.entries)
    ledger.fit(selection, X, y)
    entry = ledger.entries[entry_count]
    assert entry["a_priori"] == (2.0, 0.0)
    assert entry["realised"][0] == pytest.approx(selection.privacy_report_["ex_post"]["epsilon"])
    assert entry["realised"][0] <= 2.0
    # the cap of a second selection is charged whole, whatever it will spend
    with pytest.raises(PrivacyBudgetError):
        ledger.fit(EpsilonForUtility(ObjPertLogisticRegression(), target_utility=0.6,
                                     epsilon_max=3.0 - entry["realised"][0] + 0.01), X, y)


def test_ledger_charges_a_private_search_its_whole_budget():
    ledger = PrivacyLedger(1.5)
    search = PrivateGridSearchCV(ObjPertLogisticRegression(), {"C": [0.1, 1.0]}, epsilon=1.0)
    ledger.fit(search, X, y)
    assert ledger.spent[0] == pytest.approx(1.0)
    with pytest.raises(PrivacyBudgetError):
        ledger.fit(PrivateGridSearchCV(ObjPertLogisticRegression(), {"C": [1.0]},
                                       epsilon=0.6), X, y)


def test_ledger_refuses_what_it_cannot_account_for(monkeypatch):
    ledger = PrivacyLedger(10.0)
    _forbid_fit(monkeypatch, GridSearchCV)
    with pytest.raises(ValueError, match="PrivateGridSearchCV"):
        ledger.fit(GridSearchCV(ObjPertLogisticRegression(), {"C": [1.0]}), X, y)
    with pytest.raises(ValueError, match="analytic"):
        ledger.fit(AnalyticEpsilonForUtility(ObjPertLogisticRegression()), X, y)
    # shared noise: a seed used twice, or a generator
    ledger.fit(ObjPertLogisticRegression(epsilon=0.1, random_state=3), X, y)
    with pytest.raises(ValueError, match="share"):
        ledger.fit(ObjPertLogisticRegression(epsilon=0.1, random_state=3), X, y)
    with pytest.raises(ValueError, match="Generator"):
        ledger.fit(ObjPertLogisticRegression(epsilon=0.1,
                                             random_state=np.random.default_rng(0)), X, y)


def test_charge_and_report():
    ledger = PrivacyLedger(1.0)
    ledger.charge(0.25, what="a noisy count")
    with pytest.raises(PrivacyBudgetError):
        ledger.charge(0.8)
    report = ledger.report()
    assert report["spent"] == {"epsilon": 0.25, "delta": 0.0}
    assert "0.25-differentially private" in report["statement"]
    assert report["statement"].startswith("The 1 release of this analysis is 0.25-")
    assert "could have taken it past" in report["statement"]
    ledger.charge(0.5, what="a noisy mean")
    assert ledger.report()["statement"].startswith(
        "The 2 releases of this analysis, each chosen in view of the earlier ones, are "
        "together 0.75-")
    assert "could have taken them past" in ledger.report()["statement"]


def test_renyi_ledger_admits_exactly_what_its_filter_allows(monkeypatch):
    """DP-SGD fits at epsilon 1 each: the Renyi filter at its order admits floor(B /
    rho(alpha)) of them (independent computation), several more than the basic sum's
    three within (3, 1e-5)."""
    ledger = PrivacyLedger(3.0, 1e-5, composition="renyi")
    index = int(np.argmin(np.abs(ORDERS - ledger.order)))
    estimator = DPSGDClassifier(epsilon=1.0, epochs=1)
    rho = DPSGDRungCost.from_params(estimator.get_params()).rdp(1.0)[index]
    budget = rdp_budget(3.0, ledger.order, 1e-5)
    expected = int(np.floor(budget / rho * (1 + 1e-9)))
    assert expected > 3
    for _ in range(expected):
        ledger.fit(DPSGDClassifier(epsilon=1.0, epochs=1), X, y)
    _forbid_fit(monkeypatch, DPSGDClassifier)
    with pytest.raises(PrivacyBudgetError, match="Renyi"):
        ledger.fit(DPSGDClassifier(epsilon=1.0, epochs=1), X, y)
    assert ledger.spent[0] <= 3.0
    with pytest.raises(ValueError, match="no Renyi curve"):  # multinomial: no curve here
        ledger.fit(ObjPertLogisticRegression(epsilon=0.01, delta=1e-7,
                                             multi_class="multinomial", classes=[0, 1, 2]),
                   X, y)


def test_renyi_ledger_charges_a_private_search_its_whole_curve():
    ledger = PrivacyLedger(4.0, 1e-5, composition="renyi")
    index = int(np.argmin(np.abs(ORDERS - ledger.order)))
    search = PrivateGridSearchCV(DPSGDClassifier(epochs=1), {"learning_rate": [0.1, 1.0]},
                                 epsilon=1.0, delta=1e-5)
    ledger.fit(search, X, y)
    assert ledger.entries[0]["rdp"] == pytest.approx(search.plan().total_rdp[index])
    with pytest.raises(ValueError, match="pure-DP search"):
        ledger.fit(PrivateGridSearchCV(ObjPertLogisticRegression(), {"C": [1.0]}), X, y)


def test_renyi_ledger_order_must_be_one_the_curves_are_known_at():
    """Fits' Renyi curves are computed at ORDERS: a filter at another order would
    charge them at a neighbouring order, which bounds nothing at its own."""
    assert PrivacyLedger(3.0, 1e-5, composition="renyi", order=12.0).order == 12.0
    with pytest.raises(ValueError, match="ORDERS"):
        PrivacyLedger(3.0, 1e-5, composition="renyi", order=100.0)


def test_one_unit_of_privacy_per_ledger():
    """A fit with groups protects one person, one without one row; the ledger refuses
    to sum the two, before any charge or noise, and its statement names its unit."""
    persons = np.arange(len(y)) // 4
    ledger = PrivacyLedger(epsilon=2.0)
    ledger.fit(OutputPertSVM(epsilon=0.5, data_norm=1.0), X, y, groups=persons)
    assert ledger.unit == "person"
    assert "one person (all of their rows)" in ledger.report()["statement"]
    with pytest.raises(ValueError, match="unit of privacy is one row"):
        ledger.fit(OutputPertSVM(epsilon=0.5, data_norm=1.0), X, y)
    assert ledger.spent == (0.5, 0.0) and len(ledger.entries) == 1
    ledger.fit(OutputPertSVM(epsilon=0.5, data_norm=1.0), X, y, groups=persons)
    assert ledger.spent == (1.0, 0.0)
    rows = PrivacyLedger(epsilon=2.0)
    rows.fit(OutputPertSVM(epsilon=0.5, data_norm=1.0), X, y)
    assert rows.unit == "row" and "adding or removing one row" in rows.report()["statement"]
    with pytest.raises(ValueError, match="unit of privacy is one person"):
        rows.fit(OutputPertSVM(epsilon=0.5, data_norm=1.0), X, y, groups=persons)
