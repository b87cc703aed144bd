import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose
from scipy import stats
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.multiclass import OneVsRestClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import Normalizer, OneHotEncoder

from skdp import ConvergenceError, DataNormWarning, ObjPertLogisticRegression
from skdp.solvers import glm_gradient, glm_hessian
from skdp.losses import HuberHingeLoss, LogisticLoss


def _sklearn_on_design(X, y, C, data_norm=1.0, scaling=1.0, multi=False):
    norms = np.linalg.norm(X, axis=1)
    Xc = X * np.minimum(1.0, data_norm / norms)[:, None]
    design = np.hstack([Xc, np.full((len(X), 1), scaling)])
    ref = LogisticRegression(C=C, fit_intercept=False, tol=1e-12, max_iter=10_000)
    if multi:
        ref = OneVsRestClassifier(ref)
    ref.fit(design, y)
    coefs = (np.vstack([e.coef_ for e in ref.estimators_]) if multi else ref.coef_)
    return coefs[:, :-1], coefs[:, -1] * scaling


@pytest.mark.parametrize("C", [0.1, 1.0, 10.0])
def test_infinite_epsilon_recovers_sklearn_on_augmented_clipped_design(seed, C):
    X, y = make_classification(n_samples=300, n_features=6, random_state=seed)
    coef, intercept = _sklearn_on_design(X, y, C, data_norm=2.0, scaling=1.5)
    ours = ObjPertLogisticRegression(epsilon=np.inf, C=C, data_norm=2.0,
                                     intercept_scaling=1.5).fit(X, y)
    assert_allclose(ours.coef_, coef, atol=1e-6)
    assert_allclose(ours.intercept_, intercept, atol=1e-6)


def test_infinite_epsilon_multiclass_is_one_vs_rest(seed):
    X, y = make_classification(n_samples=300, n_features=6, n_informative=4, n_classes=3,
                               random_state=seed)
    coef, intercept = _sklearn_on_design(X, y, 1.0, multi=True)
    ours = ObjPertLogisticRegression(epsilon=np.inf, multi_class="ovr").fit(X, y)
    assert ours.coef_.shape == (3, 6)
    assert_allclose(ours.coef_, coef, atol=1e-6)
    assert_allclose(ours.intercept_, intercept, atol=1e-6)


def test_no_intercept_matches_sklearn(unit_ball_classification):
    X, y = unit_ball_classification
    ref = LogisticRegression(C=3.0, fit_intercept=False, tol=1e-12, max_iter=10_000).fit(X, y)
    ours = ObjPertLogisticRegression(epsilon=np.inf, C=3.0, fit_intercept=False).fit(X, y)
    assert_allclose(ours.coef_, ref.coef_, atol=1e-6)
    assert_allclose(ours.intercept_, [0.0])


def test_same_seed_same_model_other_seed_other_model(unit_ball_classification):
    X, y = unit_ball_classification
    for delta in (0.0, 1e-5):
        a = ObjPertLogisticRegression(delta=delta, random_state=3).fit(X, y)
        b = ObjPertLogisticRegression(delta=delta, random_state=3).fit(X, y)
        c = ObjPertLogisticRegression(delta=delta, random_state=4).fit(X, y)
        assert_allclose(a.coef_, b.coef_, rtol=0, atol=0)
        assert not np.allclose(a.coef_, c.coef_)


def _implied_noise(solution):
    # stationarity of the perturbed objective: grad(C sum l + ridge/2 |theta|^2) + b = 0
    zero = np.zeros_like(solution.minimiser)
    return -glm_gradient(solution.minimiser, solution.X, solution.y, LogisticLoss(),
                         solution.C, solution.ridge, zero)


