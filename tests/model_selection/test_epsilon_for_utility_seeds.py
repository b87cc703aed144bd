"""EpsilonForUtility releases nothing from which the released model's noise can be
regenerated, tested as the attack that broke it: replay every integer the fitted
meta-estimator holds as a seed and compare with the released coefficients."""

import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import make_classification

from skdp import AnalyticEpsilonForUtility, ObjPertLogisticRegression, OutputPertSVM
from skdp.research import ResearchNAPPLasso

X, y = make_classification(n_samples=600, n_features=4, n_informative=3, n_redundant=0,
                           random_state=0)
X /= np.linalg.norm(X, axis=1).max()


def _analytic(*args, **params):
    """The analytic method (these tests are about its internal fits' noise)."""
    return AnalyticEpsilonForUtility(*args, **params)


def _integers(obj, seen=None):
    """Every integer reachable from ``obj`` (attributes, params, containers)."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, (bool, np.bool_)):
        return
    if isinstance(obj, (int, np.integer)):
        yield int(obj)
    elif isinstance(obj, dict):
        for value in list(obj.keys()) + list(obj.values()):
            yield from _integers(value, seen)
    elif isinstance(obj, (list, tuple, set)):
        for value in obj:
            yield from _integers(value, seen)
    elif isinstance(obj, np.ndarray) and obj.dtype.kind in "iu":
        for value in obj.ravel()[:1000]:
            yield int(value)
    elif hasattr(obj, "get_params"):
        yield from _integers(obj.get_params(deep=True), seen)
        yield from _integers(vars(obj), seen)
    elif hasattr(obj, "__dict__") and not isinstance(obj, type):
        yield from _integers(vars(obj), seen)


@pytest.mark.filterwarnings("ignore::skdp.UnreachableUtilityWarning")
@pytest.mark.parametrize("inner", [OutputPertSVM(C=0.1), ObjPertLogisticRegression(C=1.0)],
                         ids=["outputpert", "objpert"])
def test_no_held_integer_regenerates_the_released_noise(inner):
    search = _analytic(inner, target_utility=0.8, n_draws=2, max_fits=6).fit(X, y)
    released = search.best_estimator_
    assert released.random_state is None
    candidates = set(_integers(search)) | set(_integers(pickle.loads(pickle.dumps(search))))
    assert candidates, "the scan found nothing to try: it would be vacuous"
    for seed in sorted(candidates)[:200]:
        replay = clone(released).set_params(random_state=seed).fit(X, y)
        assert not np.allclose(replay.coef_, released.coef_), f"seed {seed} replays the noise"
    # a default refit of the released configuration draws other noise too
    assert not np.allclose(clone(released).fit(X, y).coef_, released.coef_)


@pytest.mark.filterwarnings("ignore::skdp.UnreachableUtilityWarning")
def test_no_seed_in_records():
    search = _analytic(ObjPertLogisticRegression(C=1.0), target_utility=0.8, n_draws=2,
                               max_fits=6).fit(X, y)
    for record in search.measurements_:
        assert "seed" not in record
    for fit in search.privacy_report_["fits"]:
        assert set(fit) == {"epsilon", "delta", "purpose", "noise_draw"}


@pytest.mark.filterwarnings("ignore::skdp.UnreachableUtilityWarning")
def test_reproducibility_mode_keeps_the_users_random_state():
    """An int seed reproduces the search, and the released estimator keeps exactly the
    random_state the user gave (not a derived seed)."""
    runs = [_analytic(ObjPertLogisticRegression(random_state=None), target_utility=0.8,
                              n_draws=2, max_fits=6, random_state=3).fit(X, y)
            for _ in range(2)]
    np.testing.assert_array_equal(runs[0].best_estimator_.coef_, runs[1].best_estimator_.coef_)
    assert runs[0].best_estimator_.random_state is None
    inner_seeded = _analytic(ObjPertLogisticRegression(random_state=11),
                                     target_utility=0.8, n_draws=2, max_fits=6).fit(X, y)
    assert inner_seeded.best_estimator_.random_state == 11
    # the refit did not use 11 itself: replaying it does not give the released model
    replay = clone(inner_seeded.best_estimator_).fit(X, y)
    assert not np.allclose(replay.coef_, inner_seeded.best_estimator_.coef_)


@pytest.mark.filterwarnings("ignore::skdp.UnreachableUtilityWarning")
def test_internal_fits_draw_independent_noise_and_compose():
    search = _analytic(ObjPertLogisticRegression(C=1.0), target_utility=0.8, n_draws=2,
                               max_fits=6).fit(X, y)
    report = search.privacy_report_
    draws = [f["noise_draw"] for f in report["fits"]]
    assert len(set(draws)) == len(draws)
    assert report["total_epsilon"] == pytest.approx(sum(f["epsilon"] for f in report["fits"]))
    # certified spend, not the request: the released model's own epsilon_spent_
    assert report["fits"][-1]["epsilon"] == search.best_estimator_.epsilon_spent_


@pytest.mark.filterwarnings("ignore::skdp.UnreachableUtilityWarning")
@pytest.mark.filterwarnings("ignore::skdp.PrivacyLeakWarning")
def test_research_mode_makes_the_report_unbounded():
    from sklearn.datasets import make_regression

    Xr, yr = make_regression(n_samples=400, n_features=3, noise=0.5, random_state=0)
    Xr /= np.linalg.norm(Xr, axis=1).max()
    yr = np.clip(yr / np.abs(yr).max(), -1, 1)
    research = ResearchNAPPLasso(research_mode="moor", y_bound=1.0, coef_bound=5.0)
    search = _analytic(research, target_utility=0.5, n_draws=1, max_fits=4).fit(Xr, yr)
    report = search.privacy_report_
    assert report["total_epsilon"] == np.inf
    assert "share their noise" in report["composition"] or "research" in report["composition"]
