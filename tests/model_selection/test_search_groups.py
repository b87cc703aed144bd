"""The private search with persons as the unit (``PrivateGridSearchCV.fit(X, y,
groups=...)``): one public coin per person, a per-person score and a count of persons,
candidates fitted with their part's groups, refusals before any data is read."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.datasets import make_classification
from sklearn.model_selection import ParameterGrid

from skdp import DPSGDClassifier, ObjPertLogisticRegression, OutputPertSVM
from skdp.accounting._rdp import dpsgd_rdp
from skdp.model_selection import PrivateGridSearchCV, PrivateRandomizedSearchCV
from skdp.model_selection import _private_search
from skdp.model_selection._private_search import candidate_cost, trial_sum
from skdp.model_selection._private_selection import _SelectionStreams
from skdp.model_selection._selection_tests import bounded_utilities, person_shares
from skdp.model_selection._repeat_and_select import draw_runs
from skdp.utils._groups import check_groups

from ._persons import (_person_coins, _PersonStub, _ReleasesRowsOnly, _RowsOnly,
                       _straddling, _with_a_person)

X, y = make_classification(n_samples=600, n_features=4, n_informative=2, n_redundant=0,
                           class_sep=1.0, flip_y=0.1, random_state=0)
X /= np.linalg.norm(X, axis=1).max()
# persons of 1 to 7 rows, labelled by strings so that codes are not row positions
_sizes = np.random.default_rng(3).integers(1, 8, size=300)
_person = np.repeat(np.arange(300), _sizes)[:len(y)]
groups = np.array([f"p{p:04d}" for p in _person], dtype=object)
CODES = check_groups(groups, len(y))
GRID = {"C": [0.01, 0.1, 1.0, 10.0]}


def _person_score_by_hand(model, X_, y_, persons):
    """``sum_p mean accuracy of p's rows`` by a group-by."""
    right = pd.Series(model.predict(X_) == y_, dtype=float)
    return float(right.groupby(np.asarray(persons)).mean().sum())


def _spy_trial_sum(monkeypatch):
    seen, original = [], _private_search.trial_sum
    monkeypatch.setattr(_private_search, "trial_sum",
                        lambda *args: seen.append((args, original(*args))) or seen[-1][1])
    return seen


# -- the split: one public coin per person --------------------------------------------------

def test_a_person_never_straddles_the_parts(monkeypatch):
    """With ``validation_fraction``, the candidates are fitted on the persons whose coin
    fell on the training side (with all of their rows) and scored on the others: the
    split is the persons' coins by hand, no person has rows on both sides."""
    seen = _spy_trial_sum(monkeypatch)
    _PersonStub.received = []
    PrivateGridSearchCV(_PersonStub(), GRID, validation_fraction=0.3,
                        random_state=4).fit(X, y, groups=groups)
    in_validation = _person_coins(4, CODES, 0.3)
    assert _straddling(CODES, in_validation) == 0
    assert 0.2 < in_validation.mean() < 0.4
    assert seen and len(_PersonStub.received) == len(seen)
    for received in _PersonStub.received:
        np.testing.assert_array_equal(received, groups[~in_validation])
    for (_, _, X_score, _, _), _ in seen:
        np.testing.assert_array_equal(X_score, X[in_validation])
    assert not set(groups[in_validation]) & set(_PersonStub.received[0])
    # the check can fail: the rows' coins of the same stream split many persons
    rows = _SelectionStreams(4).coins().random(len(y)) < 0.3
    assert _straddling(CODES, rows) > 30


# -- the per-person score and the count of persons -----------------------------------------

@pytest.mark.parametrize("validation_fraction", [None, 0.3])
def test_person_score_by_hand(monkeypatch, validation_fraction):
    """Each trial's score before noise is the sum over the scoring persons of their mean
    utility (an independent pandas group-by), not the row sum."""
    seen = _spy_trial_sum(monkeypatch)
    PrivateGridSearchCV(_PersonStub(), GRID, validation_fraction=validation_fraction,
                        random_state=6).fit(X, y, groups=groups)
    scoring = (np.ones(len(y), bool) if validation_fraction is None
               else _person_coins(6, CODES, validation_fraction))
    assert len(seen) >= 2
    for (_, model, X_score, y_score, _), value in seen:
        assert len(y_score) == scoring.sum()
        assert value == pytest.approx(
            _person_score_by_hand(model, X[scoring], y[scoring], groups[scoring]), rel=1e-12)
        rows = float(np.sum(model.predict(X_score) == y_score))
        assert abs(value - rows) > 10  # a person of k rows counts k times in the row sum


