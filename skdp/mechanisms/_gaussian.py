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
