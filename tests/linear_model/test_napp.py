"""NAPPLasso / NAPPLassoClassifier: the default mechanism (spec napp_erm.md section 7.1, T1-T10)."""

import pickle
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy import stats
from sklearn.base import clone
from sklearn.datasets import make_classification, make_regression
from sklearn.linear_model import ElasticNet, Lasso, LogisticRegression, PoissonRegressor, Ridge
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import MaxAbsScaler

from skdp import ConvergenceError, DataNormWarning, NAPPLasso, NAPPLassoClassifier
from skdp.linear_model._napp._mechanism import build_problem, distance_bound, solve_release
from skdp.mechanisms._napp import (
    napp_calibration,
    napp_gaussian_std,
)
from skdp.solvers._composite import (
    CompositeProblem,
    augmentation_rows,
    kkt_residual,
    napp_iterations,
    prox_newton,
    quadratic_l1,
)
from skdp.losses import LogisticLoss, PoissonLoss, SquaredLoss
from skdp.mechanisms import GammaNormDraw
from skdp.penalties import L1, L2, Bridge, ElasticNet as ENPenalty
from skdp.utils import privacy_streams


def _design(X, data_norm=1.0, scaling=1.0, intercept=True):
    norms = np.linalg.norm(X, axis=1)
    Xc = X * np.minimum(1.0, data_norm / norms)[:, None]
    return np.hstack([Xc, np.full((len(X), 1), scaling)]) if intercept else Xc


def _regression(seed, n=200, p=6):
    X, y, coef = make_regression(n_samples=n, n_features=p, n_informative=3, noise=5.0,
                                 coef=True, random_state=seed)
    return X, y / 20.0


# -- T1: the augmented-row identity ---------------------------------------------------------

@pytest.mark.parametrize("n_aug", [12, 50, 400])
def test_exact_moment_rows_realise_the_weighted_ridge_exactly_for_squared_loss(seed, n_aug):
    rng = np.random.default_rng(seed)
    d = 6
    b, w = rng.normal(size=d) * 3, rng.uniform(0.5, 4.0, size=d)
    E, y_e, _ = augmentation_rows(b, w, SquaredLoss(), n_aug, rng)
    loss = SquaredLoss()
    # exact second moments and zero column sums within the pseudo-response group
    E_reg = E - b[None, :] / (n_aug * -1.0)
    assert_allclose(E_reg.T @ E_reg, np.diag(w), atol=1e-10)
    assert_allclose(E_reg.sum(axis=0), 0.0, atol=1e-10)
    for theta in rng.normal(size=(5, d)):
        lhs = np.sum(loss.loss(E @ theta, y_e)) - n_aug / 2
        rhs = b @ theta + 0.5 * w @ theta**2 + (b @ theta) ** 2 / (2 * n_aug)
        assert abs(lhs - rhs) <= 1e-10 * (1 + abs(rhs))


def test_logistic_pseudo_rows_remainder_shrinks_like_one_over_n_aug():
    rng = np.random.default_rng(0)
    d = 4
    b, w = rng.normal(size=d), rng.uniform(0.5, 2.0, size=d)
    theta = rng.normal(size=d)
    loss = LogisticLoss()
    remainders = []
    for n_aug in (400, 4000, 40000):
        E, y_e, _ = augmentation_rows(b, w, loss, n_aug, np.random.default_rng(1))
        value = np.sum(loss.loss(E @ theta, y_e)) - n_aug * np.log(2.0)
        g2, kappa = 0.25, 0.25
        model = b @ theta + 0.5 * w @ theta**2 + kappa * (b @ theta) ** 2 / (2 * n_aug * g2)
        remainders.append(abs(value - model))
    ratios = np.array(remainders[:-1]) / np.array(remainders[1:])
    assert np.all((ratios > 5) & (ratios < 20)), remainders


def test_random_pseudo_rows_have_the_right_second_moments_on_average():
    rng = np.random.default_rng(0)
    w = np.array([1.0, 2.0, 3.0])
    moments = [augmentation_rows(np.zeros(3), w, SquaredLoss(), 500, rng, augmentation="random")[0]
               for _ in range(200)]
    mean = np.mean([E.T @ E for E in moments], axis=0)
    assert_allclose(np.diag(mean), w * (499 / 500), rtol=0.02)
    assert np.max(np.abs(mean - np.diag(np.diag(mean)))) < 0.05


def test_expected_augmented_least_squares_equals_the_weighted_ridge_objective():
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(40, 3)), rng.normal(size=40)
    b, w = rng.normal(size=3), np.array([0.5, 1.0, 2.0])
    rows = np.diag(np.sqrt(w))
    responses = -b / np.sqrt(w)
    for theta in rng.normal(size=(4, 3)):
        augmented = 0.5 * np.sum((np.concatenate([y, responses])
                                  - np.vstack([X, rows]) @ theta) ** 2)
        target = 0.5 * np.sum((y - X @ theta) ** 2) + b @ theta + 0.5 * w @ theta**2
        assert_allclose(augmented - 0.5 * np.sum(responses**2), target, rtol=1e-12)


# -- T2: zero noise equals scikit-learn on the same clipped design ---------------------------

@pytest.mark.parametrize("alpha", [0.5, 5.0, 40.0])
def test_infinite_epsilon_equals_sklearn_lasso(seed, alpha):
    X, y = _regression(seed)
    n = len(y)
    D = _design(X, data_norm=2.0, scaling=1.5)
    ref = Lasso(alpha=alpha / n, fit_intercept=False, tol=1e-14, max_iter=100_000).fit(D, y)
    ours = NAPPLasso(alpha=alpha, epsilon=np.inf, data_norm=2.0, intercept_scaling=1.5,
                     y_bound=1e6, coef_bound=1e6).fit(X, y)
    assert_allclose(ours.coef_, ref.coef_[:-1], atol=1e-6)
    assert_allclose(ours.intercept_, ref.coef_[-1] * 1.5, atol=1e-6)
    assert ours.privacy_guarantee_ and ours.epsilon_spent_ == np.inf


