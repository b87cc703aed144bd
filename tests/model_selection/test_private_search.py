"""The private hyperparameter search: its law, its accounting, and attacks on it."""

import math
import pickle

import numpy as np
import pytest
from scipy import stats
from sklearn.datasets import make_classification
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from skdp import DPSGDClassifier, ObjPertLogisticRegression, OutputPertSVM
from skdp.accounting._costs import pure_rdp
from skdp.accounting._rdp import ORDERS, rdp_to_epsilon
from skdp.exceptions import PrivacyBudgetError
from skdp.model_selection import PrivateGridSearchCV, PrivateRandomizedSearchCV
from skdp.model_selection import _private_search
from skdp.model_selection._measure import _NoiseSources
from skdp.model_selection._private_selection import _SelectionStreams
from skdp.model_selection._repeat_and_select import (
    draw_runs,
    law_of_runs,
    mean_runs,
    selection_rdp,
    stopping_parameter,
)
from skdp.preprocessing import Clipper

X, y = make_classification(n_samples=600, n_features=5, random_state=0)
GRID = {"C": [0.01, 0.1, 1.0, 10.0]}


# -- the law of the number of trials ------------------------------------------------------

@pytest.mark.parametrize("eta", [0.0, 0.5, 1.0, 2.0])
def test_number_of_trials_follows_the_truncated_negative_binomial_law(eta):
    gamma = stopping_parameter(eta, 6.0)
    assert mean_runs(eta, gamma) == pytest.approx(6.0, rel=1e-9)
    k = np.arange(1, 4000)
    law = law_of_runs(eta, gamma, k)
    assert law.sum() == pytest.approx(1.0, abs=1e-9)
    assert (k * law).sum() == pytest.approx(6.0, rel=1e-6)
    rng = np.random.default_rng(12345)
    draws = np.array([draw_runs(eta, gamma, rng) for _ in range(20000)])
    assert draws.min() >= 1
    # chi-square goodness of fit on k = 1..14 and a tail bin (fixed seed: deterministic)
    observed = np.array([np.sum(draws == j) for j in range(1, 15)] + [np.sum(draws >= 15)])
    expected = 20000 * np.append(law[:14], 1 - law[:14].sum())
    assert stats.chisquare(observed, expected).pvalue > 1e-3


class _Spy(ObjPertLogisticRegression):
    fits = []

    def fit(self, X, y):
        _Spy.fits.append(self.C)
        return super().fit(X, y)


def _reference_search(seed, grid, plan, X, y):
    """Random stopping written out from its definition (Liu & Talwar's algorithm): the
    number of trials, each trial's candidate and noise, the best noisy sum released."""
    streams = _SelectionStreams(seed, None)
    rng = streams.noise()
    k = draw_runs(plan.eta, plan.gamma, rng)
    candidates = [grid[int(rng.integers(len(grid)))] for _ in range(k)]
    states = [streams.rungs.next()[1] for _ in range(k)]
    count = len(y) + rng.laplace(scale=1 / plan.count_epsilon)
    best = -np.inf
    for candidate, state in zip(candidates, states):
        model = ObjPertLogisticRegression(epsilon=plan.candidate_epsilon, random_state=state,
                                          classes=np.unique(y), **candidate).fit(X, y)
        noisy = np.sum(model.predict(X) == y) + rng.laplace(scale=plan.score_noise["scale"])
        if noisy > best:
            best, chosen, coef = noisy, candidate, model.coef_
    return k, chosen, best / count, coef


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_search_is_the_reference_algorithm(seed):
    _Spy.fits = []
    search = PrivateGridSearchCV(_Spy(), GRID, epsilon=2.0, random_state=seed).fit(X, y)
    grid = list(_private_search.ParameterGrid(GRID))
    k, chosen, score, coef = _reference_search(seed, grid, search.plan(), X, y)
    assert len(_Spy.fits) == k  # the secret number of trials, from the reference law
    assert search.best_params_ == chosen
    assert search.best_score_ == pytest.approx(score, rel=1e-12)
    np.testing.assert_array_equal(search.best_estimator_.coef_, coef)


def test_released_quantities_only():
    search = PrivateGridSearchCV(ObjPertLogisticRegression(), GRID, random_state=0).fit(X, y)
    assert list(search.cv_results_["params"]) == [search.best_params_]
    assert search.best_index_ == 0
    report = search.privacy_report_
    # nothing that counts the trials: the documented keys, and the plan's public ones
    assert set(report) == {"selection", "neighboring", "unit", "a_priori", "ex_post",
                           "budget", "plan", "released_model", "transcript", "resolution",
                           "statement"}
    assert (report["neighboring"], report["unit"]) == ("add_remove", "row")
    assert set(report["transcript"]) == {"best_noisy_score", "noisy_count"}
    assert set(report["plan"]) == {"stopping_shape", "stopping_parameter", "mean_trials",
                                   "candidate_epsilon", "score_noise", "count_epsilon",
                                   "scoring_rows", "accounting"}
    assert report["a_priori"] == report["ex_post"]
    # the released model keeps the user's random_state, never a derived stream
    assert search.best_estimator_.random_state is None
    assert "secret" in report["statement"]


