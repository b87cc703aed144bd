"""DPSGDClassifier(inference=True): the one-step estimate against an independent numpy
Newton step and the logit MLE's interval without noise, the calibration of the steps
with the two extra releases against dp-accounting, the releases' noise law, replay,
coverage over seeds of a known population parameter (and the failure of an interval
that ignores the noise), the summary and the refusals before any noise."""

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy import stats
from scipy.special import expit

import skdp.linear_model._dpsgd as dpsgd_module
import skdp.mechanisms._one_step as one_step_module
from skdp import DPSGDClassifier, InferenceError
from skdp.accounting._costs import mechanism_rdp
from skdp.mechanisms._one_step import ONE_STEP_SHARE, one_step_calibration
from skdp.mechanisms._sufficient_statistics import gram_coordinates
from tests.linear_model.test_inference_objective_perturbation import (REFUSED_OPTIONS, THETA,
                                                                      _logit_mle,
                                                                      _not_below_nominal,
                                                                      _population)
from tests.linear_model.test_ssp import _gdp_mu

B = np.hypot(1.0, 0.25)   # data_norm=1 and the default intercept_scaling=0.25


def _model(**params):
    return DPSGDClassifier(**{**dict(data_norm=1.0, inference=True), **params})


def _sums(X, y, theta, intercept_scaling=0.25):
    """The logistic gradient and Hessian sums on ``[X, c]`` at ``theta`` (numpy)."""
    Z = np.c_[X, np.full(len(y), intercept_scaling)]
    s = np.where(y == 1, 1.0, -1.0)
    m = s * (Z @ theta)
    return Z.T @ (-expit(-m) * s), Z.T @ (Z * (expit(m) * expit(-m))[:, None])


# -- without noise: a Newton step, near the logit MLE ------------------------------------------

def test_infinite_epsilon_is_one_newton_step_from_the_iterate():
    """Exactly one Newton step of the unpenalised logistic loss from the released
    iterate, with the inverse Hessian there as covariance (computed here)."""
    X, y = _population(2000, seed=3)
    model = _model(epsilon=np.inf, random_state=0)
    theta_s = model._releases(X, y)[0].one_step[0]
    model.fit(X, y)
    gradient, hessian = _sums(X, y, theta_s)
    theta_d = theta_s - np.linalg.solve(hessian, gradient)
    scale = np.r_[0.25, np.ones(3)]
    order = [3, 0, 1, 2]
    assert_allclose(np.r_[model.intercept_, model.coef_.ravel()], theta_d[order] * scale,
                    rtol=1e-10)
    assert_allclose(model.bse_, np.sqrt(np.diag(np.linalg.inv(hessian)))[order] * scale,
                    rtol=1e-10)
    assert np.isinf(model.df_resid_) and not hasattr(model, "bootstrap_deviations_")


def test_infinite_epsilon_gives_the_logit_interval():
    """From a converged full-batch run the Newton step lands on the MLE up to the square
    of the iterate's error, and the Hessian is evaluated an iterate's error away: both
    far below 1e-4 standard errors here."""
    X, y = _population(2000, seed=3)
    model = _model(epsilon=np.inf, sample_rate=1.0, epochs=300, max_grad_norm="auto").fit(X, y)
    theta, bse = _logit_mle(X, y)
    q = stats.norm.ppf(0.975)
    assert_allclose(model.bse_, bse, rtol=1e-4)
    assert np.all(np.abs(np.r_[model.intercept_, model.coef_.ravel()] - theta) <= 1e-4 * bse)
    error = np.abs(model.conf_int() - np.c_[theta - q * bse, theta + q * bse])
    assert np.all(error <= (1 + q) * 1e-4 * bse[:, None])


def test_the_iterate_is_the_fit_without_inference_at_the_same_noise():
    """The two releases are drawn after the steps and the correction: with the same
    seed, noise multiplier and count noise, the iterate of inference=True is the model
    inference=False releases, and the spend of the former is larger."""
    X, y = _population(2000, seed=2)
    params = dict(epsilon=3.0, noise_multiplier=2.0, count_noise_std=20.0, random_state=7)
    theta_s = _model(**params)._releases(X, y)[0].one_step[0]
    plain = _model(**params, inference=False).fit(X, y)
    assert_array_equal(theta_s, np.r_[plain.coef_.ravel(), plain.intercept_ / 0.25])
    assert _model(**params).fit(X, y).epsilon_spent_ > plain.epsilon_spent_


# -- the steps are calibrated for the count, the steps and the two releases --------------------

