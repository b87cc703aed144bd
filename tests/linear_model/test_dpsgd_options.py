"""DPSGDClassifier's fit options: row and class weights, warm_start and partial_fit.

Weights: the clipping replay, the noise scale by hand, the noise-free oracle and the
refusals before any noise. Runs of several calls: the cumulative spend against an
independent composition (dp-accounting's own accountants, closed-form Gaussian DP),
replays of a continued run, the label set and the refusals.
"""

import math

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.special import expit
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression

from skdp import DPSGDClassifier
from skdp.accounting import composed_mu, dpsgd_epsilon, gaussian_epsilon
from skdp.accounting._dpsgd import DPSGDEvent, composed_dpsgd_epsilon
from skdp.linear_model._dpsgd import _call_streams, _dp_sgd, _MarginColumns
from skdp.losses import LogisticLoss
from skdp.utils._random import noise_generator

from .test_dpsgd import assert_tangent_is_the_central_difference

DELTA = 1e-5


def _data(n=240, d=4, n_classes=2, seed=0):
    X, y = make_classification(n_samples=n, n_features=d, n_informative=3, n_redundant=0,
                               n_classes=n_classes, n_clusters_per_class=1, random_state=seed)
    return X / np.linalg.norm(X, axis=1).max(), y


def _clf(**params):
    return DPSGDClassifier(**{"data_norm": 1.0, "random_state": 0, **params})


def _state(rng):
    return rng.bit_generator.state


class _Unreadable:
    """Stands for data that must not be read: any access fails the test."""

    def __array__(self, *args, **kwargs):
        raise AssertionError("the data were read")

    def __len__(self):
        raise AssertionError("the data were read")

    @property
    def shape(self):
        raise AssertionError("the data were read")


# -- row weights ------------------------------------------------------------------------

def test_weights_above_the_bound_give_the_model_of_the_bound():
    X, y = _data()
    heavy, at_bound, below = (np.ones(len(y)) for _ in range(3))
    heavy[::7], at_bound[::7], below[::7] = 10.0, 3.0, 2.0
    kw = dict(epsilon=1.0, max_sample_weight=3.0, sample_rate=0.2, epochs=2)
    a = _clf(**kw).fit(X, y, sample_weight=heavy)
    b = _clf(**kw).fit(X, y, sample_weight=at_bound)
    c = _clf(**kw).fit(X, y, sample_weight=below)
    assert_array_equal(a.coef_, b.coef_)
    assert_array_equal(a.intercept_, b.intercept_)
    assert not np.allclose(c.coef_, b.coef_)     # the replay can tell weights apart


def test_unit_weights_are_no_weights():
    """At bound 1, unit weights are the unweighted fit; a larger bound covers heavier
    records and scales the noise, while a fit without weights ignores it (the same
    rule as the other estimators: weight_bound_)."""
    X, y = _data()
    kw = dict(sample_rate=0.25, epochs=2)
    plain = _clf(**kw).fit(X, y)
    assert plain.weight_bound_ == 1.0
    assert_array_equal(_clf(**kw).fit(X, y, sample_weight=np.ones(len(y))).coef_, plain.coef_)
    assert_array_equal(_clf(max_sample_weight=3.0, **kw).fit(X, y).coef_, plain.coef_)
    weighted = _clf(max_sample_weight=3.0, **kw).fit(X, y, sample_weight=np.ones(len(y)))
    assert weighted.weight_bound_ == 3.0
    assert not np.allclose(weighted.coef_, plain.coef_)


def test_a_bound_below_one_lowers_the_noise_with_the_weights():
    """Weights clipped into [0, 0.5]: the records weigh at most half, so the noise is
    halved with them (weight_bound_ 0.5)."""
    X, y = _data()
    kw = dict(epsilon=1.0, sample_rate=1.0, epochs=5, random_state=3)
    half = _clf(max_sample_weight=0.5, **kw).fit(X, y, sample_weight=np.ones(len(y)))
    assert half.weight_bound_ == 0.5
    scaled = _clf(max_sample_weight=0.5, **kw).fit(X, y, sample_weight=np.full(len(y), 0.5))
    assert_array_equal(half.coef_, scaled.coef_)


