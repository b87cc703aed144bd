"""The clipped, intercept-augmented design of ``X`` (dense or CSR), without a copy of ``X``.

Row ``i`` of the design is ``[s_i x_i, c]``: ``x_i`` scaled into the public ball
(``s_i = min(1, data_norm / ||x_i||)``) and the public intercept column ``c``. The
solvers need products with it and with its transpose, blocks of its rows and its
row norms; each is computed from ``X``, ``s`` and ``c`` with temporaries of one
column or one cache-sized block of rows, never of ``X``'s size.

A row whose norm exceeds :data:`~skdp.utils.validation.WIDE_ROW_NORM` is "wide": the
product ``x_i . v`` of the raw row could overflow before its factor is applied (an
entry of 1e308), so the design holds its clipped values explicitly
(:class:`WideRows`, computed without overflow) and its factor in ``s`` is 0. Every
product, block and norm uses those clipped values in place of whatever the raw row
gives (an overflow there is discarded; the raw row times its factor 0 is 0).
"""

import numpy as np
import scipy.sparse as sp
from scipy.linalg.blas import get_blas_funcs

from ..utils._memory import check_allocation
from ..utils._scipy_compat import gather_csr_rows
from ..utils.validation import (augment_intercept, rows_to_rescale, scaled_row_norms,
                                segment_sums, stored_positions)

# Bytes of a dense block of rows that stays in cache between two products.
_CACHE_BYTES = 2**20
# Bytes of a block of rows written to a buffer (weighted rows, squares): smaller, so
# that the buffer weighs little beside small designs (measured: as fast at d = 100).
_BUFFER_BYTES = 2**18
_GRAM_MIN_ROWS = 256


