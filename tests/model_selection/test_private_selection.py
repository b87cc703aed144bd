"""The private selection's building blocks: coin split, the Laplace tests, the accounts,
the cap on the whole search, and the attacks that broke earlier versions."""

import re

import numpy as np
import pytest
from scipy import stats
from sklearn.datasets import make_classification

from skdp import (AnalyticEpsilonForUtility, DPSGDClassifier, EpsilonForUtility,
                  ObjPertLogisticRegression, OutputPertSVM, UnreachableUtilityWarning)
from skdp.accounting import gaussian_epsilon, gdp_mu
from skdp.model_selection._private_selection import (
    _SelectionStreams,
    coin_split,
    select_epsilon_privately,
)
from skdp.model_selection._selection_report import private_report
from skdp.model_selection._selection_rungs import NOISE_REDUCTION_SEGMENT, NOISE_REDUCTION_STEP
from skdp.model_selection._selection_tests import (
    ValidationAccount,
    bounded_utilities,
    comparison_noise_sd,
    count_epsilon,
    sampling_sd,
)

X, y = make_classification(n_samples=1200, n_features=4, n_informative=2, n_redundant=0,
                           class_sep=1.5, random_state=0)
X /= np.linalg.norm(X, axis=1).max()
# a third of the labels flipped: about 80 validation errors, so that a target of 1 is
# far out of reach even through the noise of the smallest tests
y_hard = np.where(np.random.default_rng(1).random(len(y)) < 1 / 3, 1 - y, y)


def _budgets_by_hand(increments, cap, ratio=1.0):
    """Each test's budget, by hand: ``ratio`` times its increment, less what the counts
    still owe (the validation spend beyond ``ratio`` times the training reference),
    never below half of it."""
    spent, reference, budgets = count_epsilon(cap), 0.0, []
    for increment in increments:
        reference += increment
        full = ratio * increment
        owed = spent - ratio * (reference - increment)
        budget = full if owed <= 0 else max(full - owed, full / 2)
        budgets.append(budget)
        spent += budget
    return np.array(budgets), spent


def _coins(seed, n=len(y), fraction=0.2):
    """The split the selection draws in reproducibility mode with ``seed``."""
    return coin_split(n, fraction, _SelectionStreams(seed).coins())


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


def test_selection_streams_are_separate_branches():
    """Reproducibility mode: the rungs, the selection's noise, the coins and the proxy
    draw from four different streams (the proxy's fits once drew the rungs' noise)."""
    streams = _SelectionStreams(7)
    rung = np.random.default_rng(streams.rungs.next()[1].integers(2**63)).random(4)
    outputs = [rung, streams.noise().random(4), streams.coins().random(4),
               streams.proxy().random(4)]
    for a in range(4):
        for b in range(a + 1, 4):
            assert not np.allclose(outputs[a], outputs[b])
    fresh = _SelectionStreams(None)
    assert fresh.proxy() is None and fresh.rungs.next()[1] is None


# -- the tests: Laplace comparisons ------------------------------------------------------

def test_a_rungs_test_follows_the_laplace_mechanism(monkeypatch):
    """The released noisy sum is the exact sum plus Lap(1 / b): its law, checked by a
    Kolmogorov-Smirnov test against the reference, over 400 draws of the selection's
    own noise stream (the rung model and the data held fixed)."""
    import skdp.model_selection._selection_tests as module

    monkeypatch.setattr(module, "_validation_sum", lambda *args: 3.0)
    noise = []
    for seed in range(400):
        result = _select(ObjPertLogisticRegression(), random_state=seed, max_rungs=1,
                         epsilon_start=0.5)
        noise.append(result.rungs[0]["noisy_sum"] - 3.0)
        assert result.rungs[0]["test_budget"] == pytest.approx(0.4)  # 0.5 less the counts'
    assert stats.kstest(noise, stats.laplace(scale=1 / 0.4).cdf).pvalue > 1e-3


@pytest.mark.parametrize("shift", [1.0, -1.0])
def test_a_rungs_test_is_private_at_its_budget(shift):
    """Neighbours move the sum by at most 1; the pass probability P(f + Lap(1/b) >= 0)
    then moves by at most a factor exp(b) (exact computation), and the threshold is
    clamped into [0, 1] so that the bound on the shift holds."""
    b = 0.7
    for f in np.linspace(-8, 8, 33):
        p, q = stats.laplace(scale=1 / b).sf(-f), stats.laplace(scale=1 / b).sf(-(f + shift))
        assert max(p / q, q / p, (1 - p) / (1 - q), (1 - q) / (1 - p)) <= np.exp(b) * (1 + 1e-9)


def test_validation_account_by_hand():
    assert count_epsilon(1.0) == pytest.approx(0.05) and count_epsilon(10.0) == 0.1
    tests = ValidationAccount(10.0, test_ratio=0.5, increments=False)
    assert tests.spent == pytest.approx(0.1)
    # the counts' 0.1 is repaid first: 0.5 * 1 - 0.1, then the full 0.5 * 2
    assert tests.charge(1.0) == pytest.approx(0.4) and tests.charge(2.0) == pytest.approx(1.0)
    assert tests.spent == pytest.approx(0.5 * 3.0)
    assert tests.largest_rung() == pytest.approx((10.0 - 1.5) / 0.5)
    # a small first rung pays half its share while the debt lasts
    small = ValidationAccount(10.0, test_ratio=1.0, increments=False)
    assert small.smallest_rung(0.02) == pytest.approx(0.04)
    assert small.charge(0.05) == pytest.approx(0.025)
    assert small.smallest_rung(0.2) == pytest.approx((0.2 + 0.075) / 1.0)
    reduction = ValidationAccount(10.0, test_ratio=1.0, increments=True)
    assert reduction.charge(1.0) == pytest.approx(0.9)
    assert reduction.charge(1.2) == pytest.approx(0.2)   # the increment only
    assert reduction.spent == pytest.approx(1.2)
    assert reduction.largest_rung() == pytest.approx(1.2 + 10.0 - 1.2)
    budgets, spent = _budgets_by_hand([0.05, 0.1, 0.2, 0.4], 10.0)
    account = ValidationAccount(10.0, test_ratio=1.0, increments=False)
    assert [account.charge(e) for e in (0.05, 0.1, 0.2, 0.4)] == pytest.approx(budgets)
    assert account.spent == pytest.approx(spent)


def test_resolution_formulas():
    assert comparison_noise_sd(0.5, 400) == pytest.approx(np.sqrt(2) / 200)
    assert sampling_sd(0.8, 400) == pytest.approx(0.02)
    assert sampling_sd(1.7, 400) == 0.0  # clamped into [0, 1]


def test_bounded_utilities_of_a_regressor():
    class Fixed:
        def predict(self, X):
            return np.zeros(len(X))

    u = bounded_utilities(Fixed(), np.zeros((4, 1)), np.array([0.0, 1.0, 2.0, 50.0]),
                          y_bound=2.0)
    # y clipped to [-2, 2]; 1 - min(1, y^2 / 16)
    assert u == pytest.approx([1.0, 1 - 1 / 16, 1 - 4 / 16, 1 - 4 / 16])


# -- fresh rungs: the report and the cap -------------------------------------------------

def _select(estimator, X=X, y=y, **params):
    defaults = dict(target=0.85, epsilon_max=10.0, epsilon_start=0.05,
                    steering="geometric", random_state=0, tolerance=0.5)
    return select_epsilon_privately(estimator, X, y, **{**defaults, **params})


def test_report_equals_a_hand_computation():
    result = _select(ObjPertLogisticRegression(), target=0.93, random_state=6)
    assert result.estimator is not None and result.rungs[-1]["passed"]
    assert [r["passed"] for r in result.rungs[:-1]] == [False] * (len(result.rungs) - 1)
    ran = [0.05 * 2**k for k in range(len(result.rungs))]
    assert len(ran) >= 2
    assert [r["epsilon"] for r in result.rungs] == pytest.approx(ran)
    budgets, validation = _budgets_by_hand(ran, 10.0)
    assert [r["test_budget"] for r in result.rungs] == pytest.approx(budgets)
    assert result.training["ex_post"] == (pytest.approx(sum(ran)), 0.0)
    assert result.validation["ex_post"] == (pytest.approx(validation), 0.0)
    assert result.ex_post == (pytest.approx(max(sum(ran), validation)), 0.0)
    assert result.a_priori == (10.0, 0.0)
    assert result.estimator.epsilon_spent_ == result.rungs[-1]["epsilon_spent"]
    assert result.epsilon == ran[-1] == result.estimator.epsilon
    # the noisy utility is the threshold plus the noisy sum over the noisy count
    last = result.rungs[-1]
    assert last["noisy_utility"] == pytest.approx(
        0.93 + last["noisy_sum"] / result.noisy_validation_count)
    # the released model keeps the user's random_state, never a derived generator
    assert result.estimator.random_state is None


