"""The private metrics: scikit-learn's value at epsilon=inf, the sensitivity of every
release by exact replay on neighbouring inputs (rows and persons) with the privacy loss
of the released law checked on a grid, reproducibility, refusals before any noise, and
the stated noise against the spread and the coverage of its interval."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.special import ndtr
from scipy.stats import binom
from sklearn.calibration import calibration_curve
from sklearn.metrics import (accuracy_score, balanced_accuracy_score, brier_score_loss,
                             log_loss, mean_squared_error, r2_score, roc_auc_score)

import skdp.stats._release as release_module
from skdp.metrics import (private_accuracy_score, private_balanced_accuracy_score,
                          private_brier_score_loss, private_calibration_curve,
                          private_log_loss, private_mean_squared_error, private_r2_score,
                          private_roc_auc_score)

B = 2.0   # the public y_bound of the regression cases


def _case(name, rng, n, worst):
    """Inputs of a metric whose last ``worst`` rows move the release the most."""
    y = rng.integers(0, 2, n)
    if name in ("accuracy", "balanced"):
        y, pred = rng.integers(0, 3, n), rng.integers(0, 3, n)
        y[-worst:], pred[-worst:] = 0, 1                      # wrong: a = 0
        fn = private_accuracy_score if name == "accuracy" else private_balanced_accuracy_score
        return fn, (y, pred), {}
    p = rng.uniform(0.05, 0.95, n)
    y[-worst:], p[-worst:] = 1, 0.0                            # loss at its bound
    if name == "brier":
        return private_brier_score_loss, (y, p), {}
    if name == "log_loss":
        return private_log_loss, (y, p), {"max_loss": 5.0}
    if name == "auc":
        return private_roc_auc_score, (y, p), {"bins": 8}
    if name == "calibration":
        p[-worst:] = 1.0                                       # y = 1, p = 1: both at a bound
        return private_calibration_curve, (y, p), {}
    t, pred = rng.uniform(-B, B, n), rng.uniform(-B, B, n)
    t[-worst:], pred[-worst:] = B, -B                           # squared error 4 B^2
    fn = private_mean_squared_error if name == "mse" else private_r2_score
    return fn, (t, pred), {"y_bound": B}


NAMES = ["accuracy", "balanced", "brier", "log_loss", "auc", "calibration", "mse", "r2"]
# each metric's number m of values per row: the release divides the weight by U and each
# centred sum by U h_j, so a worst row (every value at a bound) moves 1 + m coordinates by
# exactly 1 each: L1 norm 1 + m, squared L2 norm 1 + m
VALUES = {"accuracy": 1, "balanced": 1, "brier": 1, "log_loss": 1, "auc": 0,
          "calibration": 2, "mse": 1, "r2": 3}
WORST_L1 = {name: 1.0 + m for name, m in VALUES.items()}
WORST_L2_SQUARED = WORST_L1


def _neighbours(name, persons, delta=0.0, epsilon=0.7):
    """Release on D and on D without its last row (or its last person), one seed."""
    worst = 3 if persons else 1
    fn, arrays, kwargs = _case(name, np.random.default_rng(1), 40, worst)
    groups = np.r_[np.arange(40 - worst) // 2, np.full(worst, 99)] if persons else None
    keep = slice(0, 40 - worst)
    for subset, g in ((slice(None), groups), (keep, None if groups is None else groups[keep])):
        fn(*(a[subset] for a in arrays), epsilon=epsilon, delta=delta, groups=g,
           random_state=3, **kwargs)


@pytest.mark.parametrize("persons", [False, True], ids=["rows", "persons"])
@pytest.mark.parametrize("name", NAMES)
def test_replay_on_neighbours_bounds_the_laplace_privacy_loss(name, persons, releases):
    epsilon = 0.7
    _neighbours(name, persons, epsilon=epsilon)
    (s, law, noisy), (s_minus, law_minus, noisy_minus) = releases
    assert law == law_minus and law.law == "laplace"
    # same seed, same noise: the released difference is the exact difference of the sums
    assert_allclose(noisy - noisy_minus, s - s_minus, atol=1e-9)
    # log density ratio of the released vector on a grid of outputs around both
    moved = np.flatnonzero(s != s_minus)
    grid = np.linspace(-3, 3, 13)
    points = np.stack(np.meshgrid(*[s[j] + grid for j in moved]), -1).reshape(-1, moved.size)
    loss = (np.abs(points - s_minus[moved]) - np.abs(points - s[moved])).sum(1) / law.scale
    assert loss.max() <= epsilon * (1 + 1e-9)
    # the worst neighbour attains the stated sensitivity: the calibration is not loose
    assert_allclose(np.abs(s - s_minus).sum(), WORST_L1[name], rtol=1e-9)
    assert_allclose(loss.max(), epsilon, rtol=1e-6)


def _gaussian_delta(epsilon, mu):
    """Exact delta(epsilon) of a Gaussian shift mu (Balle & Wang 2018, Theorem 8)."""
    return ndtr(mu / 2 - epsilon / mu) - np.exp(epsilon) * ndtr(-mu / 2 - epsilon / mu)


@pytest.mark.parametrize("persons", [False, True], ids=["rows", "persons"])
@pytest.mark.parametrize("name", NAMES)
def test_replay_on_neighbours_bounds_the_gaussian_privacy_profile(name, persons, releases):
    epsilon, delta = 0.7, 1e-5
    _neighbours(name, persons, delta=delta, epsilon=epsilon)
    (s, law, noisy), (s_minus, _, noisy_minus) = releases
    assert law.law == "gaussian"
    assert_allclose(noisy - noisy_minus, s - s_minus, atol=1e-9)
    shift = np.linalg.norm(s - s_minus)
    assert_allclose(shift ** 2, WORST_L2_SQUARED[name], rtol=1e-9)
    assert _gaussian_delta(epsilon, shift / law.scale) <= delta * (1 + 1e-6)


def _sklearn_cases(rng, n=400):
    y, pred = rng.integers(0, 3, n), rng.integers(0, 3, n)
    yb, p = rng.integers(0, 2, n), rng.uniform(0.05, 0.95, n)
    grid = (rng.integers(0, 32, n) + 0.5) / 32                     # one score per AUC bin
    P = rng.dirichlet(np.ones(3), n)
    t, t_hat = rng.uniform(-B, B, n), rng.uniform(-B, B, n)
    return [
        (private_accuracy_score, accuracy_score, (y, pred), {}),
        (private_balanced_accuracy_score, balanced_accuracy_score, (y, pred), {}),
        (private_brier_score_loss, brier_score_loss, (yb, p), {}),
        (private_log_loss, log_loss, (yb, p), {}),
        (private_log_loss, log_loss, (y, P), {}),
        (private_roc_auc_score, roc_auc_score, (yb, grid), {}),
        (private_mean_squared_error, mean_squared_error, (t, t_hat), {"y_bound": B}),
        (private_r2_score, r2_score, (t, t_hat), {"y_bound": B}),
    ]


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
def test_infinite_epsilon_equals_sklearn(weighted):
    rng = np.random.default_rng(0)
    w = rng.uniform(0.0, 1.0, 400) if weighted else None
    for ours, theirs, arrays, kwargs in _sklearn_cases(rng):
        got = float(ours(*arrays, epsilon=np.inf, sample_weight=w, **kwargs))
        assert_allclose(got, theirs(*arrays, sample_weight=w), rtol=1e-10, err_msg=ours.__name__)


def test_infinite_epsilon_calibration_curve_equals_sklearn():
    rng = np.random.default_rng(0)
    y, p = rng.integers(0, 2, 500), rng.uniform(0, 1, 500)
    p[:3] = [0.0, 0.2, 1.0]                                        # on the edges
    prob_true, prob_pred = private_calibration_curve(y, p, bins=5, epsilon=np.inf)
    expected_true, expected_pred = calibration_curve(y, p, n_bins=5)
    assert_allclose(prob_true.values, expected_true, rtol=1e-12)
    assert_allclose(prob_pred.values, expected_pred, rtol=1e-12)


@pytest.mark.parametrize("name", NAMES)
def test_same_seed_same_release_other_seed_other(name):
    fn, arrays, kwargs = _case(name, np.random.default_rng(0), 60, 1)
    first, again, other = (np.ravel(np.asarray(
        fn(*arrays, epsilon=1.0, random_state=seed, **kwargs), dtype=float))
        for seed in (5, 5, 6))
    assert_allclose(first, again, rtol=0, atol=0)
    assert not np.allclose(first, other)


N_ROWS = 137


@pytest.fixture
def no_noise(monkeypatch):
    def refuse(random_state):
        raise AssertionError("noise was drawn before the input was refused")

    monkeypatch.setattr(release_module, "noise_generator", refuse)


def _bad_inputs():
    rng = np.random.default_rng(0)
    y, p = rng.integers(0, 2, N_ROWS), rng.uniform(0, 1, N_ROWS)
    nan_p, big_p = p.copy(), p.copy()
    nan_p[3], big_p[3] = np.nan, 1.5
    return [
        (private_accuracy_score, (y, y[:-1]), {}, "different numbers of rows"),
        (private_accuracy_score, (y.astype(object), np.r_[[None], y[1:]]), {}, "missing"),
        (private_brier_score_loss, (y, big_p), {}, "outside"),
        (private_brier_score_loss, (y, nan_p), {}, "NaN"),
        (private_brier_score_loss, (np.zeros(N_ROWS), p), {}, "two classes"),
        (private_roc_auc_score, (np.ones(N_ROWS), p), {}, "two classes"),
        (private_roc_auc_score, (y, p), {"bins": [0.0, 0.5, 0.5, 1.0]}, "increasing"),
        (private_calibration_curve, (y, big_p), {}, "outside"),
        (private_calibration_curve, (y, p), {"bins": [0.0, 0.5, 0.9]}, "from 0 to 1"),
        (private_log_loss, (y, np.full((N_ROWS, 2), 0.6)), {}, "sum to 1"),
        (private_log_loss, (y, p), {"labels": [0, 1, 2]}, "two labels"),
        (private_accuracy_score, (y, y), {"epsilon": 0.0}, "epsilon"),
        (private_accuracy_score, (y, y), {"delta": 1.0}, "delta"),
        (private_accuracy_score, (y, y), {"groups": np.arange(N_ROWS - 1)}, "person label"),
        (private_accuracy_score, (y, y), {"sample_weight": -np.ones(N_ROWS)}, "negative"),
        (private_mean_squared_error, (p, nan_p), {"y_bound": 1.0}, "NaN"),
        (private_r2_score, (p, p), {"y_bound": 0.0}, "y_bound"),
    ]


@pytest.mark.parametrize("fn, arrays, kwargs, match", _bad_inputs())
def test_bad_input_refused_before_any_noise_without_a_count(fn, arrays, kwargs, match,
                                                           no_noise):
    kwargs = {"epsilon": 1.0, **kwargs}
    with pytest.raises(ValueError, match=match) as error:
        fn(*arrays, **kwargs)
    message = str(error.value)
    assert str(N_ROWS) not in message and str(N_ROWS - 1) not in message


def test_a_release_holds_no_count():
    y = np.random.default_rng(0).integers(0, 2, N_ROWS)
    for epsilon in (np.inf, 1.0):
        estimate = private_accuracy_score(y, y, epsilon=epsilon, random_state=0)
        text = repr(estimate) + str(estimate)
        assert str(N_ROWS) not in text
        assert N_ROWS not in (estimate.value, estimate.noise_std)


def _spread(fn, arrays, kwargs, draws=300):
    values = [float(fn(*arrays, random_state=seed, **kwargs)) for seed in range(draws)]
    return np.array(values)


def _second_bin(fn):
    """The calibration curve's share of positives in its second bin, as one estimate."""
    return lambda *arrays, **kwargs: fn(*arrays, **kwargs)[0][1]