@pytest.mark.parametrize("neighboring, factor", [("add_remove", 1.0), ("replace", 2.0)])
def test_fitted_model_carries_the_calibrated_gamma_norm_noise(neighboring, factor):
    """End to end: the noise implied by the released solution has the spec's law."""
    X, y = make_classification(n_samples=40, n_features=3, n_informative=2, n_redundant=0,
                               random_state=0)
    C, eps, data_norm = 0.5, 2.0, 1.0
    eps_mech = 0.99 * eps  # the rest pays for the solver's cover
    r_eff = np.hypot(data_norm, 1.0)
    kappa = (2.0 if neighboring == "replace" else 1.0) * np.log1p(C * 0.25 * r_eff**2)
    assert eps_mech - kappa >= eps_mech / 2  # main branch: no extra ridge
    expected_scale = factor * C * r_eff / (eps_mech - kappa)
    norms = []
    for s in range(400):
        est = ObjPertLogisticRegression(epsilon=eps, C=C, neighboring=neighboring,
                                        random_state=s)
        (solution,) = est._releases(X, y)
        assert solution.calibration.extra_ridge == 0.0
        assert_allclose(_implied_noise(solution), solution.noise, atol=1e-7)
        norms.append(np.linalg.norm(solution.noise))
    law = stats.gamma(a=4, scale=expected_scale)
    assert stats.kstest(norms, law.cdf).pvalue > 1e-3


def test_gaussian_variant_noise_std():
    X, y = make_classification(n_samples=40, n_features=3, n_informative=2, n_redundant=0,
                               random_state=1)
    eps, delta, C = 1.0, 1e-5, 0.5
    # the mechanism's share: 99 % of epsilon, delta exp(-epsilon_cover / 2)
    eps_m, delta_m = 0.99 * eps, delta * np.exp(-0.005 * eps)
    zeta = C * np.sqrt(2.0)  # add/remove, logistic, data_norm = intercept_scaling = 1
    expected = zeta * np.sqrt(8 * np.log(2 / delta_m) + 4 * eps_m) / eps_m
    noises = []
    for s in range(300):
        (sol,) = ObjPertLogisticRegression(epsilon=eps, delta=delta, C=C,
                                           random_state=s)._releases(X, y)
        assert sol.calibration.extra_ridge == pytest.approx(2 * C * 0.25 * 2.0 / eps_m)
        noises.append(_implied_noise(sol))
    noises = np.array(noises)
    assert stats.kstest(noises.ravel() / expected, "norm").pvalue > 1e-3


def test_huber_uses_its_own_curvature():
    X, y = make_classification(n_samples=50, n_features=3, n_informative=2, n_redundant=0,
                               random_state=2)
    est = ObjPertLogisticRegression(loss="huber", huber_h=0.1, epsilon=1.0, delta=1e-5,
                                    C=1.0, random_state=0)
    (sol,) = est._releases(X, y)
    assert sol.calibration.extra_ridge == pytest.approx(2 * (1 / 0.2) * 2.0 / 0.99)
    assert not hasattr(est.fit(X, y), "predict_proba")
    assert HuberHingeLoss(h=0.1).smoothness == pytest.approx(5.0)


def test_multiclass_one_vs_rest_splits_the_budget():
    X, y = make_classification(n_samples=90, n_features=4, n_informative=3, n_redundant=0,
                               n_classes=3, random_state=0)
    est = ObjPertLogisticRegression(epsilon=3.0, delta=3e-5, multi_class="ovr", random_state=0)
    solutions = est._releases(X, y)
    single = ObjPertLogisticRegression(epsilon=1.0, delta=1e-5)
    (reference,) = single._releases(X, np.where(y == 0, 1, 0))
    for sol in solutions:
        assert sol.calibration.noise_scale == pytest.approx(reference.calibration.noise_scale)
    est.fit(X, y)
    assert est.epsilon_spent_ == 3.0 and est.delta_spent_ == 3e-5
    assert est.predict_proba(X).shape == (90, 3)
    assert_allclose(est.predict_proba(X).sum(axis=1), 1.0)


def test_certificate_holds_on_every_fit(seed):
    X, y = make_classification(n_samples=500, n_features=8, random_state=seed)
    for eps in (0.05, 1.0, 20.0):
        for loss in ("logistic", "huber"):
            est = ObjPertLogisticRegression(epsilon=eps, loss=loss, C=5.0, random_state=seed)
            (sol,) = est._releases(X, y)
            zero = np.zeros_like(sol.minimiser)
            loss_obj = est._make_loss()
            grad = glm_gradient(sol.minimiser, sol.X, sol.y, loss_obj, sol.C, sol.ridge, sol.noise)
            assert np.linalg.norm(grad) <= est.tol
            assert sol.converged
            del zero