def test_randomised_ladder_by_hand():
    """steering="random": rungs epsilon_start * 3 ** (U + k), U from the offset's own
    public stream (so the same on any data), the sum accounted as for any ladder."""
    result = _select(ObjPertLogisticRegression(), target=0.93, steering="random",
                     random_state=6)
    offset = 3.0 ** _SelectionStreams(6, None).offset().random()
    ran = [0.05 * offset * 3**k for k in range(len(result.rungs))]
    assert len(ran) >= 2 and result.rungs[-1]["passed"]
    assert [r["epsilon"] for r in result.rungs] == pytest.approx(ran)
    assert result.training["ex_post"] == (pytest.approx(sum(ran)), 0.0)
    # the ladder ignores the data: a search that cannot pass walks the same rungs
    hard = _select(ObjPertLogisticRegression(), y=y_hard, target=1.0, steering="random",
                   random_state=6, max_rungs=3)
    assert [r["epsilon"] for r in hard.rungs] == pytest.approx(
        [0.05 * offset * 3**k for k in range(3)])


def test_randomised_ladder_steps_by_root_three_for_gaussian_dp_rungs():
    """Rungs composed in squares (the GDP odometer) step by sqrt(3), the ratio that
    minimises the median of r ** 1.5 / sqrt(r ** 2 - 1) (1.61)."""
    result = _select(DPSGDClassifier(delta=1e-6, sample_rate=1.0, epochs=5), y=y_hard,
                     target=1.0, steering="random", epsilon_start=0.5, delta_max=1e-5,
                     max_rungs=3)
    epsilons = [r["epsilon"] for r in result.rungs]
    assert len(epsilons) == 3
    assert np.diff(np.log(epsilons)) == pytest.approx([np.log(3) / 2] * 2)
    ratios = np.linspace(1.05, 4, 2000)
    assert ratios[np.argmin(ratios**1.5 / np.sqrt(ratios**2 - 1))] == pytest.approx(
        np.sqrt(3), abs=2e-3)
    assert ratios[np.argmin(ratios**1.5 / (ratios - 1))] == pytest.approx(3, abs=2e-3)


def test_randomised_ladder_offsets_are_uniform():
    """The first rung of the search is epsilon_start * 3 ** U with U uniform on [0, 1):
    Kolmogorov-Smirnov over 200 searches, at the 0.001 level."""
    exponents = [np.log(_select(ObjPertLogisticRegression(), steering="random", max_rungs=1,
                                random_state=seed).rungs[0]["epsilon"] / 0.05) / np.log(3)
                 for seed in range(200)]
    assert stats.kstest(exponents, "uniform").pvalue > 1e-3


def test_distance_to_best_by_hand():
    """The report's distance to the best possible, from released quantities: the bracket
    of the oracle (last failed and passing rungs times the training share), the loss
    over it, the ladder's floor (2 for pure fresh rungs) and the Laplace test's floor."""
    result = _select(ObjPertLogisticRegression(), target=0.93, random_state=6,
                     validation_fraction=0.25)
    report = private_report(result, "ObjPertLogisticRegression", 0.93)
    distance = report["distance_to_best"]
    ran = [r["epsilon"] for r in result.rungs]
    assert len(ran) >= 2
    assert distance["oracle_bracket"] == pytest.approx((ran[-2] * 0.75, ran[-1] * 0.75))
    assert distance["loss_over_bracket"] == pytest.approx(
        (result.ex_post[0] / (ran[-1] * 0.75), result.ex_post[0] / (ran[-2] * 0.75)))
    assert distance["ladder_floor"] == 2.0
    m = result.noisy_validation_count
    assert distance["test_floor"] == pytest.approx(np.log(5) / (0.005 * m))


def test_ladder_floors_of_the_rung_kinds():
    gdp = _select(DPSGDClassifier(delta=1e-6, sample_rate=1.0, epochs=5), y=y_hard,
                  target=1.0, epsilon_start=0.5, delta_max=1e-5, max_rungs=1,
                  test_rows="all")
    assert gdp.ladder_floor == pytest.approx(np.sqrt(2))
    mu = stats.norm.ppf(0.9) / (0.005 * gdp.noisy_validation_count)
    assert private_report(gdp, "DPSGDClassifier", 1.0)["distance_to_best"][
        "test_floor"] == pytest.approx(gaussian_epsilon(1e-5, mu))
    shared = _select(OutputPertSVM(noise="laplace"), target=0.9, max_rungs=1)
    assert shared.ladder_floor == 1.0


@pytest.mark.parametrize("cap", [0.3, 1.0, 3.0])
def test_the_cap_bounds_every_part_of_an_unreachable_search(cap):
    result = _select(ObjPertLogisticRegression(), y=y_hard, target=1.0, epsilon_max=cap,
                     steering="curve", max_rungs=30, tolerance=0.05)
    assert result.estimator is None and result.epsilon is None
    assert not any(r["passed"] for r in result.rungs)
    train = sum(r["epsilon_spent"] for r in result.rungs)
    validation = count_epsilon(cap) + sum(r["test_budget"] for r in result.rungs)
    assert result.training["ex_post"][0] == pytest.approx(train)
    assert result.validation["ex_post"][0] == pytest.approx(validation)
    assert max(train, validation) <= cap * (1 + 1e-9)
    assert result.ex_post[0] <= cap * (1 + 1e-9)
    assert result.a_priori == (cap, 0.0)  # the same figure on every run, any data


def test_a_priori_figure_does_not_depend_on_the_data():
    """The former validation budget came from the noisy count (22.9 to 168.7 on one
    300-row set): the a priori figure must be the cap itself, run after run."""
    priors = set()
    for seed in range(5):
        Xs, ys = X[:300], y[:300]
        search = EpsilonForUtility(ObjPertLogisticRegression(), target_utility=0.8,
                                   epsilon_max=1.0, random_state=seed)
        with pytest.warns(Warning) if False else _nothing():
            search.fit(Xs, ys)
        report = search.privacy_report_
        priors.add((report["a_priori"]["epsilon"], report["a_priori"]["delta"]))
        assert report["ex_post"]["epsilon"] <= 1.0
    assert priors == {(1.0, 0.0)}


class _nothing:
    def __enter__(self):
        import warnings
        self._catch = warnings.catch_warnings()
        self._catch.__enter__()
        warnings.simplefilter("ignore")

    def __exit__(self, *exc):
        return self._catch.__exit__(*exc)


def test_a_cohort_too_small_for_the_cap_fits_nothing():
    result = _select(ObjPertLogisticRegression(), X=X[:100], y=y[:100], epsilon_max=5.0,
                     tolerance=0.005)
    assert result.stop_reason == "cohort_too_small"
    assert result.rungs == [] and result.n_fits == 0 and result.estimator is None
    assert result.ex_post == (pytest.approx(count_epsilon(5.0)), 0.0)
    assert result.resolution["test_noise_sd"] > 0.005
    report = private_report(result, "ObjPertLogisticRegression", 0.85)
    assert "too small" in report["statement"]


def test_the_first_rung_is_raised_until_its_test_is_fine_enough():
    """No test's noise above half the tolerance: the budget that allows is ``b =
    sqrt(2) / (0.025 m)``; while the counts' 0.1 is owed a test pays half its rung,
    so the first rung is at least ``2 b`` (or ``b + 0.1`` once ``b`` covers the debt)."""
    result = _select(ObjPertLogisticRegression(), target=0.5, tolerance=0.05)
    m = result.noisy_validation_count
    b = np.sqrt(2.0) / (0.025 * m)
    least = 2 * b if b < 0.1 else b + 0.1
    assert result.rungs[0]["epsilon"] == pytest.approx(max(0.05, least))
    assert result.rungs[0]["test_sd"] <= 0.025 * (1 + 1e-9)


def test_a_search_that_levels_off_below_the_target_stops_early():
    """A target above what the model reaches: the noisy utilities level off and the
    search stops before spending the cap (it once bought rungs up to the cap)."""
    result = _select(ObjPertLogisticRegression(), y=y_hard, target=0.9, epsilon_max=50.0,
                     epsilon_start=0.01, max_rungs=30, steering="curve", tolerance=0.05)
    assert result.stop_reason == "plateau" and result.estimator is None
    assert result.ex_post[0] < 0.1 * 50.0


def test_target_and_threshold_are_refused_before_any_work():
    for target in (np.nan, np.inf, -5.0, 1.5):
        with pytest.raises(ValueError, match="target_utility"):
            EpsilonForUtility(ObjPertLogisticRegression(), target_utility=target).fit(X, y)
    # a margin that pushes the threshold out of [0, 1] is clamped: sensitivity stays 1
    result = _select(ObjPertLogisticRegression(), target=0.0, margin=-0.5, max_rungs=1)
    assert result.threshold == 0.0 and result.rungs[0]["threshold"] == 0.0


