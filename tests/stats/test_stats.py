"""Private descriptive statistics: exact values at epsilon=inf, sensitivity by replay on
neighbouring rows and persons, the quantile's exact density and privacy loss, the
coverage of a count's interval, refusals before any noise, and the Table 1."""

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose
from scipy.stats import binom, kstest

import skdp.stats._release as release_module
from skdp.stats import (describe, private_count, private_crosstab, private_histogram,
                        private_mean, private_quantile)
from skdp.stats._quantile import quantile_pieces, sample_quantile


def test_infinite_epsilon_is_the_exact_statistic():
    rng = np.random.default_rng(0)
    x, w = rng.uniform(0, 10, 300), rng.uniform(0, 1, 300)
    cats = rng.choice(["a", "b", "c"], 300)
    assert float(private_count(x, epsilon=np.inf)) == 300
    assert float(private_count(x, where=x > 5, epsilon=np.inf)) == np.sum(x > 5)
    assert_allclose(float(private_mean(x, bounds=(0, 10), epsilon=np.inf, sample_weight=w)),
                    np.average(x, weights=w), rtol=1e-12)
    assert float(private_quantile(x, 0.3, bounds=(0, 10), epsilon=np.inf)) == np.quantile(
        x, 0.3, method="inverted_cdf")
    counts = private_histogram(x, bins=5, bounds=(0, 10), epsilon=np.inf)
    assert_allclose(counts.values, np.histogram(x, bins=5, range=(0, 10))[0])
    counts = private_histogram(cats, categories=["a", "b", "c", "d"], epsilon=np.inf)
    assert_allclose(counts.values, [np.sum(cats == c) for c in "abcd"])
    table = private_crosstab(cats, x > 5, categories=("abc", [False, True]), epsilon=np.inf)
    assert_allclose(table.to_series().unstack().to_numpy(),
                    pd.crosstab(cats, x > 5).to_numpy())


def test_persons_weigh_one_each_by_default():
    groups = np.array([0, 0, 0, 1, 2, 2])
    x = np.array([1.0, 1.0, 1.0, 4.0, 7.0, 7.0])
    assert float(private_count(x, groups=groups, epsilon=np.inf)) == pytest.approx(3.0)
    assert float(private_mean(x, bounds=(0, 10), groups=groups, epsilon=np.inf)) == \
        pytest.approx(4.0)


STATISTICS = {   # statistic, the L1 norm of a worst row's block divided by U (1, h_1, ...)
    "count": (lambda x, **kw: private_count(x, **kw), 1.0),
    "mean": (lambda x, **kw: private_mean(x, bounds=(-1, 3), **kw), 2.0),
    "histogram": (lambda x, **kw: private_histogram(x, bins=4, bounds=(-1, 3), **kw), 1.0),
    "crosstab": (lambda x, **kw: private_crosstab(x > 0, x > 1, categories=(
        [False, True], [False, True]), **kw), 1.0),
}


