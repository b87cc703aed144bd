"""The clipped, intercept-augmented design of a row-partitioned dask array.

The rows stay in their partitions (on the workers); the driver only ever receives
partial sums of size ``O(d)`` or ``O(d^2)``. Every per-row operation happens inside
a partition, exactly as in memory: each partition's rows are clipped to the public
``data_norm`` (the overflow-safe :func:`~skdp.utils.validation.row_clipping`, wide
rows included), the public intercept column is applied inside the products
(:class:`~skdp.solvers._design.ScaledDesign` over the partition, dense or CSR), and
the labels are encoded against the public class set (or a regression's targets
clipped to their public bound) and mapped to the kernels' targets: +-1 for a binary
or one-vs-rest problem, one-hot rows for the softmax
(:meth:`PartitionedDesign.with_targets`). A kernel gets that partition's design
and targets and returns its partial sums; the driver adds them in partition order
(:meth:`PartitionedDesign.reduce`), so a fit is deterministic for one chunking.

No randomness is drawn here: the mechanisms draw every noise vector on the driver,
from the fit's secret stream, in the same order as in memory
(``shared/spec/scale_out.md``). Only the solvers' data reductions move (and DP-SGD's
Poisson masks: a partition computes its rows' part of a step's mask from the key the
driver drew, addressed by its global row indices, :attr:`PartitionedDesign.row_starts`).

dask is imported only when a dask collection is given (:func:`is_dask_collection`
reads the type's module without importing dask).
"""

import copy
from functools import partial

import numpy as np
import scipy.sparse as sp
from scipy.linalg import cho_factor, cho_solve

from ..losses import weighted_targets
from ..utils._sklearn_compat import _get_feature_names
from ..utils.validation import row_clipping
from ._check import check_loss
from ._design import ScaledDesign, WideRows, canonical_csr
from ._partitioned_persons import partition_person_sums, reduce_by_person

# The largest Hessian (entries) the partitioned Newton solver forms: a d x d partial
# sum per partition and on the driver (128 MiB). The solver forms it only where the
# in-memory rule does (:func:`partitioned_forms_hessian`: at most 120 coefficients);
# wider designs use Hessian-vector products over the partitions.
MAX_PARTITIONED_HESSIAN_ENTRIES = 2**24


def is_dask_collection(obj):
    """Whether ``obj`` is a dask collection (array, DataFrame, Series), from its type's
    module: dask is not imported."""
    return type(obj).__module__.split(".")[0] in ("dask", "dask_expr")


def _float_rows(X):
    """A partition's rows as the in-memory solvers read them: float64, dense, or CSR
    without duplicate entries (:func:`~skdp.solvers._design.canonical_csr`)."""
    if sp.issparse(X):
        return canonical_csr(X).astype(np.float64, copy=False)
    return np.asarray(X, dtype=np.float64)


def block_design(X, data_norm, intercept):
    """The :class:`ScaledDesign` of one partition: its rows clipped to ``data_norm``
    (wide rows held clipped beside it), the intercept column implicit. The same per-row
    values as :func:`skdp.linear_model._base.solver_design` on the whole array."""
    X = _float_rows(X)
    clipping = row_clipping(X, data_norm)
    factors = clipping.factors
    largest = float(np.hypot(clipping.norms.max(initial=0.0), intercept or 0.0))
    return ScaledDesign(X, None if np.all(factors == 1.0) else factors, intercept, largest,
                        WideRows.of(clipping.wide, clipping.wide_rows))


def binary_targets(y, classes):
    """+-1 targets of the labels ``y`` against the two public ``classes`` (sorted):
    ``classes[1]`` is +1, as :func:`skdp.linear_model._base.one_vs_rest_targets`."""
    return one_vs_rest(class_indices(y, classes), 1)


def class_indices(y, classes):
    """The index of each label of ``y`` in the public, sorted ``classes`` (the labels
    a partition keeps for a classifier's fit)."""
    return np.searchsorted(classes, np.asarray(y))


def one_vs_rest(labels, positive):
    """+-1 targets of class indices: ``positive`` is +1, every other class -1."""
    return np.where(labels == positive, 1.0, -1.0)


def signed_columns(labels, n_classes):
    """+-1 targets of class indices, one column per class (+1 in the row's class)."""
    return np.where(labels[:, None] == np.arange(n_classes), 1.0, -1.0)


def clipped_values(y, low, high):
    """Numeric targets clipped to the public ``[low, high]`` (a regression's)."""
    return np.clip(np.asarray(y, dtype=np.float64), low, high)


def kept_values(values):
    """The kept labels as the kernels' targets (a regression's clipped targets)."""
    return values