def _reference_person_search(seed, plan, fraction):
    """The search over persons written out from its definition, with a group-by for
    the scores and the number of persons for the count."""
    streams = _SelectionStreams(seed, None)
    rng = streams.noise()
    grid = list(ParameterGrid(GRID))
    k = draw_runs(plan.eta, plan.gamma, rng)
    candidates = [grid[int(rng.integers(len(grid)))] for _ in range(k)]
    states = [streams.rungs.next()[1] for _ in range(k)]
    held = _person_coins(seed, CODES, fraction)
    train = ~held
    count = len(np.unique(groups[held])) + rng.laplace(scale=1 / plan.count_epsilon)
    best = -np.inf
    for candidate, state in zip(candidates, states):
        model = ObjPertLogisticRegression(epsilon=plan.candidate_epsilon, random_state=state,
                                          classes=np.unique(y), **candidate)
        model.fit(X[train], y[train])
        noisy = (_person_score_by_hand(model, X[held], y[held], groups[held])
                 + rng.laplace(scale=plan.score_noise["scale"]))
        if noisy > best:
            best, chosen, coef = noisy, candidate, model.coef_
    return chosen, best / count, count, coef


@pytest.mark.parametrize("seed", [0, 1])
def test_search_over_persons_is_the_reference_algorithm(seed):
    """The whole transcript against the reference: the chosen candidate, the noisy
    score (per-person sum over the noisy count of persons) and the model."""
    search = PrivateGridSearchCV(_PersonStub(), GRID, validation_fraction=0.3,
                                 random_state=seed).fit(X, y, groups=groups)
    chosen, score, count, coef = _reference_person_search(seed, search.plan(), 0.3)
    assert search.best_params_ == chosen
    assert search.privacy_report_["transcript"]["noisy_count"] == pytest.approx(count,
                                                                                rel=1e-12)
    assert search.best_score_ == pytest.approx(score, rel=1e-12)
    np.testing.assert_array_equal(search.best_estimator_.coef_, coef)


@pytest.mark.parametrize("k", [1, 2, 5, 9])
@pytest.mark.parametrize("right", [True, False])
def test_a_person_moves_the_score_and_the_count_by_at_most_one(k, right):
    """Exact audit on person-level neighbours: adding one person of ``k`` rows moves a
    trial's score sum by their mean utility (in [0, 1]) and the count of persons by
    exactly 1, so the Laplace densities of the noisy score and count move by at most
    ``exp(e)`` at their budget ``e``. The row score on the same neighbours moves by
    ``k`` for a person predicted right: a row statistic is caught for ``k > 1``."""
    model = _PersonStub().fit(X, y)
    base, both, codes, codes_both, y_both = _with_a_person(model, X, y, groups, k, right, 400)

    def utility(model, X_, y_):
        return bounded_utilities(model, X_, y_, None)

    shares, shares_both = person_shares(codes), person_shares(codes_both)
    f = trial_sum(utility, model, X[base], y[base], shares)
    f2 = trial_sum(utility, model, X[both], y_both, shares_both)
    mean_added = np.mean(model.predict(X[both[len(base):]]) == y_both[len(base):])
    assert f2 - f == pytest.approx(mean_added, abs=1e-12)
    assert 0 <= f2 - f <= 1 + 1e-12
    rows = trial_sum(utility, model, X[both], y_both) - trial_sum(utility, model, X[base],
                                                                  y[base])
    if right:
        assert rows == pytest.approx(k)
    count, count2 = shares.sum(), shares_both.sum()
    assert count2 - count == pytest.approx(1.0, abs=1e-12)
    assert count == pytest.approx(len(np.unique(groups[base])))
    e = 0.2
    law = stats.laplace(scale=1 / e)
    for value in np.linspace(-40, 240, 29):
        assert abs(law.logpdf(value - f) - law.logpdf(value - f2)) <= e + 1e-9
        assert abs(law.logpdf(value - count) - law.logpdf(value - count2)) <= e + 1e-9