def test_negative_threshold_no_longer_inflates_the_test():
    """The attack: threshold -5 made one added row move f by 6, 3x the stated test
    budget. Now every threshold is in [0, 1]: f moves by at most 1 (exact check of
    the query on neighbouring validation parts)."""
    import skdp.model_selection._selection_tests as module

    model = ObjPertLogisticRegression(epsilon=np.inf).fit(X, y)
    for target in (0.0, 0.5, 1.0):
        result = _select(ObjPertLogisticRegression(), target=target, margin=-1.0 if target
                         else 0.0, max_rungs=1)
        t = result.rungs[0]["threshold"]
        assert 0.0 <= t <= 1.0
        base = module._validation_sum(model, X[:50], y[:50], t, None)
        for row in range(50, 60):
            added = module._validation_sum(model, X[np.r_[:50, row]], y[np.r_[:50, row]],
                                           t, None)
            assert abs(added - base) <= 1.0


# -- independence, replay ------------------------------------------------------------------

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
    _select(_Recording(C=0.5), y=y_hard, target=1.0, epsilon_start=0.2, epsilon_max=1.6,
            random_state=2, max_rungs=3, tolerance=1.0)
    in_validation = _coins(2)
    assert len(_Recording.fits) == 3
    for rows, _ in _Recording.fits:
        np.testing.assert_array_equal(rows, X[~in_validation])
    exact = OutputPertSVM(C=0.5, epsilon=np.inf).fit(X[~in_validation],
                                                     y_hard[~in_validation])
    noises = [coef.ravel() - exact.coef_.ravel() for _, coef in _Recording.fits]
    return [abs(noises[a] @ noises[b]) / np.linalg.norm(noises[a]) / np.linalg.norm(noises[b])
            for a, b in [(0, 1), (1, 2), (0, 2)]]


def test_rungs_train_on_the_training_part_only_with_independent_noise(monkeypatch):
    """Output perturbation: coef = theta* + noise. A shared draw across rungs makes the
    noises exactly proportional (and reveals theta*): the planted bug is caught."""
    assert max(_noise_cosines(False, monkeypatch)) < 0.999
    assert min(_noise_cosines(True, monkeypatch)) > 1 - 1e-9


def _replaced_validation_rows(seed):
    in_validation = _coins(seed)
    X2, y2 = X.copy(), y.copy()
    rng = np.random.default_rng(9)
    X2[in_validation] = rng.normal(size=(in_validation.sum(), X.shape[1])) / 10
    y2[in_validation] = rng.integers(0, 2, in_validation.sum())
    return X2, y2, in_validation


def _replay(monkeypatch, estimator, params, planted=None):
    """Run once recording the validation sums; rerun on replaced validation rows with
    the sums and the count pinned (``planted``: a reader beside the sums)."""
    import skdp.model_selection._selection_tests as module

    recorded, original = [], module._validation_sum
    histogram, original_histogram = [], module._validation_histogram
    monkeypatch.setattr(module, "_validation_sum",
                        lambda *args: recorded.append(original(*args)) or recorded[-1])
    monkeypatch.setattr(module, "_validation_histogram",
                        lambda *args: histogram.append(original_histogram(*args))
                        or histogram[-1].copy())
    first = _select(estimator, **params)
    X2, y2, in_validation = _replaced_validation_rows(params["random_state"])
    replay = iter(recorded)
    monkeypatch.setattr(module, "_validation_sum",
                        planted(replay) if planted else lambda *args: next(replay))
    monkeypatch.setattr(module, "_validation_histogram", lambda *args: histogram[0].copy())
    second = _select(estimator, X2, y2, **params)
    return first, second, (X2, y2, in_validation), original


def test_validation_rows_enter_only_through_the_query_sums(monkeypatch):
    """Replay: with the sums and the count pinned to a first run's values, replacing
    every validation row by noise changes nothing released; so the validation rows
    reach the output only through those sums (sensitivity 1 each), steering included."""
    params = dict(target=0.955, steering="curve", random_state=3, tolerance=0.2)
    first, second, (X2, y2, in_validation), original = _replay(
        monkeypatch, ObjPertLogisticRegression(), params)
    assert len(first.rungs) >= 3  # the curve steered at least once
    assert second.rungs == first.rungs
    np.testing.assert_array_equal(second.estimator.coef_, first.estimator.coef_)
    # and the real sums on the changed rows differ: the pinning is what made them equal
    assert original(first.estimator, X2[in_validation], y2[in_validation], 0.955, None) != \
        original(first.estimator, X[in_validation], y[in_validation], 0.955, None)


def test_unnoised_steering_is_caught_by_the_replay(monkeypatch):
    """The planted bug: a rung's utility read beside the pinned sums (exact accuracy
    leaking into the transcript). The replay then differs."""
    leak = []

    def planted(replay):
        def read(model, X_val, y_val, threshold, y_bound, shares=None):
            leak.append(float(np.mean(model.predict(X_val) == y_val)))
            return next(replay) + leak[-1]   # the exact accuracy, beside the sum
        return read

    params = dict(target=0.955, steering="curve", random_state=3, tolerance=0.2)
    first, second, *_ = _replay(monkeypatch, ObjPertLogisticRegression(), params, planted)
    assert [r["noisy_utility"] for r in second.rungs] != \
        [r["noisy_utility"] for r in first.rungs]


# -- labels: every rung sees the whole input's label set ------------------------------------

def _lone_label_data(extra_label_rows):
    """40 rows of class 0 and ``1 + extra_label_rows`` of class 1."""
    rng = np.random.default_rng(0)
    n1 = 1 + extra_label_rows
    Xl = rng.normal(size=(40 + n1, 3)) / 4
    yl = np.r_[np.zeros(40, int), np.ones(n1, int)]
    return Xl, yl


def test_rungs_see_the_whole_label_set_black_box_audit():
    """The attack: with one row of class 1 (D) or two (D', same label set), the training
    part misses class 1 with probability 0.2 against 0.04; each rung then raised a
    one-class error after noise, or released other ``classes_``, which audited at
    epsilon >= 1.35 for a claimed 1. Now neither event depends on the split:
    Clopper-Pearson (95 %, 300 selections a side) certifies no epsilon above the cap."""
    from skdp.audit._audit import _epsilon_bound

    events = {}
    for name, extra in (("a", 0), ("b", 1)):
        Xl, yl = _lone_label_data(extra)
        errors, two_classes = [], []
        for _ in range(300):
            search = EpsilonForUtility(ObjPertLogisticRegression(), target_utility=0.0,
                                       epsilon_max=1.0, epsilon_start=0.5, tolerance=0.9,
                                       max_rungs=1)
            try:
                with _nothing():
                    search.fit(Xl, yl)
            except ValueError:
                errors.append(True)
                two_classes.append(False)
                continue
            errors.append(False)
            released = getattr(search, "best_estimator_", None)
            two_classes.append(released is None or len(released.classes_) == 2)
        events[name] = (np.array(errors), np.array(two_classes))
    for index in (0, 1):
        a, b = events["a"][index], events["b"][index]
        bound = max(_epsilon_bound(a, b, 0.0, 0.05), _epsilon_bound(b, a, 0.0, 0.05),
                    _epsilon_bound(~a, ~b, 0.0, 0.05), _epsilon_bound(~b, ~a, 0.0, 0.05))
        assert bound <= 1.0
    assert not events["a"][0].any() and events["a"][1].all()


def test_one_class_and_undeclared_labels_are_refused_before_any_noise(monkeypatch):
    import skdp.model_selection._private_selection as module

    monkeypatch.setattr(module, "coin_split", lambda *a: pytest.fail("data was split"))
    with pytest.raises(ValueError, match="class"):
        EpsilonForUtility(ObjPertLogisticRegression()).fit(X, np.zeros(len(y)))
    with pytest.raises(ValueError, match="outside the declared"):
        EpsilonForUtility(ObjPertLogisticRegression(classes=[0, 2])).fit(X, y)


def test_declared_classes_reach_every_rung():
    search = EpsilonForUtility(ObjPertLogisticRegression(classes=[0, 1, 2]),
                               target_utility=0.5, random_state=0, epsilon_start=1.0)
    search.fit(X, y)
    assert list(search.best_estimator_.classes_) == [0, 1, 2]


# -- research modes and unsupported rungs --------------------------------------------------

def test_a_research_mode_is_refused_before_any_work(monkeypatch):
    import skdp.model_selection._private_selection as module
    from skdp.research import ResearchNAPPLassoClassifier

    monkeypatch.setattr(module, "coin_split", lambda *a: pytest.fail("data was split"))
    with pytest.raises(ValueError, match="no finite epsilon"):
        EpsilonForUtility(ResearchNAPPLassoClassifier()).fit(X, y)


# -- Gaussian rungs ----------------------------------------------------------------------

