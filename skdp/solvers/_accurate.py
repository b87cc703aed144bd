"""The certificate's fallback: gradients in double-double with rigorous error bounds.

The Newton solvers certify a point by its computed gradient norm plus an estimate of the
rounding error, about machine epsilon times ``C sum_i |l'_i| ||x_i||``. That estimate
grows linearly with the number of rows: at ``C = 3000`` it passes the default ``tol =
1e-8`` between 20,000 and 24,000 unit rows, and the certificate then fails whatever the
point. A failure whose occurrence depends on one row is an observable event, so when
the cheap certificate is inconclusive the solvers call :func:`refine_and_certify`:

1. The gradient at the point is recomputed in double-double arithmetic
   (:mod:`skdp.utils._double_double`), one pass over ``X`` by blocks of rows: the
   linear predictors by error-free products and exact (extraction) sums; the loss's
   derivative by its ``dz_accurate`` method (``exp`` in double-double); the transpose
   product likewise. Every step has a proven bound (Dekker, Knuth, Rump-Ogita-Oishi,
   Joldes-Muller-Popescu), about ``U**2 = 1.2e-32`` relative per operation, so the
   bound on the gradient's error is about ``1e-28 C sum_i ||x_i|| (1 + |l'_i|)``
   plus the predictors' error times the curvature: below ``1e-14`` for ``C n R`` up to
   ``1e14``.
2. The certified norm is the double-double gradient's norm (rounded up) plus that
   bound. If it exceeds ``tol``, a Newton step from that accurate gradient moves the
   point, held in double-double (``theta_hi + theta_lo``), and the gradient is
   recomputed (iterative refinement; at most :data:`_REFINEMENT_STEPS` gradients).
3. The released point is ``theta_hi``, the float64 nearest the double-double point:
   it is within ``||theta_lo|| + ||grad J(theta_hi + theta_lo)|| / ridge`` of the exact
   minimiser, and ``ridge`` times that is the certified norm. Without the double-double
   point a float64 vector could not certify once ``||H|| U ||theta||`` passes ``tol``
   (the gradient of the best float64 point: about ``C n R^2 / d`` times ``1e-16
   ||theta||``, ``1e-8`` from ``C n`` about ``1e9``).

What can still fail: a loss without ``dz_accurate`` (no fallback: the estimate
decides); a point whose exact gradient is above ``tol`` after the refinement (the
Newton system solved too loosely, or an iteration budget too small); coefficients so
large that ``ridge ||theta_lo||``, up to ``5.6e-17 ridge ||theta||``, exceeds ``tol``
(float64 cannot hold them more finely); and values out of float64's range (the
splitting overflows above about ``1e300``).
"""

import numpy as np

from ..utils import _double_double as dd
from ._design import as_design

# Entries of the products of a block of rows with the coefficients (a few arrays of
# this size are alive at once: 1 MB each).
_BLOCK_ENTRIES = 2**17
# Gradients computed by refine_and_certify at most (two Newton steps between them).
_REFINEMENT_STEPS = 3


def _raw_rows(design):
    """``(matrix, scale)``: the design's explicit matrix, CSR when sparse (the blocks
    slice rows), and its row factors. A wide row (its factor 0, its clipped values
    held apart: :class:`~skdp.solvers._design.WideRows`) is written into a copy of the
    matrix with factor 1, so that no product reads its raw, overflowing values."""
    raw, scale = design.X, design.scale
    if design.sparse and raw.format != "csr":
        raw = raw.tocsr()   # a copy, in the fallback only
    if design.wide is None:
        return raw, scale
    index, rows = design.wide.index, design.wide.rows
    if design.sparse:
        raw = raw.tolil()
        raw[index] = rows
        raw = raw.tocsr()
    else:
        raw = raw.copy()
        raw[index] = rows
    scale = scale.copy()
    scale[index] = 1.0
    return raw, scale


def _norm_above(row_norm, design):
    """``row_norm`` raised by the relative rounding error of a computed row norm."""
    return row_norm * (1.0 + (design.shape[1] + 4) * dd.U)


