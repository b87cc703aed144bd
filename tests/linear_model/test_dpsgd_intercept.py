"""DPSGDClassifier's intercept correction: one noisy Newton step on a binary logistic
intercept after the steps, its noise sharing the row count's Gaussian."""

import math

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.special import expit

from skdp import DPSGDClassifier
from skdp.linear_model._dpsgd import _call_streams
from skdp.linear_model._dpsgd_intercept import CURVATURE_FLOOR, MAX_STEP


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
def test_release_is_the_noisy_newton_step_replayed(params, fit_params):
    """The corrected fit is the uncorrected fit whose count has the same noise (std
    ``sqrt(2) s``), its intercept moved by ``-G_tilde / max(H_tilde, floor)``: ``G, H``
    the sums of ``w_i (p_i - y_i)`` and ``w_i p_i (1 - p_i)`` over the units (a person's
    pair clipped to ``W``) at the uncorrected release, each plus ``sqrt(2) s W`` times
    the next two normals of the count's stream."""
    X, y = _logistic_data(300, 0)
    s, seed = 7.0, 4
    kw = dict(epsilon=np.inf, noise_multiplier=2.0, data_norm=1.0, random_state=seed,
              **params)
    extra = fit_params(len(y))
    corrected = DPSGDClassifier(count_noise_std=s, **kw).fit(X, y, **extra)
    plain = DPSGDClassifier(count_noise_std=math.sqrt(2.0) * s, intercept_correction=False,
                            **kw).fit(X, y, **extra)
    assert_allclose(corrected.coef_, plain.coef_, rtol=0, atol=0)
    count_rng = _call_streams(seed, 0)[0]
    n_units = len(np.unique(extra.get("groups", np.arange(len(y)))))
    n_tilde = n_units + math.sqrt(2.0) * s * count_rng.standard_normal()
    normals = count_rng.standard_normal(2)
    W = plain.weight_bound_
    p = expit(X @ plain.coef_[0] + plain.intercept_[0])
    w = np.clip(extra.get("sample_weight", np.ones(len(y))), 0.0, W)
    pairs = np.column_stack([w * (p - y), w * p * (1.0 - p)])
    if "groups" in extra:
        groups = extra["groups"]
        pairs = np.array([pairs[groups == g].sum(axis=0) for g in np.unique(groups)])
    with np.errstate(divide="ignore"):   # a weight of 0: a pair of norm 0, factor 1
        pairs *= np.minimum(1.0, W / np.linalg.norm(pairs, axis=1))[:, None]
    G, H = pairs.sum(axis=0) + math.sqrt(2.0) * s * W * normals
    floor = CURVATURE_FLOOR * max(0.1 * n_tilde, 1.0) / 0.1
    step = np.clip(-G / max(H, floor), -MAX_STEP, MAX_STEP)
    assert 0.01 < abs(step) < MAX_STEP
    assert_allclose(corrected.intercept_, plain.intercept_ + step, rtol=1e-12)


def test_the_correction_is_accounted_inside_the_count():
    """The count and the correction (each Gaussian of std ``sqrt(2) s``) are exactly the
    one Gaussian of std ``s`` the accountant composes with the steps: the same noise
    multiplier and spend as without the correction, and in Renyi DP the two halves add
    up to the whole at every order (dp-accounting's own computation)."""
    import dp_accounting

    X, y = _logistic_data(400, 1)
    kw = dict(epsilon=1.0, data_norm=1.0, random_state=0)
    corrected = DPSGDClassifier(**kw).fit(X, y)
    plain = DPSGDClassifier(intercept_correction=False, **kw).fit(X, y)
    for name in ("noise_multiplier_", "count_noise_std_", "epsilon_spent_", "dp_events_"):
        assert getattr(corrected, name) == getattr(plain, name)
    s = corrected.count_noise_std_
    half = dp_accounting.GaussianDpEvent(math.sqrt(2.0) * s)
    halves = dp_accounting.rdp.RdpAccountant().compose(
        dp_accounting.ComposedDpEvent([half, half]))
    whole = dp_accounting.rdp.RdpAccountant().compose(dp_accounting.GaussianDpEvent(s))
    assert halves.get_epsilon(1e-5) == pytest.approx(whole.get_epsilon(1e-5), rel=1e-12)


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
    """Ten rows: the noise on ``G`` and ``H`` (std ``5 sqrt(2)``) swamps the sums, and
    the intercept moves at most ``MAX_STEP`` from the steps'."""
    X, y = _logistic_data(10, 3)
    y[:2] = [0, 1]
    moves = []
    for seed in range(20):
        kw = dict(epsilon=np.inf, noise_multiplier=3.0, data_norm=1.0, random_state=seed)
        corrected = DPSGDClassifier(count_noise_std=5.0, **kw).fit(X, y)
        plain = DPSGDClassifier(count_noise_std=5.0 * math.sqrt(2.0),
                                intercept_correction=False, **kw).fit(X, y)
        moves.append(abs(corrected.intercept_[0] - plain.intercept_[0]))
    assert max(moves) <= MAX_STEP * (1 + 1e-12)
    assert max(moves) == pytest.approx(MAX_STEP)   # the trust region binds
