"""DPSGDClassifier: sampler, clipping, normalisation, accounting, reproducibility, bad input."""

import copy
import math

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal
from scipy import stats
from scipy.special import expit, softmax
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import Normalizer

from skdp import DPSGDClassifier
from skdp.accounting import (calibrate_noise_multiplier, default_count_noise_std, dpsgd_epsilon,
                             noise_multiplier_derivative)
from skdp.exceptions import PrivacyBudgetError
from skdp.linear_model._dpsgd import (
    _dp_sgd,
    _MarginColumns,
    _SoftmaxCrossEntropy,
    clipped_gradient_sum,
)
from skdp.losses import LogisticLoss
from skdp.mechanisms._poisson_sampling import poisson_sample as _poisson_sample

from ..solvers._memory import peak_allocation


def _unit_ball_data(n=300, d=5, n_classes=2, seed=0):
    X, y = make_classification(n_samples=n, n_features=d, n_informative=3,
                               n_classes=n_classes, n_clusters_per_class=1, random_state=seed)
    X /= np.linalg.norm(X, axis=1).max()
    return X, y


def _run(X, Y, loss, **kw):
    """The worker with the normaliser a full-data count would give (``q n``)."""
    if kw.get("normaliser") is None:
        kw["normaliser"] = kw["sample_rate"] * X.shape[0]
    return _dp_sgd(X, Y, loss, **kw)


def _worker_kwargs(**overrides):
    kw = dict(noise_multiplier=1.0, max_grad_norm=1.0, sample_rate=1.0, n_steps=5,
              normaliser=None, learning_rate=0.5, schedule="constant", alpha=0.0, average=0.0)
    kw.update(overrides)
    return kw


# -- Poisson sampler --------------------------------------------------------------------

def test_poisson_batch_sizes_are_binomial():
    n, q, draws = 400, 0.1, 4000
    rng = np.random.default_rng(0)
    sizes = np.array([len(_poisson_sample(n, q, rng)) for _ in range(draws)])
    # chi-square goodness of fit on bins with expected count >= 20
    support = np.arange(n + 1)
    expected = draws * stats.binom.pmf(support, n, q)
    edges = [0]
    acc = 0.0
    for k in support:
        acc += expected[k]
        if acc >= 20 and draws * stats.binom.sf(k, n, q) >= 20:
            edges.append(k + 1)
            acc = 0.0
    edges.append(n + 1)
    observed = np.add.reduceat(np.bincount(sizes, minlength=n + 1), edges[:-1])
    expect = np.add.reduceat(expected, edges[:-1])
    assert stats.chisquare(observed, expect * observed.sum() / expect.sum()).pvalue > 1e-3


def test_poisson_sample_includes_each_row_independently_with_probability_q():
    n, q, draws = 200, 0.3, 3000
    rng = np.random.default_rng(1)
    masks = np.zeros((draws, n), dtype=bool)
    for r in range(draws):
        idx = _poisson_sample(n, q, rng)
        assert np.all(np.diff(idx) > 0)                    # sorted, no repeats
        masks[r, idx] = True
    counts = masks.sum(axis=0)
    chi2 = np.sum((counts - draws * q) ** 2 / (draws * q * (1 - q)))
    assert stats.chi2.sf(chi2, n) > 1e-3
    # pairs of rows: joint inclusion probability q^2 (independence)
    joint = (masks[:, 0::2] & masks[:, 1::2]).mean()
    se = math.sqrt(q**2 * (1 - q**2) / (draws * n / 2))
    assert abs(joint - q**2) < 5 * se


def test_poisson_sample_costs_the_sample_not_the_rows():
    """A step's sample allocates about two vectors of the sample's size (the gaps and
    their sums), not a permutation of all the rows (1.1 vectors of n, as before)."""
    n, q = 1_000_000, 0.1
    rng = np.random.default_rng(3)
    samples = []
    peak = peak_allocation(lambda: samples.append(_poisson_sample(n, q, rng)))
    (idx,) = samples
    assert peak < 0.4 * 8 * n, peak / (8 * n)
    assert abs(idx.size - n * q) < 5 * math.sqrt(n * q * (1 - q))
    assert idx[0] >= 0 and idx[-1] < n and np.all(np.diff(idx) > 0)


