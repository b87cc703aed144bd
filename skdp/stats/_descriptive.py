"""Private counts, bounded means, quantiles, histograms and cross-tables.

Each is one release of :func:`~skdp.stats._cells.release_cells` (the quantile: the
exponential mechanism of :mod:`skdp.stats._quantile`), under add/remove of a row or,
with ``groups``, of a person. Every bound, bin and category is public and given by the
caller; none is read from the rows. The derivations are in ``docs/privacy/metrics.rst``.
"""

from numbers import Integral, Real

import numpy as np
import pandas as pd

from ..utils._docstrings import fill_doc
from ..utils._random import noise_generator
from ._cells import Privacy, release_cells
from ._estimate import PrivateEstimate, PrivateEstimates
from ._quantile import sample_quantile
from ._release import PRIVACY_PARAMS, check_finite, check_lengths

COUNT_BOUNDS = (0.0, np.inf)


def check_bounds(bounds, name="bounds"):
    """``(lo, hi)`` as floats, refused unless finite with ``lo < hi``."""
    try:
        lo, hi = (float(b) for b in bounds)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a pair (lower, upper) of public numbers; got "
                         f"{bounds!r}.") from None
    if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
        raise ValueError(f"{name} must be finite with lower < upper; got {bounds!r}.")
    return lo, hi


def check_edges(bins, bounds):
    """Public bin edges from ``bins`` (an int with ``bounds``, or increasing edges)."""
    if isinstance(bins, Integral) and not isinstance(bins, bool):
        if bins < 1:
            raise ValueError(f"bins must be at least 1; got {bins!r}.")
        if bounds is None:
            raise ValueError("bins given as a number needs public bounds=(lower, upper) "
                             "(never read from the rows).")
        return np.linspace(*check_bounds(bounds), int(bins) + 1)
    edges = np.asarray(bins, dtype=float)
    if edges.ndim != 1 or edges.size < 2 or not np.all(np.isfinite(edges)) or np.any(
            np.diff(edges) <= 0):
        raise ValueError("bins must be a number of bins or at least two finite, strictly "
                         "increasing edges (no empty bin).")
    return edges


def bin_codes(values, edges, side="right"):
    """Each value's bin, values clipped into the edges: bins ``[a, b)`` with the last
    closed (``side="right"``, numpy's histogram), or ``(a, b]`` with the first closed
    (``side="left"``, scikit-learn's calibration curve)."""
    return np.searchsorted(edges[1:-1], np.clip(values, edges[0], edges[-1]), side=side)


def category_codes(values, categories, name="x"):
    """Each value's position among the public ``categories``; an undeclared value is
    refused by a message that names neither the value nor a count."""
    categories = list(categories)
    if len(categories) == 0 or len(set(categories)) != len(categories):
        raise ValueError(f"The categories of {name} must be a non-empty list of distinct "
                         "public values.")
    codes = pd.Index(categories, dtype=object).get_indexer(
        np.asarray(values, dtype=object).ravel())
    if np.any(codes < 0):
        raise ValueError(f"{name} holds a value that is not among its declared categories "
                         "(the value is not shown: it comes from the private rows); declare "
                         "every value it can take.")
    return codes.astype(np.intp)


def one_dimension(name, values):
    """``values`` as a 1-D array (one value per row), or refused."""
    values = np.asarray(values)
    if values.ndim == 2 and values.shape[1] == 1:
        values = values[:, 0]
    if values.ndim != 1:
        raise ValueError(f"{name} must be one value per row (a 1-D array).")
    return values


