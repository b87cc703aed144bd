"""Calibration of each mechanism's noise, and the noise samplers.

One module per mechanism's calibration (objective perturbation, output
perturbation, NAPP), the cover of a solver's error, and one :func:`draw_noise` for
every noise law. Each sampler keeps its standard draws retrievable (common random
numbers). Floating-point attacks on samplers (Mironov 2012) are out of scope.
"""

from ._approximate_minima import (COVER_EPSILON_SHARE, MAX_TOL, Budget, EpsilonDerivatives,
                                  SolverCover, solver_cover, split_budget)
from ._gamma_norm import GammaNormDraw, draw_gamma_norm
from ._gaussian import GaussianDraw, draw_gaussian, reduce_gaussian_noise
from ._laplace import LaplaceDraw, draw_laplace, reduce_laplace_noise
from ._noise import draw_noise, sample_noise
from ._output_perturbation import (OutputPertCalibration, minimiser_sensitivity,
                                   output_perturbation_calibration)
from ._quantile import (DATA_NORM_EPSILON_SHARE, NORM_QUANTILE, NORM_RANGE, private_quantile,
                        quantile_intervals)

__all__ = [
    "COVER_EPSILON_SHARE",
    "MAX_TOL",
    "DATA_NORM_EPSILON_SHARE",
    "NORM_QUANTILE",
    "NORM_RANGE",
    "Budget",
    "EpsilonDerivatives",
    "SolverCover",
    "GammaNormDraw",
    "GaussianDraw",
    "LaplaceDraw",
    "OutputPertCalibration",
    "draw_gamma_norm",
    "draw_gaussian",
    "draw_laplace",
    "draw_noise",
    "minimiser_sensitivity",
    "output_perturbation_calibration",
    "private_quantile",
    "quantile_intervals",
    "reduce_gaussian_noise",
    "reduce_laplace_noise",
    "sample_noise",
    "solver_cover",
    "split_budget",
]
