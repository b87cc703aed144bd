"""How many records' largest contributions a noise vector outweighs, from public quantities.

A mechanism that releases (a function of) ``data term + b`` with one record's part of
the data term bounded by ``G`` in norm is dominated by its noise on any dataset of
``n`` records with ``n G`` below the norm of ``b``: whatever the records, their whole
term is shorter than the noise. The number of records at which that stops being
certain is a function of the noise's law, its dimension and its scale, and of ``G``:
public quantities only, never the rows or their number.
"""

import numpy as np
from scipy import stats

NOISE_FLOOR_CERTAINTY = 0.99
"""The probability with which the noise outweighs the data term of fewer records than
the noise floor."""


def noise_norm(law, dim, scale, certainty=None):
    """The mean norm of a noise vector, or the norm it exceeds with probability
    ``certainty``.

    Parameters
    ----------
    law : {"gamma_norm", "gaussian", "laplace", "none"}
        Gamma-norm: density proportional to ``exp(-||b|| / scale)`` (the norm is
        ``Gamma(dim, scale)``); Gaussian: ``N(0, scale**2 I)`` (``scale`` times a chi
        variable with ``dim`` degrees of freedom); Laplace: i.i.d. ``Laplace(0,
        scale)`` coordinates, whose L1 norm is ``Gamma(dim, scale)`` and at most
        ``sqrt(dim)`` times the L2 norm (so the quantile returned is a lower bound).
    dim : int
        Dimension of the noise vector.
    scale : float
        The law's scale.
    certainty : float or None, default=None
        ``None`` for the mean norm (Laplace: ``sqrt(2 dim) scale``, the root mean
        square); otherwise the lower ``1 - certainty`` quantile.

    Returns
    -------
    norm : float

    Examples
    --------
    >>> from skdp.mechanisms._dominance import noise_norm
    >>> round(noise_norm("gamma_norm", 10, 2.0), 6)
    20.0
    >>> round(noise_norm("gaussian", 4, 1.0, certainty=0.99), 4)
    0.5451
    """
    if law == "none":
        return 0.0
    if certainty is None:
        if law == "gaussian":
            return float(scale * stats.chi.mean(dim))
        return float(scale * (dim if law == "gamma_norm" else np.sqrt(2.0 * dim)))
    level = 1.0 - certainty
    if law == "gaussian":
        return float(scale * stats.chi.ppf(level, dim))
    norm = stats.gamma.ppf(level, dim, scale=scale)
    return float(norm if law == "gamma_norm" else norm / np.sqrt(dim))


def noise_floor(law, dim, scale, record_bound, certainty=NOISE_FLOOR_CERTAINTY):
    """The number of records whose largest contributions the noise outweighs.

    Parameters
    ----------
    law, dim, scale
        The noise vector's law, dimension and scale (:func:`noise_norm`).
    record_bound : float
        The largest norm one record (one person, with groups) adds to the term the
        noise is added to, in the noise's units.
    certainty : float, default=0.99
        With this probability the noise is longer than the term of every dataset of
        fewer records than the floor.

    Returns
    -------
    floor : float
        ``noise_norm(law, dim, scale, certainty) / record_bound``; 0 without noise.

    Examples
    --------
    >>> from skdp.mechanisms._dominance import noise_floor
    >>> noise_floor("none", 5, 1.0, 1.0)
    0.0
    """
    return noise_norm(law, dim, scale, certainty) / record_bound