@pytest.mark.parametrize("sample_rate", [1.0, 0.3])
def test_noise_scale_by_hand_for_max_sample_weight_3(sample_rate):
    """One step from zero: theta_1 = -eta (sum_i min(w_i, W) clip(g_i) + z W C xi) / n_tilde,
    with the count, masks and normals of the fit's streams replayed."""
    X, y = _data(n=60)
    z, C, W, eta, s = 1.7, 0.3, 3.0, 0.4, 5.0
    w = np.linspace(0.0, 6.0, len(y))             # half the weights above W
    est = _clf(epsilon=np.inf, noise_multiplier=z, max_grad_norm=C, max_sample_weight=W,
               count_noise_std=s, sample_rate=sample_rate, epochs=sample_rate,
               learning_rate=eta, momentum=0.0, average=0.0, random_state=11,
               intercept_scaling=1.0, intercept_correction=False)
    est.fit(X, y, sample_weight=w)
    assert est.n_steps_ == 1
    count_rng, sampling_rng, noise_rng = _call_streams(11, 0)
    n_tilde = len(y) + s * count_rng.standard_normal()
    rows = np.arange(len(y))
    if sample_rate < 1:
        from skdp.mechanisms._poisson_sampling import poisson_sample as _poisson_sample

        rows = _poisson_sample(len(y), sample_rate, sampling_rng)
        assert 0 < rows.size < len(y)
    design = np.hstack([X, np.ones((len(y), 1))])
    signs = np.where(y == 1, 1.0, -1.0)
    total = np.zeros(design.shape[1])
    for i in rows:                                 # the reference: one row at a time
        g = -signs[i] * expit(-signs[i] * 0.0) * design[i]
        g *= min(1.0, C / np.linalg.norm(g))
        total += min(w[i], W) * g
    xi = noise_rng.standard_normal((1, design.shape[1]))[0]
    theta = -eta * (total + z * W * C * xi) / max(sample_rate * n_tilde, 1.0)
    assert_allclose(est.coef_[0], theta[:-1], rtol=1e-12, atol=1e-14)
    assert_allclose(est.intercept_, theta[-1:], rtol=1e-12, atol=1e-14)
    # noise scaled to C alone would be another model
    wrong = -eta * (total + z * C * xi) / max(sample_rate * n_tilde, 1.0)
    assert not np.allclose(est.coef_[0], wrong[:-1])


def test_infinite_epsilon_with_weights_is_weighted_gradient_descent():
    X, y = _data(n=200)
    rng = np.random.default_rng(3)
    w = rng.uniform(0.0, 3.0, size=len(y))
    eta, alpha, T = 0.8, 0.05, 60
    est = _clf(epsilon=np.inf, max_sample_weight=3.0, max_grad_norm=10.0, sample_rate=1.0,
               epochs=T, learning_rate=eta, alpha=alpha, momentum=0.0, average=0.0,
               intercept_scaling=1.0, intercept_correction=False)
    est.fit(X, y, sample_weight=w)
    design = np.hstack([X, np.ones((len(y), 1))])
    signs = np.where(y == 1, 1.0, -1.0)
    theta = np.zeros(design.shape[1])
    for _ in range(T):                             # non-private weighted gradient descent
        residual = -signs * expit(-signs * (design @ theta))
        theta = theta - eta * (design.T @ (w * residual) / len(y) + alpha * theta)
    assert_allclose(est.coef_[0], theta[:-1], rtol=1e-10, atol=1e-12)
    assert_allclose(est.intercept_, theta[-1:], rtol=1e-10, atol=1e-12)


