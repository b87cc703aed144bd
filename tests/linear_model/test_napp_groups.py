"""Persons as the unit of privacy in NAPP (``fit(X, y, groups=...)``, issue 35).

``docs/privacy/napp.rst``, "Persons (groups)": a person's weights sum to at most ``W_P =
max_rows_per_group * W``, so ``zeta`` and ``beta_H`` are those of a record of weight
``W_P``; the Jacobian is bounded for a Hessian difference of rank up to the number of
coefficients ``m``, ``m log(1 + beta_H / (m Delta))``; the Gaussian tail is the chi
quantile ``sqrt(chi2.isf(delta, m))``. Checked here: the calibration against a hand
computation; singletons give the row-level fit but for the Jacobian bound; exact audits
of neighbours that differ by a person of several rows (two-dimensional, from the exact
privacy loss, and one-dimensional with the existing harness); refusals before any noise.
"""

import math
from unittest import mock

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.optimize import brentq
from scipy.special import expit
from scipy.stats import chi

import skdp.linear_model._napp._mechanism as mechanism_module
from skdp import NAPPLasso, NAPPLassoClassifier
from skdp.audit._napp_exact import audit, gaussian_grid, kifer_lasso_1d, laplace_grid
from skdp.mechanisms import split_budget
from skdp.mechanisms._napp import napp_calibration
from skdp.research import ResearchNAPPLassoClassifier


