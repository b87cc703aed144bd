import numpy as np
import pytest
from sklearn.datasets import make_classification, make_regression
from sklearn.exceptions import FitFailedWarning
from sklearn.model_selection import GridSearchCV, RandomizedSearchCV

from skdp import ObjPertLogisticRegression
from skdp.model_selection import privacy_cost_of_search
from skdp.research import ResearchNAPPLasso

X, y = make_classification(n_samples=300, n_features=4, random_state=0)


def test_grid_search_cost_is_the_hand_composition():
    grid = GridSearchCV(ObjPertLogisticRegression(delta=1e-6),
                        {"epsilon": [0.5, 2.0], "C": [0.1, 1.0]}, cv=4).fit(X, y)
    report = privacy_cost_of_search(grid)
    best = grid.best_params_["epsilon"]
    # 2 epsilons x 2 C values x 4 folds, then the refit
    assert report["n_fits"] == 17
    assert report["total_epsilon"] == pytest.approx(2 * 4 * (0.5 + 2.0) + best)
    assert report["total_delta"] == pytest.approx(17 * 1e-6)
    assert "data-dependent" in report["statement"]
    assert report["composition"].startswith("basic sequential composition")


def test_epsilon_outside_the_grid_comes_from_the_base_estimator():
    search = RandomizedSearchCV(ObjPertLogisticRegression(epsilon=0.25),
                                {"C": [0.1, 1.0, 10.0]}, n_iter=2, cv=3, refit=False,
                                random_state=0).fit(X, y)
    assert privacy_cost_of_search(search)["total_epsilon"] == pytest.approx(2 * 3 * 0.25)


def test_shared_seed_cancels_the_noise_so_the_search_is_unbounded():
    """Fits that share a seed share their noise (next test), so their spends do not
    compose: a search whose fits share a seed must not report a finite total."""
    seeded = GridSearchCV(ObjPertLogisticRegression(random_state=0, C=0.1),
                          {"epsilon": [0.5, 1.0]}, cv=3).fit(X, y)
    report = privacy_cost_of_search(seeded)
    assert report["total_epsilon"] == np.inf
    assert "share an integer random_state" in report["composition"]
    generator = GridSearchCV(ObjPertLogisticRegression(random_state=np.random.default_rng(0)),
                             {"epsilon": [0.5, 1.0]}, cv=3).fit(X, y)
    assert privacy_cost_of_search(generator)["total_epsilon"] == np.inf


def test_shared_seed_really_shares_the_noise():
    """The premise of the test above, shown on two released models: with one seed the
    noise directions coincide, and the noise-free model is a combination of the two."""
    from skdp.solvers import glm_gradient
    from skdp.losses import LogisticLoss

    fits = [ObjPertLogisticRegression(epsilon=e, C=0.01, random_state=0) for e in (2.0, 4.0)]
    solutions = [f._releases(X, y)[0] for f in fits]
    noises = [s.noise for s in solutions]
    assert solutions[0].calibration.extra_ridge == solutions[1].calibration.extra_ridge == 0
    np.testing.assert_allclose(noises[0] / np.linalg.norm(noises[0]),
                               noises[1] / np.linalg.norm(noises[1]), atol=1e-12)
    # the implied noise of each released minimiser, recovered from the data: an attacker
    # who knows all rows but one learns the last row's gradient from it
    recovered = -glm_gradient(solutions[0].minimiser, solutions[0].X, solutions[0].y,
                              LogisticLoss(), 0.01, 1.0, np.zeros(len(noises[0])))
    np.testing.assert_allclose(recovered, noises[0], atol=1e-7)


def test_list_of_fitted_estimators():
    fitted = [ObjPertLogisticRegression(epsilon=e).fit(X, y) for e in (0.1, 0.4, np.inf)]
    assert privacy_cost_of_search(fitted[:2])["total_epsilon"] == pytest.approx(0.5)
    assert privacy_cost_of_search(fitted)["total_epsilon"] == np.inf
    seeded = [ObjPertLogisticRegression(epsilon=e, random_state=0).fit(X, y)
              for e in (0.5, 1.0)]
    report = privacy_cost_of_search(seeded)
    assert report["total_epsilon"] == np.inf and "share" in report["composition"]
    distinct = [ObjPertLogisticRegression(epsilon=0.5, random_state=s).fit(X, y)
                for s in (1, 2)]
    assert privacy_cost_of_search(distinct)["total_epsilon"] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="not a fitted skdp estimator"):
        privacy_cost_of_search([ObjPertLogisticRegression()])


@pytest.mark.filterwarnings("ignore::skdp.PrivacyLeakWarning")
def test_research_mode_is_reported_unbounded():
    Xr, yr = make_regression(n_samples=120, n_features=3, noise=0.5, random_state=0)
    Xr /= np.linalg.norm(Xr, axis=1).max()
    yr = np.clip(yr / np.abs(yr).max(), -1, 1)
    research = ResearchNAPPLasso(research_mode="moor", y_bound=1.0, coef_bound=5.0)
    assert research._claimed_spend() == (np.inf, 0.0)
    grid = GridSearchCV(research, {"alpha": [0.5, 1.0]}, cv=2, scoring="r2").fit(Xr, yr)
    report = privacy_cost_of_search(grid)
    assert report["total_epsilon"] == np.inf and "research mode" in report["composition"]
    fitted = research.fit(Xr, yr)
    assert fitted.epsilon_spent_ == np.inf
    assert privacy_cost_of_search([fitted])["total_epsilon"] == np.inf