# -- a black-box audit of the choice on person-level neighbours ----------------------------

class _Stub(ObjPertLogisticRegression):
    """A private estimator whose model ignores the rows (trivially private): the audit
    measures the selection alone."""

    def fit(self, X, y, groups=None):
        self.classes_ = np.unique(y)
        self.coef_, self.intercept_ = np.zeros((1, X.shape[1])), np.zeros(1)
        self._record_spend(self.epsilon, 0.0, "add_remove")
        if groups is not None:
            self.neighboring_ = "add_remove_person"
        return self


def _label_utility(model, X_, y_):
    # C=1 scores the rows labelled 1, C=0.1 those labelled 0
    return (np.asarray(y_) == (1 if model.C == 1.0 else 0)).astype(float)


def _audit_choice(n_runs, rows_in_canary=30):
    from skdp.audit import audit_statistics

    X0, y0 = np.zeros((20, 2)), np.repeat([0, 1], 10)
    g0 = np.arange(20)
    # the canary: one person of many rows, all labelled 1
    X1 = np.vstack([X0, np.zeros((rows_in_canary, 2))])
    y1, g1 = np.r_[y0, np.ones(rows_in_canary, int)], np.r_[g0, [20] * rows_in_canary]

    def chose_c1(X_, y_, g_, seed):
        search = PrivateGridSearchCV(_Stub(), {"C": [0.1, 1.0]}, epsilon=0.5,
                                     stopping="geometric", score_share=0.9,
                                     scoring=_label_utility, random_state=seed)
        return float(search.fit(X_, y_, groups=g_).best_params_["C"] == 1.0)

    with_canary = [chose_c1(X1, y1, g1, seed) for seed in range(n_runs)]
    without = [chose_c1(X0, y0, g0, seed) for seed in range(n_runs, 2 * n_runs)]
    return audit_statistics(with_canary, without, epsilon=0.5)


def test_black_box_audit_of_the_choice_on_a_person_and_a_planted_row_score(monkeypatch):
    """The choice between two candidates, on neighbours that differ by one person of 30
    rows: within the claimed 0.5; with the score planted as the row sum (the person's
    30 rows move it by 30) the audit contradicts the claim."""
    assert not _audit_choice(600).contradicted
    original = _private_search.trial_sum
    monkeypatch.setattr(_private_search, "trial_sum",
                        lambda utility, model, X_, y_, shares=None:
                        original(utility, model, X_, y_))
    planted = _audit_choice(600)
    assert planted.contradicted and planted.epsilon_lower_bound > 0.5


# -- singletons are the row-level search -----------------------------------------------------

@pytest.mark.parametrize("estimator, delta", [
    (_PersonStub(), 0.0),
    (OutputPertSVM(data_norm=1.0), 0.0),
    (OutputPertSVM(data_norm=1.0, delta=1e-5), 1e-5),
])
@pytest.mark.parametrize("validation_fraction", [None, 0.3])
def test_every_person_a_single_row_is_the_row_level_search(estimator, delta,
                                                           validation_fraction):
    """Singleton persons (labels sorting as the rows): the same coins, count, scores and
    candidates as the search over rows, exactly; only the unit in the report differs."""
    def run(**fit_params):
        return PrivateGridSearchCV(estimator, {"C": [0.1, 1.0, 10.0]}, delta=delta,
                                   validation_fraction=validation_fraction,
                                   random_state=3).fit(X, y, **fit_params)

    rows, persons = run(), run(groups=np.arange(len(y)))
    assert persons.best_params_ == rows.best_params_
    assert persons.best_score_ == rows.best_score_
    assert persons.privacy_report_["transcript"] == rows.privacy_report_["transcript"]
    assert persons.privacy_report_["a_priori"] == rows.privacy_report_["a_priori"]
    np.testing.assert_array_equal(persons.best_estimator_.coef_, rows.best_estimator_.coef_)
    assert persons.best_estimator_.neighboring_ == "add_remove_person"
    assert (rows.privacy_report_["unit"], persons.privacy_report_["unit"]) == ("row", "person")