def test_infinite_epsilon_with_weights_converges_to_weighted_logistic_regression():
    X, y = _data(n=200)
    w = np.random.default_rng(4).uniform(0.2, 2.0, size=len(y))
    alpha = 0.05
    ours = _clf(epsilon=np.inf, alpha=alpha, sample_rate=1.0, epochs=600, learning_rate=1.5,
                max_grad_norm=10.0, max_sample_weight=2.0, average=0.0,
                intercept_scaling=1.0, intercept_correction=False).fit(
                    X, y, sample_weight=w)
    design = np.hstack([X, np.ones((len(y), 1))])
    ref = LogisticRegression(C=1.0 / (alpha * len(y)), fit_intercept=False, tol=1e-12,
                             max_iter=10_000).fit(design, y, sample_weight=w)
    assert_allclose(ours.coef_, ref.coef_[:, :-1], atol=1e-6)
    assert_allclose(ours.intercept_, ref.coef_[:, -1], atol=1e-6)


def test_class_weight_is_a_per_class_sample_weight():
    """Class weights are per-row weights under the same bound: the largest class weight
    (2) times max_sample_weight when sample_weight is given."""
    X, y = _data(n=300, n_classes=3)
    labels = np.array(["a", "b", "c"])[y]
    kw = dict(sample_rate=0.25, epochs=2)
    by_class = _clf(class_weight={"a": 2.0, "c": 0.5}, **kw).fit(X, labels)
    assert by_class.weight_bound_ == 2.0
    rows = np.select([labels == "a", labels == "c"], [2.0, 0.5], 1.0)
    by_row = _clf(max_sample_weight=2.0, **kw).fit(X, labels, sample_weight=rows)
    assert_array_equal(by_class.coef_, by_row.coef_)
    both = _clf(class_weight={"a": 2.0}, **kw).fit(X, labels, sample_weight=np.full(300, 0.5))
    assert both.weight_bound_ == 2.0
    product = _clf(max_sample_weight=2.0, **kw).fit(
        X, labels, sample_weight=np.where(labels == "a", 1.0, 0.5))
    assert_array_equal(both.coef_, product.coef_)


def test_balanced_class_weight_is_refused_before_the_data_are_read():
    rng = np.random.default_rng(0)
    before = _state(rng)
    with pytest.raises(ValueError, match="'balanced' is refused.*private"):
        DPSGDClassifier(class_weight="balanced", random_state=rng).fit(_Unreadable(),
                                                                      _Unreadable())
    assert _state(rng) == before


X_OK, Y_OK = _data(n=40)
WEIGHT_CASES = [
    ("negative", dict(), dict(sample_weight=np.r_[-1.0, np.ones(39)]), "Negative"),
    ("nan", dict(), dict(sample_weight=np.r_[np.nan, np.ones(39)]), "NaN"),
    ("inf", dict(), dict(sample_weight=np.r_[np.inf, np.ones(39)]), "infinity"),
    ("too long", dict(), dict(sample_weight=np.ones(41)), "expected \\(40,\\)"),
    ("2-d", dict(), dict(sample_weight=np.ones((40, 2))), "1D array"),
    ("class weight unknown label", dict(class_weight={7: 1.0}), dict(), "not in class_weight"),
    ("class weight negative", dict(class_weight={1: -2.0}), dict(), "finite positive"),
    ("class weight nan", dict(class_weight={1: np.nan}), dict(), "finite positive"),
    ("max_sample_weight zero", dict(max_sample_weight=0.0), dict(), "'max_sample_weight'"),
]


@pytest.mark.parametrize("name, params, fit_kw, match", WEIGHT_CASES,
                         ids=[c[0] for c in WEIGHT_CASES])
def test_bad_weights_are_refused_before_noise(name, params, fit_kw, match):
    rng = np.random.default_rng(42)
    before = _state(rng)
    with pytest.raises(ValueError, match=match):
        DPSGDClassifier(data_norm=1.0, random_state=rng, **params).fit(X_OK, Y_OK, **fit_kw)
    assert _state(rng) == before


