"""Gaussian objective perturbation in Renyi accounting: the fit's curve by hand, the
odometer's report by hand, the searches, and the refusals."""

import numpy as np
import pytest
from scipy import stats
from sklearn.datasets import make_classification

from skdp import ObjPertLogisticRegression
from skdp.accounting._rdp import ORDERS
from skdp.model_selection import (EpsilonForUtility, PrivateGridSearchCV,
                                  PrivateRandomizedSearchCV)
from skdp.accounting._filters import rdp_order_epsilon
from skdp.accounting._odometers import ApproxDPOdometer, RenyiOdometer
from skdp.model_selection._accounts import renyi_odometer_for
from skdp.model_selection._private_search import candidate_cost
from skdp.model_selection._selection_accounts import training_account

X, y = make_classification(n_samples=3000, n_features=4, random_state=0)
X = X / np.linalg.norm(X, axis=1).max()


def hand_curve(epsilon, delta, C, row_norm=np.sqrt(2.0)):
    """One binary problem, logistic loss, written out from the docs' derivation."""
    a = ORDERS
    eps_m, delta_m, eps_cover = 0.99 * epsilon, delta * np.exp(-0.005 * epsilon), 0.01 * epsilon
    L, beta = C * row_norm, C * row_norm**2 / 4
    sigma = L * np.sqrt(8 * np.log(2 / delta_m) + 4 * eps_m) / eps_m
    ridge = 1 + 2 * beta / eps_m
    return (np.log(1 + beta / ridge) + a * L**2 / (2 * sigma**2)
            + np.log(2 * stats.norm.cdf((a - 1) * L / sigma)) / (a - 1)
            + eps_cover * (2 * a - 1) / (2 * (a - 1)))


def test_fitted_curve_equals_the_hand_computation():
    model = ObjPertLogisticRegression(epsilon=0.7, delta=1e-6, C=3.0, random_state=0).fit(X, y)
    assert np.allclose(model.renyi_curve(), hand_curve(0.7, 1e-6, 3.0), rtol=1e-10)
    assert np.allclose(model.renyi_curve([2.0, 5.0]), hand_curve(0.7, 1e-6, 3.0)[
        [np.flatnonzero(ORDERS == 2.0)[0], np.flatnonzero(ORDERS == 5.0)[0]]], rtol=1e-10)


def test_one_vs_rest_curves_add():
    y3 = np.arange(len(y)) % 3
    model = ObjPertLogisticRegression(epsilon=0.9, delta=1e-6, C=1.0, multi_class="ovr",
                                      random_state=0).fit(X, y3)
    assert np.allclose(model.renyi_curve(), 3 * hand_curve(0.3, 1e-6 / 3, 1.0), rtol=1e-10)


def test_curve_refusals():
    y3 = np.arange(len(y)) % 3
    for model, data in ((ObjPertLogisticRegression(delta=0.0), (X, y)),
                        (ObjPertLogisticRegression(delta=1e-6, neighboring="replace"), (X, y)),
                        (ObjPertLogisticRegression(delta=1e-6), (X, y3))):  # multinomial
        with pytest.raises(ValueError):
            model.set_params(random_state=0).fit(*data).renyi_curve()


def test_training_account_routes():
    account, params = training_account(ObjPertLogisticRegression(delta=1e-6, C=1.0), 10.0,
                                       1e-5, 0.1)
    assert isinstance(account, RenyiOdometer) and params == {}
    for estimator in (ObjPertLogisticRegression(delta=1e-6, neighboring="replace"),
                      ObjPertLogisticRegression(delta=1e-6, classes=[0, 1, 2])):
        assert isinstance(training_account(estimator, 10.0, 1e-5, 0.1)[0], ApproxDPOdometer)
    ovr = ObjPertLogisticRegression(delta=1e-6, classes=[0, 1, 2], multi_class="ovr")
    assert training_account(ovr, 10.0, 1e-5, 0.1)[0].cost.n_classes == 3


def test_odometer_report_equals_the_hand_computation():
    estimator = ObjPertLogisticRegression(C=1.0, delta=1e-6)
    search = EpsilonForUtility(estimator, target_utility=0.8, epsilon_max=10, delta_max=1e-5,
                               epsilon_start=0.1, random_state=3).fit(X, y)
    rungs = search.measurements_
    assert len(rungs) >= 2
    ladder = renyi_odometer_for(estimator, 10.0, 1e-5, 0.1)  # public levels
    spent = np.zeros(ORDERS.shape)
    for rung in rungs:
        curve = hand_curve(rung["epsilon"], 1e-6, 1.0)
        i = np.flatnonzero(ORDERS == rung["order"])[0]
        assert rung["rdp"] == pytest.approx(curve[i], rel=1e-10)
        assert rung["rdp_certified"] == pytest.approx(curve[i], rel=1e-10)
        spent += curve
    fits = spent[ladder.order_indices] <= ladder.budgets * (1 + 1e-12)
    j = int(np.argmax(fits))
    claimed = rdp_order_epsilon(ladder.budgets[j], ladder.orders[j], ladder.level_delta)
    training = search.privacy_report_["parts"]["training"]["ex_post"]
    assert training["epsilon"] == pytest.approx(claimed, rel=1e-12)
    assert training["delta"] == 1e-5
    # tighter than basic composition of the rungs' own epsilons
    assert claimed < sum(r["epsilon"] for r in rungs)