def test_gaussian_odometer_never_exceeds_its_top_filter():
    # a decaying schedule: fresh full-batch fits (a constant one continues one run)
    result = _select(DPSGDClassifier(delta=1e-6, sample_rate=1.0, epochs=20,
                                     learning_rate_schedule="step"), y=y_hard,
                     target=1.0, tolerance=0.05,
                     epsilon_max=1.0, delta_max=1e-5, epsilon_start=0.05, max_rungs=20)
    assert result.estimator is None
    mus = [r["mu"] for r in result.rungs]
    levels = 1 + int(np.ceil(np.log(gdp_mu(1.0, 1e-5) / gdp_mu(0.05, 1e-6)) / np.log(1.1)))
    top = gdp_mu(1.0, 1e-5 / levels)
    assert np.sum(np.square(mus)) <= top**2 * (1 + 1e-9)
    assert all(r["mu_certified"] <= r["mu"] * (1 + 1e-6) for r in result.rungs)
    assert result.training["a_priori"] == (1.0, 1e-5)
    assert result.training["ex_post"][0] <= 1.0 and result.training["ex_post"][1] == 1e-5
    assert result.validation["ex_post"][0] <= 1.0
    assert result.a_priori == (1.0, 1e-5)
    assert len(result.rungs) < 20  # the cap, not max_rungs, stopped it


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
    # fresh full-batch fits (a decaying schedule); a constant one continues one run
    search = EpsilonForUtility(DPSGDClassifier(delta=1e-6, sample_rate=1.0, epochs=20,
                                               learning_rate_schedule="step"),
                               target_utility=target, epsilon_max=2.0, delta_max=1e-5,
                               epsilon_start=0.02, random_state=3).fit(X, y)
    report = search.privacy_report_
    rungs = report["transcript"]["rungs"]
    claim, realised, level = _odometer_by_hand([r["epsilon"] for r in rungs], 0.02, 2.0,
                                               1e-5, 1e-6)
    assert level <= 1.1 * realised
    assert report["parts"]["training"]["ex_post"] == {"epsilon": pytest.approx(claim),
                                                      "delta": 1e-5}
    assert report["parts"]["training"]["a_priori"] == {"epsilon": 2.0, "delta": 1e-5}
    validation = report["parts"]["validation"]["ex_post"]["epsilon"]
    assert validation == pytest.approx(_budgets_by_hand([r["epsilon"] for r in rungs],
                                                        2.0)[1])
    assert report["ex_post"] == {"epsilon": pytest.approx(max(claim, validation)),
                                 "delta": 1e-5}
    # each fit's own certified spend, at the rung's delta (not the search's)
    assert all(f["delta"] == 1e-6 for f in report["fits"])
    assert report["released_model"] == {"epsilon": rungs[-1]["epsilon"], "delta": 1e-6}
    prior = f"({report['a_priori']['epsilon']:.4g}, 1e-05)"
    assert "odometer" in report["statement"] and prior in report["statement"]


# -- EpsilonForUtility's private mode ------------------------------------------------------

def test_private_mode_is_the_default_and_its_report_adds_up():
    search = EpsilonForUtility(ObjPertLogisticRegression(), target_utility=0.85,
                               epsilon_start=0.05, random_state=0).fit(X, y)
    report = search.privacy_report_
    assert report["selection"] == "private"
    rungs = report["transcript"]["rungs"]
    train = sum(r["epsilon_spent"] for r in rungs)
    validation = count_epsilon(10.0) + sum(r["test_budget"] for r in rungs)
    assert report["parts"]["training"]["ex_post"]["epsilon"] == pytest.approx(train)
    assert report["parts"]["validation"]["ex_post"]["epsilon"] == pytest.approx(validation)
    assert report["ex_post"]["epsilon"] == pytest.approx(max(train, validation))
    assert report["a_priori"] == {"epsilon": 10.0, "delta": 0.0}
    assert search.epsilon_ == rungs[-1]["epsilon"] == search.best_estimator_.epsilon
    assert search.n_fits_ == len(rungs) and [f["epsilon_spent"] for f in report["fits"]] == \
        [r["epsilon_spent"] for r in rungs]
    # the statement's figure: the ex-post epsilon rounded up to 4 significant digits
    shown = float(re.search(r"is ([0-9.e+-]+)-differentially private",
                            report["statement"]).group(1))
    assert report["ex_post"]["epsilon"] * (1 - 1e-12) <= shown
    assert shown <= report["ex_post"]["epsilon"] * (1 + 1e-3)
    assert report["resolution"]["test_noise_sd"] == pytest.approx(rungs[-1]["test_sd"])


def test_private_mode_unreachable_target_releases_nothing():
    from sklearn.exceptions import NotFittedError

    from skdp import UnreachableUtilityWarning

    search = EpsilonForUtility(ObjPertLogisticRegression(), target_utility=1.0,
                               epsilon_max=2.0, random_state=1)
    with pytest.warns(UnreachableUtilityWarning, match="nothing is released"):
        search.fit(X, y_hard)
    assert search.epsilon_ is None and not hasattr(search, "best_estimator_")
    assert search.privacy_report_["released_model"] is None
    assert search.privacy_report_["ex_post"]["epsilon"] <= 2.0
    with pytest.raises(NotFittedError):
        search.predict(X)


def test_plot_and_predict_utility_show_the_transcript():
    import matplotlib

    matplotlib.use("Agg")
    search = EpsilonForUtility(ObjPertLogisticRegression(), target_utility=0.955,
                               epsilon_start=0.02, random_state=7).fit(X, y)
    rungs = search.privacy_report_["transcript"]["rungs"]
    assert len(rungs) >= 2
    at = np.array([r["epsilon"] for r in rungs])
    noisy = np.array([r["noisy_utility"] for r in rungs])
    design = np.column_stack([np.ones_like(at), -1 / at])
    (u_inf, a), *_ = np.linalg.lstsq(design, noisy, rcond=None)
    utility, error = search.predict_utility([0.1, 1.0])
    assert utility == pytest.approx(u_inf - a / np.array([0.1, 1.0]))
    assert error == pytest.approx([search.privacy_report_["resolution"]["total_sd"]] * 2)
    ax = search.plot()
    assert "spent of the cap" in ax.get_title()


# -- pipelines -------------------------------------------------------------------------------

def test_pipeline_with_a_row_wise_step_is_accepted():
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import Normalizer

    pipe = make_pipeline(Normalizer(), ObjPertLogisticRegression(random_state=None))
    search = EpsilonForUtility(pipe, target_utility=0.85, random_state=0).fit(X, y)
    released = search.best_estimator_
    assert released[-1].epsilon == search.epsilon_
    assert released[-1].random_state is None  # the user's, never a derived generator
    assert search.score(X, y) == released.score(X, y)


def test_data_fitted_pipeline_steps_are_refused_by_type_not_name(monkeypatch):
    """The attack: FunctionTransformer(scale) and a user class named Normalizer passed
    the allow-list by class name; one added validation row then moved the query by
    39.8. They are refused before the data are split."""
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer, scale

    import skdp.model_selection._private_selection as module

    class Normalizer(FunctionTransformer):
        pass

    monkeypatch.setattr(module, "coin_split", lambda *a: pytest.fail("data was split"))
    for step in (FunctionTransformer(scale), Normalizer(scale)):
        with pytest.raises(ValueError, match="Pipeline step"):
            EpsilonForUtility(make_pipeline(step, ObjPertLogisticRegression())).fit(X, y)


def test_public_preprocessing_pipeline_is_accepted():
    import pandas as pd
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    from skdp.preprocessing import BoundedScaler

    frame = pd.DataFrame({"age": (X[:, 0] + 1) * 40,
                          "colour": np.where(X[:, 1] > 0, "red", "blue")})
    pre = ColumnTransformer([("cat", OneHotEncoder(categories=[["blue", "red"]]), ["colour"]),
                             ("num", BoundedScaler(lower=0.0, upper=90.0), ["age"])])
    search = EpsilonForUtility(make_pipeline(pre, ObjPertLogisticRegression()),
                               target_utility=0.7, random_state=0).fit(frame, y)
    assert search.privacy_report_["ex_post"]["epsilon"] <= search.epsilon_max


def test_proxy_sets_the_first_rung_from_the_analytic_answer_on_its_own_stream():
    X_public, y_public = make_classification(n_samples=800, n_features=4, n_informative=2,
                                             n_redundant=0, class_sep=1.5, random_state=1)
    X_public /= np.linalg.norm(X_public, axis=1).max()
    search = EpsilonForUtility(ObjPertLogisticRegression(), target_utility=0.85,
                               random_state=0, tolerance=0.5)
    search.fit(X, y, proxy=(X_public, y_public))
    # the analytic method at its defaults, the search's validation fraction, no refit
    analytic = AnalyticEpsilonForUtility(ObjPertLogisticRegression(), target_utility=0.85,
                                         refit=False, random_state=_SelectionStreams(0).proxy())
    rows_epsilon = analytic.fit(X_public, y_public).epsilon_ * len(y_public)
    count = search.privacy_report_["transcript"]["noisy_validation_count"]
    first = search.measurements_[0]["epsilon"]
    # PROXY_SAFETY above the answer, for the training part's estimated size
    assert first == pytest.approx(1.3 * rows_epsilon / (count * 0.8 / 0.2))


