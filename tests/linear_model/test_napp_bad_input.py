"""NAPP estimators: bad input gets a clear error naming the problem, before any noise is drawn."""

import numpy as np
import pytest

from skdp import NAPPLasso, NAPPLassoClassifier

X_OK = np.random.default_rng(0).normal(size=(30, 3)) / 3
Y_CLS = np.arange(30) % 2
Y_REG = np.linspace(-1, 1, 30)
Y_CNT = np.arange(30) % 4.0
BOUNDS = dict(y_bound=2.0, coef_bound=5.0)

CLASSIFIER_CASES = [
    ("nan in X", dict(), np.where(X_OK > 0.5, np.nan, X_OK), Y_CLS, ValueError, "NaN"),
    ("inf in X", dict(), np.where(X_OK > 0.5, np.inf, X_OK), Y_CLS, ValueError, "infinity"),
    ("1d X", dict(), X_OK[:, 0], Y_CLS, ValueError, "2D array"),
    ("length mismatch", dict(), X_OK, Y_CLS[:-1], ValueError, "inconsistent numbers"),
    ("single class", dict(), X_OK, np.zeros(30), ValueError, "only one class"),
    ("continuous target", dict(), X_OK, np.linspace(0, 1, 30), ValueError, "Unknown label"),
    ("epsilon zero", dict(epsilon=0.0), X_OK, Y_CLS, ValueError, "'epsilon'"),
    ("epsilon negative", dict(epsilon=-1.0), X_OK, Y_CLS, ValueError, "'epsilon'"),
    ("delta one", dict(delta=1.0), X_OK, Y_CLS, ValueError, "'delta'"),
    ("data_norm None", dict(data_norm=None), X_OK, Y_CLS, ValueError, "data_norm=None"),
    ("data_norm zero", dict(data_norm=0.0), X_OK, Y_CLS, ValueError, "'data_norm'"),
    ("relation", dict(neighboring="swap"), X_OK, Y_CLS, ValueError, "'neighboring'"),
    ("alpha negative", dict(alpha=-1.0), X_OK, Y_CLS, ValueError, "'alpha'"),
    ("eps_jacobian_frac 0", dict(eps_jacobian_frac=0.0), X_OK, Y_CLS, ValueError,
     "'eps_jacobian_frac'"),
    ("eps_jacobian_frac 1", dict(eps_jacobian_frac=1.0), X_OK, Y_CLS, ValueError,
     "'eps_jacobian_frac'"),
    ("eps_jacobian_frac 1.5", dict(eps_jacobian_frac=1.5), X_OK, Y_CLS, ValueError,
     "'eps_jacobian_frac'"),
    ("bridge q = 1", dict(penalty="bridge", q=1.0, coef_bound=5.0), X_OK, Y_CLS, ValueError,
     "'q'"),
    ("bridge q = 0.5", dict(penalty="bridge", q=0.5, coef_bound=5.0), X_OK, Y_CLS, ValueError,
     "'q'"),
    ("bridge q = 2.5", dict(penalty="bridge", q=2.5, coef_bound=5.0), X_OK, Y_CLS, ValueError,
     "'q'"),
    ("bridge without coef_bound", dict(penalty="bridge"), X_OK, Y_CLS, ValueError,
     "coef_bound"),
    ("unknown penalty", dict(penalty="scad"), X_OK, Y_CLS, ValueError, "'penalty'"),
    ("l1_ratio above 1", dict(penalty="elasticnet", l1_ratio=1.5), X_OK, Y_CLS, ValueError,
     "'l1_ratio'"),
    ("stage1_frac 1", dict(adaptive_two_stage=True, stage1_frac=1.0), X_OK, Y_CLS,
     ValueError, "'stage1_frac'"),
    ("exact moment too few rows", dict(augmentation="exact_moment", n_aug=4), X_OK, Y_CLS,
     ValueError, "n_aug"),
    ("negative threshold", dict(threshold=-1.0), X_OK, Y_CLS, ValueError, "'threshold'"),
    ("coef_bound zero", dict(coef_bound=0.0), X_OK, Y_CLS, ValueError, "'coef_bound'"),
    ("max_iter zero", dict(max_iter=0), X_OK, Y_CLS, ValueError, "'max_iter'"),
]