def test_fit_uses_poisson_batches(seed):
    X, y = _unit_ball_data(n=500, seed=seed)
    Y = np.where(y == 1, 1.0, -1.0)[:, None]
    run = _run(X, Y, _MarginColumns(LogisticLoss()),
                  sampling_rng=np.random.default_rng(seed), noise_rng=np.random.default_rng(9),
                  **_worker_kwargs(sample_rate=0.2, n_steps=400))
    sizes = run.batch_sizes
    assert abs(sizes.mean() - 100) < 5 * math.sqrt(500 * 0.2 * 0.8 / 400)
    variance = 500 * 0.2 * 0.8                      # Binomial(n, q) variance, not 0 (fixed size)
    assert abs(sizes.var(ddof=1) - variance) < 5 * variance * math.sqrt(2 / 399)


# -- clipping ---------------------------------------------------------------------------

@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "by blocks"])
@pytest.mark.parametrize("loss, K", [(_MarginColumns(LogisticLoss()), 1),
                                     (_MarginColumns(LogisticLoss()), 3),
                                     (_SoftmaxCrossEntropy(), 3)])
def test_clipping_bound_and_sum(loss, K, streamed, monkeypatch):
    import skdp.linear_model._dpsgd as module
    import skdp.solvers._design as design

    if streamed:  # the path of designs beyond the cache, in blocks of 16 rows
        monkeypatch.setattr(module, "_STREAMED_BYTES", 0)
        monkeypatch.setattr(design, "_CACHE_BYTES", 1)
    rng = np.random.default_rng(0)
    n, d, C = 200, 6, 0.7
    X = rng.normal(size=(n, d)) * rng.uniform(0.01, 2.0, size=(n, 1))
    theta = rng.normal(size=(K, d))
    if isinstance(loss, _SoftmaxCrossEntropy):
        Y = np.eye(K)[rng.integers(K, size=n)]
    else:
        Y = rng.choice([-1.0, 1.0], size=(n, K))
    total, factors = clipped_gradient_sum(X, Y, theta, loss, C, np.linalg.norm(X, axis=1))
    # per-example gradients built independently: outer products of residual and row
    S = X @ theta.T
    if isinstance(loss, _SoftmaxCrossEntropy):
        R = softmax(S, axis=1) - Y
    else:
        R = -Y * expit(-Y * S)
    G = np.einsum("ik,ij->ikj", R, X)
    norms = np.linalg.norm(G.reshape(n, -1), axis=1)
    clipped = G * factors[:, None, None]
    clipped_norms = np.linalg.norm(clipped.reshape(n, -1), axis=1)
    assert np.all(clipped_norms <= C * (1 + 1e-12))
    small = norms <= C
    assert small.any() and (~small).any()
    assert_array_equal(factors[small], 1.0)                 # unchanged inside the ball
    assert_allclose(clipped_norms[~small], C, rtol=1e-12)   # projected onto it outside
    assert_allclose(total, clipped.sum(axis=0), rtol=1e-12, atol=1e-12)


# -- the update rule --------------------------------------------------------------------

def test_division_by_expected_not_realised_batch_size():
    # identical rows: every per-example gradient at theta = 0 is the same vector g
    n, q, eta = 100, 0.5, 0.3
    X = np.tile([[0.6, 0.0, 0.8]], (n, 1))
    Y = np.ones((n, 1))
    sampling = np.random.default_rng(4)
    replay = copy.deepcopy(sampling)
    run = _run(X, Y, _MarginColumns(LogisticLoss()), sampling_rng=sampling,
                  noise_rng=np.random.default_rng(0),
                  **_worker_kwargs(noise_multiplier=0.0, sample_rate=q, n_steps=1,
                                   learning_rate=eta))
    realised = len(_poisson_sample(n, q, replay))
    assert realised != q * n                       # the two normalisations differ here
    g = -0.5 * X[0]                                # logistic gradient at margin 0, y = +1
    assert_allclose(run.theta[0], -eta * realised * g / (q * n), rtol=1e-12)
    assert not np.allclose(run.theta[0], -eta * g, rtol=1e-3)


