"""Noisy weighted sums by cell: the one release behind every statistic.

Each row falls in one public cell ``k`` (a bin, a category, a class, or the single cell
of a whole-table statistic) and carries ``m`` values ``v_ij`` clipped into public
intervals ``[a_j, b_j]``, centred at ``c_j = (a_j + b_j) / 2`` with half-widths ``h_j``.
The release is, for each cell, the noisy total weight and the noisy centred sums::

    N_k = sum_{i in k} w_i + U eta_k0,   S_kj = sum_{i in k} w_i (v_ij - c_j) + U h_j eta_kj.

Each coordinate is noised on its own scale: the vector is divided by the public scales
``U (1, h_1, ..., h_m)`` (``U`` from :func:`~skdp.stats._release.row_weights`), where a
unit moves each coordinate by at most 1, so by at most ``1 + m`` in L1 and ``sqrt(1 + m)``
in L2 (a row is in one cell); i.i.d. noise ``eta`` calibrated to these is added and the
vector multiplied back. The budget is thus split equally over the ``1 + m`` coordinates
(``docs/privacy/metrics.rst`` derives why). A mean is read off as ``c_j + S_kj / N_k``: a
ratio of two noisy sums, never a division by an exact count.
"""

from dataclasses import dataclass

import numpy as np

from ._release import calibrate, check_budget, estimate, noisy_sums, ratio, row_weights

FIRST_ORDER_WEIGHT = 10.0
"""A mean's noise is stated to first order only when its noisy weight is at least this
many of its noise's standard deviations (below, ``noise_std`` is ``nan``)."""


@dataclass(frozen=True)
class Privacy:
    """The privacy parameters of one release, as the public functions take them.

    Parameters
    ----------
    epsilon, delta : float
        The budget.
    sample_weight, groups : array-like or None
        Row weights and persons.
    max_rows_per_group, max_sample_weight : float
        Their public bounds.
    random_state : None, int, RandomState or Generator
        Seed of the noise stream.
    """

    epsilon: float
    delta: float = 0.0
    sample_weight: object = None
    groups: object = None
    max_rows_per_group: float = 1.0
    max_sample_weight: float = 1.0
    random_state: object = None

    def __post_init__(self):
        check_budget(self.epsilon, self.delta)

    def weights(self, n_rows):
        """Each row's weight and the bound ``U`` on one unit's total weight."""
        return row_weights(n_rows, self.sample_weight, self.groups, self.max_sample_weight,
                           self.max_rows_per_group)


@dataclass(frozen=True)
class CellSums:
    """The released noisy sums of :func:`release_cells` (no exact count in it).

    Parameters
    ----------
    noisy : ndarray of shape (n_cells * (1 + m),)
        ``N_0, S_01, ..., S_0m, N_1, ...`` (cell-major).
    n_values : int
        ``m``.
    centres : ndarray of shape (m,)
        ``c_j``.
    law : NoiseLaw
        The standardised noise: coordinate ``(k, j)`` carries ``scales[j]`` times a draw.
    scales : ndarray of shape (1 + m,)
        The public scales ``U (1, h_1, ..., h_m)`` of one cell's coordinates.
    epsilon, delta : float
        The budget spent.
    """

    noisy: np.ndarray
    n_values: int
    centres: np.ndarray
    law: object
    scales: np.ndarray
    epsilon: float
    delta: float

    def noise_std(self, coordinate=0):
        """The standard deviation of a cell's noisy weight (``0``) or of its ``j``-th
        centred sum (``1 + j``): a public number."""
        return self.law.std * float(self.scales[coordinate])

    def table(self, flat):
        """``flat`` (the released vector, or a perturbed copy) as ``(n_cells, 1 + m)``."""
        return np.asarray(flat, dtype=float).reshape(-1, 1 + self.n_values)

    def weight(self, flat, cell):
        """The noisy total weight of a cell."""
        return self.table(flat)[cell, 0]

    def mean(self, flat, cell, column=0):
        """``c_j + S_kj / N_k``: the noisy weighted mean of a value in a cell."""
        rows = self.table(flat)
        return self.centres[column] + ratio(rows[cell, 1 + column], rows[cell, 0],
                                            self.noise_std())

    def total(self, flat, cell, column=0):
        """``S_kj + c_j N_k``: the noisy weighted sum of a value in a cell."""
        rows = self.table(flat)
        return rows[cell, 1 + column] + self.centres[column] * rows[cell, 0]

    def first_order(self, cells):
        """Whether every cell's noisy weight is at least ``FIRST_ORDER_WEIGHT`` of its
        noise's standard deviations (read from released values only)."""
        weights = self.table(self.noisy)[list(cells), 0]
        return bool(np.all(weights >= FIRST_ORDER_WEIGHT * self.noise_std()))

    def estimate(self, function, bounds=(-np.inf, np.inf), noise_function=None,
                 denominators=()):
        """The :class:`~skdp.stats.PrivateEstimate` of ``function(flat)``; its noise is
        stated to first order unless the weight of a cell in ``denominators`` is too
        small for it (:meth:`first_order`)."""
        return estimate(function, self.noisy, self.law, self.epsilon, self.delta, bounds,
                        noise_function, np.tile(self.scales, self.noisy.size // self.scales.size),
                        self.first_order(denominators))


def release_cells(cells, n_cells, privacy, values=None, bounds=()):
    """Release the noisy weights and centred sums of every cell.

    Parameters
    ----------
    cells : ndarray of shape (n_rows,), dtype=int
        Each row's cell, in ``0 .. n_cells - 1`` (from public bins or categories).
    n_cells : int
        The public number of cells.
    privacy : Privacy
        The budget, weights and persons.
    values : ndarray of shape (n_rows, m), default=None
        The rows' values (checked finite before), clipped here into ``bounds``.
    bounds : sequence of m pairs, default=()
        The public interval of each value.

    Returns
    -------
    sums : CellSums
    """
    cells = np.asarray(cells, dtype=np.intp)
    weights, unit_bound = privacy.weights(cells.shape[0])
    lower, upper = (np.array([b[k] for b in bounds], dtype=float).reshape(-1)
                    for k in (0, 1))
    centres, half = 0.5 * (lower + upper), 0.5 * (upper - lower)
    values = np.zeros((cells.shape[0], 0)) if values is None else np.asarray(
        values, dtype=float).reshape(cells.shape[0], -1)
    centred = np.clip(values, lower, upper) - centres
    block = np.column_stack([np.ones(cells.shape[0]), centred]) * weights[:, None]
    sums = np.column_stack([np.bincount(cells, weights=column, minlength=n_cells)
                            for column in block.T])
    scales = unit_bound * np.r_[1.0, half]
    law = calibrate(privacy.epsilon, privacy.delta, 1.0 + half.size, np.sqrt(1.0 + half.size))
    noisy = sums if law.law == "none" else scales * noisy_sums(
        sums / scales, law, privacy.random_state).reshape(sums.shape)
    return CellSums(noisy=noisy.ravel(), n_values=len(centres), centres=centres, law=law,
                    scales=scales, epsilon=float(privacy.epsilon), delta=float(privacy.delta))