def test_the_auto_step_reads_the_weighted_sensitivity():
    X, y = _data()
    one = _clf(epsilon=1.0).fit(X, y)
    three = _clf(epsilon=1.0, max_sample_weight=3.0).fit(X, y, sample_weight=np.ones(len(y)))
    assert three.noise_multiplier_ == one.noise_multiplier_   # the accounting is unchanged
    assert three.learning_rate_ == pytest.approx(one.learning_rate_ / 3.0, rel=1e-12)


# -- runs of several calls: the cumulative spend ----------------------------------------

def _dp_accounting_epsilon(events, accountant):
    """The composition of the calls by dp-accounting's own accountants."""
    import dp_accounting
    from dp_accounting.pld import PLDAccountant
    from dp_accounting.rdp import RdpAccountant

    acc = RdpAccountant() if accountant == "rdp" else PLDAccountant()
    for e in events:
        step = dp_accounting.GaussianDpEvent(e.noise_multiplier)
        if e.sample_rate < 1:
            step = dp_accounting.PoissonSampledDpEvent(e.sample_rate, step)
        acc.compose(dp_accounting.GaussianDpEvent(e.count_noise_std))
        acc.compose(step, e.n_steps)
    return acc.get_epsilon(DELTA)


@pytest.mark.parametrize("accountant", ["rdp", "pld"])
def test_partial_fit_spend_is_the_composition_of_every_call(accountant):
    X, y = _data(n=300)
    est = _clf(epsilon=1.0, sample_rate=0.1, epochs=3, accountant=accountant)
    est.fit(X, y)
    first = est.epsilon_spent_
    est.partial_fit(X[:150], y[:150])
    est.partial_fit(X[150:], y[150:])
    events = est.dp_events_
    assert len(events) == 3 and all(e == events[0] for e in events)
    z, s, T = est.noise_multiplier_, est.count_noise_std_, est.n_steps_
    # an independent composition: dp-accounting's accountant over the same events
    assert est.epsilon_spent_ == pytest.approx(_dp_accounting_epsilon(events, accountant),
                                               rel=1e-6 if accountant == "rdp" else 2e-3)
    # k identical calls are k T steps with k counts (s / sqrt(k)), in RDP exactly
    if accountant == "rdp":
        assert est.epsilon_spent_ == pytest.approx(
            dpsgd_epsilon(z, 0.1, 3 * T, DELTA, accountant="rdp",
                          count_noise_std=s / math.sqrt(3)), rel=1e-12)
    assert first < est.epsilon_spent_ < 3 * first - 0.5   # not epsilons added
    assert est.delta_spent_ == DELTA


def test_full_batch_calls_compose_exactly_in_gaussian_dp():
    X, y = _data(n=300)
    est = _clf(epsilon=0.5, sample_rate=1.0, epochs=20)
    est.fit(X, y)
    est.partial_fit(X, y)
    mu = composed_mu(est.noise_multiplier_, est.n_steps_, est.count_noise_std_)
    assert est.epsilon_spent_ == pytest.approx(gaussian_epsilon(DELTA, math.sqrt(2) * mu),
                                               rel=1e-10)
    assert est.epsilon_spent_ < 2 * 0.5


def test_calls_under_different_accountants_compose_in_renyi_dp():
    X, y = _data(n=300)
    est = _clf(epsilon=1.0, sample_rate=1.0, epochs=10, warm_start=True).fit(X, y)
    est.set_params(sample_rate=0.2, epochs=2).fit(X, y)
    assert [e.accountant for e in est.dp_events_] == ["pld", "rdp"]
    assert est.epsilon_spent_ == pytest.approx(
        _dp_accounting_epsilon(est.dp_events_, "rdp"), rel=1e-6)


