"""Statistical tests of the noise samplers (fixed seeds, principled tolerances)."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy import stats

from skdp.mechanisms import (
    draw_gamma_norm,
    draw_gaussian,
    reduce_gaussian_noise,
    reduce_laplace_noise,
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


# -- Laplace noise reduction -------------------------------------------------------------

def _scaled_reduction(noise, scale, new_scale, rng):
    """The planted bug: rescale the same draw (common random numbers). Its marginal
    is right, but the noisier release then reveals the later one's noise."""
    return noise * (new_scale / scale)


@pytest.mark.parametrize("reduce, coupled", [(reduce_laplace_noise, True),
                                             (_scaled_reduction, False)])
@pytest.mark.parametrize("scale, new_scale", [(2.0, 1.0), (1.0, 0.3)])
def test_noise_reduction_is_the_gradual_release_coupling(reduce, coupled, scale, new_scale):
    """``eta1 = eta2 + W`` with ``W`` independent of ``eta2``: 0 with probability
    ``(b2 / b1)^2``, else Laplace(b1) (the coupling of Koufogiannis et al.)."""
    rng = np.random.default_rng(7)
    eta1 = rng.laplace(scale=scale, size=N_DRAWS)
    eta2 = reduce(eta1, scale, new_scale, rng)
    assert stats.kstest(eta2 / new_scale, "laplace").pvalue > 1e-3  # both get this right
    w = eta1 - eta2
    stay = w == 0
    checks = [stats.binomtest(stay.sum(), N_DRAWS, (new_scale / scale) ** 2).pvalue,
              stats.kstest(w[~stay] / scale, "laplace").pvalue,
              stats.spearmanr(np.abs(w), np.abs(eta2)).pvalue]
    assert (min(checks) > 1e-3) == coupled


@pytest.mark.parametrize("reduce, law, seed", [(reduce_laplace_noise, "laplace", 3),
                                               (reduce_gaussian_noise, "norm", 5)])
def test_noise_reduction_chain_keeps_the_law(reduce, law, seed):
    rng = np.random.default_rng(seed)
    noise, scale = getattr(stats, law).rvs(scale=3.0, size=N_DRAWS, random_state=rng), 3.0
    for new_scale in (2.0, 1.5, 0.7, 0.2):
        noise, scale = reduce(noise, scale, new_scale, rng), new_scale
    assert stats.kstest(noise / scale, law).pvalue > 1e-3
    assert np.array_equal(reduce(noise, scale, scale, rng), noise)
    with pytest.raises(ValueError, match="new_scale <= scale"):
        reduce(noise, 1.0, 2.0, rng)


# -- Gaussian noise reduction (Brownian bridge) -------------------------------------------

@pytest.mark.parametrize("reduce, coupled", [(reduce_gaussian_noise, True),
                                             (_scaled_reduction, False)])
@pytest.mark.parametrize("scale, new_scale", [(2.0, 1.0), (1.0, 0.3)])
def test_gaussian_noise_reduction_is_the_brownian_bridge(reduce, coupled, scale, new_scale):
    """``eta1 = eta2 + W``: ``eta2 ~ N(0, b2^2)``, ``W ~ N(0, b1^2 - b2^2)`` independent of
    ``eta2`` (Brownian motion read at times ``b2^2 < b1^2``)."""
    rng = np.random.default_rng(11)
    eta1 = rng.normal(scale=scale, size=N_DRAWS)
    eta2 = reduce(eta1, scale, new_scale, rng)
    assert stats.kstest(eta2 / new_scale, "norm").pvalue > 1e-3  # both get this right
    w = eta1 - eta2
    checks = [stats.kstest(w / np.sqrt(scale**2 - new_scale**2), "norm").pvalue,
              stats.pearsonr(w, eta2).pvalue]
    assert (min(checks) > 1e-3) == coupled