def test_undeclared_classes_must_be_two_before_any_fit(monkeypatch):
    def no_fit(self, X, y):
        raise AssertionError("fitted before the refusal")

    monkeypatch.setattr(ObjPertLogisticRegression, "fit", no_fit)
    y3 = np.arange(len(y)) % 3
    with pytest.raises(ValueError, match="Declare classes"):
        EpsilonForUtility(ObjPertLogisticRegression(delta=1e-6, multi_class="ovr"),
                          target_utility=0.5, epsilon_max=10, delta_max=1e-5,
                          random_state=0).fit(X, y3)
    with pytest.raises(ValueError, match="Declare classes"):
        PrivateGridSearchCV(ObjPertLogisticRegression(delta=1e-6, multi_class="ovr"),
                            {"C": [1.0]}, epsilon=2.0, delta=1e-5, random_state=0).fit(X, y3)


def test_search_accepts_gaussian_objpert_and_charges_the_costliest_C():
    final = ObjPertLogisticRegression(epsilon=0.5, delta=1e-6, C=10.0)
    assert np.allclose(candidate_cost(final, renyi=True), hand_curve(0.5, 1e-6, 10.0),
                       rtol=1e-10)
    small = PrivateGridSearchCV(ObjPertLogisticRegression(delta=1e-6), {"C": [0.1]},
                                epsilon=2.0, delta=1e-5).plan()
    both = PrivateGridSearchCV(ObjPertLogisticRegression(delta=1e-6), {"C": [0.1, 10.0]},
                               epsilon=2.0, delta=1e-5).plan()
    assert both.candidate_epsilon < small.candidate_epsilon  # C = 10 costs more per epsilon
    search = PrivateGridSearchCV(ObjPertLogisticRegression(delta=1e-6), {"C": [0.1, 10.0]},
                                 epsilon=2.0, delta=1e-5, random_state=0).fit(X, y)
    assert search.privacy_report_["a_priori"]["epsilon"] <= 2.0
    with pytest.raises(ValueError, match="must be a list"):
        PrivateRandomizedSearchCV(ObjPertLogisticRegression(delta=1e-6),
                                  {"C": stats.loguniform(0.1, 10)}, epsilon=2.0,
                                  delta=1e-5).plan()
    # pure searches keep C free to be drawn from a distribution
    PrivateRandomizedSearchCV(ObjPertLogisticRegression(),
                              {"C": stats.loguniform(0.1, 10)}, epsilon=2.0).plan()


def test_renyi_ledger_charges_the_curve_and_checks_the_classes(monkeypatch):
    from skdp import PrivacyLedger

    ledger = PrivacyLedger(4.0, 1e-5, composition="renyi")
    index = int(np.flatnonzero(ORDERS == ledger.order)[0])
    ledger.fit(ObjPertLogisticRegression(epsilon=0.5, delta=1e-6, C=1.0), X, y)
    assert ledger.entries[0]["rdp"] == pytest.approx(hand_curve(0.5, 1e-6, 1.0)[index],
                                                     rel=1e-10)

    def no_fit(self, X, y):
        raise AssertionError("fitted before the refusal")

    monkeypatch.setattr(ObjPertLogisticRegression, "fit", no_fit)
    with pytest.raises(ValueError, match="Declare classes"):
        ledger.fit(ObjPertLogisticRegression(epsilon=0.5, delta=1e-6, multi_class="ovr"),
                   X, np.arange(len(y)) % 3)
    assert len(ledger.entries) == 1


def test_privacy_cost_of_fitted_models_has_the_renyi_total():
    from skdp.model_selection import privacy_cost_of_search

    fits = [ObjPertLogisticRegression(epsilon=0.5, delta=1e-6, C=1.0,
                                      random_state=i).fit(X, y) for i in range(3)]
    report = privacy_cost_of_search(fits)
    from skdp.accounting._rdp import rdp_to_epsilon

    assert report["renyi_epsilon"] == pytest.approx(
        rdp_to_epsilon(3 * hand_curve(0.5, 1e-6, 1.0), report["renyi_delta"]), rel=1e-10)
    assert report["renyi_epsilon"] < 1.5