# -- accounting -------------------------------------------------------------------------

@pytest.mark.parametrize("stopping, eta", [("geometric", 1.0), ("logarithmic", 0.0)])
def test_pure_search_costs_two_plus_eta_trials(stopping, eta):
    search = PrivateGridSearchCV(ObjPertLogisticRegression(), GRID, epsilon=1.0,
                                 stopping=stopping)
    plan = search.plan()
    count = min(0.05, 0.1)
    trial = (1.0 - count) / (2 + eta)
    assert plan.candidate_epsilon == pytest.approx(0.9 * trial)
    assert 1 / plan.score_noise["scale"] == pytest.approx(0.1 * trial)
    assert plan.a_priori == (pytest.approx(1.0), 0.0)


def test_pure_limit_of_the_renyi_bound():
    """Papernot & Steinke's bound at the largest orders approaches (2 + eta) epsilon."""
    for eta in (0.0, 1.0, 3.0):
        gamma = stopping_parameter(eta, 20.0)
        bound = selection_rdp(pure_rdp(0.3), eta, gamma)[-1]
        slack = (1 + eta) * math.log(1 / gamma) / ORDERS[-1] + math.log(20.0) / (ORDERS[-1] - 1)
        assert (2 + eta) * 0.3 * (1 - 1e-3) <= bound <= (2 + eta) * 0.3 + slack


def _papernot_steinke(rdp, eta, gamma):
    """Theorem 2 of Papernot & Steinke (2022), written out independently."""
    k_mean = eta * (1 - gamma) / (gamma * (1 - gamma**eta)) if eta else (
        (1 / gamma - 1) / math.log(1 / gamma))
    best_second = min((1 + eta) * (1 - 1 / lh) * r + (1 + eta) * math.log(1 / gamma) / lh
                      for lh, r in zip(ORDERS, rdp))
    return np.array([r + best_second + math.log(k_mean) / (lam - 1)
                     for lam, r in zip(ORDERS, rdp)])


def test_renyi_plan_matches_an_independent_computation():
    estimator = DPSGDClassifier(epochs=2, sample_rate=0.1)
    search = PrivateGridSearchCV(estimator, {"learning_rate": [0.1, 1.0]}, epsilon=2.0,
                                 delta=1e-5, mean_trials=8, stopping="geometric")
    plan = search.plan()
    eps_c = plan.candidate_epsilon
    from skdp.accounting._costs import DPSGDRungCost

    model = DPSGDRungCost.from_params(estimator.get_params()).rdp(eps_c)
    sigma = 1 / (0.1 * eps_c)
    trial = model + ORDERS / (2 * sigma**2)
    total = _papernot_steinke(trial, 1.0, 1 / 8) + np.minimum(0.1 * 0 + 0.1,
                                                            ORDERS * 0.1**2 / 2)
    assert plan.a_priori[0] == pytest.approx(rdp_to_epsilon(total, 1e-5), rel=1e-9)
    assert plan.a_priori[0] <= 2.0
    # the candidate epsilon is the largest that fits (to the bisection's tolerance)
    assert plan._renyi_epsilon(eps_c * 1.002) > 2.0


def test_grid_epsilons_must_fit_the_budget():
    grid = {"epsilon": [0.1, 0.5], "C": [1.0]}  # 0.5 > (1 - 0.05) / 2 * 0.9
    with pytest.raises(PrivacyBudgetError, match="does not fit"):
        PrivateGridSearchCV(ObjPertLogisticRegression(), grid, epsilon=1.0).fit(X, y)
    search = PrivateGridSearchCV(ObjPertLogisticRegression(), {"epsilon": [0.1, 0.2]},
                                 epsilon=1.0, random_state=0).fit(X, y)
    plan = search.plan()
    assert plan.a_priori[0] == pytest.approx(0.05 + 2 * (0.2 + plan.score_epsilon))
    assert search.best_estimator_.epsilon_spent_ in (0.1, 0.2)


