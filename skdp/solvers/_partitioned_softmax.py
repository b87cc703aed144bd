"""The certified softmax (multinomial) solver over row partitions.

:func:`partitioned_multinomial_minimise` is :func:`~skdp.solvers.multinomial_minimise`
with every pass over the rows a reduction over the partitions of a
:class:`~skdp.solvers._partitioned.PartitionedDesign` whose targets are the one-hot
labels (:func:`one_hot`, mapped inside each partition): per iterate one pass for the
loss sum, the ``(K, d)`` gradient, the rounding magnitude and the per-class curvature
sums; per conjugate-gradient step one pass for a Hessian-vector product; the ``d x d``
Gram matrix of the preconditioner once per fit (where the in-memory rule forms it),
else the Hessian's diagonal once per Newton step. The certificate and its double-double
fallback are those of the in-memory solver, with each partition's accurate partial
gradient and proven bound added on the driver.
"""

import numpy as np
from scipy.special import softmax

from ..losses import SoftmaxLoss
from ._newton import (_MAX_HESSIAN_ENTRIES, _MAX_PRODUCTS_PER_STEP, _REFINEMENT_FORCING,
                      _conjugate_gradient)
from ._multinomial import softmax_newton
from ._partitioned import add_accurate_partials

_LOSS = SoftmaxLoss()


def one_hot(labels, n_classes):
    """One-hot targets of class indices, shape (n, n_classes) (inside a partition)."""
    Y = np.zeros((len(labels), n_classes))
    Y[np.arange(len(labels)), labels] = 1.0
    return Y


def _iterate_pass(design, Y, theta, diagonal):
    """One partition's share at ``theta``: ``[loss sum, sum_i ||r_i|| ||z_i||]``, the
    data gradient ``R^T Z`` (``R = softmax(Z Theta^T) - Y``, shape (K, d)), the
    per-class curvature sums ``sum_i p_ik (1 - p_ik)`` and, when ``diagonal``, the
    data part of the Hessian's diagonal ``sum_i p_ik (1 - p_ik) z_ij^2`` (else empty)."""
    scores = np.asarray(design @ theta.T)
    probabilities = softmax(scores, axis=1)
    residual = probabilities - Y
    curvature = probabilities * (1.0 - probabilities)
    value = np.array([float(np.sum(_LOSS.loss(scores, Y))),
                      float(np.linalg.norm(residual, axis=1) @ design.row_norms())])
    squares = (design.weighted_column_squares(curvature).T if diagonal
               else np.zeros((0, 0)))
    return value, design.transpose_product(residual).T, curvature.sum(axis=0), squares


def _hessian_product_pass(design, Y, theta, direction):
    """One partition's ``[(P o T) - P o rowsum(P o T)]^T Z`` with ``T = Z V^T``: the
    data part of the Hessian-vector product at ``theta`` (both products in one pass)."""
    probabilities = softmax(np.asarray(design @ theta.T), axis=1)
    weighted = probabilities * np.asarray(design @ direction.T)
    weighted -= probabilities * weighted.sum(axis=1, keepdims=True)
    return design.transpose_product(weighted).T


def _gram_pass(design, Y):
    """One partition's ``Z^T Z``."""
    return design.weighted_gram(np.ones(design.shape[0]))


def _accurate_gradient_pass(design, Y, point):
    """One partition's data gradient at the double-double ``point`` (shape (K, d)) in
    double-double, with a proven bound on its error: ``(hi, lo, bound)``, ``O(K d)``."""
    from ._accurate import accurate_data_gradient

    def slopes(scores, rows, scores_bound):
        return _LOSS.dz_accurate(scores, Y[rows], scores_bound)

    (hi, lo), bound, _ = accurate_data_gradient(design, (point[0].T, point[1].T), slopes,
                                                design.max_row_norm())
    return hi.T, lo.T, bound


def _accurate_gradient(design, point):
    """The data gradient at ``point`` in double-double over the partitions, and a bound
    on its error (the partitions' bounds plus the driver's additions'), as
    :func:`~skdp.solvers._partitioned.accurate_partitioned_gradient`."""
    return add_accurate_partials(design.partials(_accurate_gradient_pass, point))


