"""Every derivative path EpsilonForUtility uses, against common-random-number differences.

For each estimator the tangent ``(dcoef, dintercept)`` returned by the path (or by the
generic fallback) is compared with the central difference of two refits at
``epsilon +- h`` with the same ``random_state`` (spec epsilon_for_utility_math.md 7.1).
Where the spec says the path is exact, the tolerance is 1e-6 relative, with solver
tolerances tight enough that the finite difference itself is accurate to far less.
The sign-error regression test of the source paper is in
``tests/linear_model/test_objpert_derivative.py``.
"""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import make_classification, make_regression

from skdp import (
    DPSGDClassifier,
    NAPPLasso,
    NAPPLassoClassifier,
    ObjPertLogisticRegression,
    OutputPertSVM,
)
from skdp.accounting import calibrate_noise_multiplier
from skdp.base import get_privacy_tags
from skdp.model_selection._measure import _crn_fit_derivative, _measure


def _derivative(release):
    """``(dcoef, dintercept)`` of an EpsilonRelease."""
    return release.coef_derivative, release.intercept_derivative


X, y = make_classification(n_samples=1500, n_features=5, n_informative=3, n_redundant=0,
                           random_state=0)
X /= np.max(np.linalg.norm(X, axis=1))
X3, y3 = make_classification(n_samples=1500, n_features=5, n_informative=3, n_redundant=0,
                             n_classes=3, random_state=1)
X3 /= np.max(np.linalg.norm(X3, axis=1))
Xr, yr = make_regression(n_samples=1500, n_features=5, noise=5.0, random_state=0)
Xr /= np.max(np.linalg.norm(Xr, axis=1))
yr /= np.max(np.abs(yr))


def _tangent(coef, intercept):
    return np.concatenate([np.ravel(coef), np.ravel(intercept)])


def _crn_difference(estimator, X, y, h):
    """Central difference of two refits with the same seed (common random numbers)."""
    eps = estimator.epsilon
    ends = [clone(estimator).set_params(epsilon=eps + s * h).fit(X, y) for s in (1, -1)]
    return (_tangent(ends[0].coef_, ends[0].intercept_)
            - _tangent(ends[1].coef_, ends[1].intercept_)) / (2 * h)


def _path(estimator, X, y):
    return _tangent(*_derivative(clone(estimator).fit_release(X, y)))


def _relative_error(a, b):
    return np.linalg.norm(a - b) / np.linalg.norm(b)


# -- objective perturbation: implicit function theorem (spec 2, 3) -------------------

OBJPERT = {
    f"{loss}-{'gaussian' if delta else 'pure'}-{nb}": dict(loss=loss, delta=delta,
                                                          neighboring=nb)
    for loss in ("logistic", "huber") for delta in (0.0, 1e-5)
    for nb in ("add_remove", "replace")
}
OBJPERT["logistic-pure-paper-rule"] = dict(delta_rule="paper", C=0.2)
OBJPERT["logistic-gaussian-multiclass"] = dict(delta=1e-5, data=(X3, y3))


@pytest.mark.parametrize("name", list(OBJPERT))
def test_objective_perturbation_path_is_exact(name):
    params = dict(OBJPERT[name])
    data = params.pop("data", (X, y))
    est = ObjPertLogisticRegression(epsilon=0.7, C=5.0, huber_h=0.3, tol=2e-12,
                                    random_state=4).set_params(**params)
    analytic = _path(est, *data)
    fd = _crn_difference(est, *data, h=1e-5 * 0.7)
    assert _relative_error(analytic, fd) < 1e-6


# -- output perturbation: closed form (spec 4) ---------------------------------------

OUTPUT = {
    "pure": dict(delta=0.0),
    "gaussian": dict(delta=1e-5),
    "gaussian-replace": dict(delta=1e-5, neighboring="replace"),
    "huber-pure": dict(loss="huber"),
    "rbf-gaussian": dict(delta=1e-5, kernel="rbf", n_components=40),
}


@pytest.mark.parametrize("name", list(OUTPUT))
def test_output_perturbation_path_is_exact(name):
    est = OutputPertSVM(epsilon=0.8, C=0.5, random_state=2, feature_random_state=0,
                        **OUTPUT[name])
    analytic = _path(est, X, y)
    fd = _crn_difference(est, X, y, h=1e-5 * 0.8)
    assert _relative_error(analytic, fd) < 1e-6


# -- NAPP: implicit function theorem on the KKT conditions ---------------------------

