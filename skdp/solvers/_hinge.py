"""Certified exact minimiser of the L2-regularised hinge loss (sum form).

``J(theta) = C sum_i max(0, 1 - y_i <x_i, theta>) + 1/2 ||theta||^2`` is not
smooth, so Newton's certificate does not apply. liblinear's dual coordinate
descent gives a point and a dual; polishing rounds solve the optimality system on
the rows near the margin; the Fenchel-Young duality gap ``g`` certifies the
distance ``||theta - theta*|| <= sqrt(2 g)`` (1-strong convexity).

Requires of the loss: nothing beyond the hinge itself (it is the only loss).
"""

import warnings

import numpy as np
import scipy.sparse as sp
from scipy.optimize import lsq_linear
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import LinearSVC

from ..losses import HuberHingeLoss, WeightedLoss, weighted_targets
from ..utils import _double_double as dd
from ..utils._docstrings import fill_doc
from ..utils._memory import check_allocation
from ._accurate import accurate_transpose_product, norm_above
from ._design import ScaledDesign, as_design, is_sparse
from ._newton import newton_minimise

_HINGE_DOC = {"hinge_problem": """X : {ndarray, sparse matrix} of shape (n_samples, n_coefficients)
        The design.
    y : ndarray of shape (n_samples,)
        Labels in {-1, +1}.
    C : float or ndarray of shape (n_samples,)
        Weight of the loss sum, or of each row's loss (``C`` times the row weights:
        the dual box ``0 <= alpha_i <= C_i``)."""}

# liblinear tolerances tried in turn until the duality-gap certificate is met. From
# scikit-learn's default 1e-4, with the band's Huber path (_band_huber_path) when the
# partition alone does not certify, a single run certified on every scaling design, up
# to 1e6 x 100 (measured: 10.6 s there against 11.5 s from 1e-5; 20000 x 5000 2.6 s
# against 4.4 s).
_LIBLINEAR_TOLS = (1e-4, 1e-5, 1e-7, 1e-9, 1e-11)
# clipping factors within this of 1 are ignored in liblinear's input (not in the certificate)
_NEGLIGIBLE_CLIPPING = 1e-9
# half-widths of the band of margins treated as "on the margin" when polishing
_MARGIN_BANDS = (1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8)
# memory caps (number of matrix entries) of the dense near-margin rows used in polishing,
# tried in turn (the larger only where the shape lets the band grow): on a Gisette-shaped
# design the first band (40 MB) certifies and the second (160 MB) took 0.4 s more to fill
_BAND_ENTRIES = (5_000_000, 20_000_000)
# bands cut at the largest jumps of the sorted margin distances
_N_JUMP_BANDS = 6
# rounds of polishing from each liblinear solution
_POLISH_ROUNDS = 3
# active-set steps from the best prefix of a polishing round, and the rows of the band on
# the wrong side of the margin that join the margin set per step
_ACTIVE_SET_STEPS = 20
_JOINING_ROWS = 5
# projected Newton steps of the bounded least squares before bvls takes over
_BOX_NEWTON_STEPS = 50
# bounded least squares of at most _BVLS_SIZE variables, or of rank (the rows of M) at most
# _BVLS_SIZE and at most _BVLS_LOW_RANK_VARIABLES variables, go to bvls directly: exact,
# and there 3-10x faster than the projected Newton steps, which on KDDCup99's margin bands
# (13 to 42 distinct rows) stopped at points above the minimum, so that no band's polish
# certified; Adult's band (rank 43, 171 variables) 7 ms against 30. bvls measured on
# random rank-deficient problems: at most 24 ms at 64 variables, 0.37 s at rank 64 with
# 256 variables; 9 s at rank 100 with 256 variables (the projected steps: 0.7 s)
_BVLS_SIZE = 64
_BVLS_LOW_RANK_VARIABLES = 256
# Huber widths of the fallback path
_HUBER_PATH = (1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8)