class _PreparedRows:
    """What one partition's clipping gives, kept on its worker for one fit: the row
    factors, the wide rows' clipped values, the largest row norm, the row norms of the
    design, the encoded labels (``encode(y)``: class indices, or clipped targets) and,
    when given, the rows' weights, persons and persons' sizes (``O(rows)``, never
    ``X``'s values)."""

    def __init__(self, X, y, encode, data_norm, intercept, weights=None, persons=None,
                 person_sizes=None):
        design = block_design(X, data_norm, intercept)
        self.scale, self.largest, self.wide = design.scale, design._max_row_norm, design.wide
        self.norms = design.row_norms()
        self.labels = encode(y)
        self.weights = None if weights is None else np.asarray(weights, dtype=np.float64)
        self.persons = None if persons is None else np.asarray(persons, dtype=np.intp)
        self.person_sizes = (None if person_sizes is None
                             else np.asarray(person_sizes, dtype=np.intp))


class _PreparedDesign(ScaledDesign):
    """A partition's :class:`ScaledDesign` rebuilt from its :class:`_PreparedRows`:
    the same factors, wide rows and row norms as :func:`block_design` computes, without
    clipping the rows again."""

    def __init__(self, X, prepared, intercept):
        super().__init__(_float_rows(X), prepared.scale, intercept, prepared.largest,
                         prepared.wide)
        self._norms = prepared.norms

    def row_norms(self):
        return self._norms

    def row_norms_dot(self, weights):
        return float(np.sum(weights * self._norms))   # no BLAS call (thread wake-ups)


def _partition_view(X, prepared, view):
    """A partition's design and targets as ``view`` = ``(intercept, targets, columns)``
    presents them: ``targets`` maps its kept labels, ``columns`` (or ``None``) selects
    columns of the design. Rows with weights have the targets of a
    :class:`~skdp.losses.WeightedLoss`, ``(y_i, w_i)``."""
    intercept, targets, columns = view
    design = _PreparedDesign(X, prepared, intercept)
    if columns is not None:
        design = design.columns(columns)
    mapped = targets(prepared.labels)
    if prepared.weights is not None:
        mapped = weighted_targets(mapped, prepared.weights)
    return design, mapped


def _run_checked_kernel(X, y, weights, rows, kernel, args):
    """One partition read once (:meth:`PartitionedDesign.checked_reduce`): whether its
    rows and targets are finite and, when they are, ``kernel`` on its clipped design
    and targets (``None`` otherwise). ``rows`` = ``(encode, targets, data_norm,
    intercept)``."""
    encode, targets, data_norm, intercept = rows
    if not _check_numeric_block(X, y)[0]:
        return False, None
    mapped = targets(encode(y))
    if weights is not None:
        mapped = weighted_targets(mapped, np.asarray(weights, dtype=np.float64))
    return True, kernel(block_design(X, data_norm, intercept), mapped, *args)


def _run_kernel(X, prepared, view, kernel, args):
    return kernel(*_partition_view(X, prepared, view), *args)


def _run_row_kernel(X, prepared, view, start, kernel, args):
    design, targets = _partition_view(X, prepared, view)
    return kernel(design, targets, start, *args)


def _run_person_kernel(X, prepared, view, kernel, finish, args):
    design, targets = _partition_view(X, prepared, view)
    codes, sums = kernel(design, targets, prepared.persons, *args)
    return partition_person_sums(prepared.persons, prepared.person_sizes, codes, sums,
                                 finish)


def _add(total, part):
    if isinstance(total, tuple):
        return tuple(_add(a, b) for a, b in zip(total, part))
    return total + part


def _sum_in_order(parts):
    """The partial sums ``parts`` added in order (arrays, or tuples of arrays)."""
    total = parts[0]
    for part in parts[1:]:
        total = _add(total, part)
    return total


def _row_blocks(X, y):
    """The row blocks of ``X`` and ``y`` as delayed objects, their graphs as given (not
    optimised: ``y`` computed from ``X``, or both from one DataFrame, keep one task per
    key in every pass, where separately fused graphs would give a key two definitions)."""
    return (X.to_delayed(optimize_graph=False).ravel(),
            y.to_delayed(optimize_graph=False).ravel())


def _optional_blocks(values, n_partitions):
    """The row blocks of an optional per-row dask array as delayed objects (``None``
    for every partition when it is not given)."""
    if values is None:
        return [None] * n_partitions
    return list(values.to_delayed(optimize_graph=False).ravel())


