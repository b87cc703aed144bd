"""Exact minimisation of smooth, strongly convex GLM objectives (sum form).

``J(theta) = C sum_i l(<x_i, theta>, y_i) + ridge/2 ||theta||^2 + <linear, theta>``
is minimised by Newton's method with a backtracking line search; convergence is
certified by the gradient norm, which also bounds the distance to the exact
minimiser by ``||grad J|| / ridge`` (strong convexity). The certificate adds an
estimate of the rounding error of the computed gradient (:func:`_rounding_bound`),
so that a computed norm below the tolerance is not an artefact of rounding. That
estimate grows linearly with the number of rows; where it makes the certificate
inconclusive, the gradient is recomputed in double-double with a proven error bound
and the point refined if need be (:mod:`skdp.solvers._accurate`), so that whether a
fit certifies does not depend on the size of the data.

The Newton direction comes from the dense Hessian (Cholesky) when it is small and
cheap to form, else from Hessian-vector products ``X^T (w * (X v))`` by
preconditioned conjugate gradients (truncated Newton, as liblinear's TRON), which
never forms a ``d x d`` matrix nor densifies a sparse ``X``. How the direction is
found does not matter to privacy: the certificate is the gradient norm either way.
"""

from dataclasses import dataclass

import numpy as np
from scipy.linalg import cho_factor, cho_solve


from ..utils._docstrings import fill_doc
from ._accurate import accurate_data_gradient, assemble_gradient, refine_and_certify
from ._check import check_loss
from ._design import as_design, is_sparse

# the parameters every function of the sum-form GLM objective takes
_GLM_DOC = {"glm_problem": """X : {ndarray, sparse matrix} of shape (n_samples, n_coefficients)
        The design.
    y : ndarray of shape (n_samples,)
        The targets.
    loss : object
        See :data:`~skdp.solvers.REQUIRED_LOSS_ATTRIBUTES`.
    C : float
        Weight of the loss sum.
    ridge : float
        L2 curvature (the strong convexity)."""}
_GLM_DOC["glm_parameters"] = """Parameters
    ----------
    theta : ndarray of shape (n_coefficients,)
        The point.
    """ + _GLM_DOC["glm_problem"] + """
    linear : ndarray of shape (n_coefficients,)
        The linear term."""

# Above this many entries (512 MiB) the Hessian is never formed.
_MAX_HESSIAN_ENTRIES = 2**26
# Conjugate-gradient products a truncated-Newton step takes, about, in the cost model
# of :func:`uses_hessian_products` (measured: 10 to 40 on dense and sparse designs).
_PRODUCTS_PER_STEP = 30
# Products allowed to one truncated-Newton step.
_MAX_PRODUCTS_PER_STEP = 500
# Gradient-norm reduction per step below which a dense Hessian factor is reused.
_CHORD_RATE = 0.1
# A truncated-Newton step solves its system to at most this fraction of tol / ||g||:
# near the minimiser the next gradient is about the system's residual, so a step
# that can reach the tolerance needs no more (measured on a 50,000 x 50,000 CSR: the
# last step's products 7 -> 3).
_FINAL_FORCING = 0.1
# Rows of a chunk of the per-row loss functions (their temporaries stay this size).
_CHUNK_ROWS = 2**13
# Relative residual of a refinement step's conjugate-gradient solve (the certificate's
# fallback): the next gradient is about this fraction of the current one.
_REFINEMENT_FORCING = 1e-3


def newton_forcing(gradient_norm, first_norm, tol):
    """The forcing term of truncated Newton (the inner solve's relative residual):
    superlinear as the gradient vanishes, and no finer than the tolerance needs."""
    return min(0.5, max(np.sqrt(gradient_norm / first_norm),
                        _FINAL_FORCING * tol / gradient_norm))


def _backtrack(theta, step, decrease, value, evaluate):
    """Armijo backtracking from ``theta`` along ``-step``; return the accepted point,
    its auxiliary quantity and its value, ``evaluate(point) -> (auxiliary, value)``.

    Near the optimum the predicted ``decrease`` is below the rounding of the
    objective: the full step is taken and the gradient certificate decides.
    """
    t = 1.0
    candidate = theta - step
    auxiliary, candidate_value = evaluate(candidate)
    if decrease > 1e-12 * (1.0 + abs(value)):
        while candidate_value > value - 1e-4 * t * decrease and t > 1e-10:
            t *= 0.5
            candidate = theta - t * step
            auxiliary, candidate_value = evaluate(candidate)
    return candidate, auxiliary, candidate_value


