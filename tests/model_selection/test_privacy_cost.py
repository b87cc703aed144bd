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


# -- cross_validate results -------------------------------------------------------------------

def test_cross_validate_result_is_n_splits_fits():
    from sklearn.model_selection import cross_validate

    result = cross_validate(ObjPertLogisticRegression(epsilon=0.3, delta=1e-6), X, y, cv=4,
                            return_estimator=True)
    report = privacy_cost_of_search(result)
    assert report["n_fits"] == 4
    assert report["basic_epsilon"] == pytest.approx(4 * 0.3)
    # Gaussian objective perturbation's Renyi curves compose far below the basic sum
    assert report["total_epsilon"] == report["renyi_epsilon"] < 0.5
    assert report["total_delta"] == pytest.approx(4 * 1e-6)
    assert report["per_row_epsilon"] is None and "not declared public" in report["per_row"]
    pipelines = cross_validate(_public_pipeline(epsilon=0.2), X, y, cv=3,
                               return_estimator=True)
    assert privacy_cost_of_search(pipelines)["total_epsilon"] == pytest.approx(3 * 0.2)


def test_cross_validate_without_estimators_is_refused():
    from sklearn.model_selection import cross_validate

    result = cross_validate(ObjPertLogisticRegression(epsilon=0.3), X, y, cv=3)
    with pytest.raises(ValueError, match=r"return_estimator=True.*return_indices=True"):
        privacy_cost_of_search(result)


def test_cross_validate_of_a_search_counts_each_fitted_search():
    from sklearn.model_selection import cross_validate

    inner = GridSearchCV(ObjPertLogisticRegression(epsilon=0.5), {"C": [0.1, 1.0]}, cv=2)
    result = cross_validate(inner, X, y, cv=3, return_estimator=True)
    report = privacy_cost_of_search(result)
    # each outer fold: 2 candidates x 2 inner folds + the inner refit, at 0.5
    assert report["n_fits"] == 3 * 5
    assert report["total_epsilon"] == pytest.approx(3 * 5 * 0.5)


# -- nested searches --------------------------------------------------------------------------

def test_nested_search_is_the_hand_composition():
    inner = GridSearchCV(ObjPertLogisticRegression(), {"C": [0.1, 1.0]}, cv=2,
                         error_score="raise")
    outer = GridSearchCV(inner, {"estimator__epsilon": [0.25, 1.0]}, cv=3).fit(X, y)
    report = privacy_cost_of_search(outer)
    best = outer.best_params_["estimator__epsilon"]
    # an inner search at epsilon e: 2 candidates x 2 folds + refit = 5 fits at e;
    # the outer: 3 folds x (both epsilons), then the refitted inner search at the best
    assert report["n_fits"] == 3 * 2 * 5 + 5
    assert report["total_epsilon"] == pytest.approx(3 * 5 * (0.25 + 1.0) + 5 * best)
    assert report["composition"].startswith("basic sequential composition")


def test_nested_refit_counts_the_costliest_inner_candidate():
    """The inner refit's candidate is chosen by the data: counted at the largest."""
    inner = GridSearchCV(ObjPertLogisticRegression(), {"epsilon": [0.5, 2.0]}, cv=2,
                         error_score="raise")
    outer = GridSearchCV(inner, {"estimator__C": [0.1, 1.0]}, cv=3).fit(X, y)
    report = privacy_cost_of_search(outer)
    inner_planned = 2 * (0.5 + 2.0) + 2.0
    inner_fitted = 2 * (0.5 + 2.0) + outer.best_estimator_.best_params_["epsilon"]
    assert report["total_epsilon"] == pytest.approx(2 * 3 * inner_planned + inner_fitted)


