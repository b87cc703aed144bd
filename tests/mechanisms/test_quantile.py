"""The private quantile of the row norms (``data_norm="private"``): its exact output
distribution against an independent computation, and an exact audit of neighbouring
datasets."""

import math
from itertools import product

import numpy as np
import pytest
from numpy.testing import assert_allclose

from skdp.mechanisms import NORM_QUANTILE, NORM_RANGE, private_quantile, quantile_intervals
from skdp.utils._random import data_norm_generator

NORMS = np.array([0.3, 1.0, 1.0, 2.5, 4.0, 9.0, 40.0])
RANGE = (0.1, 100.0)


def _independent_intervals(norms, epsilon, quantile, norm_range):
    """The mechanism's pieces written out with Python loops, ``math.log`` and ``math.exp``:
    interval i lies between the i-th and (i+1)-th sorted log-norms, where i rows are
    at or below every point."""
    lo, hi = math.log(norm_range[0]), math.log(norm_range[1])
    cuts = [lo] + [min(max(math.log(r), lo), hi) for r in sorted(norms)] + [hi]
    n = len(norms)
    weights = [(cuts[i + 1] - cuts[i]) * math.exp(-epsilon * abs(i - quantile * n) / 2.0)
               for i in range(n + 1)]
    total = math.fsum(weights)
    return cuts, [w / total for w in weights]


def _independent_cdf(norms, epsilon, x, quantile=NORM_QUANTILE, norm_range=RANGE):
    """P(output <= x), integrating the piecewise constant log-density."""
    cuts, probabilities = _independent_intervals(norms, epsilon, quantile, norm_range)
    t = math.log(x)
    total = 0.0
    for i, p in enumerate(probabilities):
        if t >= cuts[i + 1]:
            total += p
        elif t > cuts[i]:
            total += p * (t - cuts[i]) / (cuts[i + 1] - cuts[i])
    return total


@pytest.mark.parametrize("epsilon", [0.05, 0.7, 3.0])
@pytest.mark.parametrize("norm_range", [RANGE, NORM_RANGE], ids=["small", "public"])
def test_pieces_are_the_exponential_mechanism(epsilon, norm_range):
    edges, p = quantile_intervals(NORMS, epsilon, norm_range=norm_range)
    cuts, expected = _independent_intervals(NORMS, epsilon, NORM_QUANTILE, norm_range)
    assert_allclose(edges, cuts, rtol=1e-15)
    assert_allclose(p, expected, rtol=1e-12, atol=0)


def test_norms_outside_the_range_move_to_its_ends():
    edges, p = quantile_intervals(np.array([0.0, 0.01, 5.0, np.inf]), 1.0, norm_range=RANGE)
    assert_allclose(np.exp(edges), [0.1, 0.1, 0.1, 5.0, 100.0, 100.0], rtol=1e-14)
    assert p[0] == p[1] == p[4] == 0.0


class _Uniforms:
    """A stand-in for a Generator whose ``random()`` returns given values."""

    def __init__(self, values):
        self.values = list(values)

    def random(self):
        return self.values.pop(0)


@pytest.mark.parametrize("u", [1e-9, 0.01, 0.2, 0.5, 0.77, 0.9, 0.999, 1 - 1e-12])
def test_sampler_inverts_the_distribution_function(u):
    x = private_quantile(NORMS, 0.7, _Uniforms([u]), norm_range=RANGE)
    assert RANGE[0] <= x <= RANGE[1]
    assert _independent_cdf(NORMS, 0.7, x) == pytest.approx(u, abs=1e-12)


def test_sampler_frequencies_follow_the_probabilities():
    """20,000 draws from the ChaCha20 stream (fixed seed), counted by interval: chi-square
    p-value above 1e-3."""
    from scipy.stats import chisquare

    rng = data_norm_generator(0)
    edges, p = quantile_intervals(NORMS, 0.7, norm_range=RANGE)
    draws = np.log([private_quantile(NORMS, 0.7, rng, norm_range=RANGE)
                    for _ in range(20_000)])
    counts = np.bincount(np.searchsorted(edges, draws, side="right") - 1, minlength=len(p))
    filled = p > 0
    assert counts[~filled].sum() == 0
    assert chisquare(counts[filled], 20_000 * p[filled]).pvalue > 1e-3


def test_infinite_epsilon_is_the_exact_quantile():
    # ceil(0.9 * 7) = 7: the largest norm; 0.5 * 7 -> the 4th
    assert private_quantile(NORMS, np.inf, None) == 40.0
    assert private_quantile(NORMS, np.inf, None, quantile=0.5) == 2.5


def _log_density(norms, epsilon, points, mechanism=quantile_intervals):
    edges, p = mechanism(norms, epsilon, norm_range=RANGE)
    index = np.searchsorted(edges, points, side="right") - 1
    return np.log(p[index] / np.diff(edges)[index])


def _worst_log_ratio(D, neighbours, epsilon, mechanism=quantile_intervals):
    """sup over outputs of |log f_D - log f_D'|: the densities are constant between the
    cuts of both datasets, so their midpoints cover every value."""
    worst = 0.0
    for D2 in neighbours:
        cuts = np.unique(np.log(np.clip(np.concatenate([D, D2, RANGE]), *RANGE)))
        points = 0.5 * (cuts[1:] + cuts[:-1])
        worst = max(worst, np.max(np.abs(_log_density(D, epsilon, points, mechanism)
                                         - _log_density(D2, epsilon, points, mechanism))))
    return worst


ADDED = [0.0, 0.05, 0.1, 0.3, 0.7, 1.0, 3.0, 20.0, 40.0, 99.0, 100.0, 1e3, np.inf]


def _neighbours(D):
    """Every row removed, a row added at many norms (inside, at and beyond the range's
    ends, ties included), and every row replaced by each of those."""
    add_remove = [np.delete(D, i) for i in range(len(D))] + [np.append(D, r) for r in ADDED]
    replace = [np.where(np.arange(len(D)) == i, r, D) for i, r in product(range(len(D)),
                                                                          ADDED)]
    return add_remove, replace


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 4.0])
def test_exact_audit_of_neighbouring_datasets(epsilon):
    """The output density moves by at most a factor e^epsilon between datasets one row
    apart (add/remove and replace), everywhere, computed exactly."""
    for neighbours in _neighbours(NORMS):
        worst = _worst_log_ratio(NORMS, neighbours, epsilon)
        assert worst <= epsilon * (1 + 1e-12)
        assert worst > 0.45 * epsilon   # 0.48 to 0.60 of epsilon here


def test_exact_audit_catches_a_mechanism_without_the_factor_two():
    def loose(norms, epsilon, norm_range):
        return quantile_intervals(norms, 2.0 * epsilon, norm_range=norm_range)

    add_remove, replace = _neighbours(NORMS)
    assert _worst_log_ratio(NORMS, add_remove + replace, 0.1, loose) > 0.1