@dataclass
class NewtonResult:
    """The last iterate and its certificate.

    ``certified_norm / ridge`` bounds the distance from ``theta`` to the exact
    minimiser. On the fast path it is the computed gradient norm plus the rounding
    estimate of :func:`_rounding_bound` (an estimate of the exact gradient norm at
    ``theta``); from the fallback (:func:`~skdp.solvers._accurate.refine_and_certify`)
    it is a proven bound: ``ridge ||theta_lo||`` plus the exact gradient norm at the
    double-double point ``theta + theta_lo`` (rounded up), ``theta`` being that point
    rounded to float64. ``converged`` is ``certified_norm <= tol``.

    Attributes
    ----------
    theta : ndarray of shape (n_coefficients,)
        The last iterate.
    n_iter : int
        Newton steps taken (refinement steps included).
    certified_norm : float
        ``ridge`` times the certified distance to the exact minimiser.
    converged : bool
        Whether ``certified_norm <= tol``.
    """

    theta: np.ndarray
    n_iter: int
    certified_norm: float
    converged: bool


@fill_doc(fragments=_GLM_DOC)
def glm_objective(theta, X, y, loss, C, ridge, linear):
    """Value of the sum-form objective.

    %(glm_parameters)s

    Returns
    -------
    value : float
    """
    return _objective_at(theta, X @ theta, y, loss, C, ridge, linear)


@fill_doc(fragments=_GLM_DOC)
def glm_gradient(theta, X, y, loss, C, ridge, linear):
    """Gradient of the sum-form objective.

    %(glm_parameters)s

    Returns
    -------
    gradient : ndarray of shape (n_coefficients,)
    """
    return _gradient_at(theta, X @ theta, X, y, loss, C, ridge, linear)


@fill_doc(fragments=_GLM_DOC)
def glm_hessian(theta, X, y, loss, C, ridge):
    """Hessian ``C X^T diag(l'') X + ridge I`` of the sum-form objective.

    Parameters
    ----------
    theta : ndarray of shape (n_coefficients,)
        The point.
    %(glm_problem)s

    Returns
    -------
    hessian : ndarray of shape (n_coefficients, n_coefficients)
    """
    return _hessian_at(X @ theta, X, y, loss, C, ridge)


# The same quantities given the linear predictor ``z = X @ theta``, so that one
# product with X serves the line search, the gradient and the Hessian of an iterate.

def _chunks(n):
    """Slices of at most :data:`_CHUNK_ROWS` rows: a per-row function of the predictor
    evaluated chunk by chunk keeps its temporaries at a chunk's size, not ``n``."""
    return (slice(start, start + _CHUNK_ROWS) for start in range(0, n, _CHUNK_ROWS))


def _by_chunks(function, z, y):
    """``function(z, y)`` (one value per row), computed chunk by chunk into one array."""
    out = np.empty(z.shape[0])
    for rows in _chunks(z.shape[0]):
        out[rows] = function(z[rows], y[rows])
    return out


def _objective_at(theta, z, y, loss, C, ridge, linear):
    total = sum(float(np.sum(loss.loss(z[rows], y[rows]))) for rows in _chunks(z.shape[0]))
    return C * total + 0.5 * ridge * theta @ theta + linear @ theta


def _gradient_at(theta, z, X, y, loss, C, ridge, linear):
    return _gradient_from_slopes(theta, _by_chunks(loss.dz, z, y), X, C, ridge, linear)


def _gradient_from_slopes(theta, slopes, X, C, ridge, linear):
    return C * (X.T @ slopes) + ridge * theta + linear


def _row_norms(X):
    return as_design(X).row_norms()


def _rounding_bound(theta, slope_magnitude, C, ridge, linear):
    """Estimate of the rounding error of the computed gradient's norm.

    The gradient sums ``n`` terms ``C l'_i x_i`` and two more; summed in floating
    point, each coordinate is off by a small multiple of machine epsilon times the
    sum of the terms' magnitudes, and the error vector's norm by about ``eps (C
    sum_i |l'_i| ||x_i|| + ridge ||theta|| + ||linear||)``; ``slope_magnitude`` is
    that sum or a bound on it. Measured on 2e5 to 3e6 rows, the actual error is
    about a tenth of this. Adversarial rounding (floating-point attacks) is out of
    scope.
    """
    magnitude = C * slope_magnitude + ridge * np.linalg.norm(theta) + np.linalg.norm(linear)
    return float(np.finfo(float).eps * magnitude)