NAPP = {
    "l1-pure": (NAPPLassoClassifier(alpha=3.0), X, y),
    "l1-gaussian-replace": (NAPPLassoClassifier(alpha=3.0, delta=1e-5, neighboring="replace"),
                            X, y),
    # a ridge part above the Jacobian curvature: the budget is retrieved (spec 7.2)
    "elasticnet-recycle": (NAPPLassoClassifier(alpha=40.0, penalty="elasticnet"), X, y),
    "elasticnet-return-gaussian": (NAPPLassoClassifier(alpha=40.0, penalty="elasticnet",
                                                       retrieval="return", delta=1e-5), X, y),
    # a ridge part below it: only the missing curvature is added
    "l2-gaussian": (NAPPLassoClassifier(alpha=0.1, penalty="l2", delta=1e-5), X, y),
    "bridge": (NAPPLassoClassifier(alpha=3.0, penalty="bridge", coef_bound=10.0), X, y),
    "threshold": (NAPPLassoClassifier(alpha=3.0, threshold=0.05), X, y),
    "multiclass": (NAPPLassoClassifier(alpha=3.0, delta=1e-5), X3, y3),
    "squared": (NAPPLasso(alpha=3.0, y_bound=1.0, coef_bound=50.0), Xr, yr),
    "squared-ball-active": (NAPPLasso(alpha=3.0, y_bound=1.0, coef_bound=1.0, delta=1e-5),
                            Xr, yr),
    "poisson": (NAPPLasso(alpha=3.0, loss="poisson", y_bound=20.0, coef_bound=1.0),
                Xr, np.round(np.exp(Xr @ np.ones(5)) * 3)),
}


# the public tolerance is absolute (on the KKT residual of a sum-form objective), so the
# NAPP differences use the step 1e-4 epsilon: the solver's error over the step is ~1e-6
# of the path at tol 1e-11, the truncation ~1e-8
@pytest.mark.parametrize("name", list(NAPP))
def test_napp_path_is_exact(name):
    est, data_X, data_y = NAPP[name]
    est = clone(est).set_params(epsilon=1.5, tol=1e-11, max_iter=300, random_state=6)
    analytic = _path(est, data_X, data_y)
    fd = _crn_difference(est, data_X, data_y, h=1e-4 * 1.5)
    assert np.linalg.norm(fd) > 0
    assert _relative_error(analytic, fd) < 1e-5


def test_napp_cases_cover_the_branches():
    """The NAPP cases above really reach retrieval, thresholding and the active ball."""
    fitted = {name: clone(est).set_params(epsilon=1.5, random_state=6).fit(data_X, data_y)
              for name, (est, data_X, data_y) in NAPP.items()}
    assert fitted["elasticnet-recycle"].privacy_report_["eps_retrieved"] > 0
    assert fitted["elasticnet-return-gaussian"].privacy_report_["eps_retrieved"] > 0
    assert fitted["l1-pure"].privacy_report_["extra_ridge"] > 0
    assert 0 < fitted["l2-gaussian"].privacy_report_["extra_ridge"] < (
        fitted["l2-gaussian"].privacy_report_["curvature"])
    est, data_X, data_y = NAPP["squared-ball-active"]
    (ball,) = clone(est).set_params(epsilon=1.5, random_state=6)._releases(data_X, data_y)
    assert np.linalg.norm(ball.theta) == pytest.approx(1.0)   # the minimiser is on the ball
    assert np.any(fitted["threshold"].coef_ == 0)
    assert not np.all(fitted["threshold"].coef_ == 0)


def test_napp_two_stage_uses_common_noise_reruns():
    """No analytic path for the two-stage estimator: EpsilonForUtility's fallback reruns
    with the same seed, which matches a CRN difference with a 10x smaller step to the
    difference of their truncation errors (O(h^2), both steps far below 1e-4)."""
    est = NAPPLassoClassifier(alpha=3.0, adaptive_two_stage=True, epsilon=1.5, tol=1e-11,
                              max_iter=300, random_state=5)
    assert not get_privacy_tags(est).epsilon_derivative
    with pytest.raises(NotImplementedError):
        clone(est).fit_release(X, y)
    dcoef, dintercept, ends = _crn_fit_derivative(clone(est), X, y)
    assert [e.epsilon for e in ends] == [1.5 * (1 + 1e-4), 1.5 * (1 - 1e-4)]
    fd = _crn_difference(est, X, y, h=1e-5 * 1.5)
    assert _relative_error(_tangent(dcoef, dintercept), fd) < 1e-6
    # the measurement reports the two reruns as fits of the same noise draw
    m = _measure(est, 1.5, 0, 5, X, y, X, y, "accuracy", "measure")
    assert [f["epsilon"] for f in m["fits"]] == [1.5, *(e.epsilon for e in ends)]
    assert [f["noise_draw"] for f in m["fits"]] == [0, 0, 0]


# -- DP-SGD: dtheta/dz by reruns with the same draws, times dz/depsilon (spec 5) ------

