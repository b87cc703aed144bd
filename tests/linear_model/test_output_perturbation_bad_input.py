"""OutputPertSVM: bad input gets a clear error naming the problem, before any noise."""

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

from skdp import OutputPertSVM

X_OK = np.random.default_rng(0).normal(size=(30, 3)) / 3
Y_OK = np.arange(30) % 2

CASES = [
    ("nan in X", dict(), X_OK.copy(), Y_OK, ValueError, "NaN"),
    ("inf in X", dict(), np.where(X_OK > 0.5, np.inf, X_OK), Y_OK, ValueError, "infinity"),
    ("1d X", dict(), X_OK[:, 0], Y_OK, ValueError, "2D array"),
    ("length mismatch", dict(), X_OK, Y_OK[:-1], ValueError, "inconsistent numbers of samples"),
    ("single class", dict(), X_OK, np.zeros(30), ValueError, "only one class"),
    ("single class rbf", dict(kernel="rbf"), X_OK, np.zeros(30), ValueError, "only one class"),
    ("continuous target", dict(), X_OK, np.linspace(0, 1, 30), ValueError, "Unknown label type"),
    ("epsilon zero", dict(epsilon=0.0), X_OK, Y_OK, ValueError, "'epsilon'"),
    ("epsilon negative", dict(epsilon=-1.0), X_OK, Y_OK, ValueError, "'epsilon'"),
    ("epsilon nan", dict(epsilon=np.nan), X_OK, Y_OK, ValueError, "'epsilon'"),
    ("delta one", dict(delta=1.0), X_OK, Y_OK, ValueError, "'delta'"),
    ("delta negative", dict(delta=-1e-5), X_OK, Y_OK, ValueError, "'delta'"),
    ("data_norm zero", dict(data_norm=0.0), X_OK, Y_OK, ValueError, "'data_norm'"),
    ("data_norm None", dict(data_norm=None), X_OK, Y_OK, ValueError, "data_norm=None"),
    ("unknown loss", dict(loss="squared"), X_OK, Y_OK, ValueError, "'loss'"),
    ("huber_h zero", dict(loss="huber", huber_h=0.0), X_OK, Y_OK, ValueError, "'huber_h'"),
    ("unknown relation", dict(neighboring="swap"), X_OK, Y_OK, ValueError, "'neighboring'"),
    ("C zero", dict(C=0.0), X_OK, Y_OK, ValueError, "'C'"),
    ("max_iter zero", dict(max_iter=0), X_OK, Y_OK, ValueError, "'max_iter'"),
    ("tol zero", dict(tol=0.0), X_OK, Y_OK, ValueError, "'tol'"),
    ("tol one", dict(tol=1.0), X_OK, Y_OK, ValueError, "'tol'"),
    ("unknown kernel", dict(kernel="poly"), X_OK, Y_OK, ValueError, "'kernel'"),
    ("gamma zero", dict(kernel="rbf", gamma=0.0), X_OK, Y_OK, ValueError, "'gamma'"),
    ("gamma scale", dict(kernel="rbf", gamma="scale"), X_OK, Y_OK, ValueError, "'gamma'"),
    ("n_components zero", dict(kernel="rbf", n_components=0), X_OK, Y_OK, ValueError,
     "'n_components'"),
    ("n_components float", dict(kernel="rbf", n_components=10.5), X_OK, Y_OK, ValueError,
     "'n_components'"),
    ("feature seed string", dict(kernel="rbf", feature_random_state="a"), X_OK, Y_OK,
     ValueError, "'feature_random_state'"),
    ("string features", dict(), np.array([["a", "b", "c"]] * 30, dtype=object), Y_OK,
     ValueError, "could not convert"),
]
CASES[0][2][3, 1] = np.nan


@pytest.mark.parametrize("name, params, X, y, error, match", CASES, ids=[c[0] for c in CASES])
def test_bad_input_raises_before_noise(name, params, X, y, error, match):
    rng = np.random.default_rng(42)
    before = rng.bit_generator.state
    with pytest.raises(error, match=match):
        OutputPertSVM(random_state=rng, **params).fit(X, y)
    assert rng.bit_generator.state == before, "noise was drawn before the error"


def test_rbf_ignores_data_norm():
    est = OutputPertSVM(kernel="rbf", data_norm=None, n_components=10, random_state=0)
    assert est.fit(X_OK, Y_OK).epsilon_spent_ == 1.0


def test_predict_side_errors():
    for kw in (dict(), dict(kernel="rbf", n_components=10)):
        est = OutputPertSVM(random_state=0, **kw)
        with pytest.raises(NotFittedError):
            est.predict(X_OK)
        est.fit(X_OK, Y_OK)
        with pytest.raises(ValueError, match="features"):
            est.predict(X_OK[:, :2])
