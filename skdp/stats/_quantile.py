"""A private quantile: the exponential mechanism over a public interval.

The sorted values (clipped into the public ``[lo, hi]``) cut it into intervals on which
the weight below a point, ``F(t) = sum_{x_i <= t} w_i``, is constant. The output has
density proportional to ``exp(epsilon u(t) / (2 Delta))`` with ``u(t) = -|F(t) - q
sum_i w_i|`` (Smith 2011): a unit of total weight ``<= U`` adds ``a <= b`` to ``F(t)``
and ``b <= U`` to the total, moving ``u`` by at most ``|a - q b| <= Delta = U max(q, 1 -
q)``, so the draw is epsilon-DP.
"""

import numpy as np


def quantile_pieces(values, weights, quantile, epsilon, sensitivity, bounds):
    """The intervals of the output's density and their probabilities.

    Parameters
    ----------
    values, weights : ndarray of shape (n_rows,)
        The rows' values (finite) and weights.
    quantile : float
        ``q`` in (0, 1).
    epsilon : float
        Budget, in (0, inf).
    sensitivity : float
        ``Delta``.
    bounds : tuple of two floats
        ``(lo, hi)``, public.

    Returns
    -------
    edges : ndarray of shape (n_rows + 2,)
    probabilities : ndarray of shape (n_rows + 1,)
    """
    order = np.argsort(values, kind="stable")
    inside = np.clip(np.asarray(values, dtype=float)[order], *bounds)
    below = np.concatenate([[0.0], np.cumsum(weights[order])])
    scores = -np.abs(below - quantile * below[-1])
    edges = np.concatenate([[bounds[0]], inside, [bounds[1]]])
    with np.errstate(divide="ignore"):
        log_mass = np.log(np.diff(edges)) + 0.5 * epsilon * scores / sensitivity
    mass = np.exp(log_mass - np.max(log_mass))
    return edges, mass / mass.sum()


def sample_quantile(values, weights, quantile, epsilon, sensitivity, bounds, rng):
    """One draw of the mechanism (``epsilon = inf``: the weighted quantile, no noise).

    Parameters
    ----------
    values, weights, quantile, epsilon, sensitivity, bounds
        As :func:`quantile_pieces`.
    rng : numpy.random.Generator or None
        The noise stream (unused at ``epsilon = inf``).

    Returns
    -------
    value : float
    """
    if np.isinf(epsilon):
        order = np.argsort(values, kind="stable")
        below = np.cumsum(weights[order])
        position = int(np.searchsorted(below, quantile * below[-1], side="left"))
        return float(np.clip(values[order][min(position, len(values) - 1)], *bounds))
    edges, probabilities = quantile_pieces(values, weights, quantile, epsilon, sensitivity,
                                           bounds)
    piece = int(rng.choice(probabilities.size, p=probabilities))
    return float(edges[piece] + rng.random() * (edges[piece + 1] - edges[piece]))
