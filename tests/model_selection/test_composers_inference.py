"""``inference=True`` and the composers (issue 46).

A fit with ``inference=True`` may refuse its intervals (``InferenceError``) from its own
noisy statistics. In a composer that keeps its trials secret (the selection's rungs,
the searches' trials, a ledger's cross-validation folds) that refusal would reveal a
secret trial, so the gate refuses such trials before any data; a released fit (a
ledger's) carries its intervals, charged inside its own budget.
"""

import numpy as np
import pytest
from sklearn.datasets import make_classification

from skdp import (EpsilonForUtility, ObjPertLogisticRegression, PrivacyLedger,
                  PrivateGridSearchCV, PrivateRandomizedSearchCV, SSPLinearRegression)

X, y = make_classification(n_samples=20000, n_features=4, n_informative=3, n_redundant=0,
                           random_state=0)
X /= np.linalg.norm(X, axis=1).max()


def _never_fitted(monkeypatch):
    for kind in (ObjPertLogisticRegression, SSPLinearRegression):
        monkeypatch.setattr(kind, "fit", lambda *a, **k: pytest.fail("a trial was fitted"))


@pytest.mark.parametrize("compose", [
    lambda: EpsilonForUtility(SSPLinearRegression(data_norm=1.0, y_bound=4.0,
                                                  inference=True)).fit(X, y),
    lambda: EpsilonForUtility(ObjPertLogisticRegression(data_norm=1.0,
                                                        inference=True)).fit(X, y),
    lambda: PrivateGridSearchCV(ObjPertLogisticRegression(data_norm=1.0, inference=True),
                                {"C": [0.5, 1.0]}, epsilon=3.0).fit(X, y),
    lambda: PrivateRandomizedSearchCV(ObjPertLogisticRegression(data_norm=1.0),
                                      {"inference": [False, True]}, epsilon=3.0).fit(X, y),
    lambda: PrivacyLedger(3.0).cross_validate(
        ObjPertLogisticRegression(epsilon=0.5, data_norm=1.0, inference=True), X, y,
        scoring="accuracy", epsilon=0.5),
], ids=["selection-ssp", "selection-objpert", "grid", "grid-key", "ledger-cv"])
def test_secret_trials_with_intervals_are_refused_before_any_fit(compose, monkeypatch):
    _never_fitted(monkeypatch)
    with pytest.raises(ValueError, match="inference=True"):
        compose()


def test_the_ledger_charges_a_released_fit_with_intervals_its_stated_budget():
    ledger = PrivacyLedger(epsilon=4.0)
    model = ledger.fit(ObjPertLogisticRegression(epsilon=3.0, data_norm=1.0,
                                                 inference=True, random_state=0), X, y)
    # the information matrix is inside the fit's epsilon: the charge is the fit's
    assert ledger.spent == (model.epsilon_spent_, 0.0) and model.epsilon_spent_ <= 3.0
    intervals = model.conf_int()
    assert intervals.shape == (5, 2) and np.all(intervals[:, 0] < intervals[:, 1])