# -- noise reduction (Laplace output perturbation) --------------------------------------

def _reduction_ladder(start, count, tolerance, k, cap):
    """The public ladder by hand (one path): ratio NOISE_REDUCTION_STEP, each test's
    budget at least ``b``, whose noise is half the tolerance on the noisy count; a test
    pays its increment less what the counts still owe, at least half of it."""
    b = np.sqrt(2.0) / (0.5 * tolerance * count)
    spent, reference, ladder = count_epsilon(cap), 0.0, []
    while len(ladder) < k:
        last = ladder[-1] if ladder else 0.0
        debt = max(spent - reference, 0.0)
        least = 2 * b if b < debt else b + debt
        epsilon = max(last * NOISE_REDUCTION_STEP if ladder else start, last + least)
        increment = epsilon - last
        spent += min(increment, max(increment - debt, increment / 2))
        reference += increment
        ladder.append(epsilon)
    return np.array(ladder)


def test_dpgd_checkpoints_cost_the_odometer_level_of_the_last_rung():
    """Full-batch DP-GD with a constant schedule: the rungs are checkpoints of one run,
    so the training rows pay the last checkpoint's mu, as under noise reduction."""
    result = _select(DPSGDClassifier(delta=1e-6, sample_rate=1.0), y=y_hard, target=0.95,
                     epsilon_start=0.25, epsilon_max=1.0, delta_max=1e-5, tolerance=0.2,
                     checkpoints=True)
    k = len(result.rungs)
    assert result.estimator is None and k >= 3 and result.n_fits == 1
    ladder = _reduction_ladder(0.25, result.noisy_validation_count, 0.2, k, 1.0)
    epsilons = [r["epsilon"] for r in result.rungs]
    # the ladder by hand, its last rung lowered to the largest the cap allows
    assert epsilons[:-1] == pytest.approx(ladder[:-1]) and epsilons[-1] <= ladder[-1]
    claim, realised, level = _odometer_by_hand(epsilons, 0.25, 1.0, 1e-5, 1e-6, reduction=True)
    assert result.training["ex_post"] == (pytest.approx(claim), 1e-5)
    # each checkpoint certifies at most the mu charged, and the steps grow
    assert all(r["mu_certified"] <= r["mu"] * (1 + 1e-12) for r in result.rungs)
    assert "noise reduction" in result.training["accounting"].lower()
    # without checkpoints=True the same rungs are fresh fits
    fresh = _select(DPSGDClassifier(delta=1e-6, sample_rate=1.0), y=y_hard, target=0.95,
                    epsilon_start=0.25, epsilon_max=1.0, delta_max=1e-5, tolerance=0.2)
    assert fresh.n_fits == len(fresh.rungs) > 1
    with pytest.raises(ValueError, match="checkpoints=True needs"):
        EpsilonForUtility(DPSGDClassifier(), checkpoints=True).fit(X, y)


def _paths(ladder, cap, auto_C=True):
    """Split the ladder into noise paths: with C="auto" a rung beyond
    NOISE_REDUCTION_SEGMENT times its path's first release starts a new one (a numeric C
    keeps one path). Returns the paths and each rung's test budget (by hand, from its
    increment within its path, in full at a path's start)."""
    paths, increments = [[ladder[0]]], [ladder[0]]
    for epsilon in ladder[1:]:
        if auto_C and epsilon > paths[-1][0] * NOISE_REDUCTION_SEGMENT:
            paths.append([epsilon])
            increments.append(epsilon)
        else:
            increments.append(epsilon - paths[-1][-1])
            paths[-1].append(epsilon)
    return paths, _budgets_by_hand(increments, cap)[0]


@pytest.mark.parametrize("target", [0.6, 0.85])
def test_noise_reduction_rungs_cost_the_last_epsilon_of_each_path(target):
    result = _select(OutputPertSVM(noise="laplace", C=0.5), target=target, epsilon_start=0.05,
                     epsilon_max=20.0, steering="curve", max_rungs=2, tolerance=0.05)
    k = len(result.rungs)
    ladder = _reduction_ladder(0.05, result.noisy_validation_count, 0.05, k, 20.0)
    paths, budgets = _paths(ladder, 20.0, auto_C=False)
    assert result.estimator is not None
    assert [r["epsilon"] for r in result.rungs] == pytest.approx(ladder)
    assert [r["test_budget"] for r in result.rungs] == pytest.approx(budgets)
    assert result.n_fits == len(paths)  # max_rungs counts fits, not releases
    train = sum(path[-1] for path in paths)
    assert result.training["ex_post"] == (pytest.approx(train), 0.0)
    assert result.training["a_priori"] == (20.0, 0.0)
    validation = count_epsilon(20.0) + sum(budgets)
    assert result.validation["ex_post"] == (pytest.approx(validation), 0.0)
    assert result.ex_post == (pytest.approx(max(train, validation)), 0.0)
    assert result.estimator.epsilon == result.estimator.epsilon_spent_ == \
        pytest.approx(ladder[-1])
    assert not hasattr(result.estimator, "_C_epsilon")
    report = private_report(result, "OutputPertSVM", target)
    assert "noise reduction" in result.training["accounting"].lower()
    if len(paths) == 1 and k > 1:
        assert "noise reduction" in report["statement"]


def test_a_long_ladder_starts_new_paths():
    """Past a factor NOISE_REDUCTION_SEGMENT a rung starts a new path (fresh noise): the
    paths' last releases add up, each path's C="auto" resolved at the top of its span."""
    result = _select(OutputPertSVM(noise="laplace"), y=y_hard, target=1.0,
                     epsilon_start=0.05, epsilon_max=6.0, tolerance=0.2)
    ladder = [r["epsilon"] for r in result.rungs]
    paths, budgets = _paths(np.array(ladder), 6.0)
    assert len(paths) >= 3 and result.n_fits == len(paths) and result.estimator is None
    assert result.stop_reason == "cap"
    assert [r["test_budget"] for r in result.rungs] == pytest.approx(budgets)
    train = sum(path[-1] for path in paths)
    assert result.training["ex_post"][0] == pytest.approx(train)
    assert max(train, result.validation["ex_post"][0]) <= 6.0 * (1 + 1e-9)


def test_gaussian_noise_reduction_costs_the_odometer_level_of_the_last_rung():
    result = _select(OutputPertSVM(delta=1e-6, C=0.5), target=0.6, epsilon_start=0.05,
                     epsilon_max=20.0, delta_max=1e-5, tolerance=0.05)
    k = len(result.rungs)
    ladder = _reduction_ladder(0.05, result.noisy_validation_count, 0.05, k, 20.0)
    assert result.estimator is not None and k >= 2 and result.n_fits == 1
    assert ladder[-1] <= ladder[0] * NOISE_REDUCTION_SEGMENT
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


def test_noise_reduction_resolves_auto_C_at_the_top_of_the_path():
    """C="auto" is resolved at the top of the path's span (NOISE_REDUCTION_SEGMENT times
    its first release), not at the first (noisiest) release."""
    result = _select(OutputPertSVM(noise="laplace"), target=0.8, epsilon_start=0.05,
                     epsilon_max=20.0, tolerance=0.05)
    first = result.rungs[0]["epsilon"]
    assert result.n_fits == 1
    top = OutputPertSVM(noise="laplace", epsilon=first * NOISE_REDUCTION_SEGMENT)
    assert result.estimator.C_ == pytest.approx(top.fit(X[:50], y[:50]).C_, rel=1e-6)


@pytest.mark.parametrize("params", [dict(noise="laplace"), dict(delta=1e-6)],
                         ids=["laplace", "gaussian"])
def test_noise_reduction_validation_rows_enter_only_through_the_query_sums(monkeypatch,
                                                                           params):
    """The replay of the fresh-fit case, for the shared noise path."""
    estimator = OutputPertSVM(C=0.5, **params)
    first, second, *_ = _replay(monkeypatch, estimator, dict(
        target=0.7, epsilon_start=0.05, random_state=4, delta_max=1e-5, tolerance=0.05))
    assert len(first.rungs) >= 2
    assert second.rungs == first.rungs
    np.testing.assert_array_equal(second.estimator.coef_, first.estimator.coef_)


def test_noise_reduction_in_a_pipeline_and_in_epsilon_for_utility():
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import Normalizer

    pipe = make_pipeline(Normalizer(), OutputPertSVM(noise="laplace", C=0.5))
    search = EpsilonForUtility(pipe, target_utility=0.6, epsilon_start=0.05,
                               random_state=4).fit(X, y)
    report = search.privacy_report_
    assert search.n_fits_ == 1 and len(report["transcript"]["rungs"]) > 1
    released = search.best_estimator_
    assert released[-1].epsilon == search.epsilon_ == report["parts"]["training"]["ex_post"][
        "epsilon"]
    assert released[-1].random_state is None
    assert search.score(X, y) == released.score(X, y)


