"""The standard draws of every noise law, from one entry point."""

import numpy as np

from ._gamma_norm import draw_gamma_norm
from ._gaussian import draw_gaussian
from ._laplace import draw_laplace

_DRAWS = {"gamma_norm": draw_gamma_norm, "gaussian": draw_gaussian, "laplace": draw_laplace}


def draw_noise(law, dim, rng):
    """The standard draws of one noise vector of a calibration's law.

    Parameters
    ----------
    law : {"gamma_norm", "gaussian", "laplace", "none"}
        The ``noise`` of a calibration record.
    dim : int
        Dimension of the noise vector.
    rng : numpy.random.Generator
        The noise stream.

    Returns
    -------
    draw : GammaNormDraw, GaussianDraw, LaplaceDraw or None
        ``None`` for ``"none"`` (no noise, nothing drawn); otherwise the
        standard draws, whose ``vector(scale)`` is the noise at a given scale.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.mechanisms import draw_noise
    >>> draw = draw_noise("gaussian", 3, np.random.default_rng(0))
    >>> draw.vector(2.0).shape, draw_noise("none", 3, None)
    ((3,), None)
    """
    if law == "none":
        return None
    return _DRAWS[law](dim, rng)


def sample_noise(law, dim, scale, rng):
    """One noise vector of a law at a scale (the standard draws are not kept).

    Parameters
    ----------
    law : {"gamma_norm", "gaussian", "laplace", "none"}
        Gamma-norm: density proportional to ``exp(-||b|| / scale)``; Gaussian:
        ``N(0, scale**2 I)``; Laplace: i.i.d. ``Laplace(0, scale)`` coordinates.
    dim : int
        Dimension of the vector.
    scale : float
        The scale of the law; ``0`` gives the zero vector.
    rng : numpy.random.Generator
        The noise stream.

    Returns
    -------
    noise : ndarray of shape (dim,)
    """
    draw = draw_noise(law, dim, rng)
    return np.zeros(dim) if draw is None else draw.vector(scale)
