"""``inference=True`` through the composers (issue 46).

A fit with ``inference=True`` may refuse its intervals (``InferenceError``) from its own
noisy release. In a composer's secret trial (a selection's rung, a search's trial, a
ledger's cross-validation fold) that refusal is never raised, since it would reveal the
trial: the trial keeps its model without intervals and counts as failed (a function of
its own private output, inside its charge), so the released model always carries
intervals, charged inside its own epsilon.
"""

import numpy as np
import pytest
from sklearn.datasets import make_classification, make_regression

import skdp.linear_model._inference as glm_intervals
import skdp.linear_model._sufficient_statistics as ssp_intervals
from skdp import (EpsilonForUtility, InferenceError, ObjPertLogisticRegression,
                  PrivacyLedger, PrivateGridSearchCV, PrivateRandomizedSearchCV,
                  SSPLinearRegression)

X, y = make_classification(n_samples=20000, n_features=4, n_informative=3, n_redundant=0,
                           random_state=0)
X /= np.linalg.norm(X, axis=1).max()
X_reg, y_reg = make_regression(n_samples=20000, n_features=4, noise=5.0, random_state=0)
X_reg, y_reg = X_reg / np.linalg.norm(X_reg, axis=1).max(), y_reg / 60.0


def _refuse(calls, refused):
    """A stand-in for the intervals' computation that refuses the calls in ``refused``
    (counted from 0) and otherwise computes them."""
    def patched(original):
        def intervals(*args, **kwargs):
            calls.append(None)
            if refused(len(calls) - 1):
                raise InferenceError("the noisy information matrix is not positive definite")
            return original(*args, **kwargs)
        return intervals
    return patched


@pytest.fixture
def refuse(monkeypatch):
    """``refuse(which)`` makes the GLM and least-squares intervals refuse the calls
    ``which(k)`` selects; returns the list of calls."""
    def install(which):
        calls = []
        wrap = _refuse(calls, which)
        monkeypatch.setattr(glm_intervals, "glm_inference", wrap(glm_intervals.glm_inference))
        monkeypatch.setattr(ssp_intervals, "least_squares_inference",
                            wrap(ssp_intervals.least_squares_inference))
        return calls
    return install


def _search(**kw):
    return PrivateGridSearchCV(
        ObjPertLogisticRegression(data_norm=1.0, inference=True),
        {"C": [0.5, 1.0, 2.0]}, epsilon=3.0, random_state=0, **kw)


def _has_intervals(model):
    intervals = model.conf_int()
    return (intervals.shape == (model.coef_.size + 1, 2)
            and np.all(intervals[:, 0] < intervals[:, 1]))


@pytest.mark.parametrize("compose", [
    lambda: EpsilonForUtility(SSPLinearRegression(data_norm=1.0, y_bound=4.0, inference=True),
                              target_utility=0.9, random_state=0).fit(X_reg, y_reg),
    lambda: EpsilonForUtility(ObjPertLogisticRegression(data_norm=1.0, inference=True),
                              target_utility=0.65, random_state=0).fit(X, y),
    lambda: _search().fit(X, y),
    lambda: PrivateRandomizedSearchCV(ObjPertLogisticRegression(data_norm=1.0),
                                      {"inference": [True]}, epsilon=3.0,
                                      random_state=0).fit(X, y),
], ids=["selection-ssp", "selection-objpert", "grid", "grid-key"])
def test_a_composer_releases_its_model_with_intervals(compose):
    composer = compose()
    model = composer.best_estimator_
    assert model.inference and _has_intervals(model)
    assert list(model.summary().columns) == ["coef", "std err", "lower", "upper"]


def test_the_released_rung_is_the_passing_one_and_its_intervals_surround_it():
    search = EpsilonForUtility(SSPLinearRegression(data_norm=1.0, y_bound=4.0, inference=True),
                               target_utility=0.9, random_state=0).fit(X_reg, y_reg)
    model, passed = search.best_estimator_, search.measurements_[-1]
    assert passed["passed"] and model.epsilon == pytest.approx(passed["epsilon"])
    estimates, intervals = np.r_[model.intercept_, model.coef_], model.conf_int()
    assert np.all((intervals[:, 0] < estimates) & (estimates < intervals[:, 1]))