@fill_doc(fragments=_HINGE_DOC)
def hinge_duality_gap(X, y, C, alpha):
    """Primal point ``theta = X^T (alpha y)`` of a dual point, and its duality gap.

    For the hinge SVM ``P(theta) = C sum max(0, 1 - m_i) + 0.5 ||theta||^2`` with
    dual ``D(alpha) = sum alpha_i - 0.5 ||X^T (alpha y)||^2`` (``0 <= alpha <= C``),
    the gap at ``theta = X^T (alpha y)`` is the sum of the non-negative
    Fenchel-Young terms ``C max(0, 1 - m_i) - alpha_i (1 - m_i)``, computed
    without cancellation. Strong convexity gives ``||theta - theta*|| <= sqrt(2 gap)``.

    Parameters
    ----------
    %(hinge_problem)s
    alpha : ndarray of shape (n_samples,)
        A dual point, in ``[0, C]``.

    Returns
    -------
    theta : ndarray of shape (n_coefficients,)
    gap : float
    """
    theta = np.asarray(X.T @ (alpha * y)).ravel()
    return theta, _gap_from_slacks(1.0 - y * np.asarray(X @ theta).ravel(), alpha, C)


def _gap_from_slacks(slack, alpha, C):
    """Sum of the Fenchel-Young terms ``C max(0, s_i) - alpha_i s_i`` (each >= 0)."""
    return max(float(np.sum(C * np.maximum(slack, 0.0) - alpha * slack)), 0.0)


def _margin_dual(signed, C, fixed):
    """Dual values of the rows put on the margin (KKT polishing).

    ``signed`` holds those rows times their labels (``A``) and ``fixed`` the
    contribution ``X^T (alpha y)`` of every other row. With ``c`` solving
    ``A c = 1`` (the primal point on the margin), the dual restricted to these
    rows is the box-constrained least-squares problem
    ``min ||A^T alpha - (c - fixed)||``, ``0 <= alpha <= C``.
    """
    if not signed.shape[0]:
        return np.zeros(0)
    if sp.issparse(signed):
        return _margin_dual_from_gram(signed, C, fixed)
    # Identical rows enter A^T alpha through their sum only: one dual value per
    # distinct row, in [0, C * count] (the sum of their C_i), shared in proportion to
    # C_i. Exact, and it keeps the bounded least squares small and well posed on data
    # with many duplicates.
    distinct, inverse, counts = _distinct_rows(signed)
    upper = C * counts if np.ndim(C) == 0 else np.bincount(inverse, weights=C,
                                                           minlength=counts.size)
    u, s, vt = np.linalg.svd(distinct, full_matrices=False)
    keep = s > s.max(initial=0.0) * max(distinct.shape) * np.finfo(float).eps
    u, s, vt = u[:, keep], s[keep], vt[keep]
    on_margin = vt.T @ ((u.T @ np.ones(distinct.shape[0])) / s)  # min-norm c with A c = 1
    rhs = on_margin - fixed
    candidate = u @ ((vt @ rhs) / s)  # min-norm alpha with A^T alpha = rhs
    if np.any(candidate < 0.0) or np.any(candidate > upper):
        candidate = _box_least_squares(s[:, None] * u.T, vt @ rhs, upper, candidate)
    group = np.clip(candidate, 0.0, upper)
    if np.ndim(C) == 0:
        return np.minimum(group[inverse] / counts[inverse], C)  # C * k / k may round above C
    share = np.divide(C, upper[inverse], out=np.zeros(C.shape), where=upper[inverse] > 0)
    return np.minimum(group[inverse] * share, C)