def _data(n=120, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (X[:, 0] + 0.5 * rng.normal(size=n) > 0).astype(int)
    return X, y


def _hand_curvature(epsilon_j, beta, m):
    # Delta solving m log(1 + beta / (m Delta)) = epsilon_j
    return beta / (m * (math.exp(epsilon_j / m) - 1.0))


# ------------------------------------------------------------------ the calibration


@pytest.mark.parametrize("m", [1, 2, 7])
def test_person_calibration_equals_hand_computation(m):
    epsilon, f, G, beta = 0.8, 0.4, 1.7, 0.6
    cal = napp_calibration(epsilon, 0.0, gradient_bound=G, hessian_bound=beta,
                           eps_jacobian_frac=f, persons=True, dimension=m)
    delta_star = _hand_curvature(f * epsilon, beta, m)
    assert cal.curvature == pytest.approx(delta_star, rel=1e-13)
    assert cal.extra_ridge == pytest.approx(delta_star, rel=1e-13)
    assert cal.eps_jacobian == pytest.approx(f * epsilon, rel=1e-13)
    # the Jacobian term at that curvature is the planned share
    assert m * math.log1p(beta / (m * cal.curvature)) == pytest.approx(f * epsilon, rel=1e-12)
    assert cal.noise_scale == pytest.approx(G / ((1 - f) * epsilon), rel=1e-13)
    assert cal.persons and cal.jacobian_rank == m
    # the row's rank-one curvature is never larger (m = 1: equal)
    row = napp_calibration(epsilon, 0.0, gradient_bound=G, hessian_bound=beta,
                           eps_jacobian_frac=f)
    assert row.curvature == pytest.approx(beta / math.expm1(f * epsilon), rel=1e-13)
    assert (cal.curvature > row.curvature) == (m > 1)


@pytest.mark.parametrize("retrieval", ["recycle", "return"])
def test_person_retrieval_equals_hand_computation(retrieval):
    # the penalty's curvature covers Delta: the Jacobian costs m log(1 + beta / (m mu))
    epsilon, f, beta, mu, m = 1.0, 0.5, 0.5, 3.0, 4
    cal = napp_calibration(epsilon, 0.0, gradient_bound=1.0, hessian_bound=beta,
                           penalty_curvature=mu, eps_jacobian_frac=f, retrieval=retrieval,
                           persons=True, dimension=m)
    cost = m * math.log1p(beta / (m * mu))
    assert cal.extra_ridge == 0.0
    assert cal.eps_jacobian == pytest.approx(cost, rel=1e-13)
    assert cal.eps_retrieved == pytest.approx(f * epsilon - cost, rel=1e-12)
    if retrieval == "recycle":
        assert cal.eps_noise == pytest.approx(epsilon - cost, rel=1e-13)
        assert cal.epsilon_spent == epsilon
    else:
        assert cal.eps_noise == pytest.approx((1 - f) * epsilon, rel=1e-13)
        assert cal.epsilon_spent == pytest.approx((1 - f) * epsilon + cost, rel=1e-13)


@pytest.mark.parametrize("neighboring", ["add_remove", "replace"])
@pytest.mark.parametrize("m", [1, 5])
def test_person_gaussian_scale_equals_hand_computation(neighboring, m):
    epsilon, delta, f, G = 1.0, 1e-5, 0.5, 1.3
    cal = napp_calibration(epsilon, delta, gradient_bound=G, hessian_bound=0.25,
                           eps_jacobian_frac=f, neighboring=neighboring, persons=True,
                           dimension=m)
    zeta = (2.0 if neighboring == "replace" else 1.0) * G
    t = chi.isf(delta, m)   # the chi (not chi-square) quantile: an independent route
    eps_b = (1 - f) * epsilon
    sigma = brentq(lambda s: zeta * t / s + zeta ** 2 / (2 * s * s) - eps_b, 1e-3, 1e6,
                   xtol=1e-14, rtol=1e-15)
    assert cal.noise == "gaussian"
    assert cal.noise_scale == pytest.approx(sigma, rel=1e-10)


@pytest.mark.parametrize("delta", [0.0, 1e-6])
@pytest.mark.parametrize("retrieval_mu", [0.0, 5.0])
def test_person_calibration_derivatives_match_finite_differences(delta, retrieval_mu):
    kw = dict(gradient_bound=1.0, hessian_bound=0.7, penalty_curvature=retrieval_mu,
              eps_jacobian_frac=0.3, persons=True, dimension=6)
    eps, h = 1.2, 1e-6
    cal = napp_calibration(eps, delta, **kw)
    up, down = napp_calibration(eps + h, delta, **kw), napp_calibration(eps - h, delta, **kw)
    assert cal.d_extra_ridge == pytest.approx((up.extra_ridge - down.extra_ridge) / (2 * h),
                                              rel=1e-6, abs=1e-9)
    assert cal.d_log_noise_scale == pytest.approx(
        (math.log(up.noise_scale) - math.log(down.noise_scale)) / (2 * h), rel=1e-6)
    if delta > 0:
        hi = napp_calibration(eps, delta * math.exp(h), **kw)
        lo = napp_calibration(eps, delta * math.exp(-h), **kw)
        assert cal.d_log_noise_scale_d_log_delta == pytest.approx(
            (math.log(hi.noise_scale) - math.log(lo.noise_scale)) / (2 * h), rel=1e-6)


def test_estimator_calibration_with_groups_equals_hand_computation():
    X, y = _data()
    groups = np.repeat(np.arange(40), 3)   # persons of three rows
    M, data_norm, epsilon = 2.0, 1.5, 1.0
    clf = NAPPLassoClassifier(alpha=0.5, data_norm=data_norm, epsilon=epsilon,
                              max_rows_per_group=M, random_state=0)
    (solution,) = clf._releases(X, y, groups=groups)
    cal = solution.calibration
    R2 = data_norm ** 2 + 1.0            # the intercept column of value 1
    m = X.shape[1] + 1
    eps_m = split_budget(epsilon, 0.0).epsilon_mechanism
    assert clf.weight_bound_ == M
    assert cal.gradient_bound == pytest.approx(M * math.sqrt(R2), rel=1e-14)
    assert cal.hessian_bound == pytest.approx(M * R2 / 4.0, rel=1e-14)
    assert cal.jacobian_rank == m
    assert cal.curvature == pytest.approx(_hand_curvature(0.5 * eps_m, M * R2 / 4.0, m),
                                          rel=1e-12)
    assert cal.noise_scale == pytest.approx(M * math.sqrt(R2) / (0.5 * eps_m), rel=1e-12)
    # the rows' weights: min(1, M / k) = 2/3 each, through the shipped problem
    assert_allclose(solution.problem.y[:, 1], 2.0 / 3.0, rtol=1e-15)


def test_two_stage_and_multiclass_calibrate_each_problem_for_persons():
    X, y = _data(n=150)
    y3 = np.digitize(X[:, 1], [-0.5, 0.5])
    groups = np.arange(150) // 2
    clf = NAPPLassoClassifier(alpha=2.0, data_norm=2.0, random_state=0)
    releases = clf._releases(X, y3, groups=groups)
    assert len(releases) == 3
    for r in releases:
        assert r.calibration.persons and r.calibration.jacobian_rank == 4
    two = NAPPLassoClassifier(alpha=2.0, data_norm=2.0, adaptive_two_stage=True,
                              random_state=0)
    (r,) = two._releases(X, y, groups=groups)
    assert r.stage1.calibration.jacobian_rank == 4
    assert r.calibration.persons
    assert r.calibration.jacobian_rank == max(1, len(r.support))


# --------------------------------------------------- singletons: the row-level fit


def test_singletons_with_one_row_each_equal_the_row_fit_but_for_the_jacobian_bound():
    X, y = _data()
    kw = dict(alpha=1.0, data_norm=1.0, random_state=3)
    row = NAPPLassoClassifier(**kw).fit(X, y)
    person = NAPPLassoClassifier(**kw).fit(X, y, groups=np.arange(len(y)))
    a, b = row.privacy_report_, person.privacy_report_
    # same noise law and split, the curvature is the only change
    for key in ("noise", "noise_scale", "sensitivity", "eps_jacobian", "eps_noise",
                "epsilon_spent"):
        assert a[key] == b[key], key
    eps_j = a["eps_jacobian"]
    beta = a["stages"][0]["hessian_bound"]
    m = X.shape[1] + 1
    assert a["curvature"] == pytest.approx(beta / math.expm1(eps_j), rel=1e-13)
    assert b["curvature"] == pytest.approx(_hand_curvature(eps_j, beta, m), rel=1e-13)
    assert b["curvature"] > a["curvature"]
    assert not np.array_equal(row.coef_, person.coef_)
    assert row.neighboring_ == "add_remove" and person.neighboring_ == "add_remove_person"


def test_singletons_equal_the_row_fit_exactly_where_the_bounds_coincide():
    # one coefficient: a person's Hessian has rank one, as a row's
    X, y = _data()
    kw = dict(alpha=1.0, data_norm=1.0, fit_intercept=False, random_state=0)
    row = NAPPLassoClassifier(**kw).fit(X[:, :1], y)
    person = NAPPLassoClassifier(**kw).fit(X[:, :1], y, groups=np.arange(len(y)))
    assert person.privacy_report_["stages"][0]["jacobian_rank"] == 1
    assert np.array_equal(row.coef_, person.coef_)
    assert row.coef_[0, 0] != 0.0
    assert row.epsilon_spent_ == person.epsilon_spent_


def test_singletons_with_a_covering_penalty_give_the_same_coefficients_at_a_different_cost():
    # the ridge covers both curvatures and the retrieved share is returned: the noise
    # and the objective are the row fit's; only the Jacobian's cost differs
    X, y = _data()
    kw = dict(alpha=5.0, penalty="l2", retrieval="return", data_norm=1.0, random_state=0)
    row = NAPPLassoClassifier(**kw).fit(X, y)
    person = NAPPLassoClassifier(**kw).fit(X, y, groups=np.arange(len(y)))
    assert np.array_equal(row.coef_, person.coef_)
    assert row.intercept_ == person.intercept_
    beta, m = 2.0 / 4.0, X.shape[1] + 1     # R^2 = 1 + 1 (intercept)
    extra = m * math.log1p(beta / (m * 5.0)) - math.log1p(beta / 5.0)
    assert extra > 0
    assert person.epsilon_spent_ - row.epsilon_spent_ == pytest.approx(extra, rel=1e-9)


def test_regressor_with_groups():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(100, 3)) / 2
    y = X @ [1.0, -1.0, 0.5] + 0.1 * rng.normal(size=100)
    kw = dict(alpha=1.0, y_bound=3.0, coef_bound=5.0, data_norm=2.0, random_state=0)
    reg = NAPPLasso(max_rows_per_group=2.0, **kw).fit(X, y, groups=np.arange(100) // 4)
    assert reg.neighboring_ == "add_remove_person"
    assert reg.weight_bound_ == 2.0
    stage = reg.privacy_report_["stages"][0]
    assert stage["persons"] and stage["jacobian_rank"] == 4
    singles = NAPPLasso(**kw).fit(X, y, groups=np.arange(100))
    assert singles.weight_bound_ == 1.0
    replace = NAPPLasso(neighboring="replace", **kw).fit(X, y, groups=np.arange(100) // 4)
    assert replace.neighboring_ == "replace_person"
    assert replace.privacy_report_["unit"] == "one person (all of their rows)"


# ------------------------------------------------- exact audit, two coefficients

# D' two short rows (their curvature barely adds to the penalty's); the person: four
# rows of norm 1, a pair with opposite labels on each axis (their gradients cancel at 0
# and their Hessian there is the worst case, equal eigenvalues of total trace beta),
# weight 1/4 each with max_rows_per_group=1
D_PRIME_X = np.array([[0.02, 0.01], [-0.01, 0.02]])
D_PRIME_Y = np.array([1, 0])
PERSON_X = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
PERSON_Y = np.array([0, 1, 0, 1])


def _grad_hess(theta, X, y, w):
    """``sum_i w_i l_i`` of the logistic loss (labels 0/1): gradient (N, d), Hessian
    (N, d, d) at each row of ``theta``."""
    p = expit(theta @ X.T)
    grad = ((p - y) * w) @ X
    hess = np.einsum("nk,ki,kj->nij", p * (1 - p) * w, X, X)
    return grad, hess


def _solve(b, X, y, w, lam, n_iter=60):
    """Exact minimisers of ``sum w l + <b, theta> + lam/2 ||theta||^2``, one per row of
    ``b``: damped Newton with backtracking (strongly convex, smooth)."""
    def value(theta):
        eta = theta @ X.T
        return (np.logaddexp(0, eta) - y * eta) @ w + np.sum(b * theta, 1) + \
            0.5 * lam * np.sum(theta * theta, 1)
    theta = -b / (lam + np.sum(w))
    for _ in range(n_iter):
        g, H = _grad_hess(theta, X, y, w)
        g = g + b + lam * theta
        if np.max(np.abs(g) / (1.0 + np.abs(b))) < 1e-13:
            break
        step = np.linalg.solve(H + lam * np.eye(X.shape[1]), g[..., None])[..., 0]
        t = np.ones(len(b))
        f0, slope = value(theta), np.sum(g * step, 1)
        for _ in range(40):
            # Armijo, with the rounding of the value's magnitude as slack
            bad = (value(theta - t[:, None] * step)
                   > f0 - 0.25 * t * slope + 1e-13 * (1.0 + np.abs(f0)))
            if not bad.any():
                break
            t = np.where(bad, 0.5 * t, t)
        theta = theta - t[:, None] * step
    g, _ = _grad_hess(theta, X, y, w)
    assert np.max(np.abs(g + b + lam * theta) / (1.0 + np.abs(b))) < 1e-10
    return theta


def _privacy_loss(theta, lam, log_noise, d_rows, person):
    """``log p_D(theta) - log p_D'(theta)`` of the exact minimiser, ``D = D' + person``:
    ``p(theta) = nu(b(theta)) det(A(theta))`` with ``b(theta) = -grad F(theta)`` (the
    densities' normalisers are the same)."""
    g_dp, H_dp = _grad_hess(theta, *d_rows)
    g_p, H_p = _grad_hess(theta, *person)
    b_d = -(g_dp + g_p) - lam * theta
    b_dp = -g_dp - lam * theta
    A_dp = H_dp + lam * np.eye(theta.shape[1])
    jac = np.linalg.slogdet(A_dp + H_p)[1] - np.linalg.slogdet(A_dp)[1]
    return log_noise(b_d) - log_noise(b_dp) + jac


def _log_noise(cal_noise, scale):
    """The log-density of the noise, up to its constant."""
    if cal_noise == "gamma_norm":   # density proportional to exp(-||b|| / scale)
        return lambda b: -np.linalg.norm(b, axis=1) / scale
    return lambda b: -0.5 * np.sum(b * b, 1) / scale ** 2


def _exact_delta(cal_noise, scale, lam, epsilon, d_rows, person, n_grid=241):
    """``delta(epsilon)`` of the exact minimiser in both directions, as ``E_P[(1 -
    exp(eps - L))_+]`` over a quadrature grid of the noise ``b`` (the output is ``theta(b)``,
    a bijection), with the exact privacy loss ``L``; and the largest ``L`` seen.

    The grid is fine near ``b = 0`` (where the outputs near ``theta = 0``, of the largest
    curvature, come from) and coarse in the tails: ``c sinh(u)`` for ``u`` uniform.
    """
    log_noise = _log_noise(cal_noise, scale)
    half = (40.0 if cal_noise == "gamma_norm" else 9.0) * scale
    c = 0.05
    u = np.linspace(-np.arcsinh(half / c), np.arcsinh(half / c), n_grid)
    axis, width = c * np.sinh(u), c * np.cosh(u)
    b = np.stack(np.meshgrid(axis, axis), -1).reshape(-1, 2)
    weights = np.exp(log_noise(b)) * np.outer(width, width).ravel()
    weights /= weights.sum()
    d_all = tuple(np.concatenate(pair) for pair in zip(d_rows, person))
    deltas, worst = [], -np.inf
    for rows, sign in ((d_all, 1.0), (d_rows, -1.0)):
        theta = _solve(b, *rows, lam)
        loss = sign * _privacy_loss(theta, lam, log_noise, d_rows, person)
        worst = max(worst, loss.max())
        deltas.append(np.sum(weights * np.maximum(0.0, -np.expm1(epsilon - loss))))
    return max(deltas), worst


@pytest.fixture(scope="module")
def person_release():
    """The shipped fit's calibration on ``D`` and ``D'``, and its stationarity checked
    against the audit's independent gradient (the audited map is the shipped one)."""
    def run(delta):
        clf = NAPPLassoClassifier(alpha=0.0, penalty="l2", epsilon=4.0, delta=delta,
                                  eps_jacobian_frac=0.9, data_norm=1.0, fit_intercept=False,
                                  max_rows_per_group=1.0, random_state=0)
        X = np.vstack([D_PRIME_X, PERSON_X])
        y = np.concatenate([D_PRIME_Y, PERSON_Y])
        groups = ["a", "b", "p", "p", "p", "p"]
        (sol,) = clf._releases(X, y, groups=groups)
        (sol_dp,) = clf._releases(D_PRIME_X, D_PRIME_Y, groups=["a", "b"])
        cal = sol.calibration
        assert cal.as_dict() == sol_dp.calibration.as_dict()   # data-independent
        lam = cal.penalty_curvature + cal.extra_ridge
        w = np.concatenate([np.ones(2), np.full(4, 0.25)])
        g, _ = _grad_hess(sol.theta[None, :], X, y, w)
        assert_allclose(g[0] + sol.problem.linear + lam * sol.theta, 0.0, atol=1e-7)
        assert np.linalg.norm(sol.problem.linear) > 0
        return cal, lam
    return run


D_ROWS = (D_PRIME_X, D_PRIME_Y, np.ones(2))
PERSON = (PERSON_X, PERSON_Y, np.full(4, 0.25))


def test_exact_audit_of_a_person_pure(person_release):
    cal, lam = person_release(0.0)
    assert cal.noise == "gamma_norm" and cal.jacobian_rank == 2
    eps = cal.epsilon_spent
    delta_hat, worst = _exact_delta(cal.noise, cal.noise_scale, lam, eps, D_ROWS, PERSON)
    print(f"person calibration: delta_hat({eps:.3g}) = {delta_hat:.3g}, max loss {worst:.4g}")
    # pure epsilon-DP: the exact privacy loss never exceeds epsilon, at the outputs of
    # the noise grid and on a fine grid of outputs around 0 (largest curvature)
    axis = np.linspace(-6.0, 6.0, 241)
    theta = np.stack(np.meshgrid(axis, axis), -1).reshape(-1, 2)
    log_noise = _log_noise(cal.noise, cal.noise_scale)
    near = _privacy_loss(theta, lam, log_noise, D_ROWS, PERSON)
    worst = max(worst, np.abs(near).max())
    assert worst <= eps + 1e-9
    assert delta_hat <= 1e-12
    # the loss comes close to epsilon (the bound is nearly attained), so the audit can fail
    assert worst >= 0.8 * eps
    # the row's rank-one calibration at the same bounds, for the same person: violated
    row = napp_calibration(cal.epsilon, 0.0, gradient_bound=cal.gradient_bound,
                           hessian_bound=cal.hessian_bound, eps_jacobian_frac=0.9)
    assert row.noise_scale == cal.noise_scale and row.curvature < lam
    delta_row, worst_row = _exact_delta(row.noise, row.noise_scale, row.extra_ridge, eps,
                                        D_ROWS, PERSON)
    print(f"rank-one calibration: delta_hat = {delta_row:.3g}, max loss {worst_row:.4g}")
    assert worst_row > eps + 0.5
    assert delta_row > 1e-3


def test_exact_audit_of_a_person_gaussian(person_release):
    delta = 1e-5
    cal, lam = person_release(delta)
    assert cal.noise == "gaussian" and cal.jacobian_rank == 2
    eps = cal.epsilon_spent
    delta_hat, _ = _exact_delta(cal.noise, cal.noise_scale, lam, eps, D_ROWS, PERSON)
    print(f"person calibration (Gaussian): delta_hat({eps:.3g}) = {delta_hat:.3g}")
    assert delta_hat <= cal.delta
    # not vacuous: the same release at a smaller epsilon is violated
    tighter, _ = _exact_delta(cal.noise, cal.noise_scale, lam, 0.5 * eps, D_ROWS, PERSON)
    assert tighter > 10 * cal.delta
    row = napp_calibration(cal.epsilon, cal.delta, gradient_bound=cal.gradient_bound,
                           hessian_bound=cal.hessian_bound, eps_jacobian_frac=0.9)
    delta_row, _ = _exact_delta(row.noise, row.noise_scale, row.extra_ridge, eps, D_ROWS,
                                PERSON)
    print(f"rank-one calibration (Gaussian): delta_hat = {delta_row:.3g}")
    assert delta_row > 5 * cal.delta


# ----------------------------------------- replay of the shipped pre-noise computation


@pytest.mark.parametrize("relation", ["add_remove", "replace"])
@pytest.mark.parametrize("M", [1.0, 2.5])
def test_replay_person_neighbours_within_the_bounds_used(relation, M):
    """The estimator's own clipped, weighted designs on neighbours that differ by a
    person of five rows (one far outside the norm bound): at the released minimisers and
    at probe points the loss gradient moves by at most ``zeta`` and the Jacobian's log
    ratio is at most ``eps_jacobian``, both read back from the calibration applied."""
    from skdp.solvers import glm_gradient, glm_hessian
    rng = np.random.default_rng(4)
    X = rng.normal(size=(30, 2)) * 0.4
    y = (X[:, 0] > 0).astype(int)
    groups = np.arange(30) // 2
    person = np.array([[0.7, 0.7], [0.9, -0.3], [8.0, 6.0], [-0.5, 0.8], [0.1, 0.1]])
    person_y = np.array([0, 1, 1, 0, 1])
    if relation == "replace":    # persons 0 (rows 0, 1) replaced by the new person
        Xb = np.vstack([X[2:], person])
        yb = np.concatenate([y[2:], person_y])
        gb = np.concatenate([groups[2:], np.full(5, 99)])
    else:
        Xb, yb = np.vstack([X, person]), np.concatenate([y, person_y])
        gb = np.concatenate([groups, np.full(5, 99)])
    clf = NAPPLassoClassifier(alpha=0.3, data_norm=1.0, neighboring=relation,
                              max_rows_per_group=M, random_state=0)
    (a,), (b,) = clf._releases(X, y, groups=groups), clf._releases(Xb, yb, groups=gb)
    cal = a.calibration
    assert cal.as_dict() == b.calibration.as_dict()
    lam = cal.penalty_curvature + cal.extra_ridge
    pa, pb = a.problem, b.problem
    zero = np.zeros(pa.X.shape[1])
    probes = [a.theta, b.theta, zero] + [rng.normal(size=3) * r for r in (0.5, 2.0, 8.0)
                                         for _ in range(10)]
    largest_jacobian = 0.0
    for theta in probes:
        moved = np.linalg.norm(glm_gradient(theta, pa.X, pa.y, pa.loss, 1.0, 0.0, zero)
                               - glm_gradient(theta, pb.X, pb.y, pb.loss, 1.0, 0.0, zero))
        assert moved <= cal.sensitivity * (1 + 1e-9)
        ha = glm_hessian(theta, pa.X, pa.y, pa.loss, 1.0, lam)
        hb = glm_hessian(theta, pb.X, pb.y, pb.loss, 1.0, lam)
        jacobian = abs(np.linalg.slogdet(ha)[1] - np.linalg.slogdet(hb)[1])
        assert jacobian <= cal.eps_jacobian * (1 + 1e-9)
        largest_jacobian = max(largest_jacobian, jacobian)
    # not vacuous: at 0 the person's curvature is near its bound (under replace, less
    # the removed person's)
    assert largest_jacobian >= (0.2 if relation == "add_remove" else 0.1) * cal.eps_jacobian


# ------------------------------------- exact audit, one coefficient (existing harness)

D_PRIME_1D = [(0.05, 1.0)]


def _calibration_1d(M, X, y, groups, delta=0.0):
    clf = NAPPLassoClassifier(alpha=1.0, epsilon=1.0, delta=delta, data_norm=1.0,
                              fit_intercept=False, max_rows_per_group=M, random_state=0)
    (sol,) = clf._releases(X, y, groups=groups)
    return sol.calibration


@pytest.mark.parametrize("M, person", [
    (1.0, [(1.0, 0.0), (0.8, 0.0), (-0.5, 1.0)]),   # three rows weighing 1/3 each
    (3.0, [(1.0, 0.0), (1.0, 0.0), (0.9, 0.0)]),    # three rows weighing 1 each
])
def test_exact_1d_audit_of_a_person_with_several_rows(M, person):
    rows = D_PRIME_1D + person
    X = np.array([[x] for x, _ in rows])
    y = np.array([label for _, label in rows])
    cal = _calibration_1d(M, X, y, [0] + [1] * len(person))
    assert cal.hessian_bound == pytest.approx(M / 4) and cal.gradient_bound == M
    w = min(1.0, M / len(person))
    weighted = [(x, label, w) for x, label in person]
    grid, weights = laplace_grid(cal.noise_scale, n_points=20_000)
    mech = lambda b, r: kifer_lasso_1d(b, r, 1.0, cal.extra_ridge)  # noqa: E731
    deltas = audit(mech, D_PRIME_1D + weighted, D_PRIME_1D, grid, weights,
                   [cal.epsilon_spent])
    assert deltas[0] <= 1e-6
    if M == 3.0:
        # calibrated for one row of weight 1 instead, the person's three rows leak
        row = napp_calibration(cal.epsilon, 0.0, gradient_bound=1.0, hessian_bound=0.25)
        grid, weights = laplace_grid(row.noise_scale, n_points=20_000)
        leak = audit(lambda b, r: kifer_lasso_1d(b, r, 1.0, row.extra_ridge),
                     D_PRIME_1D + weighted, D_PRIME_1D, grid, weights, [cal.epsilon_spent])
        assert leak[0] > 0.05


def test_exact_1d_gaussian_audit_of_a_person():
    person = [(1.0, 0.0), (0.7, 0.0), (1.0, 0.0), (0.9, 0.0)]
    rows = D_PRIME_1D + person
    X = np.array([[x] for x, _ in rows])
    y = np.array([label for _, label in rows])
    cal = _calibration_1d(2.0, X, y, [0] + [1] * 4, delta=1e-5)
    assert cal.noise == "gaussian"
    weighted = [(x, label, 0.5) for x, label in person]
    grid, weights = gaussian_grid(cal.noise_scale, n_points=20_000)
    deltas = audit(lambda b, r: kifer_lasso_1d(b, r, 1.0, cal.extra_ridge),
                   D_PRIME_1D + weighted, D_PRIME_1D, grid, weights, [cal.epsilon_spent])
    assert deltas[0] <= cal.delta


# --------------------------------------------------------- refusals, before any noise


def _no_noise():
    """Patches that fail the test if any noise (or the private norm) is drawn."""
    boom = AssertionError("noise drawn before the refusal")
    return [mock.patch.object(mechanism_module, "draw_noise", side_effect=boom),
            mock.patch("skdp.linear_model._napp._estimators.noise_generator",
                       side_effect=boom),
            mock.patch("skdp.linear_model._base.PrivateLinearModel._resolve_data_norm",
                       side_effect=boom)]


def _refused(estimator, X, y, match, **fit_params):
    patches = _no_noise()
    for p in patches:
        p.start()
    try:
        with pytest.raises(ValueError, match=match):
            estimator.fit(X, y, **fit_params)
    finally:
        for p in patches:
            p.stop()


def test_private_data_norm_with_groups_is_refused_before_any_noise():
    X, y = _data()
    _refused(NAPPLassoClassifier(data_norm="private"), X, y, "data_norm='private'",
             groups=np.arange(len(y)) // 2)
    reg = NAPPLasso(data_norm="private", y_bound=3.0, coef_bound=5.0)
    _refused(reg, X, X[:, 0], "data_norm='private'", groups=np.arange(len(y)))


def test_research_variants_refuse_groups_before_any_noise():
    X, y = _data()
    _refused(ResearchNAPPLassoClassifier(research_mode="moor", data_norm=1.0), X, y,
             "research variant", groups=np.arange(len(y)))


def test_bad_groups_are_refused_before_any_noise():
    X, y = _data()
    clf = NAPPLassoClassifier(data_norm=1.0)
    with mock.patch.object(mechanism_module, "draw_noise",
                           side_effect=AssertionError("noise drawn")):
        with pytest.raises(ValueError, match="another number of labels"):
            clf.fit(X, y, groups=np.arange(len(y) - 1))
        groups = np.arange(len(y)).astype(float)
        groups[3] = np.nan
        with pytest.raises(ValueError, match="missing"):
            clf.fit(X, y, groups=groups)


@pytest.mark.parametrize("value", [0.0, -1.0])
def test_max_rows_per_group_must_be_positive(value):
    from sklearn.utils._param_validation import InvalidParameterError
    X, y = _data()
    with pytest.raises(InvalidParameterError, match="max_rows_per_group"):
        NAPPLassoClassifier(max_rows_per_group=value, data_norm=1.0).fit(
            X, y, groups=np.arange(len(y)))


def test_neighboring_and_statement_without_and_with_groups():
    X, y = _data()
    kw = dict(alpha=1.0, data_norm=1.0, random_state=0)
    plain = NAPPLassoClassifier(**kw).fit(X, y)
    assert plain.neighboring_ == "add_remove"
    assert plain.privacy_report_["unit"] == "one record"
    for relation, expected in (("add_remove", "add_remove_person"),
                               ("replace", "replace_person")):
        clf = NAPPLassoClassifier(neighboring=relation, **kw).fit(
            X, y, groups=np.arange(len(y)) // 3)
        assert clf.neighboring_ == expected
        assert clf.privacy_report_["neighboring"] == expected
        assert clf.privacy_report_["unit"] == "one person (all of their rows)"
        assert clf.privacy_guarantee_


def test_fit_release_with_groups_has_the_fits_coefficients():
    X, y = _data()
    clf = NAPPLassoClassifier(alpha=1.0, data_norm=1.0, random_state=0)
    release = clf.fit_release(X, y, groups=np.arange(len(y)) // 3)
    again = NAPPLassoClassifier(alpha=1.0, data_norm=1.0, random_state=0).fit(
        X, y, groups=np.arange(len(y)) // 3)
    assert np.array_equal(release.coef, again.coef_)
    assert clf.neighboring_ == "add_remove_person"


@pytest.mark.parametrize("delta", [0.0, 1e-5])
def test_fit_release_derivative_with_groups_matches_common_noise_refits(delta):
    # the person calibration's d extra_ridge / d epsilon (rank m) and, Gaussian, the chi
    # quantile's scale, through the implicit function theorem on the released minimiser
    X, y = _data(n=600, d=4, seed=2)
    X /= np.max(np.linalg.norm(X, axis=1))
    groups = np.arange(600) // 3
    est = NAPPLassoClassifier(alpha=3.0, delta=delta, epsilon=1.5, data_norm=1.0, tol=1e-11,
                              max_iter=300, max_rows_per_group=2.0, random_state=6)
    release = est.fit_release(X, y, groups=groups)
    assert est.privacy_report_["extra_ridge"] > 0
    analytic = np.concatenate([np.ravel(release.coef_derivative),
                               np.ravel(release.intercept_derivative)])
    h = 1e-4 * 1.5
    ends = [NAPPLassoClassifier(**{**est.get_params(), "epsilon": 1.5 + s * h}).fit(
        X, y, groups=groups) for s in (1, -1)]
    fd = (np.concatenate([ends[0].coef_.ravel(), ends[0].intercept_])
          - np.concatenate([ends[1].coef_.ravel(), ends[1].intercept_])) / (2 * h)
    assert np.linalg.norm(fd) > 0
    assert np.linalg.norm(analytic - fd) <= 1e-5 * np.linalg.norm(fd)