def test_auto_margin_is_the_test_error_at_the_target_by_hand():
    """margin="auto" under noise reduction: per rung, the root sum of squares of its
    test's noise, sqrt(2) / (b m), and the validation sampling error sqrt(t (1 - t) /
    m), over the noisy count m; 0 for a ladder of fresh fits."""
    result = _select(OutputPertSVM(C=0.5, noise="laplace"), margin="auto", tolerance=0.05)
    m = result.noisy_validation_count
    for rung in result.rungs:
        expected = np.sqrt(2.0 / (rung["test_budget"] * m) ** 2 + 0.85 * 0.15 / m)
        assert rung["threshold"] == pytest.approx(min(1.0, 0.85 + expected), rel=1e-12)
    fresh = _select(ObjPertLogisticRegression(), margin="auto")
    assert {r["threshold"] for r in fresh.rungs} == {0.85}
    # a fixed margin is used as given
    fixed = _select(ObjPertLogisticRegression(), margin=0.01)
    assert fixed.threshold == pytest.approx(0.86)


# -- every estimator at its defaults ----------------------------------------------------

def test_default_dpsgd_rungs_go_through_the_renyi_odometer():
    """The default DPSGDClassifier samples batches (rate 0.1): its rungs are charged
    their Renyi DP before they run; the whole search has the estimator's delta."""
    search = EpsilonForUtility(DPSGDClassifier(), target_utility=0.85, epsilon_max=4.0,
                               random_state=0).fit(X, y)
    report = search.privacy_report_
    assert "Renyi" in report["parts"]["training"]["accounting"]
    assert report["a_priori"] == {"epsilon": 4.0, "delta": 1e-5}
    assert report["ex_post"]["epsilon"] <= 4.0 and report["ex_post"]["delta"] == 1e-5
    assert all(r["rdp_certified"] <= r["rdp"] * (1 + 1e-9) for r in
               report["transcript"]["rungs"])
    with pytest.raises(ValueError, match="accountant"):
        EpsilonForUtility(DPSGDClassifier(accountant="pld")).fit(X, y)


def test_gaussian_objective_perturbation_rungs_share_the_search_delta():
    """Multinomial KST rungs have no GDP or RDP bound here: basic-composition
    filters at J levels, each rung at delta_max / (J max_rungs), so that the union over
    the levels is delta_max, the estimator's own delta by default."""
    from skdp.accounting._filters import level_ladder

    search = EpsilonForUtility(ObjPertLogisticRegression(delta=1e-5, multi_class="multinomial",
                                                         classes=[0, 1, 2]),
                               target_utility=0.85, random_state=0, max_rungs=5).fit(X, y)
    report = search.privacy_report_
    rung_delta = 1e-5 / (len(level_ladder(10.0, 0.1)) * 5)
    assert [f["delta"] for f in report["fits"]] == pytest.approx([rung_delta] * len(
        report["fits"]))
    assert report["a_priori"] == {"epsilon": 10.0, "delta": 1e-5}
    assert report["ex_post"]["delta"] == 1e-5
    assert search.best_estimator_.delta == pytest.approx(rung_delta)


def test_a_regressor_is_tested_on_the_bounded_utility():
    from sklearn.datasets import make_regression

    from skdp import NAPPLasso

    Xr, yr = make_regression(n_samples=3000, n_features=4, noise=5, random_state=0)
    Xr /= np.linalg.norm(Xr, axis=1).max()
    yr = 4 * yr / np.abs(yr).max()
    search = EpsilonForUtility(NAPPLasso(y_bound=4.0, coef_bound=50.0), target_utility=0.95,
                               random_state=0).fit(Xr, yr)
    report = search.privacy_report_
    assert "bounded squared-error utility" in report["statement"]
    assert report["ex_post"]["epsilon"] <= 10.0
    with pytest.raises(ValueError, match="y_bound"):
        EpsilonForUtility(NAPPLasso(coef_bound=50.0)).fit(Xr, yr)


def _ssp_regression(n=3000):
    from sklearn.datasets import make_regression

    X, y = make_regression(n_samples=n, n_features=4, noise=5.0, random_state=0)
    return X / 1.5, y / 60.0


def test_a_regressor_utility_on_a_public_scale_against_its_formula():
    from skdp import SSPLinearRegression
    from skdp.model_selection._selection_tests import bounded_utilities

    X, y = _ssp_regression(200)
    model = SSPLinearRegression(epsilon=np.inf, data_norm=1.5, y_bound=2.0).fit(X, y)
    for scale in (None, 4.0, 0.3):
        s = 4.0 if scale is None else scale
        expected = [1.0 - min(1.0, (min(max(t, -2.0), 2.0) - p) ** 2 / s**2)
                    for t, p in zip(y, model.predict(X))]
        assert bounded_utilities(model, X, y, 2.0, scale) == pytest.approx(expected,
                                                                          abs=1e-12)


def test_the_default_utility_scale_is_twice_y_bound_and_a_scale_changes_the_tests():
    from skdp import SSPLinearRegression

    X, y = _ssp_regression()

    def search(target=0.9, **kw):
        return EpsilonForUtility(SSPLinearRegression(data_norm=1.5, y_bound=2.0),
                                 target_utility=target, epsilon_start=0.05, epsilon_max=20.0,
                                 random_state=0, **kw).fit(X, y)
    default, explicit = search(), search(utility_scale=4.0)
    with pytest.warns(UnreachableUtilityWarning):
        fine = search(utility_scale=0.5)
    assert default.measurements_ == explicit.measurements_
    assert np.array_equal(default.best_estimator_.coef_, explicit.best_estimator_.coef_)
    assert "error scale 0.5" in fine.privacy_report_["statement"]
    # the same first release, threshold and test noise: a smaller scale lowers every
    # row's utility, so the noisy utility too
    first, first_default = fine.measurements_[0], default.measurements_[0]
    assert first["epsilon"] == first_default["epsilon"]
    assert first["threshold"] == first_default["threshold"]
    assert first["noisy_utility"] < first_default["noisy_utility"]


def test_utility_scale_is_refused_for_a_classifier_before_any_data():
    X_bad = np.full((10, 2), np.nan)
    with pytest.raises(ValueError, match="utility_scale"):
        EpsilonForUtility(ObjPertLogisticRegression(), utility_scale=1.0).fit(
            X_bad, np.arange(10) % 2)


def test_a_regressor_count_costs_at_most_a_first_test():
    """A regressor's one count only scales the test sums: at most the test of a rung at
    epsilon_start; a classifier's label counts keep the cap's share."""
    from skdp import SSPLinearRegression
    from skdp.model_selection._selection_tests import count_epsilon

    X, y = _ssp_regression()
    for start, cap in [(0.01, 20.0), (0.5, 20.0), (0.05, 0.4)]:
        search = EpsilonForUtility(SSPLinearRegression(data_norm=1.5, y_bound=2.0),
                                   target_utility=0.9, epsilon_start=start, epsilon_max=cap,
                                   random_state=0).fit(X, y)
        assert search.privacy_report_["parts"]["validation"]["count_epsilon"] == (
            pytest.approx(min(start, count_epsilon(cap))))
    classifier = EpsilonForUtility(ObjPertLogisticRegression(), target_utility=0.8,
                                   epsilon_start=0.01, random_state=0).fit(X, y > 0)
    assert classifier.privacy_report_["parts"]["validation"]["count_epsilon"] == (
        pytest.approx(count_epsilon(10.0)))


def test_the_gaussian_odometer_refuses_a_rung_above_its_top_filter():
    from skdp.accounting._odometers import GaussianDPOdometer
    from skdp.model_selection._accounts import FittedSpend

    odometer = GaussianDPOdometer(1.0, 1e-5, rung_delta=1e-6, epsilon_start=0.05)
    model = DPSGDClassifier(delta=1e-6, sample_rate=1.0, epochs=5, epsilon=2.0).fit(X, y)
    with pytest.raises(RuntimeError, match="top filter"):
        odometer.charge(2.0, FittedSpend(model))


# -- tests on every row, composed with DP-GD rungs in one GDP odometer ------------------------

def _dpgd_all_rows(target, seed, epochs=20, **kw):
    # the steps alone (the unit intercept column, no intercept start or correction):
    # these tests read the selection's counts and tests, not the rung's intercept
    search = EpsilonForUtility(DPSGDClassifier(delta=1e-6, sample_rate=1.0, epochs=epochs,
                                               learning_rate_schedule="step",
                                               intercept_scaling=1.0,
                                               intercept_correction=False),
                               target_utility=target, epsilon_max=2.0, delta_max=1e-5,
                               epsilon_start=0.2, test_rows="all", random_state=seed, **kw)
    return search.fit(X, y)