def _certificate(theta, z, X, y, loss, C, ridge, linear, max_row_norm, tol):
    """The gradient at ``theta`` (``z = X @ theta``), its norm and the rounding
    estimate of the norm; the slopes (one per row) are freed on return.

    The estimate bounds every ``||x_i||`` by the largest; where that bound decides
    (the certificate, or a stall at rounding level), it is recomputed with every
    row's own norm, by blocks of rows (one more pass over ``X``).
    """
    slopes = _by_chunks(loss.dz, z, y)
    gradient = _gradient_from_slopes(theta, slopes, X, C, ridge, linear)
    gradient_norm = float(np.linalg.norm(gradient))
    rounding = _rounding_bound(theta, max_row_norm * np.linalg.norm(slopes, 1), C, ridge, linear)
    if rounding >= gradient_norm or gradient_norm <= tol < gradient_norm + rounding:
        np.abs(slopes, out=slopes)
        rounding = _rounding_bound(theta, as_design(X).row_norms_dot(slopes), C, ridge, linear)
    return gradient, gradient_norm, rounding


def _hessian_at(z, X, y, loss, C, ridge):
    weights = _by_chunks(loss.d2z, z, y)
    weights *= C
    hessian = as_design(X).weighted_gram(weights)
    hessian.flat[:: hessian.shape[0] + 1] += ridge
    return hessian


def uses_hessian_products(X):
    """Whether the Newton direction is found from Hessian-vector products.

    Forming the Hessian costs about ``n d^2 / 2`` multiply-adds (dense ``X``) and a
    ``d x d`` array; a conjugate-gradient product costs about ``2 nnz(X)``. Products
    are used when the Hessian would exceed :data:`_MAX_HESSIAN_ENTRIES` entries or
    cost more than a step of products; the rule reads only the shape and the count
    of stored entries, never the values.

    Parameters
    ----------
    X : {ndarray, sparse matrix} of shape (n_samples, n_coefficients)

    Returns
    -------
    bool
    """
    n, d = X.shape
    if d * d > _MAX_HESSIAN_ENTRIES:
        return True
    sparse = is_sparse(X)
    stored = X.nnz if sparse else n * d
    # a sparse Hessian costs about (nnz / n)^2 per row, and d^2 to densify
    hessian_cost = (stored**2 / max(n, 1) + d * d) if sparse else n * d * d / 2
    return hessian_cost > _PRODUCTS_PER_STEP * 2 * stored


def _weighted_column_squares(X, weights):
    """``sum_i weights_i x_ij^2`` for every column ``j`` (the Hessian's diagonal); with
    ``weights`` of shape (n, K), one column of weights per class, shape (d, K)."""
    return as_design(X).weighted_column_squares(weights)


def _conjugate_gradient(product, rhs, precondition, rtol, max_iter):
    """Preconditioned CG for ``H p = rhs`` (``H`` positive definite), to ``rtol``.

    ``precondition(r)`` applies a positive definite approximation of ``H^{-1}``.

    Stops when the residual norm is at most ``rtol ||rhs||`` or after ``max_iter``
    products; returns the iterate and the number of products.
    """
    solution = np.zeros_like(rhs)
    residual = rhs.copy()
    target = rtol * np.linalg.norm(rhs)
    preconditioned = precondition(residual)
    direction = preconditioned.copy()
    inner = residual @ preconditioned
    for n_products in range(max_iter):
        if np.linalg.norm(residual) <= target:
            return solution, n_products
        image = product(direction)
        step = inner / (direction @ image)
        solution += step * direction
        residual -= step * image
        preconditioned = precondition(residual)
        inner, previous = residual @ preconditioned, inner
        direction = preconditioned + (inner / previous) * direction
    return solution, max_iter


def _hessian_solve(z, X, y, loss, C, ridge, rhs, rtol, max_products, column_squares=None):
    """``H^{-1} rhs`` at the linear predictor ``z``: Cholesky of the dense Hessian
    when :func:`uses_hessian_products` says no, else CG on Hessian-vector products.

    CG's preconditioner is the Hessian's diagonal with every row's curvature replaced
    by their mean, ``C mean(l'') sum_i x_ij^2 + ridge``: it keeps the columns' scales
    and needs the column squares ``sum_i x_ij^2`` only once per fit (computed here
    when not given). Measured against the exact diagonal (one pass over the squares
    of ``X`` per step): as many products, 20-25 % less time.
    """
    if not uses_hessian_products(X):
        hessian = _hessian_at(z, X, y, loss, C, ridge)
        return cho_solve(cho_factor(hessian, check_finite=False), rhs, check_finite=False)
    if column_squares is None:
        column_squares = _column_squares(X)
    weights = _by_chunks(loss.d2z, z, y)
    weights *= C
    inverse_diagonal = 1.0 / (np.mean(weights) * column_squares + ridge)

    def product(v):
        return _gram_product(X, weights, v) + ridge * v

    return _conjugate_gradient(product, rhs, inverse_diagonal.__mul__, rtol, max_products)[0]


