"""ObjPertLogisticRegression(inference=True): the non-private oracle (the logit MLE's
model-based interval, computed here with numpy), coverage over seeds of a known
population parameter (and the failure of an interval that ignores the noise), the
information matrix inside the same budget (calibration by hand, the sensitivity
attained), replay, the summary and the refusals."""

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy import stats
from scipy.special import expit

import skdp.linear_model._inference as inference_module
import skdp.linear_model._objective_perturbation as objpert_module
from skdp import InferenceError, ObjPertLogisticRegression
from skdp.mechanisms._glm_inference import (INFORMATION_SHARE, flat_direction,
                                            information_calibration, release_information)
from skdp.mechanisms._sufficient_statistics import SSPCalibration, gram_coordinates
from tests.linear_model.test_inference_ssp import _clopper_pearson
from tests.linear_model.test_ssp import _gdp_mu

THETA = np.array([0.5, 1.0, -2.0, 0.5])        # const first, then the features


def _population(n, seed, d=3):
    """Rows inside ``data_norm=1`` (no clipping): the covered parameter is ``THETA``."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, d)) / np.sqrt(d)
    return X, (rng.uniform(size=n) < expit(THETA[0] + X @ THETA[1:d + 1])).astype(int)


def _model(**params):
    return ObjPertLogisticRegression(**{**dict(data_norm=1.0, inference=True), **params})


def _logit_mle(X, y):
    """statsmodels' ``Logit`` on the design with a constant: Newton's MLE and the
    inverse Hessian as covariance."""
    Z = np.c_[np.ones(len(y)), X]
    theta = np.zeros(Z.shape[1])
    for _ in range(50):
        p = expit(Z @ theta)
        theta += np.linalg.solve(Z.T @ (Z * (p * (1 - p))[:, None]), Z.T @ (y - p))
    p = expit(Z @ theta)
    return theta, np.sqrt(np.diag(np.linalg.inv(Z.T @ (Z * (p * (1 - p))[:, None]))))


# -- the non-private oracle --------------------------------------------------------------------

@pytest.mark.parametrize("C, rtol", [(1.0, 1e-2), (1e4, 1e-5)])
def test_infinite_epsilon_gives_the_logit_interval(C, rtol):
    """The one-step correction of the ridge's bias reaches the MLE up to the square of
    that bias, and the information matrix is evaluated at the penalised solution, a
    ridge's bias away: with C = 1 at n = 2,000 the bias is about 1 % of a standard
    error, with C = 1e4 about 1e-6."""
    X, y = _population(2000, seed=3)
    model = _model(epsilon=np.inf, C=C).fit(X, y)
    theta, bse = _logit_mle(X, y)
    q = stats.norm.ppf(0.975)
    assert_allclose(model.bse_, bse, rtol=rtol)
    assert np.all(np.abs(np.r_[model.intercept_, model.coef_.ravel()] - theta) <= rtol * bse)
    # each bound moves by the estimate's error plus q times the standard error's
    error = np.abs(model.conf_int() - np.c_[theta - q * bse, theta + q * bse])
    assert np.all(error <= (1 + q) * rtol * bse[:, None])
    assert np.isinf(model.df_resid_) and not hasattr(model, "bootstrap_deviations_")


# -- coverage ---------------------------------------------------------------------------------

def _coverage(n, epsilon, delta, draws, max_refused=0.02):
    """The hits of the fits that are not refused (at most ``max_refused`` of them: the
    coverage is the one a user meets, given an interval)."""
    hits = []
    for seed in range(draws):
        X, y = _population(n, seed)
        try:
            low, high = (_model(epsilon=epsilon, delta=delta, random_state=seed).fit(X, y)
                         .conf_int().T)
        except InferenceError:
            continue
        hits.append((low <= THETA) & (THETA <= high))
    assert len(hits) >= (1 - max_refused) * draws
    return np.array(hits)


def _not_below_nominal(hits):
    """No coefficient's coverage has a 99 % Clopper-Pearson interval below 0.95."""
    return all(_clopper_pearson(c.sum(), c.size)[1] >= 0.95 for c in hits.T)


def test_intervals_cover_the_population_minimiser():
    """200 fits at n = 5,000, epsilon 1, delta 1e-6 (the noise doubles the interval):
    coverage not below nominal. While the bootstrap's world was centred on the
    released information matrix (before ``world_matrix`` deconvolved its noise) it
    counted that noise twice, and the intervals were somewhat conservative here (about
    0.97; nominal at n = 20,000 and above)."""
    hits = _coverage(5000, 1.0, 1e-6, draws=200)
    assert _not_below_nominal(hits), hits.mean(axis=0)
    assert hits.mean() < 0.995


