"""The private selection's building blocks: coin split, AboveThreshold, the ladder."""

import numpy as np
import pytest
from scipy import integrate, stats
from sklearn.datasets import make_classification

from skdp import ObjPertLogisticRegression, OutputPertSVM
from skdp.model_selection._private_selection import (
    AboveThreshold,
    coin_split,
    geometric_ladder,
    private_ladder,
)
from skdp.utils._random import privacy_streams

X, y = make_classification(n_samples=1200, n_features=4, n_informative=2, n_redundant=0,
                           class_sep=1.5, random_state=0)
X /= np.linalg.norm(X, axis=1).max()


# -- coin split --------------------------------------------------------------------------

def _cut_split(n_samples, validation_fraction, rng):
    """The forbidden split: a permutation cut at floor(v n)."""
    order = rng.permutation(n_samples)
    in_validation = np.zeros(n_samples, dtype=bool)
    in_validation[order[:int(validation_fraction * n_samples)]] = True
    return in_validation


@pytest.mark.parametrize("split, moves", [(coin_split, False), (_cut_split, True)])
def test_adding_a_row_moves_no_other_row_across_the_split(split, moves):
    """Under add/remove the split must not depend on the other rows: the coins do
    not, the permutation cut does (the planted bug this test catches)."""
    before = split(500, 0.2, np.random.default_rng(3))
    after = split(501, 0.2, np.random.default_rng(3))
    assert bool(np.any(before != after[:500])) is moves


def test_coins_have_the_requested_rate():
    share = coin_split(100_000, 0.2, np.random.default_rng(0)).mean()
    assert abs(share - 0.2) < 5 * np.sqrt(0.2 * 0.8 / 100_000)


# -- AboveThreshold ----------------------------------------------------------------------

def _reference_halting_law(queries, epsilon):
    """P(first pass at query k), k = 1..K, and P(no pass), by integrating over the
    noisy threshold rho ~ Lap(2 / epsilon); each query passes when q + Lap(4 / epsilon)
    >= rho (Dwork & Roth 2014, Algorithm 1)."""
    rho = stats.laplace(scale=2.0 / epsilon)
    nu = stats.laplace(scale=4.0 / epsilon)

    def integrand(r, k):
        fails = np.prod([nu.cdf(r - q) for q in queries[:k]])
        last = 1.0 if k == len(queries) else nu.sf(r - queries[k])
        return rho.pdf(r) * fails * last

    law = [integrate.quad(integrand, -60 / epsilon, 60 / epsilon, args=(k,), limit=200)[0]
           for k in range(len(queries) + 1)]
    return np.array(law)


def test_above_threshold_follows_the_reference_algorithm():
    queries, epsilon, runs = [-3.0, -1.0, 0.5], 1.0, 20_000
    expected = _reference_halting_law(queries, epsilon)
    assert expected.sum() == pytest.approx(1.0, abs=1e-8)
    rng = np.random.default_rng(11)
    counts = np.zeros(len(queries) + 1)
    for _ in range(runs):
        test = AboveThreshold(epsilon, rng)
        first = next((k for k, q in enumerate(queries) if test.test(q)), len(queries))
        counts[first] += 1
    # every cell within 5 binomial standard deviations (fixed seed)
    sd = np.sqrt(expected * (1 - expected) / runs)
    assert np.all(np.abs(counts / runs - expected) <= 5 * sd + 1e-12)


@pytest.mark.parametrize("shift", [[1, 1, 1], [-1, -1, -1], [1, -1, 1], [-1, 1, 0]])
def test_above_threshold_halting_law_is_epsilon_private(shift):
    """Neighbouring datasets move each query by at most 1: the halting law (what is
    released) changes by at most a factor exp(epsilon) in every outcome."""
    queries, epsilon = np.array([-2.0, 0.0, 1.5]), 0.7
    a = _reference_halting_law(list(queries), epsilon)
    b = _reference_halting_law(list(queries + shift), epsilon)
    assert np.all(a <= np.exp(epsilon) * b * (1 + 1e-6))
    assert np.all(b <= np.exp(epsilon) * a * (1 + 1e-6))


def test_above_threshold_halts():
    test = AboveThreshold(1.0, np.random.default_rng(0))
    assert test.test(1e6)
    with pytest.raises(RuntimeError, match="halted"):
        test.test(0.0)


# -- the ladder --------------------------------------------------------------------------

def test_geometric_ladder_never_exceeds_the_cap():
    rungs = geometric_ladder(0.1, 2.0, 5.0)
    assert rungs == pytest.approx([0.1, 0.2, 0.4, 0.8, 1.6])
    assert sum(rungs) <= 5.0


