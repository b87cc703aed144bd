"""Enforcement of the data assumptions that the privacy analyses rest on."""

import numpy as np
import scipy.sparse as sp


# A squared row norm outside [_TINY_SQUARES, _HUGE_SQUARES] may have underflowed (entries
# below about 1e-154) or overflowed (entries above about 1.3e154): that row's norm is
# recomputed from the row divided by its largest absolute entry.
_TINY_SQUARES = 1e-200
_HUGE_SQUARES = 1e200

#: Norm above which a row is "wide": its clipped values are computed from the row
#: divided by its largest entry, and a design holds them explicitly, because a product
#: with the raw row (``x_i . v``) could overflow before its clip factor is applied.
WIDE_ROW_NORM = 1e100

#: Largest row norm of the estimators whose privacy does not rest on ``data_norm``
#: (DP-SGD clips gradients; random features are bounded, ``data_norm=None``): longer
#: rows are scaled down to it, a public per-row operation, so that their products with
#: the coefficients stay finite.
MAX_FINITE_ROW_NORM = 1e150

# Rows of a dense matrix read at once when norms are recomputed (about 1 MB).
_RESCALE_BYTES = 2**20

# The smallest normal float64 (looked up once: ``np.finfo`` costs microseconds a call,
# paid every step of DP-SGD).
_TINY = float(np.finfo(float).tiny)


def finite_clipping_norm(data_norm):
    """``data_norm`` (``None`` or ``np.inf``: no bound) capped at
    :data:`MAX_FINITE_ROW_NORM`: the clipping norm of an estimator whose privacy does
    not rest on ``data_norm``.

    Parameters
    ----------
    data_norm : float or None
        The estimator's ``data_norm``.

    Returns
    -------
    norm : float
    """
    return min(np.inf if data_norm is None else float(data_norm), MAX_FINITE_ROW_NORM)


def clip_rows_to_norm(X, data_norm):
    """Scale every row of ``X`` with L2 norm above ``data_norm`` back onto that norm.

    Clipping one row depends on that row only, so it costs no privacy. Rows
    already inside the ball are returned unchanged (bit for bit). Every finite
    row is clipped onto the sphere in its own direction, including rows whose
    squared norm (or norm) overflows: those are divided by their largest entry
    first (see :func:`row_clipping`).

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (n_samples, n_features)
        The rows to clip.
    data_norm : float
        Public bound on the L2 norm of a row; ``np.inf`` leaves ``X`` unchanged.

    Returns
    -------
    X_clipped : ndarray or CSR matrix of shape (n_samples, n_features)
        A new array; ``X`` is not modified.
    """
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64, copy=True)
        X.sum_duplicates()  # a row's norm is then the norm of its stored values
    else:
        X = np.array(X, dtype=np.float64, copy=True)
    if np.isinf(data_norm):
        return X
    clipping = row_clipping(X, data_norm)
    if sp.issparse(X):
        X.data *= np.repeat(clipping.factors, np.diff(X.indptr))
        X.data[stored_positions(X.indptr, clipping.wide)] = clipping.wide_rows.data
    else:
        too_long = np.flatnonzero(clipping.factors < 1.0)
        X[too_long] *= clipping.factors[too_long][:, None]
        X[clipping.wide] = clipping.wide_rows
    return X


def row_clip_factors(norms, data_norm):
    """Per-row factors ``min(1, data_norm / norm)`` that clip rows to ``data_norm``.

    Parameters
    ----------
    norms : ndarray of shape (n_samples,)
        The L2 norms of the rows. A zero norm gives the factor 1.
    data_norm : float
        Public bound on the L2 norm of a row.

    Returns
    -------
    factors : ndarray of shape (n_samples,)
        Values in [0, 1]: 1 for a row inside the ball, ``data_norm / norm``
        for a row outside it (0 for an infinite norm: rows whose norm may
        overflow are clipped by :func:`row_clipping` instead).
    """
    factors = np.maximum(norms, _TINY)    # one vector, no temporaries
    np.divide(data_norm, factors, out=factors)
    return np.minimum(factors, 1.0, out=factors)