def test_capped_iterations_raise_and_release_nothing(unit_ball_classification):
    X, y = unit_ball_classification
    est = ObjPertLogisticRegression(random_state=0).fit(X, y)      # a previous release
    before = dict(vars(est))
    with pytest.raises(ConvergenceError) as info:
        est.set_params(max_iter=1, C=100.0).fit(X, y)
    # nothing of the failed fit is kept: the previous release whole, the same objects
    assert vars(est).keys() == before.keys()
    assert all(vars(est)[k] is v for k, v in before.items() if k not in ("max_iter", "C"))
    assert not any(ch.isdigit() for ch in str(info.value).replace("tol=1e-08", "")
                   .replace("max_iter=1", "")), "the message holds a number"


def test_rows_inside_the_ball_are_untouched_and_long_rows_clipped(seed):
    X, y = make_classification(n_samples=200, n_features=4, random_state=seed)
    X /= np.linalg.norm(X, axis=1)[:, None]  # every row on the unit sphere
    a = ObjPertLogisticRegression(random_state=seed).fit(X, y)
    b = ObjPertLogisticRegression(random_state=seed).fit(5.0 * X, y)  # clipped back
    assert_allclose(a.coef_, b.coef_, atol=1e-10)
    assert_allclose(a.predict_proba(X), b.predict_proba(5.0 * X), atol=1e-10)


def test_row_permutation_with_same_seed_gives_same_model(seed):
    X, y = make_classification(n_samples=200, n_features=4, random_state=seed)
    perm = np.random.default_rng(seed).permutation(len(X))
    a = ObjPertLogisticRegression(random_state=seed).fit(X, y)
    b = ObjPertLogisticRegression(random_state=seed).fit(X[perm], y[perm])
    assert_allclose(a.coef_, b.coef_, atol=1e-8)


def test_fitted_estimator_keeps_no_noise_or_data(unit_ball_classification):
    X, y = unit_ball_classification
    est = ObjPertLogisticRegression(random_state=0).fit(X, y)
    fitted = {k for k in vars(est) if k.endswith("_") and not k.startswith("__")}
    assert fitted == {"coef_", "intercept_", "classes_", "n_features_in_", "C_", "data_norm_",
                      "data_norm_epsilon_", "epsilon_spent_", "delta_spent_", "neighboring_",
                      "weight_bound_", "noise_floor_"}
    assert not [k for k in vars(est) if k.startswith("_") and not k.startswith("__")]


def test_arbitrary_labels_and_probabilities(unit_ball_classification):
    X, y = unit_ball_classification
    labels = np.array(["no", "yes"])[y]
    est = ObjPertLogisticRegression(epsilon=np.inf).fit(X, labels)
    assert list(est.classes_) == ["no", "yes"]
    proba = est.predict_proba(X)
    assert_allclose(proba[:, 1], 1 / (1 + np.exp(-est.decision_function(X))))
    assert set(est.predict(X)) <= {"no", "yes"}
    assert_allclose(est.predict_log_proba(X), np.log(proba))


def test_pipeline_grid_search_cross_val_pickle_pandas():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    n = 400
    frame = pd.DataFrame({"colour": rng.choice(["red", "green", "blue"], n),
                          "size": rng.choice(["S", "M", "L"], n)})
    y = ((frame["colour"] == "red") | (frame["size"] == "L")).to_numpy().astype(int)
    pipe = make_pipeline(OneHotEncoder(), Normalizer(),
                         ObjPertLogisticRegression(epsilon=5.0, random_state=0))
    pipe.fit(frame, y)
    assert pipe.score(frame, y) > 0.7
    scores = cross_val_score(pipe, frame, y, cv=3)
    assert scores.shape == (3,)
    grid = GridSearchCV(ObjPertLogisticRegression(random_state=0),
                        {"epsilon": [0.5, 5.0], "C": [0.1, 10.0]}, cv=3)
    X = pd.DataFrame(Normalizer().fit_transform(rng.normal(size=(n, 3)) + y[:, None]),
                     columns=["a", "b", "c"])
    grid.fit(X, y)
    assert grid.best_params_["epsilon"] in (0.5, 5.0)
    assert list(grid.best_estimator_.feature_names_in_) == ["a", "b", "c"]
    restored = pickle.loads(pickle.dumps(grid.best_estimator_))
    assert_allclose(restored.decision_function(X), grid.best_estimator_.decision_function(X))


