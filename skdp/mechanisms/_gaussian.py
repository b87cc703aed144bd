"""Isotropic Gaussian noise vectors."""

from dataclasses import dataclass

import numpy as np

from ..utils._docstrings import fill_doc


@dataclass(frozen=True)
class GaussianDraw:
    """A standard normal vector ``z``; the noise is ``scale * z``.

    Attributes
    ----------
    z : ndarray of shape (dim,)
        The standard normal draws.
    """

    z: np.ndarray

    def vector(self, scale):
        """The noise vector for a given standard deviation ``scale``.

        Parameters
        ----------
        scale : float
            The standard deviation.

        Returns
        -------
        noise : ndarray of shape (dim,)
        """
        return scale * self.z


@fill_doc
def draw_gaussian(dim, rng):
    """Draw a ``dim``-dimensional standard normal vector.

    %(noise_draw_params)s

    Returns
    -------
    draw : GaussianDraw
    """
    return GaussianDraw(z=rng.standard_normal(dim))


@fill_doc
def reduce_gaussian_noise(noise, scale, new_scale, rng):
    """Move Gaussian noise at standard deviation ``scale`` to ``new_scale <= scale``.

    The Brownian bridge: with ``s = scale^2`` and ``t = new_scale^2``, the noise is
    a Brownian motion ``B`` read at time ``s``, and ``B(t)`` given ``B(s)`` is
    ``N((t / s) B(s), t (s - t) / s I)``. The result has i.i.d. ``N(0, t)``
    coordinates, and ``noise - result`` (the increment ``B(s) - B(t)``) is
    independent of it: the noisier release is the new one plus noise that does not
    depend on the data (Whitehouse, Ramdas, Wu & Rogers, NeurIPS 2022).

    %(noise_reduction_params)s

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.mechanisms import reduce_gaussian_noise
    >>> rng = np.random.default_rng(0)
    >>> reduce_gaussian_noise(rng.normal(scale=2.0, size=3), 2.0, 1.0, rng).shape
    (3,)
    """
    if not 0 < new_scale <= scale:
        raise ValueError(f"Noise reduction needs 0 < new_scale <= scale; got {new_scale} "
                         f"and {scale}.")
    shrink = (new_scale / scale) ** 2
    return shrink * noise + new_scale * np.sqrt(1.0 - shrink) * rng.standard_normal(
        np.shape(noise))
