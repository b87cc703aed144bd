"""OutputPertSVM(loss="huber", inference=True): the sandwich ``H^{-1} J H^{-1}`` of the
Huber hinge against an independent numpy oracle (the exact unpenalised minimiser), the
coverage of its population minimiser (and the failures of an interval that takes ``J =
H`` or ignores the noise), the two matrices inside the information's share of the
budget, and the refusals of a flat loss. The data are those of the logistic tests."""

import functools

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy import stats

import skdp.linear_model._inference as inference_module
from skdp import InferenceError, OutputPertSVM
from skdp.mechanisms._output_perturbation import output_perturbation_calibration
from skdp.mechanisms._sufficient_statistics import SSPCalibration, gram_coordinates
from tests.linear_model.test_inference_objective_perturbation import (_not_below_nominal,
                                                                      _population)
from tests.linear_model.test_ssp import _gdp_mu


def _model(**params):
    return OutputPertSVM(**{**dict(loss="huber", data_norm=1.0, inference=True), **params})


def _huber_pieces(Z, s, theta, h):
    """Per row: the Huber hinge, its derivative and second derivative at the margin."""
    m = s * (Z @ theta)
    value = np.where(m > 1 + h, 0.0, np.where(m < 1 - h, 1 - m, (1 + h - m) ** 2 / (4 * h)))
    slope = np.where(m > 1 + h, 0.0, np.where(m < 1 - h, -1.0, -(1 + h - m) / (2 * h)))
    return value, slope, (np.abs(1 - m) <= h) / (2 * h)


def _huber_oracle(X, y, h=0.5):
    """The exact minimiser of the unpenalised Huber hinge on the design with a constant
    (Newton's method with halving, from least squares), and the sandwich's and the
    Hessian's standard errors there."""
    Z, s = np.c_[np.ones(len(y)), X], 2.0 * y - 1
    theta = np.linalg.lstsq(Z, s, rcond=None)[0]
    for _ in range(200):
        value, slope, curvature = _huber_pieces(Z, s, theta, h)
        step = np.linalg.solve(Z.T @ (Z * curvature[:, None]), Z.T @ (slope * s))
        t = 1.0
        while _huber_pieces(Z, s, theta - t * step, h)[0].sum() > value.sum() and t > 1e-12:
            t /= 2
        theta = theta - t * step
        if np.abs(t * step).max() < 1e-14:
            break
    _, slope, curvature = _huber_pieces(Z, s, theta, h)
    inverse = np.linalg.inv(Z.T @ (Z * curvature[:, None]))
    sandwich = inverse @ (Z.T @ (Z * (slope**2)[:, None])) @ inverse
    return theta, np.sqrt(np.diag(sandwich)), np.sqrt(np.diag(inverse))


@functools.cache
def _population_minimiser():
    """The population's Huber minimiser, from 500,000 rows (its error is under a
    twentieth of a standard error at n = 2,000)."""
    return _huber_oracle(*_population(500_000, seed=12345))[0]


# -- the non-private oracle --------------------------------------------------------------------

def test_infinite_epsilon_gives_the_sandwich_around_the_exact_minimiser():
    """With C = 1e4 the one-step correction reaches the unpenalised minimiser and the
    standard errors the numpy sandwich up to the square of the ridge's bias; the
    Hessian alone would be 25 to 35 % too narrow here."""
    X, y = _population(2000, seed=3)
    model = _model(epsilon=np.inf, C=1e4, tol=1e-9).fit(X, y)
    theta, bse, hessian_bse = _huber_oracle(X, y)
    q = stats.norm.ppf(0.975)
    assert_allclose(model.bse_, bse, rtol=1e-5)
    assert np.all(np.abs(np.r_[model.intercept_, model.coef_.ravel()] - theta) <= 1e-5 * bse)
    assert np.all(np.abs(model.conf_int() - np.c_[theta - q * bse, theta + q * bse])
                  <= (1 + q) * 1e-5 * bse[:, None])
    assert np.all(hessian_bse < 0.8 * bse)


def _coverage(n, epsilon, delta, draws, max_refused=0.0, **params):
    """The hits of the fits that are not refused (at most ``max_refused`` of them: the
    coverage is the one a user meets, given an interval)."""
    theta = _population_minimiser()
    hits = []
    for seed in range(draws):
        X, y = _population(n, seed)
        model = _model(epsilon=epsilon, delta=delta, random_state=seed, **params)
        try:
            low, high = model.fit(X, y).conf_int().T
        except InferenceError:
            continue
        hits.append((low <= theta) & (theta <= high))
    assert len(hits) >= (1 - max_refused) * draws
    return np.array(hits)


