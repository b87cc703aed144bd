"""Noisy weighted sums by cell: the one release behind every statistic.

Each row falls in one public cell ``k`` (a bin, a category, a class, or the single cell
of a whole-table statistic) and carries ``m`` values ``v_ij`` clipped into public
intervals ``[a_j, b_j]``, centred at ``c_j = (a_j + b_j) / 2`` with half-widths ``h_j``.
The release is, for each cell, the noisy total weight and the noisy centred sums::

    N_k = sum_{i in k} w_i + eta,   S_kj = sum_{i in k} w_i (v_ij - c_j) + eta.

A row's map ``phi_i`` has one non-zero block ``(1, v_i1 - c_1, ...)``, so
``||phi_i||_1 <= 1 + sum_j h_j`` and ``||phi_i||_2 <= sqrt(1 + sum_j h_j^2)``: times
``U`` (:func:`~skdp.stats._release.row_weights`) these are the sensitivities under
add/remove of a row or a person. A mean is read off as ``c_j + S_kj / N_k``: a ratio of
two noisy sums, never a division by an exact count.
"""

from dataclasses import dataclass

import numpy as np

from ._release import calibrate, check_budget, estimate, noisy_sums, ratio, row_weights


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
        The noise of each coordinate.
    epsilon, delta : float
        The budget spent.
    """

    noisy: np.ndarray
    n_values: int
    centres: np.ndarray
    law: object
    epsilon: float
    delta: float

    def table(self, flat):
        """``flat`` (the released vector, or a perturbed copy) as ``(n_cells, 1 + m)``."""
        return np.asarray(flat, dtype=float).reshape(-1, 1 + self.n_values)

    def weight(self, flat, cell):
        """The noisy total weight of a cell."""
        return self.table(flat)[cell, 0]

    def mean(self, flat, cell, column=0):
        """``c_j + S_kj / N_k``: the noisy weighted mean of a value in a cell."""
        rows = self.table(flat)
        return self.centres[column] + ratio(rows[cell, 1 + column], rows[cell, 0], self.law)

    def total(self, flat, cell, column=0):
        """``S_kj + c_j N_k``: the noisy weighted sum of a value in a cell."""
        rows = self.table(flat)
        return rows[cell, 1 + column] + self.centres[column] * rows[cell, 0]

    def estimate(self, function, bounds=(-np.inf, np.inf), noise_function=None):
        """The :class:`~skdp.stats.PrivateEstimate` of ``function(flat)``."""
        return estimate(function, self.noisy, self.law, self.epsilon, self.delta, bounds,
                        noise_function)


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
    law = calibrate(privacy.epsilon, privacy.delta, unit_bound * (1.0 + half.sum()),
                    unit_bound * np.sqrt(1.0 + np.sum(half ** 2)))
    return CellSums(noisy=noisy_sums(sums, law, privacy.random_state), n_values=len(centres),
                    centres=centres, law=law, epsilon=float(privacy.epsilon),
                    delta=float(privacy.delta))