def test_refusals_before_any_fit(monkeypatch):
    def no_fit(self, X, y):
        raise AssertionError("fitted before the refusal")

    monkeypatch.setattr(ObjPertLogisticRegression, "fit", no_fit)
    monkeypatch.setattr(OutputPertSVM, "fit", no_fit)
    # an (epsilon, delta) mechanism without a Renyi curve (multinomial)
    with pytest.raises(ValueError, match="no Renyi curve"):
        PrivateGridSearchCV(ObjPertLogisticRegression(delta=1e-6, multi_class="multinomial",
                                                      classes=[0, 1, 2]),
                            GRID, delta=1e-5).fit(X, y)
    # a delta > 0 estimator in a pure search
    with pytest.raises(ValueError, match="not pure DP"):
        PrivateGridSearchCV(ObjPertLogisticRegression(delta=1e-6), GRID).fit(X, y)
    # a distribution over a parameter that changes the cost
    with pytest.raises(ValueError, match="must be a list"):
        PrivateRandomizedSearchCV(ObjPertLogisticRegression(),
                                  {"epsilon": stats.uniform(0.1, 0.2)}).fit(X, y)
    # one class
    with pytest.raises(ValueError):
        PrivateGridSearchCV(ObjPertLogisticRegression(), GRID).fit(X, np.zeros(len(y)))
    # a Pipeline step replaced by a candidate: the plan would cost the step given
    pipe = Pipeline([("scale", Clipper(-3.0, 3.0)), ("clf", ObjPertLogisticRegression())])
    for space in ({"clf": [ObjPertLogisticRegression(delta=1e-3)]},
                  [GRID, {"scale": [StandardScaler()]}],
                  {"steps": [[("clf", OutputPertSVM(delta=1e-3))]]}):
        with pytest.raises(ValueError, match="replaces the Pipeline"):
            PrivateGridSearchCV(pipe, space).fit(X, y)
        with pytest.raises(ValueError, match="replaces the Pipeline"):
            PrivateRandomizedSearchCV(pipe, space).fit(X, y)


# -- planted bugs -----------------------------------------------------------------------

def test_planted_bug_shared_noise_is_refused_before_any_fit(monkeypatch):
    _Spy.fits = []
    monkeypatch.setattr(_NoiseSources, "next",
                        lambda self: (0, np.random.Generator(np.random.PCG64(7))))
    with pytest.raises(RuntimeError, match="share their noise"):
        PrivateGridSearchCV(_Spy(), GRID, random_state=0, mean_trials=20).fit(X, y)
    assert _Spy.fits == []


def test_planted_bug_unbounded_score_is_clipped_or_refused():
    from sklearn.utils._param_validation import InvalidParameterError

    with pytest.raises(InvalidParameterError):
        PrivateGridSearchCV(ObjPertLogisticRegression(), GRID, scoring="neg_log_loss").fit(X, y)

    def right(model, X, y):
        return (model.predict(X) == y).astype(float)

    def inflated(model, X, y):  # a bug: utilities of a million per row
        return 1e6 * right(model, X, y)

    a = PrivateGridSearchCV(ObjPertLogisticRegression(), GRID, scoring=right,
                            random_state=3).fit(X, y)
    b = PrivateGridSearchCV(ObjPertLogisticRegression(), GRID, scoring=inflated,
                            random_state=3).fit(X, y)
    assert a.best_params_ == b.best_params_ and a.best_score_ == b.best_score_
    with pytest.raises(ValueError, match="per-row utility"):
        PrivateGridSearchCV(ObjPertLogisticRegression(), GRID,
                            scoring=lambda m, X, y: m.score(X, y), random_state=0).fit(X, y)


def test_planted_bug_data_fitted_pipeline_step_is_refused(monkeypatch):
    monkeypatch.setattr(StandardScaler, "fit", lambda *a, **k: pytest.fail("fitted"))
    pipe = Pipeline([("scale", StandardScaler()), ("clf", ObjPertLogisticRegression())])
    with pytest.raises(ValueError, match="scale"):
        PrivateGridSearchCV(pipe, {"clf__C": [0.1, 1.0]}).fit(X, y)


def test_public_pipeline_is_searched():
    pipe = Pipeline([("clip", Clipper(-3.0, 3.0)), ("clf", ObjPertLogisticRegression())])
    search = PrivateGridSearchCV(pipe, {"clf__C": [0.1, 1.0]}, random_state=0).fit(X, y)
    assert set(search.best_params_) == {"clf__C"}
    assert search.predict(X).shape == y.shape


