"""Statistical tests of the noise samplers (fixed seeds, principled tolerances)."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy import stats

from skdp.mechanisms import (
    draw_gamma_norm,
    draw_gaussian,
    sample_noise,
)

N_DRAWS = 20_000


def _gamma_norm_sample(dim, scale, seed=0):
    rng = np.random.default_rng(seed)
    return np.array([sample_noise("gamma_norm", dim, scale, rng) for _ in range(N_DRAWS)])


def test_gamma_norm_moments_match_spec():
    # spec objective_perturbation.md 8.7: d = 5, beta = 2 -> E||b|| = 2.5, Var = 1.25
    b = _gamma_norm_sample(5, 0.5)
    norms = np.linalg.norm(b, axis=1)
    assert abs(norms.mean() - 2.5) < 0.01 * 2.5
    assert abs(norms.var() - 1.25) < 0.03 * 1.25
    u = b / norms[:, None]
    assert np.all(np.abs(u.mean(axis=0)) < 0.02)
    assert_allclose((u**2).mean(axis=0), 1 / 5, atol=0.01)
    # E[b_j^2] = (d + 1) / beta^2 = 1.5; standard error of the mean of b_j^2 about 0.02
    assert_allclose((b**2).mean(axis=0), 1.5, rtol=0.06)


@pytest.mark.parametrize("dim, scale", [(1, 1.0), (3, 0.2), (20, 4.0)])
def test_gamma_norm_norm_follows_gamma_law(dim, scale):
    norms = np.linalg.norm(_gamma_norm_sample(dim, scale, seed=dim), axis=1)
    assert stats.kstest(norms, stats.gamma(a=dim, scale=scale).cdf).pvalue > 1e-3


def test_gamma_norm_direction_is_uniform():
    # the first coordinate of a uniform unit vector in R^3 is uniform on [-1, 1]
    b = _gamma_norm_sample(3, 1.0, seed=1)
    u1 = b[:, 0] / np.linalg.norm(b, axis=1)
    assert stats.kstest(u1, stats.uniform(loc=-1, scale=2).cdf).pvalue > 1e-3


def test_gaussian_vector_law():
    rng = np.random.default_rng(3)
    b = np.array([sample_noise("gaussian", 4, 2.5, rng) for _ in range(N_DRAWS)])
    # spec 8.8: per-coordinate std within 2 %
    assert_allclose(b.std(axis=0), 2.5, rtol=0.02)
    assert stats.kstest(b[:, 0] / 2.5, "norm").pvalue > 1e-3
    assert abs(np.corrcoef(b[:, 0], b[:, 1])[0, 1]) < 4 / np.sqrt(N_DRAWS)


def test_zero_scale_gives_zero_noise():
    rng = np.random.default_rng(0)
    assert not sample_noise("gamma_norm", 4, 0.0, rng).any()
    assert not sample_noise("gaussian", 4, 0.0, rng).any()


def test_standard_draws_are_retrievable_and_rescale():
    draw = draw_gamma_norm(6, np.random.default_rng(5))
    direct = sample_noise("gamma_norm", 6, 3.0, np.random.default_rng(5))
    assert_allclose(draw.vector(3.0), direct)
    assert_allclose(np.linalg.norm(draw.direction), 1.0)
    assert_allclose(np.linalg.norm(draw.vector(2.0)), 2.0 * draw.radius)
    gauss = draw_gaussian(6, np.random.default_rng(5))
    assert_allclose(gauss.vector(0.5), sample_noise("gaussian", 6, 0.5, np.random.default_rng(5)))


def test_same_seed_same_draw_other_seed_other_draw():
    a = sample_noise("gamma_norm", 5, 1.0, np.random.default_rng(11))
    b = sample_noise("gamma_norm", 5, 1.0, np.random.default_rng(11))
    c = sample_noise("gamma_norm", 5, 1.0, np.random.default_rng(12))
    assert_allclose(a, b)
    assert not np.allclose(a, c)