@pytest.mark.slow
def test_the_non_private_sandwich_covers_and_the_hessian_alone_does_not(monkeypatch):
    """200 non-private fits at n = 2,000 (C = 1e4): the sandwich covers the population
    minimiser; the same intervals with ``J = H`` (the logistic shortcut) do not."""
    hits = _coverage(2000, np.inf, 0.0, draws=200, C=1e4)
    assert _not_below_nominal(hits), hits.mean(axis=0)
    original = inference_module.glm_inference

    def hessian_only(*args, gradient_covariance=None, **kwargs):
        return original(*args, **kwargs)
    monkeypatch.setattr(inference_module, "glm_inference", hessian_only)
    hits = _coverage(2000, np.inf, 0.0, draws=200, C=1e4)
    assert not _not_below_nominal(hits)
    assert hits.mean() < 0.9


# -- coverage with the noise ------------------------------------------------------------------

def test_intervals_cover_the_population_minimiser():
    """150 fits at n = 20,000, epsilon 1, delta 1e-6 (a few refused: H~'s noise is near
    its smallest eigenvalue at this size): not below nominal, not trivial."""
    hits = _coverage(20_000, 1.0, 1e-6, draws=150, max_refused=0.05)
    assert _not_below_nominal(hits), hits.mean(axis=0)
    assert hits.mean() < 0.995


def test_a_planted_bug_that_ignores_the_noise_fails_the_coverage_test(monkeypatch):
    original = inference_module.glm_inference

    def without_noise(theta, information, *, C, ridge, calibration, gradient_covariance,
                      **noises):
        return original(theta, information, C=C, ridge=ridge, gradient_covariance=(
            gradient_covariance), calibration=SSPCalibration("none", 0.0, 0.0, 0.0))
    monkeypatch.setattr(inference_module, "glm_inference", without_noise)
    hits = _coverage(20_000, 1.0, 1e-6, draws=60, max_refused=0.05)
    assert not _not_below_nominal(hits)
    assert hits.mean() < 0.8


@pytest.mark.slow
@pytest.mark.parametrize("n, epsilon", [(50_000, 1.0), (200_000, 1.0), (200_000, 0.3)])
@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_intervals_cover_on_a_wider_grid(n, epsilon, delta):
    hits = _coverage(n, epsilon, delta, draws=200, max_refused=0.05)
    assert _not_below_nominal(hits), hits.mean(axis=0)


# -- the two matrices inside the budget -------------------------------------------------

def _solution(epsilon, delta, seed, n=400, **params):
    model = _model(epsilon=epsilon, delta=delta, random_state=seed, **params)
    return model, model._releases(*_population(n, seed=0))[0]


@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_the_budget_is_split_between_the_output_noise_and_the_two_matrices(delta):
    """Output noise at (0.9 epsilon, 0.9 delta); H~ and J~ share (0.1 epsilon, 0.1
    delta), by hand: one record adds ``l'' z z^T`` with ``l'' <= 1 / (2 h)`` (2 at h =
    1/4) to H and ``l'^2 z z^T`` with ``l'^2 <= 1`` to J, ``||z||^2 <= 2``. Gaussian:
    each at ``mu / sqrt(2)`` of the share's ``mu`` (composing to it exactly); Laplace:
    each at half the share's epsilon."""
    epsilon = 0.8
    model, solution = _solution(epsilon, delta, seed=0, huber_h=0.25)
    sensitivity = (1 + 2 * model.tol) * model.C_ * np.sqrt(2.0)
    expected = output_perturbation_calibration(0.9 * epsilon, 0.9 * delta, sensitivity,
                                               "auto", dim=4)
    assert_allclose(solution.noise_scale(), expected.noise_scale, rtol=1e-9)
    if delta:
        unit = 2.0 * np.sqrt(2.0) / _gdp_mu(0.1 * epsilon, 0.1 * delta)
    else:   # the L1 norm of one record's upper triangle, at most ((sqrt(3) + 1)^2 + 2) / 2
        unit = ((np.sqrt(3) + 1) ** 2 + 2.0) / 2 * 2 / (0.1 * epsilon)
    assert_allclose(solution.information_calibration.gram, 2.0 * unit, rtol=1e-9)
    loss = model._make_loss()
    assert_allclose(model._information_calibration(loss, loss.lipschitz**2).gram, unit,
                    rtol=1e-9)
    fitted = _model(epsilon=epsilon, delta=delta, random_state=0).fit(*_population(100_000, 0))
    assert (fitted.epsilon_spent_, fitted.delta_spent_) == (epsilon, delta)