@pytest.mark.parametrize("alpha", [0.3, 3.0])
def test_infinite_epsilon_equals_sklearn_l1_logistic(seed, alpha):
    X, y = make_classification(n_samples=300, n_features=6, n_informative=3,
                               random_state=seed)
    D = _design(X, data_norm=2.0)
    ref = LogisticRegression(l1_ratio=1.0, C=1.0 / alpha, solver="liblinear",
                             fit_intercept=False, tol=1e-12, max_iter=100_000).fit(D, y)
    ours = NAPPLassoClassifier(alpha=alpha, epsilon=np.inf, data_norm=2.0).fit(X, y)
    assert_allclose(ours.coef_, ref.coef_[:, :-1], atol=1e-6)
    assert_allclose(ours.intercept_, ref.coef_[:, -1], atol=1e-6)
    assert np.any(ours.coef_ == 0.0) == np.any(ref.coef_[:, :-1] == 0.0)


def test_zero_noise_with_curvature_equals_sklearn_elastic_net(seed):
    # b = 0 and Delta > 0: the lasso plus the ridge Delta, i.e. an elastic net
    X, y = _regression(seed)
    n = len(y)
    D = _design(X)
    lam, delta_ridge = 3.0, 1.7
    problem = build_problem(D, y, SquaredLoss(), L1(lam), linear=np.zeros(D.shape[1]),
                            extra_ridge=delta_ridge, coef_bound=None)
    from skdp.solvers._composite import solve_napp
    ours = solve_napp(problem, tol=1e-12, max_iter=50)
    ref = ElasticNet(alpha=(lam + delta_ridge) / n, l1_ratio=lam / (lam + delta_ridge),
                     fit_intercept=False, tol=1e-14, max_iter=100_000).fit(D, y)
    assert_allclose(ours.theta, ref.coef_, atol=1e-6)


def test_infinite_epsilon_poisson_ridge_equals_sklearn_poisson_regressor(seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(300, 4)) / 2.5
    y = rng.poisson(np.exp(X @ np.array([1.0, -0.5, 0.0, 0.8]) + 0.3)).astype(float)
    n = len(y)
    D = _design(X)
    ref = PoissonRegressor(alpha=2.0 / n, fit_intercept=False, tol=1e-12,
                           max_iter=10_000, solver="newton-cholesky").fit(D, y)
    ours = NAPPLasso(loss="poisson", penalty="l2", alpha=2.0, epsilon=np.inf, y_bound=1e3,
                     coef_bound=100.0).fit(X, y)
    assert_allclose(ours.coef_, ref.coef_[:-1], atol=1e-6)
    assert_allclose(ours.intercept_, ref.coef_[-1], atol=1e-6)


def test_infinite_epsilon_ridge_equals_sklearn_ridge(seed):
    X, y = _regression(seed)
    D = _design(X)
    ref = Ridge(alpha=4.0, fit_intercept=False, solver="cholesky").fit(D, y)
    ours = NAPPLasso(penalty="l2", alpha=4.0, epsilon=np.inf, y_bound=1e6,
                     coef_bound=1e6).fit(X, y)
    assert_allclose(ours.coef_, ref.coef_[:-1], atol=1e-8)


# -- T4/T5: curvature ----------------------------------------------------------------------

def test_every_solved_objective_has_curvature_at_least_delta():
    X, y = _regression(0)
    for penalty, kw in [("l1", {}), ("elasticnet", dict(l1_ratio=0.7)), ("l2", {}),
                        ("bridge", dict(q=1.5))]:
        for alpha in (0.1, 5.0, 500.0):
            est = NAPPLasso(penalty=penalty, alpha=alpha, y_bound=5.0, coef_bound=20.0,
                            random_state=0, **kw)
            (solution,) = est._releases(X, y)
            cal = solution.calibration
            problem = solution.problem
            # the penalty's guaranteed curvature plus the added ridge is never below Delta
            mu = est._penalty().strong_convexity(20.0)
            assert mu + cal.extra_ridge >= cal.curvature * (1 - 1e-12) or \
                cal.eps_jacobian < 0.5 * est.epsilon
            assert np.all(problem.ridge - est._penalty().l2_weight >= cal.extra_ridge - 1e-12)
            # the Jacobian term actually paid is covered: log(1 + beta_H / (mu + extra))
            paid = np.log1p(cal.hessian_bound / (mu + cal.extra_ridge))
            assert paid <= cal.eps_jacobian + 1e-12


def test_ridge_solution_is_the_ridge_with_weight_max_alpha_delta():
    # T4: a ridge penalty needs no iteration; weight max(alpha, Delta)
    X, y = _regression(1)
    D = _design(X)
    for alpha in (0.2, 50.0):
        est = NAPPLasso(penalty="l2", alpha=alpha, y_bound=5.0, coef_bound=1e3, epsilon=5.0,
                        random_state=2)
        (solution,) = est._releases(X, y)
        assert np.linalg.norm(solution.theta) < 1e3  # the constraint is inactive
        weight = max(alpha, solution.calibration.curvature)
        expected = np.linalg.solve(D.T @ D + weight * np.eye(D.shape[1]),
                                   D.T @ np.clip(y, -5.0, 5.0) - solution.noise)
        assert_allclose(solution.theta, expected, rtol=1e-9, atol=1e-9)
        # the first noise-augmented least-squares fit is already the answer
        first, _ = napp_iterations(solution.problem, max_iter=1)
        assert_allclose(first, expected, rtol=1e-9, atol=1e-9)
        second, _ = napp_iterations(solution.problem, first, max_iter=1)
        assert_allclose(second, first, rtol=1e-12, atol=1e-12)