def test_nested_search_whose_inner_fits_are_unknown_is_unbounded():
    from scipy.stats import uniform

    hidden = GridSearchCV(GridSearchCV(ObjPertLogisticRegression(), {"C": [0.1, 1.0]}, cv=2),
                          {"estimator__epsilon": [0.5, 1.0]}, cv=2).fit(X, y)
    report = privacy_cost_of_search(hidden)
    assert report["total_epsilon"] == np.inf
    assert any("error_score='raise'" in f["purpose"] for f in report["fits"])
    drawn = RandomizedSearchCV(ObjPertLogisticRegression(), {"epsilon": uniform(0.1, 1)},
                               n_iter=2, cv=2, error_score="raise")
    report = privacy_cost_of_search(GridSearchCV(drawn, {"estimator__C": [1.0]}, cv=2,
                                                 refit=False).fit(X, y))
    assert report["total_epsilon"] == np.inf
    assert any("unseeded" in f["purpose"] for f in report["fits"])
    seeded = RandomizedSearchCV(ObjPertLogisticRegression(), {"epsilon": uniform(0.1, 1)},
                                n_iter=2, cv=2, error_score="raise", random_state=0)
    outer = GridSearchCV(seeded, {"estimator__C": [1.0]}, cv=2, refit=False).fit(X, y)
    drawn_epsilons = [p["epsilon"] for p in
                      __import__("sklearn.model_selection", fromlist=["ParameterSampler"])
                      .ParameterSampler({"epsilon": uniform(0.1, 1)}, 2, random_state=0)]
    expected = 2 * (2 * sum(drawn_epsilons) + max(drawn_epsilons))
    assert privacy_cost_of_search(outer)["total_epsilon"] == pytest.approx(expected)


def test_shared_seed_in_a_nested_search_or_a_cross_validation_is_unbounded():
    from sklearn.model_selection import cross_validate

    inner = GridSearchCV(ObjPertLogisticRegression(random_state=0), {"C": [0.1, 1.0]}, cv=2,
                         error_score="raise")
    outer = GridSearchCV(inner, {"estimator__epsilon": [0.5, 1.0]}, cv=2).fit(X, y)
    report = privacy_cost_of_search(outer)
    assert report["total_epsilon"] == np.inf and "share" in report["composition"]
    result = cross_validate(ObjPertLogisticRegression(random_state=0), X, y, cv=3,
                            return_estimator=True)
    report = privacy_cost_of_search(result)
    assert report["total_epsilon"] == np.inf and "share" in report["composition"]
    # distinct seeds within each object, one shared across the list
    one = ObjPertLogisticRegression(epsilon=0.5, random_state=7).fit(X, y)
    other = ObjPertLogisticRegression(epsilon=0.5, random_state=7).fit(X, y)
    assert privacy_cost_of_search([[one], other])["total_epsilon"] == np.inf


def test_list_mixing_searches_cross_validations_and_estimators():
    from sklearn.model_selection import cross_validate

    grid = GridSearchCV(ObjPertLogisticRegression(epsilon=0.5), {"C": [0.1, 1.0]},
                        cv=3).fit(X, y)
    result = cross_validate(ObjPertLogisticRegression(epsilon=0.2), X, y, cv=2,
                            return_estimator=True)
    fitted = _public_pipeline(epsilon=0.1).fit(X, y)
    report = privacy_cost_of_search([grid, result, fitted])
    assert report["n_fits"] == 7 + 2 + 1
    assert report["total_epsilon"] == pytest.approx(7 * 0.5 + 2 * 0.2 + 0.1)


# -- per-row composition ----------------------------------------------------------------------

def _independent_row_count(folds, n_rows, per_fold_epsilon, refit_epsilon):
    """Per row: the folds whose training set holds it, counted from the indices."""
    counts = np.zeros(n_rows)
    for train, _ in folds:
        counts[np.asarray(train)] += 1
    return counts.max() * per_fold_epsilon + refit_epsilon


def test_per_row_on_a_public_fold_label():
    from sklearn.model_selection import PredefinedSplit

    folds = PredefinedSplit(np.arange(len(X)) % 3)
    grid = GridSearchCV(ObjPertLogisticRegression(epsilon=0.5), {"C": [0.1, 1.0, 10.0]},
                        cv=folds).fit(X, y)
    report = privacy_cost_of_search(grid)
    assert report["total_epsilon"] == pytest.approx(3 * 3 * 0.5 + 0.5)
    assert report["per_row_epsilon"] == pytest.approx(2 * 3 * 0.5 + 0.5)
    assert report["per_row_epsilon"] == pytest.approx(
        _independent_row_count(list(folds.split()), len(X), 3 * 0.5, 0.5))
    assert report["per_row_delta"] == 0.0
    assert "public" in report["per_row"]


