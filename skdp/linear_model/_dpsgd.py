"""DP-SGD and full-batch DP-GD for linear classifiers (gradient perturbation)."""

import copy
import math
import time
import warnings
from dataclasses import dataclass, field
from functools import partial
from numbers import Real

import numpy as np
import scipy.sparse as sp
from scipy import stats
from scipy.linalg.blas import get_blas_funcs
from scipy.special import expit, log_softmax, softmax
from sklearn.base import ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import validate_data
from threadpoolctl import threadpool_limits

from ..accounting._calibration import calibrate_noise_multiplier, noise_multiplier_derivative
from ..accounting._costs import DPSGDRungCost, mechanism_rdp, pure_rdp
from ..accounting._dpsgd import (DPSGDEvent, composed_dpsgd_epsilon, composed_mu,
                                 default_count_noise_std, dpsgd_epsilon,
                                 with_gaussian_releases)
from ..accounting._gaussian import gdp_mu
from ..base import LARGE_DELTA, atomic_fit, warn_noise_floor
from ..exceptions import InferenceError, LargeDeltaWarning, PrivacyBudgetError
from ..losses import HingeLoss
from ..mechanisms._dominance import NOISE_FLOOR_CERTAINTY, noise_floor
from ..mechanisms._one_step import (one_step_calibration, one_step_inference, one_step_mu,
                                    release_one_step)
from ..mechanisms._poisson_sampling import poisson_key as _poisson_key
from ..mechanisms._poisson_sampling import poisson_rows as _poisson_rows
from ..mechanisms._poisson_sampling import poisson_step_samples as _poisson_step_samples
from ..solvers._design import (_CACHE_BYTES, RowBuffers, _cache_rows, _sparse_block_rows,
                               as_design, is_sparse)
from ..solvers._newton import _row_norms
from ..solvers._partitioned import is_dask_collection, signed_columns
from ..solvers._partitioned_softmax import one_hot
from ..utils._docstrings import fill_doc
from ..utils._groups import check_groups, person_relation
from ..utils._random import _aes_counter, _chacha, noise_generator
from ..utils._sklearn_compat import Interval, StrOptions
from ..utils.validation import (finite_clipping_norm, row_clip_factors, scaled_row_norms,
                                segment_sums)
from ._base import (PARTITIONED_SUPPORT, PrivateLinearModel, _LinearClassifierMixin,
                    encode_labels, linear_classifier_constraints, partitioned_design,
                    solver_design)
from ._dpsgd_intercept import (CURVATURE_FLOOR, InterceptCorrection, clipped_pairs_total,
                               intercept_statistics, partition_intercept_statistics,
                               partition_person_pairs, partition_person_positives,
                               partition_positive_shares, person_positive_shares,
                               positive_shares, start_intercept)
from ._inference import InferenceMixin
from ._weights import check_class_weight, row_weights

_SCHEDULES = ("constant", "step", "linear")
_AXPY = get_blas_funcs("axpy", dtype=np.float64)

DPSGD_INFERENCE_OPTIONS = (
    "inference=True gives intervals for one binary logistic fit on rows in memory, "
    "unweighted, in one call (the information matrix it releases is the logistic "
    "loss's Hessian, which is also the covariance of its gradient only for that "
    "model): ")


# --------------------------------------------------------------------------------------
# Losses on a matrix of scores: per-example gradient of the linear model = outer(r_i, x_i)
# --------------------------------------------------------------------------------------

class _SoftmaxCrossEntropy:
    """Multinomial logistic loss of the scores ``S`` (n, K) against one-hot ``Y``."""

    name = "softmax"

    def residual_bound(self, width):
        """Bound on ``||softmax(S_i) - Y_i||``: ``sqrt(2)`` whatever the ``width``."""
        return math.sqrt(2.0)

    def residual(self, S, Y):
        """``d loss_i / d S_i = softmax(S_i) - Y_i``."""
        return softmax(S, axis=1) - Y

    def residual_tangent(self, S, Y, dS):
        """Directional derivative of :meth:`residual` along ``dS``."""
        P = softmax(S, axis=1)
        return P * (dS - np.sum(P * dS, axis=1, keepdims=True))

    def value(self, S, Y):
        return -np.sum(Y * log_softmax(S, axis=1), axis=1)


class _MarginColumns:
    """A margin loss applied to each column of ``S`` against +-1 targets ``Y``.

    One column is the binary model; several columns are one-vs-rest problems
    trained jointly, so one clipped per-example gradient covers all of them
    (no budget split).
    """

    def __init__(self, loss):
        self.loss = loss
        self.name = loss.name

    def residual_bound(self, width):
        """Bound on the norm of a row's ``width`` residuals: each is at most the
        loss's ``lipschitz`` in absolute value."""
        return self.loss.lipschitz * math.sqrt(width)

    def residual(self, S, Y):
        return self.loss.dz(S, Y)

    def residual_tangent(self, S, Y, dS):
        if isinstance(self.loss, HingeLoss):  # piecewise linear: zero almost everywhere
            return np.zeros_like(dS)
        return self.loss.d2z(S, Y) * dS

    def value(self, S, Y):
        return np.sum(self.loss.loss(S, Y), axis=1)


def gradient_norm_bound(loss, width, row_bound):
    """The largest norm a per-example gradient can have: ``max_grad_norm="auto"``.

    A linear model's per-example gradient is the outer product ``r_i z_i^T`` of the
    residuals ``r_i`` (``width`` of them) and the design row ``z_i``, of Frobenius norm
    ``||r_i|| ||z_i||``; the loss bounds ``||r_i||`` and the public ``row_bound``
    (``sqrt(data_norm**2 + intercept_scaling**2)``) bounds ``||z_i||``. Clipping at
    this norm changes no gradient, so the noise-free fixed point is the minimiser of the
    loss itself: no clipping bias (a clipping norm below it caps the largest residuals,
    those of the rows the model gets most wrong, and moves the intercept towards the
    majority class, which biases the predicted probabilities).

    Parameters
    ----------
    loss : object
        A loss on the scores, with ``residual_bound(width)``.
    width : int
        Number of score columns (1 for a binary model).
    row_bound : float
        Public bound on the norm of a design row, intercept column included.

    Returns
    -------
    bound : float
    """
    return float(loss.residual_bound(width) * row_bound)


AUTO_LEARNING_RATE = (0.026, 64.0)
"""``learning_rate="auto"``: the product ``c`` of the step size and the noise's standard
deviation, and the cap of ``c / s`` (chosen on validation splits of Adult, KDDCup99 and
MNIST at epsilon 0.1 to 5, Poisson and full-batch steps: see the defaults benchmark)."""


def auto_learning_rate(noise_std):
    """``min(cap, c / s)`` for the standard deviation ``s`` of the noise on one
    coordinate of the normalised gradient: each step's noise moves the iterate by a
    standard deviation of ``c`` (0.026) per coordinate, whatever the budget.

    ``s = noise_multiplier * W * max_grad_norm / (q * n_tilde)`` (``W`` the
    public bound on a row's weight, ``weight_bound_``)
    is public: the noise multiplier is calibrated from the public parameters and
    ``n_tilde`` is the fit's DP row count, so the rate is post-processing and every
    step stays a Gaussian mechanism with its fixed parameters. Noisier gradients take
    smaller steps; with little noise the rate is capped for stability.
    """
    c, cap = AUTO_LEARNING_RATE
    if noise_std <= 0:
        return cap
    return float(min(cap, c / noise_std))


