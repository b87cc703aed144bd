"""Exact one-dimensional privacy audits (spec napp_erm.md Appendix A, T11) as regression tests.

The default and two-stage estimators must show no violation at their claimed
epsilon; the research modes MOOR and VS+ must keep showing theirs (so nobody
"fixes" a research mode into the private path without noticing). The harness
is tied to the shipped code twice: the audit constants come from the
estimator's own calibration, and the shipped solvers reproduce the harness's
one-dimensional maps on sampled noise values.
"""


import numpy as np
import pytest
from numpy.testing import assert_allclose

from skdp import PrivacyLeakWarning
from skdp.audit._napp_exact import (
    audit,
    exponential_grid,
    gaussian_grid,
    hockey_stick_2d,
    kifer_lasso_1d,
    laplace_grid,
    lqa_iteration_1d,
    two_stage_1d,
    vs_plus_1d,
)
from skdp.linear_model._napp._mechanism import solve_release
from skdp.mechanisms._napp import napp_calibration
from skdp.losses import LogisticLoss
from skdp.mechanisms import GammaNormDraw
from skdp.penalties import L1
from skdp.research import ResearchNAPPLassoClassifier
from skdp.research._napp import moor_iterations

D_PRIME = [(0.05, 1.0)]
D = D_PRIME + [(1.0, 0.0)]
LAM = 1.0
EPSILONS = [1.0, 2.0, 8.0]


@pytest.fixture(scope="module")
def calibration():
    # the estimator's own constants for |x| <= 1, logistic, epsilon = 1, add/remove
    cal = napp_calibration(1.0, 0.0, gradient_bound=1.0, hessian_bound=0.25)
    assert cal.curvature == pytest.approx(0.25 / np.expm1(0.5))
    assert cal.noise_scale == pytest.approx(2.0)
    return cal


@pytest.fixture(scope="module")
def laplace(calibration):
    return laplace_grid(calibration.noise_scale, n_points=20_000)


def _report(name, deltas):
    print(f"audit {name}: " + ", ".join(f"delta_hat({e:g}) = {d:.3g}"
                                         for e, d in zip(EPSILONS, deltas)))


def test_default_estimator_has_no_violation_at_its_epsilon(calibration, laplace):
    grid, weights = laplace
    deltas = audit(lambda b, r: kifer_lasso_1d(b, r, LAM, calibration.curvature), D, D_PRIME,
                   grid, weights, EPSILONS)
    _report("default (exact Kifer lasso)", deltas)
    assert deltas[0] <= 1e-6


def test_claim2_iteration_has_no_violation(calibration, laplace):
    grid, weights = laplace
    deltas = audit(lambda b, r: lqa_iteration_1d(b, r, LAM, calibration.curvature, moor=False),
                   D, D_PRIME, grid, weights, EPSILONS)
    _report("Claim-2 iteration", deltas)
    assert deltas[0] <= 1e-6


def test_paper_moor_violates_its_claimed_epsilon(calibration, laplace):
    grid, weights = laplace
    deltas = audit(lambda b, r: lqa_iteration_1d(b, r, LAM, calibration.curvature, moor=True),
                   D, D_PRIME, grid, weights, EPSILONS)
    _report("research MOOR", deltas)
    assert deltas[0] >= 0.05          # spec: 0.075 at epsilon = 1
    assert deltas[2] >= 0.03          # and still 0.035 at epsilon = 8


def test_paper_vs_plus_violates_every_epsilon(calibration):
    grid, weights = exponential_grid(calibration.noise_scale)
    dp, d = [(1.0, 1.0)], [(1.0, 1.0), (1.0, 0.0)]
    out_d = vs_plus_1d(grid, d, calibration.curvature)
    out_dp = vs_plus_1d(grid, dp, calibration.curvature)
    assert np.all(out_d == 0.0)
    p_nonzero = weights[out_dp != 0].sum()
    assert p_nonzero == pytest.approx(1 - np.exp(-0.25), abs=1e-3)
    deltas = audit(lambda b, r: vs_plus_1d(b, r, calibration.curvature), d, dp, grid, weights,
                   EPSILONS)
    _report("research VS+", deltas)
    assert np.all(deltas >= 0.2)


