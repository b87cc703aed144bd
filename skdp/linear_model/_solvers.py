"""Exact minimisation of smooth, strongly convex GLM objectives (sum form).

``J(theta) = C sum_i l(<x_i, theta>, y_i) + ridge/2 ||theta||^2 + <linear, theta>``
is minimised by Newton's method with a backtracking line search; convergence is
certified by the gradient norm, which also bounds the distance to the exact
minimiser by ``||grad J|| / ridge`` (strong convexity).
"""

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.linalg import cho_factor, cho_solve


@dataclass
class NewtonResult:
    theta: np.ndarray
    n_iter: int
    gradient_norm: float
    converged: bool


def glm_objective(theta, X, y, loss, C, ridge, linear):
    """Value of the sum-form objective."""
    z = X @ theta
    return C * np.sum(loss.loss(z, y)) + 0.5 * ridge * theta @ theta + linear @ theta


def glm_gradient(theta, X, y, loss, C, ridge, linear):
    """Gradient of the sum-form objective."""
    return C * (X.T @ loss.dz(X @ theta, y)) + ridge * theta + linear


def glm_hessian(theta, X, y, loss, C, ridge):
    """Hessian ``C X^T diag(l'') X + ridge I`` of the sum-form objective."""
    weights = C * loss.d2z(X @ theta, y)
    if sp.issparse(X):
        hessian = (X.T @ X.multiply(weights[:, None]).tocsr()).toarray()
    else:
        hessian = (X.T * weights) @ X
    hessian.flat[:: hessian.shape[0] + 1] += ridge
    return hessian


def _subsampled_hessian(theta, X, y, loss, C, ridge, stride):
    """The Hessian estimated from every ``stride``-th row (a fixed, public pattern)."""
    hessian = glm_hessian(theta, X[::stride], y[::stride], loss, C * stride, 0.0)
    hessian.flat[:: hessian.shape[0] + 1] += ridge
    return hessian


def newton_minimise(X, y, loss, *, C, ridge, linear, tol, max_iter, theta0=None):
    """Minimise the sum-form objective to ``||grad J|| <= tol``.

    While the gradient is far from zero the Newton system uses a Hessian estimated
    on a fixed subsample of rows (a cheaper descent direction); the last steps use
    the exact Hessian, whose quadratic convergence the certificate relies on. The
    subsample is abandoned as soon as a step fails to halve the gradient norm.
    """
    n, d = X.shape
    stride = max(1, n // (20 * d))
    theta = np.zeros(d) if theta0 is None else np.array(theta0, dtype=float)
    objective = lambda t: glm_objective(t, X, y, loss, C, ridge, linear)  # noqa: E731
    value = objective(theta)
    first_norm = previous_norm = None
    subsample = stride > 1
    for n_iter in range(max_iter + 1):
        gradient = glm_gradient(theta, X, y, loss, C, ridge, linear)
        gradient_norm = float(np.linalg.norm(gradient))
        if first_norm is None:
            first_norm = gradient_norm
        elif gradient_norm > 0.5 * previous_norm or gradient_norm < 1e-3 * first_norm:
            subsample = False
        previous_norm = gradient_norm
        if gradient_norm <= tol or n_iter == max_iter:
            break
        if subsample:
            hessian = _subsampled_hessian(theta, X, y, loss, C, ridge, stride)
        else:
            hessian = glm_hessian(theta, X, y, loss, C, ridge)
        step = cho_solve(cho_factor(hessian, check_finite=False), gradient, check_finite=False)
        decrease = gradient @ step
        t = 1.0
        candidate = theta - step
        candidate_value = objective(candidate)
        # Near the optimum the predicted decrease is below the rounding of J: take
        # the Newton step and let the gradient certificate decide.
        if decrease > 1e-12 * (1.0 + abs(value)):
            while candidate_value > value - 1e-4 * t * decrease and t > 1e-10:
                t *= 0.5
                candidate = theta - t * step
                candidate_value = objective(candidate)
        theta, value = candidate, candidate_value
    return NewtonResult(theta, n_iter, gradient_norm, gradient_norm <= tol)