@pytest.mark.parametrize("fn, kwargs", [
    (private_accuracy_score, {}),
    (private_mean_squared_error, {"y_bound": 10.0, "epsilon": 1.0}),  # h = 200, MSE 2
    (_second_bin(private_calibration_curve), {}),          # two values per bin
], ids=["accuracy", "mse_wide", "calibration_bin"])
def test_stated_noise_std_matches_the_spread(fn, kwargs):
    """Sample variance over 300 draws against the stated one: with Laplace noise (kurtosis
    6) the ratio's standard deviation is at most sqrt(5 / 300) = 0.13; 4 of them allowed."""
    rng = np.random.default_rng(0)
    y, pred = rng.integers(0, 2, 3000), rng.integers(0, 2, 3000)
    if "y_bound" in kwargs:
        y, pred = rng.normal(0, 1, 3000), rng.normal(0, 1, 3000)
    elif fn is not private_accuracy_score:
        pred = np.clip(rng.uniform(0, 1, 3000) + 0.2 * (y - 0.5), 0, 1)
    kwargs = {"epsilon": 0.05 if fn is private_accuracy_score else 0.5, **kwargs}
    # the noise is small next to the value: no clipping at the range's ends
    values = _spread(fn, (y, pred), kwargs)
    stated = fn(y, pred, random_state=0, **kwargs).noise_std
    assert abs(values.var() / stated ** 2 - 1) < 4 * np.sqrt(5 / 300)


@pytest.mark.parametrize("fn, kwargs", [(private_accuracy_score, {}),
                                        (private_roc_auc_score, {"bins": 8})])
def test_conf_int_covers_the_noise_free_value(fn, kwargs):
    """Coverage over 200 seeds of a 90 % interval: the number of hits is Binomial(200,
    0.9) when the stated law is right; refused below its 0.1 % quantile or above the
    99.9 % one (an interval too wide is wrong too)."""
    rng = np.random.default_rng(0)
    y, p = rng.integers(0, 2, 2000), rng.uniform(0, 1, 2000)
    p = np.clip(p + 0.3 * (y - 0.5), 0, 1)
    data = (y, (p > 0.5).astype(int)) if fn is private_accuracy_score else (y, p)
    truth = float(fn(*data, epsilon=np.inf, **kwargs))
    hits = 0
    for seed in range(200):
        lower, upper = fn(*data, epsilon=0.05, random_state=seed, **kwargs).conf_int(0.1)
        hits += lower <= truth <= upper
    assert binom.ppf(0.001, 200, 0.9) <= hits <= binom.ppf(0.999, 200, 0.9)
