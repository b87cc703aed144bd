"""Randomness rules of every private estimator, tested as an attacker would.

- The default noise is keyed from :mod:`secrets` and nothing else: an attacker who
  could fix every other source of entropy (the OS stream numpy seeds itself from, the
  global numpy state) still cannot reproduce it.
- Nothing released holds a generator, a seed sequence or a seed.
- Two default fits (and two default clones) draw independent noise.
- An int seed reproduces the model (reproducibility mode).
- Public and noise streams derived from one seed share no output (the published random
  feature map has a seed of its own: ``tests/linear_model/test_output_perturbation.py``).
- What two releases with one seed give away: output perturbation's noise cancels
  exactly; objective perturbation's does not, but the pair tells neighbours apart.
"""

import pickle
import secrets

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import make_classification, make_regression

from skdp import (DPSGDClassifier, NAPPLasso, NAPPLassoClassifier, ObjPertLogisticRegression,
                  OutputPertSVM, SSPLinearRegression)
from skdp.losses import LogisticLoss
from skdp.solvers import glm_gradient, newton_minimise
from skdp.utils import noise_independence, privacy_streams

ESTIMATORS = {
    "objpert": lambda **kw: ObjPertLogisticRegression(epsilon=1.0, **kw),
    "objpert_gauss": lambda **kw: ObjPertLogisticRegression(epsilon=1.0, delta=1e-5, **kw),
    "outputpert": lambda **kw: OutputPertSVM(epsilon=1.0, C=0.1, **kw),
    # a fixed public feature map, so that only the noise can differ
    "outputpert_rbf": lambda **kw: OutputPertSVM(epsilon=1.0, C=0.1, kernel="rbf",
                                                 n_components=20, feature_random_state=0,
                                                 **kw),
    "dpsgd": lambda **kw: DPSGDClassifier(epsilon=1.0, epochs=5, **kw),
    "napp_classifier": lambda **kw: NAPPLassoClassifier(epsilon=1.0, **kw),
    "napp": lambda **kw: NAPPLasso(epsilon=1.0, y_bound=3.0, coef_bound=10.0, **kw),
    "ssp": lambda **kw: SSPLinearRegression(epsilon=1.0, delta=1e-6, y_bound=3.0, **kw),
}


def _data(name):
    if name in ("napp", "ssp"):
        X, y = make_regression(n_samples=150, n_features=4, noise=0.5, random_state=0)
        return X / np.linalg.norm(X, axis=1).max(), y / np.abs(y).max() * 3
    X, y = make_classification(n_samples=150, n_features=4, random_state=0)
    return X / np.linalg.norm(X, axis=1).max(), y


def _release(estimator):
    return np.concatenate([np.ravel(estimator.coef_), np.ravel(estimator.intercept_)])


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_default_noise_is_keyed_from_secrets_only(name, monkeypatch):
    """With ``secrets`` pinned, two default fits coincide; with it free, they differ.

    The first half shows the noise depends on nothing but the ``secrets`` key (the
    OS-seeded numpy stream and the global numpy state play no part); the second that
    the key is fresh per fit.
    """
    X, y = _data(name)
    free = [_release(ESTIMATORS[name]().fit(X, y)) for _ in range(2)]
    assert not np.allclose(free[0], free[1])
    monkeypatch.setattr(secrets, "randbits", lambda k: (1 << (k - 1)) + 12345)
    np.random.seed(0)
    pinned_a = _release(ESTIMATORS[name]().fit(X, y))
    np.random.seed(1)
    pinned_b = _release(ESTIMATORS[name]().fit(X, y))
    np.testing.assert_array_equal(pinned_a, pinned_b)