def test_an_unbounded_call_makes_the_run_unbounded():
    X, y = _data()
    est = _clf(epsilon=1.0).fit(X, y)
    est.set_params(epsilon=np.inf).partial_fit(X, y)
    assert est.epsilon_spent_ == np.inf
    est.set_params(epsilon=1.0).partial_fit(X, y)
    assert est.epsilon_spent_ == np.inf


def test_composition_of_one_event_is_the_single_run_accountant():
    for q, acc in [(1.0, "pld"), (0.1, "rdp"), (0.1, "pld")]:
        event = DPSGDEvent(2.5, q, 50, 30.0)
        assert composed_dpsgd_epsilon([event], DELTA, accountant=acc) == pytest.approx(
            dpsgd_epsilon(2.5, q, 50, DELTA, accountant=acc, count_noise_std=30.0),
            rel=1e-12)
    with pytest.raises(ValueError, match="at least one"):
        composed_dpsgd_epsilon([], DELTA)


def test_warm_start_false_spends_each_fit_alone():
    X, y = _data()
    est = _clf().fit(X, y)
    spent = est.epsilon_spent_
    est.fit(X, y)
    assert len(est.dp_events_) == 1 and est.epsilon_spent_ == spent
    est.set_params(warm_start=True).fit(X, y)
    assert len(est.dp_events_) == 2 and est.epsilon_spent_ > spent
    assert len(clone(est).set_params(warm_start=False).fit(X, y).dp_events_) == 1


# -- runs of several calls: the iterates -------------------------------------------------

def test_partial_fit_first_call_equals_fit():
    X, y = _data(n_classes=3)
    kw = dict(epsilon=2.0, sample_rate=0.2, epochs=2)
    fitted = _clf(**kw).fit(X, y)
    partial = _clf(**kw).partial_fit(X, y, classes=[0, 1, 2])
    assert_array_equal(partial.coef_, fitted.coef_)
    assert partial.epsilon_spent_ == fitted.epsilon_spent_
    assert partial.dp_events_ == fitted.dp_events_


def test_warm_start_without_noise_continues_the_same_descent():
    """Noise-free full-batch steps without momentum or averaging: T steps then T more
    from the first release are 2 T steps."""
    X, y = _data()
    kw = dict(epsilon=np.inf, sample_rate=1.0, learning_rate=0.7, momentum=0.0,
              average=0.0, alpha=0.01, intercept_correction=False)
    twice = _clf(warm_start=True, epochs=15, **kw).fit(X, y).fit(X, y)
    once = _clf(epochs=30, **kw).fit(X, y)
    assert_allclose(twice.coef_, once.coef_, rtol=1e-12, atol=1e-14)
    assert_allclose(twice.intercept_, once.intercept_, rtol=1e-12, atol=1e-14)
    cold = _clf(warm_start=False, epochs=15, **kw).fit(X, y).fit(X, y)
    assert not np.allclose(cold.coef_, once.coef_)


def test_second_call_starts_from_the_first_release_with_fresh_noise():
    """The second call replayed by hand: the worker from the first release, on the
    streams of call 1 (not those of call 0) of the same seed."""
    X, y = _data()
    est = _clf(epsilon=1.0, sample_rate=0.2, epochs=2, warm_start=True, random_state=5,
               intercept_scaling=1.0, intercept_correction=False)
    first = est.fit(X, y).coef_.copy(), est.intercept_.copy()
    est.fit(X, y)
    start = np.column_stack([first[0], first[1]])
    design = np.hstack([X, np.ones((len(y), 1))])
    Y = np.where(y == 1, 1.0, -1.0)[:, None]

    def replay(call):
        count_rng, sampling_rng, noise_rng = _call_streams(5, call)
        n_tilde = len(y) + est.count_noise_std_ * count_rng.standard_normal()
        return _dp_sgd(design, Y, _MarginColumns(LogisticLoss()),
                       noise_multiplier=est.noise_multiplier_, max_grad_norm=est.max_grad_norm_,
                       sample_rate=0.2, n_steps=est.n_steps_,
                       normaliser=max(0.2 * n_tilde, 1.0), learning_rate=est.learning_rate_,
                       schedule="constant", alpha=0.0, average=0.5, momentum=0.9,
                       sampling_rng=sampling_rng, noise_rng=noise_rng,
                       initial_theta=start).theta

    theta = replay(1)
    assert_allclose(est.coef_, theta[:, :-1], rtol=1e-12, atol=1e-14)
    assert_allclose(est.intercept_, theta[:, -1], rtol=1e-12, atol=1e-14)
    assert not np.allclose(est.coef_, replay(0)[:, :-1])   # not the first call's noise