@fill_doc(fragments=PRIVACY_PARAMS)
def private_count(X, *, epsilon, where=None, delta=0.0, sample_weight=None, groups=None,
                  max_rows_per_group=1.0, max_sample_weight=1.0, random_state=None):
    """A private number of rows (with ``groups``, of persons weighted to at most ``M``).

    The weighted count plus Laplace noise of scale ``U / epsilon`` (``U`` the bound on
    one unit's weight), or Gaussian noise for ``delta > 0``; clipped at 0.

    Parameters
    ----------
    X : array-like of shape (n_samples, ...)
        The rows (only their number is read).
    %(epsilon)s
    where : array-like of bool of shape (n_samples,), default=None
        Count only the rows where it is true.
    %(delta)s
    %(sample_weight)s
    %(groups)s
    %(max_rows_per_group)s
    %(max_sample_weight)s
    %(random_state)s

    Returns
    -------
    count : PrivateEstimate

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.stats import private_count
    >>> float(private_count(np.zeros((50, 2)), epsilon=np.inf))
    50.0
    >>> round(private_count(np.zeros((50, 2)), epsilon=1.0, random_state=0).noise_std, 6)
    1.414214
    """
    privacy = Privacy(epsilon, delta, sample_weight, groups, max_rows_per_group,
                      max_sample_weight, random_state)
    n_rows = X.shape[0] if hasattr(X, "shape") else len(X)   # counted with noise only
    cells = np.ones(n_rows, dtype=np.intp)
    if where is not None:
        where = one_dimension("where", where)
        check_lengths(where, cells)
        if where.dtype != bool:
            raise ValueError("where must be a boolean mask, one value per row.")
        cells = where.astype(np.intp)
    sums = release_cells(cells, 2, privacy)
    return sums.estimate(lambda flat: sums.weight(flat, 1), COUNT_BOUNDS)


@fill_doc(fragments=PRIVACY_PARAMS)
def private_mean(x, *, bounds, epsilon, delta=0.0, sample_weight=None, groups=None,
                 max_rows_per_group=1.0, max_sample_weight=1.0, random_state=None):
    """A private weighted mean of values clipped into public bounds.

    A noisy centred sum over a noisy total weight (``docs/privacy/metrics.rst``): it
    never divides by an exact count.

    Parameters
    ----------
    x : array-like of shape (n_samples,)
        The values (finite).
    bounds : tuple of two floats
        Public ``(lower, upper)``; values are clipped into it (a per-row operation).
    %(epsilon)s
    %(delta)s
    %(sample_weight)s
    %(groups)s
    %(max_rows_per_group)s
    %(max_sample_weight)s
    %(random_state)s

    Returns
    -------
    mean : PrivateEstimate

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.stats import private_mean
    >>> float(private_mean(np.array([1.0, 2.0, 6.0]), bounds=(0, 10), epsilon=np.inf))
    3.0
    """
    privacy = Privacy(epsilon, delta, sample_weight, groups, max_rows_per_group,
                      max_sample_weight, random_state)
    x = check_finite("x", one_dimension("x", x))
    bounds = check_bounds(bounds)
    sums = release_cells(np.zeros(x.size, dtype=np.intp), 1, privacy, x[:, None], [bounds])
    return sums.estimate(lambda flat: sums.mean(flat, 0), bounds, denominators=[0])


@fill_doc(fragments=PRIVACY_PARAMS)
def private_quantile(x, quantile, *, bounds, epsilon, sample_weight=None, groups=None,
                     max_rows_per_group=1.0, max_sample_weight=1.0, random_state=None):
    """A private quantile by the exponential mechanism over public bounds (pure epsilon-DP).

    Its error depends on how the rows spread near the quantile, so no data-free noise
    law exists: ``noise_std`` is ``nan`` and ``conf_int`` is the whole of ``bounds``.

    Parameters
    ----------
    x : array-like of shape (n_samples,)
        The values (finite), clipped into ``bounds``.
    quantile : float
        In (0, 1).
    bounds : tuple of two floats
        The public range of the output.
    %(epsilon)s
    %(sample_weight)s
    %(groups)s
    %(max_rows_per_group)s
    %(max_sample_weight)s
    %(random_state)s

    Returns
    -------
    quantile : PrivateEstimate

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.stats import private_quantile
    >>> float(private_quantile(np.arange(1.0, 101.0), 0.5, bounds=(0, 100), epsilon=np.inf))
    50.0
    """
    privacy = Privacy(epsilon, 0.0, sample_weight, groups, max_rows_per_group,
                      max_sample_weight, random_state)
    if not isinstance(quantile, Real) or not 0.0 < quantile < 1.0:
        raise ValueError(f"quantile must lie in (0, 1); got {quantile!r}.")
    x = check_finite("x", one_dimension("x", x))
    bounds = check_bounds(bounds)
    weights, unit_bound = privacy.weights(x.size)
    rng = None if np.isinf(epsilon) else noise_generator(random_state)
    value = sample_quantile(x, weights, float(quantile), float(epsilon),
                            unit_bound * max(quantile, 1.0 - quantile), bounds, rng)
    return PrivateEstimate(value=value, noise_std=0.0 if np.isinf(epsilon) else np.nan,
                           epsilon=float(epsilon), delta=0.0, bounds=bounds)