def test_a_refused_trial_is_silent_and_never_released(refuse, capsys, recwarn):
    """Every other trial refuses its intervals: the search completes quietly and
    releases a trial that has them."""
    calls = refuse(lambda k: k % 2 == 0)
    search = _search().fit(X, y)
    assert len(calls) >= 2 and _has_intervals(search.best_estimator_)
    assert capsys.readouterr() == ("", "")
    assert not [w for w in recwarn if "positive definite" in str(w.message)]


def test_when_every_trial_refuses_the_search_says_so_and_releases_nothing(refuse):
    refuse(lambda k: True)
    search = _search()
    with pytest.raises(InferenceError, match="no trial's intervals") as error:
        search.fit(X, y)
    assert not any(ch.isdigit() for ch in str(error.value))   # no count of trials
    assert not hasattr(search, "best_estimator_")


def test_a_refused_rung_fails_its_test_and_the_ladder_goes_on(refuse):
    """At small epsilons SSP's rungs refuse their intervals on their own, and fail. A
    planted refusal of the rung that passed makes it fail too: the ladder is the same
    up to it, then climbs on, and the released rung has intervals."""
    def select():
        return EpsilonForUtility(
            SSPLinearRegression(data_norm=1.0, y_bound=4.0, inference=True),
            target_utility=0.9, random_state=0).fit(X_reg, y_reg)
    natural = select().measurements_
    assert any(r.get("intervals_refused") for r in natural)
    assert all(r.get("intervals_refused") and not r["passed"] for r in natural[:-1])
    passing = len(natural) - 1
    calls = refuse(lambda k: k <= passing)   # one call per rung's release
    search = select()
    rungs = search.measurements_
    assert [r["epsilon"] for r in rungs[:passing + 1]] == [r["epsilon"] for r in natural]
    assert rungs[passing]["intervals_refused"] and not rungs[passing]["passed"]
    assert len(rungs) > passing + 1 and len(calls) == len(rungs)
    assert rungs[-1]["passed"] and _has_intervals(search.best_estimator_)


def test_a_refusal_outside_a_composer_is_still_raised(refuse):
    """The trials' silence ends with the composer: a fit of its own still raises."""
    refuse(lambda k: True)
    with pytest.raises(InferenceError, match="no trial's intervals"):
        _search().fit(X, y)
    model = ObjPertLogisticRegression(data_norm=1.0, inference=True, random_state=0)
    with pytest.raises(InferenceError, match="ObjPertLogisticRegression: .*positive definite"):
        model.fit(X, y)
    assert not hasattr(model, "coef_")


def test_a_ledger_cross_validates_fits_with_intervals_and_its_folds_stay_silent(refuse):
    calls = refuse(lambda k: k == 0)   # one fold's intervals refused: not raised
    ledger = PrivacyLedger(3.0)
    result = ledger.cross_validate(
        ObjPertLogisticRegression(epsilon=0.5, data_norm=1.0, inference=True), X, y, cv=3,
        scoring="accuracy", epsilon=0.5)
    assert len(calls) == 3 and len(result["test_score"]) == 3
    assert ledger.spent[0] == pytest.approx(result["epsilon"])


def test_the_ledger_charges_a_released_fit_with_intervals_its_stated_budget():
    ledger = PrivacyLedger(epsilon=4.0)
    model = ledger.fit(ObjPertLogisticRegression(epsilon=3.0, data_norm=1.0,
                                                 inference=True, random_state=0), X, y)
    # the information matrix is inside the fit's epsilon: the charge is the fit's
    assert ledger.spent == (model.epsilon_spent_, 0.0) and model.epsilon_spent_ <= 3.0
    assert _has_intervals(model)