@pytest.mark.parametrize("persons", [False, True], ids=["rows", "persons"])
@pytest.mark.parametrize("name", sorted(STATISTICS))
def test_replay_on_neighbours_bounds_the_privacy_loss(name, persons, releases):
    statistic, worst_l1 = STATISTICS[name]
    x = np.r_[np.random.default_rng(0).uniform(-1, 3, 30), 9.0, 9.0, 9.0]  # clipped to 3
    groups = np.r_[np.arange(30) // 3, 50, 50, 50] if persons else None
    drop = 30 if persons else 32
    statistic(x, epsilon=0.5, groups=groups, random_state=2)
    statistic(x[:drop], epsilon=0.5, groups=None if groups is None else groups[:drop],
              random_state=2)
    (s, law, noisy), (s_minus, _, noisy_minus) = releases
    assert_allclose(noisy - noisy_minus, s - s_minus, atol=1e-9)
    assert_allclose(np.abs(s - s_minus).sum(), worst_l1, rtol=1e-9)
    # the worst neighbour's Laplace privacy loss is exactly epsilon: calibrated, not loose
    assert_allclose(np.abs(s - s_minus).sum() / law.scale, 0.5, rtol=1e-9)


def _density(x, t, quantile, epsilon, bounds):
    """The exponential mechanism's density at points ``t``, computed independently."""
    grid = np.linspace(*bounds, 200_001)
    def score(points):
        below = (x[None, :] <= points[:, None]).sum(1)
        return -np.abs(below - quantile * x.size)
    sensitivity = max(quantile, 1 - quantile)
    mass = np.exp(0.5 * epsilon * score(grid) / sensitivity)
    normaliser = np.sum(0.5 * (mass[1:] + mass[:-1]) * np.diff(grid))
    return np.exp(0.5 * epsilon * score(t) / sensitivity) / normaliser


def test_quantile_density_is_exact_and_its_privacy_loss_bounded():
    x, epsilon, q, bounds = np.array([0.2, 0.5, 0.55, 0.9]), 1.0, 0.5, (0.0, 1.0)
    edges, probabilities = quantile_pieces(x, np.ones(4), q, epsilon, 0.5, bounds)
    t = np.linspace(0.01, 0.99, 97)
    piece = np.searchsorted(edges, t, side="right") - 1
    implemented = probabilities[piece] / np.diff(edges)[piece]
    assert_allclose(implemented, _density(x, t, q, epsilon, bounds), rtol=1e-6)
    for neighbour in (x[:-1], x[1:], np.r_[x, 0.0], np.r_[x, 1.0]):
        ratio = np.log(_density(x, t, q, epsilon, bounds) / _density(neighbour, t, q, epsilon,
                                                                     bounds))
        assert np.abs(ratio).max() <= epsilon + 1e-6


def test_quantile_draws_follow_the_density():
    x = np.array([0.2, 0.5, 0.55, 0.9])
    edges, probabilities = quantile_pieces(x, np.ones(4), 0.5, 2.0, 0.5, (0.0, 1.0))
    cdf_at_edges = np.r_[0.0, np.cumsum(probabilities)]
    rng = np.random.default_rng(0)
    draws = [sample_quantile(x, np.ones(4), 0.5, 2.0, 0.5, (0.0, 1.0), rng) for _ in range(3000)]
    assert kstest(draws, lambda v: np.interp(v, edges, cdf_at_edges)).pvalue > 1e-3


def test_count_interval_covers_at_its_level():
    """200 seeds of a 90 % interval of a count (one Laplace: exact): hits ~ Binomial."""
    x = np.zeros(500)
    hits = sum(lo <= 500 <= hi for lo, hi in (
        private_count(x, epsilon=0.1, random_state=seed).conf_int(0.1) for seed in range(200)))
    assert binom.ppf(0.001, 200, 0.9) <= hits <= binom.ppf(0.999, 200, 0.9)


def test_same_seed_same_release():
    x = np.random.default_rng(0).uniform(0, 1, 50)
    for seed in (0, 1):
        first, again = (private_mean(x, bounds=(0, 1), epsilon=1.0, random_state=seed)
                        for _ in range(2))
        assert first == again
    assert float(private_quantile(x, 0.5, bounds=(0, 1), epsilon=1.0, random_state=0)) == \
        float(private_quantile(x, 0.5, bounds=(0, 1), epsilon=1.0, random_state=0))


@pytest.fixture
def no_noise(monkeypatch):
    def refuse(random_state):
        raise AssertionError("noise was drawn before the input was refused")

    monkeypatch.setattr(release_module, "noise_generator", refuse)
    monkeypatch.setattr("skdp.stats._descriptive.noise_generator", refuse)
    monkeypatch.setattr("skdp.stats._describe.noise_generator", refuse)


@pytest.mark.parametrize("call, match", [
    (lambda x: private_mean(x, bounds=(1, 0), epsilon=1.0), "lower < upper"),
    (lambda x: private_mean(np.r_[x, np.nan], bounds=(0, 1), epsilon=1.0), "NaN"),
    (lambda x: private_quantile(x, 1.0, bounds=(0, 1), epsilon=1.0), "quantile"),
    (lambda x: private_histogram(x, bins=3, epsilon=1.0), "bounds"),
    (lambda x: private_histogram(x, bins=[0, 1, 1], epsilon=1.0), "increasing"),
    (lambda x: private_histogram(x > 2, categories=[True], epsilon=1.0), "declared"),
    (lambda x: private_count(x, where=x, epsilon=1.0), "boolean"),
    (lambda x: private_count(x, epsilon=-1.0), "epsilon"),
    (lambda x: private_count(x, epsilon=1.0, max_rows_per_group=0.0), "max_rows_per_group"),
])
def test_bad_input_refused_before_any_noise(call, match, no_noise):
    x = np.random.default_rng(0).uniform(0, 3, 137)
    with pytest.raises(ValueError, match=match) as error:
        call(x)
    assert "137" not in str(error.value) and "136" not in str(error.value)


SCHEMA = {"label": {"name": "income", "classes": ["<=50K", ">50K"]},
          "columns": {"age": {"bounds": [17, 90]},
                      "sex": {"categories": ["Female", "Male"]}}}


def _frame(n=400, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"age": rng.uniform(17, 90, n), "sex": rng.choice(["Female", "Male"], n),
                         "income": rng.choice(["<=50K", ">50K"], n, p=[0.75, 0.25])})


def test_describe_is_the_exact_table_at_infinite_epsilon():
    frame = _frame()
    table = describe(frame, SCHEMA, epsilon=np.inf)
    assert table.loc[("N", ""), "count"] == len(frame)
    assert_allclose(table.loc[("age", ""), "mean"], frame["age"].mean(), rtol=1e-12)
    shares = frame["sex"].value_counts(normalize=True)
    assert_allclose(table.loc[("sex", "Male"), "share"], shares["Male"], rtol=1e-12)
    assert_allclose(table.loc[("income", ">50K"), "count"], np.sum(frame["income"] == ">50K"))
    assert (table["noise_std"] == 0).all()