def _dense_blocks(raw, n_classes):
    """``(start, stop, block)``: consecutive rows of a dense ``raw``."""
    n, d = raw.shape
    rows = max(1, _BLOCK_ENTRIES // max(1, d * n_classes))
    for start in range(0, n, rows):
        stop = min(start + rows, n)
        yield start, stop, raw[start:stop]


def _sparse_blocks(raw, n_classes):
    """``(start, stop, block)``: consecutive rows of a CSR ``raw`` holding about
    ``_BLOCK_ENTRIES / n_classes`` stored entries."""
    n = raw.shape[0]
    per_row = max(1, raw.nnz // max(n, 1))
    rows = max(1, _BLOCK_ENTRIES // (per_row * n_classes))
    for start in range(0, n, rows):
        stop = min(start + rows, n)
        yield start, stop, raw[start:stop]


class _DenseRows:
    """Accurate products of a dense block of rows with coefficients and weights."""

    def __init__(self, block):
        self.block = block[:, :, None]
        self.parts = dd.split(self.block)
        self.n_columns = block.shape[1]

    def dot(self, theta):
        """``block @ theta`` for a double-double ``theta`` of shape (d, K)."""
        values, errors = dd.two_product(theta[0][None], self.block, self.parts)
        if np.any(theta[1]):
            errors += self.block * theta[1][None]
        return dd.group_sums(values, errors, dd.AxisGroups(1, self.n_columns))

    def transpose_dot(self, weights):
        """``block.T @ weights`` for double-double ``weights`` of shape (b, K)."""
        values, errors = dd.two_product(weights[0][:, None], self.block, self.parts)
        errors += self.block * weights[1][:, None]
        return dd.group_sums(values, errors, dd.AxisGroups(0, self.block.shape[0]))


class _SparseRows:
    """Accurate products of a CSR block of rows (on its stored entries)."""

    def __init__(self, block):
        self.values = block.data[:, None]
        self.columns, self.n_columns = block.indices, block.shape[1]
        self.indptr = block.indptr
        self.row_of_entry = np.repeat(np.arange(block.shape[0]), np.diff(block.indptr))
        self.parts = dd.split(self.values)
        self.n_rows = block.shape[0]

    def dot(self, theta):
        """``block @ theta`` for a double-double ``theta`` of shape (d, K)."""
        values, errors = dd.two_product(theta[0][self.columns], self.values, self.parts)
        if np.any(theta[1]):
            errors += self.values * theta[1][self.columns]
        return dd.group_sums(values, errors, dd.SegmentGroups(self.indptr))

    def transpose_dot(self, weights):
        """``block.T @ weights`` for double-double ``weights`` of shape (b, K)."""
        values, errors = dd.two_product(weights[0][self.row_of_entry], self.values,
                                        self.parts)
        errors += self.values * weights[1][self.row_of_entry]
        groups = dd.LabelGroups(self.columns, self.n_columns, self.n_rows)
        return dd.group_sums(values, errors, groups)


def _predictor(rows, theta, scale, intercept):
    """The linear predictors ``[s_i x_i, c] @ theta`` of a block of rows (double-double,
    shape (b, K)) and a bound on each one's error."""
    d = rows.n_columns
    z, bound = rows.dot((theta[0][:d], theta[1][:d]))
    if scale is not None:
        factor = scale[:, None]
        z = dd.mul_double(z, factor)
        bound = bound * factor + (dd.MUL_ERROR + 1.0) * dd.U**2 * np.abs(z[0])
    if intercept is not None:
        # the intercept's term, shape (1, K): the same for every row
        constant = dd.mul_double((theta[0][d:], theta[1][d:]), intercept)
        z = dd.add(z, constant)
        bound = bound + (dd.MUL_ERROR + 1.0) * dd.U**2 * np.abs(constant[0]) \
            + (dd.ADD_ERROR + 1.0) * dd.U**2 * np.abs(z[0])
    return z, bound


def _transpose(rows, slopes, scale, intercept):
    """``[s_i x_i, c]^T @ slopes`` of a block (double-double, shape (d, K)) and a bound
    on each entry's error; ``slopes`` is double-double of shape (b, K)."""
    weights, bound_rows = slopes, 0.0
    if scale is not None:
        weights = dd.mul_double(slopes, scale[:, None])
        # the rounding of s_i slope_i, times the raw row x_i: at most (MUL_ERROR + 1)
        # U^2 |slope_i| ||s_i x_i||, counted with the rows' norm bound by the caller
        bound_rows = (dd.MUL_ERROR + 1.0) * dd.U**2 * np.abs(slopes[0])
    total, bound = rows.transpose_dot(weights)
    if intercept is None:
        return total, bound, bound_rows
    (hi, lo), sum_bound = dd.group_sums(slopes[0], slopes[1], dd.AxisGroups(0, len(slopes[0])))
    column = dd.mul_double((hi, lo), intercept)
    column_bound = (abs(intercept) * sum_bound
                    + (dd.MUL_ERROR + 1.0) * dd.U**2 * np.abs(column[0]))
    total = (np.vstack([total[0], column[0]]), np.vstack([total[1], column[1]]))
    return total, np.vstack([bound, column_bound]), bound_rows


def accurate_data_gradient(X, theta, slopes, row_norm):
    """``X^T l'(X theta)`` in double-double, with a bound on its error, in one pass.

    Parameters
    ----------
    X : {ndarray, sparse matrix, ScaledDesign} of shape (n_samples, n_coefficients)
        The design.
    theta : tuple of ndarray
        Double-double coefficients ``(hi, lo)``, each of shape (n_coefficients, K).
    slopes : callable
        ``slopes(z, rows, z_bound) -> (s, s_bound)``: the loss's derivatives at the
        double-double predictors ``z`` (shape (b, K)) of the rows ``rows`` (a slice),
        whose errors are at most ``z_bound`` (shape (b, K)); ``s`` double-double of
        shape (b, K) and ``s_bound`` (shape (b,)) bounds the norm of each row's error
        against the derivative at the exact predictor (the loss's ``dz_accurate``).
    row_norm : float
        A bound on the rows' norms ``||[s_i x_i, c]||`` (a computed one will do: it is
        raised by its rounding error).

    Returns
    -------
    gradient : tuple of ndarray
        Double-double ``X^T l'``, shape (n_coefficients, K).
    bound : float
        A bound on the Frobenius norm of its error.
    predictor : ndarray of shape (n_samples, K)
        The predictors ``X theta`` rounded to float64.
    """
    design = as_design(X)
    (raw, scale), intercept = _raw_rows(design), design.intercept
    n_classes = theta[0].shape[1]
    sparse = design.sparse
    total = (np.zeros(theta[0].shape), np.zeros(theta[0].shape))
    entry_bound = np.zeros(theta[0].shape)
    row_bound = 0.0
    predictor = np.empty((design.shape[0], n_classes))
    blocks = _sparse_blocks(raw, n_classes) if sparse else _dense_blocks(raw, n_classes)
    for start, stop, block in blocks:
        rows = _SparseRows(block) if sparse else _DenseRows(block)
        block_scale = None if scale is None else scale[start:stop]
        z, z_bound = _predictor(rows, theta, block_scale, intercept)
        predictor[start:stop] = z[0] + z[1]
        s, s_bound = slopes(z, slice(start, stop), z_bound)
        block_total, block_entry_bound, weights_bound = _transpose(rows, s, block_scale,
                                                                   intercept)
        total = dd.add(total, block_total)
        entry_bound += block_entry_bound + (dd.ADD_ERROR + 1.0) * dd.U**2 * np.abs(total[0])
        row_bound += float(np.sum(s_bound)) + float(np.sum(weights_bound))
    # each row's slope error moves the sum by at most ||x_i|| times it
    bound = float(np.linalg.norm(entry_bound)) + _norm_above(row_norm, design) * row_bound
    return total, bound, predictor


def accurate_transpose_product(X, weights, row_norm):
    """``X^T weights`` in double-double, with a bound on its error.

    Parameters
    ----------
    X : {ndarray, sparse matrix, ScaledDesign} of shape (n_samples, n_coefficients)
        The design.
    weights : ndarray of shape (n_samples,)
        Float64 weights (exact).
    row_norm : float
        A bound on the rows' norms ``||[s_i x_i, c]||``.

    Returns
    -------
    product : tuple of ndarray
        Double-double ``X^T weights``, shape (n_coefficients,).
    bound : float
        A bound on the norm of its error.
    """
    design = as_design(X)
    (raw, scale), intercept = _raw_rows(design), design.intercept
    total = (np.zeros((design.shape[1], 1)), np.zeros((design.shape[1], 1)))
    entry_bound, row_bound = np.zeros((design.shape[1], 1)), 0.0
    blocks = _sparse_blocks(raw, 1) if design.sparse else _dense_blocks(raw, 1)
    for start, stop, block in blocks:
        rows = _SparseRows(block) if design.sparse else _DenseRows(block)
        column = dd.as_pair(weights[start:stop, None])
        block_total, block_bound, weights_bound = _transpose(
            rows, column, None if scale is None else scale[start:stop], intercept)
        total = dd.add(total, block_total)
        entry_bound += block_bound + (dd.ADD_ERROR + 1.0) * dd.U**2 * np.abs(total[0])
        row_bound += float(np.sum(weights_bound))
    bound = float(np.linalg.norm(entry_bound)) + _norm_above(row_norm, design) * row_bound
    return (total[0][:, 0], total[1][:, 0]), bound


def assemble_gradient(data_gradient, bound, theta, C, ridge, linear):
    """``C g + ridge theta + linear`` in double-double, with a bound on its error.

    Parameters
    ----------
    data_gradient : tuple of ndarray
        Double-double ``g`` with its error ``bound``.
    bound : float
    theta : tuple of ndarray
        Double-double coefficients of the shape of ``g``.
    C, ridge : float
    linear : ndarray
        Of the shape of ``g``.

    Returns
    -------
    gradient : tuple of ndarray
    bound : float
    """
    scaled = dd.mul_double(data_gradient, C)
    shrunk = dd.mul_double(theta, ridge)
    partial = dd.add(scaled, shrunk)
    gradient = dd.add_double(partial, linear)
    rounding = dd.U**2 * ((dd.MUL_ERROR + 1.0) * (np.linalg.norm(scaled[0])
                                                   + np.linalg.norm(shrunk[0]))
                          + (dd.ADD_ERROR + 1.0) * (np.linalg.norm(partial[0])
                                                     + np.linalg.norm(gradient[0])))
    return gradient, C * bound + 2.0 * rounding


def norm_above(pair):
    """A float64 at least the Frobenius norm of the double-double ``pair``.

    Parameters
    ----------
    pair : tuple of ndarray

    Returns
    -------
    norm : float
    """
    size = pair[0].size
    slack = 1.0 + 2.0 * (size + 2) * dd.U
    return float((np.linalg.norm(pair[0]) + np.linalg.norm(pair[1])) * slack)


def refine_and_certify(theta, gradient_at, newton_step, *, ridge, tol,
                       max_steps=_REFINEMENT_STEPS):
    """Certify ``theta``, or a double-double refinement of it, by accurate gradients.

    Parameters
    ----------
    theta : ndarray
        The solver's point (float64).
    gradient_at : callable
        ``gradient_at(point) -> (gradient, bound, state)``: the objective's gradient at
        the double-double ``point`` (pairs of arrays of ``theta``'s shape), in
        double-double, a bound on the Frobenius norm of its error, and what
        ``newton_step`` needs (for example the predictors).
    newton_step : callable
        ``newton_step(state, gradient) -> step``: an approximate ``H^{-1} gradient``
        (float64 arrays of ``theta``'s shape).
    ridge : float
        The objective's strong convexity.
    tol : float
        The public tolerance.
    max_steps : int, default=3
        Gradients computed at most.

    Returns
    -------
    result : tuple or None
        ``(theta_hi, certified_norm, steps)`` when ``certified_norm <= tol``:
        ``theta_hi`` is within ``certified_norm / ridge`` of the exact minimiser.
        ``None`` otherwise.
    """
    point = dd.as_pair(theta)
    for step in range(max_steps):
        gradient, bound, state = gradient_at(point)
        offset = ridge * norm_above((point[1], np.zeros_like(point[1])))
        certified = (norm_above(gradient) + bound + offset) * (1.0 + 4.0 * dd.U)
        if certified <= tol:
            return point[0], certified, step
        if step + 1 < max_steps:
            move = newton_step(state, gradient[0] + gradient[1])
            point = dd.add_double(point, -move)
    return None
