"""Vectors with density proportional to ``exp(-||b||_2 / scale)``."""

from dataclasses import dataclass

import numpy as np

from ..utils._docstrings import fill_doc


@dataclass(frozen=True)
class GammaNormDraw:
    """The standard draws behind a Gamma-norm vector.

    ``radius ~ Gamma(dim, 1)`` and ``direction`` uniform on the unit sphere, so
    ``scale * radius * direction`` has density proportional to
    ``exp(-||b|| / scale)``. Keeping the standard draws lets a caller rescale the
    same noise for another epsilon (common random numbers).

    Attributes
    ----------
    radius : float
        The ``Gamma(dim, 1)`` draw.
    direction : ndarray of shape (dim,)
        The unit direction.
    """

    radius: float
    direction: np.ndarray

    def vector(self, scale):
        """The noise vector for a given ``scale`` (= 1 / rate).

        Parameters
        ----------
        scale : float
            The scale ``1 / rate`` of the density.

        Returns
        -------
        noise : ndarray of shape (dim,)
        """
        return (scale * self.radius) * self.direction


@fill_doc
def draw_gamma_norm(dim, rng):
    """Draw the standard ingredients of a ``dim``-dimensional Gamma-norm vector.

    %(noise_draw_params)s

    Returns
    -------
    draw : GammaNormDraw
    """
    direction = rng.standard_normal(dim)
    direction /= np.linalg.norm(direction)
    return GammaNormDraw(radius=float(rng.gamma(shape=dim, scale=1.0)), direction=direction)