# -- T6: constants and budget bookkeeping ---------------------------------------------------

@pytest.mark.parametrize("epsilon, beta, expected", [
    (1.0, 0.25, 0.38537), (1.0, 1.0, 1.54149), (0.4, 0.25, 1.12917), (0.4, 1.0, 4.51668)])
def test_curvature_oracle(epsilon, beta, expected):
    cal = napp_calibration(epsilon, 0.0, gradient_bound=1.0, hessian_bound=beta)
    assert cal.curvature == pytest.approx(expected, abs=1e-4)
    assert cal.extra_ridge == cal.curvature
    assert cal.eps_noise + cal.eps_jacobian == pytest.approx(epsilon, abs=1e-15)
    assert cal.noise_scale == pytest.approx(1.0 / (0.5 * epsilon))


def test_ball_release_keeps_its_coefficients_at_large_epsilon():
    # the squared loss needs a coefficient ball; the cover once zeroed every coefficient
    # of such a release (its public distance bound had a B sqrt(tol / lambda) term, and
    # the added ridge vanished as exp(-epsilon / 2)): the docstring's example at eps 100
    X, y = make_regression(n_samples=200, n_features=5, random_state=0)
    est = NAPPLasso(alpha=5.0, y_bound=300.0, coef_bound=300.0, data_norm=3.0,
                    epsilon=100.0, random_state=0).fit(X, y)
    exact = NAPPLasso(alpha=5.0, y_bound=300.0, coef_bound=300.0, data_norm=3.0,
                      epsilon=np.inf).fit(X, y)
    assert np.all(exact.coef_ != 0)
    assert np.all(est.coef_ != 0)
    assert_allclose(est.coef_, exact.coef_, rtol=0.2)


@pytest.mark.parametrize("retrieval", ["recycle", "return"])
@pytest.mark.parametrize("penalty_curvature", [0.0, 0.001, 0.1])
def test_jacobian_spends_at_most_five_nats(retrieval, penalty_curvature):
    # beyond 5 nats the curvature floor beta / expm1(5) is a public ridge (the part the
    # penalty lacks is added) and the rest of the planned share is retrieved
    beta, epsilon = 0.25, 30.0
    cal = napp_calibration(epsilon, 0.0, gradient_bound=1.0, hessian_bound=beta,
                           penalty_curvature=penalty_curvature, retrieval=retrieval)
    floor = beta / (np.exp(5.0) - 1.0)
    assert cal.curvature == pytest.approx(beta / np.expm1(15.0), rel=1e-12)
    provided = max(floor, penalty_curvature)
    assert cal.extra_ridge == pytest.approx(provided - penalty_curvature, rel=1e-12)
    assert cal.eps_jacobian == pytest.approx(np.log1p(beta / provided), rel=1e-12)
    assert cal.eps_retrieved == pytest.approx(15.0 - cal.eps_jacobian, rel=1e-12)
    assert cal.d_extra_ridge == 0.0
    if retrieval == "recycle":
        assert cal.eps_noise == pytest.approx(epsilon - cal.eps_jacobian, rel=1e-12)
        assert cal.epsilon_spent == epsilon
    else:
        assert cal.eps_noise == pytest.approx(15.0, rel=1e-12)
        assert cal.epsilon_spent == pytest.approx(15.0 + cal.eps_jacobian, rel=1e-12)
    assert cal.noise_scale == pytest.approx(1.0 / cal.eps_noise, rel=1e-12)


def test_jacobian_floor_is_continuous_where_it_starts():
    below = napp_calibration(10.0 * (1 - 1e-12), 0.0, gradient_bound=1.0, hessian_bound=1.0)
    above = napp_calibration(10.0 * (1 + 1e-12), 0.0, gradient_bound=1.0, hessian_bound=1.0)
    assert below.extra_ridge == pytest.approx(above.extra_ridge, rel=1e-10)
    assert below.noise_scale == pytest.approx(above.noise_scale, rel=1e-10)
    assert napp_calibration(9.0, 0.0, gradient_bound=1.0, hessian_bound=1.0).eps_retrieved == 0


@pytest.mark.parametrize("epsilon, delta, expected", [
    (1.0, 1e-5, 9.9819), (1.0, 1e-3, 7.9241), (0.4, 1e-3, 19.6222), (2.0, 1e-6, 5.4780)])
def test_gaussian_std_oracle(epsilon, delta, expected):
    cal = napp_calibration(epsilon, delta, gradient_bound=1.0, hessian_bound=0.25)
    assert cal.noise == "gaussian"
    assert cal.noise_scale == pytest.approx(expected, abs=1e-4)
    # the root of the quadratic of Corollary 5
    t = np.sqrt(2 * np.log(2 / delta))
    s = cal.noise_scale
    assert t / s + 1 / (2 * s**2) == pytest.approx(cal.eps_noise, rel=1e-12)


def test_replace_doubles_the_sensitivity_and_uses_the_union_bound():
    add = napp_calibration(1.0, 0.0, gradient_bound=3.0, hessian_bound=1.0)
    rep = napp_calibration(1.0, 0.0, gradient_bound=3.0, hessian_bound=1.0,
                           neighboring="replace")
    assert rep.sensitivity == 2 * add.sensitivity == 6.0
    assert rep.noise_scale == 2 * add.noise_scale
    assert rep.curvature == add.curvature
    g = napp_calibration(1.0, 1e-5, gradient_bound=1.0, hessian_bound=1.0,
                         neighboring="replace")
    assert g.noise_scale == pytest.approx(napp_gaussian_std(0.5, 1e-5 / 2, 2.0), rel=1e-12)