def test_a_row_in_the_linear_part_moves_the_gradient_covariance_by_its_sensitivity():
    """A row of norm R with margin below 1 - h has ``l'^2 = 1``: its term's Frobenius
    norm is J's Gaussian sensitivity, which its share uses in full."""
    model, solution = _solution(1.0, 1e-6, seed=0)
    loss = model._make_loss()
    calibration = model._information_calibration(loss, 1.0)
    theta = solution.theta
    z = np.r_[-theta[:3] / np.linalg.norm(theta[:3]), 1.0]     # margin -|theta| + c < 1 - h
    assert abs(loss.grad(z @ theta)) == 1.0
    shift = np.linalg.norm(gram_coordinates(np.outer(z, z), "gaussian")) / calibration.gram
    assert_allclose(shift, _gdp_mu(0.1, 1e-7) / np.sqrt(2.0), rtol=1e-9)


def test_the_gradient_covariance_carries_noise_of_its_calibrated_scale():
    """``J~ - J`` over 40 seeds: Gaussian coordinates of standard deviation
    ``calibration.gram`` (a chi-square test on the 400 coordinates, 99.9 %)."""
    X, y = _population(400, seed=0)
    draws = []
    for seed in range(40):
        model, solution = _solution(1.0, 1e-6, seed=seed)
        design = np.c_[X, np.ones(len(y))]
        margins = (2.0 * y - 1) * (design @ solution.theta)
        J = design.T @ (design * (model._make_loss().grad(margins) ** 2)[:, None])
        scale = model._information_calibration(model._make_loss(), 1.0).gram
        draws.append(gram_coordinates(solution.gradient_covariance - J, "gaussian") / scale)
    statistic = np.sum(np.square(draws))
    low, high = stats.chi2.ppf([0.0005, 0.9995], np.size(draws))
    assert low < statistic < high


# -- inference=False and refusals -------------------------------------------------------------

def test_inference_false_is_unchanged_and_inference_true_is_reproducible():
    """Without intervals the Huber fit gets the whole budget and releases no matrix;
    the same seed gives the same model and intervals."""
    X, y = _population(20_000, seed=1)
    plain = _model(epsilon=1.0, inference=False, random_state=4)
    solution = plain._releases(X, y)[0]
    assert solution.information is None and solution.gradient_covariance is None
    expected = output_perturbation_calibration(1.0, 0.0, solution.sensitivity, "auto", dim=4)
    assert_allclose(solution.noise_scale(), expected.noise_scale, rtol=1e-12)
    first = _model(epsilon=1.0, delta=1e-6, random_state=4).fit(X, y)
    again = _model(epsilon=1.0, delta=1e-6, random_state=4).fit(X, y)
    assert_array_equal(first.conf_int(), again.conf_int())
    assert_array_equal(first.coef_, again.coef_)


def test_separable_classes_are_refused_as_flat_without_noise():
    """Separable rows with a gap: the Huber loss is zero once every margin is beyond
    1 + h, so its minimiser does not exist; the ridge leaves a handful of rows at the
    band's edge, fewer than ten per coefficient by ``H``'s trace. Even without noise
    the fit refuses and releases nothing."""
    X, _ = _population(4000, seed=0)
    X = X[np.abs(X[:, 0]) > 0.1]
    y = (X[:, 0] > 0).astype(int)
    model = _model(epsilon=np.inf, C=1e4)
    with pytest.raises(InferenceError, match="flat along a direction"):
        model.fit(X, y)
    assert not hasattr(model, "coef_") and not hasattr(model, "bse_")


def test_too_few_rows_in_the_quadratic_band_are_refused():
    """At n = 2,000 and epsilon 1 the noise of H~ outweighs the rows in the band (a
    few hundred, each adding ``z z^T / (2 h)``): refused from the releases alone,
    without a number in the message."""
    X, y = _population(2000, seed=0)
    for seed in range(3):
        model = _model(epsilon=1.0, delta=1e-6, random_state=seed)
        with pytest.raises(InferenceError, match="information matrix") as error:
            model.fit(X, y)
        assert not hasattr(model, "coef_") and not hasattr(model, "bse_")
        assert not any(ch.isdigit() for ch in str(error.value).split(":", 1)[1])
