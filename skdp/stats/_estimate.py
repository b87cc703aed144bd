"""What a private statistic releases: a value, the law of its noise, an interval.

Every statistic of :mod:`skdp.stats` and :mod:`skdp.metrics` is a function ``f`` of a
vector of noisy sums ``s + a * eta`` (``eta`` i.i.d. Laplace or Gaussian, :class:`NoiseLaw`,
and ``a`` each coordinate's public scale). Its noise is stated to first order: ``f(s + a
* eta) - f(s) ~ (g * a) . eta`` with ``g`` the gradient of ``f`` at the released vector.
``g`` is computed from released values only (post-processing), so stating it costs no
privacy; it is exact for a sum (a count, a histogram bin) and accurate for a ratio when
its noisy denominator is large next to the noise (a mean states ``nan`` when it is not).
"""

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.special import ndtri

INTERVAL_DRAWS = 10_000
"""Draws of the Monte Carlo quantile of a combination of several Laplace variables."""

_INTERVAL_SEED = 20_251_202
"""A public constant: the Monte Carlo quantile is a fixed function of the released values."""


@dataclass(frozen=True)
class NoiseLaw:
    """The law of each coordinate of a noise vector.

    Parameters
    ----------
    law : {"laplace", "gaussian", "none"}
        ``Laplace(0, scale)``, ``N(0, scale**2)`` or no noise.
    scale : float
        The Laplace scale ``b`` or the Gaussian standard deviation.

    Examples
    --------
    >>> from skdp.stats import NoiseLaw
    >>> NoiseLaw("laplace", 2.0).std
    2.8284271247461903
    """

    law: str
    scale: float

    @property
    def std(self):
        """Standard deviation of one coordinate."""
        return float(self.scale * np.sqrt(2.0)) if self.law == "laplace" else float(self.scale)

    def sample(self, size, rng):
        """``size`` independent draws (zeros for ``"none"``, and nothing drawn).

        Parameters
        ----------
        size : int
            Number of coordinates.
        rng : numpy.random.Generator
            The noise stream.

        Returns
        -------
        noise : ndarray of shape (size,)
        """
        if self.law == "laplace":
            return rng.laplace(scale=self.scale, size=size)
        if self.law == "gaussian":
            return rng.normal(scale=self.scale, size=size)
        return np.zeros(size)

    def half_width(self, weights, level):
        """The ``q`` with ``P(|weights . eta| <= q) = level``.

        Exact for Gaussian noise and for one Laplace coordinate
        (``b |g| log(1 / (1 - level))``); a Monte Carlo quantile over
        ``INTERVAL_DRAWS`` draws of a public seed for several Laplace coordinates.

        Parameters
        ----------
        weights : ndarray of shape (k,)
            The gradient ``g``.
        level : float
            Coverage, in (0, 1).

        Returns
        -------
        q : float
        """
        weights = np.asarray(weights, dtype=float)
        weights = weights[weights != 0.0]
        if self.law == "none" or weights.size == 0:
            return 0.0
        if self.law == "gaussian":
            return float(self.scale * np.linalg.norm(weights) * ndtri(0.5 + 0.5 * level))
        if weights.size == 1:
            return float(self.scale * abs(weights[0]) * np.log(1.0 / (1.0 - level)))
        draws = np.random.default_rng(_INTERVAL_SEED).laplace(
            scale=self.scale, size=(INTERVAL_DRAWS, weights.size))
        return float(np.quantile(np.abs(draws @ weights), level))


