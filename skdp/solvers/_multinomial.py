"""Certified minimisation of the multinomial (softmax) objective (sum form).

``J(Theta) = C sum_i w_i [logsumexp(Theta x_i) - (Theta x_i)_{y_i}] + ridge/2
||Theta||^2 + <B, Theta>`` (row weights ``w_i >= 0``, 1 by default) over coefficient
matrices ``Theta`` of shape ``(K, d)``, by truncated Newton: each direction solves the
Newton system by preconditioned conjugate gradients on Hessian-vector products, never forming the ``dK x dK`` Hessian. As for
:func:`~skdp.solvers.newton_minimise`, the certificate is the gradient's Frobenius
norm plus an estimate of its rounding error; by ``ridge``-strong convexity it bounds
the distance to the exact minimiser by ``certified_norm / ridge``. Where that estimate
(linear in the number of rows) makes it inconclusive, the gradient is recomputed in
double-double with a proven bound (:mod:`skdp.solvers._accurate`).
"""

import numpy as np
from scipy.special import softmax

from ..losses import SoftmaxLoss
from ..utils import _double_double as dd
from ..utils._docstrings import fill_doc
from ._accurate import accurate_data_gradient, assemble_gradient, refine_and_certify
from ._design import as_design, is_sparse
from ._newton import (_MAX_HESSIAN_ENTRIES, _MAX_PRODUCTS_PER_STEP, _REFINEMENT_FORCING,
                      NewtonResult, _backtrack, _conjugate_gradient, _row_norms,
                      _weighted_column_squares)

_LOSS = SoftmaxLoss()
_DOC = {"softmax_problem": """X : {ndarray, sparse matrix} of shape (n_samples, n_coefficients)
        The design.
    Y : ndarray of shape (n_samples, n_classes)
        One-hot labels.
    C : float
        Weight of the loss sum.
    ridge : float
        L2 curvature (the strong convexity).
    linear : ndarray of shape (n_classes, n_coefficients)
        The linear term (the noise of objective perturbation).
    weights : ndarray of shape (n_samples,), default=None
        Non-negative weight of each row's loss (``None``: every row weighs 1)."""}