@pytest.mark.parametrize("lam", [0.0, 1.0])
@pytest.mark.parametrize("x", [0.05, 1.0])
def test_gaussian_default_has_no_violation(lam, x):
    cal = napp_calibration(1.0, 1e-5, gradient_bound=1.0, hessian_bound=0.25)
    assert cal.noise_scale == pytest.approx(9.9819, abs=1e-4)
    grid, weights = gaussian_grid(cal.noise_scale, n_points=20_000)
    dp = [(x, 1.0)]
    deltas = audit(lambda b, r: kifer_lasso_1d(b, r, lam, cal.curvature), dp + [(1.0, 0.0)],
                   dp, grid, weights, [1.0])
    assert deltas[0] <= 1e-5


def test_two_stage_each_stage_meets_its_budget():
    # stage 1: the default mechanism at 0.3 epsilon; stage 2 given any public theta1:
    # a weighted ridge whose retrieval-calibrated noise meets the remaining 0.7
    epsilon, frac = 1.0, 0.3
    eps1, eps2 = frac * epsilon, (1 - frac) * epsilon
    cal1 = napp_calibration(eps1, 0.0, gradient_bound=1.0, hessian_bound=0.25)
    grid, weights = laplace_grid(cal1.noise_scale, n_points=20_000)
    # wider bins than the other audits: the stage-1 outputs spread over +-130, and
    # bins holding only a few grid points give quadrature false alarms (~1e-4)
    stage1 = audit(lambda b, r: kifer_lasso_1d(b, r, LAM, cal1.curvature), D, D_PRIME, grid,
                   weights, [eps1], n_bins=1000)
    assert stage1[0] <= 1e-6
    floor = 0.25 / np.expm1(0.5 * eps2)
    for theta1 in (0.05, 0.5, 1.0, 3.0, 30.0):
        w = max(floor, LAM / theta1)
        cal2 = napp_calibration(eps2, 0.0, gradient_bound=1.0, hessian_bound=0.25,
                                penalty_curvature=w)
        assert cal2.extra_ridge == 0.0 and cal2.eps_jacobian <= 0.5 * eps2 + 1e-15
        grid2, weights2 = laplace_grid(cal2.noise_scale, n_points=20_000)
        ridge = lambda b, r: kifer_lasso_1d(b, r, 0.0, w)  # noqa: E731
        deltas = audit(ridge, D, D_PRIME, grid2, weights2, [eps2], n_bins=1000)
        assert deltas[0] <= 1e-6, (theta1, deltas)
        # the retrieval is tight, not loose: a smaller budget is violated
        if cal2.eps_retrieved > 0.05:
            tighter = audit(ridge, [(1.0, 0.0), (-1.0, 1.0)], [(-1.0, 1.0)], grid2, weights2,
                            [0.5 * eps2], n_bins=1000)
            assert tighter[0] > 1e-4


@pytest.mark.slow
def test_two_stage_joint_release_has_no_violation():
    g1, w1 = laplace_grid(1.0 / 0.15, n_points=2000)
    u, wu = laplace_grid(1.0, n_points=2000)
    weights = np.outer(w1, wu).ravel()
    out_d = two_stage_1d(g1, u, D, LAM, epsilon=1.0)
    out_dp = two_stage_1d(g1, u, D_PRIME, LAM, epsilon=1.0)
    deltas = hockey_stick_2d(out_d, out_dp, weights, [1.0])
    assert deltas[0] <= 1e-4


@pytest.mark.slow
def test_full_resolution_audits_match_the_spec(calibration):
    grid, weights = laplace_grid(calibration.noise_scale, n_points=60_000)
    moor = audit(lambda b, r: lqa_iteration_1d(b, r, LAM, calibration.curvature, moor=True),
                 D, D_PRIME, grid, weights, [1.0, 8.0])
    assert moor[0] == pytest.approx(0.0751, abs=0.003)
    assert moor[1] == pytest.approx(0.0355, abs=0.003)
    exact = audit(lambda b, r: kifer_lasso_1d(b, r, LAM, calibration.curvature), D, D_PRIME,
                  grid, weights, [1.0])
    assert exact[0] <= 1e-10


# -- the shipped code computes the audited maps ------------------------------------------

def _records_to_design(records):
    X = np.array([[x] for x, _ in records])
    y = np.array([1.0 if label == 1.0 else -1.0 for _, label in records])
    return X, y


@pytest.mark.parametrize("records", [D, D_PRIME], ids=["D", "D_prime"])
def test_shipped_solver_equals_the_audited_exact_map(calibration, records):
    X, y = _records_to_design(records)
    bs = np.linspace(-9.0, 9.0, 25)
    harness = kifer_lasso_1d(bs, records, LAM, calibration.curvature)
    for b, expected in zip(bs, harness):
        draw = GammaNormDraw(radius=abs(b) / calibration.noise_scale,
                             direction=np.array([np.sign(b) or 1.0]))
        solution = solve_release(X, y, LogisticLoss(), L1(LAM), calibration, draw,
                                 coef_bound=None, solver=dict(tol=1e-10, max_iter=100))
        assert solution.converged
        assert_allclose(solution.theta[0], expected, atol=1e-8)
        assert (solution.theta[0] == 0.0) == (expected == 0.0)