def test_empty_batch_update_is_noise_over_expected_batch_size():
    n, q, eta, z, C, lam = 50, 1e-4, 0.7, 2.0, 0.5, 0.1
    X, y = _unit_ball_data(n=n)
    Y = np.where(y == 1, 1.0, -1.0)[:, None]
    sampling, noise = np.random.default_rng(0), np.random.default_rng(1)
    replay_s, replay_n = copy.deepcopy(sampling), copy.deepcopy(noise)
    run = _run(X, Y, _MarginColumns(LogisticLoss()), sampling_rng=sampling, noise_rng=noise,
                  **_worker_kwargs(noise_multiplier=z, max_grad_norm=C, sample_rate=q,
                                   n_steps=2, learning_rate=eta, alpha=lam))
    assert len(_poisson_sample(n, q, replay_s)) == 0
    assert len(_poisson_sample(n, q, replay_s)) == 0
    xi1, xi2 = replay_n.standard_normal((1, X.shape[1])), replay_n.standard_normal((1, X.shape[1]))
    theta1 = -eta * (z * C * xi1 / (q * n))
    theta2 = theta1 - eta * (z * C * xi2 / (q * n) + lam * theta1)
    assert_array_equal(run.batch_sizes, [0, 0])
    assert_allclose(run.theta, theta2, rtol=1e-12)


@pytest.mark.parametrize("multiclass", [False, True])
def test_noiseless_full_batch_is_gradient_descent_on_clipped_loss(multiclass):
    n_classes = 3 if multiclass else 2
    X, y = _unit_ball_data(n=120, n_classes=n_classes)
    X = X * 3.0                                     # long rows: clipping is active
    C, eta, lam, T = 0.4, 0.8, 0.05, 15
    if multiclass:
        Y = np.eye(3)[y]
        loss = _SoftmaxCrossEntropy()
    else:
        Y = np.where(y == 1, 1.0, -1.0)[:, None]
        loss = _MarginColumns(LogisticLoss())
    run = _run(X, Y, loss, sampling_rng=np.random.default_rng(0),
                  noise_rng=np.random.default_rng(0),
                  **_worker_kwargs(noise_multiplier=0.0, max_grad_norm=C, n_steps=T,
                                   learning_rate=eta, alpha=lam))
    theta = np.zeros((Y.shape[1], X.shape[1]))
    clipped_any = False
    for _ in range(T):                              # reference: explicit per-example loop
        grads = []
        for i in range(len(X)):
            s = theta @ X[i]
            r = softmax(s) - Y[i] if multiclass else -Y[i] * expit(-Y[i] * s)
            g = np.outer(r, X[i])
            norm = np.linalg.norm(g)
            clipped_any |= norm > C
            grads.append(g * min(1.0, C / norm))
        theta = theta - eta * (np.sum(grads, axis=0) / len(X) + lam * theta)
    assert clipped_any
    assert_allclose(run.theta, theta, rtol=1e-10, atol=1e-12)


def test_momentum_and_tail_averaging_are_post_processing():
    X, y = _unit_ball_data(n=100)
    Y = np.where(y == 1, 1.0, -1.0)[:, None]
    kw = _worker_kwargs(noise_multiplier=0.0, n_steps=6, learning_rate=0.5, alpha=0.1,
                        momentum=0.5, average=0.5)
    rng = np.random.default_rng
    run = _run(X, Y, _MarginColumns(LogisticLoss()), sampling_rng=rng(0),
                  noise_rng=rng(0), **kw)
    thetas, theta, velocity = [], np.zeros((1, X.shape[1])), 0.0
    for _ in range(6):
        total, _ = clipped_gradient_sum(X, Y, theta, _MarginColumns(LogisticLoss()), 1.0,
                                        np.linalg.norm(X, axis=1))
        velocity = 0.5 * velocity + total / len(X) + 0.1 * theta
        theta = theta - 0.5 * velocity
        thetas.append(theta)
    assert_allclose(run.theta, np.mean(thetas[3:], axis=0), rtol=1e-12)


