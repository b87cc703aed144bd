"""Privacy accounting: plain, testable functions."""

from ._gaussian import (
    analytic_gaussian_sigma,
    analytic_gaussian_sigma_derivative,
    classical_gaussian_sigma,
    gaussian_delta,
    gaussian_epsilon,
    gdp_mu,
    gdp_mu_derivative,
)
from ._dpsgd import composed_mu, default_count_noise_std, dpsgd_delta, dpsgd_epsilon
from ._calibration import calibrate_noise_multiplier, noise_multiplier_derivative

__all__ = [
    "analytic_gaussian_sigma",
    "analytic_gaussian_sigma_derivative",
    "calibrate_noise_multiplier",
    "classical_gaussian_sigma",
    "composed_mu",
    "default_count_noise_std",
    "dpsgd_delta",
    "dpsgd_epsilon",
    "gaussian_delta",
    "gaussian_epsilon",
    "gdp_mu",
    "gdp_mu_derivative",
    "noise_multiplier_derivative",
]