def test_a_planted_bug_that_ignores_the_noise_fails_the_coverage_test(monkeypatch):
    original = inference_module.glm_inference

    def without_noise(theta, information, *, C, ridge, calibration, **noises):
        return original(theta, information, C=C, ridge=ridge,
                        calibration=SSPCalibration("none", 0.0, 0.0, 0.0))
    monkeypatch.setattr(inference_module, "glm_inference", without_noise)
    hits = _coverage(5000, 1.0, 1e-6, draws=200)
    assert not _not_below_nominal(hits)
    assert hits.mean() < 0.8


@pytest.mark.slow
@pytest.mark.parametrize("n, epsilon", [(20_000, 1.0), (20_000, 3.0), (200_000, 1.0)])
@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_intervals_cover_on_a_wider_grid(n, epsilon, delta):
    hits = _coverage(n, epsilon, delta, draws=200)
    assert _not_below_nominal(hits), hits.mean(axis=0)


# -- the information matrix is inside the budget ----------------------------------------

@pytest.mark.parametrize("delta", [0.0, 1e-6])
@pytest.mark.parametrize("neighboring", ["add_remove", "replace"])
def test_the_budget_is_split_between_the_objective_and_the_information(delta, neighboring):
    """The objective perturbation is the fit at (0.9 epsilon, 0.9 delta); the information
    matrix's noise is calibrated by hand at (0.1 epsilon, 0.1 delta): one record's term
    l'' z z^T with l'' <= 1/4, ||z||^2 <= B^2 = 2 (Frobenius; sqrt(2) for replace),
    upper-triangle L1 ((sqrt(d) R + c)^2 + B^2) / 2 (twice for replace)."""
    X, y = _population(400, seed=0)
    epsilon = 0.8
    kw = dict(epsilon=epsilon, delta=delta, neighboring=neighboring, random_state=0)
    model = _model(**kw)
    solution = model._releases(X, y)[0]
    plain = _model(**{**kw, "inference": False, "epsilon": 0.9 * epsilon,
                      "delta": 0.9 * delta})
    assert solution.calibration == plain._releases(X, y)[0].calibration
    assert model.C_ == plain.C_
    m = 2.0 if neighboring == "replace" else 1.0
    if delta:
        expected = 0.25 * 2.0 * np.sqrt(m) / _gdp_mu(0.1 * epsilon, 0.1 * delta)
    else:
        expected = m * 0.25 * ((np.sqrt(3) + 1) ** 2 + 2.0) / 2 / (0.1 * epsilon)
    assert INFORMATION_SHARE == 0.1
    assert_allclose(solution.information_calibration.gram, expected, rtol=1e-9)
    fitted = _model(**kw).fit(*_population(20_000, seed=0))
    assert (fitted.epsilon_spent_, fitted.delta_spent_) == (epsilon, delta)


def test_an_added_row_at_margin_zero_moves_the_information_by_its_sensitivity():
    """A row of norm R orthogonal to the released coefficients has l'' = 1/4 exactly:
    its term's Frobenius norm is the calibrated sensitivity, so the Gaussian release
    uses its share in full (and never more: l'' <= 1/4 elsewhere)."""
    calibration = information_calibration(0.1, 1e-7, smoothness=0.25, data_norm=1.0,
                                          intercept_scaling=1.0, n_features=3,
                                          neighboring="add_remove")
    theta = np.array([0.3, -0.2, 0.4, 0.0])
    z = np.array([0.2, 0.3, 0.0, 0.0])
    z[:3] = np.cross(theta[:3], [1.0, 1.0, 1.0])
    z[:3] /= np.linalg.norm(z[:3])
    z[3] = 1.0
    assert abs(z @ theta) < 1e-12
    term = 0.25 * np.outer(z, z)
    shift = np.linalg.norm(gram_coordinates(term, "gaussian")) / calibration.gram
    assert_allclose(shift, _gdp_mu(0.1, 1e-7), rtol=1e-9)


def test_a_gaussian_fit_with_inference_declares_no_renyi_curve():
    model = _model(epsilon=1.0, delta=1e-6, random_state=0)
    assert model._renyi_cost(n_classes=2) is None
    X, y = _population(2000, seed=0)
    model.fit(X, y)
    assert model._renyi_spent() is None
    with pytest.raises(ValueError, match="inference=True"):
        model.renyi_curve()


# -- replay, the summary ------------------------------------------------------------------------

def test_same_seed_same_intervals_other_seed_other_intervals():
    X, y = _population(5000, seed=1)
    first = _model(epsilon=1.0, random_state=4).fit(X, y)
    again = _model(epsilon=1.0, random_state=4).fit(X, y)
    other = _model(epsilon=1.0, random_state=5).fit(X, y)
    assert_array_equal(first.conf_int(), again.conf_int())
    assert_array_equal(first.coef_, again.coef_)
    assert not np.array_equal(first.conf_int(), other.conf_int())