# -- the estimator ----------------------------------------------------------------------

@pytest.mark.parametrize("sample_rate", [1.0, 0.2])
def test_same_seed_same_model_other_seed_other_model(sample_rate):
    X, y = _unit_ball_data(n=300)
    kw = dict(epsilon=1.0, sample_rate=sample_rate, epochs=3, accountant="rdp")
    a = DPSGDClassifier(random_state=3, **kw).fit(X, y)
    b = DPSGDClassifier(random_state=3, **kw).fit(X, y)
    c = DPSGDClassifier(random_state=4, **kw).fit(X, y)
    assert_array_equal(a.coef_, b.coef_)
    assert_array_equal(a.intercept_, b.intercept_)
    assert not np.allclose(a.coef_, c.coef_)


def test_rerun_replays_the_same_draws_and_is_smooth_in_the_noise_multiplier():
    X, y = _unit_ball_data(n=300)
    est = DPSGDClassifier(epsilon=2.0, sample_rate=0.2, epochs=4, accountant="rdp",
                          max_grad_norm=5.0, random_state=0)
    (solution,) = est._releases(X, y)
    z = solution.noise_multiplier
    assert_array_equal(solution.rerun(z), solution.theta)
    assert not np.allclose(solution.rerun(1.1 * z), solution.theta)
    # common random numbers: central differences converge as h -> 0
    diffs = [(solution.rerun(z + h) - solution.rerun(z - h)) / (2 * h) for h in (1e-2, 1e-3)]
    assert np.linalg.norm(diffs[0]) > 0
    assert_allclose(diffs[1], diffs[0], rtol=1e-3, atol=1e-6 * np.abs(diffs[0]).max())


@pytest.mark.parametrize("params", [
    dict(loss="logistic"),
    dict(loss="logistic", max_grad_norm=0.3, momentum=0.9, average=0.5),  # clipping active
    dict(loss="huber", max_grad_norm=0.3, alpha=0.01, learning_rate_schedule="linear"),
    dict(loss="hinge"),
    dict(loss="logistic", sample_rate=1.0, max_grad_norm=0.3),            # DP-GD
    dict(loss="logistic", multiclass=True, max_grad_norm=0.5, momentum=0.5),  # softmax
])
def test_forward_mode_tangent_is_the_common_noise_derivative(params):
    params = dict(params)
    X, y = _unit_ball_data(n=300)
    if params.pop("multiclass", False):
        y = np.digitize(X[:, 0], [-0.2, 0.2])
    est = DPSGDClassifier(**{**dict(epsilon=2.0, sample_rate=0.2, epochs=4, accountant="rdp",
                                    random_state=0), **params})
    (solution,) = est._releases(X, y, with_derivative=True)
    assert_array_equal(solution.theta, est._releases(X, y)[0].theta)  # the fit is unchanged
    assert_tangent_is_the_central_difference(solution)


def assert_tangent_is_the_central_difference(solution):
    """The forward-mode ``d theta / dz`` equals the central difference of reruns with the
    same draws, to 1e-6 relative."""
    z = solution.noise_multiplier
    h = 1e-5 * z
    central = (solution.rerun(z + h) - solution.rerun(z - h)) / (2 * h)
    assert np.linalg.norm(central) > 0
    error = np.linalg.norm(solution.theta_tangent - central) / np.linalg.norm(central)
    assert error < 1e-6


def test_solution_is_not_kept_on_the_fitted_estimator():
    X, y = _unit_ball_data()
    est = DPSGDClassifier(random_state=0).fit(X, y)
    arrays = {k for k, v in vars(est).items() if isinstance(v, np.ndarray)}
    assert arrays == {"coef_", "intercept_", "classes_"}
    assert not any(isinstance(v, np.random.Generator) for v in vars(est).values())