class PartitionedDesign:
    """``[s_i x_i, c]`` for a dask array ``X`` partitioned by rows, with the labels
    ``y`` partitioned alike.

    Parameters
    ----------
    X : dask.array.Array of shape (n_samples, n_features)
        Dense float rows, chunked by rows only (one column chunk), known chunk sizes.
    y : dask.array.Array of shape (n_samples,)
        The labels (or a regression's targets), with the row chunks of ``X``.
    classes : ndarray or None
        The public, sorted label set (``None`` for a regression: give ``encode``).
    data_norm : float
        The clipping norm (finite).
    intercept : float or None
        The intercept column's value; ``None`` without an intercept.
    encode : callable, default=None
        What a partition keeps of its labels, ``encode(y_p)``, computed once per fit
        inside the partition (picklable). ``None``: the class indices in ``classes``
        (:func:`class_indices`).
    targets : callable, default=None
        The kernels' targets from the kept labels, ``targets(labels_p)``, inside the
        partition (picklable). ``None``: +-1 with ``classes[-1]`` as +1 (two classes;
        :func:`one_vs_rest`).
    weights : dask.array.Array of shape (n_samples,), default=None
        Each row's weight, with the row chunks of ``X``: the kernels' targets are then
        those of a :class:`~skdp.losses.WeightedLoss`, ``(y_i, w_i)``.
    persons : dask.array.Array of shape (n_samples,), default=None
        Each row's person code, with the row chunks of ``X`` (a person's rows may lie
        in several partitions), passed to the kernels of :meth:`reduce_by_person`.
    person_sizes : dask.array.Array of shape (n_samples,), default=None
        Each row's person's number of rows (with ``persons``:
        :func:`~skdp.solvers._partitioned_persons.partitioned_person_sizes`).
    n_persons : int, default=None
        The number of persons (with ``groups``; private, the fit's DP count reads it).

    Notes
    -----
    :meth:`with_targets` and :meth:`columns` give views of the same partitions (the
    clipped rows prepared once, shared): one problem of one-vs-rest, or the design of
    some columns.
    """

    partitioned = True

    def __init__(self, X, y, classes, data_norm, intercept, *, encode=None, targets=None,
                 weights=None, persons=None, person_sizes=None, n_persons=None):
        self.X, self.y = X, y
        self.sparse = sp.issparse(getattr(X, "_meta", None))
        self.classes = None if classes is None else np.asarray(classes)
        self.data_norm, self.intercept = float(data_norm), intercept
        self.shape = (int(X.shape[0]), int(X.shape[1]) + (intercept is not None))
        self.n_partitions = len(X.chunks[0])
        self._blocks = list(zip(*_row_blocks(X, y)))
        self._extras = [_optional_blocks(v, self.n_partitions)
                        for v in (weights, persons, person_sizes)]
        self.n_persons = n_persons
        # each partition's first global row (public: the chunk sizes are known)
        self.row_starts = np.concatenate([[0], np.cumsum(X.chunks[0])[:-1]]).astype(int)
        self._encode = encode if encode is not None else partial(class_indices,
                                                                 classes=self.classes)
        if targets is None:
            targets = partial(one_vs_rest, positive=len(self.classes) - 1)
        self._targets, self._columns = targets, None
        self.target_width = 1   # columns of the kernels' targets (with_targets)
        self._shared = {"prepared": None}   # shared by the views of this design

    def _prepare(self):
        """Clip every partition once per fit: its :class:`_PreparedRows` are persisted
        where it lives (on its worker) and freed with this design and its views."""
        import dask

        if self._shared["prepared"] is None:
            prepare = dask.delayed(_PreparedRows, pure=True)
            self._shared["prepared"] = dask.persist(*[
                prepare(xb, yb, self._encode, self.data_norm, self.intercept, wb, pb, kb)
                for (xb, yb), wb, pb, kb in zip(self._blocks, *self._extras)])
        return self._shared["prepared"]

    def with_targets(self, targets, width=1):
        """The same partitions with other kernel targets, ``targets(labels_p)`` (one
        problem of one-vs-rest: ``partial(one_vs_rest, positive=k)``).

        Parameters
        ----------
        targets : callable
            Picklable, applied inside each partition to its kept labels.
        width : int, default=1
            The number of target columns (:attr:`target_width`).

        Returns
        -------
        design : PartitionedDesign
            A view sharing this design's prepared partitions.
        """
        view = copy.copy(self)
        view._targets, view.target_width = targets, int(width)
        return view

    def columns(self, index):
        """The design of some columns (increasing indices into the design's columns,
        the intercept column last), as :meth:`ScaledDesign.columns` inside each
        partition.

        Parameters
        ----------
        index : array-like of int

        Returns
        -------
        design : PartitionedDesign
            A view sharing this design's prepared partitions.
        """
        if self._columns is not None:
            raise ValueError("columns() of a column view is not supported.")
        view = copy.copy(self)
        view._columns = np.asarray(index, dtype=np.intp)
        view.shape = (self.shape[0], len(view._columns))
        return view

    def partials(self, kernel, *args, with_rows=False):
        """``[kernel(design_p, targets_p, *args) for p in partitions]``, in partition
        order, for partial sums the driver adds its own way (the double-double
        gradient of the certificate's fallback: :func:`accurate_partitioned_gradient`).

        ``kernel`` must return values of a size independent of the partition's row
        count: only those reach the driver. ``with_rows``: the kernel also gets the
        partition's first global row index, ``kernel(design_p, targets_p, start_p,
        *args)`` (the Poisson masks of DP-SGD are addressed by it).
        """
        import dask

        view = (self.intercept, self._targets, self._columns)
        if with_rows:
            run = dask.delayed(_run_row_kernel, pure=True)
            tasks = [run(xb, prepared, view, int(start), kernel, args)
                     for (xb, _), prepared, start in zip(self._blocks, self._prepare(),
                                                         self.row_starts)]
        else:
            run = dask.delayed(_run_kernel, pure=True)
            tasks = [run(xb, prepared, view, kernel, args)
                     for (xb, _), prepared in zip(self._blocks, self._prepare())]
        return list(dask.compute(*tasks))

    def reduce(self, kernel, *args, with_rows=False):
        """``sum_p kernel(design_p, targets_p, *args)`` over the partitions ``p``.

        ``kernel`` must return an array or a tuple of arrays of a size independent of
        the partition's row count (partial sums): only those reach the driver, which
        adds them in partition order. ``with_rows`` as in :meth:`partials`.
        """
        return _sum_in_order(self.partials(kernel, *args, with_rows=with_rows))

    def reduce_by_person(self, kernel, finish, *args):
        """``sum_persons finish(sums_person)`` over every person of a design with
        ``persons``, a person's rows in any partitions.

        ``kernel(design_p, targets_p, persons_p, *args)`` returns a partition's sums by
        person, ``(codes, sums)``: the persons it sums (increasing; each over all of
        its rows in the partition) and one row of ``sums`` (an array or CSR matrix)
        each. ``finish(sums, sizes)`` maps whole persons' sums (``sizes`` their
        numbers of rows) to their clipped total. The persons of one partition are
        finished there, the others' partial sums added by person on the workers
        (:func:`~skdp.solvers._partitioned_persons.reduce_by_person`); ``X`` stays in
        its partitions.

        Returns
        -------
        total : ndarray
            The sum of ``finish`` over all persons summed.
        n_persons : int
            Their number (private: for the run's record only).
        """
        import dask

        view = (self.intercept, self._targets, self._columns)
        run = dask.delayed(_run_person_kernel, pure=True)
        return reduce_by_person([run(xb, prepared, view, kernel, finish, args)
                                 for (xb, _), prepared in zip(self._blocks, self._prepare())],
                                finish)


    def checked_reduce(self, kernel, *args):
        """:meth:`reduce` in one read of the data, for a regression whose values were
        not scanned (``check_partitioned_input(..., scan=False)``) and that needs one
        reduction: each partition is read, checked (finite rows and targets), clipped
        and reduced by ``kernel`` in one task, nothing persisted. A non-finite value is
        refused after the pass, before the caller draws any noise.
        """
        import dask

        rows = (self._encode, self._targets, self.data_norm, self.intercept)
        run = dask.delayed(_run_checked_kernel, pure=True)
        results = dask.compute(*[run(xb, yb, wb, rows, kernel, args)
                                 for (xb, yb), wb in zip(self._blocks, self._extras[0])])
        if not all(finite for finite, _ in results):
            raise ValueError(NON_FINITE_REGRESSION)
        return _sum_in_order([part for _, part in results])