def test_the_summary_names_the_features_and_predictions_use_the_corrected_model():
    X, y = _population(3000, seed=0)
    frame = pd.DataFrame(X, columns=["age", "dose", "weight"])
    model = _model(epsilon=1.0, random_state=0).fit(frame, np.where(y, "yes", "no"))
    table = model.summary()
    assert list(table.index) == ["const", "age", "dose", "weight"]
    assert_array_equal(table["coef"], np.r_[model.intercept_, model.coef_.ravel()])
    assert_array_equal(table[["lower", "upper"]].to_numpy(), model.conf_int())
    scores = X @ model.coef_.ravel() + model.intercept_
    assert_array_equal(model.predict(frame), np.where(scores > 0, "yes", "no"))
    assert not hasattr(_model(epsilon=1.0, inference=False), "conf_int")


# -- refusals ------------------------------------------------------------------------------------

@pytest.fixture
def no_noise(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("noise was drawn")
    monkeypatch.setattr(objpert_module, "noise_generator", refuse)
    monkeypatch.setattr(objpert_module, "draw_noise", refuse)


REFUSED_OPTIONS = [
    (dict(loss="huber"), {}, False, "loss='logistic'"),
    ({}, dict(sample_weight=np.ones(60)), False, "no sample_weight"),
    (dict(class_weight={0: 1.0, 1: 2.0}), {}, False, "no sample_weight or class_weight"),
    ({}, dict(groups=np.arange(60)), False, "no groups"),
    ({}, {}, True, "two classes"),
    (dict(classes=[0, 1, 2]), {}, False, "two classes"),
]
"""Options under which a binary logistic fit's intervals are refused before any noise:
``(params, fit params, three classes in y, message)``; shared with DP-SGD's tests."""


@pytest.mark.parametrize("params, fit, three_classes, match", REFUSED_OPTIONS)
def test_options_without_valid_intervals_are_refused_before_any_noise(
        params, fit, three_classes, match, no_noise):
    X, y = _population(60, seed=0)
    if three_classes:
        y = np.arange(60) % 3
    with pytest.raises(ValueError, match=match):
        _model(epsilon=1.0, **params).fit(X, y, **fit)


def test_a_noisy_information_matrix_that_is_not_positive_definite_is_refused():
    X, y = _population(30, seed=0)
    for seed in range(5):
        model = _model(epsilon=0.1, random_state=seed)
        with pytest.raises(InferenceError, match="information matrix") as error:
            model.fit(X, y)
        assert not hasattr(model, "coef_") and not hasattr(model, "bse_")
        assert not any(ch.isdigit() for ch in str(error.value).split(":", 1)[1])


def _collinear(n, seed):
    """The population's rows with the last feature replaced by a copy of the second:
    the logit Hessian has the null direction ``(0, 1, -1, 0) / sqrt(2)`` (rows still
    inside ``data_norm=1``)."""
    X, y = _population(n, seed)
    return np.c_[X[:, :2], X[:, 1]], y


@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_a_singular_information_matrix_is_refused_with_probability_at_least_0977(delta):
    """The law of the refusal over 2,000 draws of the information matrix's noise on an
    exactly singular ``H`` (a collinear design): ``lambda_min(H~) <= u^T E u ~ N(0,
    sigma^2)`` along the null direction ``u``, so refusing below ``2 sigma`` refuses
    with probability at least 0.977 (Laplace: below ``2 * 2b``, at least the
    standard deviation bound's). A rule that only refuses a matrix that is not
    positive definite keeps about half of them, and fails the same test."""
    X, _ = _collinear(20_000, seed=0)
    Z = np.c_[X, np.ones(len(X))]
    information = Z.T @ (0.2 * Z)
    assert np.linalg.eigvalsh(information)[0] < 1e-9 * np.linalg.eigvalsh(information)[-1]
    calibration = information_calibration(0.1, 0.1 * delta, smoothness=0.25, data_norm=1.0,
                                          intercept_scaling=1.0, n_features=3,
                                          neighboring="add_remove")
    rng = np.random.default_rng(0)
    releases = [release_information(information, calibration, rng) for _ in range(2000)]
    refused = sum(flat_direction(release, calibration) for release in releases)
    assert _clopper_pearson(refused, 2000)[1] >= 0.977, refused
    not_positive = sum(np.linalg.eigvalsh(release)[0] <= 0 for release in releases)
    assert _clopper_pearson(not_positive, 2000)[1] < 0.977


def test_a_collinear_design_is_refused_and_a_well_conditioned_one_kept():
    """End to end at n = 5,000, epsilon 1, over 30 seeds each: the collinear design
    (a copied column) is refused at a rate whose 99 % Clopper-Pearson interval holds
    0.977 or more, and the population's own three features never."""
    refused = {"collinear": 0, "population": 0}
    for seed in range(30):
        for name, make in (("collinear", _collinear), ("population", _population)):
            try:
                _model(epsilon=1.0, delta=1e-6, random_state=seed).fit(*make(5000, seed))
            except InferenceError as error:
                assert "not identified" in str(error)
                refused[name] += 1
    assert _clopper_pearson(refused["collinear"], 30)[1] >= 0.977, refused
    assert refused["population"] == 0