@pytest.mark.parametrize("q, accountant", [(1.0, "pld"), (1.0, "rdp"), (0.15, "rdp")])
def test_fitted_privacy_attributes(q, accountant):
    X, y = _unit_ball_data(n=300)
    est = DPSGDClassifier(epsilon=0.5, sample_rate=q, epochs=7, accountant=accountant,
                          random_state=0).fit(X, y)
    T = math.ceil(7 / q)
    s = default_count_noise_std(0.5, 1e-5)
    assert est.sample_rate_ == q and est.n_steps_ == T == est.n_iter_
    assert est.count_noise_std_ == s
    assert est.noise_multiplier_ == calibrate_noise_multiplier(
        0.5, 1e-5, q, T, accountant=accountant, count_noise_std=s)
    assert est.epsilon_spent_ <= 0.5
    assert est.epsilon_spent_ >= 0.99 * 0.5
    assert est.epsilon_spent_ == pytest.approx(
        dpsgd_epsilon(est.noise_multiplier_, q, T, 1e-5, accountant=accountant,
                      count_noise_std=s), rel=1e-9)
    assert est.delta_spent_ == 1e-5
    assert est.neighboring_ == "add_remove"


def test_given_noise_multiplier_is_accounted_and_capped():
    X, y = _unit_ball_data(n=300)
    est = DPSGDClassifier(epsilon=np.inf, noise_multiplier=3.0, sample_rate=1.0, epochs=5,
                          random_state=0).fit(X, y)
    assert est.noise_multiplier_ == 3.0
    # epsilon = inf: the count is exact (s = 0), so the spend is unbounded
    assert est.epsilon_spent_ == np.inf
    capped = DPSGDClassifier(epsilon=5.0, noise_multiplier=3.0, sample_rate=1.0, epochs=5,
                             count_noise_std=40.0, random_state=0).fit(X, y)
    assert capped.epsilon_spent_ == pytest.approx(
        dpsgd_epsilon(3.0, 1.0, 5, 1e-5, count_noise_std=40.0), rel=1e-12)
    rng = np.random.default_rng(0)
    before = rng.bit_generator.state
    with pytest.raises(PrivacyBudgetError, match="certifies epsilon"):
        DPSGDClassifier(epsilon=1.0, noise_multiplier=3.0, sample_rate=1.0, epochs=5,
                        random_state=rng).fit(X, y)
    assert rng.bit_generator.state == before


def test_release_carries_the_accountants_noise_multiplier_derivative():
    X, y = _unit_ball_data(n=300)
    est = DPSGDClassifier(epsilon=1.0, sample_rate=1.0, epochs=10, random_state=0)
    (solution,) = est._releases(X, y, with_derivative=True)
    count_noise = default_count_noise_std(1.0, 1e-5)
    spent = solution.epsilon
    assert solution.dz_depsilon == pytest.approx(
        noise_multiplier_derivative(spent, 1e-5, 1.0, 10, count_noise_std=count_noise),
        rel=1e-12)
    h = 1e-4
    z = [calibrate_noise_multiplier(spent + s * h, 1e-5, 1.0, 10, count_noise_std=count_noise)
         for s in (1, -1)]
    assert solution.dz_depsilon == pytest.approx((z[0] - z[1]) / (2 * h), rel=1e-6)
    assert_array_equal(solution.theta_derivative(),
                       solution.theta_tangent * solution.dz_depsilon)


def test_infinite_epsilon_recovers_sklearn_binary(seed):
    X, y = _unit_ball_data(n=200, seed=seed)
    alpha = 0.05
    # the steps alone (the intercept correction is a Newton step on the unpenalised
    # intercept equation) on the design of a unit intercept column
    ours = DPSGDClassifier(epsilon=np.inf, alpha=alpha, sample_rate=1.0, epochs=400,
                           learning_rate=2.0, max_grad_norm=10.0, average=0.0,
                           intercept_scaling=1.0, intercept_correction=False,
                           random_state=seed).fit(X, y)
    assert ours.noise_multiplier_ == 0.0 and ours.epsilon_spent_ == np.inf
    design = np.hstack([X, np.ones((len(X), 1))])
    ref = LogisticRegression(C=1.0 / (alpha * len(X)), fit_intercept=False, tol=1e-12,
                             max_iter=10_000).fit(design, y)
    assert_allclose(ours.coef_, ref.coef_[:, :-1], atol=1e-6)
    assert_allclose(ours.intercept_, ref.coef_[:, -1], atol=1e-6)