@fill_doc(fragments=PRIVACY_PARAMS)
def private_histogram(x, *, epsilon, bins=None, bounds=None, categories=None, delta=0.0,
                      sample_weight=None, groups=None, max_rows_per_group=1.0,
                      max_sample_weight=1.0, random_state=None):
    """Private counts of public bins or categories (each clipped at 0).

    A row falls in one cell, so the vector of counts has sensitivity ``U`` in L1 and
    L2: each count gets noise of scale ``U / epsilon`` (parallel composition).

    Parameters
    ----------
    x : array-like of shape (n_samples,)
        The values.
    %(epsilon)s
    bins : int or array-like of edges, default=None
        Numeric bins (an int needs ``bounds``); values are clipped into the edges.
    bounds : tuple of two floats, default=None
        The public range of ``bins`` given as a number.
    categories : sequence, default=None
        Public categories instead of bins; an undeclared value is refused.
    %(delta)s
    %(sample_weight)s
    %(groups)s
    %(max_rows_per_group)s
    %(max_sample_weight)s
    %(random_state)s

    Returns
    -------
    counts : PrivateEstimates
        Labelled by category, or by each bin's ``(lower, upper)`` edges.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.stats import private_histogram
    >>> counts = private_histogram(np.array(["a", "b", "b"]), categories=["a", "b"],
    ...                            epsilon=np.inf)
    >>> counts.values.tolist()
    [1.0, 2.0]
    """
    privacy = Privacy(epsilon, delta, sample_weight, groups, max_rows_per_group,
                      max_sample_weight, random_state)
    x = one_dimension("x", x)
    if (categories is None) == (bins is None):
        raise ValueError("Give either public bins (with bounds) or public categories.")
    if categories is not None:
        codes, labels = category_codes(x, categories), tuple(categories)
    else:
        edges = check_edges(bins, bounds)
        codes = bin_codes(check_finite("x", x), edges)
        labels = tuple(zip(edges[:-1].tolist(), edges[1:].tolist()))
    return _counts(codes, len(labels), labels, privacy)


@fill_doc(fragments=PRIVACY_PARAMS)
def private_crosstab(a, b, *, categories, epsilon, delta=0.0, sample_weight=None,
                     groups=None, max_rows_per_group=1.0, max_sample_weight=1.0,
                     random_state=None):
    """Private counts of every pair of public categories (a histogram of the cells).

    Parameters
    ----------
    a, b : array-like of shape (n_samples,)
        The two categorical columns.
    categories : tuple of two sequences
        The public categories of ``a`` and of ``b``.
    %(epsilon)s
    %(delta)s
    %(sample_weight)s
    %(groups)s
    %(max_rows_per_group)s
    %(max_sample_weight)s
    %(random_state)s

    Returns
    -------
    counts : PrivateEstimates
        Labelled by ``(a_category, b_category)``; ``counts.to_series().unstack()`` is
        the table.

    Examples
    --------
    >>> from skdp.stats import private_crosstab
    >>> table = private_crosstab(["x", "y", "y"], [0, 1, 1], categories=(["x", "y"], [0, 1]),
    ...                          epsilon=float("inf"))
    >>> table.to_series().unstack().to_numpy().tolist()
    [[1.0, 0.0], [0.0, 2.0]]
    """
    privacy = Privacy(epsilon, delta, sample_weight, groups, max_rows_per_group,
                      max_sample_weight, random_state)
    first, second = (list(c) for c in categories)
    a, b = one_dimension("a", a), one_dimension("b", b)
    check_lengths(a, b)
    codes = category_codes(a, first, "a") * len(second) + category_codes(b, second, "b")
    labels = tuple((u, v) for u in first for v in second)
    return _counts(codes, len(labels), labels, privacy)


def _counts(codes, n_cells, labels, privacy):
    sums = release_cells(codes, n_cells, privacy)
    return PrivateEstimates(tuple(
        sums.estimate(lambda flat, k=k: sums.weight(flat, k), COUNT_BOUNDS)
        for k in range(n_cells)), labels)