def _independent_epsilon(model, accountant):
    """dp-accounting on the composed event: the count, the intercept's start and its
    correction (three Gaussians of std sqrt(3) s, sensitivity 1), the gradient and the
    information matrix (Gaussians of std/sensitivity from one_step_calibration, by hand
    below) and the T steps."""
    import dp_accounting
    from dp_accounting.pld import PLDAccountant
    from dp_accounting.rdp import RdpAccountant

    mu = _gdp_mu(model.epsilon, model.delta)
    each = mu * np.sqrt(ONE_STEP_SHARE / 2)          # the releases' mu, half each
    s = 10.0 / mu                                      # the default count noise
    step = dp_accounting.GaussianDpEvent(model.noise_multiplier_)
    if model.sample_rate_ < 1:
        step = dp_accounting.PoissonSampledDpEvent(model.sample_rate_, step)
    event = dp_accounting.ComposedDpEvent(
        [dp_accounting.GaussianDpEvent(np.sqrt(3) * s)] * 3
        + [dp_accounting.GaussianDpEvent(1 / each)] * 2
        + [dp_accounting.SelfComposedDpEvent(step, model.n_steps_)])
    acc = RdpAccountant() if accountant == "rdp" else PLDAccountant()
    return acc.compose(event).get_epsilon(model.delta)


def test_the_release_noise_is_the_calibrated_share():
    calibration = one_step_calibration(_gdp_mu(1.0, 1e-5), row_norm=B)
    each = _gdp_mu(1.0, 1e-5) * np.sqrt(0.05)
    assert_allclose(calibration.gradient_std, B / each, rtol=1e-9)
    assert_allclose(calibration.information.gram, B**2 / 4 / each, rtol=1e-9)


def test_poisson_steps_are_calibrated_with_the_releases_against_dp_accounting():
    """Renyi DP (the default under sampling): the composed event certified by
    dp-accounting's own RDP accountant is within epsilon and uses it (the calibration
    returns the end of its bisection within budget); the releases cost the steps
    noise: the multiplier is above the one without them."""
    X, y = _population(2000, seed=0)
    model = _model(epsilon=1.0, random_state=0).fit(X, y)
    independent = _independent_epsilon(model, "rdp")
    assert independent <= 1.0 + 1e-9
    assert independent > 1.0 - 1e-3
    assert_allclose(model.epsilon_spent_, independent, rtol=1e-6)
    plain = _model(epsilon=1.0, inference=False, random_state=0).fit(X, y)
    assert model.noise_multiplier_ > 1.02 * plain.noise_multiplier_
    # the fitted Renyi curve is the composed one's: the count's Gaussian equivalent
    assert_allclose(model._renyi_spent(),
                    mechanism_rdp(model.noise_multiplier_, 0.1, 100, model.count_noise_std_))


def test_full_batch_steps_are_calibrated_in_closed_form_against_dp_accounting():
    """Full batches: the count, the releases and the steps are one Gaussian mechanism,
    sqrt(T / z^2 + 1 / s^2 + 2 mu_each^2) = mu(epsilon, delta) exactly; dp-accounting's
    PLD accountant (which approximates from above) agrees within its discretisation."""
    X, y = _population(2000, seed=0)
    model = _model(epsilon=1.0, sample_rate=1.0, epochs=50, random_state=0).fit(X, y)
    mu = _gdp_mu(1.0, 1e-5)
    composed = np.sqrt(50 / model.noise_multiplier_**2 + (mu / 10) ** 2
                       + ONE_STEP_SHARE * mu**2)
    assert_allclose(composed, mu, rtol=1e-6)
    assert_allclose(model._gdp_mu_spent(), mu, rtol=1e-6)
    assert_allclose(_independent_epsilon(model, "pld"), 1.0, rtol=5e-3)


def test_with_inference_no_renyi_cost_is_declared_before_the_fit():
    assert _model(epsilon=1.0)._renyi_cost(n_classes=2) is None
    assert _model(epsilon=1.0, inference=False)._renyi_cost(n_classes=2) is not None


# -- the releases' noise law -------------------------------------------------------------------