def _distinct_rows(rows):
    """``np.unique(rows, axis=0)`` with the inverse and the counts, without its sort of
    whole rows when a fixed projection of the rows already tells them all apart.

    Otherwise the rows are grouped by their bytes (``-0.0`` made ``+0.0`` first, so
    that rows equal in value are equal in bytes; the rows are finite), one 1-D sort,
    and the groups put in ``np.unique``'s lexicographic order by a sort of the
    distinct rows only (on KDDCup99's margin bands six times faster than
    ``np.unique(axis=0)``'s sort of whole rows as records, the same result).
    """
    keys = rows @ np.cos(np.arange(rows.shape[1]) + 0.5)
    if np.unique(keys).size == keys.size:
        return rows, np.arange(keys.size), np.ones(keys.size, dtype=np.int64)
    signless = np.ascontiguousarray(rows + 0.0)
    records = signless.view(np.dtype((np.void, signless.itemsize * rows.shape[1]))).ravel()
    _, first, inverse, counts = np.unique(records, return_index=True, return_inverse=True,
                                          return_counts=True)
    distinct = rows[first]
    order = np.lexsort(distinct.T[::-1])
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return distinct[order], rank[inverse.ravel()], counts[order]


def _margin_dual_from_gram(signed, C, fixed):
    """:func:`_margin_dual` for sparse rows, through the ``m x m`` Gram matrix.

    With ``A = U S V^T`` and ``G = A A^T = U S^2 U^T``, the least-squares
    problem ``min ||A^T alpha - (c - fixed)||`` reads, in the row space,
    ``min ||S U^T alpha - S^{-1} U^T (1 - A fixed)||`` (``A c`` is the projection
    ``U U^T 1``); its unconstrained minimum-norm solution is
    ``U S^{-2} U^T (1 - A fixed)``. Never densifies ``A``.
    """
    values, u = np.linalg.eigh((signed @ signed.T).toarray())
    # the SVD rule's threshold on the singular values s = sqrt(values)
    keep = values > (values.max(initial=0.0) * (max(signed.shape) * np.finfo(float).eps) ** 2)
    u, s = u[:, keep], np.sqrt(values[keep])
    projected = u.T @ (1.0 - signed @ fixed)
    candidate = u @ (projected / s**2)
    if np.any(candidate < 0.0) or np.any(candidate > C):
        candidate = _box_least_squares(s[:, None] * u.T, projected / s,
                                       np.broadcast_to(np.asarray(C, dtype=float),
                                                       candidate.shape).copy(), candidate)
    return np.clip(candidate, 0.0, C)


def _box_least_squares(M, b, upper, start):
    """``min ||M alpha - b||`` over ``0 <= alpha <= upper``, by projected Newton steps.

    Each step solves the least-squares problem of the variables not held at a
    bound by their gradient (the free set), so that many bounds change at once
    (bvls changes one per step: minutes on a few thousand rows), then backtracks
    along the projected path (Armijo), until the free variables' gradient vanishes
    or no step decreases the objective (rounding level); bvls finishes from scratch
    if neither happens within :data:`_BOX_NEWTON_STEPS` steps. Problems of at most
    :data:`_BVLS_SIZE` variables, or of that rank and at most
    :data:`_BVLS_LOW_RANK_VARIABLES` variables, go to bvls directly. The caller certifies the
    result (a duality gap), so the solver's accuracy never enters the guarantee.
    """
    rank, variables = M.shape
    if variables <= _BVLS_SIZE or (rank <= _BVLS_SIZE and variables <= _BVLS_LOW_RANK_VARIABLES):
        return lsq_linear(M, b, bounds=(np.zeros_like(upper), upper), method="bvls").x
    alpha = np.clip(start, 0.0, upper)
    residual = M @ alpha - b
    value = 0.5 * residual @ residual
    scale = np.linalg.norm(M.T @ b) + np.finfo(float).tiny
    for _ in range(_BOX_NEWTON_STEPS):
        gradient = M.T @ residual
        held = ((alpha <= 0.0) & (gradient > 0.0)) | ((alpha >= upper) & (gradient < 0.0))
        if np.linalg.norm(gradient[~held]) <= 1e-10 * scale:
            return alpha
        step = np.zeros_like(alpha)
        step[~held] = -np.linalg.lstsq(M[:, ~held], residual, rcond=None)[0]
        for length in 0.5 ** np.arange(30):
            trial = np.clip(alpha + length * step, 0.0, upper)
            trial_residual = M @ trial - b
            trial_value = 0.5 * trial_residual @ trial_residual
            if trial_value <= value - 1e-4 * gradient @ (alpha - trial):
                break
        else:
            return alpha
        alpha, residual, value = trial, trial_residual, trial_value
    return lsq_linear(M, b, bounds=(np.zeros_like(upper), upper), method="bvls").x