def test_each_loss_states_its_bounds():
    assert LogisticLoss().bounds(2.0) == (2.0, 1.0)
    G, beta = SquaredLoss().bounds(2.0, y_bound=3.0, coef_bound=5.0)
    assert (G, beta) == ((2 * 5 + 3) * 2.0, 4.0)
    G, beta = PoissonLoss().bounds(1.0, y_bound=100.0, coef_bound=2.0)
    assert G == 100.0 and beta == pytest.approx(np.exp(2.0))
    G, _ = PoissonLoss().bounds(1.0, y_bound=1.0, coef_bound=2.0)
    assert G == pytest.approx(np.exp(2.0))


def test_estimator_uses_the_constants_of_its_domain():
    X, y = _regression(0)
    est = NAPPLasso(alpha=1.0, data_norm=2.0, intercept_scaling=1.0, y_bound=3.0,
                    coef_bound=4.0, epsilon=0.8, random_state=0).fit(X, y)
    R = np.hypot(2.0, 1.0)
    report = est.privacy_report_
    assert report["sensitivity"] == pytest.approx((R * 4.0 + 3.0) * R)
    # the mechanism runs at 99 % of epsilon (1 % pays for the cover of the solver)
    assert report["curvature"] == pytest.approx(R**2 / np.expm1(0.4 * 0.99))
    assert report["noise_scale"] == pytest.approx((R * 4.0 + 3.0) * R / (0.4 * 0.99))
    assert report["eps_jacobian"] + report["eps_noise"] == pytest.approx(0.8 * 0.99)
    assert report["stages"][0]["epsilon_cover"] == pytest.approx(0.8 * 0.01)
    assert est.epsilon_spent_ == pytest.approx(0.8)


@pytest.mark.parametrize("frac", [0.1, 0.5, 0.9])
def test_budget_split_and_retrieval_bookkeeping(frac):
    beta = 1.0
    for mu in (0.0, 0.5, 2.0, 50.0):
        for retrieval in ("recycle", "return"):
            cal = napp_calibration(1.0, 0.0, gradient_bound=1.0, hessian_bound=beta,
                                   penalty_curvature=mu, eps_jacobian_frac=frac,
                                   retrieval=retrieval)
            assert 0.0 <= cal.eps_retrieved <= frac + 1e-15
            assert cal.eps_jacobian <= frac + 1e-15
            assert cal.eps_jacobian + cal.eps_retrieved == pytest.approx(frac)
            assert cal.extra_ridge == pytest.approx(max(0.0, cal.curvature - mu))
            if mu >= cal.curvature:
                assert cal.eps_jacobian == pytest.approx(np.log1p(beta / mu))
                assert cal.eps_retrieved > 0 or mu == cal.curvature
            else:
                assert cal.eps_retrieved == 0.0
            if retrieval == "recycle":
                assert cal.epsilon_spent == 1.0
                assert cal.eps_noise == pytest.approx(1.0 - cal.eps_jacobian)
            else:
                assert cal.eps_noise == pytest.approx(1.0 - frac)
                assert cal.epsilon_spent == pytest.approx(1.0 - cal.eps_retrieved)


def test_lasso_retrieves_nothing_and_ridge_with_large_alpha_retrieves():
    X, y = _regression(0)
    kw = dict(y_bound=5.0, coef_bound=20.0, random_state=0)
    lasso = NAPPLasso(alpha=100.0, **kw).fit(X, y)
    assert lasso.privacy_report_["eps_retrieved"] == 0.0
    ridge = NAPPLasso(penalty="l2", alpha=100.0, **kw).fit(X, y)
    assert ridge.privacy_report_["curvature"] < 100.0
    assert ridge.privacy_report_["eps_retrieved"] > 0
    assert ridge.privacy_report_["extra_ridge"] == 0.0
    assert ridge.epsilon_spent_ == 1.0
    returned = NAPPLasso(penalty="l2", alpha=100.0, retrieval="return", **kw).fit(X, y)
    assert returned.epsilon_spent_ == pytest.approx(1.0 - ridge.privacy_report_["eps_retrieved"])
    # recycling buys less noise than returning
    assert ridge.privacy_report_["noise_scale"] < returned.privacy_report_["noise_scale"]


def test_bridge_curvature_on_the_box_and_elastic_net_curvature():
    assert Bridge(3.0, 1.5).strong_convexity(4.0) == pytest.approx(3.0 * 1.5 * 0.5 * 4 ** -0.5)
    assert Bridge(3.0, 2.0).strong_convexity(7.0) == pytest.approx(6.0)
    assert ENPenalty(2.0, 0.25).strong_convexity() == pytest.approx(1.5)
    assert L1(5.0).strong_convexity() == 0.0
    assert L2(5.0).strong_convexity() == 5.0