class InMemoryReductions:
    """The reduction protocol of :class:`PartitionedDesign` on one in-memory design:
    ``reduce(kernel, *args)`` is ``kernel(design, targets, *args)``, one partition.

    A solver written against ``reduce`` (:func:`partitioned_newton_minimise`) runs
    unchanged on rows in memory and on rows in partitions.

    Parameters
    ----------
    design : ScaledDesign
        The clipped, intercept-augmented rows.
    targets : ndarray of shape (n_samples,)
        Their +-1 targets.
    """

    partitioned = False

    def __init__(self, design, targets):
        self.design, self.targets = design, np.asarray(targets, dtype=float)
        self.shape, self.sparse = design.shape, design.sparse

    def partials(self, kernel, *args, with_rows=False):
        """``[kernel(design, targets, *args)]``: one partition (``with_rows``: its
        first row, 0, after the targets)."""
        return [self.reduce(kernel, *args, with_rows=with_rows)]

    def reduce(self, kernel, *args, with_rows=False):
        """``kernel(design, targets, *args)`` (``with_rows``: ``0`` after the
        targets)."""
        if with_rows:
            return kernel(self.design, self.targets, 0, *args)
        return kernel(self.design, self.targets, *args)


# --------------------------------------------------------------------------------------
# Newton's method for the sum-form GLM objective over partitions (objective perturbation)
# --------------------------------------------------------------------------------------

