"""A private quantile of the row norms: the exponential mechanism over a public range.

``data_norm="private"`` chooses the clipping bound with it. The output is a point of
the public range ``NORM_RANGE``, drawn with log-density proportional to
``exp(epsilon u(x) / 2)``, ``u(x) = -|#{i : norms_i <= x} - q n|`` (Smith 2011's
continuous exponential mechanism, in the logarithm of the norm). The derivation is
in ``docs/privacy/data_norm.rst``.
"""

import numpy as np

DATA_NORM_EPSILON_SHARE = 0.1
"""Share of a fit's epsilon that ``data_norm="private"`` spends on the bound; the
mechanism runs at the rest."""

NORM_RANGE = (2.0 ** -10, 2.0 ** 30)
"""The public range of a private row-norm bound, about 1e-3 to 1.1e9; norms outside it
are moved to its ends before the choice."""

NORM_QUANTILE = 0.9
"""The quantile of the row norms that ``data_norm="private"`` aims at: about a tenth of
the rows are clipped."""


def quantile_intervals(norms, epsilon, *, quantile=NORM_QUANTILE, norm_range=NORM_RANGE):
    """The pieces of the output's log-density: ``n + 1`` intervals and their probabilities.

    The sorted log-norms ``t_1 <= ... <= t_n`` (moved into the range) cut
    ``[log lo, log hi]`` into intervals ``[t_i, t_{i+1}]`` (``t_0 = log lo``, ``t_{n+1} =
    log hi``) on which ``u = -|i - quantile * n|`` is constant. An interval's
    probability is its length times ``exp(epsilon u / 2)``, normalised; inside it
    the log-norm is uniform. Adding or removing a row moves ``u`` at every point by at
    most ``max(quantile, 1 - quantile) <= 1``, so the output is epsilon-DP.

    Parameters
    ----------
    norms : ndarray of shape (n_samples,)
        The rows' L2 norms (``inf`` for a norm beyond float64's range).
    epsilon : float
        Budget of the choice, in (0, inf).
    quantile : float, default=NORM_QUANTILE
        Target quantile, in (0, 1).
    norm_range : tuple of two floats, default=NORM_RANGE
        The public range ``(lo, hi)``, ``0 < lo < hi < inf``.

    Returns
    -------
    edges : ndarray of shape (n_samples + 2,)
        ``t_0, ..., t_{n+1}`` (natural logarithms of norms).
    probabilities : ndarray of shape (n_samples + 1,)
        Probability of each interval (0 for an empty one).

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.mechanisms import quantile_intervals
    >>> edges, p = quantile_intervals(np.array([1.0, 2.0, 4.0]), 1.0, norm_range=(0.5, 8.0))
    >>> edges.shape, p.shape, bool(np.isclose(p.sum(), 1.0))
    ((5,), (4,), True)
    """
    lo, hi = np.log(norm_range[0]), np.log(norm_range[1])
    with np.errstate(divide="ignore"):
        inside = np.clip(np.log(np.sort(norms)), lo, hi)
    edges = np.concatenate([[lo], inside, [hi]])
    n = len(norms)
    scores = -np.abs(np.arange(n + 1) - quantile * n)
    weights = np.diff(edges) * np.exp(0.5 * epsilon * (scores - scores.max()))
    return edges, weights / weights.sum()


def private_quantile(norms, epsilon, rng, *, quantile=NORM_QUANTILE, norm_range=NORM_RANGE):
    """A draw of the mechanism of :func:`quantile_intervals`, by inversion of one uniform.

    ``epsilon = inf`` returns the ``quantile`` of the norms (the sorted norm at
    position ``ceil(quantile * n)``, moved into the range): no privacy, the baseline.

    Parameters
    ----------
    norms : ndarray of shape (n_samples,)
        The rows' L2 norms.
    epsilon : float
        Budget of the choice, in (0, inf].
    rng : numpy.random.Generator
        The noise stream (one uniform is drawn).
    quantile : float, default=NORM_QUANTILE
        Target quantile.
    norm_range : tuple of two floats, default=NORM_RANGE
        The public range.

    Returns
    -------
    norm : float
        The chosen bound, in ``norm_range``.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.mechanisms import private_quantile
    >>> private_quantile(np.arange(1.0, 11.0), np.inf, None)
    9.0
    """
    if np.isinf(epsilon):
        position = max(int(np.ceil(quantile * len(norms))) - 1, 0)
        return float(np.clip(np.sort(norms)[position], *norm_range))
    edges, probabilities = quantile_intervals(norms, epsilon, quantile=quantile,
                                              norm_range=norm_range)
    cumulative = np.cumsum(probabilities)
    u = rng.random() * cumulative[-1]
    index = min(int(np.searchsorted(cumulative, u, side="right")), len(probabilities) - 1)
    while probabilities[index] == 0.0:   # u at the top of an interval followed by empty ones
        index -= 1
    below = cumulative[index] - probabilities[index]
    fraction = min(max((u - below) / probabilities[index], 0.0), 1.0)
    log_norm = edges[index] + fraction * (edges[index + 1] - edges[index])
    return float(np.clip(np.exp(log_norm), *norm_range))