def test_multiclass_splits_the_budget():
    X, y = make_classification(n_samples=300, n_features=5, n_informative=4, n_classes=3,
                               n_redundant=0, random_state=0)
    clf = NAPPLassoClassifier(alpha=1.0, epsilon=1.5, delta=3e-6, random_state=0).fit(X, y)
    assert clf.coef_.shape == (3, 5)
    assert clf.epsilon_spent_ == pytest.approx(1.5)
    assert clf.delta_spent_ == pytest.approx(3e-6)
    (stage,) = clf.privacy_report_["stages"]
    # each class gets (0.5, 1e-6); its mechanism 99 % of that epsilon and delta
    # exp(-epsilon_cover / 2), the cover the remaining 1 %
    assert stage["epsilon"] == pytest.approx(0.495)
    assert stage["delta"] == pytest.approx(1e-6 * np.exp(-0.0025))
    assert stage["epsilon_cover"] == pytest.approx(0.005)
    assert clf.predict_proba(X).sum(axis=1) == pytest.approx(np.ones(300))


# -- T7: exact zeros and the KKT certificate ----------------------------------------------

@pytest.mark.parametrize("delta", [0.0, 1e-5])
def test_large_alpha_gives_exact_zeros_and_the_certificate_holds(delta):
    X, y = make_classification(n_samples=400, n_features=10, n_informative=2,
                               n_redundant=0, random_state=0)
    clf = NAPPLassoClassifier(alpha=20.0, epsilon=2.0, delta=delta, random_state=0)
    (solution,) = clf._releases(X, y)
    assert np.sum(solution.theta == 0.0) >= 3
    assert solution.converged
    assert kkt_residual(solution.problem, solution.theta) <= 1e-8 * solution.problem.scale
    # KKT at the zeros: |grad_j| <= alpha exactly as the lasso condition states
    g = solution.problem.smooth_gradient(solution.theta)
    zero = solution.theta == 0
    assert np.all(np.abs(g[zero]) <= 20.0 * (1 + 1e-9))
    clf.fit(X, y)
    assert np.sum(clf.coef_ == 0.0) >= 3


def test_threshold_is_post_processing_on_coefficients_only():
    X, y = _regression(0)
    kw = dict(alpha=1.0, y_bound=5.0, coef_bound=20.0, random_state=3)
    plain = NAPPLasso(**kw).fit(X, y)
    thr = np.sort(np.abs(plain.coef_))[2] + 1e-12
    cut = NAPPLasso(threshold=thr, **kw).fit(X, y)
    expected = np.where(np.abs(plain.coef_) < thr, 0.0, plain.coef_)
    assert_allclose(cut.coef_, expected, rtol=0, atol=0)
    assert cut.intercept_ == plain.intercept_
    assert cut.epsilon_spent_ == plain.epsilon_spent_


def test_quadratic_l1_subproblem_is_exact():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(30, 8))
    H, c = A.T @ A + 0.1 * np.eye(8), rng.normal(size=8) * 5
    l1 = np.full(8, 2.0)
    z = quadratic_l1(H, c, l1, np.zeros(8))
    g = H @ z - c
    nz = z != 0
    assert_allclose(g[nz] + 2.0 * np.sign(z[nz]), 0.0, atol=1e-11)
    assert np.all(np.abs(g[~nz]) <= 2.0 + 1e-11)


@pytest.mark.parametrize("seed", [0, 5])   # 5: a draw whose point stops 6e-9 inside
def test_active_norm_ball_constraint_is_met_with_kkt(seed):
    # a small coef_bound makes the constraint active: the solution lies on the sphere
    X, y = _regression(0)
    D = _design(X)
    est = NAPPLasso(alpha=0.5, y_bound=100.0, coef_bound=0.5, random_state=seed)
    (solution,) = est._releases(X, y)
    theta = solution.theta
    problem = solution.problem
    # inside the ball, and on its sphere within the certified distance to the exact
    # constrained minimiser (what the guarantee rests on; the solver's own precision
    # depends on the noise draw)
    certified = distance_bound(problem, est.tol, solution.calibration.extra_ridge)
    assert 0.0 <= 0.5 - np.linalg.norm(theta) <= certified
    # stationarity with the multiplier mu: g + mu theta + alpha s = 0
    g = problem.smooth_gradient(theta)
    nz = theta != 0
    mu = -np.mean((g[nz] + 0.5 * np.sign(theta[nz])) / theta[nz])
    assert mu > 0
    assert kkt_residual(problem, theta, mu) <= 1e-6 * problem.scale
    assert solution.converged
    del D


def test_failed_certificate_raises_and_releases_nothing():
    X, y = make_classification(n_samples=300, n_features=6, random_state=0)
    clf = NAPPLassoClassifier(alpha=0.5, max_iter=1, napp_max_iter=1, tol=1e-14,
                              random_state=0)
    with pytest.raises(ConvergenceError, match="nothing is released"):
        clf.fit(X, y)
    assert not [k for k in vars(clf) if k.endswith("_")]


# -- T9: reproducibility ----------------------------------------------------------------------

@pytest.mark.parametrize("Est, kw", [
    (NAPPLassoClassifier, {}),
    (NAPPLassoClassifier, dict(delta=1e-5, adaptive_two_stage=True)),
    (NAPPLasso, dict(y_bound=5.0, coef_bound=20.0)),
    (NAPPLasso, dict(loss="poisson", y_bound=20.0, coef_bound=3.0)),
])
def test_same_seed_same_model_other_seed_other_model(Est, kw):
    if Est is NAPPLassoClassifier:
        X, y = make_classification(n_samples=200, n_features=5, random_state=0)
    elif kw.get("loss") == "poisson":
        rng = np.random.default_rng(0)
        X = rng.normal(size=(200, 5)) / 3
        y = rng.poisson(2.0, size=200).astype(float)
    else:
        X, y = _regression(0)
    a = Est(random_state=3, alpha=0.5, **kw).fit(X, y)
    b = Est(random_state=3, alpha=0.5, **kw).fit(X, y)
    c = Est(random_state=4, alpha=0.5, **kw).fit(X, y)
    assert_allclose(a.coef_, b.coef_, rtol=0, atol=0)
    assert not np.allclose(a.coef_, c.coef_)
    assert a.privacy_guarantee_


