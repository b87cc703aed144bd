"""DP-SGD's intercept correction: a private start and a private Newton step on a binary
logistic intercept.

Clipping per-example gradients below their largest norm caps the residuals of the rows
the model gets most wrong (mostly the minority class), so DP-SGD's intercept settles
towards the majority class and the mean predicted probability below the base rate.
After the steps, :class:`InterceptCorrection` releases the two sums of the intercept's
Newton step at the released coefficients ``theta``,

    G = sum_i w_i (p_i - y_i),    H = sum_i w_i p_i (1 - p_i),

with Gaussian noise, and moves the intercept by ``-G_tilde / H_tilde`` (floored and
bounded by public constants): the intercept equation ``sum_i w_i (p_i - y_i) = 0`` of the
maximum-likelihood fit, which puts the mean predicted probability on the training rows
at the base rate, solved to first order. A row's pair ``(p_i - y_i, p_i (1 - p_i))``
has norm at most 1 (with ``a = |p_i - y_i|`` it is ``a^2 (1 + (1 - a)^2) <= 1``), times
its weight at most ``W``; with persons each person's summed pair is clipped to ``W``. So
the pair is a Gaussian mechanism of sensitivity ``W`` (add/remove one unit), whose noise
``N(0, sigma^2 I)`` is fixed by public parameters before the data are read.

Before the steps, :func:`start_intercept` starts the intercept at the logit of a
differentially private base rate: the sum over the units of their share of positive
rows (in [0, 1]: sensitivity 1), with Gaussian noise, over the DP unit count. Started at
zero, a short intercept column (``intercept_scaling``) moves the intercept slowly, and
the coefficients are fitted meanwhile against a wrong intercept.
"""

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from ..utils.validation import row_clip_factors

CURVATURE_FLOOR = 0.01
"""The noisy curvature ``H_tilde`` is taken to be at least this share of the DP unit count
(a mean ``p (1 - p)`` of 0.01): a noisy sum near zero cannot make a huge step."""

MAX_STEP = 1.0
"""The largest move of the intercept (in logits): a public trust region."""

RATE_BOUNDS = (0.01, 0.99)
"""The private base rate that starts the intercept is clipped into these bounds."""


def positive_shares(y, persons=None):
    """The sum over the units of their share of positive rows (``y`` the +-1 targets;
    a row is a unit, or each person's rows with ``persons``, integer codes)."""
    positive = (np.ravel(y) > 0).astype(float)
    if persons is None:
        return float(positive.sum())
    codes = np.unique(persons, return_inverse=True)[1].ravel()
    return float(np.sum(np.bincount(codes, weights=positive) / np.bincount(codes)))


def partition_positive_shares(design, y):
    """One partition's :func:`positive_shares` by rows (a kernel of ``reduce``)."""
    return np.array([positive_shares(y)])


def partition_person_positives(design, y, persons):
    """One partition's positive rows by person (a kernel of
    :meth:`~skdp.solvers._partitioned.PartitionedDesign.reduce_by_person`): ``(codes,
    counts)``, ``counts`` of shape ``(m, 1)``."""
    codes, inverse = np.unique(persons, return_inverse=True)
    positive = (np.ravel(y) > 0).astype(float)
    return codes, np.bincount(inverse.ravel(), weights=positive, minlength=codes.size)[:, None]


def person_positive_shares(positives, sizes):
    """The sum of whole persons' shares of positive rows, ``positives / sizes`` (as
    :func:`positive_shares`), shape ``(1,)``."""
    return np.array([np.sum(positives[:, 0] / sizes)])


def start_intercept(noisy_shares, n_tilde):
    """The intercept at the logit of the private base rate ``noisy_shares / n_tilde``,
    clipped into :data:`RATE_BOUNDS` (post-processing of two DP releases)."""
    rate = np.clip(noisy_shares / max(n_tilde, 1.0), *RATE_BOUNDS)
    return float(np.log(rate / (1.0 - rate)))


def _pairs(X, y, theta, weights):
    """Each row's weighted ``(p_i - y_i, p_i (1 - p_i))`` at ``theta`` (shape (n, 2)),
    with ``y`` the +-1 targets, and the scores' probabilities ``p``."""
    p = expit(np.asarray(X @ theta[0]).ravel())
    pairs = np.column_stack([p - (y > 0), p * (1.0 - p)])
    if weights is not None:
        pairs *= weights[:, None]
    return pairs, p


def intercept_statistics(X, y, theta, weights=None, persons=None, bound=1.0):
    """The sums ``(G, H)`` over the units, each unit's pair clipped to norm ``bound``.

    Parameters
    ----------
    X : ndarray, CSR matrix or ScaledDesign of shape (n, d)
        The clipped design, intercept column last.
    y : ndarray of shape (n,)
        The +-1 targets.
    theta : ndarray of shape (1, d)
        The released coefficients (design units).
    weights : ndarray of shape (n,), optional
        Row weights, already within ``[0, bound]``.
    persons : ndarray of shape (n,), optional
        Each row's person as integer codes: the person's rows' pairs are summed and
        the sum clipped to ``bound``.
    bound : float, default=1.0
        The sensitivity ``W`` (the weight bound).

    Returns
    -------
    sums : ndarray of shape (2,)
    """
    if persons is None:
        sums = np.zeros(2)
        for start, stop, block in _row_blocks(X):
            pairs, _ = _pairs(block, y[start:stop], theta,
                              None if weights is None else weights[start:stop])
            sums += row_clip_factors(np.hypot(pairs[:, 0], pairs[:, 1]), bound) @ pairs
        return sums
    codes = np.unique(persons, return_inverse=True)[1].ravel()
    return clipped_pairs_total(_pair_sums(X, y, theta, weights, codes), None, bound)


