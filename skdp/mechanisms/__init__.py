"""Noise samplers. Each keeps its standard draws retrievable (common random numbers).

Floating-point attacks on samplers (Mironov 2012) are out of scope for this version.
"""

from ._approximate_minima import (COVER_EPSILON_SHARE, MAX_TOL, Budget, SolverCover,
                                  solver_cover, split_budget)
from ._gamma_norm import GammaNormDraw, draw_gamma_norm, sample_gamma_norm_vector
from ._gaussian import GaussianDraw, draw_gaussian, sample_gaussian_vector

__all__ = [
    "COVER_EPSILON_SHARE",
    "MAX_TOL",
    "Budget",
    "SolverCover",
    "GammaNormDraw",
    "GaussianDraw",
    "draw_gamma_norm",
    "draw_gaussian",
    "sample_gamma_norm_vector",
    "sample_gaussian_vector",
    "solver_cover",
    "split_budget",
]