def test_noise_is_drawn_once_per_fit():
    """The noise stream gives one Gamma-norm draw for b, then one for the cover."""
    X, y = _regression(0)
    est = NAPPLasso(alpha=1.0, y_bound=5.0, coef_bound=20.0, random_state=0)
    (solution,) = est._releases(X, y)
    replay = privacy_streams(0)[0]
    d = X.shape[1] + 1
    direction = replay.standard_normal(d)
    radius = replay.gamma(d)
    cover_direction = replay.standard_normal(d)
    assert_allclose(solution.draw.direction, direction / np.linalg.norm(direction))
    assert solution.draw.radius == radius
    assert_allclose(solution.cover_draw.direction,
                    cover_direction / np.linalg.norm(cover_direction))


def test_fitted_estimator_keeps_no_noise_or_data():
    X, y = _regression(0)
    est = NAPPLasso(alpha=1.0, y_bound=5.0, coef_bound=20.0, random_state=0).fit(X, y)
    arrays = {k for k, v in vars(est).items() if isinstance(v, np.ndarray)}
    assert arrays <= {"coef_", "feature_names_in_"}
    assert not hasattr(est, "n_iter_")  # data-dependent, not covered by the guarantee
    assert len(pickle.dumps(est)) < 5000


# -- T10: noise laws through the fitted solution -----------------------------------------------

def _implied_noise(solution):
    # stationarity of the (smooth, ridge) objective: grad(sum l + ridge/2 |theta|^2) + b = 0
    problem = solution.problem
    zero = CompositeProblem(problem.X, problem.y, problem.loss, 0.0, 0.0, problem.ridge)
    return -zero.smooth_gradient(solution.theta)


def test_fitted_model_carries_gamma_norm_noise_of_the_calibrated_scale():
    X, y = make_classification(n_samples=100, n_features=3, n_informative=2,
                               n_redundant=0, random_state=0)
    norms, scales = [], set()
    for seed in range(400):
        est = NAPPLassoClassifier(penalty="l2", alpha=1.0, epsilon=2.0, random_state=seed)
        (solution,) = est._releases(X, y)
        b = _implied_noise(solution)
        assert_allclose(b, solution.noise, atol=1e-6)
        norms.append(np.linalg.norm(b))
        scales.add(solution.calibration.noise_scale)
    (scale,) = scales
    # R = sqrt(2), G = R, eps_noise = 1.98 - log(1 + beta/alpha) after retrieval (alpha >=
    # Delta; the mechanism runs at 99 % of epsilon)
    R = np.sqrt(2.0)
    assert scale == pytest.approx(R / (1.98 - np.log1p(R**2 / 4 / 1.0)))
    assert stats.kstest(norms, stats.gamma(a=4, scale=scale).cdf).pvalue > 1e-3


def test_gaussian_noise_has_the_corollary5_std():
    X, y = make_classification(n_samples=100, n_features=3, n_informative=2,
                               n_redundant=0, random_state=0)
    draws = []
    for seed in range(300):
        est = NAPPLassoClassifier(penalty="l2", alpha=1.0, epsilon=1.0, delta=1e-5,
                                  random_state=seed)
        (solution,) = est._releases(X, y)
        draws.append(_implied_noise(solution))
    draws = np.array(draws)
    sigma = solution.calibration.noise_scale
    # chi-square interval for the pooled sample variance (1200 values, fixed seeds)
    ratio = draws.var(ddof=0) / sigma**2
    assert 0.9 < ratio < 1.1
    assert stats.kstest(draws.ravel() / sigma, "norm").pvalue > 1e-3


# -- the solver of the estimator ---------------------------------------------------------------

@pytest.mark.parametrize("style", ["expected", "exact_moment", "random"])
def test_augmentation_style_changes_only_the_warm_start(style):
    X, y = make_classification(n_samples=200, n_features=5, random_state=0)
    ref = NAPPLassoClassifier(alpha=1.0, random_state=0).fit(X, y)
    other = NAPPLassoClassifier(alpha=1.0, random_state=0, augmentation=style,
                                n_aug=300).fit(X, y)
    assert_allclose(other.coef_, ref.coef_, atol=1e-7)


def test_solution_object_reproduces_a_given_noise_draw():
    # the transient solve used by EpsilonForUtility: same draw, rescaled noise
    X, y = make_classification(n_samples=200, n_features=4, random_state=0)
    clf = NAPPLassoClassifier(alpha=1.0, random_state=0)
    (solution,) = clf._releases(X, y)
    again = solve_release(solution.problem.X, solution.problem.y, LogisticLoss(), L1(1.0),
                          solution.calibration, solution.draw, coef_bound=None,
                          solver=dict(tol=1e-8, max_iter=100))
    assert_allclose(again.theta, solution.theta, atol=1e-10)
    draw = GammaNormDraw(radius=0.0, direction=solution.draw.direction)
    noiseless = solve_release(solution.problem.X, solution.problem.y, LogisticLoss(), L1(1.0),
                              solution.calibration, draw, coef_bound=None,
                              solver=dict(tol=1e-8, max_iter=100))
    assert not np.allclose(noiseless.theta, solution.theta)


