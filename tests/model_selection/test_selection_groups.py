"""Private selection with persons as the unit (``EpsilonForUtility.fit(X, y,
groups=...)``): one public coin per person, counts of persons, per-person tests, rungs
fitted with the training part's groups, refusals before any data is read."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.datasets import make_classification

from skdp import (DPSGDClassifier, EpsilonForUtility, ObjPertLogisticRegression,
                  OutputPertSVM)
from skdp.model_selection._private_selection import (
    _SelectionStreams,
    coin_split,
    person_coin_split,
    select_epsilon_privately,
)
from skdp.model_selection._selection_tests import (
    _validation_histogram,
    _validation_sum,
    count_epsilon,
    person_shares,
)
from skdp.utils._groups import check_groups

from ._persons import (_person_coins, _PersonStub, _ReleasesRowsOnly, _RowsOnly,
                       _straddling, _with_a_person)

X, y = make_classification(n_samples=1200, n_features=4, n_informative=2, n_redundant=0,
                           class_sep=1.5, random_state=0)
X /= np.linalg.norm(X, axis=1).max()
# 300 persons of 1 to 7 rows, labelled by strings so that codes are not row positions
_sizes = np.random.default_rng(3).integers(1, 8, size=400)
_person = np.repeat(np.arange(400), _sizes)[:len(y)]
groups = np.array([f"p{p:04d}" for p in _person], dtype=object)


def _select(estimator, X=X, y=y, **params):
    defaults = dict(target=0.85, epsilon_max=10.0, epsilon_start=0.05,
                    steering="geometric", random_state=0, tolerance=0.5)
    return select_epsilon_privately(estimator, X, y, **{**defaults, **params})


# -- the split: one public coin per person -------------------------------------------------

def test_person_coins_keep_each_person_in_one_part():
    codes = check_groups(groups, len(y))
    in_validation = person_coin_split(codes, 0.2, np.random.default_rng(7))
    assert _straddling(codes, in_validation) == 0
    assert 0.1 < in_validation.mean() < 0.3
    # the check can fail: a coin per row splits most persons of several rows
    assert _straddling(codes, coin_split(len(y), 0.2, np.random.default_rng(7))) > 50


def test_person_coins_are_public_and_the_same_on_any_data():
    """Person ``j``'s coin is the ``j``-th draw of the public stream, whatever the rows:
    the same split for the same seed on other features and labels, and adding a
    person (sorting last) moves no other person across the split."""
    codes = check_groups(groups, len(y))
    np.testing.assert_array_equal(
        person_coin_split(codes, 0.2, _SelectionStreams(4).coins()), _person_coins(4, codes))
    more = np.r_[codes, [codes.max() + 1] * 5]
    np.testing.assert_array_equal(
        person_coin_split(more, 0.2, _SelectionStreams(4).coins())[:len(y)],
        _person_coins(4, codes))
    # through the search: other data, the same groups, the same training persons
    received = []
    for X_, y_ in [(X, y), (np.random.default_rng(1).normal(size=X.shape) / 10,
                             np.random.default_rng(2).integers(0, 2, len(y)))]:
        _PersonStub.received = []
        _select(_PersonStub(), X_, y_, groups=groups, random_state=4, max_rungs=1)
        received.append(_PersonStub.received[0])
    np.testing.assert_array_equal(received[0], received[1])
    np.testing.assert_array_equal(received[0], groups[~_person_coins(4, codes)])


# -- the per-person test and the counts ------------------------------------------------------

def _test_sum_by_hand(model, X_val, y_val, persons, threshold):
    """``sum_p (mean accuracy of p's rows - t)`` by a group-by."""
    right = pd.Series(model.predict(X_val) == y_val, dtype=float)
    return float((right.groupby(np.asarray(persons)).mean() - threshold).sum())


def test_person_test_sum_by_hand(monkeypatch):
    """The sum each rung's test adds noise to is the sum over the validation part's
    persons of their mean utility less the threshold (an independent group-by), on
    the person coins' validation rows."""
    import skdp.model_selection._selection_tests as module

    seen, original = [], module._validation_sum
    monkeypatch.setattr(module, "_validation_sum",
                        lambda *args: seen.append((args, original(*args))) or seen[-1][1])
    result = _select(_PersonStub(), groups=groups, target=0.93, random_state=6)
    assert len(seen) == len(result.rungs) >= 2
    codes = check_groups(groups, len(y))
    in_validation = _person_coins(6, codes)
    for (model, X_val, y_val, threshold, _, _), value in seen:
        np.testing.assert_array_equal(X_val, X[in_validation])
        assert value == pytest.approx(_test_sum_by_hand(
            model, X[in_validation], y[in_validation], groups[in_validation], threshold))
        # and not the row sum, which counts a person of k rows k times
        rows = float(np.sum((model.predict(X_val) == y_val) - threshold))
        assert value != pytest.approx(rows)
    last = result.rungs[-1]
    assert last["noisy_utility"] == pytest.approx(
        last["threshold"] + last["noisy_sum"] / result.noisy_validation_count)


@pytest.mark.parametrize("k", [1, 2, 5, 9])
@pytest.mark.parametrize("right", [True, False])
def test_a_person_moves_the_test_sum_and_the_counts_by_at_most_one(k, right):
    """Exact audit on person-level neighbours: adding one person of ``k`` rows (all
    predicted right, or random labels) moves the test sum by their mean utility less
    ``t`` (at most ``max(t, 1 - t)``) and the class counts by a vector of L1 norm 1, so
    the test's pass/fail probabilities and a count's Laplace density move by at most
    ``exp(budget)``. The row-level sum on the same neighbours moves by ``k (1 - t)``
    for a person predicted right: the planted row statistic is caught for ``k > 1``."""
    model = _PersonStub().fit(X, y)
    base, both, codes, codes_both, y_both = _with_a_person(model, X, y, groups, k, right,
                                                           1000)
    b, classes = 0.7, np.array([0, 1])
    for t in (0.0, 0.3, 0.9, 1.0):
        f = _validation_sum(model, X[base], y[base], t, None, person_shares(codes))
        f2 = _validation_sum(model, X[both], y_both, t, None, person_shares(codes_both))
        assert abs(f2 - f) <= max(t, 1 - t) + 1e-12
        noise = stats.laplace(scale=1 / b)  # pass: f + noise >= 0; fail: below
        assert abs(noise.logsf(-f) - noise.logsf(-f2)) <= b + 1e-9
        assert abs(noise.logcdf(-f) - noise.logcdf(-f2)) <= b + 1e-9
        rows = (np.sum((model.predict(X[both]) == y_both) - t)
                - np.sum((model.predict(X[base]) == y[base]) - t))
        if right:
            assert f2 - f == pytest.approx(1 - t)
            assert rows == pytest.approx(k * (1 - t))  # above 1 for k > 1 and t < 1 / 2
    h = _validation_histogram(y[base], classes, person_shares(codes))
    h2 = _validation_histogram(y_both, classes, person_shares(codes_both))
    assert np.abs(h2 - h).sum() == pytest.approx(1.0)
    assert np.linalg.norm(h2 - h) <= 1.0 + 1e-12
    assert h.sum() == pytest.approx(codes.max() + 1)  # the counts count persons
    e = 0.1
    for count in np.linspace(-30, 30, 13):
        log_ratio = np.sum(stats.laplace(scale=1 / e).logpdf(count - h)
                           - stats.laplace(scale=1 / e).logpdf(count - h2))
        assert abs(log_ratio) <= e + 1e-9


def test_noisy_person_counts_have_laplace_noise_of_the_stated_scale():
    """The validation part's person counts per class (each person's fraction of rows in
    the class) plus ``Lap(1 / e_C)`` each, ``e_C = count_epsilon(cap)``: the released
    counts less the exact ones by hand follow that law (Kolmogorov-Smirnov over 300
    runs; a tolerance no test can meet stops each run after the counts). Against the
    row counts the difference is far from zero: the check can fail."""
    codes = check_groups(groups, len(y))
    noise, against_rows = [], []
    for seed in range(300):
        result = _select(_PersonStub(), groups=groups, random_state=seed, tolerance=1e-9,
                         epsilon_max=2.0)
        assert result.stop_reason == "cohort_too_small" and not result.rungs
        in_validation = _person_coins(seed, codes)
        frame = pd.DataFrame({"person": codes[in_validation], "label": y[in_validation]})
        shares = pd.crosstab(frame["person"], frame["label"], normalize="index")
        exact = shares.reindex(columns=[0, 1], fill_value=0.0).sum().to_numpy()
        noise.extend(np.asarray(result.noisy_label_counts) - exact)
        against_rows.extend(np.asarray(result.noisy_label_counts)
                            - np.bincount(y[in_validation], minlength=2))
        assert result.noisy_validation_count == pytest.approx(
            sum(result.noisy_label_counts))
    scale = 1 / count_epsilon(2.0)
    assert scale == 10.0
    assert stats.kstest(noise, stats.laplace(scale=scale).cdf).pvalue > 1e-3
    assert stats.kstest(against_rows, stats.laplace(scale=scale).cdf).pvalue < 1e-6


def test_gaussian_person_counts_on_every_person_have_the_stated_scale(monkeypatch):
    """``test_rows="all"`` with full-batch DP-GD rungs: the person counts (each
    person's class fractions, L2 sensitivity at most 1) of every row plus ``N(0, 1 /
    mu_c^2)`` each, ``mu_c`` 0.3 times the ``mu`` of a rung at ``epsilon_start`` (``test_ratio=
    "auto"``), charged to the odometer. A tolerance no test meets stops each run after
    the counts (Kolmogorov-Smirnov over 200 runs). ``DPSGDClassifier.fit`` is given a
    ``groups`` parameter here (its accounts are chosen by its exact type); no rung runs."""
    from skdp.accounting import gdp_mu

    monkeypatch.setattr(DPSGDClassifier, "fit",
                        lambda self, X, y, groups=None: pytest.fail("a rung ran"))

    codes = check_groups(groups, len(y))
    frame = pd.DataFrame({"person": codes, "label": y})
    exact = pd.crosstab(frame["person"], frame["label"], normalize="index").sum().to_numpy()
    noise = []
    for seed in range(200):
        result = _select(DPSGDClassifier(sample_rate=1.0, delta=1e-6), groups=groups,
                         random_state=seed, tolerance=1e-9, test_rows="all",
                         epsilon_start=0.5)
        assert result.stop_reason == "cohort_too_small" and not result.rungs
        noise.extend(np.asarray(result.noisy_label_counts) - exact)
    count_mu = result.validation["count_mu"]
    assert count_mu == pytest.approx(0.3 * gdp_mu(0.5, 1e-6))  # "auto": 0.3 of a rung
    assert stats.kstest(noise, stats.norm(scale=1 / count_mu).cdf).pvalue > 1e-3
    # against the row counts: far off
    rows = np.asarray(noise[-2:]) + exact - np.bincount(y)
    assert np.all(np.abs(rows) > 10 / count_mu)


# -- the rungs get the training part's groups -------------------------------------------------

def test_rungs_receive_the_training_part_groups():
    _PersonStub.received = []
    result = _select(_PersonStub(), groups=groups, target=0.93, random_state=6)
    assert len(_PersonStub.received) == len(result.rungs) >= 2
    in_validation = _person_coins(6, check_groups(groups, len(y)))
    for received in _PersonStub.received:
        np.testing.assert_array_equal(received, groups[~in_validation])
    assert result.estimator.neighboring_ == "add_remove_person"


def test_a_pipeline_passes_the_groups_to_its_private_step():
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import Normalizer

    _PersonStub.received = []
    pipe = make_pipeline(Normalizer(), _PersonStub())
    search = EpsilonForUtility(pipe, target_utility=0.85, random_state=0)
    search.fit(X, y, groups=groups)
    in_validation = _person_coins(0, check_groups(groups, len(y)))
    assert _PersonStub.received
    for received in _PersonStub.received:
        np.testing.assert_array_equal(received, groups[~in_validation])


def test_a_rung_without_a_person_guarantee_is_caught():
    """An estimator that takes groups but certifies rows only (``neighboring_`` not
    ``"add_remove_person"``) stops the search at its first rung."""

    class _Ignores(ObjPertLogisticRegression):
        def fit(self, X, y, groups=None):
            return super().fit(X, y)

    with pytest.raises(RuntimeError, match="add_remove_person"):
        _select(_Ignores(), groups=groups, max_rungs=1)


def test_gaussian_objpert_rungs_over_persons_compose_their_epsilon_delta():
    """Gaussian objective perturbation over persons: each rung is calibrated for one
    person (the chi-square tail of their gradient's span) and charged by the
    basic-composition odometer, never by the record's Renyi curve (which the search
    over rows uses)."""
    est = ObjPertLogisticRegression(delta=1e-5, data_norm=1.0)
    persons = _select(est, groups=groups, max_rungs=3, delta_max=1e-5)
    rows = _select(est, max_rungs=3, delta_max=1e-5)
    assert persons.estimator.neighboring_ == "add_remove_person"
    assert persons.training["accounting"].startswith("(epsilon, delta)-DP rungs: basic")
    assert 0 < persons.estimator.delta < 1e-5            # a rung's share of the delta
    assert "Renyi curve" in rows.training["accounting"]
    assert rows.estimator.delta == 1e-5


def test_every_person_a_single_row_is_the_row_level_search():
    """Singleton persons (labels sorting as the rows): the same coins, counts, sums and
    rungs as the search over rows, exactly; only the unit in the report differs."""
    rows = _select(_PersonStub(), target=0.93, random_state=6)
    persons = _select(_PersonStub(), target=0.93, random_state=6, groups=np.arange(len(y)))
    assert persons.rungs == rows.rungs
    assert persons.noisy_label_counts == rows.noisy_label_counts
    np.testing.assert_array_equal(persons.estimator.coef_, rows.estimator.coef_)
    assert (rows.unit, persons.unit) == ("row", "person")


# -- the report ----------------------------------------------------------------------------

def test_the_report_says_the_unit_is_one_person():
    search = EpsilonForUtility(_PersonStub(), target_utility=0.85, random_state=0)
    search.fit(X, y, groups=groups)
    report = search.privacy_report_
    assert report["neighboring"] == "add_remove_person" and report["unit"] == "person"
    assert "any one person (all of their rows)" in report["statement"]
    assert "one independent coin per person" in report["statement"]
    rows = EpsilonForUtility(_PersonStub(), target_utility=0.85, random_state=0).fit(X, y)
    assert rows.privacy_report_["neighboring"] == "add_remove"
    assert "all of their rows" not in rows.privacy_report_["statement"]
    # at row level the unit is a record, and "person" is kept for groups
    assert "any one record (row)" in rows.privacy_report_["statement"]
    assert "person" not in rows.privacy_report_["statement"]


# -- refusals, before any data is read -------------------------------------------------------

class _PersonSVM(OutputPertSVM):
    def fit(self, X, y, groups=None):
        return super().fit(X, y)


@pytest.mark.parametrize("search, match", [
    (EpsilonForUtility(_RowsOnly()), "does not take groups"),
    (EpsilonForUtility(_ReleasesRowsOnly()), "does not take groups"),
    (EpsilonForUtility(_PersonSVM(noise="laplace")), "fresh rungs"),
    (EpsilonForUtility(_PersonSVM(delta=1e-6)), "fresh rungs"),
    (EpsilonForUtility(_PersonStub(neighboring="replace")), "adding or removing one person"),
    (EpsilonForUtility(_PersonStub(data_norm="private")), "data_norm"),
])
def test_unsupported_groups_are_refused_before_any_data_is_read(monkeypatch, search, match):
    import skdp.model_selection._epsilon_for_utility as meta
    import skdp.model_selection._private_selection as module

    monkeypatch.setattr(meta, "validate_private_input",
                        lambda *a: pytest.fail("the data were read"))
    monkeypatch.setattr(module, "coin_split", lambda *a: pytest.fail("data were split"))
    with pytest.raises(ValueError, match=match):
        search.fit(X, y, groups=groups)


@pytest.mark.parametrize("bad", [groups[:-1], np.r_[groups[:-1], [None]]])
def test_malformed_groups_are_refused_before_any_noise(monkeypatch, bad):
    monkeypatch.setattr(_SelectionStreams, "noise", lambda self: pytest.fail("noise drawn"))
    with pytest.raises(ValueError, match="groups"):
        EpsilonForUtility(_PersonStub(), random_state=0).fit(X, y, groups=bad)
    with pytest.raises(ValueError, match="groups"):
        _select(_PersonStub(), groups=bad)


# -- tests on every person, and the replay ------------------------------------------------------

def test_tests_on_every_person_by_hand(monkeypatch):
    """``test_rows="all"`` with pure rungs: every rung gets every row's group, the test
    sums run over every person, and the counts and tests are charged to the rungs' sum
    (as for rows)."""
    import skdp.model_selection._selection_tests as module

    seen, original = [], module._validation_sum
    monkeypatch.setattr(module, "_validation_sum",
                        lambda *args: seen.append((args, original(*args))) or seen[-1][1])
    _PersonStub.received = []
    result = _select(_PersonStub(), groups=groups, target=0.93, random_state=6,
                     test_rows="all", epsilon_start=1.0)
    assert result.rungs and len(_PersonStub.received) == len(seen) == len(result.rungs)
    for received in _PersonStub.received:
        np.testing.assert_array_equal(received, groups)
    for (model, X_val, y_val, threshold, _, _), value in seen:
        assert len(y_val) == len(y)
        assert value == pytest.approx(_test_sum_by_hand(model, X, y, groups, threshold))
    ran = [r["epsilon"] for r in result.rungs]
    budgets = [r["test_budget"] for r in result.rungs]
    counts = 0.05 * 1.0  # test_ratio "auto" (0.05) times epsilon_start
    assert result.ex_post[0] == pytest.approx(sum(ran) + sum(budgets) + counts)


def test_validation_persons_enter_only_through_the_sums(monkeypatch):
    """Replay: with the per-person sums and the person counts pinned to a first run's
    values, replacing every row of every validation person by noise changes nothing
    released; so they reach the output only through those sums (sensitivity 1 per
    person each). Unpinned, the real sums on the changed rows differ."""
    import skdp.model_selection._selection_tests as module

    recorded, original = [], module._validation_sum
    histograms, original_histogram = [], module._validation_histogram
    monkeypatch.setattr(module, "_validation_sum",
                        lambda *args: recorded.append(original(*args)) or recorded[-1])
    monkeypatch.setattr(module, "_validation_histogram",
                        lambda *args: histograms.append(original_histogram(*args))
                        or histograms[-1].copy())
    params = dict(target=0.955, steering="curve", random_state=3, tolerance=0.2,
                  groups=groups)
    first = _select(_PersonStub(), **params)
    in_validation = _person_coins(3, check_groups(groups, len(y)))
    X2, y2 = X.copy(), y.copy()
    rng = np.random.default_rng(9)
    X2[in_validation] = rng.normal(size=(in_validation.sum(), X.shape[1])) / 10
    y2[in_validation] = rng.integers(0, 2, in_validation.sum())
    replay = iter(recorded)
    monkeypatch.setattr(module, "_validation_sum", lambda *args: next(replay))
    monkeypatch.setattr(module, "_validation_histogram", lambda *args: histograms[0].copy())
    second = _select(_PersonStub(), X2, y2, **params)
    assert len(first.rungs) >= 3  # the curve steered at least once
    assert second.rungs == first.rungs
    np.testing.assert_array_equal(second.estimator.coef_, first.estimator.coef_)
    shares = person_shares(check_groups(groups, len(y)))[in_validation]
    assert original(first.estimator, X2[in_validation], y2[in_validation], 0.955, None,
                    shares) != original(first.estimator, X[in_validation], y[in_validation],
                                        0.955, None, shares)
