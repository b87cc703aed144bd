"""Isotropic Gaussian noise vectors."""

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class GaussianDraw:
    """A standard normal vector ``z``; the noise is ``scale * z``."""

    z: np.ndarray

    def vector(self, scale):
        """The noise vector for a given standard deviation ``scale``."""
        return scale * self.z


def draw_gaussian(dim, rng):
    """Draw a ``dim``-dimensional standard normal vector."""
    return GaussianDraw(z=rng.standard_normal(dim))


def sample_gaussian_vector(dim, scale, rng):
    """Sample ``N(0, scale**2 I_dim)``; ``scale=0`` gives the zero vector."""
    return draw_gaussian(dim, rng).vector(scale)