def _pair_sums(X, y, theta, weights, codes):
    """Each person's summed pair (``codes`` ``0 .. m - 1``, one per row): shape
    ``(m, 2)``."""
    pairs = np.zeros((int(codes.max()) + 1 if codes.size else 0, 2))
    for start, stop, block in _row_blocks(X):
        rows, _ = _pairs(block, y[start:stop], theta,
                         None if weights is None else weights[start:stop])
        for j in range(2):
            pairs[:, j] += np.bincount(codes[start:stop], weights=rows[:, j],
                                       minlength=pairs.shape[0])
    return pairs


def clipped_pairs_total(pairs, sizes, bound):
    """The sum of persons' summed pairs (rows of ``pairs``), each clipped to norm
    ``bound`` (``sizes``, their numbers of rows, are not needed)."""
    return row_clip_factors(np.hypot(pairs[:, 0], pairs[:, 1]), bound) @ pairs


_BLOCK_ROWS = 1 << 15


def _row_blocks(X):
    """``(start, stop, rows)`` over consecutive row blocks of ``X``: a design's own
    cache-sized blocks, else slices of ``_BLOCK_ROWS`` rows (the correction's pass
    then holds a block of values at a time, not vectors of every row)."""
    if hasattr(X, "blocks"):
        yield from X.blocks()
        return
    for start in range(0, X.shape[0], _BLOCK_ROWS):
        stop = min(start + _BLOCK_ROWS, X.shape[0])
        yield start, stop, X[start:stop]


def partition_intercept_statistics(design, y, theta, bound):
    """One partition's ``(G, H)`` by rows (a kernel of ``PartitionedDesign.reduce``)."""
    return intercept_statistics(design, np.ravel(y), theta, bound=bound)


def partition_person_pairs(design, y, persons, theta):
    """One partition's pairs summed by person (a kernel of
    :meth:`~skdp.solvers._partitioned.PartitionedDesign.reduce_by_person`, finished by
    :func:`clipped_pairs_total`): ``(codes, sums)``, ``sums`` of shape ``(m, 2)``."""
    codes, inverse = np.unique(persons, return_inverse=True)
    return codes, _pair_sums(design, np.ravel(y), theta, None, inverse.ravel())


@dataclass
class InterceptCorrection:
    """The public settings and the secret standard normals of one intercept correction.

    Transient (it holds noise): built by ``DPSGDClassifier._releases``, never stored on a
    fitted estimator.

    Parameters
    ----------
    noise_std : float
        ``sigma``, the standard deviation of the noise on each of ``G`` and ``H``.
    floor : float
        The least curvature: :data:`CURVATURE_FLOOR` times the DP unit count (at least 1).
    intercept_scaling : float
        The intercept column's value ``s``: the intercept is ``s theta[0, -1]``.
    normals : ndarray of shape (2,)
        The standard normals of the noise (from the fit's count stream).
    """

    noise_std: float
    floor: float
    intercept_scaling: float
    normals: np.ndarray

    def step(self, sums):
        """The intercept's move ``-G_tilde / max(H_tilde, floor)``, within
        ``[-MAX_STEP, MAX_STEP]``, and its derivative in ``(G, H)``."""
        g, h = np.asarray(sums, dtype=float) + self.noise_std * self.normals
        curvature = max(h, self.floor)
        move = -g / curvature
        if abs(move) >= MAX_STEP:
            return math.copysign(MAX_STEP, move), np.zeros(2)
        return move, np.array([-1.0 / curvature, g / h**2 if h > self.floor else 0.0])

    def apply(self, theta, sums):
        """``theta`` with its intercept coordinate moved by :meth:`step` (a copy)."""
        theta = np.array(theta, dtype=float)
        theta[0, -1] += self.step(sums)[0] / self.intercept_scaling
        return theta

    def tangent(self, X, y, theta, theta_dot, sums, weights=None):
        """Directional derivative of :meth:`apply` (rows, in memory, ``sums`` its
        statistics at ``theta``) along ``theta_dot``: no row's pair is clipped (each has
        norm at most its weight), so the sums are smooth in the scores."""
        _, gradient = self.step(sums)
        _, p = _pairs(X, y, theta, weights)
        curvature = p * (1.0 - p) * (1.0 if weights is None else weights)
        scores_dot = np.asarray(X @ theta_dot[0]).ravel()
        sums_dot = np.array([curvature @ scores_dot,
                             (curvature * (1.0 - 2.0 * p)) @ scores_dot])
        result = np.array(theta_dot, dtype=float)
        result[0, -1] += (gradient @ sums_dot) / self.intercept_scaling
        return result