def _cache_rows(n_columns, block_bytes=None):
    """Rows of a dense block of ``n_columns`` that stays in cache (``block_bytes``,
    default :data:`_CACHE_BYTES`)."""
    return max(16, (block_bytes or _CACHE_BYTES) // (8 * max(n_columns, 1)))


def _symmetric_from_upper(upper, block=256):
    """Fill the strict lower triangle of a square array from its upper one, in place
    (by blocks of columns: no temporary of the array's size)."""
    d = upper.shape[0]
    for start in range(0, d, block):
        stop = min(start + block, d)
        upper[stop:, start:stop] = upper[start:stop, stop:].T
        part = upper[start:stop, start:stop]
        lower = np.tril_indices(stop - start, -1)
        part[lower] = part.T[lower]
    return upper


def _sparse_block_rows(X, block_bytes):
    """Rows of a block of the sparse ``X`` holding about ``block_bytes`` of values (from
    the mean number of stored entries per row)."""
    return max(1, block_bytes // (8 * max(1, X.nnz // max(X.shape[0], 1))))


def as_design(X):
    """``X`` (dense or sparse) as a :class:`ScaledDesign` with no factors and no
    intercept (a design is returned as it is), so that the solvers read every design
    through the same products and row blocks."""
    return X if isinstance(X, ScaledDesign) else ScaledDesign(X, None, None)


def is_sparse(X):
    """Whether ``X``, a matrix or a :class:`ScaledDesign`, stores its rows sparsely."""
    return sp.issparse(X) or getattr(X, "sparse", False)


class WideRows:
    """The clipped values of a design's wide rows, held explicitly.

    Parameters
    ----------
    index : ndarray of shape (n_wide,)
        Increasing positions of the rows in the design.
    rows : ndarray or CSR matrix of shape (n_wide, n_features)
        Their clipped values (without the intercept column), CSR when the design
        is sparse.
    """

    def __init__(self, index, rows):
        self.index, self.rows = index, rows

    @classmethod
    def of(cls, index, rows):
        """The wide rows, or ``None`` when there is none (the designs' fast path)."""
        return cls(np.asarray(index, dtype=np.intp), rows) if len(index) else None

    def take(self, n_rows, rows):
        """The wide rows of the design's rows ``rows`` (a slice, an index array or a
        boolean mask over ``n_rows`` rows), positioned in that subset; ``None`` when
        it holds none."""
        picked = np.arange(n_rows)[rows]
        where = np.minimum(np.searchsorted(self.index, picked), self.index.size - 1)
        hit = self.index[where] == picked
        return WideRows.of(np.flatnonzero(hit), self.rows[where[hit]])

    def columns(self, index):
        """The same rows restricted to some columns (an index array)."""
        return WideRows(self.index, self.rows[:, index])

    def product(self, theta):
        """``rows @ theta`` as an array."""
        return np.asarray(self.rows @ theta)

    def placed(self, n_rows):
        """The rows as a CSR matrix of ``n_rows`` rows, at their positions (the other
        rows empty); the rows must be CSR."""
        counts = np.zeros(n_rows, dtype=np.intp)
        counts[self.index] = np.diff(self.rows.indptr)
        indptr = np.concatenate([[0], np.cumsum(counts)])
        return sp.csr_matrix((self.rows.data, self.rows.indices, indptr),
                             shape=(n_rows, self.rows.shape[1]))

    def squares(self):
        """The rows' entries squared, as a dense or CSR matrix."""
        return self.rows.power(2) if sp.issparse(self.rows) else np.square(self.rows)


def canonical_csr(X):
    """A sparse ``X`` in CSR form without duplicate entries (``X`` itself when it is
    already one; never modified): a row's norm is then the norm of its stored values,
    which is what clipping reads."""
    X = X if X.format == "csr" else X.tocsr()
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
    return X


class RowBuffers:
    """Two arrays into which blocks of rows of a CSR matrix are gathered, one block
    after another, instead of new arrays for each block.

    A mini-batch fit gathers a batch of rows at every step; a new array of the batch's
    values at each step lands, by the allocator's choice, sometimes in memory mapped
    for it and sometimes in the heap, where the last step's freed batch stays
    resident: the peak then holds two batches. The buffers hold one, grown (with a
    margin of :data:`GROWTH`) when a block needs more.
    """

    #: The margin a buffer is grown with, over what the block that outgrew it needs.
    GROWTH = 1.0625

    def __init__(self):
        self._indices = self._data = None

    def gather(self, X, rows):
        """The rows ``rows`` (an index array) of the CSR ``X``, in order, as a CSR
        matrix of ``X``'s class on views of the buffers (overwritten by the next
        gather)."""
        indptr = np.zeros(rows.size + 1, dtype=X.indptr.dtype)
        np.cumsum(X.indptr[rows + 1] - X.indptr[rows], out=indptr[1:])
        nnz = int(indptr[-1])
        if self._data is None or self._data.size < nnz:
            self._indices = self._data = None   # released before the larger ones
            size = int(nnz * self.GROWTH) + 1
            self._indices = np.empty(size, dtype=X.indices.dtype)
            self._data = np.empty(size, dtype=X.data.dtype)
        indices, data = self._indices[:nnz], self._data[:nnz]
        gather_csr_rows(X, rows, indices, data)
        return type(X)((data, indices, indptr), shape=(rows.size, X.shape[1]), copy=False)


class ScaledDesign:
    """``[s_i x_i, c]`` for a dense or CSR ``X`` (see the module docstring).

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (n_samples, n_features)
        The rows as given (float64; a CSR matrix without duplicate entries, see
        :func:`canonical_csr`); never modified.
    scale : ndarray of shape (n_samples,) or None
        Row factors in (0, 1]; ``None`` when every row is inside the ball.
    intercept : float or None
        The intercept column's value; ``None`` without an intercept.
    max_row_norm : float, default=None
        A bound on ``||z_i||`` already known (from clipping); ``None``: computed by
        :meth:`max_row_norm` when first asked.
    wide : WideRows, default=None
        The wide rows' clipped values (their entries of ``scale`` are 0); ``None``
        when there is none.
    """

    ndim = 2
    # numpy defers ``A @ design`` to :meth:`__rmatmul__` instead of converting the design
    __array_ufunc__ = None

    def __init__(self, X, scale, intercept, max_row_norm=None, wide=None):
        self.X, self.scale, self.intercept = X, scale, intercept
        self._max_row_norm = max_row_norm
        self.wide = wide
        self.shape = (X.shape[0], X.shape[1] + (intercept is not None))
        self.dtype = X.dtype
        self.sparse = sp.issparse(X)

    @property
    def nnz(self):
        """Stored entries of the explicit design (every entry of a dense one)."""
        stored = self.X.nnz if self.sparse else self.X.size
        return stored + (self.shape[0] if self.intercept is not None else 0)

    def _scaled(self, values):
        """``s * values`` row by row (``values`` of shape (n,) or (n, k))."""
        if self.scale is None:
            return values
        return values * (self.scale if values.ndim == 1 else self.scale[:, None])

    def __matmul__(self, theta):
        """``Z @ theta`` for a vector ``(d,)`` or a matrix ``(d, k)``."""
        theta = np.asarray(theta)
        top = theta if self.intercept is None else theta[:-1]
        if self.wide is None:
            product = self._scaled_product(top)
        else:  # a wide row's raw product may overflow: replaced by its clipped row's
            with np.errstate(over="ignore", invalid="ignore"):
                product = self._scaled_product(top)
            product[self.wide.index] = self.wide.product(top)
        if self.intercept is not None:
            product += self.intercept * theta[-1]
        return product

    def _scaled_product(self, top):
        """``s * (X @ top)`` (in place: one temporary of n values, or n x k)."""
        product = np.asarray(self.X @ top)
        if self.scale is not None:
            product *= self.scale if product.ndim == 1 else self.scale[:, None]
        return product

    def __rmatmul__(self, other):
        """``other @ Z`` for ``other`` of shape (k, n): ``(Z.T @ other.T).T``."""
        return self.transpose_product(np.asarray(other).T).T

    def transpose_product(self, values, out=None):
        """``Z.T @ values`` for ``values`` of shape (n,) or (n, k).

        With ``out`` (of the product's shape, or a view of it), the product is added
        into ``out`` and ``out`` returned: no array of the product's size beside the
        one ``X.T @ values`` gives (no copy to join the intercept's entry).
        """
        values = np.asarray(values)
        top = np.asarray(self.X.T @ self._scaled(values))  # a wide row's factor is 0
        if self.wide is not None:
            top += np.asarray(self.wide.rows.T @ values[self.wide.index])
        if self.intercept is None:
            if out is None:
                return top
            out += top
            return out
        column = self.intercept * values.sum(axis=0, keepdims=True)
        if out is None:
            return np.concatenate([top, column])
        out[:-1] += top
        out[-1:] += column
        return out

    @property
    def T(self):
        return _Transposed(self)

    def __getitem__(self, rows):
        """The explicit rows ``Z[rows]`` (a slice or an index array; an integer gives
        one row)."""
        if isinstance(rows, (int, np.integer)):
            return self[[rows]][0]
        if self.sparse:
            block = self.clipped_rows(rows)
            return block if self.intercept is None else augment_intercept(block,
                                                                          self.intercept)
        index = np.arange(self.shape[0])[rows]
        out = np.empty((index.size, self.shape[1]))
        self._dense_clipped_rows(index, out)
        if self.intercept is not None:
            out[:, -1] = self.intercept
        return out

    def left_product(self, A):
        """``A @ Z`` for a sparse ``A`` of shape (m, n), without the explicit design ``Z``
        (for sums of weighted rows over segments: ``A`` the segments' indicator carrying
        the weights), as the product with the clipped values and the intercept column's.

        An entry of ``A @ Z`` is the sum, in the order of ``A``'s stored values, of the
        products ``(a_pi s_i) x_ij`` (or ``a_pi c`` for the intercept): ``A @ self[:]``
        to rounding. The rows are read in place, never copied: the factors ``s_i``
        scale ``A``'s columns instead (``n`` values, not the rows' ``n d``), except on a
        design with wide rows, whose rows are scaled once (the wide rows' clipped values
        in place); the intercept column of the product is ``A`` times a constant column.

        Parameters
        ----------
        A : sparse matrix of shape (m, n_samples)
            The left factor.

        Returns
        -------
        top : ndarray of shape (m, n_features), or CSR matrix when the design is sparse
            ``A`` times the clipped values.
        column : ndarray of shape (m,) or None
            ``A`` times the intercept column (``None`` without an intercept).
        """
        A = A if sp.issparse(A) and A.format == "csr" else sp.csr_matrix(A)
        if self.scale is None or self.wide is not None:
            top = A @ self._clipped_values()
        else:   # column i of A times s_i
            scaled = sp.csr_matrix((A.data * self.scale[A.indices], A.indices, A.indptr),
                                   shape=A.shape)
            top = scaled @ self.X
        column = (None if self.intercept is None
                  else A @ np.full(self.shape[0], float(self.intercept)))
        return (sp.csr_matrix(top) if self.sparse else top), column

    @staticmethod
    def product_row_squares(top, column):
        """The squared norms of the rows of ``[top, column]`` (:meth:`left_product`'s
        parts). A dense product's rows (intercept in place) are squared and summed by
        ``einsum``. A sparse product's squared
        stored values are summed row by row, then the intercept's square added (the
        same to rounding).

        Parameters
        ----------
        top : ndarray of shape (m, n_features) or CSR matrix
        column : ndarray of shape (m,) or None

        Returns
        -------
        squares : ndarray of shape (m,)
        """
        if sp.issparse(top):
            squares = segment_sums(np.square(top.data), top.indptr)
            return squares if column is None else squares + np.square(column)
        if column is not None:   # the intercept in place: each row summed as a whole
            product = np.empty((top.shape[0], top.shape[1] + 1))
            product[:, :-1] = top
            product[:, -1] = column
            top = product
        return np.einsum("ij,ij->i", top, top)

    def left_product_squares(self, A):
        """The squared norms of the rows of ``A @ Z`` for a sparse ``A`` of shape (m, n),
        without the explicit design ``Z``: :meth:`product_row_squares` of
        :meth:`left_product` (those of ``A @ self[:]`` to rounding).

        Parameters
        ----------
        A : sparse matrix of shape (m, n_samples)
            The left factor.

        Returns
        -------
        squares : ndarray of shape (m,)
            ``||(A Z)_p||^2`` for each row ``p``.
        """
        return self.product_row_squares(*self.left_product(A))

    def _clipped_values(self):
        """The clipped rows ``s_i x_i`` of every row, without the intercept column:
        ``X`` itself when no row is scaled, else one scaled copy (no gather)."""
        if self.scale is None and self.wide is None:
            return self.X
        if self.sparse:
            return self.clipped_rows()
        rows = self.X * self.scale[:, None]   # a wide row's raw values times its factor 0
        if self.wide is not None:
            rows[self.wide.index] = self.wide.rows
        return rows

    def clipped_rows(self, rows=slice(None)):
        """The explicit clipped rows ``s_i x_i`` (no intercept column): an array, or a
        CSR matrix when sparse (every row of a design without wide rows: new values on
        ``X``'s own index arrays).

        Parameters
        ----------
        rows : slice, index array or boolean mask, default=slice(None)
            The rows.

        Returns
        -------
        rows : ndarray or CSR matrix of shape (n_rows, n_features)
        """
        if not self.sparse:
            index = np.arange(self.shape[0])[rows]
            return self._dense_clipped_rows(index, np.empty((index.size, self.X.shape[1])))
        # every row: new values on X's index arrays; else a copy of those rows
        every = isinstance(rows, slice) and rows == slice(None)
        block = self.X if every else self.X[rows]
        values = block.data.copy() if self.scale is None else (
            np.repeat(self.scale[rows], np.diff(block.indptr)) * block.data)
        block = sp.csr_matrix((values, block.indices, block.indptr), shape=block.shape)
        wide = None if self.wide is None else self.wide.take(self.shape[0], rows)
        # a wide row's raw values times its factor 0 are 0: add its clipped values
        return block if wide is None else block + wide.placed(block.shape[0])

    def _dense_clipped_rows(self, index, out):
        """Write the clipped rows ``index`` of a dense design into ``out[:, :d]``, by
        cache-sized blocks of rows (one allocation: ``out``)."""
        d = self.X.shape[1]
        step = _cache_rows(d)
        for start in range(0, index.size, step):
            chunk = index[start:start + step]
            block = out[start:start + chunk.size, :d]
            block[...] = self.X[chunk]
            if self.scale is not None:
                block *= self.scale[chunk][:, None]  # a wide row's raw values times 0
        if self.wide is not None:
            wide = self.wide.take(self.shape[0], index)
            if wide is not None:
                out[wide.index, :d] = wide.rows
        return out

    def every(self, stride):
        """Every ``stride``-th row, as a design on a view of a dense ``X`` (no copy;
        a copy of those rows of a sparse one)."""
        return self.subset(slice(None, None, stride))

    def subset(self, rows, buffers=None):
        """The design of some rows (a slice or an index array), the factors and the
        intercept still implicit. With ``buffers`` (a :class:`RowBuffers`) and an
        index array, a sparse design's rows are gathered into them: the design
        returned is valid until their next gather."""
        wide = None if self.wide is None else self.wide.take(self.shape[0], rows)
        # np.take gathers a dense X's rows faster than indexing (the same values)
        by_index = isinstance(rows, np.ndarray) and rows.dtype.kind in "iu"
        if by_index and not self.sparse:
            gathered = np.take(self.X, rows, axis=0)
            scale = None if self.scale is None else np.take(self.scale, rows)
        elif by_index and buffers is not None:
            gathered = buffers.gather(self.X, rows)
            scale = None if self.scale is None else np.take(self.scale, rows)
        else:
            gathered = self.X[rows]
            scale = None if self.scale is None else self.scale[rows]
        return ScaledDesign(gathered, scale, self.intercept, self._max_row_norm, wide)

    def columns(self, index):
        """The design of some columns (an index array into the design's columns, the
        intercept column last): a copy of those columns of ``X``, the factors and the
        intercept still implicit."""
        index = np.asarray(index, dtype=np.intp)
        d = self.X.shape[1]
        if np.any((index < 0) | (index >= self.shape[1])) or np.any(np.diff(index) <= 0):
            raise ValueError("columns() takes increasing indices of the design's columns.")
        intercept = self.intercept if index.size and index[-1] == d else None
        top = index[index < d]
        wide = None if self.wide is None else self.wide.columns(top)
        return ScaledDesign(self.X[:, top], self.scale, intercept, wide=wide)

    def blocks(self, rows=None):
        """Cache-sized blocks of consecutive rows: ``(start, stop, design)``, each
        design on a view of a dense ``X`` (no copy), so that a block stays in cache
        between two products with it (``rows`` rows each, default
        :func:`_cache_rows`). A sparse design is one block."""
        if self.sparse:
            yield 0, self.shape[0], self
            return
        rows = rows or _cache_rows(self.shape[1])
        for start in range(0, self.shape[0], rows):
            stop = min(start + rows, self.shape[0])
            yield start, stop, self.subset(slice(start, stop))

    def weighted_rows(self, weights, out=None):
        """The explicit rows times one weight per row, ``weights[:, None] * Z``.

        Written into ``out`` (at least as many rows, reused across blocks: no new
        allocation) when given.
        """
        factors = weights if self.scale is None else weights * self.scale
        n, d = self.X.shape
        out = np.empty(self.shape) if out is None else out[:n]
        np.multiply(self.X, factors[:, None], out=out[:, :d])
        if self.wide is not None:
            out[self.wide.index, :d] = self.wide.rows * weights[self.wide.index, None]
        if self.intercept is not None:
            np.multiply(weights, self.intercept, out=out[:, d])
        return out

    def weighted_column_squares(self, weights):
        """``sum_i weights_i z_ij^2`` for every column ``j``; with ``weights`` of shape
        (n, K), one column per class, shape (d, K). One reused block of squares."""
        weights = np.asarray(weights)
        scaled = weights if self.scale is None else (
            weights * (self.scale**2 if weights.ndim == 1 else self.scale[:, None]**2))
        d = self.X.shape[1]
        total = np.zeros((d,) + weights.shape[1:])
        for start, stop, squares in self._square_blocks():
            total += squares.T @ scaled[start:stop]
        if self.wide is not None:
            total += np.asarray(self.wide.squares().T @ weights[self.wide.index])
        if self.intercept is None:
            return total
        intercept = self.intercept**2 * weights.sum(axis=0)
        return np.concatenate([total, np.reshape(intercept, (1,) + total.shape[1:])])

    def __array__(self, dtype=None, copy=None):
        raise TypeError("A ScaledDesign is never converted implicitly (that would copy X): "
                        "use its products, its row blocks or toarray().")

    def _square_blocks(self):
        """``(start, stop, squares)``: ``X``'s entries squared, by blocks of rows in one
        reused buffer (a sparse block shares ``X``'s index arrays); a wide row's
        squares are 0 (its raw squares may overflow)."""
        n, d = self.X.shape
        if not self.sparse:
            squares = np.empty((_cache_rows(d, _BUFFER_BYTES), d))
            for start, stop, block in self.blocks(squares.shape[0]):
                if block.wide is None:
                    np.square(block.X, out=squares[:stop - start])
                else:  # a wide row's raw squares may overflow: they are replaced
                    with np.errstate(over="ignore"):
                        np.square(block.X, out=squares[:stop - start])
                    squares[block.wide.index] = 0.0
                yield start, stop, squares[:stop - start]
            return
        indptr = self.X.indptr
        for start, stop, values in self._squared_values():
            first, last = indptr[start], indptr[stop]
            yield start, stop, sp.csr_matrix(
                (values, self.X.indices[first:last], indptr[start:stop + 1] - first),
                shape=(stop - start, d), copy=False)

    def _squared_values(self):
        """``(start, stop, values)``: the squared stored values of blocks of rows of a
        sparse ``X``, in one reused buffer (a wide row's are 0)."""
        indptr, data = self.X.indptr, self.X.data
        rows = _sparse_block_rows(self.X, _BUFFER_BYTES)
        buffer = np.empty(min(data.size, _BUFFER_BYTES // 8))
        for start in range(0, self.X.shape[0], rows):
            stop = min(start + rows, self.X.shape[0])
            first, last = indptr[start], indptr[stop]
            if last - first > buffer.size:
                buffer = np.empty(last - first)
            with np.errstate(over="ignore"):  # a huge row's norm is recomputed
                values = np.square(data[first:last], out=buffer[:last - first])
            if self.wide is not None:
                wide = self.wide.index[(self.wide.index >= start) & (self.wide.index < stop)]
                values[stored_positions(indptr, wide) - first] = 0.0
            yield start, stop, values

    def _sparse_square_sums(self):
        """``(start, stop, sums)``: ``sum_j x_ij^2`` of blocks of rows of a sparse ``X``,
        each a segmented sum of the squared stored values (no matrix per block:
        measured 3x faster than a product with ones on a 50,000 x 50,000 CSR)."""
        for start, stop, squares in self._squared_values():
            yield start, stop, segment_sums(squares, self.X.indptr[start:stop + 1])

    def row_norms(self):
        """``||z_i||``: the scaled norms with the intercept's square."""
        norms = np.empty(self.shape[0])
        for start, stop, block_norms in self._row_norm_blocks():
            norms[start:stop] = block_norms
        return norms

    def max_row_norm(self):
        """The largest ``||z_i||`` (by blocks of rows: no vector of ``n`` norms),
        unless the design was given it."""
        if self._max_row_norm is None:
            self._max_row_norm = max((float(norms.max(initial=0.0))
                                      for _, _, norms in self._row_norm_blocks()), default=0.0)
        return self._max_row_norm

    def row_norms_dot(self, weights):
        """``sum_i weights_i ||z_i||``, by blocks of rows (no vector of ``n`` norms)."""
        return float(sum(weights[start:stop] @ norms
                         for start, stop, norms in self._row_norm_blocks()))

    def _row_norm_blocks(self):
        """``(start, stop, norms)``: the row norms ``||z_i||`` of blocks of rows.

        From the sums of squares of ``X``'s rows; a row whose sum may have overflowed
        or underflowed (a wide row, a row of tiny entries, a zero row) gets its norm
        from its clipped values divided by their largest entry (:meth:`_exact_norms`).
        """
        if self.sparse:
            blocks = self._sparse_square_sums()
        else:
            blocks = ((start, stop, self._dense_square_sums(block))
                      for start, stop, block in self.blocks())
        for start, stop, sums in blocks:
            unsafe = rows_to_rescale(sums)
            if self.sparse:  # a row without stored values has the exact sum 0
                indptr = self.X.indptr
                unsafe = unsafe[indptr[start + unsafe + 1] > indptr[start + unsafe]]
            with np.errstate(over="ignore", invalid="ignore"):  # unsafe rows: recomputed
                if self.scale is not None:
                    sums *= self.scale[start:stop]**2
                norms = np.sqrt(sums + (self.intercept or 0.0)**2, out=sums)
            if unsafe.size:
                norms[unsafe] = self._exact_norms(start + unsafe)
            yield start, stop, norms

    @staticmethod
    def _dense_square_sums(block):
        """The sums of squares of a dense block's rows of ``X`` (a wide row's may be
        ``inf``: it is recomputed)."""
        with np.errstate(over="ignore"):
            return np.einsum("ij,ij->i", block.X, block.X)

    def _exact_norms(self, index):
        """``||z_i||`` of the rows ``index``, from their clipped values divided by their
        largest entry (no overflow, no underflow), by blocks of rows."""
        norms = np.empty(index.size)
        step = _cache_rows(self.X.shape[1])
        for start in range(0, index.size, step):
            chunk = index[start:start + step]
            peak, ratio = scaled_row_norms(self.clipped_rows(chunk))
            with np.errstate(over="ignore"):  # a raw row beyond float64: inf
                norms[start:start + chunk.size] = np.hypot(peak * ratio, self.intercept or 0.0)
        return norms

    def weighted_gram(self, weights):
        """``Z.T @ diag(weights) @ Z``, dense ``(d, d)``, for non-negative weights.

        A dense design by SYRK on blocks of weighted rows (``sqrt(weights) z_i``) in
        one reused buffer (256 KB, and at least 256 rows): one triangle, half the work
        of a general product, and no ``n x d`` temporary (measured 1.5x faster than
        one product); a block's transpose is Fortran-ordered, which BLAS takes
        without a copy. With equal weights and explicit rows, one SYRK on ``X``. A
        sparse design by the sparse product of ``X`` and the intercept's border.
        """
        if self.sparse:
            return self._sparse_weighted_gram(weights)
        d = self.shape[1]
        if d == 0:
            return np.zeros((0, 0))
        syrk = get_blas_funcs("syrk", dtype=self.dtype)
        if (self.scale is None and self.intercept is None and self.X.flags.c_contiguous
                and len(weights) and np.all(weights == weights[0])):
            # equal weights (the squared loss): one SYRK on X itself, no copy at all
            return _symmetric_from_upper(syrk(float(weights[0]), self.X.T, trans=0, lower=0))
        upper = np.zeros((d, d), order="F")
        # SYRK is slow on thin blocks (16 rows of 5000 columns: 4x the time of 256)
        buffer = np.empty((max(_GRAM_MIN_ROWS, _cache_rows(d, _BUFFER_BYTES)), d))
        for start, stop, block in self.blocks(buffer.shape[0]):
            # the square roots by block: no second vector of n beside the weights
            rows = block.weighted_rows(np.sqrt(weights[start:stop]), out=buffer)
            upper = syrk(1.0, rows.T, beta=1.0, c=upper, trans=0, lower=0, overwrite_c=1)
        return _symmetric_from_upper(upper)

    def _sparse_weighted_gram(self, weights):
        factors = weights if self.scale is None else weights * self.scale  # of s_i x_i
        row_weights = weights if self.scale is None else factors * self.scale
        top = sp.csr_matrix(self.X.T @ sp.diags_array(row_weights) @ self.X).toarray()
        if self.wide is not None:  # their factors are 0 above: their explicit values
            rows = self.wide.rows
            top += sp.csr_matrix(rows.T @ sp.diags_array(weights[self.wide.index])
                                 @ rows).toarray()
        if self.intercept is None:
            return top
        border = np.asarray(self.X.T @ factors)
        if self.wide is not None:
            border += np.asarray(self.wide.rows.T @ weights[self.wide.index])
        d = self.X.shape[1]
        total = np.empty((d + 1, d + 1))
        total[:d, :d] = top
        total[:d, d] = total[d, :d] = self.intercept * border
        total[d, d] = self.intercept**2 * np.sum(weights)
        return total

    def gram(self):
        """``Z.T @ Z`` (:meth:`weighted_gram` with unit weights)."""
        return self.weighted_gram(np.ones(self.shape[0]))

    def toarray(self):
        """The explicit design, dense (a copy of ``X``'s size: only where a solver needs
        it)."""
        check_allocation(8.0 * self.shape[0] * self.shape[1], "The clipped design (a copy of X)")
        return self[:].toarray() if self.sparse else self[:]


class _Transposed:
    """``Z.T``, for products ``Z.T @ v`` (and ``Z.T @ Z``)."""

    def __init__(self, design):
        self.design = design
        self.shape = design.shape[::-1]

    def __matmul__(self, other):
        if other is self.design:
            return self.design.gram()
        return self.design.transpose_product(other)