def test_dpgd_path_matches_common_noise_refits():
    """Full-batch DP-GD: dz/depsilon is the closed Gaussian-DP form and dtheta/dz a
    central difference of reruns with step 1e-4 z (relative truncation error ~1e-8), so
    the path is exact to well below 1e-6; the refits' z(epsilon +- h) is the exact
    Gaussian-DP calibration."""
    est = DPSGDClassifier(epsilon=1.0, sample_rate=1.0, count_noise_std=40.0,
                          epochs=30, learning_rate=2.0,
                          random_state=3)
    analytic = _path(est, X, y)
    fd = _crn_difference(est, X, y, h=1e-5)
    assert _relative_error(analytic, fd) < 1e-6


def test_dpsgd_path_matches_common_noise_refits():
    """Poisson-sampled DP-SGD under the PLD accountant. The fit calibrates z only to
    rtol 1e-3 in epsilon, so refits at epsilon +- h are compared at z(epsilon +- h)
    calibrated tightly (same seed: same masks and normals). dz/depsilon itself is a
    central difference of the discretised PLD accountant (step 1e-3 z, spec 5), which
    limits the agreement (measured 1.7e-4 at this step, the difference's own truncation
    error is ~1e-4 here): tolerance 2e-3."""
    est = DPSGDClassifier(epsilon=1.0, sample_rate=0.2, count_noise_std=40.0,
                          epochs=2, learning_rate=2.0, accountant="pld",
                          random_state=3)
    fitted = clone(est)
    analytic = _tangent(*_derivative(fitted.fit_release(X, y)))
    q, T, eps = fitted.sample_rate_, fitted.n_steps_, fitted.epsilon_spent_
    h = 1e-2 * eps
    ends = []
    for e in (eps + h, eps - h):
        z = calibrate_noise_multiplier(e, 1e-5, q, T, rtol=1e-9, count_noise_std=40.0)
        refit = clone(est).set_params(noise_multiplier=z, epsilon=np.inf).fit(X, y)
        ends.append(_tangent(refit.coef_, refit.intercept_))
    fd = (ends[0] - ends[1]) / (2 * h)
    assert _relative_error(analytic, fd) < 2e-3
    # without common random numbers the difference is noise, orders of magnitude off
    z = calibrate_noise_multiplier(eps + h, 1e-5, q, T, rtol=1e-9, count_noise_std=40.0)
    other = clone(est).set_params(noise_multiplier=z, epsilon=np.inf, random_state=4).fit(X, y)
    independent = (_tangent(other.coef_, other.intercept_) - ends[1]) / (2 * h)
    assert _relative_error(independent, fd) > 1.0


# -- the generic common-random-number fallback ---------------------------------------

def test_generic_fallback_matches_the_analytic_path():
    """The fallback is a central difference with relative step 1e-4: its truncation error
    is O(1e-8) relative for a smooth path, so it must agree with the exact ObjPert path
    to 1e-6 when the solver is certified to 1e-12."""
    est = ObjPertLogisticRegression(epsilon=0.7, C=5.0, delta=1e-5, tol=2e-12,
                                    random_state=4)
    dcoef, dintercept, ends = _crn_fit_derivative(clone(est), X, y)
    assert _relative_error(_tangent(dcoef, dintercept), _path(est, X, y)) < 1e-6


# -- the utility derivative EpsilonForUtility records --------------------------------

MEASURED = {
    "objpert": ObjPertLogisticRegression(C=5.0, delta=1e-5, tol=2e-12),
    "outputpert": OutputPertSVM(C=0.5, delta=1e-5),
    "napp": NAPPLassoClassifier(alpha=3.0, tol=1e-12, max_iter=300),
    "dpgd": DPSGDClassifier(sample_rate=1.0, count_noise_std=40.0, epochs=30, learning_rate=2.0),
}


def _margin_log_loss(estimator, X, y):
    """A smooth utility every linear classifier has: minus the mean logistic loss of
    its margins."""
    sign = np.where(y == estimator.classes_[1], 1.0, -1.0)
    return -np.mean(np.logaddexp(0.0, -sign * estimator.decision_function(X)))


@pytest.mark.parametrize("name", list(MEASURED))
def test_measured_utility_derivative(name):
    """``_measure``'s derivative of a smooth scorer on held-out rows equals the central
    difference of that scorer over CRN refits (chain rule through the tangent; the
    scorer's own directional difference has relative error ~1e-10)."""
    est, eps, seed = MEASURED[name], 0.9, 6
    X_fit, y_fit, X_eval, y_eval = X[:1000], y[:1000], X[1000:], y[1000:]
    m = _measure(est, eps, 0, seed, X_fit, y_fit, X_eval, y_eval, _margin_log_loss,
                 "measure")
    h = 1e-5 * eps
    values = [_margin_log_loss(clone(est).set_params(epsilon=eps + s * h, random_state=seed)
                               .fit(X_fit, y_fit), X_eval, y_eval) for s in (1, -1)]
    fd = (values[0] - values[1]) / (2 * h)
    assert m["derivative"] == pytest.approx(fd, rel=1e-7)