def _band_counts(distances):
    """Numbers of rows to put on the margin: the cut at the largest relative jump
    first, then the others smallest (cheapest) first.

    ``distances`` are the sorted ``|m_i - 1|`` of the rows nearest the margin.
    The counts are cuts at the largest relative jumps (the margin support
    vectors sit before such a jump) and fixed band widths. The largest jump is where
    the support vectors end when liblinear's point is close (their distances at its
    tolerance, the next rows' far above): tried first, it spares the failing
    candidates of the smaller counts (on an RCV1-shaped design, 5,000 x 5,000 at 1 %,
    six of them, each an eigendecomposition of its Gram matrix: 0.35 s of 0.96). Rows
    exactly on the margin (distance 0) are no jump: the ratios' denominators are at
    least the smallest positive distance.
    """
    positive = distances[distances > 0.0]
    floor = positive.min() if positive.size else np.finfo(float).tiny
    ratios = distances[1:] / np.maximum(distances[:-1], floor)
    cuts = np.argsort(ratios, kind="stable")[::-1][:_N_JUMP_BANDS] + 1
    widths = np.searchsorted(distances, _MARGIN_BANDS, side="right")
    rest = np.setdiff1d(np.concatenate([cuts[1:], widths]), cuts[:1])
    return np.concatenate([cuts[:1], rest])