def test_describe_splits_the_budget_by_its_public_rule():
    table = describe(_frame(), SCHEMA, epsilon=1.0, random_state=0)
    parts = 4                                       # the count, age, sex, income
    assert_allclose(table["epsilon"], 1.0 / parts)
    assert_allclose(table.loc[("N", ""), "noise_std"], np.sqrt(2) * parts, rtol=1e-6)
    again = describe(_frame(), SCHEMA, epsilon=1.0, random_state=0)
    pd.testing.assert_frame_equal(table, again)


def test_describe_refuses_an_undeclared_column_or_value_before_any_noise(no_noise):
    frame = _frame(137)
    with pytest.raises(ValueError, match="not in the schema"):
        describe(frame.assign(zip_code=1), SCHEMA, epsilon=1.0)
    frame.loc[3, "sex"] = "Other"
    with pytest.raises(ValueError, match="declared categories") as error:
        describe(frame, SCHEMA, epsilon=1.0)
    assert "137" not in str(error.value) and "Other" not in str(error.value)


@pytest.mark.parametrize("groups, unit", [(None, 1.0), (np.arange(40) // 4, 2.0)])
def test_quantile_is_calibrated_to_a_units_weight(monkeypatch, groups, unit):
    """The mechanism receives Delta = U max(q, 1 - q), U = M with persons (here M = 2)."""
    seen = []
    monkeypatch.setattr("skdp.stats._descriptive.sample_quantile",
                        lambda *args: seen.append(args[4]) or 0.0)
    x = np.random.default_rng(0).uniform(0, 1, 40)
    private_quantile(x, 0.8, bounds=(0, 1), epsilon=1.0, groups=groups,
                     max_rows_per_group=unit, random_state=0)
    assert seen == [pytest.approx(unit * 0.8)]


def test_a_count_clipped_at_zero_still_states_its_noise():
    """An empty category's noisy count is often clipped to 0; the clip must not state
    that its value is exact (the flat side of the clip has no gradient)."""
    counts = private_histogram(np.array(["a"] * 50), categories=["a", "b"], epsilon=1.0,
                               random_state=0)
    assert_allclose(counts.noise_std, np.sqrt(2), rtol=1e-5)
    frame = _frame()
    frame["sex"] = "Male"
    # over 10 seeds its noisy count falls below 0 (and is clipped) about 5 times
    assert all(describe(frame, SCHEMA, epsilon=1.0, random_state=seed).loc[
        ("sex", "Female"), "noise_std"] > 0 for seed in range(10))


def test_the_counts_noise_does_not_grow_with_the_bounds(releases):
    """A mean's noisy weight gets the noise of a count at its share of epsilon, whatever
    the half-width h of the values (before, it got U (1 + h) / epsilon: 50,000 / epsilon
    for a capital gain in [0, 99999]); the centred sum's noise is h times the weight's."""
    x = np.random.default_rng(0).uniform(0, 1, 200)
    for bounds in ((0, 1), (0, 99_999)):
        private_mean(x, bounds=bounds, epsilon=0.5, random_state=4)
    (s_narrow, law_narrow, noisy_narrow), (s_wide, law_wide, noisy_wide) = releases
    assert law_narrow == law_wide and law_narrow.scale == pytest.approx(2 / 0.5)
    assert_allclose(noisy_narrow - s_narrow, noisy_wide - s_wide, rtol=1e-12)
    assert s_narrow[0] == s_wide[0] == 200                    # the weight, divided by U = 1


@pytest.mark.parametrize("epsilon", [0.1, 1.0])
def test_stated_noise_std_of_a_mean_with_wide_bounds_matches_the_spread(epsilon):
    """Adult's capital gain: mostly 0, bounds [0, 99999]. Sample variance over 300 seeds
    against the stated one; the ratio's standard deviation is at most sqrt(5 / 300)
    (Laplace kurtosis 6), 4 of them allowed. The error is far from the midpoint's."""
    rng = np.random.default_rng(0)
    x = np.where(rng.uniform(size=3000) < 0.08, rng.uniform(0, 99_999, 3000), 0.0)
    values = np.array([float(private_mean(x, bounds=(0, 99_999), epsilon=epsilon,
                                          random_state=seed)) for seed in range(300)])
    stated = private_mean(x, bounds=(0, 99_999), epsilon=epsilon, random_state=0).noise_std
    assert abs(values.var() / stated ** 2 - 1) < 4 * np.sqrt(5 / 300)
    assert np.median(np.abs(values - x.mean())) < stated < 0.2 * x.mean()


def test_no_first_order_noise_is_stated_for_a_mean_over_too_little_weight():
    """Five rows at epsilon 0.1: the noisy weight is far below 10 of its noise's standard
    deviations (28), where the first-order statement fails: nan, and the whole range."""
    mean = private_mean(np.full(5, 3.0), bounds=(0, 10), epsilon=0.1, random_state=0)
    assert np.isnan(mean.noise_std)
    assert mean.conf_int(0.05) == (0.0, 10.0)
    assert 0.0 <= float(mean) <= 10.0