# -- the candidates receive their part's groups ---------------------------------------------

def test_candidates_receive_all_the_groups_without_a_split():
    _PersonStub.received = []
    search = PrivateGridSearchCV(_PersonStub(), GRID, random_state=0).fit(X, y, groups=groups)
    assert len(_PersonStub.received) >= 2
    for received in _PersonStub.received:
        np.testing.assert_array_equal(received, groups)
    assert search.best_estimator_.neighboring_ == "add_remove_person"
    _PersonStub.received = []
    PrivateGridSearchCV(_PersonStub(), GRID, random_state=0).fit(X, y)
    assert _PersonStub.received and all(r is None for r in _PersonStub.received)


def test_a_pipeline_passes_the_groups_to_its_private_step():
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import Normalizer

    _PersonStub.received = []
    pipe = make_pipeline(Normalizer(), _PersonStub())
    search = PrivateRandomizedSearchCV(pipe, {"_personstub__C": stats.loguniform(0.01, 10)},
                                       n_iter=4, validation_fraction=0.3, random_state=2)
    search.fit(X, y, groups=groups)
    in_validation = _person_coins(2, CODES, 0.3)
    assert _PersonStub.received
    for received in _PersonStub.received:
        np.testing.assert_array_equal(received, groups[~in_validation])


def test_a_candidate_without_a_person_guarantee_is_caught():
    """An estimator that takes groups but certifies rows only stops the search at its
    first candidate."""

    class _Ignores(ObjPertLogisticRegression):
        def fit(self, X, y, groups=None):
            return super().fit(X, y)

    with pytest.raises(RuntimeError, match="add_remove_person"):
        PrivateGridSearchCV(_Ignores(), GRID, random_state=0).fit(X, y, groups=groups)


# -- DP-SGD and Gaussian candidates over persons ---------------------------------------------

def test_dpsgd_person_fit_has_the_row_level_renyi_curve():
    """A Poisson DP-SGD fit with groups samples persons at ``q`` with the same steps,
    multiplier and count noise as without: its RDP (computed independently from its
    fitted mechanism) is the row-level formula the search charges."""
    est = DPSGDClassifier(epsilon=1.0, delta=1e-5, sample_rate=0.1, epochs=1,
                          data_norm=1.0, random_state=0)
    persons = est.fit(X, y, groups=groups)
    assert persons.neighboring_ == "add_remove_person"
    fitted = dpsgd_rdp(persons.noise_multiplier_, persons.sample_rate_, persons.n_steps_,
                       persons.count_noise_std_)
    np.testing.assert_allclose(candidate_cost(est, renyi=True), fitted, rtol=1e-12)
    rows = DPSGDClassifier(**est.get_params()).fit(X, y)
    assert (rows.noise_multiplier_, rows.n_steps_, rows.count_noise_std_) == (
        persons.noise_multiplier_, persons.n_steps_, persons.count_noise_std_)


def test_dpsgd_search_over_persons():
    search = PrivateGridSearchCV(
        DPSGDClassifier(epochs=1, sample_rate=0.2, data_norm=1.0),
        {"learning_rate": [0.1, 0.5]}, epsilon=2.0, delta=1e-5, mean_trials=3,
        random_state=0).fit(X, y, groups=groups)
    assert search.privacy_report_["a_priori"]["epsilon"] <= 2.0
    assert search.best_estimator_.neighboring_ == "add_remove_person"
    assert search.privacy_report_["neighboring"] == "add_remove_person"


# -- the report ------------------------------------------------------------------------------

def test_the_report_says_the_unit_is_one_person():
    search = PrivateGridSearchCV(_PersonStub(), GRID, validation_fraction=0.3,
                                 random_state=0).fit(X, y, groups=groups)
    report = search.privacy_report_
    assert report["neighboring"] == "add_remove_person" and report["unit"] == "person"
    assert "any one person (all of their rows)" in report["statement"]
    assert "one independent coin per person" in report["statement"]
    rows = PrivateGridSearchCV(_PersonStub(), GRID, random_state=0).fit(X, y)
    assert rows.privacy_report_["neighboring"] == "add_remove"
    assert rows.privacy_report_["unit"] == "row"
    assert "all of their rows" not in rows.privacy_report_["statement"]
    # at row level the unit is a record, and "person" is kept for groups
    assert "any one record (row)" in rows.privacy_report_["statement"]
    assert "person" not in rows.privacy_report_["statement"]