def test_infinite_epsilon_recovers_sklearn_multinomial():
    X, y = _unit_ball_data(n=300, n_classes=3)
    alpha = 0.05
    ours = DPSGDClassifier(epsilon=np.inf, alpha=alpha, sample_rate=1.0, epochs=400,
                           learning_rate=2.0, max_grad_norm=10.0, average=0.0,
                           intercept_scaling=1.0, random_state=0).fit(X, y)
    design = np.hstack([X, np.ones((len(X), 1))])
    ref = LogisticRegression(C=1.0 / (alpha * len(X)), fit_intercept=False, tol=1e-12,
                             max_iter=10_000).fit(design, y)
    assert ours.coef_.shape == (3, 5)
    assert_allclose(ours.coef_, ref.coef_[:, :-1], atol=1e-6)
    assert_allclose(ours.predict_proba(X), ref.predict_proba(design), atol=1e-6)


@pytest.mark.parametrize("loss", ["logistic", "huber", "hinge"])
def test_multiclass_and_losses(loss):
    X, y = _unit_ball_data(n=300, n_classes=3)
    labels = np.array(["a", "b", "c"])[y]
    est = DPSGDClassifier(epsilon=5.0, loss=loss, epochs=30, random_state=0).fit(X, labels)
    assert est.coef_.shape == (3, 5) and est.intercept_.shape == (3,)
    assert set(est.predict(X)) <= set(labels)
    assert est.score(X, labels) > 0.6
    assert hasattr(est, "predict_proba") == (loss == "logistic")
    if loss == "logistic":
        assert_allclose(est.predict_proba(X).sum(axis=1), 1.0)
        assert_allclose(np.exp(est.predict_log_proba(X)), est.predict_proba(X), rtol=1e-10)


def test_sparse_input_equals_dense():
    X = sp.random(120, 8, density=0.3, random_state=0, format="csr")
    y = np.arange(120) % 2
    for q in (1.0, 1 / 3):
        kw = dict(sample_rate=q, epochs=3, accountant="rdp", random_state=1)
        dense = DPSGDClassifier(**kw).fit(X.toarray(), y)
        sparse = DPSGDClassifier(**kw).fit(X, y)
        assert_allclose(sparse.coef_, dense.coef_, atol=1e-12)
        assert_allclose(sparse.intercept_, dense.intercept_, atol=1e-12)


def test_verbose_prints_one_line_per_epoch(capsys):
    X, y = _unit_ball_data(n=200)
    DPSGDClassifier(sample_rate=0.25, epochs=3, accountant="rdp", verbose=1,
                    random_state=0).fit(X, y)
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("[DPSGD")]
    assert len(lines) == 3
    assert "epoch 3" in lines[-1] and "step 12/12" in lines[-1]


def test_sklearn_tools():
    X, y = _unit_ball_data(n=200)
    pipe = make_pipeline(Normalizer(), DPSGDClassifier(epsilon=np.inf, random_state=0))
    assert cross_val_score(pipe, X, y, cv=3).mean() > 0.7
    est = clone(DPSGDClassifier(epsilon=2.0, sample_rate=0.2))
    assert est.get_params()["sample_rate"] == 0.2


# -- bad input, before any noise --------------------------------------------------------

X_OK = np.random.default_rng(0).normal(size=(30, 3)) / 3
Y_OK = np.arange(30) % 2