def test_shipped_moor_research_mode_equals_the_audited_moor_map(calibration):
    X, y = _records_to_design(D)
    bs = np.linspace(-6.0, 6.0, 13)
    harness = lqa_iteration_1d(bs, D, LAM, calibration.curvature, moor=True)
    for b, expected in zip(bs, harness):
        theta, _, _ = moor_iterations(X, y, LogisticLoss(), L1(LAM), np.array([b]),
                                      floor=calibration.curvature, coef_bound=None, n_iter=60,
                                      solver=dict(tol=1e-12, max_iter=100))
        assert_allclose(theta[0], expected, atol=1e-7)


def test_shipped_vs_plus_research_mode_shows_the_support_violation(calibration):
    # D: l'(0) sums to 0, so VS+ always outputs 0; D': nonzero with probability 0.22
    from skdp.research._napp import research_vs
    X_d, y_d = _records_to_design([(1.0, 1.0), (1.0, 0.0)])
    X_dp, y_dp = _records_to_design([(1.0, 1.0)])
    solver = dict(tol=1e-10, max_iter=100)
    counts = []
    for X, y in ((X_d, y_d), (X_dp, y_dp)):
        nonzero = 0
        for seed in range(400):
            out = research_vs(X, y, LogisticLoss(), L1(0.0), calibration,
                              np.random.default_rng(seed), coef_bound=None, truncation=0.0,
                              n_iter=1, solver=solver)
            nonzero += out.theta[0] != 0.0
        counts.append(nonzero / 400)
    assert counts[0] == 0.0
    # binomial(400, 0.2212): standard deviation 0.021; four of them either side
    assert abs(counts[1] - (1 - np.exp(-0.25))) < 0.084


@pytest.mark.parametrize("mode", ["moor", "vs", "vs_plus", "recycling"])
def test_research_modes_warn_and_void_the_guarantee(mode):
    from sklearn.datasets import make_classification
    X, y = make_classification(n_samples=150, n_features=4, random_state=0)
    with pytest.warns(PrivacyLeakWarning, match="NOT differentially private"):
        clf = ResearchNAPPLassoClassifier(alpha=1.0, research_mode=mode, random_state=0).fit(X, y)
    assert clf.privacy_guarantee_ is False
    assert clf.epsilon_spent_ == np.inf
    assert clf.privacy_report_["mechanism"] == f"research:{mode}"


def test_research_vs_plus_returns_exact_zeros():
    from sklearn.datasets import make_classification
    X, y = make_classification(n_samples=300, n_features=10, n_informative=2, n_redundant=0,
                               random_state=0)
    with pytest.warns(PrivacyLeakWarning):
        clf = ResearchNAPPLassoClassifier(alpha=0.5, research_mode="vs_plus",
                                          random_state=0).fit(X, y)
    assert np.sum(clf.coef_ == 0.0) >= 2


def test_moor_fixed_point_is_closer_to_the_lasso_than_claim2():
    # T3 (paper section 5.1, no noise): MOOR mitigates over-regularisation
    from sklearn.datasets import make_regression
    from skdp.solvers._composite import CompositeProblem, solve_napp
    from skdp.losses import SquaredLoss
    X, y = make_regression(n_samples=300, n_features=6, n_informative=3, noise=1.0,
                           random_state=0)
    X = X / np.linalg.norm(X, axis=1).max()
    y = y / np.abs(y).max() * 5
    lam, curvature = 2.0, 1.0 / np.expm1(0.5)
    zero = np.zeros(6)
    lasso = solve_napp(CompositeProblem(X, y, SquaredLoss(), zero, lam, 0.0), tol=1e-12,
                       max_iter=50).theta
    claim2 = solve_napp(CompositeProblem(X, y, SquaredLoss(), zero, lam, curvature), tol=1e-12,
                        max_iter=50).theta
    moor, _, _ = moor_iterations(X, y, SquaredLoss(), L1(lam), zero, floor=curvature,
                                 coef_bound=None, n_iter=200,
                                 solver=dict(tol=1e-12, max_iter=50))
    assert np.linalg.norm(moor - lasso) < np.linalg.norm(claim2 - lasso)