def test_failed_fold_fits_are_reported_unbounded():
    """A fit that raised (here: the solver budget is one iteration) revealed that it
    failed: the search's total is unbounded, not a sum over the successful fits."""
    grid = GridSearchCV(ObjPertLogisticRegression(C=100.0), {"max_iter": [1, 100]}, cv=2,
                        refit=False, error_score=np.nan)
    with pytest.warns(FitFailedWarning):
        grid.fit(X, y)
    report = privacy_cost_of_search(grid)
    assert report["total_epsilon"] == np.inf
    failed = [f["purpose"].endswith("(failed)") for f in report["fits"]]
    assert failed == [True, True, False, False]


def _public_pipeline(**params):
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import Normalizer

    from skdp.preprocessing import Clipper

    return make_pipeline(Clipper(-3.0, 3.0), Normalizer(),
                         ObjPertLogisticRegression(**params))


def test_search_over_a_pipeline_of_public_steps_costs_its_private_estimator():
    grid = GridSearchCV(_public_pipeline(delta=1e-6),
                        {"objpertlogisticregression__epsilon": [0.5, 2.0]}, cv=3).fit(X, y)
    report = privacy_cost_of_search(grid)
    best = grid.best_params_["objpertlogisticregression__epsilon"]
    assert report["n_fits"] == 7
    assert report["total_epsilon"] == pytest.approx(3 * (0.5 + 2.0) + best)
    assert report["total_delta"] == pytest.approx(7 * 1e-6)
    assert report["composition"].startswith("basic sequential composition")


def test_search_over_the_user_guide_column_transformer():
    """Declared categories and declared bounds, as the user guide recommends."""
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    from skdp.preprocessing import BoundedScaler

    rng = np.random.default_rng(0)
    rows = np.empty((120, 2), dtype=object)
    rows[:, 0] = rng.choice(["a", "b"], 120)
    rows[:, 1] = rng.uniform(0, 90, 120)
    labels = (rows[:, 0] == "a").astype(int)
    features = ColumnTransformer([("cat", OneHotEncoder(categories=[["a", "b"]]), [0]),
                                  ("num", BoundedScaler(0, 90), [1])])
    pipe = make_pipeline(features, ObjPertLogisticRegression(epsilon=0.25, data_norm=2.0))
    grid = GridSearchCV(pipe, {"objpertlogisticregression__C": [0.1, 1.0]}, cv=2).fit(
        rows, labels)
    assert privacy_cost_of_search(grid)["total_epsilon"] == pytest.approx(5 * 0.25)


def test_search_over_a_pipeline_with_a_leaky_step_is_refused():
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer, StandardScaler, scale

    for leaky in (StandardScaler(), FunctionTransformer(scale)):
        grid = GridSearchCV(make_pipeline(leaky, ObjPertLogisticRegression()),
                            {"objpertlogisticregression__C": [0.1, 1.0]}, cv=2).fit(X, y)
        with pytest.raises(ValueError, match=r"Pipeline step '\w+' \(\w+\) would be fitted "
                                             r"on the private rows.*BoundedScaler"):
            privacy_cost_of_search(grid)


def test_a_leaky_candidate_step_is_refused():
    """Each candidate's Pipeline is checked: a grid over the step itself is too."""
    from sklearn.preprocessing import MinMaxScaler

    from skdp.preprocessing import BoundedScaler

    grid = GridSearchCV(_public_pipeline(),
                        {"clipper": [BoundedScaler(-3.0, 3.0), MinMaxScaler()]}, cv=2,
                        refit=False).fit(X, y)
    with pytest.raises(ValueError, match=r"Pipeline step 'clipper' \(MinMaxScaler\)"):
        privacy_cost_of_search(grid)


def test_the_seed_of_the_private_step_is_the_one_that_counts():
    grid = GridSearchCV(_public_pipeline(random_state=0),
                        {"objpertlogisticregression__C": [0.1, 1.0]}, cv=2).fit(X, y)
    report = privacy_cost_of_search(grid)
    assert report["total_epsilon"] == np.inf and "share" in report["composition"]


def test_a_pipeline_without_a_private_estimator_is_refused():
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import Normalizer

    grid = GridSearchCV(make_pipeline(Normalizer(), LogisticRegression()),
                        {"logisticregression__C": [0.1, 1.0]}, cv=2).fit(X, y)
    with pytest.raises(ValueError, match="not a private estimator"):
        privacy_cost_of_search(grid)


def test_list_of_fitted_pipelines():
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    fitted = [_public_pipeline(epsilon=e).fit(X, y) for e in (0.1, 0.4)]
    assert privacy_cost_of_search(fitted)["total_epsilon"] == pytest.approx(0.5)
    leaky = make_pipeline(StandardScaler(), ObjPertLogisticRegression()).fit(X, y)
    with pytest.raises(ValueError, match=r"\(StandardScaler\) would be fitted"):
        privacy_cost_of_search([leaky])