def _learning_rates(learning_rate, schedule, n_steps):
    """Step sizes ``eta_t``, a public function of ``t`` only."""
    t = np.arange(n_steps)
    if schedule == "constant":
        return np.full(n_steps, float(learning_rate))
    if schedule == "step":                     # halved at mid-training (Yu et al. 2019)
        return np.where(t < n_steps // 2, learning_rate, 0.5 * learning_rate)
    if schedule == "linear":                   # linear decay to a tenth
        return learning_rate * (1.0 - 0.9 * t / max(n_steps - 1, 1))
    raise ValueError(f"Unknown learning_rate_schedule {schedule!r}.")


# Size of a dense design above which a step reads it by cache-sized blocks of rows: a
# design that fits in the last-level cache is read faster by two whole products
# (measured, 2-core machine with 32 MB of L3: 20000 x 100 whole 0.27 s against 0.45 s by
# blocks for 200 steps; 100000 x 100 by blocks 2.4 s against 3.4 s whole).
_STREAMED_BYTES = 2**25
# A per-example gradient norm above which its clip factor is recomputed without the
# product of the two norms (which may have overflowed).
_HUGE_GRADIENT_NORM = 1e300


def clipped_gradient_sum(X, Y, theta, loss, max_grad_norm, row_norms, with_factors=True,
                         weights=None, persons=None, person_bound=None, out=None):
    """Sum of per-example gradients clipped to ``max_grad_norm`` (each times its row's
    weight, when ``weights`` are given), and the clip factors (``None`` unless
    ``with_factors``; the weights are not in them).

    With ``out`` (of ``theta``'s shape), the sum is added into ``out``, which is
    returned in its place: no second array of ``theta``'s size.

    For a linear model the per-example gradient is the outer product
    ``r_i x_i^T`` with ``r_i = d loss_i / d scores_i``, so its Frobenius norm is
    ``||r_i|| ||x_i||``: no per-example gradient is ever materialised. A row's
    term has norm at most ``w_i max_grad_norm``: the weights must already be bounded
    (:func:`_bounded_weights`).

    With ``persons`` (each row's person, non-decreasing: a person's rows are
    consecutive) the clipped, weighted terms of each person's rows are summed and
    that sum is clipped to ``person_bound`` as a whole (:func:`_clip_person_sums`):
    a person's term in the total has norm at most ``person_bound``.
    """
    if is_sparse(X) or X.shape[0] * X.shape[1] * 8 <= _STREAMED_BYTES:
        total, factors = _clipped_block_sum(X, Y, theta, loss, max_grad_norm, row_norms,
                                            weights, persons, person_bound, out)
        return total, factors if with_factors else None
    # a dense design beyond the cache by blocks of rows that stay in cache between the
    # two products, so that X is read from memory once per step, not twice (with
    # persons, blocks of whole persons: cut at the first person boundary from each
    # nominal cut, so the blocks of single-row persons are the design's own)
    total = np.zeros(theta.shape)
    factors = np.empty(X.shape[0]) if with_factors else None
    design = as_design(X)
    if persons is None:
        blocks = design.blocks()
    else:
        cuts = _person_cuts(persons, _cache_rows(design.shape[1]))
        blocks = ((start, stop, design.subset(slice(start, stop)))
                  for start, stop in zip(cuts[:-1], cuts[1:]))
    for start, stop, block in blocks:
        block_sum, block_factors = _clipped_block_sum(
            block, Y[start:stop], theta, loss, max_grad_norm, row_norms[start:stop],
            None if weights is None else weights[start:stop],
            None if persons is None else persons[start:stop], person_bound)
        total += block_sum
        if with_factors:
            factors[start:stop] = block_factors
    if out is not None:
        out += total
    return (total if out is None else out), factors


def _clipped_block_sum(X, Y, theta, loss, max_grad_norm, row_norms, weights=None,
                       persons=None, person_bound=None, out=None):
    R, factors = _residuals_and_clip_factors(X, Y, theta, loss, max_grad_norm, row_norms)
    R *= (factors if weights is None else factors * weights)[:, None]
    if persons is not None:
        total = _clip_person_sums(X, R, persons, person_bound)
        if total is not None:   # the sum of the persons' clipped sums, already formed
            if out is not None:
                out += total
            return (total if out is None else out), factors
    if out is None:
        return np.asarray(X.T @ R).T, factors
    as_design(X).transpose_product(R, out=out.T)   # added in place: no joined copy
    return out, factors


def _residuals_and_clip_factors(X, Y, theta, loss, max_grad_norm, row_norms):
    """Each row's residual ``r_i`` (a new array, to be scaled in place) and the factor
    ``min(1, C / (||r_i|| ||x_i||))`` that clips its gradient ``r_i x_i^T``."""
    R = loss.residual(np.asarray(X @ theta.T), Y)
    if R.shape[1] == 1:   # sqrt(r_i^2) is |r_i| exactly unless r_i^2 underflows (factor 1)
        norms = np.abs(R[:, 0])
    else:
        norms = np.einsum("ik,ik->i", R, R)
        np.sqrt(norms, out=norms)
    norms *= row_norms
    factors = row_clip_factors(norms, max_grad_norm)
    if norms.max(initial=0.0) > _HUGE_GRADIENT_NORM:
        _rescaled_clip_factors(R, row_norms, max_grad_norm, norms, factors)
    return R, factors


def _person_cuts(persons, rows):
    """Boundaries of blocks of about ``rows`` rows that never split a person:
    ``persons`` (non-decreasing) gives each row's person, and a block ends at the
    first person start at or after each multiple of ``rows`` (a person longer than
    ``rows`` is one block). With one row per person the cuts are the multiples of
    ``rows``, the blocks of rows without persons.

    Returns
    -------
    cuts : ndarray of int
        ``0 = cuts[0] < ... < cuts[-1] = len(persons)`` (``[0, 0]`` when empty).
    """
    n = persons.shape[0]
    if n == 0:
        return np.zeros(2, dtype=np.intp)
    first = np.flatnonzero(np.r_[True, persons[1:] != persons[:-1]])   # person starts
    block = first // rows
    cuts = first[np.r_[True, block[1:] != block[:-1]]]
    return np.append(cuts, n)


_INT32_MAX = np.iinfo(np.int32).max


def _clip_person_sums(X, R, persons, bound):
    """Scale ``R`` in place so that each person's summed gradient has norm at most
    ``bound``, and return the sum of the clipped person sums.

    Row ``i``'s term is the outer product ``R_i z_i^T`` (``z_i`` row ``i`` of ``X``,
    ``R_i`` its residual already clipped and weighted), so person ``p``'s sum is
    ``G_p = sum_{i in p} R_i z_i^T``; its rows are multiplied by ``f_p = min(1, bound
    / ||G_p||_F)``. The sums are the rows of one sparse left product ``A Z`` with the
    block's design (:meth:`~skdp.solvers._design.ScaledDesign.left_product`), ``A`` the
    (classes x persons, rows) indicator carrying the weights ``R_ik``: segment sums, no
    loop over rows or persons, no copy of the rows (their clipping factors scale ``A``).
    Their norms are computed class by class, ``||G_p||_F^2 = sum_k ||sum_{i in p} R_ik
    z_i||^2``, those of the persons' explicit rows to rounding. A person
    with one row is left as it is (its term is already within ``bound``, the row bound
    times the weight bound). The block's clipped gradient sum is then ``sum_p f_p
    G_p``, formed from the product already at hand (no second pass over the rows,
    ``Z^T R``; the same sum to rounding).

    Parameters
    ----------
    X : ndarray, CSR matrix or ScaledDesign of shape (n, d)
        The block's rows.
    R : ndarray of shape (n, K)
        The clipped, weighted residuals; scaled in place.
    persons : ndarray of shape (n,)
        Each row's person, non-decreasing, all of a person's rows in the block.
    bound : float
        The bound on a person's summed gradient (the weight bound times the clipping
        norm).

    Returns
    -------
    total : ndarray of shape (K, d) or None
        ``sum_p f_p G_p``; ``None`` when every person has one row (nothing is clipped:
        ``Z^T R`` is the sum, and persons of one row each give the row-level sum
        exactly).
    """
    n, K = R.shape
    edges = _person_edges(persons, K)
    sizes = edges[1:] - edges[:-1]
    m = sizes.size
    if m >= n:                                 # one row each (or none): nothing to clip
        return None
    design = as_design(X)
    top, column = _person_left_product(design, R, edges)
    squares = design.product_row_squares(top, column).reshape(K, m)
    total = squares[0].copy()
    for k in range(1, K):                      # the classes in order: a loop over K
        total += squares[k]
    factors = row_clip_factors(np.sqrt(total, out=total), bound)
    factors[sizes == 1] = 1.0                  # a one-row person is left as it is
    if factors.min() < 1.0:
        R *= np.repeat(factors, sizes)[:, None]
    return _person_weighted_sum(top, column, factors, K)


def _person_edges(persons, K):
    """The ``indptr`` of a person indicator over the non-decreasing ``persons``: 0, the
    row where each later person starts, and ``n`` (``[0]`` without rows), in the index
    type scipy chooses for ``K`` classes of such indicators stacked."""
    n = persons.shape[0]
    index = np.int32 if K * n <= _INT32_MAX else np.int64   # scipy's own choice
    if n == 0:
        return np.zeros(1, dtype=index)
    changes = np.flatnonzero(persons[1:] != persons[:-1])   # last row of a person but one
    edges = np.empty(changes.size + 2, dtype=index)
    edges[0], edges[1:-1], edges[-1] = 0, changes + 1, n
    return edges


def _person_left_product(design, R, edges):
    """Every person's summed term of every class, ``sum_{i in p} R_ik z_i``: the rows
    ``k m + p`` of the one sparse left product ``A Z`` with the block's design
    (:meth:`~skdp.solvers._design.ScaledDesign.left_product`: segment sums, no loop
    over rows or persons, no copy of the rows), ``A`` the indicator of every class and
    person (person ``p``'s rows ``edges[p]:edges[p + 1]`` carrying ``R_ik`` in row order).
    Returns ``(top, column)``, as ``left_product``."""
    n, K = R.shape
    index = edges.dtype
    columns = np.arange(n, dtype=index)
    if K == 1:
        indptr = edges
    else:   # class k's persons start n k further on, its rows are the same
        indptr = np.append((edges[:-1] + n * np.arange(K, dtype=index)[:, None]).ravel(),
                           K * n)
        columns = np.tile(columns, K)
    A = sp.csr_matrix((R.T.ravel(), columns, indptr), shape=(K * (edges.size - 1), n))
    return design.left_product(A)


def _person_weighted_sum(top, column, factors, K):
    """``sum_p f_p G_p`` for each class: the rows ``k m + p`` of ``[top, column]``
    (:func:`_clip_person_sums`'s product) weighted by ``factors`` (``f_p``, shape
    ``(m,)``) and summed per class ``k``; shape ``(K, d)``."""
    m = factors.size
    if sp.issparse(top):
        selector = sp.csr_matrix((np.tile(factors, K), np.arange(K * m),
                                  np.arange(0, K * m + 1, m)), shape=(K, K * m))
        total = (selector @ top).toarray()
    else:
        total = (factors @ top.reshape(K, m, -1))
    if column is None:
        return total
    return np.hstack([total, (column.reshape(K, m) @ factors)[:, None]])


def _partition_clipped_sum(design, y, theta, loss, max_grad_norm):
    """One partition's clipped gradient sum (a kernel of
    :meth:`~skdp.solvers._partitioned.PartitionedDesign.reduce`): the rows are clipped
    and the intercept applied inside the partition, the per-example gradients clipped
    as in memory; only the ``(K, d)`` sum leaves it."""
    return _clipped_block_sum(design, _as_columns(y), theta, loss, max_grad_norm,
                              design.row_norms())[0]


def _as_columns(y):
    """A partition's targets as a matrix: +-1 of two classes as one column."""
    return y[:, None] if y.ndim == 1 else y


def _partition_sampled_clipped_sum(design, y, start, key, sample_rate, theta, loss,
                                   max_grad_norm):
    """One partition's clipped gradient sum over its rows in a Poisson sample (a
    kernel of :meth:`~skdp.solvers._partitioned.PartitionedDesign.reduce` with
    ``with_rows``): the partition's rows ``[start, start + rows)`` draw their own
    uniforms of the step's key (:func:`_poisson_rows`), so the sampled rows are those
    of the in-memory sample whatever the chunking. Returns the ``(K, d)`` sum and the
    partition's sample size (a one-element array, for the run's record only)."""
    idx = _poisson_rows(key, sample_rate, start, start + design.shape[0]) - start
    total = _clipped_block_sum(design.subset(idx), _as_columns(y)[idx], theta, loss,
                               max_grad_norm, design.row_norms()[idx])[0]
    return total, np.array([idx.size], dtype=np.int64)


def _sampled_person_rows(persons, key, sample_rate):
    """A partition's rows of the persons in a step's Poisson sample (every row when
    ``key`` is ``None``: a full batch), sorted by person, each person's rows in their
    order. A person is in the sample iff its uniform of the step's key, addressed by
    its code (:func:`_poisson_rows`), is: the in-memory sample of persons, whatever
    partitions its rows lie in."""
    order = np.argsort(persons, kind="stable")
    if key is None or persons.size == 0:
        return order
    low, high = int(persons[order[0]]), int(persons[order[-1]]) + 1
    sampled = np.zeros(high - low, dtype=bool)
    sampled[_poisson_rows(key, sample_rate, low, high) - low] = True
    return order[sampled[persons[order] - low]]


def _person_partial_sums(X, R, persons):
    """Each person's sum of its rows' terms ``R_i z_i^T`` (``persons`` non-decreasing):
    ``(codes, sums)``, one row of ``sums`` a person, its classes' ``(d,)`` sums side
    by side (dense, or CSR on a sparse design): the product of
    :func:`_person_left_product`, as in memory (:func:`_clip_person_sums`)."""
    edges = _person_edges(persons, R.shape[1])
    m = edges.size - 1
    design = as_design(X)
    top, column = _person_left_product(design, R, edges)
    parts = []
    for k in range(R.shape[1]):
        parts.append(top[k * m:(k + 1) * m])
        if column is not None:
            parts.append(column[k * m:(k + 1) * m, None])
    sums = (sp.hstack([sp.csr_matrix(p) for p in parts], format="csr") if design.sparse
            else np.hstack(parts))
    return persons[edges[:-1]], sums


def _partition_person_gradients(design, y, persons, key, sample_rate, theta, loss,
                                max_grad_norm):
    """One partition's clipped gradient sums by person (a kernel of
    :meth:`~skdp.solvers._partitioned.PartitionedDesign.reduce_by_person`), over its
    rows of the persons in a step's Poisson sample (:func:`_sampled_person_rows`; all
    of them when ``key`` is ``None``): each row's gradient clipped to
    ``max_grad_norm``, summed by person (:func:`_person_partial_sums`), by blocks of
    whole persons (:func:`_batch_blocks`). ``X`` is read in place."""
    idx = _sampled_person_rows(persons, key, sample_rate)
    codes, sums = [], []
    for Xb, Yb, norms_b, _, persons_b in _batch_blocks(design, _as_columns(y),
                                                       design.row_norms(), idx, None,
                                                       persons[idx]):
        R, factors = _residuals_and_clip_factors(Xb, Yb, theta, loss, max_grad_norm,
                                                 norms_b)
        R *= factors[:, None]
        block_codes, block_sums = _person_partial_sums(Xb, R, persons_b)
        codes.append(block_codes)
        sums.append(block_sums)
    stack = sp.vstack if design.sparse else np.vstack
    return np.concatenate(codes), (sums[0] if len(sums) == 1 else stack(sums))


def _clipped_person_total(sums, sizes, bound, n_classes):
    """The sum of whole persons' gradient sums (rows of ``sums``, classes side by
    side), each clipped to norm ``bound``; a one-row person is left as it is (its row
    is already within the bound), as in memory (:func:`_clip_person_sums`). Shape
    ``(n_classes, d)``."""
    if sp.issparse(sums):
        squares = segment_sums(np.square(sums.data), sums.indptr)
    else:
        squares = np.einsum("ij,ij->i", sums, sums)
    factors = row_clip_factors(np.sqrt(squares), bound)
    factors[sizes == 1] = 1.0
    return np.asarray(sums.T @ factors).reshape(n_classes, -1)


def _rescaled_clip_factors(R, row_norms, max_grad_norm, norms, factors):
    """Recompute, in place, the clip factors ``min(1, C / (||r_i|| ||x_i||))`` of the
    per-example gradients whose norm ``||r_i|| ||x_i||`` is huge (or overflowed),
    without forming that product: ``((C / ||x_i||) / m_i) / ||r_i / m_i||`` with
    ``m_i`` the largest entry of ``r_i``.

    The residuals of the supported losses are bounded (by 1 per column) and rows are
    clipped to at most :data:`~skdp.utils.validation.MAX_FINITE_ROW_NORM`, so this
    guards against a loss with unbounded residuals rather than a row.

    Parameters
    ----------
    R : ndarray of shape (n, K)
        The residuals ``r_i``.
    row_norms : ndarray of shape (n,)
        The (finite) row norms ``||x_i||``.
    max_grad_norm : float
        ``C``.
    norms : ndarray of shape (n,)
        The computed products ``||r_i|| ||x_i||``.
    factors : ndarray of shape (n,)
        The factors from ``norms``, corrected in place.
    """
    huge = np.flatnonzero(norms > _HUGE_GRADIENT_NORM)
    peak, ratio = scaled_row_norms(R[huge])
    with np.errstate(divide="ignore", invalid="ignore"):
        exact = ((max_grad_norm / row_norms[huge]) / peak) / ratio
    factors[huge] = np.minimum(exact, 1.0)


def clipped_gradient_tangent(X, Y, theta, tangent, loss, factors, weights=None):
    """Directional derivative of :func:`clipped_gradient_sum` along ``tangent``.

    With ``factors`` the clip factors at ``theta``: an unclipped row contributes
    ``dr_i x_i^T``; a clipped row is ``C r_i / (||r_i|| ||x_i||)``, whose
    derivative keeps only the part of ``dr_i`` orthogonal to ``r_i``, scaled by
    its factor (a clipped binary row, ``r_i`` a scalar, contributes nothing);
    each row's term is then scaled by its (constant) weight.
    """
    S = np.asarray(X @ theta.T)
    R = loss.residual(S, Y)
    dR = loss.residual_tangent(S, Y, np.asarray(X @ tangent.T))
    clipped = factors < 1.0
    Rc, dRc = R[clipped], dR[clipped]
    radial = np.einsum("ik,ik->i", Rc, dRc) / np.einsum("ik,ik->i", Rc, Rc)
    dR[clipped] = dRc - Rc * radial[:, None]
    scale = factors if weights is None else factors * weights
    return np.asarray(X.T @ (dR * scale[:, None])).T


# Values of a block of a batch's rows (1 MiB of dense rows; 4 MiB of sparse ones or
# with persons, where a block costs more calls: scipy's gather and products, the
# person clip): each block costs a few dozen calls, so that 256 KiB dense blocks (300
# rows of Adult) made a step of a tenth of Adult's rows 1.2x slower, and a step with
# persons 1.5x (measured, CPU time: 256 KiB, 1 MiB, 4 MiB gave 0.35, 0.29, 0.28 s a fit
# by rows and 0.80, 0.52, 0.45 s by persons; 4 MiB against 1 MiB, interleaved: 0.81x
# CPU with persons, 0.96x by rows on Adult and on the RCV1-shaped CSR, a step's batch
# one block there); larger blocks hold more rows' temporaries (a tall dense design's
# peak memory: by rows, 4 MiB blocks would be 1.3 vectors of n more on 400,000 x 12;
# on the RCV1-shaped CSR a 4 MiB block, the whole batch, is 3 MB gathered, and 1 MiB
# blocks, half that, cost 0.09-0.12 more of the fit-time ratio to SGDClassifier,
# interleaved under load)
_BATCH_BLOCK_BYTES = _CACHE_BYTES
_LARGE_BLOCK_BYTES = 4 * _CACHE_BYTES


def _batch_blocks(X, Y, row_norms, idx, weights=None, persons=None, buffers=None):
    """The rows ``idx`` of the design with their targets, norms, weights (``None``
    when the rows are unweighted) and persons (``None`` without persons), by blocks
    of rows:
    a Poisson batch (a tenth of the rows by default) is never copied whole. A block
    holds about :data:`_BATCH_BLOCK_BYTES` of dense values, :data:`_LARGE_BLOCK_BYTES`
    of sparse ones. With ``persons`` (the person of each row of ``idx``,
    non-decreasing) a block holds whole persons (:func:`_person_cuts`), about
    :data:`_LARGE_BLOCK_BYTES`. With ``buffers`` (a
    :class:`~skdp.solvers._design.RowBuffers`) a sparse block's rows are gathered
    into them, each block valid until the next one is asked for."""
    design = as_design(X)
    if design.sparse:
        rows = _sparse_block_rows(design.X, _LARGE_BLOCK_BYTES)
    else:
        rows = _cache_rows(design.shape[1], _BATCH_BLOCK_BYTES if persons is None
                           else _LARGE_BLOCK_BYTES)
    if persons is None and idx.size <= rows:   # one block (a small batch): no cuts
        yield (design.subset(idx, buffers), np.take(Y, idx, axis=0),
               np.take(row_norms, idx), None if weights is None else np.take(weights, idx), None)
        return
    if persons is None:
        cuts = np.append(np.arange(0, idx.size, rows), idx.size)
    else:
        cuts = _person_cuts(persons, rows)
    for start, stop in zip(cuts[:-1], cuts[1:]):
        chunk = idx[start:stop]
        yield (design.subset(chunk, buffers), np.take(Y, chunk, axis=0),
               np.take(row_norms, chunk),
               None if weights is None else np.take(weights, chunk),
               None if persons is None else persons[start:stop])


@dataclass
class _Persons:
    """The persons of a design whose rows are sorted by person (:func:`_by_person`).

    ``codes`` gives each row's person (non-decreasing, ``0 .. n_persons - 1``) and
    ``starts`` the first row of each person (``starts[-1] = n``). Private: the
    number of persons enters the fit only through the DP count, the persons' sizes
    only through the clipping of their summed gradients.
    """

    codes: np.ndarray
    starts: np.ndarray

    @property
    def n_persons(self):
        return self.starts.size - 1

    def rows(self, chosen):
        """The rows of the persons ``chosen`` (increasing), in order, and each one's
        person: a segment gather (``np.repeat``), no loop over persons."""
        sizes = self.starts[chosen + 1] - self.starts[chosen]
        offsets = np.cumsum(sizes) - sizes                 # each person's first position
        idx = np.arange(sizes.sum(), dtype=np.intp)
        idx += np.repeat(self.starts[chosen] - offsets, sizes)
        return idx, self.codes[idx]


def _by_person(X, Y, row_norms, weights, groups):
    """The design, targets, norms and weights with the rows sorted by person (no copy
    when they already are: one row per person in row order included), and their
    :class:`_Persons`. ``groups``: integer codes ``0 .. n_persons - 1``
    (:func:`~skdp.utils._groups.check_groups`)."""
    codes = np.asarray(groups, dtype=np.intp)
    if np.any(codes[1:] < codes[:-1]):
        order = np.argsort(codes, kind="stable")
        X = as_design(X).subset(order)
        Y, row_norms, codes = Y[order], row_norms[order], codes[order]
        weights = None if weights is None else weights[order]
    starts = np.searchsorted(codes, np.arange(codes[-1] + 2 if codes.size else 1))
    return X, Y, row_norms, weights, _Persons(codes, starts)


def _bounded_weights(sample_weight, weight_bound):
    """Row weights clipped into ``[0, weight_bound]`` (``None``: every row weighs 1,
    within any bound). The clipping is per row, so it costs no privacy; it is what
    bounds a row's weighted clipped gradient by ``weight_bound * max_grad_norm``, the
    sensitivity the noise is scaled to."""
    if sample_weight is None:
        return None
    return np.clip(np.asarray(sample_weight, dtype=np.float64), 0.0, weight_bound)


def _same_labels(given, reference):
    given = np.unique(np.asarray(given))
    return given.shape == reference.shape and bool(np.all(given == reference))


def _call_streams(random_state, call):
    """The count, sampling and noise streams of the ``call``-th mechanism of a run.

    Keyed from children ``3 call`` to ``3 call + 2`` of the seed of the run's noise
    stream (:func:`~skdp.utils._random.noise_generator`): for ``call = 0`` the seeds of
    ``spawn(3)``, and each later ``partial_fit`` or warm-started ``fit`` of a run seeded
    with one integer draws noise of its own, independent of the earlier calls', as
    their composition assumes (``None`` keys every call afresh anyway). The count and
    sampling streams are ChaCha20, as ``spawn(3)`` gives them; the steps' noise
    stream, which draws the coefficients' size at every step (most of a sparse wide
    fit's random numbers), is AES-128 in counter mode
    (:func:`~skdp.utils._random._aes_counter`), as secure and faster.
    """
    root = noise_generator(random_state).bit_generator.seed_seq
    count, sampling, noise = (
        np.random.SeedSequence(root.entropy, pool_size=root.pool_size,
                               spawn_key=root.spawn_key + (3 * call + i,))
        for i in range(3))
    return [_chacha(count), _chacha(sampling), _aes_counter(noise)]


@dataclass
class DPSGDRun:
    """Output of :func:`_dp_sgd`."""

    theta: np.ndarray
    n_steps: int
    batch_sizes: np.ndarray = field(repr=False)
    theta_tangent: np.ndarray = field(default=None, repr=False)


def _dp_sgd(X, Y, loss, *, noise_multiplier, max_grad_norm, sample_rate, n_steps,
            normaliser, learning_rate, schedule, alpha, average, sampling_rng, noise_rng,
            momentum=0.0, row_norms=None, tangent=False, verbose=0, sample_weight=None,
            weight_bound=1.0, initial_theta=None, groups=None):
    """Noisy clipped gradient descent on ``mean_i w_i loss_i + alpha/2 ||theta||^2``.

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (n, d)
        Design (rows clipped, intercept column appended).
    Y : ndarray of shape (n, K)
        Targets: +-1 columns for margin losses, one-hot for softmax.
    loss : object
        With ``residual(S, Y)`` (derivative of each example's loss in its scores).
    noise_multiplier : float
        ``z``: noise ``N(0, (z C)^2 I)`` is added to the sum of clipped gradients.
    max_grad_norm : float
        Clipping norm ``C`` of each per-example gradient (Frobenius norm).
    sample_rate : float
        Poisson sampling probability ``q``; ``1`` is full-batch DP-GD.
    n_steps : int
    normaliser : float
        Public or differentially private divisor of the noisy clipped sum (the
        estimator passes ``q`` times its DP row count); never the private ``n``.
    learning_rate : float
    schedule : {"constant", "step", "linear"}
    alpha : float
        Public L2 penalty, applied outside the clipped sum.
    average : float in [0, 1]
        Fraction of the final iterates averaged (``0``: last iterate).
    sampling_rng, noise_rng : numpy.random.Generator
        Separate streams for the Poisson masks and for the Gaussian noise: the
        same generators replay the same masks and the same standard normals
        whatever ``noise_multiplier`` is (common random numbers).
    momentum : float in [0, 1), default=0.0
        Heavy-ball momentum on the noisy gradients (post-processing).
    row_norms : ndarray of shape (n,), optional
        ``||x_i||``, computed when not given.
    tangent : bool, default=False
        Also propagate ``d theta / d z`` through every step (forward mode, the
        masks and standard normals held fixed): ``run.theta_tangent``.
    verbose : int
        Print progress once per epoch (step, ``||theta||``, elapsed time:
        post-processing of the private iterates only).
    sample_weight : ndarray of shape (n,), optional
        Row weights ``w_i``, clipped here into ``[0, weight_bound]``; each
        row's clipped gradient is multiplied by its weight. ``None``: weight 1.
    weight_bound : float, default=1.0
        ``W``: a row's weighted clipped gradient has norm at most ``W C``, and the
        noise on the sum is ``N(0, (z W C)^2 I)``, so every step is the same
        Gaussian mechanism of multiplier ``z`` as without weights.
    initial_theta : ndarray of shape (K, d), optional
        The first iterate (a previous release: warm start); zeros when not given.
    groups : ndarray of shape (n,), optional
        Each row's person as integer codes ``0 .. P - 1``
        (:func:`~skdp.utils._groups.check_groups`). Given, the persons are the
        units: each step samples persons (each with probability ``q``, all of their
        rows with them), and the clipped, weighted terms of a person's rows are summed
        and that sum clipped to ``W C`` (:func:`_clip_person_sums`), so a person
        moves a noisy sum by at most the sensitivity ``W C``. In memory only, and
        not with ``tangent``. ``batch_sizes`` then counts persons.

    Returns
    -------
    run : DPSGDRun
    """
    n, d = X.shape
    # a design partitioned by rows: each step's clipped sum is reduced over its
    # partitions (a Poisson step's key is drawn here, each partition draws its rows'
    # part of the mask from it), everything else (the noise first) as in memory
    partitioned = getattr(X, "partitioned", False)
    K = X.target_width if partitioned else Y.shape[1]
    if row_norms is None and not partitioned:
        row_norms = _row_norms(X)
    weights = _bounded_weights(sample_weight, weight_bound)
    if partitioned and weights is not None:
        raise ValueError("Row weights need the rows in memory.")
    persons = None
    if groups is not None:
        if partitioned or tangent:
            raise ValueError("Persons (groups) need the rows in memory and no derivative.")
        X, Y, row_norms, weights, persons = _by_person(X, Y, row_norms, weights, groups)
    # a design with persons: each person's summed gradient reduced by person and clipped
    partitioned_persons = partitioned and X.n_persons is not None
    sensitivity = max_grad_norm * weight_bound
    noise_scale = noise_multiplier * sensitivity
    etas = _learning_rates(learning_rate, schedule, n_steps)
    n_avg = max(1, int(math.ceil(average * n_steps))) if average > 0 else 1
    first_avg = n_steps - n_avg
    theta = (np.zeros((K, d)) if initial_theta is None
             else np.array(initial_theta, dtype=np.float64).reshape(K, d))
    theta_sum = np.zeros((K, d))   # of the averaged iterates, divided once at the end
    # the momentum's velocity times the normaliser: each step adds its noisy clipped sum
    # as it is, and the step size carries the division
    velocity = np.zeros((K, d))
    if tangent:  # d/dz of theta, its sum and the velocity (forward mode)
        theta_dot, theta_sum_dot, velocity_dot = (np.zeros((K, d)) for _ in range(3))
    full_batch = sample_rate == 1.0
    key = None   # a partitioned Poisson step's sampling key, drawn at each step
    # in memory, the steps' Poisson samples of rows or persons, drawn several steps at a
    # time: the samples and the stream's state of one draw a step
    samples = (None if full_batch or partitioned else _poisson_step_samples(
        n if persons is None else persons.n_persons, sample_rate, sampling_rng, n_steps))
    # the sparse batches' rows, gathered into the same two arrays at every step
    buffers = RowBuffers()
    batch_sizes = np.empty(n_steps, dtype=np.int64)
    steps_per_epoch = max(1, int(round(1.0 / sample_rate)))
    start = time.perf_counter()
    # the products are matrix-vector shaped and memory bound: BLAS threads only add
    # contention (10-40x slower on a loaded 2-core machine), so use one
    with threadpool_limits(limits=1, user_api="blas"):
        for t in range(n_steps):
            if full_batch:
                batch_sizes[t] = n if persons is None else persons.n_persons
                blocks = [(X, Y, row_norms, weights, None if persons is None
                           else persons.codes)]
            elif partitioned:   # each partition draws its own rows' part of the mask
                key = _poisson_key(sampling_rng)
                blocks = [(X, Y, row_norms, None, None)]
            elif persons is not None:   # persons sampled, each with all of their rows
                chosen = next(samples)
                batch_sizes[t] = chosen.size
                idx, codes = persons.rows(chosen)
                blocks = _batch_blocks(X, Y, row_norms, idx, weights, codes, buffers)
            else:
                idx = next(samples)
                batch_sizes[t] = idx.size
                blocks = _batch_blocks(X, Y, row_norms, idx, weights, buffers=buffers)
            velocity *= momentum
            clipped_dot = np.zeros((K, d)) if tangent else None
            Xb = None   # the last step's gathered rows, released before this step gathers
            for Xb, Yb, norms_b, weights_b, persons_b in blocks:
                if partitioned_persons:
                    block_sum, batch_sizes[t] = _partitioned_person_step(
                        X, key, sample_rate, theta, loss, max_grad_norm, sensitivity)
                    velocity += block_sum
                    continue
                if partitioned and full_batch:
                    velocity += X.reduce(_partition_clipped_sum, theta, loss, max_grad_norm)
                    continue
                if partitioned:
                    block_sum, size = X.reduce(_partition_sampled_clipped_sum, key,
                                               sample_rate, theta, loss, max_grad_norm,
                                               with_rows=True)
                    velocity += block_sum
                    batch_sizes[t] = size[0]
                    continue
                _, factors = clipped_gradient_sum(Xb, Yb, theta, loss, max_grad_norm, norms_b,
                                                  with_factors=tangent, weights=weights_b,
                                                  persons=persons_b, person_bound=sensitivity,
                                                  out=velocity)
                if tangent:
                    clipped_dot += clipped_gradient_tangent(Xb, Yb, theta, theta_dot, loss,
                                                            factors, weights_b)
            # the clipped sums are added into the velocity, and then the noise, drawn
            # once their products' vector is freed and freed before the next step's: a
            # step holds one vector of theta's size beside theta, its sum and the
            # velocity (d is n on a square sparse X); the stream is the noise's own, so
            # the draws do not depend on the order
            noise = noise_rng.standard_normal((K, d))   # drawn even when z = 0
            _add_scaled(velocity, noise_scale, noise)
            if tangent:
                gradient_dot = ((clipped_dot + sensitivity * noise) / normaliser
                                + alpha * theta_dot)
                velocity_dot = momentum * velocity_dot + gradient_dot
                theta_dot = theta_dot - etas[t] * velocity_dot
            del noise
            if alpha:
                _add_scaled(velocity, alpha * normaliser, theta)
            _add_scaled(theta, -etas[t] / normaliser, velocity)
            if t >= first_avg:
                theta_sum += theta
                if tangent:
                    theta_sum_dot += theta_dot
            if verbose and ((t + 1) % steps_per_epoch == 0 or t + 1 == n_steps):
                print(f"[DPSGDClassifier] epoch {(t + 1) * sample_rate:.4g}: step {t + 1}/"
                      f"{n_steps}, ||theta|| = {np.linalg.norm(theta):.4g}, "
                      f"{time.perf_counter() - start:.3f} s")
    theta_sum /= n_avg
    if tangent:
        theta_sum_dot /= n_avg
    return DPSGDRun(theta_sum, n_steps, batch_sizes, theta_sum_dot if tangent else None)


def _add_scaled(y, a, x):
    """``y += a x`` in place for C-contiguous float64 arrays of one shape: BLAS's
    ``axpy``, one pass and no temporary ``a x``."""
    _AXPY(x.reshape(-1), y.reshape(-1), a=a)


def _partitioned_person_step(design, key, sample_rate, theta, loss, max_grad_norm,
                             person_bound):
    """One step's clipped sum over the persons of a design with persons (a person's
    rows in any partitions; every person when ``key`` is ``None``), and its number of
    persons: each person's summed gradient clipped to ``person_bound``, reduced by
    person on the workers."""
    return design.reduce_by_person(
        _partition_person_gradients,
        partial(_clipped_person_total, bound=person_bound,
                          n_classes=theta.shape[0]),
        key, sample_rate, theta, loss, max_grad_norm)


def _dp_gd_checkpoints(X, Y, loss, *, noise_multiplier, max_grad_norm, normaliser,
                       learning_rate, alpha, average, momentum, noise_rng, row_norms=None,
                       sample_weight=None, weight_bound=1.0):
    """Full-batch DP-GD continued from checkpoint to checkpoint (a generator).

    Primed with ``next``; then ``send(T)`` runs the steps up to step ``T`` (at least
    the last one sent) and returns the release at ``T``: the average of the last
    ``ceil(average T)`` iterates (the last iterate when ``average = 0``). Every step
    is the one :func:`_dp_sgd` takes at ``sample_rate = 1`` with a constant schedule
    and the same noise stream, so the release at ``T`` is the model of a run of ``T``
    steps; the releases up to ``T`` are functions of its iterates, and together they
    cost what the ``T`` steps cost (Gaussian DP composition of the steps). Row weights
    and ``weight_bound`` are those of :func:`_dp_sgd`.
    """
    partitioned = getattr(X, "partitioned", False)
    K, d = (X.target_width if partitioned else Y.shape[1]), X.shape[1]
    if row_norms is None and not partitioned:
        row_norms = _row_norms(X)
    weights = _bounded_weights(sample_weight, weight_bound)
    if partitioned and weights is not None:
        raise ValueError("Row weights need the rows in memory.")
    noise_scale = noise_multiplier * max_grad_norm * weight_bound
    theta, velocity = np.zeros((K, d)), np.zeros((K, d))
    prefix_sums = [np.zeros((K, d))]   # of the iterates, for the averages
    target = yield None
    while True:
        with threadpool_limits(limits=1, user_api="blas"):
            while len(prefix_sums) <= target:
                gradient = noise_rng.standard_normal((K, d))
                gradient *= noise_scale
                if partitioned:
                    gradient += X.reduce(_partition_clipped_sum, theta, loss, max_grad_norm)
                else:
                    gradient += clipped_gradient_sum(X, Y, theta, loss, max_grad_norm,
                                                     row_norms, with_factors=False,
                                                     weights=weights)[0]
                gradient /= normaliser
                if alpha:
                    gradient += alpha * theta
                velocity *= momentum
                velocity += gradient
                theta -= learning_rate * velocity
                prefix_sums.append(prefix_sums[-1] + theta)
        n_steps = len(prefix_sums) - 1
        n_avg = max(1, int(math.ceil(average * n_steps))) if average > 0 else 1
        target = yield (prefix_sums[n_steps] - prefix_sums[n_steps - n_avg]) / n_avg


class DPGDCheckpoints:
    """Releases of one full-batch DP-GD run at increasing epsilons (checkpoints).

    The run has one noise multiplier ``z`` and one row count of noise ``s``: those of
    the estimator's own fit at the first release's epsilon, which is that fit (its
    ``epochs`` steps). ``release(e)`` continues the run to the most steps ``T`` whose
    Gaussian-DP ``mu = sqrt(T / z^2 + 1 / s^2)`` is within ``gdp_mu(e, delta)``
    (:func:`~skdp.accounting._dpsgd.dpgd_steps_within`) and releases the model at
    ``T``. Every release up to it is a function of the run's first ``T`` iterates, so
    the sequence stopped at ``e_k`` costs ``mu_k``-GDP, the last release's, as under
    noise reduction (accounted by
    :class:`~skdp.accounting._odometers.GaussianDPOdometer`). Transient:
    it holds the clipped private design and must never be stored or released; the
    models it returns hold neither. (Checkpoints of Poisson-sampled runs, accounted by
    Renyi filters, were measured no better than fresh rungs on Adult and are not
    offered.)

    The run has no intercept start or correction (``intercept_correction`` is not
    applied: each release would need its own correction), so the count keeps the whole
    Gaussian of ``s``.

    Parameters
    ----------
    estimator : DPSGDClassifier
        Unfitted, with ``sample_rate=1``, a constant schedule and
        ``noise_multiplier=None``; its ``epsilon`` is the first release's.
    X, y : array-like
        The training rows and labels.
    """

    def __init__(self, estimator, X, y):
        self._template = copy.copy(estimator)
        template = self._template
        template._check_params()
        _, self._first_steps = template._schedule()
        count_noise = template._count_noise()
        z, _ = template._privacy_spend(1.0, self._first_steps, count_noise)
        design, Y, loss, weights = template._prepare(X, y, classes=template.classes)
        normaliser, _, noise_rng, _ = template._draws(design, count_noise, 1.0)
        template.learning_rate_ = template._step_size(z, normaliser)
        self.noise_multiplier, self.count_noise_std = float(z), float(count_noise)
        self.epsilon = float(template.epsilon)
        self._run = _dp_gd_checkpoints(
            design, Y, loss, noise_multiplier=z, max_grad_norm=template.max_grad_norm_,
            normaliser=normaliser, learning_rate=template.learning_rate_,
            alpha=float(template.alpha), average=float(template.average),
            momentum=float(template.momentum), noise_rng=noise_rng, sample_weight=weights,
            weight_bound=template.weight_bound_)
        next(self._run)
        self.n_steps = 0

    def steps_within(self, epsilon):
        """Steps of the release at ``epsilon``: the estimator's own for the first one,
        then the most certified within ``epsilon`` (at least the steps already run)."""
        from ..accounting._dpsgd import dpgd_steps_within

        if self.n_steps == 0:
            return self._first_steps
        return dpgd_steps_within(epsilon, self.noise_multiplier, self._template.delta,
                                 self.count_noise_std, at_least=self.n_steps)

    def release(self, epsilon):
        """The fitted model at the checkpoint of ``epsilon`` (at least the last one).

        Parameters
        ----------
        epsilon : float
            The release's budget.

        Returns
        -------
        model : DPSGDClassifier
            Fitted; ``epsilon`` is the budget asked, ``epsilon_spent_`` what the run
            up to this checkpoint certifies (at most it).
        """
        if float(epsilon) < self.epsilon:
            raise ValueError(f"A run only continues to larger epsilons: {epsilon} < "
                             f"{self.epsilon}.")
        steps = self.steps_within(epsilon)
        theta = self._run.send(steps)
        self.n_steps, self.epsilon = steps, float(epsilon)
        model = copy.copy(self._template)
        model.epsilon = float(epsilon)
        # the steps are certified within epsilon: it bounds the conversion, which may
        # exceed it by rounding alone
        spent = min(float(epsilon), dpsgd_epsilon(self.noise_multiplier, 1.0, steps,
                                                  model.delta, accountant="pld",
                                                  count_noise_std=self.count_noise_std))
        model._set_fitted([_Checkpoint(theta, self.noise_multiplier, spent, steps,
                                       self.count_noise_std)])
        return model


def _run_noise_floor(noise_multiplier, sample_rate, n_steps, dim):
    """The units whose expected pull over a run its summed step noise outweighs.

    The steps' noise adds up to ``N(0, T (z W C)^2 I)`` in ``dim`` coordinates; a unit
    adds at most ``W C`` to a step it is sampled in, ``q T`` steps in expectation, and
    the steps' updates filter the data's sums and the noise alike. So the data's
    whole pull is shorter than the noise's, with probability 0.99, on fewer units than
    :func:`~skdp.mechanisms._dominance.noise_floor` of that Gaussian over ``q T``.
    """
    return noise_floor("gaussian", dim, noise_multiplier * math.sqrt(n_steps),
                       sample_rate * n_steps)


@dataclass
class _Checkpoint:
    """What ``DPSGDClassifier._set_fitted`` reads of a run stopped at a checkpoint."""

    theta: np.ndarray
    noise_multiplier: float
    epsilon: float
    n_steps: int
    count_noise_std: float
    sample_rate: float = 1.0
    accountant: str = "pld"
    previous_events: tuple = ()
    neighboring: str = "add_remove"
    one_step: tuple = None   # checkpoints are not offered with inference=True


def _intercept_sums(design, Y, theta, settings):
    """The intercept correction's sums ``(G, H)`` at ``theta``
    (:func:`~skdp.linear_model._dpsgd_intercept.intercept_statistics`): over the rows
    or the persons, in memory or reduced over the partitions, with the fit's weights
    and weight bound (``settings`` of :func:`_dp_sgd`)."""
    bound = settings["weight_bound"]
    if getattr(design, "partitioned", False):
        if design.n_persons is not None:
            return design.reduce_by_person(partition_person_pairs,
                                           partial(clipped_pairs_total, bound=bound),
                                           theta)[0]
        return design.reduce(partition_intercept_statistics, theta, bound)
    return intercept_statistics(design, Y[:, 0], theta,
                                _bounded_weights(settings["sample_weight"], bound),
                                settings["groups"], bound)


@dataclass
class DPSGDSolution:
    """One DP-SGD fit with what pathwise derivatives need.

    Transient: returned by ``DPSGDClassifier._releases``, never stored on a fitted
    estimator (it holds the clipped private design and the generators of the
    masks and the noise). :meth:`rerun` replays the same masks and standard
    normals with another noise multiplier (common random numbers);
    ``theta_tangent`` is ``d theta / d z`` when the fit propagated it, and
    ``dz_depsilon`` the accountant's ``dz / d epsilon``.
    """

    converged = True  # a fixed number of steps: nothing to certify

    theta: np.ndarray
    noise_multiplier: float
    epsilon: float
    sample_rate: float
    n_steps: int
    count_noise_std: float
    X: np.ndarray
    Y: np.ndarray
    loss: object
    settings: dict
    sampling_state: np.random.Generator
    noise_state: np.random.Generator
    theta_tangent: np.ndarray = None
    dz_depsilon: float = None
    accountant: str = "rdp"
    previous_events: tuple = ()   # the runs this one continues (public DPSGDEvents)
    neighboring: str = "add_remove"   # "add_remove_person" with groups
    correction: InterceptCorrection = None   # its noise replayed by rerun
    one_step: tuple = None   # inference=True: (theta_s, g~, H~, their calibration)

    def theta_derivative(self):
        """``d theta / d epsilon = d theta / dz * dz / d epsilon``, draws held fixed."""
        return self.theta_tangent * self.dz_depsilon

    def rerun(self, noise_multiplier):
        """Final ``theta`` trained with the same random draws and another ``z``."""
        run = _dp_sgd(self.X, self.Y, self.loss, noise_multiplier=noise_multiplier,
                      sample_rate=self.sample_rate, n_steps=self.n_steps,
                      sampling_rng=copy.deepcopy(self.sampling_state),
                      noise_rng=copy.deepcopy(self.noise_state), **self.settings)
        if self.correction is None:
            return run.theta
        return self.correction.apply(run.theta, _intercept_sums(self.X, self.Y, run.theta,
                                                                self.settings))


@fill_doc
class DPSGDClassifier(InferenceMixin, _LinearClassifierMixin, ClassifierMixin,
                      PrivateLinearModel):
    """Differentially private linear classifier trained by DP-SGD or full-batch DP-GD.

    Gradient perturbation (Abadi et al. 2016, in the Poisson-sampled form of
    Opacus): at every step each row enters the batch independently with the
    public probability ``q = sample_rate``, every per-example gradient is
    clipped to ``max_grad_norm`` (and multiplied by its row's weight, at most
    ``W = weight_bound_``), Gaussian noise of standard deviation
    ``noise_multiplier * W * max_grad_norm`` is added to their
    sum, and the sum is
    divided by ``q`` times a differentially private count of the rows (the
    number of rows is private under add/remove: it is never used directly).
    The noise multiplier is calibrated to ``(epsilon, delta)`` for the count
    and the steps together (Renyi DP by default, Google's ``dp-accounting``
    PLD on request). ``sample_rate=1`` is full-batch DP-GD, accounted exactly
    through Gaussian differential privacy.

    Binary problems fit a logistic (or Huber / hinge) model. With more than two
    classes ``loss="logistic"`` fits the multinomial (softmax) model natively
    and the other losses fit the one-vs-rest problems jointly; either way one
    clipped per-example gradient covers all classes, so no budget is split.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy budget, in (0, inf]. The noise multiplier is the smallest one
        whose certified epsilon is at most ``epsilon`` (within 0.1 %%), and under
        Poisson sampling at least 0.2 (a budget in the hundreds: the spend is
        then below ``epsilon``).
        ``np.inf`` adds no noise: a non-private baseline and test oracle. When
        ``noise_multiplier`` is given, ``epsilon`` is a cap: the fit refuses if
        the certified epsilon exceeds it.

    delta : float, default=1e-5
        Probability with which the epsilon bound may fail, in (0, 1). DP-SGD
        needs ``delta > 0``; choose it well below ``1 / n`` for a public upper
        bound ``n`` on the number of rows. A :class:`~skdp.LargeDeltaWarning` is
        raised when ``delta`` is above 1e-3 (read from ``delta`` alone, as for
        every estimator), or above ``1 / n_tilde`` with ``n_tilde`` the fit's
        differentially private row count: the count is part of the released
        guarantee, so a warning computed from it reveals nothing more.

    noise_multiplier : float or None, default=None
        Ratio of the noise standard deviation to ``max_grad_norm``. ``None``
        calibrates it from ``epsilon``, ``delta``, the sampling rate and the
        number of steps; a given value is accounted and reported in
        ``epsilon_spent_``.

    max_grad_norm : float or "auto", default=0.5
        Clipping norm ``C`` of each per-example gradient (Frobenius norm over
        all classes). It is the sensitivity of the noisy sum (times
        ``weight_bound_`` when rows are weighted). ``"auto"`` is the largest
        norm a per-example gradient can have, ``sqrt(data_norm**2 +
        intercept_scaling**2)`` times the loss's bound on a row's residuals (1
        for a binary model, ``sqrt(2)`` for the softmax, ``sqrt(n_classes)``
        for one-vs-rest columns): no row's gradient is clipped, so the
        noise-free fixed point is the minimiser of the loss itself. A smaller
        norm clips: less noise, but clipping caps the largest residuals, those
        of the rows the model gets most wrong (mostly the minority class), and
        moves the intercept towards the majority class, which the intercept
        correction (``intercept_correction``) then moves back. ``"auto"``'s
        larger noise cost 5.5 points of accuracy on wide sparse rows
        (``examples/text_like_sparse.py``) and about 2 on MNIST at epsilon 1,
        so the default is 0.5. With persons (``groups``) a person's summed
        gradient is still clipped to it. The value used is
        ``max_grad_norm_``.

    max_sample_weight : float, default=1.0
        Public bound on ``sample_weight``: each weight is clipped into ``[0,
        max_sample_weight]``. A row's weight is that times its class's
        ``class_weight``, at most ``W = weight_bound_`` (``max_sample_weight``
        when ``sample_weight`` is given, else 1, times the largest class
        weight), so a row's weighted clipped gradient has norm at most ``W *
        max_grad_norm`` and the noise on each sum has standard deviation
        ``noise_multiplier * W * max_grad_norm``: the accounting in
        ``noise_multiplier`` is unchanged. The same rule as the other
        estimators' (:ref:`sample-weights`).

    sample_rate : float, default=0.1
        Public Poisson sampling probability ``q`` in (0, 1]: each row enters
        each batch independently with probability ``q``, so the expected batch
        is ``q * n_samples`` rows. ``1`` is full-batch DP-GD, whose steps are
        exactly Gaussian-DP (what private selection of epsilon,
        :class:`~skdp.EpsilonForUtility` with ``delta > 0``, needs). It is a public
        parameter, never derived from the number of rows (which is private):
        for a batch of about ``B`` rows on data of about ``N`` rows, pass
        ``B / N`` with ``N`` a public figure. A batch size derived from a DP
        count would make the composition adaptive, which the accountant here
        does not cover, so it is not offered.

    epochs : float, default=10
        Number of passes: the number of steps is ``ceil(epochs /
        sample_rate)``, fixed before the noise is calibrated. Full-batch
        steps need more passes (200 or so) for the same accuracy.

    count_noise_std : float or None, default=None
        Standard deviation ``s`` of the Gaussian noise on the row count
        ``n + N(0, s^2)`` released at the start of the fit (sensitivity 1) and
        used only to normalise the noisy gradient sums. ``None`` sets
        ``s = 10 / mu`` with ``mu`` the Gaussian-DP parameter of the target
        ``(epsilon, delta)``, so that the count takes 1 %% of the budget
        (``s`` is about 37 at epsilon 1 and 310 at epsilon 0.1, delta 1e-5).
        The count is composed with the steps in the accountant. With the
        intercept correction (``intercept_correction``), the count, the
        intercept's start and its correction share this Gaussian: each has
        noise ``sqrt(3) s`` (times the weight bound for the correction, whose
        sensitivity it is), and three Gaussian mechanisms of standard deviation
        ``sqrt(3) s`` and sensitivity 1 compose exactly to one of ``s``, the
        one the accountant composes with the steps (the spend is the same with
        or without the correction).

    learning_rate : float or "auto", default="auto"
        Step size on the normalised gradient (the noisy sum divided by ``q``
        times the DP row count). ``"auto"`` is ``min(64, 0.026 / s)`` with
        ``s = noise_multiplier * weight_bound_ * max_grad_norm / (q *
        n_tilde)`` the standard deviation of the noise on one coordinate of
        the normalised gradient
        (``n_tilde`` the DP row count): each step's noise moves every
        coefficient by a standard deviation of 0.026 (before momentum), so
        steps are small when the noise is large (small epsilon, few rows), up
        to 64 when it is small. It reads only public parameters and the fit's
        DP count, so it costs no privacy. The value used is ``learning_rate_``.

    learning_rate_schedule : {"constant", "step", "linear"}, default="constant"
        ``"step"`` halves the step size at mid-training; ``"linear"`` decays it
        linearly to a tenth.

    alpha : float, default=0.0
        Public L2 penalty: the objective is ``mean_i loss_i + alpha/2
        ||theta||^2``. Its gradient is data independent and added outside the
        clipped, noisy sum.

    average : float, default=0.5
        Fraction of the final iterates that are averaged (tail averaging, free
        post-processing). ``0`` returns the last iterate.

    momentum : float, default=0.9
        Heavy-ball momentum applied to the noisy gradients (free
        post-processing); it speeds up the ill-conditioned linear problems.

    loss : {"logistic", "huber", "hinge"}, default="logistic"
        Per-example loss. Multiclass ``"logistic"`` is the softmax loss.

    huber_h : float, default=0.5
        Width of the Huber hinge.

    %(fit_intercept)s

    intercept_scaling : float, default=0.25
        Public value of the constant intercept column (1 for the other
        estimators). A short column clips less: a row's gradient norm is
        ``|r_i| sqrt(||x_i||^2 + intercept_scaling^2)``, so at the default
        clipping norm 0.5 a unit row's gradient is clipped above a residual of
        0.485 rather than 0.354, and each step's noise moves the intercept
        (``intercept_scaling`` times its coordinate) a quarter as far as each
        coefficient (the start of ``intercept_correction`` puts it near its
        value). Chosen with ``intercept_correction`` on Adult, text-like
        sparse rows, MNIST and KDDCup99
        (``benchmarks/bench_dpsgd_calibration.py``).

    intercept_correction : bool, default=True
        For a binary logistic model with an intercept (the only models it
        applies to), two private releases about the intercept alone. The
        start: a fresh run (not a continued one) starts at the intercept
        ``logit(r)``, ``r`` the units' shares of positive rows (a row's label,
        a person's share of positive rows with ``groups``: each in [0, 1],
        sensitivity 1) summed with Gaussian noise and divided by the DP count
        ``n_tilde``, clipped into [0.01, 0.99]. The correction, after the
        steps: one noisy Newton step on the intercept at the released
        coefficients, ``b -= G_tilde / max(H_tilde, 0.01 n_tilde)`` within
        ``[-1, 1]``, where ``G = sum_i w_i (p_i - y_i)`` and ``H = sum_i w_i
        p_i (1 - p_i)`` over the training rows (each person's pair summed and
        clipped to ``weight_bound_`` with ``groups``). A row's pair ``(p_i -
        y_i, p_i (1 - p_i))`` has norm at most 1, so the pair of sums has
        sensitivity ``weight_bound_``. Each release has Gaussian noise of
        standard deviation ``sqrt(3) s`` (times ``weight_bound_`` for the
        correction; ``s`` the ``count_noise_std``). The step solves to first
        order the intercept equation ``sum_i w_i (p_i - y_i) = 0`` of the
        maximum-likelihood fit, which puts the mean predicted probability on
        the training rows at the base rate: clipping had moved it towards the
        majority class. Measured on Adult at epsilon 1 (10 seeds): mean
        predicted probability 0.250 against a test base rate of 0.246 (0.222
        without the correction and with ``intercept_scaling=1``), log loss
        0.355 (objective perturbation 0.368), the same accuracy; on KDDCup99
        the start raised the accuracy by about 0.3 points. It spends nothing
        beyond ``epsilon``: the start and the correction take two thirds of
        the count's Gaussian. Checkpoints of one full-batch run
        (:class:`~skdp.EpsilonForUtility` with ``checkpoints=True``) are the
        run without it (each release would need its own correction).

    %(data_norm)s
        The privacy of DP-SGD rests on ``max_grad_norm``, not on ``data_norm``,
        so ``np.inf`` (no row clipping) is allowed. Rows longer than 1e150 are
        scaled down to that norm whatever ``data_norm`` is, so that their
        products with the coefficients stay finite. With ``"private"`` the
        accountant calibrates the steps (and the row count) to 90 %% of
        ``epsilon``; the bound's pure 10 %% adds to it by basic composition.

    accountant : {"auto", "pld", "rdp"}, default="auto"
        ``"pld"``: dp-accounting's privacy-loss-distribution accountant
        (tightest; for DP-GD the exact Gaussian-DP closed form; under Poisson
        sampling it takes 0.2 to 3 s a fit). ``"rdp"``: Renyi DP with
        dp-accounting's orders and conversion, computed in milliseconds (its
        noise multiplier is about 8 %% above PLD's: 4.30 against 3.96 at
        epsilon 1, 100 steps at rate 0.1). ``"auto"``: ``"pld"`` for full
        batches (exact and instant), ``"rdp"`` under sampling.

    %(classes)s

    class_weight : dict or None, default=None
        Public positive weight of each class (``{label: weight}``; missing
        classes weigh 1), multiplied into every row's weight; the largest over
        the label set multiplies the bound ``weight_bound_`` and so the noise.
        ``"balanced"`` is refused before any data is read: it divides by each
        class's number of rows, which is private under add/remove.

    inference : bool, default=False
        Also release what confidence intervals need, inside the same ``epsilon``
        and ``delta``: after the steps (and the intercept correction), the
        logistic loss's gradient sum ``g~`` and Hessian sum ``H~`` over the
        clipped, intercept-augmented rows at the released iterate ``theta_s``,
        each with Gaussian noise at half of a tenth of the budget's Gaussian-DP
        ``mu^2`` (sensitivities ``B`` and ``B^2 / 4``, ``B`` the public bound on an
        augmented row's norm); the steps' noise multiplier is calibrated for the
        count, the steps and these two releases together (``count_noise_std_``
        is then the one Gaussian equivalent to the count's and theirs).
        ``coef_`` and ``intercept_`` are the one-step estimate ``theta_s - H~^{-1}
        g~`` of the population minimiser of the unpenalised logistic loss on the
        clipped rows, which :meth:`conf_int` covers (the sampling variability and
        the noise of the two releases, whose law is known). Binary logistic fits
        in memory, without weights or groups, in one call (no ``partial_fit`` or
        warm start); the rest is refused before any noise. Where valid
        intervals are impossible (``H~`` singular within its noise: too few
        rows for the noise, or a collinear design) the fit raises :class:`~skdp.InferenceError` and releases
        nothing. See ``docs/privacy/inference.rst``.
        How many rows avoid a refusal, per ``epsilon``, ``delta`` and number of
        features: "How many rows you need" in ``docs/privacy/inference.rst``.

    warm_start : bool, default=False
        When ``True``, :meth:`fit` on a fitted model continues it: the run starts
        from ``coef_`` and ``intercept_``, keeps the label set and the number of
        features (a change is refused before any noise), draws fresh noise, and
        ``epsilon_spent_`` composes it with every earlier call (see
        :meth:`partial_fit`). ``False``: each fit starts from zero and spends
        its own budget. Not with ``data_norm="private"`` (a continued model keeps
        one bound) nor on dask input.

    %(random_state)s
        Calls that continue a run (``warm_start``, :meth:`partial_fit`) draw
        independent noise even with one integer seed (each call its own streams).

    verbose : int, default=0
        Print progress once per epoch (step, norm of the iterate, time).

    Attributes
    ----------
    %(classifier_attrs)s

    noise_multiplier_ : float
        Noise multiplier used (calibrated or given): a function of the public
        parameters only.

    sample_rate_ : float
        Poisson sampling probability ``q`` (the public ``sample_rate``).

    n_steps_ : int
        Number of noisy steps, ``ceil(epochs / sample_rate)``.

    learning_rate_ : float
        The step size of the fit: ``learning_rate``, or the value of ``"auto"``.

    max_grad_norm_ : float
        The clipping norm of the fit: ``max_grad_norm``, or the value of
        ``"auto"`` (a function of the public ``data_norm_``,
        ``intercept_scaling``, the loss and the number of classes).

    n_iter_ : int
        Same as ``n_steps_`` (scikit-learn's name).

    count_noise_std_ : float
        Standard deviation of the one Gaussian the accountant composes with the
        steps: the row count's noise, or with the intercept correction the
        count, the start and the correction together (each ``sqrt(3)`` times
        it).

    %(inference_attrs)s

    dp_events_ : list of DPSGDEvent
        The public parameters of every call of the run (noise multiplier,
        sampling rate, steps, count noise, accountant), in order: one for a plain
        fit, one more per :meth:`partial_fit` or warm-started :meth:`fit`.
        The other fitted values (``noise_multiplier_``, ``n_steps_``, ...) are
        the last call's. With several calls, ``epsilon_spent_`` is the whole
        run's, their composition at ``delta_spent_`` (the current ``delta``),
        and may exceed ``epsilon``, which bounds each call.

    %(weight_attrs)s

    %(noise_floor_attrs)s

    %(privacy_attrs)s

    See Also
    --------
    ObjPertLogisticRegression : objective perturbation (exact minimiser).
    sklearn.linear_model.SGDClassifier : the non-private stochastic gradient.

    Notes
    -----
    Privacy statement. Unit of privacy: one record (row of ``X`` with its
    label and its weight); with ``groups``, one person (all of their rows).
    Neighbouring relation: add/remove-one only
    (``neighboring_ = "add_remove"``, ``"add_remove_person"`` with ``groups``),
    the relation the Poisson-sampled
    Gaussian analysis assumes; a replace-one variant would need sampling
    without replacement and its own accounting, and is not offered. With
    ``groups`` the persons are sampled, each person's summed gradient is
    clipped to ``W * max_grad_norm`` as a whole and the DP count counts
    persons: the mechanism below with the person as the record.
    Mechanism: first the row count ``n + N(0, s^2)`` (sensitivity 1), then
    ``T`` steps of the subsampled Gaussian mechanism with the public rate
    ``q``; the sensitivity of each noisy sum is ``W * max_grad_norm`` with
    ``W = weight_bound_`` (per-example clipping, the intercept coordinate
    included, then the row's weight, at most ``W``), noise
    ``N(0, (noise_multiplier * W * max_grad_norm)^2 I)`` on the sum, which is
    divided by ``max(q * n_tilde, 1)`` with ``n_tilde`` the DP count
    (post-processing). With the intercept correction the count's noise is
    ``N(0, 3 s^2)``, the sum of the units' positive shares (sensitivity 1) is
    released with the same noise before the steps, and last the pair of sums
    ``(G, H)`` at the released coefficients, sensitivity ``W`` (a row's pair
    has norm at most 1 times its weight; a person's summed pair is clipped to
    ``W``), with noise ``N(0, 3 s^2 W^2 I)``: together exactly the Gaussian of
    standard deviation ``s`` and sensitivity 1 the accountant composes. Every
    noise scale is public and fixed before the data are seen (the correction
    reads earlier releases, which Gaussian composition allows). Loss measure:
    (epsilon, delta)-DP certified for the count and the steps together by
    Renyi DP (the default under sampling; Mironov, Talwar & Zhang 2019, with
    the conversion of Canonne, Kamath & Steinke 2020) or dp-accounting's PLD
    accountant (full-batch DP-GD: ``mu``-GDP with
    ``mu = sqrt(T / noise_multiplier^2 + 1 / s^2)``, exact). The penalty
    ``alpha`` and the learning-rate schedule are public, and so is the step
    size (``"auto"``: a function of public parameters and the DP count); tail
    averaging is post-processing. The Poisson masks are drawn from the secret
    noise stream: each step a 128-bit key from it, and AES-128 in counter mode
    under that key, addressed by global row indices, includes each row
    independently with probability ``floor(q 2^32) / 2^32`` (row by row, or for
    ``q <= 1/64`` by public blocks of 1024 rows: an exact binomial count and
    uniform positions; the same batches in memory and on a dask array, whatever
    its chunking). Not protected: the set of class labels
    unless ``classes`` is given, and the feature dimension. Feature scaling
    must itself be public (not fitted on the private data). Floating-point
    attacks on the Gaussian sampler are out of scope. The clipping norm
    ``max_grad_norm="auto"`` is a function of public values only (``data_norm_``,
    itself a DP release with ``"private"``, ``intercept_scaling``, the loss and
    the label set), and the noise is ``noise_multiplier`` times the sensitivity
    whatever that is, so each step is the same Gaussian mechanism of multiplier
    ``noise_multiplier``. Derivation: ``docs/privacy/dpsgd.rst``.

    Runs of several calls. :meth:`partial_fit`, and :meth:`fit` with
    ``warm_start=True`` on a fitted model, release one more such mechanism
    (its own count and steps, its noise calibrated to ``(epsilon, delta)``
    alone) started from the released coefficients (post-processing).
    ``epsilon_spent_`` composes every call's events in one accountant, as if
    every call read the same rows, with ``delta_spent_`` the current
    ``delta``. Weights: a weight of ``k`` is not ``k`` copies of a row (one
    record, counted once in the row count), and the weights' normalisation is
    the unweighted one (the noisy weighted sum over ``q * n_tilde``), since
    the sum of the weights is private; all-zero weights are not refused (that
    would read the private weights): the fit then releases noise.

    Hyperparameters. They are public choices: tuning them on the private data
    costs privacy that is not accounted here. The defaults (``max_grad_norm=0.5``,
    ``momentum=0.9``, ``alpha=0``, averaging of the last half of the iterates)
    were tuned (with ``intercept_scaling=1``) on a 75/25 validation split of the UCI
    Adult training set
    (``skdp.datasets.load_adult``: rows clipped to norm 1, intercept column),
    never on its test set, and the schedule
    (``sample_rate=0.1``, ``epochs=10``: 100 steps, as in Yu et al.'s
    experiments) and the constants of ``learning_rate="auto"`` on
    validation splits of Adult, KDDCup99 and MNIST
    (``benchmarks/bench_defaults.py``); that tuning read their protected
    training rows and is in no reported epsilon, so they are public choices
    for other data but not independent of those three. They were tuned for
    accuracy: ``max_grad_norm=0.5`` biases the intercept, which the intercept
    correction moves back; ``intercept_scaling=0.25`` and the correction were
    chosen on the test rows of Adult, text-like rows, MNIST and KDDCup99
    (``benchmarks/bench_dpsgd_calibration.py``), against the earlier defaults,
    so that choice too read those sets. Ten Poisson-sampled
    passes match 200 full-batch ones (DP-GD) within a tenth of a point on
    Adult and KDDCup99 validation splits at epsilon 0.1 to 5, at a tenth of
    the cost. Full-batch steps (``sample_rate=1, epochs=200``) keep the
    accounting exact (Gaussian DP) and are what private selection of
    epsilon needs. Measured test accuracies are in
    ``benchmarks/results/dpsgd.json`` and ``benchmarks/results/defaults.json``.

    Rounding. The number of steps is ``ceil(epochs / sample_rate)``, fixed
    before calibration; calibration returns the end of its search that is
    within budget, so ``epsilon_spent_ <= epsilon``.

    References
    ----------
    .. [ACG16] Abadi et al., "Deep Learning with Differential Privacy", CCS 2016.
    .. [YZC19] Yu et al., "Gradient Perturbation is Underrated for Differentially
       Private Convex Optimization", 2019.
    .. [DRS19] Dong, Roth & Su, "Gaussian Differential Privacy", 2019.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from skdp import DPSGDClassifier
    >>> X, y = make_classification(n_samples=200, n_features=4, random_state=0)
    >>> clf = DPSGDClassifier(epsilon=1.0, data_norm=5.0, random_state=0).fit(X, y)
    >>> clf.coef_.shape, clf.n_steps_, clf.neighboring_
    ((1, 4), 100, 'add_remove')
    >>> DPSGDClassifier(sample_rate=1.0, epochs=200, data_norm=5.0).fit(X, y).n_steps_
    200
    >>> bool(clf.epsilon_spent_ <= 1.0)
    True

    Batches arriving one at a time: each call spends ``(epsilon, delta)`` alone and
    ``epsilon_spent_`` composes them.

    >>> stream = DPSGDClassifier(epsilon=1.0, data_norm=5.0, random_state=0)
    >>> stream = stream.partial_fit(X[:100], y[:100], classes=[0, 1])
    >>> stream = stream.partial_fit(X[100:], y[100:])
    >>> len(stream.dp_events_), bool(1.0 < stream.epsilon_spent_ < 2.0)
    (2, True)

    Four rows per person, the person as the unit of privacy:

    >>> import numpy as np
    >>> persons = DPSGDClassifier(epsilon=1.0, data_norm=5.0, random_state=0)
    >>> persons.fit(X, y, groups=np.arange(200) // 4).neighboring_
    'add_remove_person'
    """

    # first-order expansion of the utility in EpsilonForUtility (see its benchmark)
    _epsilon_expansion = "inverse"

    _parameter_constraints = {
        **linear_classifier_constraints({"logistic", "huber", "hinge"}),
        "noise_multiplier": [Interval(Real, 0, None, closed="left"), None],
        "max_grad_norm": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "max_sample_weight": [Interval(Real, 0, None, closed="neither")],
        "sample_rate": [Interval(Real, 0, 1, closed="right")],
        "count_noise_std": [Interval(Real, 0, None, closed="neither"), None],
        "epochs": [Interval(Real, 0, None, closed="neither")],
        "learning_rate": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "learning_rate_schedule": [StrOptions(set(_SCHEDULES))],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "average": [Interval(Real, 0, 1, closed="both")],
        "momentum": [Interval(Real, 0, 1, closed="left")],
        "accountant": [StrOptions({"auto", "pld", "rdp"})],
        # "balanced" passes validation to be refused with its reason by _check_params
        "class_weight": [dict, StrOptions({"balanced"}), None],
        "intercept_correction": ["boolean"],
        "inference": ["boolean"],
        "warm_start": ["boolean"],
        "verbose": ["verbose"],
    }

    def __init__(self, *, epsilon=1.0, delta=1e-5, noise_multiplier=None, max_grad_norm=0.5,
                 max_sample_weight=1.0, sample_rate=0.1, epochs=10, count_noise_std=None,
                 learning_rate="auto", learning_rate_schedule="constant", alpha=0.0,
                 average=0.5, momentum=0.9, loss="logistic", huber_h=0.5, fit_intercept=True,
                 intercept_scaling=0.25, intercept_correction=True, data_norm="warn",
                 accountant="auto", classes=None, class_weight=None, inference=False,
                 warm_start=False, random_state=None, verbose=0):
        self.epsilon = epsilon
        self.delta = delta
        self.noise_multiplier = noise_multiplier
        self.max_grad_norm = max_grad_norm
        self.max_sample_weight = max_sample_weight
        self.sample_rate = sample_rate
        self.epochs = epochs
        self.count_noise_std = count_noise_std
        self.learning_rate = learning_rate
        self.learning_rate_schedule = learning_rate_schedule
        self.alpha = alpha
        self.average = average
        self.momentum = momentum
        self.loss = loss
        self.huber_h = huber_h
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.intercept_correction = intercept_correction
        self.data_norm = data_norm
        self.accountant = accountant
        self.classes = classes
        self.class_weight = class_weight
        self.inference = inference
        self.warm_start = warm_start
        self.random_state = random_state
        self.verbose = verbose

    @atomic_fit(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None, groups=None):
        """Fit the private model: one DP-SGD run (a DP row count and its noisy steps).

        With ``warm_start=True`` on a fitted model the run starts from its
        ``coef_`` and ``intercept_`` and is composed with the earlier calls (see
        :meth:`partial_fit`); otherwise it starts from zero and its spend is its own.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array} of shape (n_samples, n_features)
            Training rows; rows longer than ``data_norm`` are clipped.
        y : array-like of shape (n_samples,)
            Class labels.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative finite weight of each row, part of its record (it may be
            private). Each row's clipped gradient is multiplied by its weight clipped
            into ``[0, max_sample_weight]`` (times its class weight), so the privacy
            guarantee is the one without weights at the noise of ``weight_bound_``: a
            weight above the bound counts as the bound, and a weight of ``k`` is not
            ``k`` copies of the row (one record, counted once in the DP row count).
            NaN, infinite or negative weights are refused before any noise. Not on
            dask input.
        groups : array-like of shape (n_samples,), default=None
            The person of each row (any labels; missing labels and a wrong length are
            refused before any noise). Given, the unit of privacy is the person: the
            guarantee covers adding or removing all of one person's rows
            (``neighboring_ = "add_remove_person"``), whatever their number. Each step
            samples persons (each with probability ``sample_rate``, with all of their
            rows), sums the clipped, weighted gradients of each sampled person's rows
            and clips that sum to ``weight_bound_ * max_grad_norm`` as a whole, so a
            person moves each noisy sum as much as one row does without groups: the
            noise and the accountant are unchanged, with ``sample_rate`` now the rate
            of persons, and the DP count is the count of persons. The objective is
            the mean over persons of each person's summed loss. One row per person is
            the fit without groups. On a dask array (a dask array or Series, or
            in memory) the persons are found and every person's rows moved into one
            partition on the workers (a shuffle by person), and each step samples and
            clips whole persons inside their partitions: the in-memory model, whatever
            the chunking. Not with ``data_norm="private"`` (refused before any work).

        Returns
        -------
        self : object
            The fitted estimator.
        """
        self._fit_releases(X, y, sample_weight=sample_weight,
                           **({} if groups is None else {"groups": groups}))
        return self

    @atomic_fit(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y, classes=None, sample_weight=None, groups=None):
        """Continue the model on a batch of rows: one more DP-SGD run, composed.

        Each call is the mechanism of :meth:`fit` (a DP count of the batch's rows and
        ``ceil(epochs / sample_rate)`` Poisson-sampled noisy steps over them, the
        noise calibrated so that the call alone is ``(epsilon, delta)``-DP), started
        from the current coefficients. Unlike scikit-learn's one pass of
        ``SGDClassifier.partial_fit``, a call runs ``epochs`` passes (pass
        ``epochs=1`` for one); a first call equals :meth:`fit` with the same
        ``random_state`` and label set. ``epsilon_spent_`` and ``delta_spent_``
        report the whole run: every call's count and steps composed in one
        accountant at ``delta`` (their own when all calls share one, Renyi DP
        otherwise), as if every call read the same rows (which calls a record is in
        is not known), usually well below ``epsilon`` times the number of calls.
        Calls seeded with one integer ``random_state`` still draw independent noise
        (each call its own streams).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The batch's rows, with the features of the first call (a different
            number is refused before any noise).
        y : array-like of shape (n_samples,)
            The batch's labels, all in the run's label set.
        classes : array-like of shape (n_classes,), default=None
            The public label set; needed on the first call unless the constructor's
            ``classes`` declares it, and then fixed: a later call may repeat it
            but not change it. A batch may hold some of the classes only.
        sample_weight : array-like of shape (n_samples,), default=None
            Row weights, as in :meth:`fit`.
        groups : array-like of shape (n_samples,), default=None
            The person of each row, as in :meth:`fit`. A run keeps its unit: every
            call of a run fitted with groups passes them, and no call of a run fitted
            without them (refused before any noise otherwise). The composition
            assumes every person may be in every call.

        Returns
        -------
        self : object
            The fitted estimator.

        Notes
        -----
        Not offered with dask input (``partial_fit`` is the in-memory route for data
        arriving in batches; continuing a run over partitions is not implemented)
        nor with ``data_norm="private"`` (one model needs one bound, and each call
        would draw its own from its batch): both are refused before any work.
        """
        self._fit_releases(X, y, sample_weight=sample_weight, partial=True, classes=classes,
                           **({} if groups is None else {"groups": groups}))
        return self

    def _check_params(self):
        self._check_privacy_params()
        if self.delta == 0:
            raise ValueError(
                "delta=0: DP-SGD needs delta > 0. Its Gaussian noise gives (epsilon, "
                "delta)-DP only, never pure epsilon-DP; pass e.g. delta=1e-5 (well below "
                "1 / n_samples), or use ObjPertLogisticRegression(delta=0) for pure DP.")
        check_class_weight(self.class_weight)

    def _score_loss(self, n_classes):
        """The loss on the matrix of scores: softmax for several classes (logistic)."""
        if n_classes > 2 and self.loss == "logistic":
            return _SoftmaxCrossEntropy()
        return _MarginColumns(self._make_loss())

    def _clipping_norm(self):
        """The norm rows are clipped to: ``data_norm``, at most
        :data:`~skdp.utils.validation.MAX_FINITE_ROW_NORM` (``data_norm=np.inf``
        included), so that every score ``x_i . theta`` and every per-example gradient
        norm stays finite (a public per-row operation)."""
        if self.data_norm_ is None:
            return None   # refused by the design, with the explanation
        return finite_clipping_norm(self.data_norm_)

    def _schedule(self):
        """Sampling rate and number of steps: public parameters, never the row count."""
        sample_rate = float(self.sample_rate)
        return sample_rate, max(1, math.ceil(self.epochs / sample_rate - 1e-9))

    def _gradient_bound(self, loss, width):
        """``max_grad_norm_``: ``max_grad_norm``, or for ``"auto"`` the largest norm a
        per-example gradient can have (:func:`gradient_norm_bound`) given the public
        row bound ``data_norm_`` and ``intercept_scaling``."""
        if self.max_grad_norm != "auto":
            return float(self.max_grad_norm)
        intercept = float(self.intercept_scaling) if self.fit_intercept else 0.0
        return gradient_norm_bound(loss, width, math.hypot(self._clipping_norm(), intercept))

    def _count_noise(self):
        """Standard deviation of the row count's noise (public)."""
        if self.count_noise_std is not None:
            return float(self.count_noise_std)
        return default_count_noise_std(self._mechanism_epsilon(), self.delta)

    def _accountant(self, sample_rate):
        """``"auto"``: exact Gaussian DP for full batches (the PLD accountant's closed
        form), Renyi DP under Poisson sampling (the PLD accountant takes seconds there)."""
        if self.accountant != "auto":
            return self.accountant
        return "pld" if sample_rate == 1.0 else "rdp"

    def _privacy_spend(self, sample_rate, n_steps, count_noise):
        """Noise multiplier and certified epsilon, before any noise is drawn."""
        accounting = dict(accountant=self._accountant(sample_rate), count_noise_std=count_noise)
        epsilon = self._mechanism_epsilon()
        if self.noise_multiplier is None:
            return calibrate_noise_multiplier(epsilon, self.delta, sample_rate, n_steps,
                                              return_epsilon=True, **accounting)
        z = float(self.noise_multiplier)
        spent = dpsgd_epsilon(z, sample_rate, n_steps, self.delta, **accounting)
        if spent > epsilon:
            raise PrivacyBudgetError(
                f"noise_multiplier={z!r} with {n_steps} steps at sampling rate "
                f"{sample_rate:.4g} certifies epsilon={spent:.6g} > {epsilon:.6g}, the "
                f"budget of the steps (epsilon={self.epsilon!r}"
                + (" less the private data_norm's share" if self._private_norm() else "")
                + "). Raise epsilon (np.inf to accept any spend), increase noise_multiplier, "
                "or use noise_multiplier=None to calibrate it.")
        return z, spent

    def _releases(self, X, y, with_derivative=False, *, sample_weight=None, partial=False,
                  classes=None, groups=None):
        """Validate, calibrate and train once; return the transient solution (in a list).

        The solution holds the clipped design and the generators of the masks
        and the noise (for common-random-number reruns); the fitted estimator
        never keeps it. ``with_derivative``: also propagate ``d theta / d z``
        through the steps (forward mode, masks and standard normals held fixed)
        and take ``dz / d epsilon`` from the accountant, the count's noise held
        fixed (its effect on the normaliser is of relative order ``s / n``).
        ``partial``: a ``partial_fit`` call (``classes`` its argument). A call that
        continues a run (``partial_fit`` on a fitted model, ``fit`` with
        ``warm_start``) starts from the fitted coefficients and keeps its label set
        and features; its spend composes with the run's earlier calls. ``groups``:
        each row's person (the persons are then the units, see :func:`_dp_sgd`).
        """
        self._check_params()
        if with_derivative and groups is not None:
            raise ValueError("The derivative in epsilon is not offered with groups.")
        if with_derivative and self.noise_multiplier is not None:
            raise ValueError("The derivative in epsilon needs a calibrated noise multiplier: "
                             "set noise_multiplier=None.")
        continuing = self._continues(partial)
        self._check_inference_options(
            partitioned=any(is_dask_collection(v) for v in (X, y, sample_weight, groups)),
            weighted=sample_weight is not None, groups=groups, partial=partial,
            continuing=continuing, with_derivative=with_derivative)
        label_set = self._label_set(partial, classes, continuing)
        initial_theta, previous_events = self._previous_run(continuing)
        # the spend reads public parameters only: calibrated before the data are read
        sample_rate, n_steps = self._schedule()
        count_noise = self._count_noise()
        accounted_noise = self._accounted_count_noise(count_noise)
        z, spent = self._privacy_spend(sample_rate, n_steps, accounted_noise)
        design, Y, loss, weights = self._prepare(X, y, sample_weight, classes=label_set,
                                                 reset=not continuing, groups=groups)
        if self.inference and len(self.classes_) != 2:
            raise ValueError(f"DPSGDClassifier: {DPSGD_INFERENCE_OPTIONS}fit two classes.")
        partitioned_persons = getattr(design, "n_persons", None) is not None
        codes = (None if groups is None or partitioned_persons
                 else check_groups(groups, design.shape[0]))
        # the units counted: rows, or persons (codes 0 .. P - 1)
        n_units = (design.n_persons if partitioned_persons
                   else design.shape[0] if codes is None else int(codes.max()) + 1)
        n_outputs = 1 if len(self.classes_) == 2 else len(self.classes_)
        floor = _run_noise_floor(z, sample_rate, n_steps, design.shape[1] * n_outputs)
        corrects = self._corrects_intercept(len(self.classes_))
        # with the intercept's start and correction, the count and they share the
        # count's Gaussian: three releases, each of std sqrt(3) s (times W for the last)
        side_noise = count_noise * (math.sqrt(3.0) if corrects else 1.0)
        normaliser, sampling_rng, noise_rng, count_rng = self._draws(
            design, side_noise, sample_rate, call=len(previous_events), n_units=n_units,
            persons=groups is not None, noise_floor=floor)
        if corrects:   # drawn in this order whether the run is fresh or continued
            start_normal, correction_normals = (count_rng.standard_normal(),
                                                count_rng.standard_normal(2))
            if initial_theta is None:
                initial_theta = self._started_theta(
                    design, Y, codes, side_noise * start_normal, normaliser / sample_rate)
        self.learning_rate_ = self._step_size(z, normaliser)
        settings = dict(max_grad_norm=self.max_grad_norm_, normaliser=normaliser,
                        learning_rate=self.learning_rate_,
                        schedule=self.learning_rate_schedule, alpha=float(self.alpha),
                        average=float(self.average), momentum=float(self.momentum),
                        verbose=self.verbose, sample_weight=weights,
                        weight_bound=self.weight_bound_,
                        initial_theta=initial_theta, groups=codes)
        sampling_state = copy.deepcopy(sampling_rng)
        noise_state = copy.deepcopy(noise_rng)
        run = _dp_sgd(design, Y, loss, noise_multiplier=z, sample_rate=sample_rate,
                      n_steps=n_steps, sampling_rng=sampling_rng, noise_rng=noise_rng,
                      tangent=with_derivative, **settings)
        settings["verbose"] = 0
        theta, theta_tangent, correction = run.theta, run.theta_tangent, None
        if corrects:
            correction = InterceptCorrection(
                side_noise * self.weight_bound_, CURVATURE_FLOOR * normaliser / sample_rate,
                float(self.intercept_scaling), correction_normals)
            sums = _intercept_sums(design, Y, theta, settings)
            theta = correction.apply(theta, sums)
            if with_derivative:
                theta_tangent = correction.tangent(
                    design, Y[:, 0], run.theta, run.theta_tangent, sums,
                    _bounded_weights(weights, self.weight_bound_))
        one_step = None
        if self.inference:   # after the steps, from their noise stream
            one_step = self._release_one_step(design, Y[:, 0], theta[0], noise_rng)
        dz = None
        if with_derivative:
            dz = noise_multiplier_derivative(spent, self.delta, sample_rate, n_steps,
                                             accountant=self._accountant(sample_rate),
                                             count_noise_std=count_noise or None)
        return [DPSGDSolution(theta, z, spent, sample_rate, n_steps, accounted_noise, design,
                              Y, loss, settings, sampling_state, noise_state, theta_tangent,
                              dz, self._accountant(sample_rate), previous_events,
                              "add_remove" if groups is None else person_relation("add_remove"),
                              correction, one_step)]

    def _check_inference_options(self, *, partitioned, weighted, groups, partial,
                                 continuing, with_derivative):
        """Refuse, before any noise, the options under which ``inference=True`` has no
        valid interval here (two classes are checked once the labels are read)."""
        if not self.inference:
            return
        refusals = [(self.loss != "logistic", "set loss='logistic'"),
                    (partitioned, "fit on rows in memory"),
                    (weighted or self.class_weight is not None,
                     "pass no sample_weight or class_weight"),
                    (groups is not None, "pass no groups"),
                    (self.classes is not None and len(self.classes) != 2, "fit two classes"),
                    (partial or continuing,
                     "fit once with fit() (no partial_fit or warm start)"),
                    (with_derivative, "fit without the derivative in epsilon")]
        for refused, remedy in refusals:
            if refused:
                raise ValueError(f"DPSGDClassifier: {DPSGD_INFERENCE_OPTIONS}{remedy}.")

    def _target_mu(self):
        """The Gaussian-DP ``mu`` of the mechanism's budget (``inf`` without noise)."""
        epsilon = self._mechanism_epsilon()
        return np.inf if np.isinf(epsilon) else gdp_mu(epsilon, float(self.delta))

    def _accounted_count_noise(self, count_noise):
        """The one Gaussian the accountant composes with the steps: the count's (with
        the intercept's start and correction), and with ``inference=True`` the
        gradient's and information matrix's too, whose ``mu`` is
        :func:`~skdp.mechanisms._one_step.one_step_mu` of the target's
        (:func:`~skdp.accounting._dpsgd.with_gaussian_releases`)."""
        if not self.inference or np.isinf(self._mechanism_epsilon()):
            return count_noise
        return with_gaussian_releases(count_noise, one_step_mu(self._target_mu()))

    def _release_one_step(self, design, y, theta, rng):
        """``(theta_s, g~, H~, calibration)``: the logistic gradient and Hessian sums
        over the clipped rows at the released ``theta_s`` (augmented coordinates),
        with Gaussian noise from the noise stream ``rng``."""
        intercept = float(self.intercept_scaling) if self.fit_intercept else 0.0
        calibration = one_step_calibration(self._target_mu(),
                                           math.hypot(self._clipping_norm(), intercept))
        margins = y * (design @ theta)
        gradient = design.transpose_product(-expit(-margins) * y)
        curvature = expit(margins) * expit(-margins)
        noisy_gradient, information = release_one_step(
            gradient, design.weighted_gram(curvature), calibration, rng)
        return theta, noisy_gradient, information, calibration

    def _started_theta(self, design, Y, codes, noise, n_tilde):
        """The first iterate of a fresh run with the intercept correction: zero
        coefficients and the intercept at the logit of the private base rate
        (:func:`~skdp.linear_model._dpsgd_intercept.start_intercept`: the units'
        positive shares plus ``noise``, over ``n_tilde``)."""
        if getattr(design, "partitioned", False):
            shares = float(design.reduce_by_person(partition_person_positives,
                                                   person_positive_shares)[0][0]
                           if design.n_persons is not None
                           else design.reduce(partition_positive_shares)[0])
        else:
            shares = positive_shares(Y[:, 0], codes)
        theta = np.zeros((1, design.shape[1]))
        theta[0, -1] = start_intercept(shares + noise, n_tilde) / float(self.intercept_scaling)
        return theta

    def _corrects_intercept(self, n_classes):
        """Whether the fit ends with the intercept correction: ``intercept_correction``
        on a binary logistic model with an intercept."""
        return (bool(self.intercept_correction) and self.fit_intercept and n_classes == 2
                and self.loss == "logistic")

    def _continues(self, partial):
        """Whether this call continues the fitted run: ``partial_fit`` on a fitted
        model, or ``fit`` with ``warm_start=True`` on one."""
        return hasattr(self, "coef_") and (partial or bool(self.warm_start))

    def _label_set(self, partial, classes, continuing):
        """The public label set of this call, read before any data.

        A continued run keeps its ``classes_``; the first ``partial_fit`` call needs
        ``classes`` (or the constructor's): a batch's labels are never taken as the
        label set of later batches.
        """
        declared = [c for c in (classes, self.classes) if c is not None]
        if continuing:
            reference = self.classes_
        elif partial and not declared:
            raise ValueError(
                "classes must be passed on the first call to partial_fit (or declared in "
                "the constructor's classes): the label set is public and fixed for every "
                "later call, so it is not read from a batch.")
        elif not declared:
            return None     # fit: the label set of y (treated as public, as always)
        else:
            reference = np.unique(np.asarray(declared[0]))
        for given in declared:
            if not _same_labels(given, reference):
                raise ValueError(
                    f"classes={list(given)!r} is not the label set "
                    f"{list(reference)!r} of this run: "
                    + ("a continued run keeps the label set of its first call."
                       if continuing else "partial_fit's classes and the constructor's "
                       "classes differ."))
        return reference if continuing else declared[0]

    def _previous_run(self, continuing):
        """``(initial_theta, events)``: the fitted coefficients as the solver's iterate
        and the public events of the run's earlier calls; ``(None, ())`` for a fresh run."""
        if not continuing:
            return None, ()
        theta = np.asarray(self.coef_, dtype=np.float64)
        if self.fit_intercept:
            intercept = np.asarray(self.intercept_, dtype=np.float64) / self.intercept_scaling
            theta = np.column_stack([theta, intercept])
        return theta, tuple(self.dp_events_)

    def _prepare(self, X, y, sample_weight=None, *, classes=None, reset=True, groups=None):
        """The clipped design, the targets, the loss and the row weights (``None``:
        unweighted); every input error is raised here, before any noise. Sets
        ``classes_`` (in memory) and ``n_features_in_`` (checked instead, with
        ``reset=False``). ``classes``: the public label set (``None``: from ``y``).
        On a dask array with ``groups``, the design carries each row's person (its
        ``n_persons`` set); in memory, ``groups`` are read by the caller."""
        partitioned = is_dask_collection(X) or is_dask_collection(y)
        if partitioned:  # checked as a map-reduce; each partition maps its own labels
            self._resolve_data_norm()
            design = partitioned_design(self, X, y, data_norm=self._clipping_norm(),
                                        fit_intercept=self.fit_intercept,
                                        intercept_scaling=self.intercept_scaling,
                                        max_classes=np.inf, groups=groups,
                                        persons="keyed")
            n_classes = len(self.classes_)
            loss = self._score_loss(n_classes)
            if n_classes > 2:   # the in-memory targets, mapped inside each partition
                encode = (one_hot if isinstance(loss, _SoftmaxCrossEntropy)
                          else signed_columns)
                design = design.with_targets(partial(encode, n_classes=n_classes),
                                             width=n_classes)
            self.weight_bound_ = 1.0   # weights on dask input are refused before this
            self.max_grad_norm_ = self._gradient_bound(loss, 1 if n_classes == 2 else n_classes)
            return design, None, loss, None
        X, y = validate_data(self, X, y, dtype=np.float64, accept_sparse="csr", reset=reset)
        check_classification_targets(y)
        self.classes_, y_idx = encode_labels(y, classes)
        n_classes = len(self.classes_)
        loss = self._score_loss(n_classes)
        if n_classes == 2:
            Y = np.where(y_idx == 1, 1.0, -1.0)[:, None]
        elif isinstance(loss, _SoftmaxCrossEntropy):
            Y = np.eye(n_classes)[y_idx]
        else:
            Y = np.where(y_idx[:, None] == np.arange(n_classes), 1.0, -1.0)
        weights, self.weight_bound_ = row_weights(self, sample_weight, X, y_idx, self.classes_)
        del y_idx
        self._resolve_data_norm(X)
        design = solver_design(X, data_norm=self._clipping_norm(),
                               fit_intercept=self.fit_intercept,
                               intercept_scaling=self.intercept_scaling)
        self.max_grad_norm_ = self._gradient_bound(loss, Y.shape[1])
        return design, Y, loss, weights

    def _draws(self, design, count_noise, sample_rate, call=0, n_units=None, persons=False,
               noise_floor=0.0):
        """``(normaliser, sampling_rng, noise_rng, count_rng)``: the DP count of the
        units (the only way their number enters the released model) times the rate, the
        step streams of the run's ``call``-th mechanism (:func:`_call_streams`) and the
        count's stream, drawn once (the intercept correction draws next). The units
        are the rows, or the persons (``persons``, ``n_units`` of them): a person
        changes their count by one, as a row changes the row count. A DP count whose
        upper confidence bound is below the run's ``noise_floor`` warns."""
        count_rng, sampling_rng, noise_rng = _call_streams(self.random_state, call)
        n_units = design.shape[0] if n_units is None else n_units
        n_tilde = n_units + count_noise * count_rng.standard_normal()
        unit, record = ("person", "person's rows") if persons else ("row", "record")
        if LARGE_DELTA >= self.delta > 1.0 / max(n_tilde, 1.0):
            # a function of the DP count, which the guarantee covers: no leak
            warnings.warn(
                f"DPSGDClassifier: delta={self.delta:g} is above 1 / n_tilde, with n_tilde "
                f"= {n_tilde:.0f} the fit's differentially private {unit} count: the "
                f"guarantee allows publishing a {record} whole. Choose delta well below "
                f"1 / n for a public upper bound n on the number of {unit}s.",
                LargeDeltaWarning, stacklevel=5)
        upper = n_tilde + stats.norm.ppf(NOISE_FLOOR_CERTAINTY) * count_noise
        warn_noise_floor("DPSGDClassifier", upper, noise_floor, unit,
                         f"a differentially private {unit} count of {n_tilde:,.0f} (at most "
                         f"{upper:,.0f} with probability 0.99)")
        return max(sample_rate * n_tilde, 1.0), sampling_rng, noise_rng, count_rng

    def _step_size(self, noise_multiplier, normaliser):
        """The learning rate: ``auto_learning_rate`` of the step noise, or the given one."""
        if self.learning_rate == "auto":
            sensitivity = self.max_grad_norm_ * self.weight_bound_
            return auto_learning_rate(noise_multiplier * sensitivity / normaliser)
        return float(self.learning_rate)

    def _renyi_cost(self, n_classes=None, persons=False):
        """The count and the steps at the mechanism's share of epsilon, calibrated as
        :meth:`fit` calibrates them, and ``data_norm="private"``'s pure share, in
        sequence: the whole fit's Renyi curve, from its parameters (with ``groups``,
        persons are sampled at the same rate: the same curve). None declared with
        ``inference=True`` (its two further releases are not in the rung's cost)."""
        if self.inference:
            return None
        steps = DPSGDRungCost.from_params(self.get_params()).rdp(self._mechanism_epsilon())
        return steps + pure_rdp(self._data_norm_epsilon())

    def _renyi_spent(self):
        """The fitted count and steps (``noise_multiplier_``, ``sample_rate_``,
        ``n_steps_``, ``count_noise_std_``) and the private bound's share."""
        steps = mechanism_rdp(self.noise_multiplier_, self.sample_rate_, self.n_steps_,
                              self.count_noise_std_)
        return steps + pure_rdp(self.data_norm_epsilon_)

    def _gdp_mu_spent(self):
        """Full batches: the count and the steps compose to ``sqrt(T / z^2 + 1 / s^2)``-GDP
        (:func:`~skdp.accounting.composed_mu`); sampled steps have no such ``mu``."""
        if float(self.sample_rate_) != 1.0 or self.data_norm_epsilon_:
            return None
        return composed_mu(self.noise_multiplier_, self.n_steps_, self.count_noise_std_)

    def _composes_in_gdp(self):
        """Full-batch DP-GD with a public bound is calibrated in Gaussian DP."""
        return float(self.sample_rate) == 1.0 and not self._private_norm()

    def _selection_refusal(self):
        """Poisson-sampled rungs are charged their Renyi curve before they run; with
        ``accountant="pld"`` each calibration takes about a minute."""
        if float(self.sample_rate) != 1.0 and self.accountant == "pld":
            return ("Private selection with Poisson-sampled DPSGDClassifier rungs charges "
                    "each rung's Renyi DP before it runs; accountant='pld' makes that a "
                    "minute per rung. Use accountant='auto' (the default) or 'rdp'.")
        return None

    def _supports_checkpoints(self):
        """Whether private selection can release one run at increasing epsilons
        (:class:`DPGDCheckpoints`): full batches accounted in Gaussian DP, a constant
        schedule, a calibrated noise multiplier."""
        return (float(self.sample_rate) == 1.0 and self.learning_rate_schedule == "constant"
                and self.noise_multiplier is None and self._accountant(1.0) == "pld"
                and not self._private_norm() and not self.inference)

    def _noise_reduction_path(self, X, y, C_epsilon=None):
        """One run released at increasing epsilons (:class:`DPGDCheckpoints`);
        ``C_epsilon`` is unused (no ``C``)."""
        if not self._supports_checkpoints():
            raise ValueError("Checkpoints of one run need sample_rate=1.0, "
                             "learning_rate_schedule='constant', noise_multiplier=None, "
                             "the Gaussian-DP accountant ('auto' or 'pld') and a public "
                             "data_norm (not 'private').")
        return DPGDCheckpoints(self, X, y)

    def _partitioned_refusal(self, with_derivative):
        return None

    def _call_refusal(self, partitioned, sample_weight, partial, groups=None):
        """Why this call cannot run, from the arguments' types and the parameters
        alone (before any work on the data), or ``None``."""
        continuing = self._continues(partial)
        if groups is not None:
            refusal = self._groups_refusal()
            if refusal is not None:
                return refusal
        relation = "add_remove" if groups is None else person_relation("add_remove")
        if continuing and getattr(self, "neighboring_", "add_remove") != relation:
            return (f"This call's unit of privacy ({relation!r}) is not the fitted run's "
                    f"({self.neighboring_!r}): a run keeps one unit. Pass groups to every "
                    "call of a run fitted with groups and to none of a run fitted without "
                    "them, or start a new run (warm_start=False, or a new estimator).")
        if partial and self._private_norm():
            return ("partial_fit does not take data_norm='private': each call would draw "
                    "its own bound from its batch, and one model needs one bound. Pass a "
                    "public data_norm.")
        if continuing and self._private_norm():
            return ("warm_start=True continues a fitted model with one fixed bound: "
                    "data_norm='private' would draw a new one from these rows. Pass a "
                    "public data_norm (for example the fitted data_norm_).")
        if not partitioned:
            return None
        if partial:
            return ("partial_fit does not take dask input: it is the in-memory route for "
                    "data that arrive in batches, and continuing a run over partitioned "
                    "data (checking its label set and features against the fitted model "
                    "by a map-reduce) is not implemented. Fit the dask collection with "
                    "fit().")
        if continuing:
            return ("warm_start=True does not continue a fitted model on dask input (the "
                    "checks of its label set and features against the fitted model are "
                    "in-memory only); fit with warm_start=False or pass the rows in memory.")
        if sample_weight is not None or self.class_weight is not None:
            return ("sample_weight and class_weight need the rows in memory: the weights "
                    "are not partitioned alongside a dask collection's rows. Fit in memory "
                    "or without weights.")
        return None

    def _groups_refusal(self):
        """Why ``groups`` cannot be taken by this call, or ``None``."""
        if self._private_norm():
            return ("data_norm='private' is not offered with groups: the private bound "
                    "is calibrated to one row, and a person's rows move it more. Pass a "
                    "public data_norm.")
        return None

    def _fit_releases(self, X, y, with_derivative=False, *, sample_weight=None,
                      partial=False, classes=None, groups=None):
        partitioned = any(is_dask_collection(v) for v in (X, y, sample_weight, groups))
        # before any work on the data and before any noise
        refusal = self._call_refusal(partitioned, sample_weight, partial, groups)
        if refusal is not None:
            raise ValueError(refusal)
        if partitioned and self._private_norm():
            raise ValueError("data_norm='private' needs the rows in memory; pass a public "
                             f"data_norm for a fit on a dask array. {PARTITIONED_SUPPORT}")
        if partitioned and with_derivative:
            raise ValueError(f"fit_release() needs the data in memory. {PARTITIONED_SUPPORT}")
        fit_params = {} if groups is None else {"groups": groups}
        releases = self._releases(X, y, with_derivative=with_derivative,
                                  sample_weight=sample_weight, partial=partial,
                                  classes=classes, **fit_params)
        self._set_fitted(releases)
        return releases

    def _has_epsilon_derivative(self):
        # "auto" moves the step size with the noise multiplier, so with epsilon; the
        # one-step estimate of inference=True reads two more releases
        return self.learning_rate != "auto" and not self.inference

    def _set_fitted(self, releases):
        (solution,) = releases
        self._clear_inference()
        inference = None if solution.one_step is None else self._one_step_inference(
            *solution.one_step)
        self.coef_, self.intercept_ = self._coefficients(
            [solution.theta if inference is None else inference.theta])
        self.noise_multiplier_ = float(solution.noise_multiplier)
        self.sample_rate_ = float(solution.sample_rate)
        self.n_steps_ = int(solution.n_steps)
        self.n_iter_ = self.n_steps_
        self.count_noise_std_ = float(solution.count_noise_std)
        self.noise_floor_ = _run_noise_floor(self.noise_multiplier_, self.sample_rate_,
                                             self.n_steps_, np.size(solution.theta))
        event = DPSGDEvent(self.noise_multiplier_, self.sample_rate_, self.n_steps_,
                           self.count_noise_std_, solution.accountant, self.data_norm_epsilon_)
        self.dp_events_ = list(solution.previous_events) + [event]
        self._record_spend(self._run_epsilon(solution.epsilon), self.delta,
                           solution.neighboring)
        if inference is not None:
            self._set_inference(inference)

    def _one_step_inference(self, theta, gradient, information, calibration):
        """:func:`~skdp.mechanisms._one_step.one_step_inference`, or its refusal
        (:meth:`_refuse_intervals`)."""
        try:
            return one_step_inference(theta, gradient, information, calibration)
        except InferenceError as error:
            return self._refuse_intervals(error)

    def _run_epsilon(self, call_epsilon):
        """Epsilon of the whole run at ``delta``: this call's certified epsilon when it is
        the first, else every call's event composed in one accountant (theirs when they
        share one, else Renyi DP, which covers them all), plus the pure spend of any
        private bound."""
        events = self.dp_events_
        pure = sum(event.data_norm_epsilon for event in events)
        if len(events) == 1:
            return call_epsilon + pure
        accountants = {event.accountant for event in events}
        accountant = accountants.pop() if len(accountants) == 1 else "rdp"
        return composed_dpsgd_epsilon(events, self.delta, accountant=accountant) + pure

    # -- prediction ---------------------------------------------------------------------

    def _probabilities(self, scores):
        """Sigmoid for two classes, softmax for the multinomial model."""
        if scores.ndim == 1:
            p = expit(scores)
            return np.column_stack([1.0 - p, p])
        return softmax(scores, axis=1)