def test_a_negligible_step_keeps_the_previous_model():
    X, y = _data()
    est = _clf(epsilon=1.0, warm_start=True).fit(X, y)
    previous = est.coef_.copy()
    est.set_params(learning_rate=1e-12).fit(X, y)
    assert_allclose(est.coef_, previous, rtol=1e-8)
    cold = clone(est).set_params(warm_start=False).fit(X, y)
    assert np.abs(cold.coef_).max() < 1e-8


def test_call_streams_extend_the_fit_streams():
    """The first call's streams are keyed from the noise stream's ``spawn(3)``: its
    count and sampling streams those very ChaCha20 streams, its steps' noise AES-128
    in counter mode keyed from the third child's seed; later calls draw other noise."""
    from randomgen import AESCounter

    for seed in (0, 7):
        spawned = noise_generator(seed).spawn(3)
        count, sampling, noise = _call_streams(seed, 0)
        for ours, theirs in zip((count, sampling), spawned):
            assert_array_equal(ours.standard_normal(4), theirs.standard_normal(4))
        aes = np.random.Generator(AESCounter(seed=spawned[2].bit_generator.seed_seq))
        assert_array_equal(noise.standard_normal(4), aes.standard_normal(4))
        draws = [_call_streams(seed, call)[2].standard_normal(4) for call in range(3)]
        assert not np.allclose(draws[0], draws[1]) and not np.allclose(draws[1], draws[2])


# -- runs of several calls: the label set, the features and the refusals -----------------

def test_partial_fit_needs_the_label_set_on_the_first_call():
    X, y = _data()
    rng = np.random.default_rng(1)
    before = _state(rng)
    with pytest.raises(ValueError, match="classes must be passed on the first call"):
        DPSGDClassifier(data_norm=1.0, random_state=rng).partial_fit(X, y)
    assert _state(rng) == before
    declared = _clf(classes=[0, 1]).partial_fit(X, y)    # the constructor's is enough
    assert_array_equal(declared.classes_, [0, 1])


def test_partial_fit_keeps_the_label_set():
    X, y = _data(n_classes=3)
    est = _clf(epsilon=2.0).partial_fit(X, y, classes=[0, 1, 2])
    est.partial_fit(X[y == 0], y[y == 0])                # a batch of one class is fine
    est.partial_fit(X, y, classes=[2, 1, 0])             # the same set, repeated
    assert_array_equal(est.classes_, [0, 1, 2]) and est.coef_.shape == (3, 4)
    rng = np.random.default_rng(2)
    est.set_params(random_state=rng)
    before = _state(rng)
    with pytest.raises(ValueError, match="keeps the label set"):
        est.partial_fit(X, y, classes=[0, 1, 2, 3])
    with pytest.raises(ValueError, match="outside"):
        est.partial_fit(X, np.where(y == 2, 5, y))
    with pytest.raises(ValueError, match="outside"):
        est.set_params(warm_start=True).fit(X, np.where(y == 2, 5, y))
    assert _state(rng) == before
    with pytest.raises(ValueError, match="differ"):
        _clf(classes=[0, 1]).partial_fit(X, y, classes=[0, 2])