CASES = [
    ("nan in X", dict(), np.where(X_OK > 0.5, np.nan, X_OK), Y_OK, ValueError, "NaN"),
    ("single class", dict(), X_OK, np.zeros(30), ValueError, "only one class"),
    ("continuous target", dict(), X_OK, np.linspace(0, 1, 30), ValueError,
     "Unknown label type"),
    ("epsilon zero", dict(epsilon=0.0), X_OK, Y_OK, ValueError, "'epsilon'"),
    ("delta zero", dict(delta=0.0), X_OK, Y_OK, ValueError, "DP-SGD needs delta > 0"),
    ("delta one", dict(delta=1.0), X_OK, Y_OK, ValueError, "'delta'"),
    ("data_norm None", dict(data_norm=None), X_OK, Y_OK, ValueError, "data_norm=None"),
    ("sample_rate above one", dict(sample_rate=1.5), X_OK, Y_OK, ValueError, "'sample_rate'"),
    ("sample_rate zero", dict(sample_rate=0.0), X_OK, Y_OK, ValueError, "'sample_rate'"),
    ("count_noise_std zero", dict(count_noise_std=0.0), X_OK, Y_OK, ValueError,
     "'count_noise_std'"),
    ("label outside classes", dict(classes=[0, 2]), X_OK, Y_OK, ValueError, "outside"),
    ("max_grad_norm zero", dict(max_grad_norm=0.0), X_OK, Y_OK, ValueError,
     "'max_grad_norm'"),
    ("max_grad_norm negative", dict(max_grad_norm=-1.0), X_OK, Y_OK, ValueError,
     "'max_grad_norm'"),
    ("learning_rate zero", dict(learning_rate=0.0), X_OK, Y_OK, ValueError, "'learning_rate'"),
    ("learning_rate negative", dict(learning_rate=-0.1), X_OK, Y_OK, ValueError,
     "'learning_rate'"),
    ("epochs zero", dict(epochs=0), X_OK, Y_OK, ValueError, "'epochs'"),
    ("epochs negative", dict(epochs=-2), X_OK, Y_OK, ValueError, "'epochs'"),
    ("noise_multiplier negative", dict(noise_multiplier=-1.0), X_OK, Y_OK, ValueError,
     "'noise_multiplier'"),
    ("unknown accountant", dict(accountant="prv"), X_OK, Y_OK, ValueError, "'accountant'"),
    ("unknown loss", dict(loss="squared"), X_OK, Y_OK, ValueError, "'loss'"),
    ("momentum one", dict(momentum=1.0), X_OK, Y_OK, ValueError, "'momentum'"),
    ("epsilon too small", dict(epsilon=1e-4, epochs=50), X_OK, Y_OK, PrivacyBudgetError,
     "too small for this training length"),
]


@pytest.mark.parametrize("name, params, X, y, error, match", CASES, ids=[c[0] for c in CASES])
def test_bad_input_raises_before_noise(name, params, X, y, error, match):
    rng = np.random.default_rng(42)
    before = rng.bit_generator.state
    with pytest.raises(error, match=match):
        DPSGDClassifier(random_state=rng, **params).fit(X, y)
    assert rng.bit_generator.state == before, "noise was drawn before the error"


def test_the_rng_check_above_can_fail():
    # a successful fit draws its noise key from the Generator
    rng = np.random.default_rng(42)
    before = rng.bit_generator.state
    DPSGDClassifier(random_state=rng).fit(X_OK, Y_OK)
    assert rng.bit_generator.state != before


def test_epsilon_too_small_message_says_what_to_change():
    with pytest.raises(PrivacyBudgetError) as info:
        DPSGDClassifier(epsilon=1e-4, epochs=50).fit(X_OK, Y_OK)
    message = str(info.value)
    assert "Increase epsilon" in message and "fewer epochs" in message


# -- the documented defaults on Adult (slow) --------------------------------------------

# the mini-batch recipe for epsilon >= 1 of the README's table (PLD accounting)
RECIPE = dict(sample_rate=0.033, epochs=60, learning_rate=16.0, momentum=0.9, max_grad_norm=0.5,
              alpha=0.0, average=0.5, accountant="pld")