class _PartitionedSoftmax:
    """The perturbed softmax objective over partitions, for the solver below."""

    def __init__(self, design, n_classes, C, ridge, linear):
        self.design, self.C, self.ridge, self.linear = design, C, ridge, linear
        n, d = design.shape
        self.n_rows, self.shape = n, (n_classes, d)
        # the in-memory rule (shapes only): the Gram preconditioner, formed once
        self.gram = (design.reduce(_gram_pass) if not design.sparse
                     and d * d <= _MAX_HESSIAN_ENTRIES and d <= 120 * n_classes else None)
        self._eigen = None

    def evaluate(self, theta):
        stats = self.design.reduce(_iterate_pass, theta, self.gram is None)
        value = (self.C * stats[0][0] + 0.5 * self.ridge * np.sum(theta**2)
                 + np.sum(self.linear * theta))
        return stats, value

    def gradient(self, theta, stats):
        return self.C * stats[1] + self.ridge * theta + self.linear

    def rounding_bound(self, theta, stats):
        magnitude = (self.C * stats[0][1] + self.ridge * np.linalg.norm(theta)
                     + np.linalg.norm(self.linear))
        return float(np.finfo(float).eps * magnitude)

    def preconditioner(self, stats):
        """As :meth:`~skdp.solvers._multinomial.MultinomialProblem.preconditioner`: each
        class's block with its mean curvature in the Gram eigenbasis, else the inverse
        diagonal."""
        if self.gram is None:
            inverse_diagonal = 1.0 / (self.C * stats[3] + self.ridge)
            return inverse_diagonal.__mul__
        if self._eigen is None:
            values, vectors = np.linalg.eigh(self.gram)
            self._eigen = (np.maximum(values, 0.0), vectors)
        values, vectors = self._eigen
        mean_curvature = stats[2] / max(self.n_rows, 1)
        inverse = 1.0 / (self.C * np.outer(mean_curvature, values) + self.ridge)
        return lambda residual: ((residual @ vectors) * inverse) @ vectors.T

    def solve(self, theta, stats, rhs, rtol, max_products):
        """``H^{-1} rhs`` at ``theta`` by preconditioned conjugate gradients, one pass
        over the partitions per product."""
        shape, precondition = rhs.shape, self.preconditioner(stats)

        def product(v):
            v = v.reshape(shape)
            data = self.design.reduce(_hessian_product_pass, theta, v)
            return (self.C * data + self.ridge * v).ravel()

        solution, _ = _conjugate_gradient(product, rhs.ravel(),
                                          lambda r: precondition(r.reshape(shape)).ravel(),
                                          rtol, max_products)
        return solution.reshape(shape)

    def accurate_certificate(self, theta, stats, tol):
        from ._accurate import assemble_gradient, refine_and_certify

        def gradient_at(point):
            data, bound = _accurate_gradient(self.design, point)
            gradient, bound = assemble_gradient(data, bound, point, self.C, self.ridge,
                                                self.linear)
            return gradient, bound, None

        def newton_step(_, gradient):   # the Hessian at the last iterate, by products
            return self.solve(theta, stats, gradient, _REFINEMENT_FORCING,
                              _MAX_PRODUCTS_PER_STEP)

        return refine_and_certify(theta, gradient_at, newton_step, ridge=self.ridge, tol=tol)


def partitioned_multinomial_minimise(design, n_classes, *, C, ridge, linear, tol, max_iter):
    """Minimise the softmax objective over partitions to a certified gradient norm.

    Parameters
    ----------
    design : PartitionedDesign
        Rows in partitions whose targets are one-hot labels (:func:`one_hot`).
    n_classes : int
        ``K``.
    C, ridge : float
        Weight of the loss sum and the L2 curvature.
    linear : ndarray of shape (n_classes, n_coefficients)
        The linear (noise) term.
    tol : float
        Public tolerance on the gradient's Frobenius norm.
    max_iter : int
        Maximum number of Newton steps.

    Returns
    -------
    result : NewtonResult
        As :func:`~skdp.solvers.multinomial_minimise`'s: the same iteration, stopping
        rules and fallback, every pass over the rows a reduction over the partitions.
    """
    problem = _PartitionedSoftmax(design, n_classes, C, ridge, linear)
    return softmax_newton(problem, np.zeros(problem.shape), tol, max_iter)