def test_report_equals_a_hand_computation():
    epsilons = geometric_ladder(0.05, 2.0, 10.0)
    result = private_ladder(ObjPertLogisticRegression(), X, y, target=0.85,
                            epsilons=epsilons, epsilon_val=0.5, random_state=0)
    assert result.estimator is not None and result.rungs[-1]["passed"]
    assert [r["passed"] for r in result.rungs[:-1]] == [False] * (len(result.rungs) - 1)
    ran = epsilons[:len(result.rungs)]
    assert result.train_epsilon == pytest.approx(sum(ran))
    assert result.ex_post_epsilon == max(sum(ran), 0.5)
    assert result.a_priori_epsilon == max(sum(epsilons), 0.5)
    assert result.epsilon == ran[-1] == result.estimator.epsilon
    # the released model keeps the user's random_state, never a derived generator
    assert result.estimator.random_state is None


def test_unreachable_target_stops_at_the_cap_and_releases_nothing():
    epsilons = geometric_ladder(0.05, 2.0, 3.0)
    result = private_ladder(ObjPertLogisticRegression(), X, y, target=1.0, margin=0.5,
                            epsilons=epsilons, epsilon_val=0.5, random_state=1)
    assert result.estimator is None and result.epsilon is None
    assert len(result.rungs) == len(epsilons) and not any(r["passed"] for r in result.rungs)
    assert result.train_epsilon == pytest.approx(sum(epsilons)) and sum(epsilons) <= 3.0


class _Recording(OutputPertSVM):
    """Records the rows each fit sees and the coefficients it releases."""

    fits = []

    def fit(self, X, y):
        super().fit(X, y)
        _Recording.fits.append((np.array(X), self.coef_.copy()))
        return self


def test_rungs_train_on_the_training_part_only_with_independent_noise():
    _Recording.fits = []
    epsilons = [0.2, 0.4, 0.8]
    private_ladder(_Recording(C=0.5), X, y, target=1.0, margin=0.5, epsilons=epsilons,
                   epsilon_val=0.5, random_state=2)
    _, public = privacy_streams(2)
    in_validation = coin_split(len(y), 0.2, public)
    assert len(_Recording.fits) == 3
    for rows, _ in _Recording.fits:
        np.testing.assert_array_equal(rows, X[~in_validation])
    # output perturbation: coef = theta* + noise; a shared draw would make the noises
    # of two rungs exactly proportional (and reveal theta*)
    exact = OutputPertSVM(C=0.5, epsilon=np.inf).fit(X[~in_validation], y[~in_validation])
    noises = [coef.ravel() - exact.coef_.ravel() for _, coef in _Recording.fits]
    for a, b in [(0, 1), (1, 2), (0, 2)]:
        cosine = noises[a] @ noises[b] / np.linalg.norm(noises[a]) / np.linalg.norm(noises[b])
        assert abs(cosine) < 0.999


def test_validation_rows_enter_only_through_the_query_sums(monkeypatch):
    """Replay: with the query sums pinned to a first run's values, replacing every
    validation row by noise changes nothing the procedure releases; so the validation
    rows reach the output only through the sums (sensitivity 1 each)."""
    import skdp.model_selection._private_selection as module

    recorded = []
    original = module._accuracy_query
    monkeypatch.setattr(module, "_accuracy_query",
                        lambda *args: recorded.append(original(*args)) or recorded[-1])
    epsilons = [0.2, 0.4, 0.8, 1.6]
    first = private_ladder(ObjPertLogisticRegression(), X, y, target=0.9, epsilons=epsilons,
                           epsilon_val=0.5, random_state=4)
    _, public = privacy_streams(4)
    in_validation = coin_split(len(y), 0.2, public)
    X2, y2 = X.copy(), y.copy()
    rng = np.random.default_rng(9)
    X2[in_validation] = rng.normal(size=(in_validation.sum(), X.shape[1])) / 10
    y2[in_validation] = rng.integers(0, 2, in_validation.sum())
    replay = iter(recorded)
    monkeypatch.setattr(module, "_accuracy_query", lambda *args: next(replay))
    second = private_ladder(ObjPertLogisticRegression(), X2, y2, target=0.9,
                            epsilons=epsilons, epsilon_val=0.5, random_state=4)
    assert second.rungs == first.rungs
    np.testing.assert_array_equal(second.estimator.coef_, first.estimator.coef_)
    # and the real sums on the changed rows differ: the pinning is what made them equal
    monkeypatch.setattr(module, "_accuracy_query", original)
    assert original(first.estimator, X2[in_validation], y2[in_validation], 0.9) != \
        original(first.estimator, X[in_validation], y[in_validation], 0.9)


def test_rungs_with_delta_are_refused_before_any_fit():
    with pytest.raises(ValueError, match="pure epsilon-DP rungs only"):
        private_ladder(ObjPertLogisticRegression(delta=1e-5), X, y, target=0.8,
                       epsilons=[1.0], epsilon_val=0.5)