class RowClipping:
    """How clipping to ``data_norm`` acts on each row of a matrix (see :func:`row_clipping`).

    Parameters
    ----------
    factors : ndarray of shape (n_samples,)
        ``min(1, data_norm / ||x_i||)`` for every row that is not wide; 0 for a
        wide row.
    norms : ndarray of shape (n_samples,)
        ``||x_i||`` after clipping, ``min(||x_i||, data_norm)``.
    wide : ndarray of shape (n_wide,)
        Increasing indices of the wide rows (norm above :data:`WIDE_ROW_NORM`).
    wide_rows : ndarray or CSR matrix of shape (n_wide, n_features)
        Their clipped values, computed without overflow; a CSR one has the stored
        pattern of those rows of ``X``.
    """

    def __init__(self, factors, norms, wide, wide_rows):
        self.factors, self.norms, self.wide, self.wide_rows = factors, norms, wide, wide_rows


def row_clipping(X, data_norm):
    """Clip factors, clipped norms and the wide rows' clipped values of ``X``.

    The norms come from the plain sums of squares; only rows whose sum may have
    overflowed or underflowed (outside ``[1e-200, 1e200]``) are recomputed,
    divided by their largest absolute entry ``m_i``: ``||x_i|| = m_i ||x_i / m_i||``.
    A wide row (norm above :data:`WIDE_ROW_NORM`) is clipped as
    ``(x_i / m_i) * (data_norm / ||x_i / m_i||)``, so that neither its norm nor its
    factor is needed (``[1.5e308, 1.5e308]`` has no finite norm, and the factor of
    ``[1e308, 1e308]`` is a subnormal number).

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (n_samples, n_features)
        The rows (float64; a CSR matrix without duplicate entries).
    data_norm : float
        Public bound on a row's norm (``np.inf``: no row is clipped).

    Returns
    -------
    clipping : RowClipping
    """
    with np.errstate(over="ignore", invalid="ignore"):
        sums = squared_row_norms(X)
        unsafe = rows_to_rescale(sums)
        if sp.issparse(X):  # a row without stored values has the exact sum 0
            unsafe = unsafe[X.indptr[unsafe + 1] > X.indptr[unsafe]]
        norms = np.sqrt(sums, out=sums)
        factors = row_clip_factors(norms, data_norm)
        norms *= factors
    if not unsafe.size:
        return RowClipping(factors, norms, unsafe, X[unsafe])
    peak, ratio = rescaled_row_norms(X, unsafe)
    with np.errstate(over="ignore", divide="ignore"):
        norm = peak * ratio            # inf for a row whose norm is beyond float64
        factor = _factors_by_parts(peak, ratio, data_norm)
    wide = norm > WIDE_ROW_NORM
    factors[unsafe] = np.where(wide, 0.0, factor)
    norms[unsafe] = np.where(factor < 1.0, data_norm, norm)
    return RowClipping(factors, norms, unsafe[wide],
                       clip_scaled_rows(X[unsafe[wide]], peak[wide], ratio[wide], data_norm))