def test_per_row_on_explicit_index_pairs_counts_rows_in_every_fold():
    """Rows 0-59 are in no test fold, so in every training fold: they pay the basic sum."""
    rest = np.arange(60, len(X))
    pairs = [(np.concatenate([np.arange(60), np.delete(rest, np.s_[k::3])]), rest[k::3])
             for k in range(3)]
    grid = GridSearchCV(ObjPertLogisticRegression(epsilon=0.5, delta=1e-6), {"C": [0.1, 1.0]},
                        cv=pairs).fit(X, y)
    report = privacy_cost_of_search(grid)
    assert report["per_row_epsilon"] == pytest.approx(report["basic_epsilon"])
    assert report["per_row_epsilon"] == pytest.approx(
        _independent_row_count(pairs, len(X), 2 * 0.5, 0.5))
    assert report["per_row_delta"] == pytest.approx(7 * 1e-6)
    # rows 0-59 are in the second training fold only, the others in the first only
    unbalanced = [(np.arange(60, len(X)), np.arange(60)), (np.arange(60), np.arange(60, 120))]
    grid = GridSearchCV(ObjPertLogisticRegression(epsilon=0.5), {"C": [0.1, 1.0]},
                        cv=unbalanced).fit(X, y)
    report = privacy_cost_of_search(grid)
    assert report["per_row_epsilon"] == pytest.approx(
        _independent_row_count(unbalanced, len(X), 2 * 0.5, 0.5))
    assert report["per_row_epsilon"] == pytest.approx(2 * 0.5 + 0.5)
    assert report["total_epsilon"] == pytest.approx(2 * 2 * 0.5 + 0.5)


def test_splitters_that_assign_folds_from_the_data_get_no_per_row_figure():
    from sklearn.model_selection import KFold, StratifiedKFold

    for cv in (3, KFold(3), StratifiedKFold(3, shuffle=True, random_state=0)):
        grid = GridSearchCV(ObjPertLogisticRegression(epsilon=0.5), {"C": [0.1, 1.0]},
                            cv=cv).fit(X, y)
        report = privacy_cost_of_search(grid)
        assert report["per_row_epsilon"] is None and report["per_row_delta"] is None
        assert "not declared public" in report["per_row"]