@dataclass(frozen=True)
class PrivateEstimate:
    """A differentially private number and the law of its noise.

    It converts with ``float()``. It holds released values only: the estimate, its
    noise's standard deviation, the budget, and what :meth:`conf_int` needs (the law
    of the noise and the estimate's gradient in the released sums). It never holds a
    count of the private rows.

    Parameters
    ----------
    value : float
        The released estimate.
    noise_std : float
        Standard deviation of the noise in ``value`` (first order, see
        :mod:`skdp.stats`); ``nan`` where no data-free statement exists.
    epsilon : float
        The budget this release spent.
    delta : float
        Its ``delta``.
    bounds : tuple of two floats, default=(-inf, inf)
        The range of the statistic; ``value`` and the interval lie in it.
    noise_law : NoiseLaw or None, default=None
        The law of the standardised noise ``eta`` (each sum carries its public scale
        times a draw).
    noise_weights : tuple of float, default=()
        The gradient of the estimate in the noisy sums times each sum's scale: the
        estimate's noise is ``noise_weights . eta`` to first order.

    Examples
    --------
    >>> from skdp.stats import NoiseLaw, PrivateEstimate
    >>> estimate = PrivateEstimate(0.8, 0.01, 1.0, 0.0, (0.0, 1.0),
    ...                            NoiseLaw("gaussian", 0.01), (1.0,))
    >>> float(estimate), [round(v, 3) for v in estimate.conf_int(0.05)]
    (0.8, [0.78, 0.82])
    """

    value: float
    noise_std: float
    epsilon: float
    delta: float
    bounds: tuple = (-np.inf, np.inf)
    noise_law: NoiseLaw = field(default=None, repr=False)
    noise_weights: tuple = field(default=(), repr=False)

    def __float__(self):
        return float(self.value)

    def conf_int(self, alpha=0.05):
        """An interval that holds the noise-free statistic with probability ``1 - alpha``
        over the noise (to first order; exact for a sum), clipped to ``bounds``.

        It covers the noise only, not the sampling of the rows.

        Parameters
        ----------
        alpha : float, default=0.05
            One minus the coverage, in (0, 1).

        Returns
        -------
        interval : tuple of two floats
        """
        if not 0.0 < alpha < 1.0:
            raise ValueError(f"alpha must lie in (0, 1); got {alpha!r}.")
        if self.noise_law is None:
            return (float(self.bounds[0]), float(self.bounds[1]))
        q = self.noise_law.half_width(self.noise_weights, 1.0 - alpha)
        return (float(max(self.value - q, self.bounds[0])),
                float(min(self.value + q, self.bounds[1])))


@dataclass(frozen=True)
class PrivateEstimates:
    """Several :class:`PrivateEstimate` with labels (bins, categories, cells).

    Parameters
    ----------
    estimates : tuple of PrivateEstimate
        One per label.
    labels : tuple
        The public labels (bin edges, categories, or pairs of categories).

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.stats import NoiseLaw, PrivateEstimate, PrivateEstimates
    >>> law = NoiseLaw("laplace", 1.0)
    >>> counts = PrivateEstimates(tuple(PrivateEstimate(v, law.std, 1.0, 0.0, (0.0, np.inf),
    ...                                                 law, (1.0,)) for v in (3.0, 5.0)),
    ...                           ("a", "b"))
    >>> counts.values.tolist(), float(counts.to_series()["b"])
    ([3.0, 5.0], 5.0)
    """

    estimates: tuple
    labels: tuple

    def __len__(self):
        return len(self.estimates)

    def __getitem__(self, position):
        return self.estimates[position]

    def __iter__(self):
        return iter(self.estimates)

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.values, dtype=dtype)

    @property
    def values(self):
        """The released values, an ndarray."""
        return np.array([e.value for e in self.estimates], dtype=float)

    @property
    def noise_std(self):
        """Each value's noise standard deviation, an ndarray."""
        return np.array([e.noise_std for e in self.estimates], dtype=float)

    def conf_int(self, alpha=0.05):
        """Each value's :meth:`PrivateEstimate.conf_int` (each at ``1 - alpha``, not jointly).

        Parameters
        ----------
        alpha : float, default=0.05
            One minus each interval's coverage.

        Returns
        -------
        lower, upper : ndarray
        """
        intervals = np.array([e.conf_int(alpha) for e in self.estimates], dtype=float)
        return intervals[:, 0], intervals[:, 1]

    def to_series(self):
        """The values as a pandas Series indexed by the labels (a MultiIndex for pairs).

        Returns
        -------
        series : pandas.Series
        """
        index = (pd.MultiIndex.from_tuples(self.labels)
                 if self.labels and isinstance(self.labels[0], tuple)
                 else pd.Index(self.labels))
        return pd.Series(self.values, index=index)
