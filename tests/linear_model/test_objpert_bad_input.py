"""Bad input gets a clear error naming the problem, before any noise is drawn."""

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose

from skdp import ObjPertLogisticRegression

X_OK = np.random.default_rng(0).normal(size=(30, 3)) / 3
Y_OK = np.arange(30) % 2

CASES = [
    ("nan in X", dict(), X_OK.copy(), Y_OK, ValueError, "NaN"),
    ("inf in X", dict(), np.where(X_OK > 0.5, np.inf, X_OK), Y_OK, ValueError, "infinity"),
    ("1d X", dict(), X_OK[:, 0], Y_OK, ValueError, "2D array"),
    ("length mismatch", dict(), X_OK, Y_OK[:-1], ValueError, "inconsistent numbers of samples"),
    ("single class", dict(), X_OK, np.zeros(30), ValueError, "only one class"),
    ("continuous target", dict(), X_OK, np.linspace(0, 1, 30), ValueError, "Unknown label type"),
    ("epsilon zero", dict(epsilon=0.0), X_OK, Y_OK, ValueError, "'epsilon'"),
    ("epsilon negative", dict(epsilon=-1.0), X_OK, Y_OK, ValueError, "'epsilon'"),
    ("epsilon nan", dict(epsilon=np.nan), X_OK, Y_OK, ValueError, "'epsilon'"),
    ("epsilon string", dict(epsilon="1"), X_OK, Y_OK, TypeError, "'epsilon'"),
    ("delta one", dict(delta=1.0), X_OK, Y_OK, ValueError, "'delta'"),
    ("delta negative", dict(delta=-1e-5), X_OK, Y_OK, ValueError, "'delta'"),
    ("data_norm zero", dict(data_norm=0.0), X_OK, Y_OK, ValueError, "'data_norm'"),
    ("data_norm None", dict(data_norm=None), X_OK, Y_OK, ValueError, "data_norm=None"),
    ("huber_h zero", dict(loss="huber", huber_h=0.0), X_OK, Y_OK, ValueError, "'huber_h'"),
    ("unknown loss", dict(loss="hinge"), X_OK, Y_OK, ValueError, "'loss'"),
    ("unknown relation", dict(neighboring="swap"), X_OK, Y_OK, ValueError, "'neighboring'"),
    ("C zero", dict(C=0.0), X_OK, Y_OK, ValueError, "'C'"),
    ("jacobian share one", dict(eps_jacobian_frac=1.0), X_OK, Y_OK, ValueError,
     "'eps_jacobian_frac'"),
    ("max_iter zero", dict(max_iter=0), X_OK, Y_OK, ValueError, "'max_iter'"),
    ("string features", dict(), np.array([["a", "b", "c"]] * 30, dtype=object), Y_OK,
     ValueError, "could not convert"),
]
CASES[0][2][3, 1] = np.nan


@pytest.mark.parametrize("name, params, X, y, error, match", CASES, ids=[c[0] for c in CASES])
def test_bad_input_raises_before_noise(name, params, X, y, error, match):
    rng = np.random.default_rng(42)
    before = rng.bit_generator.state
    with pytest.raises(error, match=match):
        ObjPertLogisticRegression(random_state=rng, **params).fit(X, y)
    assert rng.bit_generator.state == before, "noise was drawn before the error"


def test_data_norm_none_message_explains_the_choice():
    with pytest.raises(ValueError, match="public bound") as info:
        ObjPertLogisticRegression(data_norm=None).fit(X_OK, Y_OK)
    assert "voids the privacy guarantee" in str(info.value)


def test_sparse_input_equals_dense():
    X = sp.random(60, 8, density=0.3, random_state=0, format="csr") * 3
    y = np.arange(60) % 2
    dense = ObjPertLogisticRegression(random_state=1).fit(X.toarray(), y)
    sparse = ObjPertLogisticRegression(random_state=1).fit(X, y)
    assert_allclose(sparse.coef_, dense.coef_, atol=1e-9)
    assert_allclose(sparse.decision_function(X), dense.decision_function(X.toarray()), atol=1e-9)


def test_predict_side_errors():
    from sklearn.exceptions import NotFittedError
    est = ObjPertLogisticRegression(random_state=0)
    with pytest.raises(NotFittedError):
        est.predict(X_OK)
    est.fit(X_OK, Y_OK)
    with pytest.raises(ValueError, match="features"):
        est.predict(X_OK[:, :2])
