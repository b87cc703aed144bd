"""OutputPertSVM(loss="logistic", inference=True): the non-private oracle (the logit
MLE's interval), coverage over seeds of a known population parameter (and the failure
of an interval that ignores the noise), the information matrix inside the same budget,
replay, the summary and the refusals. The data and the logit oracle are those of the
objective perturbation's tests."""

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy import stats

import skdp.linear_model._inference as inference_module
import skdp.linear_model._output_perturbation as output_module
from skdp import InferenceError, OutputPertSVM
from skdp.mechanisms._output_perturbation import output_perturbation_calibration
from skdp.mechanisms._sufficient_statistics import SSPCalibration
from tests.linear_model.test_inference_objective_perturbation import (THETA, _logit_mle,
                                                                      _not_below_nominal,
                                                                      _population)
from tests.linear_model.test_ssp import _gdp_mu


def _model(**params):
    return OutputPertSVM(**{**dict(loss="logistic", data_norm=1.0, inference=True), **params})


@pytest.mark.parametrize("C, rtol", [(1.0, 1e-2), (1e4, 1e-5)])
def test_infinite_epsilon_gives_the_logit_interval(C, rtol):
    """As for objective perturbation: the one-step correction reaches the MLE up to the
    square of the ridge's bias, the standard errors up to that bias."""
    X, y = _population(2000, seed=3)
    model = _model(epsilon=np.inf, C=C, tol=1e-9).fit(X, y)
    theta, bse = _logit_mle(X, y)
    q = stats.norm.ppf(0.975)
    assert_allclose(model.bse_, bse, rtol=rtol)
    assert np.all(np.abs(np.r_[model.intercept_, model.coef_.ravel()] - theta) <= rtol * bse)
    error = np.abs(model.conf_int() - np.c_[theta - q * bse, theta + q * bse])
    assert np.all(error <= (1 + q) * rtol * bse[:, None])


def _coverage(n, epsilon, delta, draws):
    hits = []
    for seed in range(draws):
        X, y = _population(n, seed)
        low, high = _model(epsilon=epsilon, delta=delta, random_state=seed).fit(X, y).conf_int().T
        hits.append((low <= THETA) & (THETA <= high))
    return np.array(hits)


def test_intervals_cover_the_population_minimiser():
    """200 fits at n = 20,000, epsilon 1, delta 1e-6 (the noise triples the interval):
    coverage not below nominal."""
    hits = _coverage(20_000, 1.0, 1e-6, draws=200)
    assert _not_below_nominal(hits), hits.mean(axis=0)
    assert hits.mean() < 0.995


def test_a_planted_bug_that_ignores_the_noise_fails_the_coverage_test(monkeypatch):
    original = inference_module.glm_inference

    def without_noise(theta, information, *, C, ridge, calibration, **noises):
        return original(theta, information, C=C, ridge=ridge,
                        calibration=SSPCalibration("none", 0.0, 0.0, 0.0))
    monkeypatch.setattr(inference_module, "glm_inference", without_noise)
    hits = _coverage(20_000, 1.0, 1e-6, draws=100)
    assert not _not_below_nominal(hits)
    assert hits.mean() < 0.8


@pytest.mark.slow
@pytest.mark.parametrize("n, epsilon", [(20_000, 3.0), (200_000, 1.0)])
@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_intervals_cover_on_a_wider_grid(n, epsilon, delta):
    hits = _coverage(n, epsilon, delta, draws=200)
    assert _not_below_nominal(hits), hits.mean(axis=0)


@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_the_budget_is_split_between_the_output_noise_and_the_information(delta):
    """The output noise is calibrated at (0.9 epsilon, 0.9 delta) for the minimiser's
    sensitivity (1 + 2 tol) C R_eff; the information matrix at (0.1 epsilon, 0.1
    delta), by hand: one record's l'' z z^T, l'' <= 1/4, ||z||^2 <= 2."""
    X, y = _population(400, seed=0)
    epsilon = 0.8
    model = _model(epsilon=epsilon, delta=delta, random_state=0)
    solution = model._releases(X, y)[0]
    sensitivity = (1 + 2 * model.tol) * model.C_ * np.sqrt(2.0)
    expected = output_perturbation_calibration(0.9 * epsilon, 0.9 * delta, sensitivity,
                                               "auto", dim=4)
    assert_allclose(solution.noise_scale(), expected.noise_scale, rtol=1e-9)
    if delta:
        information = 0.25 * 2.0 / _gdp_mu(0.1 * epsilon, 0.1 * delta)
    else:
        information = 0.25 * ((np.sqrt(3) + 1) ** 2 + 2.0) / 2 / (0.1 * epsilon)
    assert_allclose(solution.information_calibration.gram, information, rtol=1e-9)
    if delta:   # basic composition: no Renyi curve declared
        assert model._renyi_cost(n_classes=2) is None
    fitted = _model(epsilon=epsilon, delta=delta, random_state=0).fit(*_population(20_000, 0))
    assert (fitted.epsilon_spent_, fitted.delta_spent_) == (epsilon, delta)


def test_same_seed_same_intervals_and_the_summary_names_the_features():
    X, y = _population(20_000, seed=1)
    frame = pd.DataFrame(X, columns=["age", "dose", "weight"])
    first = _model(epsilon=1.0, random_state=4).fit(frame, y)
    again = _model(epsilon=1.0, random_state=4).fit(frame, y)
    other = _model(epsilon=1.0, random_state=5).fit(frame, y)
    assert_array_equal(first.conf_int(), again.conf_int())
    assert not np.array_equal(first.conf_int(), other.conf_int())
    table = first.summary()
    assert list(table.index) == ["const", "age", "dose", "weight"]
    assert_array_equal(table["coef"], np.r_[first.intercept_, first.coef_.ravel()])


@pytest.fixture
def no_noise(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("noise was drawn")
    monkeypatch.setattr(output_module, "noise_generator", refuse)
    monkeypatch.setattr(output_module, "draw_noise", refuse)


@pytest.mark.parametrize("params, fit, match", [
    (dict(loss="hinge"), {}, "loss='logistic' or loss='huber'"),
    (dict(kernel="rbf"), {}, "kernel='linear'"),
    ({}, dict(sample_weight=np.ones(60)), "no sample_weight"),
    ({}, dict(groups=np.arange(60)), "no groups"),
    (dict(classes=[0, 1, 2]), {}, "two classes"),
])
def test_options_without_valid_intervals_are_refused_before_any_noise(params, fit, match,
                                                                       no_noise):
    X, y = _population(60, seed=0)
    with pytest.raises(ValueError, match=match):
        _model(epsilon=1.0, **params).fit(X, y, **fit)


def test_no_noise_reduction_and_a_refusal_that_releases_nothing():
    assert not _model(epsilon=1.0, delta=1e-6)._supports_noise_reduction()
    X, y = _population(30, seed=0)
    model = _model(epsilon=0.1, random_state=0)
    with pytest.raises(InferenceError, match="information matrix"):
        model.fit(X, y)
    assert not hasattr(model, "coef_") and not hasattr(model, "bse_")