def test_two_stage_budget_adds_up_and_stage2_uses_retrieval():
    X, y = make_classification(n_samples=400, n_features=8, n_informative=3, random_state=0)
    clf = NAPPLassoClassifier(alpha=5.0, epsilon=2.0, delta=1e-5, adaptive_two_stage=True,
                              stage1_frac=0.3, random_state=0)
    (solution,) = clf._releases(X, y)
    first, second = solution.stage1.calibration, solution.calibration
    # each stage's mechanism gets 99 % of its epsilon, its cover the rest
    covers = solution.stage1.cover.epsilon + solution.cover.epsilon
    assert first.epsilon + second.epsilon + covers == pytest.approx(2.0)
    assert first.delta + second.delta <= 1e-5
    assert first.epsilon == pytest.approx(0.6 * 0.99)
    # stage 2: weights max(Delta2, alpha/|theta1|) >= Delta2, noise uses eps2 - eps_J*;
    # its support is that of stage 1's release (public), not of its unreleased solution
    support = solution.support
    assert_allclose(support, np.flatnonzero(solution.stage1.released))
    weights = solution.problem.ridge
    assert np.all(weights >= second.curvature * (1 - 1e-12))
    eps_j_star = np.log1p(second.hessian_bound / weights.min())
    assert second.eps_jacobian == pytest.approx(eps_j_star)
    assert second.eps_noise == pytest.approx(1.4 * 0.99 - eps_j_star)
    assert second.eps_retrieved == pytest.approx(0.7 * 0.99 - eps_j_star)
    assert np.all(solution.released[np.setdiff1d(np.arange(9), support)] == 0.0)
    clf.fit(X, y)
    assert clf.epsilon_spent_ == pytest.approx(2.0)
    stages = clf.privacy_report_["stages"]
    assert [s["epsilon"] + s["epsilon_cover"] for s in stages] == pytest.approx([0.6, 1.4])


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("kw", [dict(adaptive_two_stage=True), dict(epsilon=0.3)])
def test_docstring_example_with_an_active_ball_is_released(seed, kw):
    # the two-stage fit's first stage gets 0.3 epsilon, so a larger noise: its minimiser
    # lies on the ball ||theta|| = coef_bound, as the default fit's does at epsilon 0.3.
    # The multiplier search certifies both ends of its bracket; its probes, warm-started
    # 1e-10 away, were returned unmoved by the L1 subproblem and no seed was released
    X, y = make_regression(n_samples=200, n_features=5, random_state=0)
    est = NAPPLasso(alpha=5.0, y_bound=300.0, coef_bound=300.0, data_norm=3.0,
                    random_state=seed, **kw)
    (solution,) = est._releases(X, y)
    first = solution.stage1 if est.adaptive_two_stage else solution
    assert first.converged
    radius = distance_bound(first.problem, est.tol, first.calibration.extra_ridge)
    assert 0.0 <= 300.0 - np.linalg.norm(first.theta) <= radius
    assert solution.converged
    est.fit(X, y)
    assert est.coef_.shape == (5,) and np.all(np.isfinite(est.coef_))
    assert np.any(est.coef_ != 0.0)
    assert est.epsilon_spent_ == pytest.approx(est.epsilon)


def test_sklearn_tools_work():
    X, y = make_classification(n_samples=200, n_features=5, random_state=0)
    pipe = make_pipeline(MaxAbsScaler(), NAPPLassoClassifier(alpha=1.0, random_state=0))
    assert cross_val_score(pipe, X, y, cv=3).shape == (3,)
    grid = GridSearchCV(NAPPLassoClassifier(random_state=0),
                        {"epsilon": [0.5, 5.0]}, cv=2).fit(X, y)
    assert grid.best_estimator_.epsilon_spent_ in (0.5, 5.0)
    est = clone(NAPPLasso(y_bound=1.0, coef_bound=2.0))
    assert est.get_params()["coef_bound"] == 2.0


def test_poisson_predictions_are_positive_and_y_is_clipped():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3)) / 3
    y = rng.poisson(3.0, size=200).astype(float)
    y[0] = 1e6
    a = NAPPLasso(loss="poisson", alpha=1.0, y_bound=20.0, coef_bound=3.0,
                  epsilon=np.inf).fit(X, y)
    y2 = y.copy()
    y2[0] = 20.0
    b = NAPPLasso(loss="poisson", alpha=1.0, y_bound=20.0, coef_bound=3.0,
                  epsilon=np.inf).fit(X, y2)
    assert_allclose(a.coef_, b.coef_, rtol=0, atol=0)
    assert np.all(a.predict(X) > 0)


def test_rows_inside_data_norm_are_untouched_and_longer_rows_clipped():
    X, y = _regression(0)
    X = X / np.linalg.norm(X, axis=1).max() * 0.9
    kw = dict(alpha=1.0, y_bound=5.0, coef_bound=20.0, random_state=0)
    a = NAPPLasso(**kw).fit(X, y)
    X_long = X.copy()
    X_long[0] *= 100
    b = NAPPLasso(**kw).fit(X_long, y)
    c = NAPPLasso(**kw).fit(np.vstack([X[:0], X_long[:1] / np.linalg.norm(X_long[0]), X[1:]]),
                            y)
    assert_allclose(b.coef_, c.coef_, atol=1e-12)
    assert not np.allclose(a.coef_, b.coef_)


