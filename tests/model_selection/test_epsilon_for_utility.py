import pickle
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import Normalizer

from skdp import (AnalyticEpsilonForUtility, EpsilonForUtility, ObjPertLogisticRegression,
                  UnreachableUtilityWarning)
from skdp.base import get_privacy_tags
from skdp.model_selection import smoothed_accuracy_derivative
from skdp.model_selection._analytic_epsilon import SELECTION_STATEMENT


def _derivative(release):
    """``(dcoef, dintercept)`` of an EpsilonRelease."""
    return release.coef_derivative, release.intercept_derivative


X, y = make_classification(n_samples=1500, n_features=5, n_informative=2, n_redundant=0,
                           class_sep=1.5, flip_y=0.02, random_state=0)
X /= np.linalg.norm(X, axis=1)[:, None]  # accuracy 0.76 at epsilon 0.1, 0.95 at 1, 0.96 at inf
# reached by the expansion from epsilon 1 inside the trust region [1/5, 5]
TARGET = 0.94


def _search(**params):
    defaults = dict(estimator=ObjPertLogisticRegression(C=10.0, delta=1e-5),
                    target_utility=TARGET, n_draws=2, random_state=0)
    return AnalyticEpsilonForUtility(**{**defaults, **params})


@pytest.fixture(scope="module")
def fitted():
    return _search().fit(X, y)


def test_answer_solves_the_expansion_and_refit_uses_it(fitted):
    assert fitted.predicted_utility_ == pytest.approx(TARGET, abs=1e-9)
    value, _ = fitted.predict_utility([fitted.epsilon_])
    assert value[0] == pytest.approx(TARGET, abs=1e-9)
    assert fitted.best_estimator_.epsilon == fitted.epsilon_
    assert fitted.best_estimator_.n_features_in_ == 5
    assert_allclose(fitted.predict(X), fitted.best_estimator_.predict(X))
    assert_allclose(fitted.predict_proba(X), fitted.best_estimator_.predict_proba(X))
    assert fitted.score(X, y) == fitted.best_estimator_.score(X, y)


def test_inverse_expansion_algebra():
    fitted = _search(expansion="inverse").fit(X, y)
    (point,) = fitted._curve().points
    # measured on 80 % of the rows: the answer is rescaled to the full data by n_fit / n
    assert fitted._size_ratio == pytest.approx(len(y) / int(np.ceil(0.8 * len(y))), rel=1e-2)
    t0, t = 1 / point.epsilon, 1 / (fitted.epsilon_ * fitted._size_ratio)
    # U(t) = U(t0) + dU/dt (t - t0), dU/dt = -epsilon^2 dU/depsilon
    assert point.utility - point.epsilon**2 * point.derivative * (t - t0) == pytest.approx(TARGET)
    linear = _search(expansion="linear", measuring_epsilon=0.3).fit(X, y)
    (p,) = linear._curve().points
    eps_fit = linear.epsilon_ * linear._size_ratio
    assert p.utility + p.derivative * (eps_fit - p.epsilon) == pytest.approx(TARGET)
    unscaled = _search(expansion="linear", measuring_epsilon=0.3,
                       rescale_to_full_data=False).fit(X, y)
    assert unscaled.epsilon_ == pytest.approx(eps_fit)
    on_train = _search(measure_on="train").fit(X, y)
    assert on_train._size_ratio == 1.0


def test_privacy_report_is_the_hand_composition(fitted):
    report = fitted.privacy_report_
    # two measuring fits at epsilon = 1 and the refit at epsilon_, each with delta 1e-5
    assert fitted.n_fits_ == 3 == len(report["fits"])
    assert report["total_epsilon"] == pytest.approx(1.0 + 1.0 + fitted.epsilon_)
    assert report["total_delta"] == pytest.approx(3e-5)
    assert report["released_model"] == {"epsilon": fitted.epsilon_, "delta": 1e-5}
    assert report["statement"] == SELECTION_STATEMENT
    assert [f["purpose"] for f in report["fits"]] == ["measure", "measure",
                                                      "refit (released model)"]