# -- refusals, before any data is read -------------------------------------------------------

@pytest.mark.parametrize("search, match", [
    (PrivateGridSearchCV(_RowsOnly(), GRID), "does not take groups"),
    (PrivateGridSearchCV(_ReleasesRowsOnly(), GRID), "does not take groups"),
    (PrivateGridSearchCV(_PersonStub(neighboring="replace"), GRID),
     "adding or removing one person"),
    (PrivateGridSearchCV(_PersonStub(), {"neighboring": ["add_remove", "replace"]}),
     "adding or removing one person"),
    (PrivateGridSearchCV(_PersonStub(data_norm="private"), GRID), "data_norm"),
    (PrivateGridSearchCV(_PersonStub(), {"data_norm": [1.0, "private"]}), "data_norm"),
    (PrivateRandomizedSearchCV(_PersonStub(), {"data_norm": [1.0, "private"]}), "data_norm"),
    (PrivateGridSearchCV(ObjPertLogisticRegression(delta=1e-6, data_norm=1.0), GRID,
                         delta=1e-5), "no Renyi curve"),
    (PrivateGridSearchCV(ObjPertLogisticRegression(data_norm=1.0),
                         {"delta": [0.0, 1e-6]}, delta=1e-5), "no Renyi curve"),
])
def test_unsupported_groups_are_refused_before_any_data_is_read(monkeypatch, search, match):
    monkeypatch.setattr(_private_search, "validate_private_input",
                        lambda *a: pytest.fail("the data were read"))
    monkeypatch.setattr(_private_search, "coin_split", lambda *a: pytest.fail("split"))
    monkeypatch.setattr(_private_search, "person_coin_split",
                        lambda *a: pytest.fail("split"))
    monkeypatch.setattr(_SelectionStreams, "noise", lambda self: pytest.fail("noise drawn"))
    with pytest.raises(ValueError, match=match):
        search.fit(X, y, groups=groups)


def test_gaussian_objpert_is_still_searched_over_rows():
    """The refusal is for persons only: the same search over rows runs."""
    search = PrivateGridSearchCV(ObjPertLogisticRegression(delta=1e-6, data_norm=1.0),
                                 {"C": [0.1, 1.0]}, epsilon=2.0, delta=1e-5, mean_trials=3,
                                 random_state=0).fit(X, y)
    assert search.best_estimator_.neighboring_ == "add_remove"


@pytest.mark.parametrize("bad", [groups[:-1], np.r_[groups[:-1], [None]]])
def test_malformed_groups_are_refused_before_any_noise(monkeypatch, bad):
    monkeypatch.setattr(_SelectionStreams, "noise", lambda self: pytest.fail("noise drawn"))
    with pytest.raises(ValueError, match="groups"):
        PrivateGridSearchCV(_PersonStub(), GRID, random_state=0).fit(X, y, groups=bad)


@pytest.mark.parametrize("estimator, delta", [
    (ObjPertLogisticRegression(data_norm=1.0), 0.0),
    (OutputPertSVM(data_norm=1.0), 0.0),
    (OutputPertSVM(data_norm=1.0, delta=1e-6), 1e-5),
])
def test_real_candidates_certify_the_planned_epsilon_per_person(estimator, delta):
    """With real person-level estimators, the released candidate certifies add/remove-
    person neighbours at exactly the plan's candidate epsilon (what the plan charged)."""
    search = PrivateGridSearchCV(estimator, {"C": [0.1, 1.0]}, delta=delta,
                                 validation_fraction=0.3, random_state=0)
    search.fit(X, y, groups=groups)
    model = search.best_estimator_
    assert model.neighboring_ == "add_remove_person"
    assert model.epsilon_spent_ == pytest.approx(search.plan().candidate_epsilon, rel=1e-12)
    assert model.delta_spent_ == estimator.delta
    assert search.privacy_report_["a_priori"]["epsilon"] <= 1.0 + 1e-12
