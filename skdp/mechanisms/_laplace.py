"""Coordinate-wise Laplace noise, and its noise reduction.

Noise reduction (Koufogiannis, Han & Pappas 2015; Ligett et al. 2017): a Laplace
vector at scale ``b1`` is moved to the smaller scale ``b2`` by the exact
conditional law of ``eta2`` given ``eta1`` under the coupling

    eta1 = eta2 + W,   W independent of eta2,
    W = 0 with probability (b2 / b1)**2, otherwise W ~ Laplace(b1),

which is a coupling because the characteristic functions multiply:
``1 / (1 + b1^2 t^2) = [1 / (1 + b2^2 t^2)] * [(b2/b1)^2 + (1 - (b2/b1)^2) / (1 + b1^2 t^2)]``.
So the noisier releases are the last one plus noise that does not depend on the
data: releasing the whole sequence costs what the last release costs.

The conditional law, with rates ``r1 = 1 / b1 < r2 = 1 / b2`` (Bayes on the coupling):

* ``eta2 = eta1`` with probability ``(r1 / r2) exp(-(r2 - r1) |eta1|)``;
* otherwise ``eta2`` has density proportional to ``exp(-r1 |eta1 - z| - r2 |z|)``,
  piecewise exponential with kinks at 0 and ``eta1``; it is sampled exactly by
  choosing a piece in proportion to its mass.
"""

from dataclasses import dataclass

import numpy as np

from ..utils._docstrings import fill_doc


@dataclass(frozen=True)
class LaplaceDraw:
    """The standard draws behind a coordinate-wise Laplace vector.

    Attributes
    ----------
    standard : ndarray of shape (dim,)
        Independent ``Laplace(0, 1)`` draws; ``scale * standard`` is the noise.
    """

    standard: np.ndarray

    def vector(self, scale):
        """The noise vector at ``scale`` (each coordinate ``Laplace(0, scale)``).

        Parameters
        ----------
        scale : float
            The Laplace scale.

        Returns
        -------
        noise : ndarray of shape (dim,)
        """
        return scale * self.standard


@fill_doc
def draw_laplace(dim, rng):
    """Draw the standard ingredients of a ``dim``-dimensional Laplace vector.

    %(noise_draw_params)s

    Returns
    -------
    draw : LaplaceDraw
    """
    return LaplaceDraw(standard=rng.laplace(size=dim))


@fill_doc
def reduce_laplace_noise(noise, scale, new_scale, rng):
    """Move Laplace noise at ``scale`` to ``new_scale <= scale`` by the exact conditional law.

    If ``noise`` has i.i.d. ``Laplace(0, scale)`` coordinates, the result has
    i.i.d. ``Laplace(0, new_scale)`` coordinates, and ``noise - result`` is
    independent of ``result`` (see the module docstring).

    %(noise_reduction_params)s

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.mechanisms import reduce_laplace_noise
    >>> rng = np.random.default_rng(0)
    >>> reduce_laplace_noise(rng.laplace(scale=2.0, size=3), 2.0, 1.0, rng).shape
    (3,)
    """
    if not 0 < new_scale <= scale:
        raise ValueError(f"Noise reduction needs 0 < new_scale <= scale; got {new_scale} "
                         f"and {scale}.")
    noise = np.asarray(noise, dtype=float)
    if new_scale == scale:
        return noise.copy()
    r1, r2 = 1.0 / scale, 1.0 / new_scale
    sign = np.where(noise < 0, -1.0, 1.0)
    a = np.abs(noise)  # by symmetry, sample for |eta1| and restore the sign
    gap = r2 - r1
    stay = rng.random(a.shape) < (r1 / r2) * np.exp(-gap * a)
    # masses of the three pieces (z < 0, 0 <= z <= a, z > a), up to exp(-r1 a)
    below = np.full_like(a, 1.0 / (r1 + r2))
    middle = -np.expm1(-gap * a) / gap
    above = np.exp(-gap * a) / (r1 + r2)
    pick = rng.random(a.shape) * (below + middle + above)
    tail = rng.exponential(1.0 / (r1 + r2), size=a.shape)
    u = rng.random(a.shape)
    inside = -np.log1p(u * np.expm1(-gap * a)) / gap  # truncated Exp(gap) on [0, a]
    z = np.where(pick < below, -tail, np.where(pick < below + middle, inside, a + tail))
    return sign * np.where(stay, a, z)
