"""The private selection's building blocks: coin split, AboveThreshold, the ladder."""

import numpy as np
import pytest
from scipy import integrate, stats
from sklearn.datasets import make_classification

from skdp import DPSGDClassifier, ObjPertLogisticRegression, OutputPertSVM
from skdp.accounting import gaussian_epsilon, gdp_mu
from skdp.model_selection._private_selection import (
    COUNT_EPSILON,
    NOISE_REDUCTION_STEP,
    AboveThreshold,
    coin_split,
    geometric_ladder,
    private_report,
    select_epsilon_privately,
    above_threshold_budget,
    auto_margin,
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


def _select(estimator, X=X, y=y, **params):
    defaults = dict(target=0.85, epsilon_max=10.0, epsilon_start=0.05, epsilon_val=0.5,
                    steering="geometric", noisy_utilities=False, random_state=0)
    return select_epsilon_privately(estimator, X, y, **{**defaults, **params})


def test_report_equals_a_hand_computation():
    result = _select(ObjPertLogisticRegression())
    assert result.estimator is not None and result.rungs[-1]["passed"]
    assert [r["passed"] for r in result.rungs[:-1]] == [False] * (len(result.rungs) - 1)
    ran = [0.05 * 2**k for k in range(len(result.rungs))]
    assert [r["epsilon"] for r in result.rungs] == pytest.approx(ran)
    validation = COUNT_EPSILON + 0.5
    assert result.training["ex_post"] == (pytest.approx(sum(ran)), 0.0)
    assert result.validation["ex_post"] == (pytest.approx(validation), 0.0)
    assert result.ex_post == (pytest.approx(max(sum(ran), validation)), 0.0)
    assert result.a_priori == (pytest.approx(max(10.0, validation)), 0.0)
    assert result.estimator.epsilon_spent_ == result.rungs[-1]["epsilon_spent"]
    assert result.epsilon == ran[-1] == result.estimator.epsilon
    # the released model keeps the user's random_state, never a derived generator
    assert result.estimator.random_state is None


def test_report_with_noisy_utilities_equals_a_hand_computation():
    result = _select(ObjPertLogisticRegression(), noisy_utilities=True, steering="curve",
                     max_rungs=5, epsilon_val=0.4)
    k = len(result.rungs)
    assert all(r["noisy_utility"] is not None for r in result.rungs)
    # half to AboveThreshold, half shared by max_rungs utilities, the count on top
    assert result.validation["ex_post"][0] == pytest.approx(COUNT_EPSILON + 0.2 + k * 0.2 / 5)
    assert result.validation["a_priori"][0] == pytest.approx(COUNT_EPSILON + 0.4)
    train = sum(r["epsilon_spent"] for r in result.rungs)
    assert result.ex_post[0] == pytest.approx(max(train, COUNT_EPSILON + 0.2 + k * 0.04))


def test_test_budget_gives_the_requested_noise():
    rng = np.random.default_rng(0)
    epsilon = above_threshold_budget(0.01, 1000)
    draws = rng.laplace(scale=4 / epsilon, size=200_000) - rng.laplace(scale=2 / epsilon,
                                                                         size=200_000)
    assert np.std(draws) / 1000 == pytest.approx(0.01, rel=0.01)


def test_unreachable_target_stops_at_the_cap_and_releases_nothing():
    # a large test budget: its noise (a tenth of a row) cannot lift a failing rung
    result = _select(ObjPertLogisticRegression(), target=1.0, epsilon_max=3.0, epsilon_val=50.0,
                     random_state=1)
    assert result.estimator is None and result.epsilon is None
    assert not any(r["passed"] for r in result.rungs)
    # the doubling ladder, then what the cap leaves
    ladder = geometric_ladder(0.05, 2, 3)
    assert [r["epsilon"] for r in result.rungs] == pytest.approx(ladder + [3 - sum(ladder)])
    assert result.training["ex_post"][0] == pytest.approx(3.0)


class _Recording(OutputPertSVM):
    """Records the rows each fit sees and the coefficients it releases."""

    fits = []

    def fit(self, X, y):
        super().fit(X, y)
        _Recording.fits.append((np.array(X), self.coef_.copy()))
        return self


def _noise_cosines(plant_shared_noise, monkeypatch):
    import skdp.model_selection._measure as measure

    if plant_shared_noise:  # the planted bug: every rung gets the same generator state
        monkeypatch.setattr(measure._NoiseSources, "next",
                            lambda self: (0, np.random.default_rng(5)))
    _Recording.fits = []
    _select(_Recording(C=0.5), target=1.0, margin=0.5, epsilon_start=0.2, epsilon_max=1.4,
            random_state=2)
    _, public = privacy_streams(2)
    in_validation = coin_split(len(y), 0.2, public)
    assert len(_Recording.fits) == 3
    for rows, _ in _Recording.fits:
        np.testing.assert_array_equal(rows, X[~in_validation])
    exact = OutputPertSVM(C=0.5, epsilon=np.inf).fit(X[~in_validation], y[~in_validation])
    noises = [coef.ravel() - exact.coef_.ravel() for _, coef in _Recording.fits]
    return [abs(noises[a] @ noises[b]) / np.linalg.norm(noises[a]) / np.linalg.norm(noises[b])
            for a, b in [(0, 1), (1, 2), (0, 2)]]


def test_rungs_train_on_the_training_part_only_with_independent_noise(monkeypatch):
    """Output perturbation: coef = theta* + noise. A shared draw across rungs makes the
    noises exactly proportional (and reveals theta*): the planted bug is caught."""
    assert max(_noise_cosines(False, monkeypatch)) < 0.999
    assert min(_noise_cosines(True, monkeypatch)) > 1 - 1e-9


def _replaced_validation_rows(seed):
    _, public = privacy_streams(seed)
    in_validation = coin_split(len(y), 0.2, public)
    X2, y2 = X.copy(), y.copy()
    rng = np.random.default_rng(9)
    X2[in_validation] = rng.normal(size=(in_validation.sum(), X.shape[1])) / 10
    y2[in_validation] = rng.integers(0, 2, in_validation.sum())
    return X2, y2, in_validation


def test_validation_rows_enter_only_through_the_query_sums(monkeypatch):
    """Replay: with the sums and the count pinned to a first run's values, replacing
    every validation row by noise changes nothing released; so the validation rows
    reach the output only through those sums (sensitivity 1 each), steering included."""
    import skdp.model_selection._private_selection as module

    recorded, original = [], module._validation_sums
    monkeypatch.setattr(module, "_validation_sums",
                        lambda *args: recorded.append(original(*args)) or recorded[-1])
    params = dict(target=0.93, noisy_utilities=True, steering="curve", random_state=4)
    first = _select(ObjPertLogisticRegression(), **params)
    assert len(first.rungs) >= 3  # the curve steered at least once
    X2, y2, in_validation = _replaced_validation_rows(4)
    replay = iter(recorded)
    monkeypatch.setattr(module, "_validation_sums", lambda *args: next(replay))
    monkeypatch.setattr(module, "_validation_count", lambda _: int(in_validation.sum()))
    second = _select(ObjPertLogisticRegression(), X2, y2, **params)
    assert second.rungs == first.rungs
    np.testing.assert_array_equal(second.estimator.coef_, first.estimator.coef_)
    # and the real sums on the changed rows differ: the pinning is what made them equal
    assert original(first.estimator, X2[in_validation], y2[in_validation], 0.93) != \
        original(first.estimator, X[in_validation], y[in_validation], 0.93)


def test_unnoised_steering_is_caught_by_the_replay(monkeypatch):
    """The planted bug: the curve fitted to exact validation accuracies. The replay
    above then fails: the rungs' epsilons depend on the rows beyond the pinned sums."""
    import skdp.model_selection._private_selection as module

    params = dict(target=0.93, noisy_utilities=True, steering="curve", random_state=4)
    recorded, honest = [], module._validation_sums
    monkeypatch.setattr(module, "_validation_sums",
                        lambda *a: recorded.append(honest(*a)) or recorded[-1])
    first = _select(ObjPertLogisticRegression(), **params)
    X2, y2, in_validation = _replaced_validation_rows(4)
    replay = iter(recorded)
    leak = []

    def planted(model, X_val, y_val, threshold):
        query, _ = next(replay)
        leak.append(float(np.mean(model.predict(X_val) == y_val)))  # read beside the sums
        return query, leak[-1] * len(y_val)

    monkeypatch.setattr(module, "_validation_sums", planted)
    monkeypatch.setattr(module, "_validation_count", lambda _: int(in_validation.sum()))
    second = _select(ObjPertLogisticRegression(), X2, y2, **params)
    assert [r["noisy_utility"] for r in second.rungs] != \
        [r["noisy_utility"] for r in first.rungs]


def test_gaussian_rungs_need_full_batch_dpsgd_and_delta_max():
    with pytest.raises(ValueError, match="DPSGDClassifier"):
        _select(ObjPertLogisticRegression(delta=1e-5), delta_max=1e-5)
    with pytest.raises(ValueError, match="delta_max"):
        _select(DPSGDClassifier(delta=1e-6))
    with pytest.raises(ValueError, match="full-batch"):  # refused before any rung
        _select(DPSGDClassifier(delta=1e-6, sample_rate=0.1), delta_max=1e-5)


def test_gaussian_odometer_never_exceeds_its_top_filter():
    result = _select(DPSGDClassifier(delta=1e-6, sample_rate=1.0, epochs=20), target=1.0, epsilon_val=50.0,
                     epsilon_max=1.0, delta_max=1e-5, epsilon_start=0.05, max_rungs=20)
    assert result.estimator is None
    mus = [r["mu"] for r in result.rungs]
    levels = 1 + int(np.ceil(np.log(gdp_mu(1.0, 1e-5) / gdp_mu(0.05, 1e-6)) / np.log(1.1)))
    top = gdp_mu(1.0, 1e-5 / levels)
    assert np.sum(np.square(mus)) <= top**2 * (1 + 1e-9)
    assert all(r["mu_certified"] <= r["mu"] * (1 + 1e-6) for r in result.rungs)
    assert result.training["a_priori"] == (1.0, 1e-5)
    assert result.training["ex_post"][0] <= 1.0 and result.training["ex_post"][1] == 1e-5
    assert len(result.rungs) < 20  # the odometer's top filter, not max_rungs, stopped it


def _odometer_by_hand(rung_epsilons, epsilon_start, epsilon_max, delta_max, rung_delta,
                      reduction=False):
    """Levels 1.1 apart from the first rung's mu up to the top filter, delta split evenly;
    the claim is the first level at or above the realised mu (the rungs' composition, or
    under noise reduction the last rung's)."""
    lowest, widest = gdp_mu(epsilon_start, rung_delta), gdp_mu(epsilon_max, delta_max)
    n_levels = 1
    while widest / 1.1 ** (n_levels - 1) > lowest:
        n_levels += 1
    level_delta = delta_max / n_levels
    level = gdp_mu(epsilon_max, level_delta)
    realised = (gdp_mu(rung_epsilons[-1], rung_delta) if reduction else
                np.sqrt(sum(gdp_mu(e, rung_delta) ** 2 for e in rung_epsilons)))
    while level / 1.1 >= realised:
        level /= 1.1
    return gaussian_epsilon(level_delta, level), realised, level


@pytest.mark.parametrize("target", [0.8, 0.9])
def test_gaussian_odometer_report_equals_a_hand_computation(target):
    from skdp import EpsilonForUtility

    search = EpsilonForUtility(DPSGDClassifier(delta=1e-6, sample_rate=1.0, epochs=20), target_utility=target,
                               epsilon_max=2.0, delta_max=1e-5, epsilon_start=0.02,
                               random_state=3).fit(X, y)
    report = search.privacy_report_
    rungs = report["transcript"]["rungs"]
    claim, realised, level = _odometer_by_hand([r["epsilon"] for r in rungs], 0.02, 2.0,
                                               1e-5, 1e-6)
    assert level <= 1.1 * realised
    assert report["parts"]["training"]["ex_post"] == {"epsilon": pytest.approx(claim),
                                                      "delta": 1e-5}
    assert report["parts"]["training"]["a_priori"] == {"epsilon": 2.0, "delta": 1e-5}
    validation = report["parts"]["validation"]["ex_post"]["epsilon"]
    assert report["ex_post"] == {"epsilon": pytest.approx(max(claim, validation)),
                                 "delta": 1e-5}
    # each fit's own certified spend, at the rung's delta (not the search's)
    assert all(f["delta"] == 1e-6 for f in report["fits"])
    assert report["released_model"] == {"epsilon": rungs[-1]["epsilon"], "delta": 1e-6}
    prior = f"({report['a_priori']['epsilon']:.4g}, 1e-05)"
    assert "odometer" in report["statement"] and prior in report["statement"]


# -- EpsilonForUtility's private mode ------------------------------------------------------

def test_private_mode_is_the_default_and_its_report_adds_up():
    from skdp import EpsilonForUtility

    search = EpsilonForUtility(ObjPertLogisticRegression(), target_utility=0.85,
                               epsilon_start=0.05, random_state=0).fit(X, y)
    report = search.privacy_report_
    assert search.selection == "private" and report["selection"] == "private"
    rungs = report["transcript"]["rungs"]
    train = sum(r["epsilon_spent"] for r in rungs)
    k = len(rungs)
    test_eps = above_threshold_budget(0.005, report["transcript"]["noisy_validation_count"])
    validation = COUNT_EPSILON + test_eps + k * test_eps / 8  # half each, 8 rungs at most
    assert report["parts"]["training"]["ex_post"]["epsilon"] == pytest.approx(train)
    assert report["parts"]["validation"]["ex_post"]["epsilon"] == pytest.approx(validation)
    assert report["ex_post"]["epsilon"] == pytest.approx(max(train, validation))
    assert report["a_priori"]["epsilon"] == pytest.approx(max(10.0, COUNT_EPSILON + 2 * test_eps))
    assert search.epsilon_ == rungs[-1]["epsilon"] == search.best_estimator_.epsilon
    assert search.n_fits_ == k and [f["epsilon_spent"] for f in report["fits"]] == \
        [r["epsilon_spent"] for r in rungs]
    assert f"{report['ex_post']['epsilon']:.4g}-differentially private" in report["statement"]


def test_private_mode_unreachable_target_releases_nothing():
    from sklearn.exceptions import NotFittedError

    from skdp import EpsilonForUtility, UnreachableUtilityWarning

    search = EpsilonForUtility(ObjPertLogisticRegression(), target_utility=1.0,
                               epsilon_max=2.0, epsilon_val=50.0, random_state=1)
    with pytest.warns(UnreachableUtilityWarning, match="nothing is released"):
        search.fit(X, y)
    assert search.epsilon_ is None and not hasattr(search, "best_estimator_")
    assert search.privacy_report_["released_model"] is None
    assert search.privacy_report_["parts"]["training"]["ex_post"]["epsilon"] <= 2.0
    with pytest.raises(NotFittedError):
        search.predict(X)


def test_pipeline_with_a_row_wise_step_is_accepted():
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import Normalizer

    from skdp import EpsilonForUtility

    pipe = make_pipeline(Normalizer(), ObjPertLogisticRegression(random_state=None))
    search = EpsilonForUtility(pipe, target_utility=0.85, random_state=0).fit(X, y)
    released = search.best_estimator_
    assert released[-1].epsilon == search.epsilon_
    assert released[-1].random_state is None  # the user's, never a derived generator
    assert search.score(X, y) == released.score(X, y)


def test_proxy_sets_the_first_rung_from_the_analytic_answer():
    from skdp import EpsilonForUtility

    X_public, y_public = make_classification(n_samples=800, n_features=4, n_informative=2,
                                             n_redundant=0, class_sep=1.5, random_state=1)
    X_public /= np.linalg.norm(X_public, axis=1).max()
    search = EpsilonForUtility(ObjPertLogisticRegression(), target_utility=0.85, n_draws=2,
                               random_state=0)
    search.fit(X, y, proxy=(X_public, y_public))
    analytic = EpsilonForUtility(ObjPertLogisticRegression(), target_utility=0.85, n_draws=2,
                                 selection="analytic", refit=False, random_state=0)
    rows_epsilon = analytic.fit(X_public, y_public).epsilon_ * len(y_public)
    count = search.privacy_report_["transcript"]["noisy_validation_count"]
    first = search.measurements_[0]["epsilon"]
    assert first == pytest.approx(rows_epsilon / (count * 0.8 / 0.2))


# -- noise reduction (Laplace output perturbation) --------------------------------------

def test_noise_reduction_rungs_share_one_fit_and_cost_the_last_epsilon():
    result = _select(OutputPertSVM(noise="laplace", C=0.5), target=0.9, epsilon_start=0.05,
                     epsilon_max=20.0, noisy_utilities=True, steering="curve", max_rungs=2)
    k = len(result.rungs)
    ladder = 0.05 * NOISE_REDUCTION_STEP ** np.arange(k)
    assert result.estimator is not None and k > 2  # max_rungs counts fits, not releases
    assert [r["epsilon"] for r in result.rungs] == pytest.approx(ladder)
    assert all(r["noisy_utility"] is None for r in result.rungs)  # nothing to steer
    assert result.n_fits == 1
    assert result.training["ex_post"] == (pytest.approx(ladder[-1]), 0.0)
    assert result.training["a_priori"] == (20.0, 0.0)
    validation = COUNT_EPSILON + 0.5  # all of epsilon_val to the test
    assert result.validation["ex_post"] == (pytest.approx(validation), 0.0)
    assert result.ex_post == (pytest.approx(max(ladder[-1], validation)), 0.0)
    assert result.estimator.epsilon == result.estimator.epsilon_spent_ == \
        pytest.approx(ladder[-1])
    report = private_report(result, "OutputPertSVM", 0.9)
    assert "noise reduction" in report["statement"]
    assert "noise reduction" in result.training["accounting"].lower()


def test_gaussian_noise_reduction_costs_the_odometer_level_of_the_last_rung():
    result = _select(OutputPertSVM(delta=1e-6, C=0.5), target=0.9, epsilon_start=0.05,
                     epsilon_max=20.0, delta_max=1e-5)
    k = len(result.rungs)
    ladder = 0.05 * NOISE_REDUCTION_STEP ** np.arange(k)
    assert result.estimator is not None and k > 2 and result.n_fits == 1
    assert [r["epsilon"] for r in result.rungs] == pytest.approx(ladder)
    claim, realised, level = _odometer_by_hand(ladder, 0.05, 20.0, 1e-5, 1e-6, reduction=True)
    assert level <= 1.1 * realised
    assert result.training["ex_post"] == (pytest.approx(claim), 1e-5)
    assert result.training["a_priori"] == (20.0, 1e-5)
    # one release of the path at the last rung: exactly gdp_mu(epsilon, delta)-GDP
    assert result.rungs[-1]["mu_certified"] == pytest.approx(gdp_mu(ladder[-1], 1e-6))
    assert result.estimator.epsilon_spent_ == pytest.approx(ladder[-1])
    assert result.estimator.delta_spent_ == 1e-6
    assert "noise reduction" in result.training["accounting"].lower()


def test_gamma_norm_output_perturbation_has_no_noise_reduction():
    with pytest.raises(ValueError, match="no exact coupling"):
        OutputPertSVM()._noise_reduction_path(X, y)
    result = _select(OutputPertSVM(C=0.5), target=0.9, epsilon_start=0.05)
    assert result.n_fits == len(result.rungs)  # fresh fits


@pytest.mark.parametrize("params", [dict(noise="laplace"), dict(delta=1e-6)],
                         ids=["laplace", "gaussian"])
def test_noise_reduction_validation_rows_enter_only_through_the_query_sums(monkeypatch,
                                                                           params):
    """The replay of the fresh-fit case, for the shared noise path."""
    import skdp.model_selection._private_selection as module

    recorded, original = [], module._validation_sums
    monkeypatch.setattr(module, "_validation_sums",
                        lambda *args: recorded.append(original(*args)) or recorded[-1])
    estimator = OutputPertSVM(C=0.5, **params)
    params = dict(target=0.9, epsilon_start=0.05, random_state=4, delta_max=1e-5)
    first = _select(estimator, **params)
    assert len(first.rungs) >= 3
    X2, y2, in_validation = _replaced_validation_rows(4)
    replay = iter(recorded)
    monkeypatch.setattr(module, "_validation_sums", lambda *args: next(replay))
    monkeypatch.setattr(module, "_validation_count", lambda _: int(in_validation.sum()))
    second = _select(estimator, X2, y2, **params)
    assert second.rungs == first.rungs
    np.testing.assert_array_equal(second.estimator.coef_, first.estimator.coef_)


def test_noise_reduction_in_a_pipeline_and_in_epsilon_for_utility():
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import Normalizer

    from skdp import EpsilonForUtility

    pipe = make_pipeline(Normalizer(), OutputPertSVM(noise="laplace", C=0.5))
    search = EpsilonForUtility(pipe, target_utility=0.9, epsilon_start=0.05,
                               random_state=0).fit(X, y)
    report = search.privacy_report_
    assert search.n_fits_ == 1 and len(report["transcript"]["rungs"]) > 1
    released = search.best_estimator_
    assert released[-1].epsilon == search.epsilon_ == report["parts"]["training"]["ex_post"][
        "epsilon"]
    assert released[-1].random_state is None
    assert search.score(X, y) == released.score(X, y)


def test_auto_margin_is_the_test_error_at_the_target_by_hand():
    """margin="auto" under noise reduction: the root sum of squares of the test's noise,
    sqrt(40) / (e m), and the validation sampling error sqrt(t (1 - t) / m), over the
    noisy count m; 0 for a ladder of fresh fits."""
    result = _select(OutputPertSVM(C=0.5, noise="laplace"), margin="auto")
    m, e = result.noisy_validation_count, result.validation["above_threshold"]
    expected = np.sqrt(40.0 / (e * m) ** 2 + 0.85 * 0.15 / m)
    assert result.threshold == pytest.approx(0.85 + expected, rel=1e-12)
    assert auto_margin(0.85, e, m) == pytest.approx(expected, rel=1e-12)
    assert _select(ObjPertLogisticRegression(), margin="auto").threshold == 0.85
    # a fixed margin is used as given
    assert _select(ObjPertLogisticRegression(), margin=0.01).threshold == pytest.approx(0.86)


def test_auto_margin_is_the_default_and_in_the_report():
    from skdp import EpsilonForUtility

    assert EpsilonForUtility().margin == "auto"
    search = EpsilonForUtility(OutputPertSVM(C=0.5, noise="laplace"), target_utility=0.8,
                               random_state=0).fit(X, y)
    transcript = search.privacy_report_["transcript"]
    m = transcript["noisy_validation_count"]
    eps_test = search.privacy_report_["parts"]["validation"]["above_threshold"]
    assert transcript["threshold"] == pytest.approx(0.8 + auto_margin(0.8, eps_test, m))