def _column_squares(X):
    """``sum_i x_ij^2`` for every column ``j``."""
    return _weighted_column_squares(X, np.ones(X.shape[0]))


def _gram_product(X, weights, v):
    """``X^T (weights * (X v))``; a dense ``X`` by blocks of rows that stay in cache
    between the two products, so that it is read from memory once (measured: 30 %
    faster)."""
    total = np.zeros(X.shape[1])
    for start, stop, block in as_design(X).blocks():
        total += block.T @ (weights[start:stop] * (block @ v))
    return total


@fill_doc(fragments=_GLM_DOC)
def glm_hessian_solve(theta, X, y, loss, C, ridge, rhs, *, rtol=1e-10):
    """Solve ``H u = rhs`` with ``H`` the Hessian of the sum-form objective at ``theta``.

    The dense Hessian's Cholesky factor when it is small, else conjugate gradients
    on Hessian-vector products to relative residual ``rtol`` (never forming ``H``).

    Parameters
    ----------
    theta : ndarray of shape (n_coefficients,)
        The point.
    %(glm_problem)s
    rhs : ndarray of shape (n_coefficients,)
        The right-hand side.
    rtol : float, default=1e-10
        Relative residual of the iterative solve.

    Returns
    -------
    solution : ndarray of shape (n_coefficients,)
    """
    return _hessian_solve(X @ theta, X, y, loss, C, ridge, np.asarray(rhs, dtype=float),
                          rtol, 10 * X.shape[1] + 100)


def _subsampled_hessian(z, X, y, loss, C, ridge, stride):
    """The Hessian estimated from every ``stride``-th row (a fixed, public pattern)."""
    rows = as_design(X).every(stride)  # a view of a dense X
    return _hessian_at(z[::stride], rows, y[::stride], loss, C * stride, ridge)


def _has_fallback(loss):
    """Whether ``loss`` computes its derivative in double-double (``dz_accurate``)."""
    return callable(getattr(loss, "dz_accurate", None))


def _accurate_certificate(theta, X, y, loss, C, ridge, linear, max_row_norm, tol, factor,
                          column_squares):
    """:func:`~skdp.solvers._accurate.refine_and_certify` for the GLM objective:
    ``(theta, certified_norm, steps)`` or ``None``.

    A refinement step solves with the last Cholesky factor of an exact Hessian when
    there is one (its point is within the last steps' reach), else with the Hessian
    at the point (its factor, or conjugate gradients to :data:`_REFINEMENT_FORCING`).
    """
    def slopes(z, rows, z_bound):
        (hi, lo), error = loss.dz_accurate((z[0][:, 0], z[1][:, 0]), y[rows], z_bound[:, 0])
        return (hi[:, None], lo[:, None]), error

    def gradient_at(point):
        column = (point[0][:, None], point[1][:, None])
        data, bound, predictor = accurate_data_gradient(X, column, slopes, max_row_norm)
        gradient, bound = assemble_gradient((data[0][:, 0], data[1][:, 0]), bound, point, C,
                                            ridge, linear)
        return gradient, bound, predictor[:, 0]

    def newton_step(z, gradient):
        if factor is not None:
            return cho_solve(factor, gradient, check_finite=False)
        return _hessian_solve(z, X, y, loss, C, ridge, gradient, _REFINEMENT_FORCING,
                              _MAX_PRODUCTS_PER_STEP, column_squares)

    return refine_and_certify(theta, gradient_at, newton_step, ridge=ridge, tol=tol)


