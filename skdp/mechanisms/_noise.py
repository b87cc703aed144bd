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


def sample_noise_draws(law, draws, dim, scale, rng):
    """``draws`` independent noise vectors of a law at a scale, as rows (for
    simulations from the noise's known law, such as a parametric bootstrap; never
    for privacy noise, which :func:`draw_noise` draws).

    Parameters
    ----------
    law : {"gamma_norm", "gaussian", "laplace", "none"}
        As :func:`sample_noise`.
    draws, dim : int
        The number of vectors and their dimension.
    scale : float
    rng : numpy.random.Generator
        A stream of its own (public randomness).

    Returns
    -------
    noise : ndarray of shape (draws, dim)

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.mechanisms._noise import sample_noise_draws
    >>> sample_noise_draws("laplace", 4, 3, 1.0, np.random.default_rng(0)).shape
    (4, 3)
    """
    if law == "none" or scale == 0:
        return np.zeros((draws, dim))
    if law == "gaussian":
        return scale * rng.standard_normal((draws, dim))
    if law == "laplace":
        return rng.laplace(0.0, scale, (draws, dim))
    if law == "gamma_norm":
        directions = rng.standard_normal((draws, dim))
        directions /= np.linalg.norm(directions, axis=1, keepdims=True)
        return rng.gamma(dim, scale, (draws, 1)) * directions
    raise ValueError(f"Unknown noise law {law!r}.")