def _glm_pass(design, y, theta, loss, hessian=True):
    """One partition's share of the objective at ``theta``: the loss sum, the
    certificate's rounding magnitude ``sum_i |l'_i| ||z_i||`` and the curvature sum
    ``sum_i l''_i`` (one array), the data gradient ``Z^T l'`` and, when ``hessian``, the
    data Hessian ``Z^T diag(l'') Z`` (else an empty array), in one pass."""
    z = design @ theta
    slopes = loss.dz(z, y)
    curvatures = loss.d2z(z, y)
    value = np.array([float(np.sum(loss.loss(z, y))),
                      design.row_norms_dot(np.abs(slopes)), float(np.sum(curvatures))])
    gram = design.weighted_gram(curvatures) if hessian else np.zeros(0)
    return value, design.transpose_product(slopes), gram


def _curvature_product_pass(design, y, theta, vector, loss):
    """One partition's ``Z^T diag(l''(Z theta)) Z v`` (a Hessian-vector product; both
    products with ``Z`` in one pass over the partition)."""
    both = design @ np.column_stack([theta, vector])
    return design.transpose_product(loss.d2z(both[:, 0], y) * both[:, 1])


def _column_squares_pass(design, y):
    """One partition's ``sum_i z_ij^2`` for every column ``j``."""
    return design.weighted_column_squares(np.ones(design.shape[0]))


class _DenseShape:
    """A dense design's shape, for :func:`~skdp.solvers._newton.uses_hessian_products`."""

    sparse = False

    def __init__(self, shape):
        self.shape = shape


def partitioned_forms_hessian(n_coefficients):
    """Whether the partitioned Newton solver forms the ``d x d`` Hessian: the in-memory
    rule (:func:`~skdp.solvers._newton.uses_hessian_products`) for dense rows, which
    does not depend on the number of rows (the Hessian costs ``n d^2 / 2``, a step of
    products about ``60 n d``): up to 120 coefficients; wider designs use
    Hessian-vector products (Newton-CG) and never form it."""
    from ._newton import uses_hessian_products

    return not uses_hessian_products(_DenseShape((1, n_coefficients)))


def check_partitioned_hessian(n_coefficients):
    """Refuse, before any work, a Hessian the partitioned solver would form but cannot
    hold."""
    if (partitioned_forms_hessian(n_coefficients)
            and n_coefficients**2 > MAX_PARTITIONED_HESSIAN_ENTRIES):
        raise ValueError(
            f"A fit on a dask array forms the {n_coefficients} x {n_coefficients} Hessian "
            f"on every worker and on the driver; at most "
            f"{int(np.sqrt(MAX_PARTITIONED_HESSIAN_ENTRIES))} coefficients are supported "
            "with a formed Hessian.")


def _accurate_gradient_pass(design, y, point, loss):
    """One partition's data gradient ``Z_p^T l'(Z_p theta)`` at the double-double
    ``point``, in double-double, and a bound on its error
    (:func:`~skdp.solvers._accurate.accurate_data_gradient` on the partition's own
    clipped rows, with its own largest row norm): ``(hi, lo, bound)``, O(d)."""
    from ._accurate import accurate_data_gradient

    def slopes(z, rows, z_bound):
        (hi, lo), error = loss.dz_accurate((z[0][:, 0], z[1][:, 0]), y[rows], z_bound[:, 0])
        return (hi[:, None], lo[:, None]), error

    column = (point[0][:, None], point[1][:, None])
    (hi, lo), bound, _ = accurate_data_gradient(design, column, slopes,
                                                design.max_row_norm())
    return hi[:, 0], lo[:, 0], bound


def accurate_partitioned_gradient(design, point, loss):
    """The data gradient ``sum_i l'(<z_i, theta>) z_i`` at the double-double ``point``
    in double-double, with a proven bound on its error, over the partitions.

    Each partition computes its partial gradient and bound
    (:func:`_accurate_gradient_pass`); the driver adds the pairs in partition order by
    :func:`~skdp.utils._double_double.add`, each addition's rounding (at most
    ``ADD_ERROR U**2`` relative) added to the partitions' bounds.

    Parameters
    ----------
    design : PartitionedDesign or InMemoryReductions
        The rows (anything with ``partials``).
    point : tuple of ndarray
        Double-double coefficients ``(hi, lo)``, each of shape (n_coefficients,).
    loss : object
        A loss with ``dz_accurate``.

    Returns
    -------
    gradient : tuple of ndarray
        Double-double, shape (n_coefficients,).
    bound : float
        A bound on the norm of its error.
    """
    return add_accurate_partials(design.partials(_accurate_gradient_pass, point, loss))


def add_accurate_partials(parts):
    """The double-double sum of the partitions' ``(hi, lo, bound)`` in partition order,
    and a bound on its error: the partitions' bounds plus each addition's rounding (at
    most ``ADD_ERROR U**2`` relative, per entry)."""
    from ..utils import _double_double as dd

    hi, lo, bound = parts[0]
    total, entry_bound = (hi, lo), np.zeros_like(hi)
    for hi, lo, part_bound in parts[1:]:
        total = dd.add(total, (hi, lo))
        entry_bound += (dd.ADD_ERROR + 1.0) * dd.U**2 * np.abs(total[0])
        bound += part_bound
    return total, float(bound) + float(np.linalg.norm(entry_bound))