@fill_doc(fragments=_DOC)
class MultinomialProblem:
    """The perturbed softmax objective of one dataset, and its derivatives.

    Parameters
    ----------
    %(softmax_problem)s
    """

    def __init__(self, X, Y, C, ridge, linear, weights=None):
        self.X, self.Y, self.C, self.ridge, self.linear = X, Y, C, ridge, linear
        self.weights = weights

    def _weighted(self, values, rows=slice(None)):
        """``values`` (one row per sample, or per sample of ``rows``) times the rows'
        weights (in place; ``values`` itself without weights)."""
        if self.weights is None:
            return values
        values *= self.weights[rows, None] if values.ndim == 2 else self.weights[rows]
        return values

    def scores(self, theta):
        """``X Theta^T``, shape (n_samples, n_classes)."""
        return np.asarray(self.X @ theta.T)

    def value(self, theta, scores):
        """Objective at ``theta`` given its scores."""
        return (self.C * np.sum(self._weighted(_LOSS.loss(scores, self.Y)))
                + 0.5 * self.ridge * np.sum(theta**2)
                + np.sum(self.linear * theta))

    def gradient(self, theta, residual):
        """Gradient given the residual ``softmax(scores) - Y``."""
        return self.C * np.asarray(self.X.T @ residual).T + self.ridge * theta + self.linear

    def hessian_product(self, probabilities, direction):
        """``H V``: ``C [(P o T) - P o rowsum(P o T)]^T X + ridge V`` with ``T = X V^T``.

        A dense ``X`` is read by blocks of rows that stay in cache between the two
        products (as the GLM solver's products).
        """
        total = np.zeros(direction.shape[::-1])
        for start, stop, block in as_design(self.X).blocks():
            p = probabilities[start:stop]
            weighted = p * np.asarray(block @ direction.T)
            weighted -= p * weighted.sum(axis=1, keepdims=True)
            total += np.asarray(block.T @ self._weighted(weighted, slice(start, stop)))
        return self.C * total.T + self.ridge * direction

    def hessian_diagonal(self, probabilities):
        """The Hessian's diagonal: ``C sum_i w_i p_ik (1 - p_ik) x_ij^2 + ridge``."""
        curvature = self._weighted(probabilities * (1.0 - probabilities))
        return self.C * _weighted_column_squares(self.X, curvature).T + self.ridge

    def uses_gram_preconditioner(self):
        """Whether the Gram matrix ``X^T X`` (computed once) preconditions CG.

        It captures the correlation of the features, which the diagonal misses;
        it is used when it is small and costs at most about 30 Hessian-vector
        products to form (``n d^2 / 2`` against ``2 n d K`` per product): the
        shape decides, never the values.
        """
        d, n_classes = self.X.shape[1], self.Y.shape[1]
        return (not is_sparse(self.X) and d * d <= _MAX_HESSIAN_ENTRIES
                and d <= 120 * n_classes)

    def gram_eigen(self):
        """Eigenvalues and eigenvectors of ``X^T X`` (cached)."""
        if not hasattr(self, "_gram_eigen"):
            values, vectors = np.linalg.eigh(self.X.T @ self.X)
            self._gram_eigen = (np.maximum(values, 0.0), vectors)
        return self._gram_eigen

    def preconditioner(self, probabilities):
        """An approximation of ``H^{-1}``, for matrices of the shape of ``Theta``.

        With the Gram matrix: class ``k``'s block ``C X^T diag(p_k (1 - p_k)) X +
        ridge I`` with the weights replaced by their mean, inverted in the Gram
        eigenbasis (the classes' coupling is left out); else the inverse diagonal.
        """
        curvature = self._weighted(probabilities * (1.0 - probabilities))
        if not self.uses_gram_preconditioner():
            inverse_diagonal = 1.0 / self.hessian_diagonal(probabilities)
            return inverse_diagonal.__mul__
        values, vectors = self.gram_eigen()
        inverse = 1.0 / (self.C * np.outer(curvature.mean(axis=0), values) + self.ridge)
        return lambda residual: ((residual @ vectors) * inverse) @ vectors.T

    def solve(self, probabilities, rhs, rtol, max_products):
        """``H^{-1} rhs`` by preconditioned conjugate gradients."""
        shape = rhs.shape
        precondition = self.preconditioner(probabilities)

        def product(v):
            return self.hessian_product(probabilities, v.reshape(shape)).ravel()

        solution, _ = _conjugate_gradient(product, rhs.ravel(),
                                          lambda r: precondition(r.reshape(shape)).ravel(),
                                          rtol, max_products)
        return solution.reshape(shape)

    def rounding_bound(self, theta, residual, row_norms):
        """Rounding estimate of the computed gradient's norm (as for the GLM solver)."""
        magnitude = (self.C * (np.linalg.norm(residual, axis=1) @ row_norms)
                     + self.ridge * np.linalg.norm(theta) + np.linalg.norm(self.linear))
        return float(np.finfo(float).eps * magnitude)

    def accurate_certificate(self, theta, tol, row_norm):
        """:func:`~skdp.solvers._accurate.refine_and_certify` for this objective:
        ``(theta, certified_norm, steps)`` or ``None``. A refinement step solves the
        Newton system at the point by conjugate gradients to
        :data:`~skdp.solvers._newton._REFINEMENT_FORCING`."""
        def slopes(scores, rows, scores_bound):
            residual, error = _LOSS.dz_accurate(scores, self.Y[rows], scores_bound)
            if self.weights is None:
                return residual, error
            weights = self.weights[rows]
            residual = dd.mul_double(residual, weights[:, None])
            rounding = ((dd.MUL_ERROR + 1.0) * dd.U**2 * (1.0 + 1e-15)
                        * np.sum(np.abs(residual[0]), axis=1))
            return residual, weights * error + rounding + dd.TINY

        def gradient_at(point):
            transposed = (point[0].T, point[1].T)   # (d, K), as the products take it
            data, bound, scores = accurate_data_gradient(self.X, transposed, slopes, row_norm)
            gradient, bound = assemble_gradient((data[0].T, data[1].T), bound, point, self.C,
                                                self.ridge, self.linear)
            return gradient, bound, scores

        def newton_step(scores, gradient):
            return self.solve(softmax(scores, axis=1), gradient, _REFINEMENT_FORCING,
                              _MAX_PRODUCTS_PER_STEP)

        return refine_and_certify(theta, gradient_at, newton_step, ridge=self.ridge, tol=tol)


@fill_doc(fragments=_DOC)
def multinomial_minimise(X, Y, *, C, ridge, linear, tol, max_iter, weights=None):
    """Minimise the softmax objective to a certified gradient norm ``tol``.

    Parameters
    ----------
    %(softmax_problem)s
    tol : float
        Public tolerance on the gradient's Frobenius norm.
    max_iter : int
        Maximum number of Newton steps.

    Returns
    -------
    result : NewtonResult
        ``theta`` of shape (n_classes, n_coefficients). When the certificate is
        inconclusive (the computed norm at most ``max(tol, estimate)``, or below
        ``tol`` with an estimate above it), the fallback of
        :meth:`MultinomialProblem.accurate_certificate` decides.
    """
    problem = MultinomialProblem(X, Y, C, ridge, linear, weights)
    return softmax_newton(_InMemorySoftmax(problem), np.zeros((Y.shape[1], X.shape[1])),
                          tol, max_iter)


