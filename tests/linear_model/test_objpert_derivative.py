"""Pathwise derivative dtheta/depsilon of objective perturbation against common-noise
central differences (spec epsilon_for_utility_math.md 7.1-7.2)."""

import numpy as np
import pytest
from sklearn.datasets import make_classification

from skdp import ObjPertLogisticRegression


def _theta(epsilon, seed, **params):
    (sol,) = ObjPertLogisticRegression(epsilon=epsilon, random_state=seed, tol=1e-11,
                                       **{"C": 1.0, **params})._releases(*_DATA)
    return sol


_DATA = make_classification(n_samples=2000, n_features=5, n_informative=3, random_state=0)

CASES = [
    ("KST Gaussian", 1.0, dict(delta=1e-5)),
    ("KST Gaussian, replace", 0.3, dict(delta=1e-5, neighboring="replace")),
    ("Chaudhuri main branch", 3.0, dict(C=0.1)),
    ("Chaudhuri extra-ridge branch", 0.2, dict(C=1.0)),
    ("Chaudhuri extra-ridge, replace, frac 0.05", 0.5, dict(neighboring="replace",
                                                           eps_jacobian_frac=0.05)),
    ("Chaudhuri paper rule, fallback", 0.2, dict(delta_rule="paper", neighboring="replace")),
    ("Huber, KST Gaussian", 2.0, dict(loss="huber", delta=1e-6, huber_h=0.5)),
]

# C="auto" moves C with epsilon: the derivative adds dtheta/dC times dC/depsilon
AUTO_CASES = [
    ("C auto, Chaudhuri", 1.0, dict(C="auto")),
    ("C auto, Chaudhuri, replace", 3.0, dict(C="auto", neighboring="replace")),
    ("C auto, KST Gaussian", 0.5, dict(C="auto", delta=1e-5)),
]


@pytest.mark.parametrize("name, eps, params", CASES + AUTO_CASES,
                         ids=[c[0] for c in CASES + AUTO_CASES])
def test_analytic_derivative_matches_common_noise_differences(name, eps, params):
    sol = _theta(eps, 7, **params)
    analytic = sol.theta_derivative()
    h = 1e-5 * eps
    fd = (_theta(eps + h, 7, **params).theta - _theta(eps - h, 7, **params).theta) / (2 * h)
    rel = np.linalg.norm(analytic - fd) / np.linalg.norm(fd)
    assert rel < 1e-6, f"{name}: relative error {rel:.2e}"


@pytest.mark.parametrize("name, eps, params", CASES, ids=[c[0] for c in CASES])
def test_cover_derivative_matches_the_difference_of_cover_noises(name, eps, params):
    """The cover's noise is an exact function of epsilon for fixed draws: its derivative
    is checked alone, at the largest tol, where the noise is largest (a derivative off
    by the cover's share 1/0.01, or missing the extra ridge's move, fails)."""
    def cover(epsilon):
        (sol,) = ObjPertLogisticRegression(epsilon=epsilon, random_state=7, tol=1e-6,
                                           **{"C": 1.0, **params})._releases(*_DATA)
        return sol.cover_draw.vector(sol.cover.scale)

    (sol,) = ObjPertLogisticRegression(epsilon=eps, random_state=7, tol=1e-6,
                                       **{"C": 1.0, **params})._releases(*_DATA)
    h = 1e-5 * eps
    fd = (cover(eps + h) - cover(eps - h)) / (2 * h)
    assert np.linalg.norm(sol.cover_derivative() - fd) <= 1e-6 * np.linalg.norm(fd)


def test_source_paper_sign_would_fail_the_check():
    """Regression test for the sign error of the source paper's eq. (6): with
    b' = +|s'| z the derivative disagrees with the common-noise difference."""
    eps, params = 1.0, dict(delta=1e-5)
    sol = _theta(eps, 3, **params)
    h = 1e-5
    fd = (_theta(eps + h, 3, **params).theta - _theta(eps - h, 3, **params).theta) / (2 * h)
    d = sol.calibration
    from scipy.linalg import solve

    from skdp.solvers import glm_hessian
    W = glm_hessian(sol.minimiser, sol.X, sol.y, sol.loss, sol.C, sol.ridge)
    wrong = -solve(W, d.d_extra_ridge * sol.minimiser + abs(d.d_log_noise_scale) * sol.noise)
    assert np.linalg.norm(wrong - fd) / np.linalg.norm(fd) > 0.5
    assert np.linalg.norm(sol.theta_derivative() - fd) / np.linalg.norm(fd) < 1e-6


def test_training_loss_decreases_with_epsilon_on_average():
    """Spec 7.7: F'(epsilon) < 0 on average for F the training log-loss."""
    X, y = _DATA
    slopes = []
    for seed in range(20):
        sol = _theta(0.5, seed, delta=1e-5)
        margins = sol.y * (sol.X @ sol.theta)
        grad_f = sol.X.T @ (-sol.y / (1 + np.exp(margins))) / len(y)
        slopes.append(grad_f @ sol.theta_derivative())
    assert np.mean(slopes) < 0