def partitioned_newton_minimise(design, loss, *, C, ridge, linear, tol, max_iter):
    """Minimise ``C sum_i l(<z_i, theta>, y_i) + ridge/2 ||theta||^2 + <linear, theta>``
    over a :class:`PartitionedDesign` (or any design with its ``reduce`` and
    ``partials``, such as :class:`InMemoryReductions`) to a certified
    ``||grad J|| <= tol``.

    Newton's method with Armijo backtracking, as :func:`~skdp.solvers.newton_minimise`;
    each iterate costs one pass over the partitions (:func:`_glm_pass`: value,
    gradient, rounding magnitude and curvature sum fused, with the Hessian when it is
    formed). The direction comes from the exact Hessian (Cholesky) where the in-memory
    rule forms it (:func:`partitioned_forms_hessian`), else from conjugate gradients
    on Hessian-vector products, one pass over the partitions each
    (:func:`_curvature_product_pass`), with the in-memory solver's forcing term and
    preconditioner (the column squares, one pass per fit, times the mean curvature),
    so that no ``d x d`` matrix is formed. The certificate is the computed gradient
    norm plus :func:`~skdp.solvers._newton._rounding_bound` with every row's own norm,
    which covers any summation order. That estimate grows with the number of rows;
    when it makes the certificate inconclusive, the fallback of the in-memory solver
    runs over the partitions (:func:`~skdp.solvers._accurate.refine_and_certify` with
    the gradient of :func:`accurate_partitioned_gradient` and steps from the
    Hessian at the last iterate: its Cholesky factor, or conjugate gradients), so that
    whether a fit certifies does not depend on the size of the data. A loss without
    ``dz_accurate`` has no fallback.

    Returns
    -------
    result : NewtonResult
    """
    from ._accurate import assemble_gradient, refine_and_certify
    from ._newton import (_MAX_PRODUCTS_PER_STEP, _REFINEMENT_FORCING, NewtonResult,
                          _backtrack, _conjugate_gradient, _has_fallback, _rounding_bound,
                          newton_forcing)

    check_loss(loss, "partitioned_newton_minimise")
    fallback = _has_fallback(loss)
    n, d = design.shape
    check_partitioned_hessian(d)
    products = not partitioned_forms_hessian(d)
    column_squares = design.reduce(_column_squares_pass) if products else None

    def evaluate(point):
        stats = design.reduce(_glm_pass, point, loss, not products)
        value = C * stats[0][0] + 0.5 * ridge * point @ point + linear @ point
        return stats, value

    def factor_at(data_hessian):
        hessian = C * data_hessian
        hessian.flat[:: d + 1] += ridge
        return cho_factor(hessian, check_finite=False)

    def solve_by_products(point, curvature_sum, rhs, rtol):
        """``H^{-1} rhs`` at ``point`` by preconditioned conjugate gradients."""
        inverse_diagonal = 1.0 / (C * curvature_sum / max(n, 1) * column_squares + ridge)

        def product(v):
            return C * design.reduce(_curvature_product_pass, point, v, loss) + ridge * v

        return _conjugate_gradient(product, rhs, inverse_diagonal.__mul__, rtol,
                                   _MAX_PRODUCTS_PER_STEP)[0]

    theta = np.zeros(d)
    stats, value = evaluate(theta)
    first_norm = previous_norm = None
    fresh = False
    for n_iter in range(max_iter + 1):
        (_, magnitude, curvature_sum), data_gradient, data_hessian = stats
        gradient = C * data_gradient + ridge * theta + linear
        gradient_norm = float(np.linalg.norm(gradient))
        rounding = _rounding_bound(theta, magnitude, C, ridge, linear)
        stalled = (previous_norm is not None and fresh
                   and rounding >= gradient_norm > 0.5 * previous_norm)
        previous_norm = gradient_norm
        if first_norm is None:
            first_norm = gradient_norm
        # with the fallback, a norm below tol whose estimate alone exceeds tol is as
        # far as the fast certificate goes (as in memory)
        hopeless = fallback and gradient_norm <= tol <= rounding
        if gradient_norm + rounding <= tol or stalled or hopeless or n_iter == max_iter:
            break
        if products:
            forcing = newton_forcing(gradient_norm, first_norm, tol)  # as in memory
            step = solve_by_products(theta, curvature_sum, gradient, forcing)
        else:
            step = cho_solve(factor_at(data_hessian), gradient, check_finite=False)
        fresh = True
        theta, stats, value = _backtrack(theta, step, gradient @ step, value, evaluate)
    certified_norm = gradient_norm + rounding
    if certified_norm > tol and fallback and gradient_norm <= max(tol, rounding):
        # the Hessian at theta (this iterate's pass): its factor, or its products
        last, curvature_sum = theta, stats[0][2]
        factor = None if products else factor_at(stats[2])

        def gradient_at(point):
            data, bound = accurate_partitioned_gradient(design, point, loss)
            gradient, bound = assemble_gradient(data, bound, point, C, ridge, linear)
            return gradient, bound, None

        def newton_step(_, gradient):
            if factor is not None:
                return cho_solve(factor, gradient, check_finite=False)
            return solve_by_products(last, curvature_sum, gradient, _REFINEMENT_FORCING)

        accurate = refine_and_certify(theta, gradient_at, newton_step, ridge=ridge, tol=tol)
        if accurate is not None:
            theta, certified_norm, steps = accurate
            n_iter += steps
    return NewtonResult(theta, n_iter, certified_norm, certified_norm <= tol)