def _band_rows(X, max_entries):
    """The most rows of a band within ``max_entries``: dense rows of ``d`` entries;
    sparse rows stay sparse, the cap is on the Gram matrix of
    :func:`_margin_dual_from_gram`."""
    row_entries = X.shape[1] if not is_sparse(X) else max(1, int(np.sqrt(max_entries)))
    return max(1, max_entries // row_entries)


def _band_caps(X):
    """The caps of :data:`_BAND_ENTRIES` worth trying on ``X``'s shape: a larger cap
    only where the ``10 d + 100`` rows of the band exceed the smaller one's rows."""
    n, d = X.shape
    caps = [_BAND_ENTRIES[0]]
    for cap in _BAND_ENTRIES[1:]:
        if min(n, 10 * d + 100) > _band_rows(X, caps[-1]):
            caps.append(cap)
    return caps


def _margin_band(X, y, C, w, max_entries=_BAND_ENTRIES[-1]):
    """The rows nearest the margin of ``w`` and the fixed part of the others.

    The band is the ``10 d + 100`` rows nearest the margin, or all within the
    widest of :data:`_MARGIN_BANDS`, at most :func:`_band_rows` of
    ``max_entries``, sorted by their distance to it. Returns the margins and their
    distances to one, the band's indices, the dual point of the partition with the
    band's values set to zero (``C`` below the margin, 0 above), its primal image
    ``fixed_far`` (the contribution of the rows outside the band) and the band's
    rows times their labels (a new array; CSR for a sparse ``X``).
    """
    n, d = X.shape
    margins = y * np.asarray(X @ w).ravel()
    distance_to_one = np.abs(margins - 1.0)
    size = max(10 * d + 100, np.count_nonzero(distance_to_one <= max(_MARGIN_BANDS)))
    size = min(n, size, _band_rows(X, max_entries))
    near = np.argpartition(distance_to_one, size - 1)[:size] if size < n else np.arange(n)
    near = near[np.argsort(distance_to_one[near], kind="stable")]
    alpha = np.where(margins < 1.0, C, 0.0)
    alpha[near] = 0.0
    fixed_far = np.asarray(X.T @ (alpha * y)).ravel()
    rows = X[near]  # a new array (an index array selects them)
    if sp.issparse(rows):
        signed = sp.csr_array(rows.multiply(y[near, None]))
    else:
        signed = np.multiply(rows, y[near, None], out=rows)
    return margins, distance_to_one, near, alpha, fixed_far, signed


def _band_huber_path(X, y, C, w, max_iter, max_entries=_BAND_ENTRIES[-1]):
    """The Huber path of the problem restricted to the band of :func:`_margin_band`.

    The rows outside the band keep their side of the margin of ``w`` and enter
    as the fixed linear term ``-<fixed_far, theta>``; the Huber-smoothed hinges
    (widths :data:`_HUBER_PATH`, Newton's method, warm started) are minimised
    over the band's rows only, whose number does not grow with ``n``. The last
    point goes to :func:`_polish`, whose duality gap is over every row, so a row
    outside the band on the wrong side only costs a failed certificate. Returns
    the point and the Newton steps taken.
    """
    _, _, near, _, fixed_far, signed = _margin_band(X, y, C, w, max_entries)
    ones, linear = np.ones(signed.shape[0]), -fixed_far
    theta, n_iter = w, 0
    for width in _HUBER_PATH:
        loss, labels, scale = _huber(width, ones, _of_rows(C, near))
        result = newton_minimise(signed, labels, loss, C=scale, ridge=1.0,
                                 linear=linear, tol=1e-12 * (1.0 + np.linalg.norm(theta)),
                                 max_iter=min(max_iter, 30), theta0=theta, refine=False)
        theta, n_iter = result.theta, n_iter + result.n_iter
        if not result.converged:  # the narrower widths do not converge from here either
            break
    return theta, n_iter


def _polish_round(X, y, C, w, max_entries=_BAND_ENTRIES[-1]):
    """Candidate dual points from the margin partition of ``w``.

    Rows below the margin get ``alpha = C``, rows above it 0, and the first
    ``count`` rows nearest the margin the solution of :func:`_margin_dual`,
    for each count of :func:`_band_counts`; then the candidates of
    :func:`_active_set_steps` from the count of least bound. Only the rows of the
    band of :func:`_margin_band` (within ``max_entries``) vary between candidates,
    so a candidate's duality gap over those rows is a cheap lower bound of its full
    gap (every row's term is non-negative). Yields ``(lower_bound, theta, alpha)``
    with ``theta = X^T (alpha y)``; ``alpha`` is overwritten by the next candidate
    (copy it to keep it).
    """
    margins, distance_to_one, near, alpha, fixed_far, signed = _margin_band(X, y, C, w,
                                                                            max_entries)
    C = _of_rows(C, near)   # the band's bounds, in the band's order
    alpha_near = np.where(margins[near] < 1.0, C, 0.0)
    best_count, best_bound = None, np.inf
    for count in _band_counts(distance_to_one[near]):
        trial = alpha_near.copy()
        fixed = fixed_far + signed[count:].T @ trial[count:]
        trial[:count] = _margin_dual(signed[:count], _of_rows(C, slice(count)), fixed)
        theta = fixed + signed[:count].T @ trial[:count]
        alpha[near] = trial
        bound = _gap_from_slacks(1.0 - signed @ theta, trial, C)
        if bound < best_bound:
            best_count, best_bound = count, bound
        yield bound, theta, alpha
    if best_count is not None:
        yield from _active_set_steps(signed, C, fixed_far, alpha_near, best_count, near, alpha)


def _active_set_steps(signed, C, fixed_far, sides, count, near, alpha):
    """Candidates of :func:`_polish_round` by active-set steps on the band, from its
    first ``count`` rows held on the margin.

    A prefix of the band can hold rows that are near the margin without being on it
    (on KDDCup99, 13 distinct points spanning 12 dimensions): their equations are then
    inconsistent and no prefix certifies. Each step solves :func:`_margin_dual` for
    the rows held on the margin; those whose dual value lands on a bound leave the
    set (keeping that value), and the band's rows on the wrong side of the margin for
    their value (``C`` above it, 0 below) join it, the nearest :data:`_JOINING_ROWS`
    first. Stops when the set no longer changes, or after
    :data:`_ACTIVE_SET_STEPS` steps; the certificate judges each candidate.
    """
    trial, held = sides.copy(), np.arange(count)
    for _ in range(_ACTIVE_SET_STEPS):
        free = np.ones(trial.size, dtype=bool)
        free[held] = False
        fixed = fixed_far + signed[free].T @ trial[free]
        trial[held] = _margin_dual(signed[held], _of_rows(C, held), fixed)
        theta = fixed + signed[held].T @ trial[held]
        slack = 1.0 - signed @ theta
        alpha[near] = trial
        yield _gap_from_slacks(slack, trial, C), theta, alpha
        inside = held[(trial[held] > 0.0) & (trial[held] < _of_rows(C, held))]
        wrong = np.flatnonzero(free & (((trial >= C) & (slack < 0.0))
                                      | ((trial <= 0.0) & (slack > 0.0))))
        joining = wrong[np.argsort(np.abs(slack[wrong]), kind="stable")][:_JOINING_ROWS]
        next_held = np.union1d(inside, joining)
        if np.array_equal(next_held, held):
            return
        held = next_held


def _certify(X, y, C, theta, alpha, target_distance=np.inf):
    """Certified distance of ``theta``, ``X^T (alpha y)`` computed in float64, to the
    minimiser.

    With ``v = X^T (alpha y)`` exactly, ``P(theta) - D(alpha)`` is the sum of the
    Fenchel-Young terms (the ``gap`` computed here) plus ``||theta - v||^2 / 2``, so
    the distance is at most ``sqrt(2 gap) + ||theta - v||``. ``||theta - v||`` is
    estimated by ``n * eps * ||theta||`` (a sum of ``n`` terms), so that a gap at
    rounding level never certifies a distance of exactly zero; where that estimate,
    linear in ``n``, alone puts the distance above ``target_distance``, ``v`` is
    computed in double-double with a proven bound
    (:func:`~skdp.solvers._accurate.accurate_transpose_product`), which does not grow
    with ``n``. The rounding of the gap itself is out of scope.
    """
    gap = _gap_from_slacks(1.0 - y * np.asarray(X @ theta).ravel(), alpha, C)
    smooth = np.sqrt(2.0 * gap)
    estimate = X.shape[0] * np.finfo(float).eps * np.linalg.norm(theta)
    if not smooth <= target_distance < smooth + estimate:
        return smooth + estimate
    exact, bound = accurate_transpose_product(X, alpha * y, as_design(X).max_row_norm())
    return smooth + norm_above(dd.add_double(exact, -theta)) + bound


def _polish(X, y, C, w, best, target_distance, max_entries=_BAND_ENTRIES[-1]):
    """Polish from the margins of ``w`` over several bands and rounds; return the
    best certified ``(theta, distance)``, as soon as it meets the target. The band
    of near-margin rows holds at most ``max_entries`` entries.

    A candidate's full duality gap (one product with ``X``) is computed as
    soon as its lower bound could meet the target; otherwise only for the
    candidate of least lower bound, the start of the next round.
    """
    for _ in range(_POLISH_ROUNDS):  # re-partition from the best polished point
        previous = best[1]
        runner_up = (np.inf, None, None)
        for bound, theta, alpha in _polish_round(X, y, C, w, max_entries):
            bound_distance = np.sqrt(2.0 * bound)
            if bound_distance <= target_distance:
                distance = _certify(X, y, C, theta, alpha, target_distance)
                if distance < best[1]:
                    best = (theta, distance)
                    if distance <= target_distance:
                        return best
            elif bound_distance < runner_up[0]:
                runner_up = (bound_distance, theta, alpha.copy())
        if runner_up[0] < best[1]:
            distance = _certify(X, y, C, runner_up[1], runner_up[2], target_distance)
            if distance < best[1]:
                best = (runner_up[1], distance)
        if best[0] is None or best[1] >= previous:
            break
        w = best[0]
    return best


def _of_rows(C, rows):
    """The bounds ``C_i`` of some rows (``C`` itself when it is one number)."""
    return C if np.ndim(C) == 0 else C[rows]


def _huber(width, y, C):
    """The Huber-smoothed hinge of ``width`` for bounds ``C`` (one number, or one per
    row): ``(loss, targets, scale)`` for :func:`~skdp.solvers.newton_minimise`."""
    if np.ndim(C) == 0:
        return HuberHingeLoss(h=width), y, C
    return (WeightedLoss(HuberHingeLoss(h=width), float(np.max(C, initial=0.0))),
            weighted_targets(y, C), 1.0)


def _clipped_copy_needed(X):
    """Whether liblinear needs the clipped rows made explicit (a copy of X).

    liblinear only proposes a margin partition; the certificate is computed on the
    exact design (:func:`_certify`). So rows whose clipping factor is 1 to within
    :data:`_NEGLIGIBLE_CLIPPING` (rows of norm ``data_norm`` up to rounding) are given
    to liblinear as they are; a wrong partition would only cost more polishing.
    """
    return (isinstance(X, ScaledDesign) and X.scale is not None
            and X.scale.min() < 1.0 - _NEGLIGIBLE_CLIPPING)


def check_liblinear_memory(X):
    """Raise :class:`MemoryError`, from the shapes, when liblinear's input does not fit:
    the clipped rows made explicit (:func:`_clipped_copy_needed`) and liblinear's own
    copy (an index and a value per stored entry, and a terminator per row)."""
    n, d = X.shape
    if _clipped_copy_needed(X):  # a new value per stored entry of a sparse X
        check_allocation(8.0 * X.X.nnz if X.sparse else 8.0 * n * d,
                         "The clipped design (a copy of X)")
    stored = X.nnz if is_sparse(X) else n * d
    check_allocation(16.0 * (stored + 2 * n), "liblinear's copy of the design")


def _liblinear_input(X):
    """liblinear's rows and bias feature for the design ``X``.

    A :class:`~skdp.solvers._design.ScaledDesign`'s intercept column becomes
    liblinear's own bias feature (of the same value, penalised like the other
    coefficients, as in the design), so the rows are made explicit only where
    some are clipped by more than rounding; liblinear copies them into its own
    format in any case. Returns ``(rows, bias)``, ``bias`` ``None`` without one.
    """
    if not isinstance(X, ScaledDesign):
        return X, None
    if not _clipped_copy_needed(X):
        return X.X, X.intercept
    # a sparse design's values on X's index arrays; wide rows held apart included
    return X.clipped_rows(), X.intercept


def _liblinear_fit(rows, bias, y, C, tol, max_iter, weights=None):
    """liblinear's approximate minimiser on :func:`_liblinear_input`'s ``(rows, bias)``
    (with liblinear's per-row ``C weights_i`` when weighted): the coefficients of the
    design and liblinear's iteration count."""
    svc = LinearSVC(C=C, loss="hinge", dual=True, fit_intercept=bias is not None,
                    intercept_scaling=1.0 if bias is None else bias, tol=tol,
                    max_iter=max_iter, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        svc.fit(rows, y, sample_weight=weights)
    w = svc.coef_.ravel()
    if bias is not None:
        w = np.append(w, svc.intercept_[0] / bias)
    return w, int(svc.n_iter_)


@fill_doc(fragments=_HINGE_DOC)
def certified_hinge_minimiser(X, y, *, C, target_distance, max_iter, weights=None):
    """Minimise ``C sum_i w_i max(0, 1 - y_i <x_i, theta>) + 0.5 ||theta||^2`` with a
    certificate (``w_i = 1`` without ``weights``).

    liblinear's dual coordinate descent (scikit-learn's ``LinearSVC``) gives an
    approximate minimiser; a dual point is then rebuilt from its margin
    partition (KKT polishing, with active-set steps when no prefix of the rows
    nearest the margin certifies) and the returned ``theta`` is that dual point's
    primal image, whose duality gap bounds its distance to the exact minimiser
    by ``sqrt(2 gap)``. Tighter liblinear tolerances are tried until the
    certified distance is at most ``target_distance``. When a liblinear point's
    own partition does not certify, a path of Huber-smoothed hinges (width down
    to 1e-8, Newton's method, warm started) over the rows nearest its margin
    (:func:`_band_huber_path`) provides the partition before a tighter tolerance
    is tried; if liblinear stalls, the same path over every row. liblinear's
    coordinate order uses a fixed seed (public; it cannot move the result beyond
    the certificate).

    Parameters
    ----------
    %(hinge_problem)s
    target_distance : float
        The certified distance to reach.
    max_iter : int
        Iteration cap of each liblinear and Newton run.
    weights : ndarray of shape (n_samples,), default=None
        Non-negative row weights (the dual box becomes ``0 <= alpha_i <= C w_i``).

    Returns
    -------
    theta : ndarray of shape (n_coefficients,)
    certified_distance : float
    n_iter : int
    """
    check_liblinear_memory(X)
    best, n_iter = (None, np.inf), 0
    w = np.zeros(X.shape[1])
    liblinear_C = C
    if weights is not None:
        C = C * np.asarray(weights, dtype=float)
    # a declared class absent from the data leaves one label (and zero weights leave
    # no row): liblinear refuses it, the Huber path below does not
    one_label = np.all(y == y[0]) or not np.any(C > 0)
    rows, bias = _liblinear_input(X) if not one_label else (None, None)
    for liblinear_tol in () if one_label else _LIBLINEAR_TOLS:
        w, liblinear_iter = _liblinear_fit(rows, bias, y, liblinear_C, liblinear_tol, max_iter,
                                           weights)
        n_iter += liblinear_iter
        for max_entries in _band_caps(X):
            best = _polish(X, y, C, w, best, target_distance, max_entries)
            if best[1] <= target_distance:
                return best[0], float(best[1]), n_iter
            band_w, band_iter = _band_huber_path(X, y, C, w, max_iter, max_entries)
            n_iter += band_iter
            best = _polish(X, y, C, band_w, best, target_distance, max_entries)
            if best[1] <= target_distance:
                return best[0], float(best[1]), n_iter
        if liblinear_iter >= max_iter:  # liblinear stalls: tighter tolerances will not help
            break
    rows = None  # the Huber path reads the design itself
    zero = np.zeros(X.shape[1])
    for width in _HUBER_PATH:
        loss, targets, scale = _huber(width, y, C)
        result = newton_minimise(X, targets, loss, C=scale, ridge=1.0, linear=zero,
                                 tol=1e-12 * (1.0 + np.linalg.norm(w)),
                                 max_iter=min(max_iter, 30), theta0=w, refine=False)
        n_iter += result.n_iter
        w = result.theta
        best = _polish(X, y, C, w, best, target_distance)
        if best[1] <= target_distance:
            break
    if best[0] is None:  # every band was too large to polish: certify the crude dual point
        alpha = np.where(y * np.asarray(X @ w).ravel() < 1.0, C, 0.0)
        theta, gap = hinge_duality_gap(X, y, C, alpha)
        best = (theta, np.sqrt(2.0 * gap))
    return best[0], float(best[1]), n_iter