def _factors_by_parts(peak, ratio, data_norm):
    """``min(1, data_norm / (peak * ratio))`` without forming the norm (1 for a zero row)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        factors = (data_norm / peak) / ratio
    factors[peak == 0.0] = 1.0
    return np.minimum(factors, 1.0, out=factors)


def clip_scaled_rows(rows, peak, ratio, data_norm):
    """Clip rows given their largest absolute entry ``peak`` and ``ratio = ||x / peak||``.

    A row longer than ``data_norm`` becomes ``(x / peak) * (data_norm / ratio)``:
    every intermediate value is at most ``max(1, data_norm)`` in magnitude, so a row
    whose norm overflows is clipped exactly in its direction. Other rows are left
    as they are (bit for bit).

    Parameters
    ----------
    rows : ndarray or CSR matrix of shape (n_rows, n_features)
        The rows (modified in place and returned).
    peak, ratio : ndarray of shape (n_rows,)
        From :func:`scaled_row_norms`.
    data_norm : float
        Public bound on a row's norm.

    Returns
    -------
    rows : ndarray or CSR matrix of shape (n_rows, n_features)
        The clipped rows (a CSR matrix keeps its stored pattern).
    """
    clipped = _factors_by_parts(peak, ratio, data_norm) < 1.0
    divisor = np.where(clipped, peak, 1.0)
    with np.errstate(divide="ignore"):
        multiplier = np.where(clipped, data_norm / ratio, 1.0)
    if sp.issparse(rows):
        lengths = np.diff(rows.indptr)
        rows.data /= np.repeat(divisor, lengths)
        rows.data *= np.repeat(multiplier, lengths)
        return rows
    rows /= divisor[:, None]
    rows *= multiplier[:, None]
    return rows


def squared_row_norms(X):
    """``sum_j x_ij^2`` of every row: one einsum (dense) or segmented sums of the squared
    stored values (CSR). Fast, but may overflow to ``inf`` or underflow to 0: see
    :func:`rows_to_rescale`.

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (n_samples, n_features)
        The rows (a CSR matrix without duplicate entries).

    Returns
    -------
    sums : ndarray of shape (n_samples,)
    """
    if not sp.issparse(X):
        return np.einsum("ij,ij->i", X, X)
    # by blocks of rows of about 256 KB of values, squared in one reused buffer
    n, indptr = X.shape[0], X.indptr
    rows = max(1, (_RESCALE_BYTES // 4) // (8 * max(1, X.nnz // max(n, 1))))
    sums = np.empty(n)
    buffer = np.empty(0)
    for start in range(0, n, rows):
        stop = min(start + rows, n)
        first, last = indptr[start], indptr[stop]
        if last - first > buffer.size:
            buffer = np.empty(last - first)
        squares = np.square(X.data[first:last], out=buffer[:last - first])
        sums[start:stop] = segment_sums(squares, indptr[start:stop + 1])
    return sums


def rows_to_rescale(sums):
    """Indices of the rows whose computed squared norm may have overflowed or
    underflowed (outside ``[1e-200, 1e200]``, zero rows included).

    Parameters
    ----------
    sums : ndarray of shape (n_samples,)
        From :func:`squared_row_norms`.

    Returns
    -------
    index : ndarray of shape (n_unsafe,)
        Increasing row indices.
    """
    safe = sums >= _TINY_SQUARES
    safe &= sums <= _HUGE_SQUARES
    return np.flatnonzero(~safe)


def rescaled_row_norms(X, index):
    """:func:`scaled_row_norms` of the rows ``index`` of ``X``, read by blocks of about
    1 MB (a dense ``X`` with many zero rows is never copied whole).

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (n_samples, n_features)
        The rows (a CSR matrix without duplicate entries).
    index : ndarray of shape (n_rows,)
        Row indices.

    Returns
    -------
    peak, ratio : ndarray of shape (n_rows,)
        ``||x_i|| = peak_i * ratio_i``.
    """
    peak, ratio = np.empty(index.size), np.empty(index.size)
    width = X.nnz / max(X.shape[0], 1) if sp.issparse(X) else X.shape[1]
    step = max(1, int(_RESCALE_BYTES // (8 * max(width, 1))))
    for start in range(0, index.size, step):
        stop = min(start + step, index.size)
        peak[start:stop], ratio[start:stop] = scaled_row_norms(X[index[start:stop]])
    return peak, ratio


def scaled_row_norms(rows):
    """The norm of every row as ``peak * ratio``, free of overflow and underflow.

    ``peak_i = max_j |x_ij|`` and ``ratio_i = ||x_i / peak_i||``, in ``[1, sqrt(d)]``
    (both 0 for a zero row).

    Parameters
    ----------
    rows : ndarray or CSR matrix of shape (n_rows, n_features)
        The rows (a CSR matrix without duplicate entries).

    Returns
    -------
    peak, ratio : ndarray of shape (n_rows,)
    """
    if sp.issparse(rows):
        values = np.abs(rows.data[rows.indptr[0]:rows.indptr[-1]])
        peak = segment_sums(values, rows.indptr, np.maximum)
        values /= np.repeat(np.where(peak > 0.0, peak, 1.0), np.diff(rows.indptr))
        return peak, np.sqrt(segment_sums(np.square(values, out=values), rows.indptr))
    peak = np.max(np.abs(rows), axis=1, initial=0.0)
    unit = rows / np.where(peak > 0.0, peak, 1.0)[:, None]
    return peak, np.sqrt(np.einsum("ij,ij->i", unit, unit))


def segment_sums(values, indptr, ufunc=np.add):
    """``ufunc`` reduced over each segment ``values[indptr[i] - indptr[0]:indptr[i + 1] -
    indptr[0]]`` (a row of a CSR matrix), 0 for an empty segment.

    Parameters
    ----------
    values : ndarray of shape (indptr[-1] - indptr[0],)
        The stored values of consecutive rows.
    indptr : ndarray of shape (n_rows + 1,)
        The rows' offsets (a CSR matrix's ``indptr`` or a slice of it).
    ufunc : numpy.ufunc, default=np.add
        The reduction (``np.maximum`` for a largest entry of non-negative values).

    Returns
    -------
    reduced : ndarray of shape (n_rows,)
    """
    reduced = np.zeros(len(indptr) - 1)
    if values.size:
        filled = indptr[1:] > indptr[:-1]
        # reduceat reduces each segment up to the next start; an empty row's segment
        # would read its neighbour's first value, so it stays zero
        reduced[filled] = ufunc.reduceat(values, indptr[:-1][filled] - indptr[0])
    return reduced


def stored_positions(indptr, rows):
    """Positions in a CSR matrix's ``data`` of the stored values of some rows.

    Parameters
    ----------
    indptr : ndarray of shape (n_samples + 1,)
        The matrix's ``indptr``.
    rows : ndarray of shape (n_rows,)
        Row indices.

    Returns
    -------
    positions : ndarray of shape (sum of the rows' stored counts,)
        Row after row, in storage order.
    """
    starts, lengths = indptr[rows], indptr[np.asarray(rows) + 1] - indptr[rows]
    offsets = np.repeat(starts - np.cumsum(lengths) + lengths, lengths)
    return offsets + np.arange(offsets.size)


def augment_intercept(X, intercept_scaling):
    """Append a constant column of public value ``intercept_scaling``.

    Parameters
    ----------
    X : {ndarray, sparse matrix} of shape (n_samples, n_features)
        The (clipped) rows.
    intercept_scaling : float
        Public value of the constant column.

    Returns
    -------
    design : {ndarray, sparse matrix} of shape (n_samples, n_features + 1)
    """
    if sp.issparse(X):
        # the CSR arrays with one entry inserted at the end of every row: no COO detour
        X = sp.csr_matrix(X)
        n, d = X.shape
        ends = X.indptr[1:]
        data = np.insert(X.data, ends, intercept_scaling).astype(float, copy=False)
        return sp.csr_matrix((data,
                              np.insert(X.indices, ends, d),
                              X.indptr + np.arange(n + 1)), shape=(n, d + 1))
    return np.hstack([X, np.full((X.shape[0], 1), float(intercept_scaling))])


def effective_data_norm(data_norm, fit_intercept, intercept_scaling):
    """Row norm bound of the design actually optimised.

    With an intercept column of value ``s`` the bound is ``sqrt(R**2 + s**2)``.

    Parameters
    ----------
    data_norm : float
        Public bound on a row's norm.
    fit_intercept : bool
        Whether the intercept column is appended.
    intercept_scaling : float
        Its value.

    Returns
    -------
    row_norm : float
        ``sqrt(data_norm**2 + intercept_scaling**2)`` with an intercept, else ``data_norm``.
    """
    if not fit_intercept:
        return float(data_norm)
    return float(np.hypot(data_norm, intercept_scaling))


def check_data_norm(data_norm):
    """Reject a missing ``data_norm`` with an explanation of why it must be public.

    Parameters
    ----------
    data_norm : float or None
        The estimator's ``data_norm`` parameter.

    Returns
    -------
    data_norm : float
        ``data_norm`` itself, unchanged.

    Raises
    ------
    ValueError
        If ``data_norm`` is ``None``.
    """
    if data_norm is None:
        raise ValueError(
            "data_norm=None: skdp never computes the row-norm bound from the private "
            "data, because that bound would itself leak information. Pass a public "
            "bound on the L2 norm of each feature row (rows longer than it are "
            "clipped), e.g. from the known ranges of the features after a "
            "data-independent scaling. Computing it from the data yourself voids the "
            "privacy guarantee."
        )
    return data_norm
