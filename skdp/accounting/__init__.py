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

__all__ = [
    "analytic_gaussian_sigma",
    "analytic_gaussian_sigma_derivative",
    "classical_gaussian_sigma",
    "gaussian_delta",
    "gaussian_epsilon",
    "gdp_mu",
    "gdp_mu_derivative",
]