def test_per_row_of_cross_validate_with_declared_folds():
    from sklearn.model_selection import PredefinedSplit, cross_validate

    folds = PredefinedSplit(np.arange(len(X)) % 3)
    result = cross_validate(ObjPertLogisticRegression(epsilon=0.5), X, y, cv=folds,
                            return_estimator=True, return_indices=True)
    report = privacy_cost_of_search(result, cv=folds)
    assert report["total_epsilon"] == pytest.approx(1.5)
    assert report["per_row_epsilon"] == pytest.approx(
        _independent_row_count(list(folds.split()), len(X), 0.5, 0.0))
    assert privacy_cost_of_search(result)["per_row_epsilon"] is None  # not declared
    with pytest.raises(ValueError, match="not those of the cv given"):
        privacy_cost_of_search(result, cv=PredefinedSplit(np.arange(len(X)) % 3 // 2 * 2))
    # in a list, the items' per-row figures add (an item without folds adds its total)
    fitted = ObjPertLogisticRegression(epsilon=0.25).fit(X, y)
    report = privacy_cost_of_search([result, fitted], cv=folds)
    assert report["per_row_epsilon"] == pytest.approx(1.0 + 0.25)
    seeded = cross_validate(ObjPertLogisticRegression(epsilon=0.5, random_state=0), X, y,
                            cv=folds, return_estimator=True, return_indices=True)
    assert privacy_cost_of_search(seeded, cv=folds)["per_row_epsilon"] == np.inf


def test_per_row_of_a_nested_search_uses_the_outer_folds():
    from sklearn.model_selection import PredefinedSplit

    folds = PredefinedSplit(np.arange(len(X)) % 3)
    inner = GridSearchCV(ObjPertLogisticRegression(epsilon=0.5), {"C": [0.1, 1.0]}, cv=3,
                         error_score="raise")
    outer = GridSearchCV(inner, {"estimator__max_iter": [100]}, cv=folds).fit(X, y)
    report = privacy_cost_of_search(outer)
    # an inner search: 2 x 3 + 1 fits at 0.5; its folds are not the outer ones, so the
    # refitted inner search counts whole for every row
    assert report["total_epsilon"] == pytest.approx(4 * 7 * 0.5)
    assert report["per_row_epsilon"] == pytest.approx(3 * 7 * 0.5)


# -- Renyi composition ------------------------------------------------------------------------

def _dpsgd(**params):
    from skdp import DPSGDClassifier

    return DPSGDClassifier(epochs=2, sample_rate=0.2, delta=1e-6, **params)


def test_renyi_composition_of_a_dpsgd_search():
    from skdp.accounting._rdp import dpsgd_rdp, rdp_to_epsilon

    Xs, ys = make_classification(n_samples=200, n_features=4, random_state=0)
    grid = GridSearchCV(_dpsgd(), {"epsilon": [0.5, 1.0]}, cv=3).fit(Xs, ys)
    report = privacy_cost_of_search(grid)
    best = grid.best_params_["epsilon"]
    assert report["basic_epsilon"] == pytest.approx(3 * 1.5 + best)
    # independently: each rung's mechanism as a fit reports it, its curve, their sum
    curves = {}
    for e in (0.5, 1.0):
        fit = _dpsgd(epsilon=e).fit(Xs, ys)
        curves[e] = dpsgd_rdp(fit.noise_multiplier_, fit.sample_rate_, fit.n_steps_,
                              fit.count_noise_std_)
    total = 3 * (curves[0.5] + curves[1.0]) + curves[best]
    expected = rdp_to_epsilon(total, 7 * 1e-6)
    assert report["renyi_epsilon"] == pytest.approx(expected, rel=1e-9)
    assert report["renyi_delta"] == report["total_delta"] == pytest.approx(7e-6)
    assert report["renyi_epsilon"] < report["basic_epsilon"]
    assert report["total_epsilon"] == report["renyi_epsilon"]
    assert "Renyi" in report["composition"]


def test_renyi_composition_of_fitted_dpsgd_and_pure_fits():
    from skdp.accounting._rdp import ORDERS, dpsgd_rdp, rdp_to_epsilon

    dpsgd = [_dpsgd(epsilon=1.0).fit(X, y) for _ in range(3)]
    # small enough that its zCDP curve, not its epsilon, binds at the orders that count
    pure = ObjPertLogisticRegression(epsilon=0.05).fit(X, y)
    report = privacy_cost_of_search(dpsgd + [pure])
    curve = sum(dpsgd_rdp(f.noise_multiplier_, f.sample_rate_, f.n_steps_,
                          f.count_noise_std_) for f in dpsgd)
    curve = curve + np.minimum(0.05, ORDERS * 0.05**2 / 2)
    assert report["renyi_epsilon"] == pytest.approx(rdp_to_epsilon(curve, 3e-6), rel=1e-9)
    assert report["total_epsilon"] == min(report["renyi_epsilon"], report["basic_epsilon"])
    # all pure: no delta to convert at, so no Renyi figure
    assert privacy_cost_of_search([pure, pure])["renyi_epsilon"] is None
    # a Gaussian objective perturbation fit adds its own curve
    gaussian = ObjPertLogisticRegression(epsilon=0.5, delta=1e-6).fit(X, y)
    report = privacy_cost_of_search(dpsgd + [gaussian])
    mixed = curve - np.minimum(0.05, ORDERS * 0.05**2 / 2) + gaussian.renyi_curve()
    assert report["renyi_epsilon"] == pytest.approx(rdp_to_epsilon(mixed, 4e-6), rel=1e-9)
    # a replace-one fit states another relation: refused, never mixed into the sum
    gaussian = ObjPertLogisticRegression(epsilon=0.5, delta=1e-6,
                                         neighboring="replace").fit(X, y)
    with pytest.raises(ValueError, match="neighboring='replace'"):
        privacy_cost_of_search([pure, gaussian])