def _held_objects(obj, seen=None):
    """Every object reachable from ``obj`` through attributes, containers and params."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return
    seen.add(id(obj))
    yield obj
    children = []
    if isinstance(obj, dict):
        children = list(obj.keys()) + list(obj.values())
    elif isinstance(obj, (list, tuple, set, frozenset)):
        children = list(obj)
    elif hasattr(obj, "__dict__") and not isinstance(obj, type):
        children = list(vars(obj).values())
    for child in children:
        yield from _held_objects(child, seen)


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_default_fit_holds_no_random_state(name):
    """A default fit, and its pickle, hold no generator, seed sequence or integer seed."""
    X, y = _data(name)
    fitted = pickle.loads(pickle.dumps(ESTIMATORS[name]().fit(X, y)))
    assert fitted.random_state is None
    for obj in _held_objects(fitted):
        assert not isinstance(obj, (np.random.Generator, np.random.BitGenerator,
                                    np.random.SeedSequence, np.random.RandomState)), obj


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_default_clones_draw_independent_noise(name):
    X, y = _data(name)
    base = ESTIMATORS[name]()
    a, b = (_release(clone(base).fit(X, y)) for _ in range(2))
    assert not np.allclose(a, b)


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_integer_seed_reproduces_the_model(name):
    X, y = _data(name)
    a, b = (_release(ESTIMATORS[name](random_state=7).fit(X, y)) for _ in range(2))
    np.testing.assert_array_equal(a, b)
    c = _release(ESTIMATORS[name](random_state=8).fit(X, y))
    assert not np.allclose(a, c)


def test_noise_stream_is_chacha_and_public_stream_is_separate():
    for random_state in (None, 3, np.random.default_rng(3)):
        noise, public = privacy_streams(random_state)
        assert type(noise.bit_generator).__name__ == "ChaCha"
        assert noise.bit_generator is not public.bit_generator
    # from one seed: the public stream's output does not reappear in the noise stream
    noise, public = privacy_streams(3)
    published = public.standard_normal(1000)
    secret = noise.standard_normal(100_000)
    assert not np.isin(published, secret).any()


def test_a_generator_advances_but_its_clone_repeats():
    """The clone hazard that makes seeded searches non-composable, shown directly."""
    from copy import deepcopy

    rng = np.random.default_rng(5)
    copied = deepcopy(rng)
    first = privacy_streams(rng)[0].standard_normal(3)
    second = privacy_streams(rng)[0].standard_normal(3)
    assert not np.allclose(first, second)
    np.testing.assert_array_equal(privacy_streams(copied)[0].standard_normal(3), first)


@pytest.mark.parametrize("random_states, independent", [
    ([None, None, None], True),
    ([1, 2, None], True),
    ([1, 1], False),
    ([np.random.default_rng(0), None], False),
])
def test_noise_independence(random_states, independent):
    ok, reason = noise_independence(random_states)
    assert ok is independent
    assert (reason == "") is independent



def test_shared_seed_output_perturbation_noise_cancels_exactly():
    """``theta_eps = theta_hat + s(eps) w``: a public combination of two releases with one
    seed is the noise-free point; ``2 theta_1 - theta_0.5`` when ``s`` is ``1 / eps``."""
    X, y = _data("outputpert")
    noise_free = _release(OutputPertSVM(epsilon=np.inf, C=0.5).fit(X, y))
    for kw in (dict(), dict(noise="laplace"), dict(delta=1e-5)):
        fits = {e: OutputPertSVM(epsilon=e, C=0.5, random_state=3, **kw) for e in (0.5, 1.0)}
        theta = {e: _release(f.fit(X, y)) for e, f in fits.items()}
        scale = {e: f._releases(X, y)[0].noise_scale() for e, f in fits.items()}
        combination = ((scale[0.5] * theta[1.0] - scale[1.0] * theta[0.5])
                       / (scale[0.5] - scale[1.0]))
        np.testing.assert_allclose(combination, noise_free, rtol=0, atol=1e-12)
        if "delta" not in kw:
            np.testing.assert_allclose(2 * theta[1.0] - theta[0.5], noise_free, atol=1e-12)


def _predicted_second_release(first, X, y, C, calibrations):
    """From ``theta_1`` and candidate data: the noise ``b`` by stationarity, rescaled to
    epsilon 0.5, and the minimiser of that perturbed objective (attacker's computation)."""
    design = np.hstack([X, np.ones((len(X), 1))])        # data_norm 1 clips nothing here
    signs = np.where(y == 1, 1.0, -1.0)
    ridge = {e: 1.0 + c.extra_ridge for e, c in calibrations.items()}
    noise = -glm_gradient(first, design, signs, LogisticLoss(), C, ridge[1.0],
                          np.zeros(design.shape[1]))
    noise *= calibrations[0.5].noise_scale / calibrations[1.0].noise_scale
    return newton_minimise(design, signs, LogisticLoss(), C=C, ridge=ridge[0.5],
                           linear=noise, tol=1e-12, max_iter=100).theta


@pytest.mark.parametrize("C", [0.5, 3.0])  # no extra ridge; extra ridge at both epsilons
def test_shared_seed_objective_perturbation_pair_tells_neighbours_apart(C):
    """The noise is a linear term of the objective, so it does not cancel in
    ``2 theta_1 - theta_0.5``; but both releases satisfy stationarity with the same
    standard draw, so the pair singles out the true dataset among its neighbours."""
    X, y = _data("objpert")
    fits = {e: ObjPertLogisticRegression(epsilon=e, C=C, random_state=1) for e in (0.5, 1.0)}
    theta = {e: _release(f.fit(X, y)) for e, f in fits.items()}
    calibrations = {e: f._releases(X, y)[0].calibration for e, f in fits.items()}
    assert (calibrations[1.0].extra_ridge > 0) == (C > 1)
    noise_free = _release(ObjPertLogisticRegression(epsilon=np.inf, C=C).fit(X, y))
    miss = np.linalg.norm(2 * theta[1.0] - theta[0.5] - noise_free)
    assert miss > 0.1 * np.linalg.norm(noise_free)
    candidates = {"true": (X, y), "row 0 removed": (X[1:], y[1:]),
                  "row 0 relabelled": (X, np.r_[1 - y[0], y[1:]])}
    gaps = {name: np.linalg.norm(_predicted_second_release(theta[1.0], Xc, yc, C, calibrations)
                                 - theta[0.5])
            for name, (Xc, yc) in candidates.items()}
    assert gaps["true"] < 1e-4
    assert min(gaps["row 0 removed"], gaps["row 0 relabelled"]) > 100 * gaps["true"]


@pytest.mark.parametrize("alpha", [0.01, 1.0])
def test_shared_seed_napp_squared_noise_cancels_with_the_capped_ridge(alpha):
    """Squared loss: on a fixed support the minimiser is affine in the noise, and from
    epsilon 10 the added curvature is capped (the same at both budgets), so the
    output-perturbation combination with the published noise scales is close to the
    noise-free fit (docs/randomness.rst, rule 2)."""
    X, y = _data("napp")
    kw = dict(alpha=alpha, y_bound=3.0, coef_bound=10.0, data_norm=1.0)
    fits = {e: NAPPLasso(epsilon=e, random_state=1, **kw).fit(X, y) for e in (20.0, 40.0)}
    ridge = {e: f.privacy_report_["extra_ridge"] for e, f in fits.items()}
    assert ridge[20.0] == ridge[40.0] > 0
    theta = {e: _release(f) for e, f in fits.items()}
    scale = {e: f.privacy_report_["noise_scale"] for e, f in fits.items()}
    combination = ((scale[40.0] * theta[20.0] - scale[20.0] * theta[40.0])
                   / (scale[40.0] - scale[20.0]))
    noise_free = _release(NAPPLasso(epsilon=np.inf, **kw).fit(X, y))
    miss = np.linalg.norm(combination - noise_free)
    assert miss < 0.1 * min(np.linalg.norm(t - noise_free) for t in theta.values())
    assert miss < 0.02 * np.linalg.norm(noise_free)