@fill_doc(fragments=_GLM_DOC)
def newton_minimise(X, y, loss, *, C, ridge, linear, tol, max_iter, theta0=None,
                    refine=True):
    """Minimise the sum-form objective to a certified ``||grad J|| <= tol``.

    The certificate is the computed gradient norm plus its rounding estimate
    (:func:`_rounding_bound`). Once the computed norm is below that estimate and a
    step no longer halves it, more iterations cannot tighten the certificate and
    the solver stops. When the certificate is then inconclusive (the computed norm
    at most ``max(tol, estimate)``), or as soon as the computed norm is below ``tol``
    while the estimate alone exceeds it, the fallback
    (:func:`~skdp.solvers._accurate.refine_and_certify`) recomputes the gradient in
    double-double with a proven error bound, refining the point if need be; it needs
    the loss's ``dz_accurate`` (the losses of :mod:`skdp.losses` but the hinge have
    it). The result is not converged when neither certifies ``tol``.

    With a dense Hessian (:func:`uses_hessian_products` false), while the gradient
    is far from zero the Newton system uses a Hessian estimated on a fixed
    subsample of rows (a cheaper descent direction); the last steps use the exact
    Hessian, whose quadratic convergence the certificate relies on; its Cholesky
    factor is reused (chord steps) while each step divides the gradient norm by
    ten. The subsample is abandoned as soon as a step fails to halve the gradient
    norm. Otherwise each step solves the Newton system by conjugate gradients on
    Hessian-vector products, to the relative residual ``min(0.5, max(sqrt(||g|| /
    ||g_0||), 0.1 tol / ||g||))`` (superlinear convergence, and no finer than the
    tolerance needs).

    Requires of ``loss``: :data:`~skdp.solvers.REQUIRED_LOSS_ATTRIBUTES`.

    Parameters
    ----------
    %(glm_problem)s
    linear : ndarray of shape (n_coefficients,)
        The linear term (the noise of objective perturbation).
    tol : float
        Public gradient-norm tolerance.
    max_iter : int
        Maximum number of Newton steps.
    theta0 : ndarray of shape (n_coefficients,), default=None
        Starting point (zero when ``None``).
    refine : bool, default=True
        Whether an inconclusive certificate calls the fallback (``False`` where only
        the point matters, not its certificate).

    Returns
    -------
    result : NewtonResult
    """
    check_loss(loss, "newton_minimise")
    fallback = refine and _has_fallback(loss)
    n, d = X.shape
    stride = max(1, n // (20 * d))

    def evaluate(point):
        predictor = X @ point
        return predictor, _objective_at(point, predictor, y, loss, C, ridge, linear)

    theta = np.zeros(d) if theta0 is None else np.array(theta0, dtype=float)
    z, value = evaluate(theta)
    max_row_norm = as_design(X).max_row_norm()
    first_norm = previous_norm = None
    hessian_products = uses_hessian_products(X)
    column_squares = _column_squares(X) if hessian_products else None
    subsample = stride > 1 and not hessian_products
    factor, fresh = None, False
    for n_iter in range(max_iter + 1):
        # z is X @ theta of the current iterate: the certificate is of this iterate
        gradient, gradient_norm, rounding = _certificate(theta, z, X, y, loss, C, ridge, linear,
                                                         max_row_norm, tol)
        # an exact Newton step that no longer halves a norm already at rounding level
        stalled = (previous_norm is not None and fresh
                   and rounding >= gradient_norm > 0.5 * previous_norm)
        # the factor of an exact Hessian serves the next steps (chord steps) while
        # each step divides the gradient norm by _CHORD_RATE; else it is recomputed
        if factor is not None and gradient_norm > _CHORD_RATE * previous_norm:
            factor = None
        fresh = False
        if first_norm is None:
            first_norm = gradient_norm
        elif gradient_norm > 0.5 * previous_norm or gradient_norm < 1e-3 * first_norm:
            subsample = False
        previous_norm = gradient_norm
        # with the fallback, a norm below tol whose estimate alone exceeds tol is as
        # far as the fast certificate goes
        hopeless = fallback and gradient_norm <= tol <= rounding
        if gradient_norm + rounding <= tol or stalled or hopeless or n_iter == max_iter:
            break
        if hessian_products:
            forcing = newton_forcing(gradient_norm, first_norm, tol)
            step = _hessian_solve(z, X, y, loss, C, ridge, gradient, forcing,
                                  _MAX_PRODUCTS_PER_STEP, column_squares)
            fresh = True
        elif subsample:
            hessian = _subsampled_hessian(z, X, y, loss, C, ridge, stride)
            step = cho_solve(cho_factor(hessian, check_finite=False), gradient,
                             check_finite=False)
        else:
            if factor is None:
                factor = cho_factor(_hessian_at(z, X, y, loss, C, ridge), check_finite=False)
                fresh = True
            step = cho_solve(factor, gradient, check_finite=False)
        theta, z, value = _backtrack(theta, step, gradient @ step, value, evaluate)
    certified_norm = gradient_norm + rounding
    if certified_norm > tol and fallback and gradient_norm <= max(tol, rounding):
        accurate = _accurate_certificate(theta, X, y, loss, C, ridge, linear, max_row_norm,
                                         tol, factor, column_squares)
        if accurate is not None:
            theta, certified_norm, steps = accurate
            n_iter += steps
    return NewtonResult(theta, n_iter, certified_norm, certified_norm <= tol)
