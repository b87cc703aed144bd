"""Multinomial (softmax) objective perturbation: solver, calibration, replay, derivative.

The replay checks read the bounds back from the calibration a fit applied and
recompute, independently, what they bound: the move of the loss-sum gradient between
neighbours (at most ``zeta``), and the log-determinant ``log det(I + E / lambda)`` of a
differing record's Hessian term ``E`` (at most the Jacobian share of epsilon, over
``m = 1`` add/remove or 2 replace), which is where the rank ``K - 1`` enters.
"""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.special import softmax
from scipy.stats import chi2
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression

from skdp import ObjPertLogisticRegression
from skdp.mechanisms import split_budget
from skdp.mechanisms._objective_perturbation import chaudhuri_calibration, kst_calibration

K = 3


def _softmax_gradient(theta, X, Y, C):
    """``C (softmax(X Theta^T) - Y)^T X``, the loss sum's gradient (no ridge)."""
    return C * (softmax(X @ theta.T, axis=1) - Y).T @ X


def _record_hessian(theta, x, C):
    """``C (diag(p) - p p^T) kron x x^T`` of one record, in the row-major ``Theta``."""
    p = softmax(theta @ x)
    return C * np.kron(np.diag(p) - np.outer(p, p), np.outer(x, x))


def _data(n=12, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    X *= (rng.uniform(0.2, 0.9, size=n) / np.linalg.norm(X, axis=1))[:, None]
    return X, np.arange(n) % K


def _neighbours(relation):
    X, y = _data()
    for row, label in [(10.0 * np.array([0.6, -0.8]), 2), (X[1] / np.linalg.norm(X[1]), 0),
                       (np.array([0.3, 0.2]), 1)]:
        if relation == "replace":
            X2, y2 = X.copy(), y.copy()
            X2[0], y2[0] = row, label
        else:
            X2, y2 = np.vstack([X, row]), np.append(y, label)
        yield (X, y), (X2, y2)


def _probes(solutions, records):
    """The released solutions, zero (uniform p: the largest Hessian), and for each
    differing record, matrices that make its softmax nearly one-hot on a wrong class
    (``||p - e_y||`` near ``sqrt(2)``, the largest gradient)."""
    points = [s.minimiser for s in solutions] + [np.zeros_like(solutions[0].minimiser)]
    for x, label in records:
        for wrong in range(K):
            if wrong != label:
                direction = np.outer(np.eye(K)[wrong] - np.eye(K)[label], x) / (x @ x)
                points += [8.0 * direction, 30.0 * direction]
    return points


def _bounds_used(solution, epsilon, delta, relation):
    """``zeta`` and one differing record's Jacobian budget, read from the calibration."""
    budget = split_budget(epsilon, delta)
    eps_m, delta_m = budget.epsilon_mechanism, budget.delta_mechanism
    cal = solution.calibration
    m = 2.0 if relation == "replace" else 1.0
    if cal.noise == "gaussian":
        # the tail of ||P_V b||, V of dimension K - 1 (2 (K - 1) under replace)
        dim = (K - 1) * int(m)
        q2 = max(2.0 * np.log(2.0 / delta_m), chi2.isf(delta_m, dim))
        zeta = cal.noise_scale * eps_m / np.sqrt(4.0 * q2 + 4.0 * eps_m)
        # KST's extra ridge bounds one record's term by eps / 2 under either relation
        # (a replaced record's own term only lowers the ratio)
        return zeta, eps_m / 2.0
    return cal.noise_scale * cal.epsilon_noise, (eps_m - cal.epsilon_noise) / m


@pytest.mark.parametrize("relation", ["add_remove", "replace"])
@pytest.mark.parametrize("epsilon, delta", [(0.3, 0.0), (8.0, 0.0), (1.0, 1e-5)])
def test_gradient_move_and_log_determinant_within_the_calibration(relation, epsilon, delta):
    C = 2.0
    est = ObjPertLogisticRegression(epsilon=epsilon, delta=delta, C=C, neighboring=relation,
                                    random_state=0)
    largest_move, largest_logdet = 0.0, 0.0
    for (Xa, ya), (Xb, yb) in _neighbours(relation):
        (a,), (b,) = est._releases(Xa, ya), est._releases(Xb, yb)
        zeta, jacobian_budget = _bounds_used(a, epsilon, delta, relation)
        records = [(b.X[-1], yb[-1])] if relation == "add_remove" else \
            [(a.X[0], ya[0]), (b.X[0], yb[0])]
        for theta in _probes([a, b], records):
            move = np.linalg.norm(_softmax_gradient(theta, a.X, a.y, C)
                                  - _softmax_gradient(theta, b.X, b.y, C))
            assert move <= zeta * (1 + 1e-9)
            largest_move = max(largest_move, move / zeta)
            for x, _ in records:
                eigenvalues = np.linalg.eigvalsh(_record_hessian(theta, x, C))
                assert np.sum(eigenvalues > 1e-12) <= K - 1
                logdet = np.sum(np.log1p(np.maximum(eigenvalues, 0.0) / a.ridge))
                assert logdet <= jacobian_budget * (1 + 1e-9)
                largest_logdet = max(largest_logdet, logdet / jacobian_budget)
    # not vacuous: the canary nearly attains zeta (replace: 2 records' worth, ~half)
    assert largest_move > (0.99 if relation == "add_remove" else 0.49)
    assert largest_logdet > 0.3


def test_calibration_by_hand():
    """Pure: the Jacobian term is (K - 1) log(1 + c/lambda); KST: the extra ridge is
    2 (K - 1) c / epsilon; the gradient bound is sqrt(2) C R."""
    G, beta, r = np.sqrt(2.0) * 3.0, 0.5 * 3.0, K - 1
    pure = chaudhuri_calibration(2.0, gradient_bound=G, hessian_bound=beta, ridge=1.0,
                                 neighboring="add_remove", hessian_rank=r)
    jacobian = r * np.log1p(beta)
    assert jacobian > 0.5 * 2.0  # the extra-ridge branch: the Jacobian gets half
    assert pure.extra_ridge == pytest.approx(beta / np.expm1(0.5 * 2.0 / r) - 1.0)
    assert pure.noise_scale == pytest.approx(G / 1.0)
    gaussian = kst_calibration(2.0, 1e-5, gradient_bound=G, hessian_bound=beta,
                               neighboring="add_remove", hessian_rank=r)
    assert gaussian.extra_ridge == pytest.approx(2 * r * beta / 2.0)


@pytest.mark.parametrize("relation", ["add_remove", "replace"])
@pytest.mark.parametrize("n_classes", [3, 5, 10])
def test_gaussian_noise_covers_the_softmax_gradient_subspace(n_classes, relation):
    """The Gaussian softmax fit's noise: ``zeta sqrt(4 q^2 + 4 eps) / eps`` with ``q^2 =
    max(2 log(2/delta), chi2.isf(delta, m))``, ``m = K - 1`` (a record's ``p - e_y``
    sums to 0) or ``2 (K - 1)`` under replace, capped at ``(K - 1) d``; computed here
    from the derivation, at the mechanism's share of the budget. For ``K = 3`` under
    add/remove (``m = 2``) it is Kifer et al.'s constant, unchanged."""
    rng = np.random.default_rng(1)
    n, d, C, epsilon, delta = 40, 3, 3.0, 1.0, 1e-5
    X = rng.normal(size=(n, d - 1))
    y = np.arange(n) % n_classes
    (sol,) = ObjPertLogisticRegression(epsilon=epsilon, delta=delta, C=C, data_norm=1.0,
                                       neighboring=relation, random_state=0)._releases(X, y)
    eps_m, delta_m = 0.99 * epsilon, delta * np.exp(-0.005 * epsilon)
    factor = 2.0 if relation == "replace" else 1.0
    zeta = factor * np.sqrt(2.0) * C * np.sqrt(2.0)       # R = sqrt(1 + 1), intercept
    m = min(int(factor) * (n_classes - 1), (n_classes - 1) * d)
    q2 = max(2.0 * np.log(2.0 / delta_m), chi2.isf(delta_m, m))
    assert_allclose(sol.calibration.noise_scale, zeta * np.sqrt(4 * q2 + 4 * eps_m) / eps_m,
                    rtol=1e-12)
    kifer = zeta * np.sqrt(8.0 * np.log(2.0 / delta_m) + 4.0 * eps_m) / eps_m
    if m <= 2:
        assert_allclose(sol.calibration.noise_scale, kifer, rtol=1e-14)
    else:
        assert sol.calibration.noise_scale > kifer * (1 + 1e-3)
    assert_allclose(sol.calibration.extra_ridge,
                    2 * (n_classes - 1) * 0.5 * C * 2.0 / eps_m, rtol=1e-12)


def test_estimator_passes_the_softmax_constants():
    X, y = _data(30)
    (sol,) = ObjPertLogisticRegression(epsilon=1.0, C=3.0, random_state=0)._releases(X, y)
    R = np.sqrt(2.0)  # data_norm 1 and the intercept column 1
    expected = chaudhuri_calibration(split_budget(1.0, 0.0).epsilon_mechanism,
                                     gradient_bound=np.sqrt(2.0) * 3.0 * R,
                                     hessian_bound=0.5 * 3.0 * R**2, ridge=1.0,
                                     neighboring="add_remove", hessian_rank=K - 1)
    assert sol.calibration.noise_scale == pytest.approx(expected.noise_scale)
    assert sol.calibration.extra_ridge == pytest.approx(expected.extra_ridge)
    assert sol.theta.shape == (K, 3) and len(sol.draw.vector(1.0)) == 3 * K


def test_infinite_epsilon_is_sklearn_multinomial_on_the_augmented_design():
    X, y = make_classification(n_samples=600, n_features=6, n_informative=4, n_classes=4,
                               random_state=0)
    X /= np.linalg.norm(X, axis=1).max()
    model = ObjPertLogisticRegression(epsilon=np.inf, C=5.0, tol=1e-10).fit(X, y)
    (sol,) = ObjPertLogisticRegression(epsilon=np.inf, C=5.0, tol=1e-10)._releases(X, y)
    gradient = _softmax_gradient(sol.theta, sol.X, sol.y, 5.0) + sol.theta
    assert np.linalg.norm(gradient) <= 1e-10  # the certificate, recomputed
    reference = LogisticRegression(C=5.0, fit_intercept=False, tol=1e-12, max_iter=10_000)
    reference.fit(np.hstack([X, np.ones((len(X), 1))]), y)
    assert_allclose(model.coef_, reference.coef_[:, :-1], atol=1e-4)
    assert_allclose(model.intercept_, reference.coef_[:, -1], atol=1e-4)
    assert_allclose(model.predict_proba(X), reference.predict_proba(
        np.hstack([X, np.ones((len(X), 1))])), atol=1e-4)


def test_multinomial_spends_the_whole_budget_on_one_problem_ovr_splits_it():
    X, y = _data(60)
    (multi,) = ObjPertLogisticRegression(epsilon=2.0, random_state=0)._releases(X, y)
    ovr = ObjPertLogisticRegression(epsilon=2.0, multi_class="ovr", random_state=0)._releases(
        X, y)
    assert multi.n_problems == 1 and len(ovr) == K
    with pytest.raises(ValueError, match="multinomial.*needs loss='logistic'"):
        ObjPertLogisticRegression(loss="huber", multi_class="multinomial").fit(X, y)
    huber = ObjPertLogisticRegression(loss="huber", random_state=0).fit(X, y)
    assert huber.coef_.shape == (K, 2)  # auto: one-vs-rest for the Huber loss


@pytest.mark.parametrize("epsilon, params", [
    (3.0, dict(C=0.1)), (0.3, {}), (1.0, dict(delta=1e-5)), (2.0, dict(C="auto")),
    # the chi-square tail (m = 2 (K - 1) = 4, and m = K - 1 = 5)
    (1.0, dict(delta=1e-5, neighboring="replace")), (1.5, dict(delta=1e-6, n_classes=6))])
def test_derivative_matches_common_noise_differences(epsilon, params):
    params = dict(params)
    n_classes = params.pop("n_classes", 3)
    X, y = make_classification(n_samples=800, n_features=5, n_informative=3,
                               n_classes=n_classes, n_clusters_per_class=1 + (n_classes == 3),
                               random_state=1)

    def release(eps):
        (sol,) = ObjPertLogisticRegression(epsilon=eps, random_state=7, tol=1e-11,
                                           **{"C": 1.0, **params})._releases(X, y)
        return sol

    h = 1e-5 * epsilon
    fd = (release(epsilon + h).theta - release(epsilon - h).theta) / (2 * h)
    analytic = release(epsilon).theta_derivative()
    assert np.linalg.norm(analytic - fd) <= 1e-6 * np.linalg.norm(fd)


@pytest.mark.parametrize("gram", [True, False])
def test_both_preconditioners_reach_the_certified_minimiser(gram, monkeypatch):
    from skdp.solvers import _multinomial

    X, y = make_classification(n_samples=500, n_features=8, n_informative=5, n_classes=4,
                               random_state=2)
    X /= np.linalg.norm(X, axis=1).max()
    Y = np.eye(4)[y]
    linear = np.random.default_rng(0).normal(size=(4, 8)) * 5
    monkeypatch.setattr(_multinomial.MultinomialProblem, "uses_gram_preconditioner",
                        lambda self: gram)
    result = _multinomial.multinomial_minimise(X, Y, C=3.0, ridge=2.0, linear=linear,
                                               tol=1e-9, max_iter=100)
    gradient = _softmax_gradient(result.theta, X, Y, 3.0) + 2.0 * result.theta + linear
    assert result.converged and np.linalg.norm(gradient) <= 1e-9


@pytest.mark.parametrize("relation", ["add_remove", "replace"])
def test_output_perturbation_minimisers_move_within_the_sensitivity_used(relation):
    """The exact softmax minimisers of neighbours are within the base sensitivity the
    noise used, which is sqrt(2) C R (twice that under replace). With a small C the
    ridge dominates and the move is about C ||p - e_y|| ||x||, with p near uniform:
    ||p - e_y|| = sqrt(6) / 3 of the bound's sqrt(2) for three classes."""
    from skdp import OutputPertSVM

    C = 0.05
    est = OutputPertSVM(epsilon=1.0, C=C, loss="logistic", neighboring=relation, tol=1e-6,
                        random_state=0)
    largest = 0.0
    for (Xa, ya), (Xb, yb) in _neighbours(relation):
        (a,), (b,) = est._releases(Xa, ya), est._releases(Xb, yb)
        factor = 2.0 if relation == "replace" else 1.0
        assert a.base_sensitivity == pytest.approx(factor * np.sqrt(2.0) * C * np.sqrt(2.0))
        assert a.theta_star.shape == (K, 3) and len(a.draw.vector(1.0)) == 3 * K
        move = np.linalg.norm(a.theta_star - b.theta_star)
        assert move <= a.base_sensitivity + 2 * a.slack
        largest = max(largest, move / a.base_sensitivity)
    # not vacuous: near sqrt(6) / 3 / sqrt(2) = 0.577 (replace: half, two records' bound)
    assert largest > (0.5 if relation == "add_remove" else 0.25)


def test_output_perturbation_laplace_noise_reduction_with_a_multinomial_model():
    from skdp import OutputPertSVM

    X, y = _data(60)
    est = OutputPertSVM(epsilon=0.5, C=1.0, loss="logistic", noise="laplace", random_state=0)
    path = est._noise_reduction_path(X, y)
    first, second = path.release(0.5), path.release(2.0)
    assert first.coef_.shape == second.coef_.shape == (K, 2)
    assert second.epsilon_spent_ == 2.0