@pytest.mark.parametrize("method", ["partial_fit", "warm fit"])
def test_a_later_call_on_other_features_is_refused_before_noise(method):
    X, y = _data()
    rng = np.random.default_rng(3)
    est = DPSGDClassifier(data_norm=1.0, random_state=rng, warm_start=True)
    est.partial_fit(X, y, classes=[0, 1])
    before, coef = _state(rng), est.coef_.copy()
    with pytest.raises(ValueError, match="features"):
        if method == "partial_fit":
            est.partial_fit(X[:, :-1], y)
        else:
            est.fit(X[:, :-1], y)
    assert _state(rng) == before
    assert_array_equal(est.coef_, coef) and est.n_features_in_ == 4


def test_private_bound_is_refused_where_a_run_continues():
    X, y = _data()
    with pytest.raises(ValueError, match="partial_fit does not take data_norm='private'"):
        DPSGDClassifier(data_norm="private").partial_fit(_Unreadable(), y, classes=[0, 1])
    est = DPSGDClassifier(data_norm="private", warm_start=True, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="warm_start=True continues"):
        est.fit(_Unreadable(), y)
    est.set_params(data_norm=est.data_norm_).fit(X, y)    # a public bound continues
    assert len(est.dp_events_) == 2
    # the first call's pure share of the bound stays in the total
    assert est.epsilon_spent_ == pytest.approx(
        composed_dpsgd_epsilon(est.dp_events_, DELTA) + 0.1, rel=1e-12)


def test_dask_input_is_refused_by_name_for_the_new_options():
    da = pytest.importorskip("dask.array")
    X, y = _data()
    Xd, yd = da.from_array(X, chunks=60), da.from_array(y, chunks=60)
    cases = [
        (lambda: _clf().partial_fit(Xd, yd, classes=[0, 1]), "partial_fit does not take dask"),
        (lambda: _clf().fit(Xd, yd, sample_weight=np.ones(len(y))), "need the rows in memory"),
        (lambda: _clf(class_weight={0: 1.0}).fit(Xd, yd), "need the rows in memory"),
        (lambda: _clf(warm_start=True).fit(X, y).fit(Xd, yd), "warm_start=True does not"),
    ]
    for call, match in cases:
        with pytest.raises(ValueError, match=match):
            call()


# -- an exact audit of a weighted release ------------------------------------------------

@pytest.mark.parametrize("n", [2, 3])
def test_exact_profile_of_a_weighted_release_is_within_the_claim(n):
    """One full-batch step on ``n`` rows of weight 2 against the same plus a row of
    weight 10, clipped to ``W = 3``: the added row moves the weighted clipped sum by
    ``W C``. The exact profile of the release ``-eta (S + z W C xi) / max(n_tilde, 1)``
    is within the certified (epsilon, delta); noise scaled to ``C`` alone is not."""
    from ..audit.test_dpsgd_privacy import (CLIP, ETA, _hockey_stick, _one_step,
                                            _release_density, _tiny_neighbours)

    epsilon, delta, W = 1.0, 1e-3, 3.0
    (X, y), (Xp, yp) = _tiny_neighbours(n)
    w, wp = np.full(n, 2.0), np.r_[np.full(n, 2.0), 10.0]
    est = _one_step(epsilon=epsilon, delta=delta, max_sample_weight=W, data_norm=1.0,
                    random_state=0).fit(X, y, sample_weight=w)
    z, s = est.noise_multiplier_, est.count_noise_std_

    def weighted_sum(X, y, w):
        signs = np.where(y == 1, 1.0, -1.0)
        gradients = -signs * expit(0.0) * X[:, 0]
        clipped = gradients * np.minimum(1.0, CLIP / np.abs(gradients))
        return float(np.sum(np.minimum(w, W) * clipped))

    S, Sp = weighted_sum(X, y, w), weighted_sum(Xp, yp, wp)
    assert abs(Sp - S) == pytest.approx(W * CLIP)
    grid = np.linspace(-60, 60, 30_001) * ETA * W * CLIP
    # the density's noise is eta z' C with z' = z W
    p = _release_density(grid, S, n, z * W, s)
    q = _release_density(grid, Sp, n + 1, z * W, s)
    assert abs(p.sum() * (grid[1] - grid[0]) - 1) < 1e-6
    assert _hockey_stick(p, q, est.epsilon_spent_, grid) <= delta * 1.01
    # negative control: the same sums with the noise of the unweighted clipping norm
    p_bad = _release_density(grid, S, n, z, s)
    q_bad = _release_density(grid, Sp, n + 1, z, s)
    assert _hockey_stick(p_bad, q_bad, est.epsilon_spent_, grid) > 5 * delta


