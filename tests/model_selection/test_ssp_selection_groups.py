"""EpsilonForUtility(SSPLinearRegression) with persons: the rungs are releases of one
noise path of the person-weighted statistics (``_noise_reduction_path(..., groups=)``),
each a person-level fit at its epsilon, and the search pays for the last one."""

import numpy as np
import pytest
from numpy.testing import assert_array_equal
from sklearn.datasets import make_regression

from skdp import EpsilonForUtility, OutputPertSVM, SSPLinearRegression
from skdp.utils._groups import check_groups
from tests.linear_model.test_ssp import _gdp_mu, _loss

R, Y = 1.5, 2.0


def _data():
    """3,000 rows of 1,000 persons (three rows each, in random order)."""
    X, y = make_regression(n_samples=3000, n_features=4, noise=5.0, random_state=0)
    persons = np.repeat(np.arange(1000), 3)[np.random.default_rng(0).permutation(3000)]
    return X / 1.5, y / 60.0, np.array([f"p{p:04d}" for p in persons], dtype=object)


def _search(delta, **params):
    return EpsilonForUtility(SSPLinearRegression(delta=delta, data_norm=R, y_bound=Y,
                                                 max_rows_per_group=2.0),
                             target_utility=0.95, epsilon_start=0.05, epsilon_max=20.0,
                             tolerance=0.05, random_state=0, **params)


@pytest.fixture
def recorded_paths(monkeypatch):
    """What each noise path of the search was fitted with: its parameters and data."""
    paths, original = [], SSPLinearRegression._noise_reduction_path

    def recorded(self, X, y, C_epsilon=None, groups=None):
        paths.append(dict(params=self.get_params(), X=X, y=y, groups=groups))
        return original(self, X, y, C_epsilon=C_epsilon, groups=groups)
    monkeypatch.setattr(SSPLinearRegression, "_noise_reduction_path", recorded)
    return paths


@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_the_selection_releases_the_rung_of_the_path_fitted_with_groups(delta,
                                                                        recorded_paths):
    """Replayed outside the search: the path fitted with the training part's groups,
    released at the transcript's epsilons, gives the released model bit for bit; the
    training part holds whole persons; the same path without groups gives another."""
    X, y, groups = _data()
    search = _search(delta).fit(X, y, groups=groups)
    (path,) = recorded_paths                        # one path: the search costs its last
    assert search.n_fits_ == 1
    training = path["groups"]
    assert training is not None and len(training) < len(groups)
    codes = check_groups(groups, len(groups))
    names = np.unique(groups)
    in_training = np.isin(groups, training)
    assert all(in_training[codes == c].all() or not in_training[codes == c].any()
               for c in range(len(names)))       # no person straddles the split
    epsilons = [rung["epsilon"] for rung in search.privacy_report_["transcript"]["rungs"]]
    assert epsilons[-1] == search.epsilon_

    def replay(groups):
        replayed = SSPLinearRegression(**path["params"])._noise_reduction_path(
            path["X"], path["y"], groups=groups)
        return [replayed.release(e) for e in epsilons][-1]
    model = replay(training)
    released = search.best_estimator_
    assert_array_equal(model.coef_, released.coef_)
    assert model.intercept_ == released.intercept_ and model.alpha_ == released.alpha_
    assert released.neighboring_ == model.neighboring_ == "add_remove_person"
    assert released.weight_bound_ == 2.0
    assert not np.array_equal(replay(None).coef_, released.coef_)


@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_the_report_states_the_person_level_guarantee(delta):
    X, y, groups = _data()
    search = _search(delta).fit(X, y, groups=groups)
    report = search.privacy_report_
    assert report["neighboring"] == "add_remove_person" and report["unit"] == "person"
    assert "any one person (all of their rows)" in report["statement"]
    assert "noise reduction" in report["parts"]["training"]["accounting"].lower()
    assert search.best_estimator_.epsilon_spent_ == pytest.approx(search.epsilon_)
    if delta == 0.0:
        assert report["parts"]["training"]["ex_post"]["epsilon"] == pytest.approx(
            search.epsilon_)


@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_every_release_of_a_person_level_path_is_within_its_budget(delta):
    """An exact replay on tiny data: D against D plus one person of ``k`` extreme rows.
    At each release of the two paths, the privacy loss of the released statistics (the
    worst-case log-ratio of the noise densities at that release's calibration) is at
    most that release's budget; the path's statistics are those of the person-level
    fit; the same rows as single-row persons would exceed the budget."""
    rng = np.random.default_rng(5)
    d, M = 2, 2.0
    kw = dict(delta=delta, data_norm=1.0, y_bound=1.0, max_rows_per_group=M,
              epsilon=0.3, random_state=0)

    def path(X, y, groups):
        return SSPLinearRegression(**kw)._noise_reduction_path(X, y, groups=groups)

    for k in (1, 3, 6):
        X, y = rng.uniform(-0.5, 0.5, (5, d)), rng.uniform(-1, 1, 5)
        groups = np.array([0, 0, 1, 2, 2])
        X2 = np.vstack([X, np.full((k, d), 50.0)])
        y2, g2 = np.r_[y, np.full(k, -40.0)], np.r_[groups, np.full(k, 9)]
        first, second = path(X, y, groups), path(X2, y2, g2)
        fit = SSPLinearRegression(**kw)._releases(X2, y2, groups=g2)[0]
        assert_array_equal(second._release.statistics.gram, fit.statistics.gram)
        for epsilon in (0.3, 0.7, 1.5, 4.0):
            first.release(epsilon)
            model = second.release(epsilon)
            budget = _gdp_mu(epsilon, delta) if delta else epsilon
            loss, _ = _loss(first._release, second._release)
            assert loss <= budget * (1 + 1e-9)
            assert model.neighboring_ == "add_remove_person"
        if k > M:
            rows = path(X2, y2, np.r_[groups, 10 + np.arange(k)])
            rows.release(4.0)
            assert _loss(first._release, rows._release)[0] > 1.2 * budget


def test_paths_without_groups_are_still_refused_with_groups():
    """Output perturbation's noise path is fitted without groups: refused by name."""
    X, y, groups = _data()
    with pytest.raises(ValueError, match="fresh rungs"):
        EpsilonForUtility(OutputPertSVM(noise="laplace")).fit(X, (y > 0).astype(int),
                                                              groups=groups)
