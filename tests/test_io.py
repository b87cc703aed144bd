"""skdp.io: every public estimator, fitted, round-trips through skops.io."""

import numpy as np
import pytest
from sklearn.datasets import make_classification, make_regression
from sklearn.preprocessing import normalize

import skdp
from skdp.io import load_model, save_model
from tests.test_common import INIT_PARAMS, all_estimators

skops_io = pytest.importorskip("skops.io")


def _data(name):
    if name in ("NAPPLasso", "SSPLinearRegression"):  # the regressors
        X, y = make_regression(n_samples=300, n_features=4, noise=1.0, random_state=0)
        return normalize(X), y / np.abs(y).max()
    X, y = make_classification(n_samples=300, n_features=4, random_state=0)
    return normalize(X), np.where(y == 1, "yes", "no")


FITTED = [(name, Est(**INIT_PARAMS.get(name, {}))) for name, Est in all_estimators()
          if name != "PrivacyLedger"] + [
    ("OutputPertSVM(kernel='rbf')", skdp.OutputPertSVM(kernel="rbf", random_state=0)),
    ("DPSGDClassifier(groups)", skdp.DPSGDClassifier(random_state=0))]


@pytest.mark.parametrize("name, estimator", FITTED, ids=[n for n, _ in FITTED])
def test_fitted_estimator_round_trips_through_skops(name, estimator, tmp_path):
    X, y = _data(name.split("(")[0])
    if "groups" in name:
        estimator.fit(X, y, groups=np.arange(len(y)) // 3)
    else:
        estimator.fit(X, y)
    path = tmp_path / "model.skops"
    save_model(estimator, path)
    loaded = load_model(path)
    np.testing.assert_array_equal(loaded.predict(X), estimator.predict(X))
    assert type(loaded) is type(estimator)
    assert loaded.get_params(deep=False).keys() == estimator.get_params(deep=False).keys()
    if hasattr(estimator, "privacy_report_"):         # the reports travel with the model
        assert repr(loaded.privacy_report_) == repr(estimator.privacy_report_)


def test_an_untrusted_type_is_refused_and_nothing_loaded(tmp_path):
    from sklearn.preprocessing import FunctionTransformer

    path = tmp_path / "model.skops"
    skops_io.dump(FunctionTransformer(func=skdp.io.save_model), path)
    with pytest.raises(ValueError, match="skdp does not trust.*skdp.io.save_model"):
        load_model(path)