# --------------------------------------------------------------------------------------
# The data term of NAPP's composite objective over partitions
# --------------------------------------------------------------------------------------

def zero_pass(design, y, loss, quadratic):
    """One partition's loss sum and data gradient at ``theta = 0`` and, when the loss's
    curvature is constant (``quadratic``), its Gram matrix ``Z^T diag(l''(0)) Z`` (else an
    empty array): the data term of a squared loss whole, in one pass."""
    zeros = np.zeros(design.shape[0])
    value = np.array([float(np.sum(loss.loss(zeros, y)))])
    gram = design.weighted_gram(loss.d2z(zeros, y)) if quadratic else np.zeros(0)
    return value, design.transpose_product(loss.dz(zeros, y)), gram


def loss_value_pass(design, y, theta, loss):
    """One partition's ``sum_i l(<z_i, theta>, y_i)`` (``inf`` where it overflows)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.array([float(np.sum(loss.loss(design @ theta, y)))])


def loss_gradient_pass(design, y, theta, loss):
    """One partition's ``Z^T l'(Z theta)``."""
    return design.transpose_product(loss.dz(design @ theta, y))


def loss_hessian_pass(design, y, theta, loss):
    """One partition's ``Z^T diag(l''(Z theta)) Z``."""
    return design.weighted_gram(loss.d2z(design @ theta, y))


# --------------------------------------------------------------------------------------
# Input checks as a map-reduce, before any noise
# --------------------------------------------------------------------------------------

def _finite(X):
    """Whether every value of a partition (dense, or a sparse one's stored values) is
    finite."""
    values = X.data if sp.issparse(X) else np.asarray(X)
    return bool(np.isfinite(values).all()) if values.dtype.kind in "fc" else True


def _check_block(X, y, declared):
    """One partition's input facts: whether every value is finite, and its labels (their
    distinct values, or one label outside ``declared`` if any)."""
    finite = _finite(X)
    y = np.asarray(y)
    if declared is None:
        labels = np.unique(y)
    else:
        labels = np.unique(y[~np.isin(y, declared)])[:1]  # one offending label at most
    return finite, labels


def _check_numeric_block(X, y):
    """One partition's input facts for a regression: whether every value of ``X`` and
    ``y`` is finite, and whether some target is negative."""
    y = np.asarray(y, dtype=np.float64)
    finite = _finite(X)
    return finite and bool(np.isfinite(y).all()), bool(np.any(y < 0))


def _as_dask_arrays(X, y):
    """``X`` and ``y`` as dask arrays with known row chunks, and ``X``'s column names
    when scikit-learn records them from a pandas frame (all strings; a dask
    DataFrame's partition lengths are computed: a count per partition, on the
    workers)."""
    import dask.array as da

    names = None
    if hasattr(X, "to_dask_array"):           # dask DataFrame
        import pandas as pd

        names = _get_feature_names(pd.DataFrame(columns=X.columns))   # its column labels
        X = X.to_dask_array(lengths=True)
    if hasattr(y, "to_dask_array"):           # dask Series
        y = y.to_dask_array(lengths=True)
    if not isinstance(X, da.Array):
        raise ValueError(f"A fit on partitioned data takes X as a dask array or a dask "
                         f"DataFrame, not {type(X).__name__}.")
    if not isinstance(y, da.Array):
        y = np.asarray(y)
        if y.ndim != 1 or any(np.isnan(c) for c in X.chunks[0]) or len(y) != X.shape[0]:
            raise ValueError("y in memory must be 1-D with one label per row of the dask X "
                             "(and X needs known chunk sizes).")
        y = da.from_array(y, chunks=(X.chunks[0],))
    return X, y, names