@pytest.mark.parametrize("target", [0.8, 0.9])
def test_all_rows_tests_are_charged_to_the_rungs_odometer_by_hand(target):
    search = _dpgd_all_rows(target, seed=3, test_ratio=0.7)
    report = search.privacy_report_
    rungs = report["transcript"]["rungs"]
    mus = np.array([gdp_mu(r["epsilon"], 1e-6) for r in rungs])
    count_mu = 0.7 * gdp_mu(0.2, 1e-6)  # the counts cost one test at epsilon_start
    assert [r["test_budget"] for r in rungs] == pytest.approx(0.7 * mus)
    realised = np.sqrt(count_mu**2 + np.sum(1.49 * mus**2))
    claim, _, level = _odometer_by_hand([0.2], 0.2, 2.0, 1e-5, 1e-6)
    while level / 1.1 >= realised:
        level /= 1.1
    while level < realised:
        level *= 1.1
    n_levels = 1 + int(np.ceil(np.log(gdp_mu(2.0, 1e-5) / gdp_mu(0.2, 1e-6)) / np.log(1.1)))
    assert report["ex_post"] == {"epsilon": pytest.approx(gaussian_epsilon(1e-5 / n_levels,
                                                                           level)),
                                 "delta": 1e-5}
    assert report["parts"]["validation"]["count_mu"] == pytest.approx(count_mu)
    assert report["parts"]["validation"]["ex_post"] == report["parts"]["training"]["ex_post"]
    assert report["a_priori"] == {"epsilon": 2.0, "delta": 1e-5}
    # no row held out: the noisy count is of every row, and the statement says both uses
    assert abs(report["transcript"]["noisy_validation_count"] - len(y)) < 6 / count_mu
    assert "both to train the trial models and to test them" in report["statement"]
    assert "one odometer" in report["composition"]


def test_all_rows_counts_and_tests_have_gaussian_noise_of_their_mu():
    """Over 120 searches whose first rung passes, the count's and the test's noise,
    standardised by their stated ``mu``, are N(0, 1): the sum of squares of the 240
    standardised draws lies within chi-square(240)'s central 99.9 % (and the test's
    noise is read against the released model's exact query on every row)."""
    from scipy import stats

    z = []
    for seed in range(120):
        search = _dpgd_all_rows(0.5, seed, epochs=3)
        report = search.privacy_report_
        (rung,) = report["transcript"]["rungs"]
        exact = np.sum((search.best_estimator_.predict(X) == y) - rung["threshold"])
        z.append((rung["noisy_sum"] - exact) * rung["test_budget"])
        count_mu = report["parts"]["validation"]["count_mu"]
        z.append((report["transcript"]["noisy_validation_count"] - len(y)) * count_mu
                 / np.sqrt(2))  # two label counts
    low, high = stats.chi2.ppf([0.0005, 0.9995], len(z))
    assert low < np.sum(np.square(z)) < high


def _floor_and_rung_mus(report):
    """The test floor's mu, z_0.9 / (0.005 m) on the noisy count m, and each rung's mu
    (at its delta 1e-6), from a Gaussian all-rows search's report."""
    from scipy.stats import norm

    count = report["transcript"]["noisy_validation_count"]
    rungs = report["transcript"]["rungs"]
    return (norm.ppf(0.9) / (0.005 * count),
            np.array([gdp_mu(r["epsilon"], 1e-6) for r in rungs]))


def _test_budgets(report):
    return [r["test_budget"] for r in report["transcript"]["rungs"]]


def test_auto_tests_on_all_rows_are_no_finer_than_the_test_floor_by_hand():
    """test_ratio="auto" with Gaussian tests on every row: each test's mu is its rung's,
    capped at the floor's, z_0.9 / (0.005 m) on the noisy count m (0.21 on these 1200
    rows: the rungs from epsilon 1 up have a larger mu, so their tests are at the floor),
    and the odometer is charged the counts, the rungs and those tests."""
    search = EpsilonForUtility(DPSGDClassifier(delta=1e-6, sample_rate=1.0, epochs=3),
                               target_utility=0.99, epsilon_max=4.0, delta_max=1e-5,
                               epsilon_start=0.5, steering="geometric", test_rows="all",
                               random_state=5).fit(X, y)
    report = search.privacy_report_
    floor, mus = _floor_and_rung_mus(report)
    assert len(mus) >= 3
    tests = np.minimum(mus, floor)
    assert (mus > floor).sum() >= 2 and (mus < floor).sum() >= 1
    assert _test_budgets(report) == pytest.approx(tests, rel=1e-12)
    count_mu = 0.3 * gdp_mu(0.5, 1e-6)  # the counts: 0.3 times a rung at the start
    assert report["parts"]["validation"]["count_mu"] == pytest.approx(count_mu)
    realised = np.sqrt(count_mu**2 + np.sum(mus**2 + tests**2))
    _, _, level = _odometer_by_hand([0.5], 0.5, 4.0, 1e-5, 1e-6)
    while level < realised:
        level *= 1.1
    assert level / 1.1 < realised
    n_levels = 1 + int(np.ceil(np.log(gdp_mu(4.0, 1e-5) / gdp_mu(0.5, 1e-6)) / np.log(1.1)))
    assert report["ex_post"]["epsilon"] == pytest.approx(
        gaussian_epsilon(1e-5 / n_levels, level))


def test_largest_rung_with_its_test_at_the_floor_fills_the_top_filter():
    from skdp.accounting._odometers import GaussianDPOdometer
    from skdp.model_selection._selection_tests import GaussianTests

    odometer = GaussianDPOdometer(4.0, 1e-5, rung_delta=1e-6, epsilon_start=0.5)
    tests = GaussianTests(odometer, 1.0, count_mu=0.1, rung_delta=1e-6, follow_floor=True)
    room = odometer.mu_max**2 - odometer.mu_squared
    unfloored = gdp_mu(tests.largest_rung(), 1e-6)
    assert 2 * unfloored**2 == pytest.approx(room, rel=1e-6)
    tests.set_rows(1200)
    largest = tests.largest_rung()
    assert tests.test_budget(largest) == pytest.approx(tests.floor_mu)
    assert tests.floor_mu < unfloored
    assert gdp_mu(largest, 1e-6) ** 2 + tests.floor_mu**2 == pytest.approx(room, rel=1e-6)


def test_all_rows_is_refused_for_basic_composition_before_any_data_is_read():
    not_data = object()  # reading it would fail differently
    search = EpsilonForUtility(ObjPertLogisticRegression(delta=1e-6, multi_class="multinomial",
                                                         classes=[0, 1, 2]),
                               test_rows="all", epsilon_max=1.0, delta_max=1e-5)
    with pytest.raises(ValueError, match="test_rows='all'"):
        search.fit(not_data, not_data)


@pytest.mark.parametrize("estimator, kw", [
    (OutputPertSVM(delta=1e-6, C=0.1), {}),  # Gaussian noise reduction
    (DPSGDClassifier(delta=1e-6, sample_rate=1.0, epochs=5, learning_rate_schedule="constant"),
     {"checkpoints": True})])
def test_all_rows_tests_on_one_path_are_increments_charged_by_hand(estimator, kw):
    """Gaussian noise reduction and checkpoints of one DP-GD run, tested on every row:
    the path's releases cost its last one's mu^2 (the earlier ones are its
    post-processing, or prefixes of one run of Gaussian steps), and each test, at
    ``mu_t = min(sqrt(mu_k^2 - mu_{k-1}^2), floor)`` (full for a path's first), adds
    ``mu_t^2``: fully adaptive GDP composition of the path's increments and the tests.
    The odometer's realised mu^2 is the counts' plus the path's last plus the tests'."""
    search = EpsilonForUtility(estimator, target_utility=0.99, epsilon_max=2.0,
                               delta_max=1e-5, epsilon_start=0.05, test_rows="all",
                               max_rungs=4, random_state=3, **kw).fit(X, y)
    report = search.privacy_report_
    floor, mus = _floor_and_rung_mus(report)
    assert len(mus) >= 2
    increments = np.sqrt(np.diff(np.concatenate([[0.0], mus**2])))
    tests = np.minimum(increments, floor)
    assert _test_budgets(report) == pytest.approx(tests, rel=1e-9)
    count_mu = report["parts"]["validation"]["count_mu"]
    assert count_mu == pytest.approx(0.3 * gdp_mu(0.05, 1e-6))
    realised = np.sqrt(count_mu**2 + mus[-1] ** 2 + np.sum(tests**2))
    _, _, level = _odometer_by_hand([0.05], 0.05, 2.0, 1e-5, 1e-6)
    while level < realised * (1 - 1e-12):
        level *= 1.1
    assert level / 1.1 < realised
    n_levels = 1 + int(np.ceil(np.log(gdp_mu(2.0, 1e-5) / gdp_mu(0.05, 1e-6)) / np.log(1.1)))
    assert report["ex_post"]["epsilon"] == pytest.approx(
        gaussian_epsilon(1e-5 / n_levels, level))