def test_validation_rows_enter_only_through_the_bounded_utility():
    """Replay: with the same seed and a utility that does not look at the rows, any
    change of the validation part leaves every output unchanged; a change of one
    training row changes the model (the control)."""
    def flat(model, X, y):
        return np.full(len(y), 0.5)

    def run(X_, y_):
        return PrivateGridSearchCV(ObjPertLogisticRegression(), GRID, scoring=flat,
                                   validation_fraction=0.3, random_state=5).fit(X_, y_)

    base = run(X, y)
    in_validation = _SelectionStreams(5, None).coins().random(len(y)) < 0.3
    rng = np.random.default_rng(0)
    X2, y2 = X.copy(), y.copy()
    X2[in_validation] = rng.normal(size=(in_validation.sum(), X.shape[1])) * 3
    y2[in_validation] = rng.integers(0, 2, in_validation.sum())
    replay = run(X2, y2)
    assert replay.best_params_ == base.best_params_
    assert replay.best_score_ == base.best_score_
    np.testing.assert_array_equal(replay.best_estimator_.coef_, base.best_estimator_.coef_)
    X3 = X.copy()
    X3[np.flatnonzero(~in_validation)[0]] *= -1
    control = run(X3, y)
    assert not np.array_equal(control.best_estimator_.coef_, base.best_estimator_.coef_)


# -- behaviour --------------------------------------------------------------------------

def test_same_seed_same_search_and_pickle():
    a = PrivateGridSearchCV(ObjPertLogisticRegression(), GRID, random_state=11).fit(X, y)
    b = PrivateGridSearchCV(ObjPertLogisticRegression(), GRID, random_state=11).fit(X, y)
    np.testing.assert_array_equal(a.best_estimator_.coef_, b.best_estimator_.coef_)
    c = pickle.loads(pickle.dumps(a))
    np.testing.assert_array_equal(c.predict(X), a.predict(X))


def test_infinite_budget_selects_by_exact_accuracy():
    """With epsilon=inf every trial is the non-private fit and the score is exact: the
    released candidate is the best of the grid's non-private accuracies among those
    tried (all of them, with many trials)."""
    search = PrivateGridSearchCV(ObjPertLogisticRegression(), {"C": [1e-4, 10.0]},
                                 epsilon=np.inf, mean_trials=200, random_state=0).fit(X, y)
    exact = {c: ObjPertLogisticRegression(epsilon=np.inf, C=c).fit(X, y).score(X, y)
             for c in (1e-4, 10.0)}
    assert search.best_params_["C"] == max(exact, key=exact.get)


def test_dpsgd_search_renyi_and_refit_false():
    search = PrivateRandomizedSearchCV(
        DPSGDClassifier(epochs=1), {"learning_rate": stats.loguniform(0.05, 2.0)},
        epsilon=2.0, delta=1e-5, n_iter=3, refit=False, random_state=0).fit(X, y)
    assert search.privacy_report_["a_priori"]["epsilon"] <= 2.0
    assert not hasattr(search, "best_estimator_")
    with pytest.raises(Exception, match="refit=False"):
        search.predict(X)


# -- black-box audit of the choice -----------------------------------------------------

class _Stub(ObjPertLogisticRegression):
    """A private estimator whose model ignores the rows (trivially private): the audit
    below measures the selection alone."""

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        self.coef_, self.intercept_ = np.zeros((1, X.shape[1])), np.zeros(1)
        self._record_spend(self.epsilon, 0.0, "add_remove")
        return self


def _label_utility(model, X, y):
    # candidate C=1 scores the rows labelled 1, C=0.1 those labelled 0: one row moves
    # one candidate's sum by one, the worst case for the selection (sensitivity 1)
    return (np.asarray(y) == (1 if model.C == 1.0 else 0)).astype(float)


def _audit_choice(n_runs):
    from skdp.audit import audit_statistics

    X0 = np.zeros((20, 2))
    y0 = np.repeat([0, 1], 10)
    X1, y1 = np.vstack([X0, [[0.0, 0.0]]]), np.append(y0, 1)  # the canary, labelled 1

    def chose_c1(X_, y_, seed):
        search = PrivateGridSearchCV(_Stub(), {"C": [0.1, 1.0]}, epsilon=0.3,
                                     stopping="geometric", scoring=_label_utility,
                                     random_state=seed).fit(X_, y_)
        return float(search.best_params_["C"] == 1.0)

    with_canary = [chose_c1(X1, y1, seed) for seed in range(n_runs)]
    without = [chose_c1(X0, y0, seed) for seed in range(n_runs, 2 * n_runs)]
    return audit_statistics(with_canary, without, epsilon=0.3)


def test_black_box_audit_of_the_choice_and_a_planted_noiseless_score(monkeypatch):
    """The choice between two candidates whose scores one row moves by one: the audit's
    Clopper-Pearson lower bound stays within the claimed 0.3; with the score's noise
    removed (a planted bug) the canary decides the choice whenever its candidate was
    tried, and the audit contradicts the claim (about ln(0.5 / 0.09) = 1.7 expected)."""
    assert not _audit_choice(1000).contradicted
    monkeypatch.setattr(_private_search._BasePrivateSearch, "_score_noise",
                        staticmethod(lambda plan, rng: 0.0))
    planted = _audit_choice(1000)
    assert planted.contradicted and planted.epsilon_lower_bound > 0.6
