"""Enforcement of the data assumptions that the privacy analyses rest on."""

import numpy as np
import scipy.sparse as sp


def clip_rows_to_norm(X, data_norm):
    """Scale every row of ``X`` with L2 norm above ``data_norm`` back onto that norm.

    Clipping one row depends on that row only, so it costs no privacy. Rows
    already inside the ball are returned unchanged (bit for bit).

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
        norms = np.sqrt(np.asarray(X.power(2).sum(axis=1)).ravel())
    else:
        X = np.array(X, dtype=np.float64, copy=True)
        norms = np.sqrt(np.einsum("ij,ij->i", X, X))
    if np.isinf(data_norm):
        return X
    factors = row_clip_factors(norms, data_norm)
    if sp.issparse(X):
        X.data *= np.repeat(factors, np.diff(X.indptr))
    else:
        too_long = norms > data_norm
        X[too_long] *= factors[too_long][:, None]
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
        Values in (0, 1]: 1 for a row inside the ball, ``data_norm / norm``
        for a row outside it.
    """
    factors = np.maximum(norms, np.finfo(float).tiny)    # one vector, no temporaries
    np.divide(data_norm, factors, out=factors)
    return np.minimum(factors, 1.0, out=factors)


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