@pytest.mark.slow
def test_utility_improves_with_epsilon_on_average():
    X, y = make_classification(n_samples=400, n_features=5, random_state=0)
    X /= np.linalg.norm(X, axis=1).max()
    losses = []
    for eps in (0.1, 0.5, 2.0, 10.0):
        vals = []
        for s in range(50):
            est = ObjPertLogisticRegression(epsilon=eps, C=1.0, random_state=s).fit(X, y)
            p = est.predict_proba(X)[np.arange(len(y)), y]
            vals.append(-np.mean(np.log(p)))
        losses.append(np.mean(vals))
    assert np.all(np.diff(losses) < 0)


def test_default_fit_emits_no_warning_but_the_data_norm_one(unit_ball_classification):
    X, y = unit_ball_classification
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ObjPertLogisticRegression(data_norm=1.0, random_state=0).fit(X, y)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ObjPertLogisticRegression(random_state=0).fit(X, y)
    assert [w.category for w in caught] == [DataNormWarning]


@pytest.mark.parametrize("loss", [LogisticLoss(), HuberHingeLoss(h=0.3)])
def test_hessian_is_the_exact_symmetric_formula(loss):
    """The one-triangle (SYRK) Hessian equals ``C X^T diag(l'') X + ridge I`` and is
    exactly symmetric; rows of zero curvature (Huber) drop out."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 6))
    y = np.where(rng.random(300) < 0.5, -1.0, 1.0)
    theta = rng.normal(size=6)
    C, ridge = 2.5, 1.7
    weights = C * loss.d2z(X @ theta, y)
    expected = (X.T * weights) @ X + ridge * np.eye(6)
    hessian = glm_hessian(theta, X, y, loss, C, ridge)
    assert_allclose(hessian, expected, rtol=1e-12, atol=1e-12)
    assert_allclose(hessian, hessian.T, rtol=0, atol=0)
    sparse = glm_hessian(theta, sp.csr_array(X), y, loss, C, ridge)
    assert_allclose(sparse, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("loss", ["logistic", "huber"])
def test_sparse_and_dense_one_hot_designs_give_the_same_certified_model(loss):
    """Enough rows for the subsampled-Hessian phase (stride > 1) on a one-hot design."""
    rng = np.random.default_rng(1)
    codes = rng.integers(0, 5, size=(2000, 3))
    X = OneHotEncoder(sparse_output=False).fit_transform(codes) * 0.5
    y = (codes[:, 0] + rng.integers(0, 3, size=2000) > 3).astype(int)
    dense = ObjPertLogisticRegression(loss=loss, C=3.0, random_state=0)
    sparse = ObjPertLogisticRegression(loss=loss, C=3.0, random_state=0)
    (a,) = dense._releases(X, y)
    (b,) = sparse._releases(sp.csr_array(X), y)
    assert a.converged and b.converged
    for sol in (a, b):
        grad = glm_gradient(sol.minimiser, sol.X, sol.y, sol.loss, sol.C, sol.ridge, sol.noise)
        assert np.linalg.norm(grad) <= dense.tol
    assert_allclose(a.theta, b.theta, atol=1e-8)


def test_sparse_input_equals_dense():
    X = sp.random(60, 8, density=0.3, random_state=0, format="csr") * 3
    y = np.arange(60) % 2
    dense = ObjPertLogisticRegression(random_state=1).fit(X.toarray(), y)
    sparse = ObjPertLogisticRegression(random_state=1).fit(X, y)
    assert_allclose(sparse.coef_, dense.coef_, atol=1e-9)
    assert_allclose(sparse.decision_function(X), dense.decision_function(X.toarray()), atol=1e-9)