@pytest.mark.parametrize("sample_rate", [1.0, 0.2])
def test_tangent_with_class_weights_and_a_warm_start(sample_rate):
    """fit_release's forward-mode d theta / dz with weighted rows from a warm start
    matches the central difference of common-random-number reruns."""
    X, y = _data(n=300)
    est = _clf(epsilon=2.0, sample_rate=sample_rate, epochs=2, max_grad_norm=0.3,
               max_sample_weight=2.0, class_weight={0: 2.0, 1: 0.5}, warm_start=True,
               accountant="rdp").fit(X, y)
    (solution,) = est._releases(X, y, with_derivative=True)
    assert solution.settings["initial_theta"] is not None
    assert solution.settings["sample_weight"] is not None
    assert_tangent_is_the_central_difference(solution)


def test_checkpoints_weigh_rows_as_the_fit_does():
    """The first checkpoint of a full-batch run is the estimator's own fit, class
    weights and the noise of max_sample_weight included."""
    X, y = _data(n=300)
    kw = dict(epsilon=0.5, sample_rate=1.0, class_weight={0: 2.0}, max_sample_weight=2.0,
              random_state=3)
    model = _clf(**kw)._noise_reduction_path(X, y).release(0.5)
    fitted = _clf(intercept_correction=False, **kw).fit(X, y)   # checkpoints: none
    assert_allclose(model.coef_, fitted.coef_, rtol=1e-12, atol=1e-14)
    unweighted = _clf(**{**kw, "class_weight": None})._noise_reduction_path(X, y).release(0.5)
    assert not np.allclose(unweighted.coef_, fitted.coef_)
    assert model.dp_events_ == fitted.dp_events_


def test_composition_of_unlike_runs_and_of_a_count_alone():
    import dp_accounting
    from dp_accounting.pld import PLDAccountant

    from skdp.accounting._rdp import ORDERS, rdp_to_epsilon

    count_only = DPSGDEvent(np.inf, 0.1, 10, 5.0)
    assert composed_dpsgd_epsilon([count_only], DELTA, accountant="rdp") == pytest.approx(
        rdp_to_epsilon(ORDERS / (2 * 5.0**2), DELTA), rel=1e-12)
    assert composed_dpsgd_epsilon([count_only], DELTA, accountant="pld") == pytest.approx(
        gaussian_epsilon(DELTA, 1 / 5.0), rel=2e-3)
    runs = [DPSGDEvent(1.5, 0.1, 40, 30.0), DPSGDEvent(1.5, 0.1, 40, 30.0),
            DPSGDEvent(3.0, 0.3, 20, 30.0)]
    acc = PLDAccountant()
    for e in runs:
        acc.compose(dp_accounting.GaussianDpEvent(e.count_noise_std))
        acc.compose(dp_accounting.PoissonSampledDpEvent(
            e.sample_rate, dp_accounting.GaussianDpEvent(e.noise_multiplier)), e.n_steps)
    assert composed_dpsgd_epsilon(runs, DELTA, accountant="pld") == pytest.approx(
        acc.get_epsilon(DELTA), rel=2e-3)
    assert composed_dpsgd_epsilon(runs, DELTA, accountant="rdp") == pytest.approx(
        _dp_accounting_epsilon(runs, "rdp"), rel=1e-6)