def test_wrapped_estimator_is_not_modified():
    inner = ObjPertLogisticRegression(C=10.0, epsilon=3.0)
    before = pickle.dumps(inner)
    _search(estimator=inner).fit(X, y)
    assert pickle.dumps(inner) == before
    assert not hasattr(inner, "coef_")


def test_same_seed_same_answer_and_clone():
    a, b = _search().fit(X, y), clone(_search()).fit(X, y)
    assert a.epsilon_ == b.epsilon_
    assert_allclose(a.best_estimator_.coef_, b.best_estimator_.coef_)


def test_refinement_respects_max_fits():
    search = _search(n_draws=1, max_fits=3).fit(X, y)
    assert search.n_fits_ == 3
    assert [m["purpose"] for m in search.measurements_] == ["measure", "refine"]
    # after a refinement the expansion is taken at the refined point
    assert search.predicted_utility_ == pytest.approx(TARGET, abs=1e-9)
    with pytest.raises(ValueError, match="max_fits"):
        _search(n_draws=3, max_fits=3).fit(X, y)


def test_unreachable_target_warns_and_clips():
    # the trust region from epsilon 1 reaches past the bound 3: clipped to the bound
    with pytest.warns(UnreachableUtilityWarning, match="out of reach"):
        search = _search(target_utility=1.5, epsilon_bounds=(0.01, 3.0)).fit(X, y)
    assert search.epsilon_ == 3.0


def test_far_extrapolation_is_capped_at_the_trust_region():
    # inside wide bounds the same target stops at the trust-region boundary, 5 x epsilon 1
    with pytest.warns(UnreachableUtilityWarning, match="trust region") as caught:
        search = _search(target_utility=1.5, epsilon_bounds=(0.01, 50.0)).fit(X, y)
    assert search.epsilon_ * search._size_ratio == pytest.approx(5.0, rel=1e-12)
    # upwards on the held-out split (300 rows), the warning names its sampling error
    (top,) = search._curve().points
    error = np.sqrt(top.utility * (1 - top.utility) / 300)
    assert any(f"about {error:.2g} on its 300 rows" in str(w.message) for w in caught)
    assert search.best_estimator_.epsilon == search.epsilon_
    # the reported utility is the expansion's at the boundary, short of the target
    assert search.predicted_utility_ == pytest.approx(
        search.predict_utility([search.epsilon_])[0][0], abs=1e-12)
    assert search.predicted_utility_ < 1.0
    # downwards too: from epsilon 1 the log expansion puts 0.92 at epsilon 0.1 (the true
    # crossing is near 0.4, see measuring_epsilon=0.3); the answer stops at 1/5
    with pytest.warns(UnreachableUtilityWarning, match="trust region"):
        low = _search(target_utility=0.92).fit(X, y)
    assert low.epsilon_ * low._size_ratio == pytest.approx(0.2, rel=1e-12)
    # a refinement fit moves the trust region: one more factor 5
    with pytest.warns(UnreachableUtilityWarning, match="trust region"):
        refined = _search(target_utility=1.5, epsilon_bounds=(0.01, 50.0), n_draws=1,
                          max_fits=3).fit(X, y)
    assert refined.epsilon_ * refined._size_ratio == pytest.approx(25.0, rel=1e-12)


def _one_point(derivative, **params):
    """A search with a hand-set measurement at epsilon 1, utility 0.7 (log expansion)."""
    search = _search(expansion="log", target_utility=0.8, **params)
    search.expansion_, search._size_ratio = "log", 1.0
    search.measurements_ = [dict(epsilon=1.0, utility=0.70, derivative=derivative)]
    return search


