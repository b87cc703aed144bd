"""A delta too large to protect anyone is loud, without reading the number of rows.

The perturbation estimators warn from ``delta`` alone (above ``LARGE_DELTA``);
DP-SGD also compares ``delta`` with ``1 / n_tilde``, its differentially private row
count, which its guarantee already covers.
"""

import warnings

import numpy as np
import pytest
from sklearn.datasets import make_classification

from skdp import (DPSGDClassifier, LargeDeltaWarning, NAPPLasso, NAPPLassoClassifier,
                  ObjPertLogisticRegression, OutputPertSVM, SSPLinearRegression)
from skdp.accounting._dpsgd import default_count_noise_std
from skdp.base import LARGE_DELTA
from skdp.utils._random import noise_generator

ESTIMATORS = {
    "ObjPertLogisticRegression": lambda **p: ObjPertLogisticRegression(**p),
    "OutputPertSVM": lambda **p: OutputPertSVM(**p),
    "OutputPertSVM-rbf": lambda **p: OutputPertSVM(kernel="rbf", n_components=20, **p),
    "DPSGDClassifier": lambda **p: DPSGDClassifier(epochs=1, **p),
    "NAPPLassoClassifier": lambda **p: NAPPLassoClassifier(alpha=2.0, **p),
    "NAPPLasso": lambda **p: NAPPLasso(alpha=5.0, y_bound=10.0, coef_bound=10.0, **p),
    "SSPLinearRegression": lambda **p: SSPLinearRegression(y_bound=10.0, **p),
}


def _data(name, n):
    X, y = make_classification(n_samples=n, n_features=4, random_state=0)
    X = X / (2 * np.linalg.norm(X, axis=1).max())
    regressor = name in ("NAPPLasso", "SSPLinearRegression")
    return (X, X @ [1.0, -1.0, 0.5, 0.0]) if regressor else (X, y)


def _large_delta_messages(name, n, delta):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ESTIMATORS[name](delta=delta, data_norm=1.0, random_state=0).fit(*_data(name, n))
    return [str(w.message) for w in caught if issubclass(w.category, LargeDeltaWarning)]


@pytest.mark.parametrize("name", list(ESTIMATORS))
@pytest.mark.parametrize("delta", [0.1, 0.5])
def test_large_delta_warns_whatever_the_rows(name, delta):
    """delta 0.1 or 0.5: the same warning on 300 rows as on 30 (the number of rows is
    not read)."""
    on_300, on_30 = (_large_delta_messages(name, n, delta) for n in (300, 30))
    assert len(on_300) == 1 and on_300 == on_30
    assert f"delta={delta:g}" in on_300[0] and f"{1 / delta:.0f} rows" in on_300[0]


@pytest.mark.parametrize("name", ["ObjPertLogisticRegression", "OutputPertSVM",
                                  "NAPPLassoClassifier"])
def test_delta_at_the_threshold_is_quiet(name):
    assert LARGE_DELTA == 1e-3
    assert _large_delta_messages(name, 300, LARGE_DELTA) == []
    assert _large_delta_messages(name, 300, 1e-5) == []


@pytest.mark.parametrize("n, delta", [(2000, 5e-4), (2000, 1e-3), (1900, 5e-4),
                                      (300, 1e-3)])
def test_dpsgd_compares_delta_with_its_private_count(n, delta):
    """The warning fires exactly when ``delta > 1 / n_tilde``, with ``n_tilde`` the
    count the fit releases, replayed from its stream."""
    z = noise_generator(0).spawn(3)[0].standard_normal()
    n_tilde = n + default_count_noise_std(1.0, delta) * z
    messages = _large_delta_messages("DPSGDClassifier", n, delta)
    assert len(messages) == int(delta > 1.0 / n_tilde)
    if messages:
        assert "private row count" in messages[0]
