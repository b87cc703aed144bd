"""Oracles of output_perturbation.md 3.2 and dp_sgd_and_accounting.md 4-5."""

import numpy as np
import pytest

from skdp.accounting import (
    analytic_gaussian_sigma,
    analytic_gaussian_sigma_derivative,
    classical_gaussian_sigma,
    gaussian_delta,
    gaussian_epsilon,
    gdp_mu,
    gdp_mu_derivative,
)
from skdp.exceptions import PrivacyBudgetError

ANALYTIC = [  # epsilon, delta, analytic sigma, classical sigma, dsigma/depsilon (Delta = 1)
    (0.1, 1e-5, 30.749566, 48.448053, -280.740369),
    (0.5, 1e-6, 8.057618, 10.597605, -15.055817),
    (1.0, 1e-5, 3.730632, None, -3.397234),
    (4.0, 1e-5, 1.081162, None, -0.234682),
    (8.0, 1e-5, 0.600229, None, -0.062089),
]


@pytest.mark.parametrize("eps, delta, sigma, classical, dsigma", ANALYTIC)
def test_analytic_gaussian_oracles(eps, delta, sigma, classical, dsigma):
    got = analytic_gaussian_sigma(eps, delta, 1.0)
    assert got == pytest.approx(sigma, abs=1e-6)
    assert gaussian_delta(eps, 1.0 / got) <= delta
    assert gaussian_delta(eps, 1.0 / got) == pytest.approx(delta, rel=1e-9)
    assert analytic_gaussian_sigma_derivative(eps, delta, 1.0) == pytest.approx(dsigma, abs=1e-6)
    h = 1e-5 * eps
    fd = (analytic_gaussian_sigma(eps + h, delta, 1.0)
          - analytic_gaussian_sigma(eps - h, delta, 1.0)) / (2 * h)
    assert analytic_gaussian_sigma_derivative(eps, delta, 1.0) == pytest.approx(fd, rel=1e-6)
    assert analytic_gaussian_sigma(eps, delta, 2.5) == pytest.approx(2.5 * sigma, abs=3e-6)
    if classical is not None:
        assert classical_gaussian_sigma(eps, delta, 1.0) == pytest.approx(classical, abs=1e-6)
    else:
        with pytest.raises(PrivacyBudgetError, match="epsilon < 1"):
            classical_gaussian_sigma(eps, delta, 1.0)


@pytest.mark.parametrize("T, z, exact_eps", [(100, 10, 4.37718), (800, 50, 2.28839),
                                             (50, 5, 6.57297)])
def test_dp_gd_exact_gdp_composition(T, z, exact_eps):
    assert gaussian_epsilon(1e-5, np.sqrt(T) / z) == pytest.approx(exact_eps, abs=1e-5)


@pytest.mark.parametrize("eps, mu, dmu", [(0.5, 0.142211, 0.260855), (1.0, 0.268051, 0.244096),
                                          (3.0, 0.719117, 0.211218)])
def test_gdp_mu_and_derivative(eps, mu, dmu):
    assert gdp_mu(eps, 1e-5) == pytest.approx(mu, abs=1e-6)
    assert gdp_mu_derivative(eps, 1e-5) == pytest.approx(dmu, abs=1e-6)
    h = 1e-6
    fd = (gdp_mu(eps + h, 1e-5) - gdp_mu(eps - h, 1e-5)) / (2 * h)
    assert gdp_mu_derivative(eps, 1e-5) == pytest.approx(fd, rel=1e-6)


def test_profile_is_monotone_and_inverse_consistent():
    mus = [0.1, 0.5, 1.0, 3.0]
    deltas = [gaussian_delta(1.0, m) for m in mus]
    assert np.all(np.diff(deltas) > 0)
    for m in mus:
        eps = gaussian_epsilon(1e-6, m)
        assert gaussian_delta(eps, m) == pytest.approx(1e-6, rel=1e-6)
    assert analytic_gaussian_sigma(np.inf, 1e-5, 1.0) == 0.0
    with pytest.raises(PrivacyBudgetError, match="delta"):
        analytic_gaussian_sigma(1.0, 0.0, 1.0)