def test_the_releases_noise_has_the_calibrated_law():
    """Over 100 seeds, the released gradient and information matrix minus their exact
    values at the released iterate (numpy), standardised by the calibrated standard
    deviations (an off-diagonal entry's is sigma / sqrt(2)): standard normal (KS), while
    a law 30 % wider is rejected by the same test. One full-batch step each: the
    releases' law does not depend on the steps."""
    X, y = _population(300, seed=0)
    calibration = one_step_calibration(_gdp_mu(1.0, 1e-5), row_norm=B)
    rows, cols = np.triu_indices(4)
    scale = np.where(rows == cols, 1.0, np.sqrt(0.5)) * calibration.information.gram
    standardised = []
    for seed in range(100):
        model = _model(epsilon=1.0, sample_rate=1.0, epochs=1, random_state=seed)
        theta_s, g, H, _ = model._releases(X, y)[0].one_step
        gradient, hessian = _sums(X, y, theta_s)
        standardised += [(g - gradient) / calibration.gradient_std,
                         (H - hessian)[rows, cols] / scale]
    standardised = np.concatenate(standardised)
    assert stats.kstest(standardised, "norm").pvalue > 1e-3
    assert stats.kstest(standardised / 1.3, "norm").pvalue < 1e-3


# -- replay, the summary -----------------------------------------------------------------------

def test_same_seed_same_intervals_other_seed_other_intervals():
    X, y = _population(2000, seed=1)
    first = _model(epsilon=1.0, random_state=4).fit(X, y)
    again = _model(epsilon=1.0, random_state=4).fit(X, y)
    other = _model(epsilon=1.0, random_state=5).fit(X, y)
    assert_array_equal(first.conf_int(), again.conf_int())
    assert_array_equal(first.coef_, again.coef_)
    assert not np.array_equal(first.conf_int(), other.conf_int())


def test_the_summary_names_the_features_and_predictions_use_the_one_step_model():
    X, y = _population(2000, seed=0)
    frame = pd.DataFrame(X, columns=["age", "dose", "weight"])
    model = _model(epsilon=1.0, random_state=0).fit(frame, np.where(y, "yes", "no"))
    table = model.summary()
    assert list(table.index) == ["const", "age", "dose", "weight"]
    assert_array_equal(table["coef"], np.r_[model.intercept_, model.coef_.ravel()])
    assert_array_equal(table[["lower", "upper"]].to_numpy(), model.conf_int())
    scores = X @ model.coef_.ravel() + model.intercept_
    assert_array_equal(model.predict(frame), np.where(scores > 0, "yes", "no"))
    assert not hasattr(_model(epsilon=1.0, inference=False), "conf_int")


# -- coverage ---------------------------------------------------------------------------------

def _coverage(n, epsilon, draws, **params):
    hits = []
    for seed in range(draws):
        X, y = _population(n, seed)
        low, high = _model(epsilon=epsilon, random_state=seed, **params).fit(X, y).conf_int().T
        hits.append((low <= THETA) & (THETA <= high))
    return np.array(hits)


def test_intervals_cover_the_population_minimiser():
    """120 fits at n = 2,000, epsilon 1, five passes (the releases' noise about doubles
    the interval): no coefficient's coverage has a 99 % Clopper-Pearson interval below
    0.95. While the bootstrap's world was centred on the released information matrix
    (before ``world_matrix`` deconvolved its noise) it counted that noise twice, and
    at this size the intervals were conservative (about 0.98, the intercept's 1.0)."""
    hits = _coverage(2000, 1.0, draws=120, epochs=5)
    assert _not_below_nominal(hits), hits.mean(axis=0)
    assert hits.mean() < 0.995


def test_a_planted_bug_that_ignores_the_noise_fails_the_coverage_test(monkeypatch):
    original = dpsgd_module.one_step_inference

    def without_noise(theta, gradient, information, calibration):
        return original(theta, gradient, information, one_step_calibration(np.inf, 1.0))
    monkeypatch.setattr(dpsgd_module, "one_step_inference", without_noise)
    hits = _coverage(2000, 1.0, draws=120, epochs=5)
    assert not _not_below_nominal(hits)
    assert hits.mean() < 0.85


@pytest.mark.slow
@pytest.mark.parametrize("n, epsilon", [(20_000, 1.0), (20_000, 3.0), (200_000, 1.0)])
def test_intervals_cover_on_a_wider_grid(n, epsilon):
    hits = _coverage(n, epsilon, draws=200)
    assert _not_below_nominal(hits), hits.mean(axis=0)


# -- refusals ----------------------------------------------------------------------------------