@pytest.mark.slow
@pytest.mark.parametrize("epsilon, params, target", [(0.1, {}, 0.815), (1.0, {}, 0.835),
                                                     (1.0, RECIPE, 0.840)],
                         ids=["defaults-eps0.1", "defaults-eps1", "recipe-eps1"])
def test_adult_targets(epsilon, params, target):
    from skdp.datasets import load_adult

    try:
        data = load_adult()
    except Exception as exc:  # pragma: no cover - data not available offline
        pytest.skip(f"Adult not available: {exc}")
    scores = [DPSGDClassifier(epsilon=epsilon, random_state=s, **params)
              .fit(data.X_train, data.y_train).score(data.X_test, data.y_test)
              for s in range(10)]
    assert np.mean(scores) >= target


# -- checkpoints of one full-batch run ---------------------------------------------------

def test_checkpoints_are_one_shot_runs_of_as_many_steps():
    """The release at each checkpoint equals a fit of that many steps with the run's
    noise multiplier, count noise and seed; its steps are the most whose mu is within
    gdp_mu(epsilon, delta)."""
    from skdp.accounting import composed_mu, gdp_mu

    Xc, yc = make_classification(n_samples=400, n_features=5, random_state=1)
    path = DPSGDClassifier(epsilon=0.5, sample_rate=1.0, random_state=3)._noise_reduction_path(
        Xc, yc)
    z, s = path.noise_multiplier, path.count_noise_std
    steps = []
    for epsilon in (0.5, 0.55, 1.0, 2.5):
        model = path.release(epsilon)
        # checkpoints release no intercept correction (each would be another release)
        one_shot = DPSGDClassifier(epsilon=np.inf, sample_rate=1.0, noise_multiplier=z,
                                   count_noise_std=s, epochs=model.n_steps_,
                                   intercept_correction=False, random_state=3).fit(Xc, yc)
        np.testing.assert_allclose(model.coef_, one_shot.coef_, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(model.intercept_, one_shot.intercept_, rtol=1e-12,
                                   atol=1e-14)
        mu = gdp_mu(epsilon, 1e-5)
        assert composed_mu(z, model.n_steps_, s) <= mu < composed_mu(z, model.n_steps_ + 1, s)
        assert model.epsilon_spent_ <= epsilon and model.epsilon == epsilon
        steps.append(model.n_steps_)
    assert steps[0] == 10  # the first release is the estimator's own fit (epochs=10)
    assert steps == sorted(steps) and steps[-1] > steps[0]
    with pytest.raises(ValueError, match="larger epsilons"):
        path.release(1.0)


def test_checkpoints_need_a_full_batch_constant_schedule():
    Xc, yc = make_classification(n_samples=50, n_features=3, n_informative=2,
                                 n_redundant=0, random_state=0)
    for params in ({"sample_rate": 0.1}, {"sample_rate": 1.0, "learning_rate_schedule": "step"},
                   {"sample_rate": 1.0, "noise_multiplier": 1.0},
                   {"sample_rate": 1.0, "accountant": "rdp"}):
        with pytest.raises(ValueError, match="sample_rate=1.0"):
            DPSGDClassifier(**params)._noise_reduction_path(Xc, yc)


def test_checkpoints_on_dask_rows_are_the_in_memory_ones():
    """The noise-reduction path on a dask array releases the in-memory path's models
    at every checkpoint (the partitioned clipped sums enter the step as the rows' do)."""
    da = pytest.importorskip("dask.array")
    Xc, yc = make_classification(n_samples=400, n_features=5, random_state=1)

    def path(X, y):
        return DPSGDClassifier(epsilon=0.5, sample_rate=1.0, random_state=3
                               )._noise_reduction_path(X, y)

    in_memory = path(Xc, yc)
    on_dask = path(da.from_array(Xc, chunks=(150, 5)), da.from_array(yc, chunks=150))
    for epsilon in (0.5, 1.0, 2.5):
        expected, model = in_memory.release(epsilon), on_dask.release(epsilon)
        assert model.n_steps_ == expected.n_steps_
        np.testing.assert_allclose(model.coef_, expected.coef_, rtol=1e-10, atol=1e-12)