def check_partitioned_input(X, y, classes=None, *, max_classes=np.inf,
                            regression=False, scan=True):
    """Validate a partitioned ``(X, y)`` before any noise; return the design's inputs.

    Refuses (``ValueError``): ``X`` not 2-D or ``y`` not 1-D; unknown chunk sizes;
    chunks other than numpy or scipy.sparse, or not numeric; row chunks of ``X`` and
    ``y`` that differ; no rows; non-finite values in any partition; labels outside the
    declared ``classes``; a label set (declared, or the union over partitions, then
    treated as public) of fewer than two classes or more than ``max_classes``. A ``regression``: non-finite
    targets. The checks are one pass over the partitions; only flags and a label set
    per partition reach the driver.

    Parameters
    ----------
    X, y : dask collections (``y`` may be in memory)
    classes : array-like or None, default=None
        The declared label set (a classifier's ``classes``).
    max_classes : int, default=np.inf
        The most classes the estimator fits on a dask array.
    regression : bool, default=False
        Numeric targets (no labels).
    scan : bool, default=True
        Whether to check the values in a pass of their own. ``False`` (a regression
        only): the caller checks them in its one pass
        (:meth:`PartitionedDesign.checked_reduce`), and ``negative`` is ``False``.

    Returns
    -------
    X : dask.array.Array
        One column chunk.
    y : dask.array.Array
    classes : ndarray of shape (n_classes,), or None for a regression
    negative : bool
        Whether some target is negative (a regression's; ``False`` otherwise).
    feature_names : ndarray or None
    """
    import dask

    X, y, names = _as_dask_arrays(X, y)
    if X.ndim != 2:
        raise ValueError(f"Expected a 2-D dask array X, got {X.ndim} dimension(s).")
    if y.ndim != 1:
        raise ValueError("y must be a 1-D dask array of labels on partitioned data.")
    if any(np.isnan(c) for c in X.chunks[0] + y.chunks[0]):
        raise ValueError("X and y need known chunk sizes (call compute_chunk_sizes(), or "
                         "to_dask_array(lengths=True) on a DataFrame).")
    meta = getattr(X, "_meta", None)
    if meta is not None and not (isinstance(meta, np.ndarray) or sp.issparse(meta)):
        raise ValueError("A fit on a dask array supports numpy or scipy.sparse chunks "
                         f"(chunks of type {type(meta).__name__} are refused).")
    if X.dtype.kind not in "fiub":
        raise ValueError(f"X must hold numbers; got dtype {X.dtype}.")
    if tuple(X.chunks[0]) != tuple(y.chunks[0]):
        raise ValueError("X and y must have the same row chunks (rechunk y to X.chunks[0]).")
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"Found array with shape {X.shape}: at least one row and one "
                         "feature are required.")
    if len(X.chunks[1]) > 1:   # one column chunk: each partition holds whole rows
        X = X.rechunk({1: -1})
    declared = None if classes is None else np.unique(np.asarray(classes))
    if declared is not None:  # a declared label set is refused before any pass
        if len(declared) != len(classes):
            raise ValueError(f"classes={list(classes)!r} holds repeated labels.")
        _check_classes(declared, max_classes)
    if regression:
        return _check_numeric(X, y, names, scan)
    check = dask.delayed(_check_block, pure=True)
    facts = dask.compute(*[check(xb, yb, declared) for xb, yb in
                           zip(*_row_blocks(X, y))])
    if not all(finite for finite, _ in facts):
        raise ValueError("Input X contains NaN or infinity.")
    if declared is not None:
        if any(labels.size for _, labels in facts):
            raise ValueError(
                "y holds labels outside the declared classes; every label must be one of "
                f"classes={declared.tolist()!r}.")
        labels = declared
    else:
        labels = np.unique(np.concatenate([labels for _, labels in facts]))
    _check_classes(labels, max_classes)
    return X, y, labels, False, names


NON_FINITE_REGRESSION = "Input X or y contains NaN or infinity."


def _check_numeric(X, y, names, scan=True):
    """The map-reduce of a regression's input checks (:func:`_check_numeric_block`;
    without ``scan``, the dtype's only)."""
    import dask

    if y.dtype.kind not in "fiub":
        raise ValueError(f"y must hold numbers for a regression; got dtype {y.dtype}.")
    if not scan:
        return X, y, None, False, names
    check = dask.delayed(_check_numeric_block, pure=True)
    facts = dask.compute(*[check(xb, yb) for xb, yb in
                           zip(*_row_blocks(X, y))])
    if not all(finite for finite, _ in facts):
        raise ValueError(NON_FINITE_REGRESSION)
    return X, y, None, any(negative for _, negative in facts), names


def _check_classes(labels, max_classes):
    if len(labels) < 2:
        raise ValueError(
            "This solver needs samples of at least 2 classes in the data, but the data "
            f"contains only one class: {labels[0]!r}.")
    if len(labels) > max_classes:
        raise ValueError(
            "A fit on a dask array with this estimator supports binary classification "
            f"only (found {len(labels)} classes); fit in memory for more classes.")