@pytest.fixture
def no_noise(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("noise was drawn")
    monkeypatch.setattr(dpsgd_module, "_call_streams", refuse)
    monkeypatch.setattr(dpsgd_module, "noise_generator", refuse)


@pytest.mark.parametrize("params, fit, three_classes, match", REFUSED_OPTIONS)
def test_options_without_valid_intervals_are_refused_before_any_noise(
        params, fit, three_classes, match, no_noise):
    X, y = _population(60, seed=0)
    if three_classes:
        y = np.arange(60) % 3
    with pytest.raises(ValueError, match=match):
        _model(epsilon=1.0, **params).fit(X, y, **fit)


def test_runs_of_several_calls_and_derivatives_are_refused_before_any_noise(monkeypatch):
    X, y = _population(60, seed=0)
    with pytest.raises(ValueError, match="no partial_fit"):
        _model(epsilon=1.0).partial_fit(X, y, classes=[0, 1])
    fitted = _model(epsilon=1.0, random_state=0, inference=False).fit(X, y)
    fitted.set_params(inference=True, warm_start=True)
    coef = fitted.coef_.copy()
    monkeypatch.setattr(dpsgd_module, "_call_streams", None)   # any draw would fail
    with pytest.raises(ValueError, match="no partial_fit or warm start"):
        fitted.fit(X, y)
    assert_array_equal(fitted.coef_, coef)
    with pytest.raises(ValueError, match="without the derivative"):
        _model(epsilon=1.0, learning_rate=1.0)._releases(X, y, with_derivative=True)
    assert not _model(epsilon=1.0, learning_rate=1.0)._has_epsilon_derivative()


def test_an_information_matrix_the_noise_outweighs_is_refused():
    X, y = _population(40, seed=0)
    for seed in range(5):
        model = _model(epsilon=0.5, random_state=seed)
        with pytest.raises(InferenceError, match="information matrix") as error:
            model.fit(X, y)
        assert not hasattr(model, "coef_") and not hasattr(model, "bse_")
        assert not any(ch.isdigit() for ch in str(error.value).split(":", 1)[1])


# -- exact replay of the two releases on neighbouring datasets ----------------------------------

def _replayed_pair_mu(monkeypatch):
    """The privacy loss (Gaussian-DP ``mu``) of the gradient and information releases
    between a dataset and the same without one row at the row bound, replayed exactly:
    both releases' noise-free sums, at the first dataset's released iterate, each
    difference over the noise it was calibrated with; and the share the fit states."""
    captured = []
    release = DPSGDClassifier._release_one_step

    def capture(self, design, y, theta, rng):
        captured.append((self, design, y, theta))
        return release(self, design, y, theta, rng)

    monkeypatch.setattr(DPSGDClassifier, "_release_one_step", capture)
    monkeypatch.setattr(dpsgd_module, "release_one_step",
                        lambda gradient, information, calibration, rng: (gradient, information))
    # the noise-free information of 60 rows is within the noise: keep the fit's intervals
    monkeypatch.setattr(one_step_module, "singular_within_noise",
                        lambda matrices, calibration: np.zeros(np.shape(matrices)[:-2], bool))
    rng = np.random.default_rng(0)
    X = rng.uniform(-0.5, 0.5, (60, 3))
    y = (X[:, 0] > 0).astype(int)
    X[0], y[0] = [1.0, 0.0, 0.0], 0     # at the row bound, against the trend
    for rows in (slice(None), slice(1, None)):
        _model(epsilon=1.0, delta=1e-5, epochs=2, random_state=0).fit(X[rows], y[rows])
    (model, design, labels, theta), (neighbour, design_prime, labels_prime, _) = captured
    assert model._mechanism_epsilon() == 1.0
    _, g, H, calibration = release(model, design, labels, theta, None)
    _, g_prime, H_prime, _ = release(neighbour, design_prime, labels_prime, theta, None)
    mu_gradient = np.linalg.norm(g - g_prime) / calibration.gradient_std
    mu_information = (np.linalg.norm(gram_coordinates(H - H_prime, "gaussian"))
                      / calibration.information.gram)
    return np.hypot(mu_gradient, mu_information), _gdp_mu(1.0, 1e-5) * np.sqrt(ONE_STEP_SHARE)


def test_the_two_releases_replayed_on_neighbours_stay_within_their_share(monkeypatch):
    replayed, stated = _replayed_pair_mu(monkeypatch)
    # within the share, and the row at the bound uses most of it (the check has teeth)
    assert 0.5 * stated <= replayed <= stated * (1 + 1e-9)


def test_a_calibration_to_half_the_row_bound_fails_the_replay(monkeypatch):
    calibrate = dpsgd_module.one_step_calibration
    monkeypatch.setattr(dpsgd_module, "one_step_calibration",
                        lambda mu, row_norm: calibrate(mu, row_norm / 2))
    replayed, stated = _replayed_pair_mu(monkeypatch)
    assert replayed > stated