class _InMemorySoftmax:
    """:class:`MultinomialProblem` in :func:`softmax_newton`'s protocol: an iterate's
    ``stats`` are its scores, probabilities and residual ``softmax(scores) - Y``."""

    def __init__(self, problem):
        self.problem, self.row_norms = problem, _row_norms(problem.X)

    def evaluate(self, theta):
        scores = self.problem.scores(theta)
        probabilities = softmax(scores, axis=1)
        residual = self.problem._weighted(probabilities - self.problem.Y)
        return ((scores, probabilities, residual),
                self.problem.value(theta, scores))

    def gradient(self, theta, stats):
        return self.problem.gradient(theta, stats[2])

    def rounding_bound(self, theta, stats):
        return self.problem.rounding_bound(theta, stats[2], self.row_norms)

    def solve(self, theta, stats, rhs, rtol, max_products):
        return self.problem.solve(stats[1], rhs, rtol, max_products)

    def accurate_certificate(self, theta, stats, tol):
        return self.problem.accurate_certificate(
            theta, tol, float(np.max(self.row_norms, initial=0.0)))


def softmax_newton(problem, theta, tol, max_iter):
    """Truncated Newton from ``theta`` to a certified gradient norm ``tol``, for a
    softmax ``problem`` in memory or over partitions.

    ``problem`` gives ``evaluate(theta) -> (stats, value)``, ``gradient(theta,
    stats)``, ``rounding_bound(theta, stats)``, ``solve(theta, stats, rhs, rtol,
    max_products)`` and ``accurate_certificate(theta, stats, tol)``. The iteration
    stops when the gradient's norm plus its rounding estimate is within ``tol``, when
    the norm stalls at the rounding level, or after ``max_iter`` steps; an
    inconclusive certificate then goes to the problem's double-double fallback.
    """
    stats, value = problem.evaluate(theta)
    first_norm = previous_norm = None
    for n_iter in range(max_iter + 1):
        gradient = problem.gradient(theta, stats)
        gradient_norm = float(np.linalg.norm(gradient))
        rounding = problem.rounding_bound(theta, stats)
        stalled = previous_norm is not None and rounding >= gradient_norm > 0.5 * previous_norm
        first_norm = gradient_norm if first_norm is None else first_norm
        previous_norm = gradient_norm
        hopeless = gradient_norm <= tol <= rounding   # the fallback's turn
        if gradient_norm + rounding <= tol or stalled or hopeless or n_iter == max_iter:
            break
        forcing = min(0.5, np.sqrt(gradient_norm / first_norm))
        step = problem.solve(theta, stats, gradient, forcing, _MAX_PRODUCTS_PER_STEP)
        theta, stats, value = _backtrack(theta, step, float(np.sum(gradient * step)), value,
                                         problem.evaluate)
    certified_norm = gradient_norm + rounding
    if certified_norm > tol and gradient_norm <= max(tol, rounding):
        accurate = problem.accurate_certificate(theta, stats, tol)
        if accurate is not None:
            theta, certified_norm, steps = accurate
            n_iter += steps
    return NewtonResult(theta, n_iter, certified_norm, certified_norm <= tol)


def multinomial_hessian_solve(theta, X, Y, C, ridge, rhs, *, rtol=1e-10, weights=None):
    """Solve ``H U = rhs`` with ``H`` the softmax objective's Hessian at ``theta``.

    Parameters
    ----------
    theta : ndarray of shape (n_classes, n_coefficients)
        The point.
    X : {ndarray, sparse matrix} of shape (n_samples, n_coefficients)
        The design.
    Y : ndarray of shape (n_samples, n_classes)
        One-hot labels.
    C, ridge : float
        As in :func:`multinomial_minimise`.
    rhs : ndarray of shape (n_classes, n_coefficients)
        The right-hand side.
    rtol : float, default=1e-10
        Relative residual of the conjugate-gradient solve.
    weights : ndarray of shape (n_samples,), default=None
        The rows' weights, as in :func:`multinomial_minimise`.

    Returns
    -------
    solution : ndarray of shape (n_classes, n_coefficients)
    """
    problem = MultinomialProblem(X, Y, C, ridge, np.zeros_like(theta), weights)
    probabilities = softmax(problem.scores(theta), axis=1)
    return problem.solve(probabilities, np.asarray(rhs, dtype=float), rtol,
                         10 * theta.size + 100)