@pytest.mark.parametrize("estimator", [
    DPSGDClassifier(delta=1e-6, sample_rate=0.1, epochs=2),
    ObjPertLogisticRegression(delta=1e-6)])
def test_all_rows_tests_join_the_renyi_odometer_by_hand(estimator):
    """Fresh Renyi rungs (Poisson DP-SGD, Gaussian objective perturbation) on every row:
    the counts (one test of a rung at epsilon_start) and each rung's Gaussian test at
    test_ratio times its rung's mu are charged alpha mu^2 / 2 at every order, with the
    rungs' own RDP, and the claim is the lowest level whose filter the total fits."""
    from skdp.accounting._rdp import ORDERS
    from skdp.model_selection._accounts import renyi_odometer_for
    from skdp.model_selection._selection_accounts import training_account

    account = training_account(estimator, 4.0, 1e-5, 0.3, max_rungs=3)
    result = _select(estimator, y=y_hard, target=0.97, epsilon_max=4.0, delta_max=1e-5,
                     epsilon_start=0.3, test_rows="all", test_ratio=0.5, max_rungs=3,
                     random_state=2, account=account)
    report = private_report(result, type(estimator).__name__, 0.97)
    rungs = report["transcript"]["rungs"]
    assert len(rungs) == 3
    odometer = renyi_odometer_for(estimator, 4.0, 1e-5, 0.3)  # an untouched one
    mus = np.array([gdp_mu(r["epsilon"], 1e-6) for r in rungs])
    count_mu = 0.5 * gdp_mu(0.3, 1e-6)
    assert [r["test_budget"] for r in rungs] == pytest.approx(0.5 * mus)
    total = (ORDERS * (count_mu**2 + np.sum((0.5 * mus) ** 2)) / 2
             + sum(odometer.cost.rdp(r["epsilon"]) for r in rungs))
    assert account[0].spent == pytest.approx(total, rel=1e-12)
    fits = total[odometer.order_indices] <= odometer.budgets * (1 + 1e-12)
    assert fits.any()
    assert report["ex_post"] == {"epsilon": pytest.approx(odometer.levels[np.argmax(fits)]),
                                 "delta": 1e-5}
    assert report["parts"]["validation"]["count_mu"] == pytest.approx(count_mu)
    assert "Renyi" in report["parts"]["validation"]["accounting"]


def test_renyi_all_rows_counts_alone_are_claimed():
    """A cohort too small for the cap fits no rung, but the counts on every row were
    released: the Renyi odometer claims their level, not zero."""
    from skdp.accounting._rdp import ORDERS
    from skdp.model_selection._accounts import renyi_odometer_for

    estimator = ObjPertLogisticRegression(delta=1e-6)
    result = _select(estimator, target=0.9, epsilon_max=4.0, delta_max=1e-5,
                     epsilon_start=0.3, test_rows="all", tolerance=1e-6)
    assert result.stop_reason == "cohort_too_small" and not result.rungs
    odometer = renyi_odometer_for(estimator, 4.0, 1e-5, 0.3)
    counts = ORDERS * (0.3 * gdp_mu(0.3, 1e-6)) ** 2 / 2  # "auto": 0.3 of a rung at the start
    fits = counts[odometer.order_indices] <= odometer.budgets
    assert result.ex_post == (pytest.approx(odometer.levels[np.argmax(fits)]), 1e-5)
    assert result.ex_post[0] > 0


@pytest.mark.parametrize("target", [0.8, 0.95])
def test_pure_all_rows_tests_add_to_the_rungs_sum_by_hand(target):
    search = EpsilonForUtility(ObjPertLogisticRegression(), target_utility=target,
                               epsilon_max=10.0, epsilon_start=0.5, steering="geometric",
                               test_rows="all", test_ratio=0.2, random_state=4).fit(X, y)
    report = search.privacy_report_
    rungs = report["transcript"]["rungs"]
    epsilons = [r["epsilon"] for r in rungs]
    assert epsilons == pytest.approx([0.5 * 2**k for k in range(len(rungs))])
    assert [r["test_budget"] for r in rungs] == pytest.approx(0.2 * np.array(epsilons))
    count = 0.2 * 0.5  # one test of a rung at epsilon_start
    total = count + 1.2 * sum(epsilons)
    assert report["ex_post"] == {"epsilon": pytest.approx(total), "delta": 0.0}
    assert report["parts"]["validation"]["count_epsilon"] == pytest.approx(count)
    assert report["parts"]["validation"]["tests"] == pytest.approx(total - sum(epsilons))
    assert report["a_priori"] == {"epsilon": 10.0, "delta": 0.0}
    # every row counted: two Laplace label counts of scale 1 / count
    assert abs(report["transcript"]["noisy_validation_count"] - len(y)) < 40 / count
    # the released model is the last rung's
    assert search.best_estimator_.epsilon_spent_ == pytest.approx(epsilons[-1])


def test_laplace_noise_reduction_on_all_rows_by_hand():
    """Releases of one Laplace noise path on every row: the path costs its last release,
    each test test_ratio times its rung's increment over the last release (in full for
    the first) and the counts one test of a rung at epsilon_start, all added."""
    search = EpsilonForUtility(OutputPertSVM(noise="laplace", C=1.0), target_utility=0.9,
                               epsilon_max=10.0, epsilon_start=0.2, test_rows="all",
                               test_ratio=0.1, tolerance=1.0, random_state=5).fit(X, y)
    report = search.privacy_report_
    rungs = report["transcript"]["rungs"]
    epsilons = np.array([r["epsilon"] for r in rungs])
    assert len(epsilons) >= 2 and search.n_fits_ == 1
    assert epsilons == pytest.approx(0.2 * NOISE_REDUCTION_STEP ** np.arange(len(rungs)))
    increments = np.diff(epsilons, prepend=0.0)
    assert [r["test_budget"] for r in rungs] == pytest.approx(0.1 * increments)
    total = epsilons[-1] + 0.1 * 0.2 + 0.1 * epsilons[-1]
    assert report["ex_post"] == {"epsilon": pytest.approx(total), "delta": 0.0}
    assert report["parts"]["validation"]["count_epsilon"] == pytest.approx(0.02)
    assert search.best_estimator_.epsilon == pytest.approx(epsilons[-1])
    assert "both to train the trial models and to test them" in report["statement"]


@pytest.mark.parametrize("test_rows, estimator, ratio", [
    ("all", ObjPertLogisticRegression(), 0.05),
    ("held_out", ObjPertLogisticRegression(), 1.0),
    ("all", DPSGDClassifier(delta=1e-6, sample_rate=1.0, epochs=5,
                            learning_rate_schedule="step"), 1.0)])
def test_auto_test_ratio_by_route(test_rows, estimator, ratio):
    search = EpsilonForUtility(estimator, target_utility=0.99, epsilon_max=2.0,
                               delta_max=1e-5 if estimator.get_params().get("delta") else None,
                               epsilon_start=0.5, test_rows=test_rows, max_rungs=1,
                               random_state=0)
    with pytest.warns(UnreachableUtilityWarning):
        search.fit(X, y_hard)
    (rung,) = search.measurements_
    scale = rung["mu"] if "mu" in rung else rung["epsilon"]
    budget = rung["test_budget"]
    if test_rows == "held_out":  # less what the counts still owe, at least half
        assert ratio * scale / 2 <= budget <= ratio * scale
    else:
        assert budget == pytest.approx(ratio * scale)


@pytest.mark.parametrize("estimator", [DPSGDClassifier(delta=1e-6, data_norm="private"),
                                       ObjPertLogisticRegression(delta=1e-6,
                                                                 data_norm="private")])
def test_a_private_row_bound_with_gaussian_rungs_is_refused_before_any_work(estimator):
    """A Gaussian or Renyi charge from the rung's public calibration would leave out the
    pure epsilon the private bound spends; pure rungs charge their whole epsilon_spent_."""
    not_data = object()
    with pytest.raises(ValueError, match="data_norm='private'"):
        EpsilonForUtility(estimator, epsilon_max=1.0, delta_max=1e-5).fit(not_data, not_data)


def test_a_long_ladder_with_a_numeric_C_stays_on_one_path():
    """Paths are cut only to re-resolve C="auto": with a numeric C one fit's noise serves
    every rung, and the training rows pay the last release alone."""
    result = _select(OutputPertSVM(noise="laplace", C=0.5), y=y_hard, target=1.0,
                     epsilon_start=0.05, epsilon_max=6.0, tolerance=0.2)
    ladder = [r["epsilon"] for r in result.rungs]
    assert ladder[-1] > 4 * ladder[0] and result.n_fits == 1 and result.estimator is None
    assert result.training["ex_post"][0] == pytest.approx(ladder[-1])