def test_warnings_free_default_fit():
    """Only the warning that data_norm was left at its default."""
    X, y = make_classification(n_samples=200, n_features=5, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        NAPPLassoClassifier(data_norm=1.0, random_state=0).fit(X, y)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        NAPPLassoClassifier(random_state=0).fit(X, y)
    assert [w.category for w in caught] == [DataNormWarning]


# -- the Poisson loss added to skdp.losses ----------------------------------------------------

def test_poisson_loss_derivatives_and_bounds():
    from scipy.optimize import approx_fprime
    from skdp.losses import LOSSES, make_loss
    loss = make_loss("poisson")
    assert LOSSES["poisson"] is PoissonLoss
    for z, y in [(-2.0, 0.0), (0.3, 4.0), (1.7, 2.0)]:
        fd = approx_fprime(np.array([z]), lambda v: float(loss.loss(v[0], y)), 1e-7)[0]
        fd2 = approx_fprime(np.array([z]), lambda v: float(loss.dz(v[0], y)), 1e-7)[0]
        assert abs(fd - loss.dz(z, y)) < 1e-5
        assert abs(fd2 - loss.d2z(np.array([z]), y)[0]) < 1e-5
    z = np.linspace(-2.0, 2.0, 401)
    for y in (0.0, 3.0, 10.0):
        assert np.max(np.abs(loss.dz(z, y))) <= PoissonLoss.lipschitz_on(10.0, 2.0) + 1e-12
    assert np.max(loss.d2z(z, 0.0)) <= PoissonLoss.smoothness_on(2.0) * (1 + 1e-12)


# -- statistical properties (slow) -------------------------------------------------------------

@pytest.mark.slow
def test_mean_test_error_is_non_increasing_in_epsilon():
    # T13: over 50 seeds, the default estimator's mean test log-loss decreases with epsilon
    from sklearn.metrics import log_loss
    X, y = make_classification(n_samples=1500, n_features=6, n_informative=3,
                               n_redundant=0, random_state=0)
    X_test, y_test = X[1000:], y[1000:]
    means = []
    for epsilon in (0.3, 1.0, 3.0, 10.0):
        losses = [log_loss(y_test, NAPPLassoClassifier(alpha=2.0, epsilon=epsilon,
                                                       random_state=s).fit(X[:1000], y[:1000])
                           .predict_proba(X_test)) for s in range(50)]
        means.append(np.mean(losses))
    assert np.all(np.diff(means) < 0), means


@pytest.mark.slow
def test_smoke_audit_three_dimensions():
    # T12: 2000 seeds per neighbouring dataset, threshold events on the projection onto the
    # difference of means; the Clopper-Pearson epsilon lower bound stays below the claim
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y = np.where(rng.random(40) < 0.5, 1, 0)
    X_d = np.vstack([X, [[1.0, 0.0, 0.0]]])
    y_d = np.append(y, 0)
    kw = dict(alpha=0.5, epsilon=1.0, fit_intercept=False)
    out_d = np.array([NAPPLassoClassifier(random_state=s, **kw).fit(X_d, y_d).coef_[0]
                      for s in range(2000)])
    out_dp = np.array([NAPPLassoClassifier(random_state=10_000 + s, **kw).fit(X, y).coef_[0]
                       for s in range(2000)])
    direction = out_d.mean(axis=0) - out_dp.mean(axis=0)
    proj_d, proj_dp = out_d @ direction, out_dp @ direction
    worst = 0.0
    for t in np.quantile(np.concatenate([proj_d, proj_dp]), np.linspace(0.05, 0.95, 19)):
        for a, b in ((proj_d, proj_dp), (proj_dp, proj_d)):
            k_a, k_b = np.sum(a > t), np.sum(b > t)
            # one-sided 99.9 % Clopper-Pearson bounds: lower on P_a, upper on P_b
            low = stats.beta.ppf(0.001, k_a, 2000 - k_a + 1) if k_a else 0.0
            high = stats.beta.ppf(0.999, k_b + 1, 2000 - k_b) if k_b < 2000 else 1.0
            if low > 0:
                worst = max(worst, np.log(low / high))
    assert worst <= 1.0


def test_singular_design_still_certifies_and_matches_liblinear():
    # redundant features make the unpenalised Hessian singular at epsilon = inf
    X, y = make_classification(n_samples=200, n_features=5, random_state=0)
    D = _design(X)
    assert np.linalg.matrix_rank(D) < D.shape[1]
    ours = NAPPLassoClassifier(alpha=1.0, epsilon=np.inf).fit(X, y)
    ref = LogisticRegression(l1_ratio=1.0, C=1.0, solver="liblinear", fit_intercept=False,
                             tol=1e-12, max_iter=100_000).fit(D, y)
    assert ours.privacy_guarantee_
    assert_allclose(ours.coef_, ref.coef_[:, :-1], atol=1e-6)


@pytest.mark.parametrize("seed_", range(5))
def test_noisy_fits_certify_across_seeds_and_folds(seed_):
    from sklearn.model_selection import StratifiedKFold
    X, y = make_classification(n_samples=200, n_features=5, random_state=seed_)
    for train, _ in StratifiedKFold(3).split(X, y):
        Xs = MaxAbsScaler().fit_transform(X[train])
        for kw in (dict(), dict(delta=1e-6, neighboring="replace"), dict(epsilon=10.0)):
            (solution,) = NAPPLassoClassifier(random_state=seed_, **kw)._releases(Xs, y[train])
            assert solution.converged, (kw, solution.residual)


def test_certificate_tolerance_is_public_not_scaled_by_the_data():
    """The review found the KKT target scaled by a data statistic (``problem.scale``,
    from the gradient at 0): the former code certified a residual of 0.35 here at
    tol=1e-3. Now "converged" means residual <= tol, whatever the data's scale."""
    X, y = make_classification(n_samples=5000, n_features=6, random_state=0)
    (solution,) = NAPPLassoClassifier(alpha=1.0, random_state=0)._releases(X, y)
    problem = solution.problem
    assert problem.scale > 1e3                            # a large data statistic
    for max_iter in range(4, 9):
        result = prox_newton(problem, np.zeros(problem.X.shape[1]), tol=1e-3,
                             max_iter=max_iter)
        assert result.converged == (result.residual <= 1e-3)
