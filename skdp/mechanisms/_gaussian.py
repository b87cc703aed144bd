"""Isotropic Gaussian noise vectors."""

from dataclasses import dataclass

import numpy as np


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


def draw_gaussian(dim, rng):
    """Draw a ``dim``-dimensional standard normal vector.

    Parameters
    ----------
    dim : int
        Dimension of the vector.
    rng : numpy.random.Generator
        The noise stream.

    Returns
    -------
    draw : GaussianDraw
    """
    return GaussianDraw(z=rng.standard_normal(dim))


def sample_gaussian_vector(dim, scale, rng):
    """Sample ``N(0, scale**2 I_dim)``; ``scale=0`` gives the zero vector.

    Parameters
    ----------
    dim : int
        Dimension of the vector.
    scale : float
        The standard deviation.
    rng : numpy.random.Generator
        The noise stream.

    Returns
    -------
    noise : ndarray of shape (dim,)
    """
    return draw_gaussian(dim, rng).vector(scale)
