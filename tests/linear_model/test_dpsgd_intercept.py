"""DPSGDClassifier's intercept correction: a private start of a binary logistic intercept
at the logit of the base rate and one noisy Newton step on it after the steps, their
noise sharing the row count's Gaussian."""

import math

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.special import expit

from skdp import DPSGDClassifier
from skdp.linear_model._dpsgd import _call_streams, _dp_sgd, _MarginColumns
from skdp.linear_model._dpsgd_intercept import (CURVATURE_FLOOR, MAX_STEP, InterceptCorrection,
                                                positive_shares, start_intercept)
from skdp.losses import LogisticLoss


def _logistic_data(n, seed, intercept=-1.5):
    """Rows in the unit ball of R^4, labels from a logistic model whose intercept makes
    the positives a minority (base rate about 0.26)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 4))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    X *= rng.random((n, 1)) ** 0.25
    y = (rng.random(n) < expit(X @ np.array([3.0, -2.0, 1.0, 0.0]) + intercept)).astype(int)
    return X, y


def test_a_rows_pair_has_norm_at_most_one():
    """``(p - y, p (1 - p))`` over p in [0, 1] and y in {0, 1}: norm at most 1, reached
    at p = 1 - y (the sensitivity the noise is scaled to)."""
    p = np.linspace(0.0, 1.0, 100_001)
    for label in (0.0, 1.0):
        norms = np.hypot(p - label, p * (1.0 - p))
        assert norms.max() <= 1.0
        assert norms[0 if label else -1] == 1.0


CASES = {
    "rows": (dict(), lambda n: {}),
    "weights": (dict(max_sample_weight=2.0),
                lambda n: {"sample_weight": np.linspace(0.0, 3.0, n)}),
    "persons": (dict(), lambda n: {"groups": np.arange(n) // 3}),
}


@pytest.mark.parametrize("params, fit_params", CASES.values(), ids=CASES.keys())
def test_release_is_the_started_run_and_the_noisy_newton_step_replayed(params, fit_params):
    """Replayed by hand from the fit's streams, the count's stream giving the count
    (std ``sqrt(3) s``), then the start's normal, then the correction's two: the steps
    start at the intercept ``logit(r)``, ``r`` the units' positive shares plus ``sqrt(3)
    s`` noise over the count; then the intercept moves by ``-G_tilde / max(H_tilde,
    floor)``, ``G, H`` the sums of ``w_i (p_i - y_i)`` and ``w_i p_i (1 - p_i)`` over the
    units (a person's pair clipped to ``W``) at the steps' release, each plus ``sqrt(3)
    s W`` times a normal."""
    X, y = _logistic_data(300, 0)
    s, seed, q = 7.0, 5, 0.1
    extra = fit_params(len(y))
    est = DPSGDClassifier(epsilon=np.inf, noise_multiplier=2.0, count_noise_std=s,
                          data_norm=1.0, random_state=seed, **params).fit(X, y, **extra)
    W, side = est.weight_bound_, math.sqrt(3.0) * s
    groups = extra.get("groups", np.arange(len(y)))
    units = np.unique(groups)
    count_rng, sampling_rng, noise_rng = _call_streams(seed, 0)
    n_tilde = len(units) + side * count_rng.standard_normal()
    normaliser = max(q * n_tilde, 1.0)
    shares = sum(np.mean(y[groups == g]) for g in units) + side * count_rng.standard_normal()
    rate = np.clip(shares / (normaliser / q), 0.01, 0.99)
    theta0 = np.zeros((1, 5))
    theta0[0, -1] = np.log(rate / (1 - rate)) / 0.25
    design = np.hstack([X, np.full((len(y), 1), 0.25)])
    w = extra.get("sample_weight")
    theta = _dp_sgd(design, np.where(y == 1, 1.0, -1.0)[:, None],
                    _MarginColumns(LogisticLoss()), noise_multiplier=2.0, max_grad_norm=0.5,
                    sample_rate=q, n_steps=100, normaliser=normaliser,
                    learning_rate=est.learning_rate_, schedule="constant", alpha=0.0,
                    average=0.5, momentum=0.9, sampling_rng=sampling_rng,
                    noise_rng=noise_rng, sample_weight=w, weight_bound=W,
                    initial_theta=theta0, groups=extra.get("groups")).theta[0]
    assert_allclose(est.coef_[0], theta[:-1], rtol=1e-10, atol=1e-13)
    p = expit(design @ theta)
    w = np.ones(len(y)) if w is None else np.clip(w, 0.0, W)
    pairs = np.column_stack([w * (p - y), w * p * (1.0 - p)])
    pairs = np.array([pairs[groups == g].sum(axis=0) for g in units])
    with np.errstate(divide="ignore"):   # a weight of 0: a pair of norm 0, factor 1
        pairs *= np.minimum(1.0, W / np.linalg.norm(pairs, axis=1))[:, None]
    G, H = pairs.sum(axis=0) + side * W * count_rng.standard_normal(2)
    step = np.clip(-G / max(H, CURVATURE_FLOOR * normaliser / q), -MAX_STEP, MAX_STEP)
    assert 0.01 < abs(step) < MAX_STEP
    assert_allclose(est.intercept_, 0.25 * theta[-1] + step, rtol=1e-10)


def test_positive_shares_and_the_start():
    """A person's share of positive rows counts once (in [0, 1]: sensitivity 1); the
    start is the logit of the rate clipped into [0.01, 0.99]."""
    y = np.array([1.0, -1.0, 1.0, 1.0, -1.0, -1.0])
    assert positive_shares(y) == 3.0
    assert positive_shares(y, np.array([0, 0, 1, 1, 1, 2])) == pytest.approx(0.5 + 2 / 3)
    assert start_intercept(25.0, 100.0) == pytest.approx(math.log(25 / 75), rel=1e-14)
    assert start_intercept(-5.0, 100.0) == pytest.approx(math.log(0.01 / 0.99), rel=1e-14)
    assert start_intercept(500.0, 0.2) == pytest.approx(math.log(0.99 / 0.01), rel=1e-14)


def test_the_correction_is_accounted_inside_the_count():
    """The count, the start and the correction (each Gaussian of std ``sqrt(3) s``) are
    exactly the one Gaussian of std ``s`` the accountant composes with the steps: the
    same noise multiplier and spend as without them, and in Renyi DP the three thirds
    add up to the whole at every order (dp-accounting's own computation)."""
    import dp_accounting

    X, y = _logistic_data(400, 1)
    kw = dict(epsilon=1.0, data_norm=1.0, random_state=0)
    corrected = DPSGDClassifier(**kw).fit(X, y)
    plain = DPSGDClassifier(intercept_correction=False, **kw).fit(X, y)
    for name in ("noise_multiplier_", "count_noise_std_", "epsilon_spent_", "dp_events_"):
        assert getattr(corrected, name) == getattr(plain, name)
    s = corrected.count_noise_std_
    third = dp_accounting.GaussianDpEvent(math.sqrt(3.0) * s)
    thirds = dp_accounting.rdp.RdpAccountant().compose(
        dp_accounting.ComposedDpEvent([third, third, third]))
    whole = dp_accounting.rdp.RdpAccountant().compose(dp_accounting.GaussianDpEvent(s))
    assert thirds.get_epsilon(1e-5) == pytest.approx(whole.get_epsilon(1e-5), rel=1e-12)


@pytest.mark.parametrize("params", [dict(loss="huber"), dict(fit_intercept=False),
                                    dict(n_classes=3)])
def test_no_correction_without_a_binary_logistic_intercept(params):
    """Hinge-like losses, no intercept or more classes: nothing is corrected, and the
    count keeps the whole Gaussian (the models with and without the option are one)."""
    X, y = _logistic_data(300, 2)
    params = dict(params)
    if params.pop("n_classes", 2) == 3:
        y = np.arange(len(y)) % 3
    kw = dict(epsilon=1.0, data_norm=1.0, random_state=1, **params)
    on = DPSGDClassifier(**kw).fit(X, y)
    off = DPSGDClassifier(intercept_correction=False, **kw).fit(X, y)
    assert_allclose(on.coef_, off.coef_, rtol=0, atol=0)
    assert_allclose(on.intercept_, off.intercept_, rtol=0, atol=0)


def test_private_mean_probability_is_the_base_rate_at_the_defaults(seed):
    """At epsilon 1 with the defaults (clipping at 0.5), on 20,000 rows with a minority
    class of 26 %, the mean predicted probability on the training rows is within 0.01
    of the base rate (the goal of the issue); without the correction the clipping moves
    it more than 0.01 below (the bias the correction removes)."""
    X, y = _logistic_data(20000, seed)
    kw = dict(epsilon=1.0, data_norm=1.0, random_state=seed)
    est = DPSGDClassifier(**kw).fit(X, y)
    assert abs(est.predict_proba(X)[:, 1].mean() - y.mean()) < 0.01
    biased = DPSGDClassifier(intercept_correction=False, **kw).fit(X, y)
    assert biased.predict_proba(X)[:, 1].mean() < y.mean() - 0.01


def test_a_noisy_curvature_cannot_make_a_huge_step():
    """The step is ``-G_tilde / max(H_tilde, floor)`` within ``[-MAX_STEP, MAX_STEP]``:
    a noisy curvature below the floor is the floor, a huge ratio the trust region."""
    correction = InterceptCorrection(noise_std=10.0, floor=4.0, intercept_scaling=0.25,
                                     normals=np.array([0.5, -1.0]))
    assert correction.step([-2.0, 20.0])[0] == pytest.approx(-(-2.0 + 5.0) / 10.0)
    assert correction.step([-2.0, 12.0])[0] == pytest.approx(-3.0 / 4.0)   # H_tilde = 2
    assert correction.step([30.0, 12.0])[0] == -MAX_STEP                      # -35 / 4
    theta = correction.apply(np.zeros((1, 3)), [30.0, 12.0])
    assert_allclose(theta, [[0.0, 0.0, -MAX_STEP / 0.25]])