def test_release_caps_only_beyond_the_trust_region():
    # slope 0.01 in log(epsilon): the expansion needs log(epsilon) = 10, epsilon 22026
    far = _one_point(0.01)
    epsilon, predicted = far._curve().solve()
    assert epsilon > 1000.0
    with pytest.warns(UnreachableUtilityWarning, match="trust region"):
        assert far._release(epsilon, predicted) == pytest.approx(
            (5.0, 0.70 + 0.01 * np.log(5.0)), rel=1e-12)
    # slope 0.1: epsilon e = 2.72, inside the trust region: unchanged, no warning
    near = _one_point(0.1)
    epsilon, predicted = near._curve().solve()
    assert epsilon == pytest.approx(np.e, rel=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert near._release(epsilon, predicted) == (epsilon, predicted)
    # bracketed by points at 1 and 100: the cubic's answer, more than a factor 5 from
    # the point at 1, is kept
    bracketed = _one_point(0.01)
    bracketed.measurements_.append(dict(epsilon=100.0, utility=0.9, derivative=0.001))
    epsilon, predicted = bracketed._curve().solve()
    assert 5.0 < epsilon < 100.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert bracketed._release(epsilon, predicted) == (epsilon, predicted)
    # the trust-region boundary beyond the bounds: the bound, "out of reach"
    bounded = _one_point(0.01, epsilon_bounds=(0.01, 3.0))
    with pytest.warns(UnreachableUtilityWarning, match="out of reach"):
        assert bounded._release(*bounded._curve().solve())[0] == 3.0


def test_smoothed_accuracy_derivative_is_the_path_derivative():
    est = ObjPertLogisticRegression(C=10.0, delta=1e-5, epsilon=0.7, random_state=1)
    dcoef, dintercept = _derivative(est.fit_release(X, y))
    analytic = smoothed_accuracy_derivative(est, X, y, dcoef, dintercept)
    # the same smoothed accuracy on the refitted path (bandwidth held at epsilon's)
    from scipy.special import expit

    sign = np.where(y == 1, 1.0, -1.0)
    margins = sign * est.decision_function(X)
    tau = 0.55 * 1.06 * np.std(margins) * len(y) ** (-0.2)
    h = 1e-5

    def smoothed(eps):
        moved = clone(est).set_params(epsilon=eps).fit(X, y)
        return np.mean(expit(sign * moved.decision_function(X) / tau))

    fd = (smoothed(0.7 + h) - smoothed(0.7 - h)) / (2 * h)
    assert analytic == pytest.approx(fd, rel=1e-4)


class _NoAnalyticPath(ObjPertLogisticRegression):
    """An estimator whose privacy tags declare no derivative in epsilon."""

    def _has_epsilon_derivative(self):
        return False


def test_common_random_number_fallback_matches_analytic_path():
    analytic = _search(n_draws=2).fit(X, y)
    generic = _search(n_draws=2, estimator=_NoAnalyticPath(C=10.0, delta=1e-5)).fit(X, y)
    for a, g in zip(analytic.measurements_, generic.measurements_):
        assert a["utility"] == g["utility"]
        assert g["derivative"] == pytest.approx(a["derivative"], rel=1e-3)
    # each generic measurement costs three fits, all reported with their certified spend
    assert generic.n_fits_ == 2 * 3 + 1
    report = generic.privacy_report_
    assert [f["epsilon"] for f in report["fits"][:3]] == pytest.approx([1.0, 1.0001, 0.9999])
    # the three fits of one measurement share their noise: the spends do not compose
    assert [f["noise_draw"] for f in report["fits"][:3]] == [0, 0, 0]
    assert report["total_epsilon"] == np.inf and "share their noise" in report["composition"]


def test_other_scorings_and_measuring_points():
    search = _search(scoring="neg_log_loss", target_utility=-0.25,
                     measuring_epsilon=(0.3, 3.0)).fit(X, y)
    assert len(search._curve().points) == 2
    assert search.predicted_utility_ == pytest.approx(-0.25, abs=1e-9)
    train = _search(measure_on="train").fit(X, y)
    assert train.epsilon_ > 0


def test_inside_a_pipeline_and_parallel():
    pipe = make_pipeline(Normalizer(), _search(n_jobs=2))
    pipe.fit(X, y)
    serial = make_pipeline(Normalizer(), _search(n_jobs=1)).fit(X, y)
    assert pipe[-1].epsilon_ == serial[-1].epsilon_
    assert pipe.predict(X).shape == (len(y),)


def test_bad_parameters():
    with pytest.raises(ValueError, match="epsilon_bounds"):
        _search(epsilon_bounds=(5.0, 1.0)).fit(X, y)
    with pytest.raises(ValueError, match="'epsilon' parameter"):
        from sklearn.linear_model import LogisticRegression
        EpsilonForUtility(LogisticRegression(), target_utility=0.8).fit(X, y)
    with pytest.raises(ValueError, match="measuring_epsilon"):
        _search(measuring_epsilon=(1.0, -1.0)).fit(X, y)


def test_dpsgd_derivative_path_matches_common_noise_refits():
    from skdp import DPSGDClassifier

    est = DPSGDClassifier(epsilon=1.0, sample_rate=0.2, count_noise_std=40.0,
                          epochs=2, learning_rate=2.0, accountant="pld",
                          random_state=3)
    dcoef, dintercept = _derivative(clone(est).fit_release(X, y))
    h = 1e-3
    ends = [clone(est).set_params(epsilon=1.0 + s * h).fit(X, y) for s in (1, -1)]
    fd = (ends[0].coef_ - ends[1].coef_) / (2 * h)
    assert np.linalg.norm(dcoef - fd) / np.linalg.norm(fd) < 1e-2
    fd_b = (ends[0].intercept_ - ends[1].intercept_) / (2 * h)
    assert_allclose(dintercept, fd_b, rtol=1e-2, atol=1e-6)
    with pytest.raises(ValueError, match="noise_multiplier=None"):
        clone(est).set_params(noise_multiplier=1.0).fit_release(X, y)


def test_log_expansion_algebra():
    search = _search(expansion="log", measuring_epsilon=0.3).fit(X, y)
    (p,) = search._curve().points
    eps_fit = search.epsilon_ * search._size_ratio
    # U(eps) = U(eps0) + eps0 U'(eps0) log(eps / eps0)
    expanded = p.utility + p.epsilon * p.derivative * np.log(eps_fit / p.epsilon)
    assert expanded == pytest.approx(TARGET)


@pytest.mark.parametrize("params", [dict(delta=0.0), dict(delta=1e-5),
                                    dict(delta=1e-5, kernel="rbf", n_components=50)])
def test_output_perturbation_derivative_path_is_exact(params):
    from skdp import OutputPertSVM

    est = OutputPertSVM(epsilon=0.8, C=0.5, random_state=2, feature_random_state=0, **params)
    dcoef, dintercept = _derivative(clone(est).fit_release(X, y))
    h = 1e-6
    ends = [clone(est).set_params(epsilon=0.8 + s * h).fit(X, y) for s in (1, -1)]
    assert_allclose(dcoef, (ends[0].coef_ - ends[1].coef_) / (2 * h), rtol=1e-5, atol=1e-8)
    assert_allclose(dintercept, (ends[0].intercept_ - ends[1].intercept_) / (2 * h),
                    rtol=1e-5, atol=1e-8)


def test_refit_below_the_smallest_trainable_epsilon_is_raised():
    from skdp import DPSGDClassifier
    from skdp.exceptions import PrivacyBudgetError

    est = DPSGDClassifier(epochs=50)
    with pytest.raises(PrivacyBudgetError):
        clone(est).set_params(epsilon=1e-6).fit(X, y)
    search = AnalyticEpsilonForUtility(est, target_utility=0.5, n_draws=1, random_state=0,
                                       expansion="linear",
                                       epsilon_bounds=(1e-6, 10.0))
    with pytest.warns(UnreachableUtilityWarning):
        search.fit(X, y)
    assert search.best_estimator_.epsilon == search.epsilon_ > 1e-6


def test_auto_expansion_follows_the_mechanism():
    from skdp import DPSGDClassifier, OutputPertSVM

    assert _search().fit(X, y).expansion_ == "log"
    assert _search(estimator=OutputPertSVM(C=0.5, delta=1e-5)).fit(X, y).expansion_ == "inverse"
    assert get_privacy_tags(DPSGDClassifier()).epsilon_expansion == "inverse"
    assert _search(expansion="linear").fit(X, y).expansion_ == "linear"


def test_napp_uses_its_analytic_path_and_two_stage_the_reruns():
    from skdp import NAPPLassoClassifier

    napp = _search(estimator=NAPPLassoClassifier(alpha=2.0, delta=1e-5), n_draws=2).fit(X, y)
    assert napp.expansion_ == "log"
    # analytic path: one fit per measurement, plus the refit
    assert napp.n_fits_ == 3
    assert napp.predicted_utility_ == pytest.approx(TARGET, abs=1e-9)
    two_stage = _search(estimator=NAPPLassoClassifier(alpha=2.0, delta=1e-5,
                                                      adaptive_two_stage=True),
                        n_draws=2).fit(X, y)
    # no analytic path: each measurement is three fits (common-noise reruns)
    assert two_stage.n_fits_ == 2 * 3 + 1
    assert [f["purpose"] for f in two_stage.privacy_report_["fits"]][:3] == [
        "measure", "measure (common-noise difference)", "measure (common-noise difference)"]


def _two_points(derivative_a, derivative_b=0.01):
    """A search with hand-set measurements at epsilon 0.5 and 2 (log expansion)."""
    search = _search(expansion="log")
    search.expansion_, search._size_ratio = "log", 1.0
    search.measurements_ = [dict(epsilon=0.5, utility=0.70, derivative=derivative_a),
                            dict(epsilon=2.0, utility=0.80, derivative=derivative_b)]
    return search


def test_between_points_the_hermite_cubic_by_hand():
    search = _two_points(0.4)
    # slopes in v = log(epsilon): 0.5 * 0.4 = 0.2 and 2 * 0.01 = 0.02; secant 0.1 / log 4
    width = np.log(4.0)
    (mid,), _ = search.predict_utility([1.0])  # t = 1/2: h00 = h01 = 1/2, h10 = -h11 = 1/8
    assert mid == pytest.approx(0.75 + width / 8 * (0.2 - 0.02), rel=1e-12)
    ends, _ = search.predict_utility([0.5, 2.0])
    assert_allclose(ends, [0.70, 0.80], rtol=1e-12)
    # the interpolant has the measured slopes at both ends
    h = 1e-6
    values, _ = search.predict_utility(np.exp([np.log(0.5) + h, np.log(2.0) - h]))
    assert (values[0] - 0.70) / h == pytest.approx(0.2, rel=1e-4)
    assert (0.80 - values[1]) / h == pytest.approx(0.02, rel=1e-4)
    # the answer solves it
    search.target_utility = 0.78
    epsilon, predicted = search._curve().solve()
    assert predicted == 0.78
    assert search.predict_utility([epsilon])[0][0] == pytest.approx(0.78, abs=1e-12)
    assert 0.5 < epsilon < 1.0  # the straight line would need epsilon 2**0.6 = 1.52


@pytest.mark.parametrize("derivative_a", [1.0, -0.1])
def test_between_points_the_line_when_the_cubic_would_not_be_monotone(derivative_a):
    # slope 0.5 is 6.9 secants (alpha**2 > 9); a negative slope is noise
    search = _two_points(derivative_a)
    (mid,), _ = search.predict_utility([1.0])
    assert mid == pytest.approx(0.75, rel=1e-12)
    search.target_utility = 0.78
    assert search._curve().solve()[0] == pytest.approx(2.0**0.6, rel=1e-10)


def test_two_measuring_epsilons_a_rounding_apart_are_one_point():
    # 5 and the float below it have the same logarithm: no bracket of zero width
    search = _search(expansion="log", target_utility=0.8)
    search.expansion_, search._size_ratio = "log", 1.0
    below = np.nextafter(5.0, 0.0)
    search.measurements_ = [dict(epsilon=below, utility=0.70, derivative=0.05),
                            dict(epsilon=5.0, utility=0.90, derivative=0.05)]
    epsilon, predicted = search._curve().solve()
    assert np.isfinite(epsilon) and np.isfinite(predicted)


@pytest.mark.parametrize("derivative_b, expected", [
    (0.02, 2.0 * np.exp(0.05 / 0.04)),  # slope 0.04 is 0.55 secants: the measured one
    (0.2, 2.0 * np.exp(0.05 / 0.4)),    # 5.5 secants: steep is kept (a shorter step)
    (0.001, 4.0),                       # 0.03 secants: the secant 0.1 / log 4
    (-0.01, 4.0),                       # the wrong sign: the secant
])
def test_beyond_the_points_a_too_flat_derivative_gives_way_to_the_secant(derivative_b,
                                                                              expected):
    search = _two_points(0.4, derivative_b)
    search.target_utility = 0.85  # above both: a Newton step from epsilon 2
    epsilon, predicted = search._curve().solve()
    assert epsilon == pytest.approx(expected, rel=1e-12)
    assert predicted == pytest.approx(0.85, abs=1e-12)
    assert search.predict_utility([epsilon])[0][0] == pytest.approx(0.85, abs=1e-12)


@pytest.mark.filterwarnings("ignore::skdp.UnreachableUtilityWarning")
def test_dpsgd_measurement_is_one_fit():
    from skdp import DPSGDClassifier

    # the derivative is propagated in the fit's own pass (forward mode): no reruns
    inner = DPSGDClassifier(delta=1e-5, sample_rate=0.2, count_noise_std=40.0,
                            epochs=2, learning_rate=2.0)
    search = _search(estimator=inner, n_draws=1, max_fits=3).fit(X, y)
    purposes = [f["purpose"] for f in search.privacy_report_["fits"]]
    assert purposes == ["measure", "refine", "refit (released model)"]
    assert search.n_fits_ == 3

@pytest.mark.filterwarnings("ignore::skdp.UnreachableUtilityWarning")
def test_error_band_adds_the_evaluation_rows_sampling_error(fitted):
    (point,) = fitted._curve().points
    draws = [m["utility"] for m in fitted.measurements_]
    # at the measuring point: the draws' standard error and the binomial error of the
    # 300 held-out rows (ceil(0.2 * 1500)), in quadrature
    _, (error,) = fitted.predict_utility([point.epsilon / fitted._size_ratio])
    draw_sem = np.std(draws, ddof=1) / np.sqrt(2)
    split = np.sqrt(point.utility * (1 - point.utility) / 300)
    assert error == pytest.approx(np.hypot(draw_sem, split), rel=1e-9)
    log_loss = _search(scoring="neg_log_loss", target_utility=-0.3).fit(X, y)
    (p,) = log_loss._curve().points
    _, (error,) = log_loss.predict_utility([p.epsilon / log_loss._size_ratio])
    assert error == pytest.approx(p.utility_sem, rel=1e-9)  # no binomial term


def test_verbose_prints_one_line_per_round_and_the_answer(capsys):
    search = _search(n_draws=2, max_fits=5, verbose=1).fit(X, y)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3
    first = search.measurements_[0]
    assert lines[0].startswith(
        "[AnalyticEpsilonForUtility] measured at "
        f"epsilon={first['epsilon'] / search._size_ratio:.4g} "
        "(2 draws)")
    assert lines[1].startswith("[AnalyticEpsilonForUtility] refined at")
    assert lines[2] == (f"[AnalyticEpsilonForUtility] epsilon_={search.epsilon_:.4g} (predicted "
                        f"utility {search.predicted_utility_:.4f}); 5 private fits, the refit "
                        "included")
    _search(n_draws=2, max_fits=5).fit(X, y)
    assert capsys.readouterr().out == ""
