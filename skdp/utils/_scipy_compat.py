"""The only module that imports private SciPy API."""

try:   # scipy's own row gather (behind ``X[rows]``), which writes into given arrays
    from scipy.sparse._sparsetools import csr_row_index
except ImportError:   # pragma: no cover - a scipy that moved it: the public gather
    csr_row_index = None

__all__ = ["gather_csr_rows"]


def gather_csr_rows(X, rows, indices, data):
    """Write the stored column indices and values of the rows ``rows`` of the CSR
    ``X``, in order, into ``indices`` and ``data`` (each exactly as long as those
    rows' stored entries), without a new array of their size.

    Parameters
    ----------
    X : CSR matrix or array
    rows : ndarray of int
        Row positions.
    indices : ndarray of ``X.indices``' dtype
    data : ndarray of ``X.data``' dtype
    """
    if csr_row_index is not None and X.indices.dtype == X.indptr.dtype:
        try:
            csr_row_index(rows.size, rows.astype(X.indptr.dtype, copy=False), X.indptr,
                          X.indices, X.data, indices, data)
            return
        except TypeError:   # pragma: no cover - a scipy whose routine changed its signature
            pass
    gathered = X[rows]
    indices[...], data[...] = gathered.indices, gathered.data