REGRESSOR_CASES = [
    ("squared without y_bound", dict(coef_bound=5.0), X_OK, Y_REG, ValueError, "y_bound"),
    ("squared without coef_bound", dict(y_bound=2.0), X_OK, Y_REG, ValueError, "coef_bound"),
    ("squared without bounds", dict(), X_OK, Y_REG, ValueError, "y_bound"),
    ("poisson without coef_bound", dict(loss="poisson", y_bound=5.0), X_OK, Y_CNT, ValueError,
     "coef_bound"),
    ("poisson without y_bound", dict(loss="poisson", coef_bound=5.0), X_OK, Y_CNT,
     ValueError, "y_bound"),
    ("poisson negative y", dict(loss="poisson", **BOUNDS), X_OK, Y_REG, ValueError,
     "negative"),
    ("y_bound zero", dict(y_bound=0.0, coef_bound=5.0), X_OK, Y_REG, ValueError, "'y_bound'"),
    ("unknown loss", dict(loss="logistic", **BOUNDS), X_OK, Y_REG, ValueError, "'loss'"),
    ("nan in y", dict(**BOUNDS), X_OK, np.where(Y_REG > 0.5, np.nan, Y_REG), ValueError, "NaN"),
    ("epsilon zero", dict(epsilon=0.0, **BOUNDS), X_OK, Y_REG, ValueError, "'epsilon'"),
    ("eps_jacobian_frac 0", dict(eps_jacobian_frac=0.0, **BOUNDS), X_OK, Y_REG, ValueError,
     "'eps_jacobian_frac'"),
    ("bridge q = 1", dict(penalty="bridge", q=1.0, **BOUNDS), X_OK, Y_REG, ValueError, "'q'"),
    ("data_norm None", dict(data_norm=None, **BOUNDS), X_OK, Y_REG, ValueError,
     "data_norm=None"),
]


def _check(Est, params, X, y, error, match):
    rng = np.random.default_rng(42)
    before = rng.bit_generator.state
    with pytest.raises(error, match=match):
        Est(random_state=rng, **params).fit(X, y)
    assert rng.bit_generator.state == before, "noise was drawn before the error"


@pytest.mark.parametrize("name, params, X, y, error, match", CLASSIFIER_CASES,
                         ids=[c[0] for c in CLASSIFIER_CASES])
def test_classifier_bad_input_raises_before_noise(name, params, X, y, error, match):
    _check(NAPPLassoClassifier, params, X, y, error, match)


@pytest.mark.parametrize("name, params, X, y, error, match", REGRESSOR_CASES,
                         ids=[c[0] for c in REGRESSOR_CASES])
def test_regressor_bad_input_raises_before_noise(name, params, X, y, error, match):
    _check(NAPPLasso, params, X, y, error, match)


def test_missing_bounds_message_explains_the_choice():
    with pytest.raises(ValueError, match="public knowledge") as info:
        NAPPLasso().fit(X_OK, Y_REG)
    message = str(info.value)
    assert "y_bound" in message and "coef_bound" in message


def test_bridge_exponent_outside_range_is_rejected_by_the_penalty_object():
    from skdp.penalties import Bridge
    for q in (0.5, 1.0, 2.5):
        with pytest.raises(ValueError, match="q must be in"):
            Bridge(1.0, q)


def test_predict_side_errors():
    from sklearn.exceptions import NotFittedError
    est = NAPPLasso(**BOUNDS)
    with pytest.raises(NotFittedError):
        est.predict(X_OK)
    est.fit(X_OK, Y_REG)
    with pytest.raises(ValueError, match="features"):
        est.predict(X_OK[:, :2])
