"""``data_norm``: a forgotten default is loud, and ``"private"`` is accounted.

The warning must come from the parameter alone (never from the data), and the
private bound's spend must sit inside ``epsilon_spent_``: replayed here with the same
seed as a fit at the remaining epsilon with the chosen bound.
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_array_equal
from sklearn.base import clone
from sklearn.datasets import make_classification, make_regression

from skdp import (DataNormWarning, DPSGDClassifier, NAPPLasso, NAPPLassoClassifier,
                  ObjPertLogisticRegression, OutputPertSVM)
from skdp.base import get_privacy_tags
from skdp.linear_model._base import DEFAULT_DATA_NORM, row_norms
from skdp.mechanisms import DATA_NORM_EPSILON_SHARE, private_quantile
from skdp.utils._random import data_norm_generator

X_RAW, Y = make_classification(n_samples=400, n_features=4, random_state=0)
X_RAW = 30.0 * X_RAW                   # raw-feature scale: most rows far outside the ball
X_UNIT = X_RAW / (2 * np.linalg.norm(X_RAW, axis=1).max())   # every row inside the ball
X_REG, Y_REG = make_regression(n_samples=400, n_features=4, noise=1.0, random_state=0)

ESTIMATORS = {
    "ObjPertLogisticRegression": lambda **p: ObjPertLogisticRegression(**p),
    "OutputPertSVM": lambda **p: OutputPertSVM(**p),
    "OutputPertSVM-rbf": lambda **p: OutputPertSVM(kernel="rbf", n_components=20, **p),
    "DPSGDClassifier": lambda **p: DPSGDClassifier(epochs=2, **p),
    "NAPPLassoClassifier": lambda **p: NAPPLassoClassifier(alpha=2.0, **p),
    "NAPPLasso": lambda **p: NAPPLasso(alpha=5.0, y_bound=100.0, coef_bound=100.0,
                                       **{"delta": 1e-6, **p}),
}


def _data(name, X=None):
    if name == "NAPPLasso":
        return (X_REG if X is None else X), Y_REG
    return (X_RAW if X is None else X), Y


def _messages(name, X):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ESTIMATORS[name](random_state=0).fit(*_data(name, X))
    return [str(w.message) for w in caught if issubclass(w.category, DataNormWarning)]


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_default_data_norm_warns_from_the_parameter_alone(name):
    """The same warning for raw rows and for rows that no clipping touches: its firing
    and its text do not depend on the data."""
    estimator = ESTIMATORS[name]()
    assert estimator.get_params()["data_norm"] == "warn"
    assert clone(estimator).get_params()["data_norm"] == "warn"
    raw = _messages(name, None)
    unit = _messages(name, X_UNIT if name != "NAPPLasso" else X_REG / 100.0)
    assert len(raw) == 1 and raw == unit
    assert "data_norm='private'" in raw[0] and "data_norm=1.0" in raw[0]


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_default_is_a_bound_of_one(name):
    """``"warn"`` clips to 1.0: the same model as ``data_norm=1.0``, seed for seed."""
    with pytest.warns(DataNormWarning):
        default = ESTIMATORS[name](random_state=3).fit(*_data(name))
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataNormWarning)
        explicit = ESTIMATORS[name](random_state=3, data_norm=1.0).fit(*_data(name))
    assert default.data_norm_ == explicit.data_norm_ == DEFAULT_DATA_NORM == 1.0
    assert default.data_norm_epsilon_ == explicit.data_norm_epsilon_ == 0.0
    assert_array_equal(default.coef_, explicit.coef_)
    assert default.epsilon_spent_ == explicit.epsilon_spent_


@pytest.mark.parametrize("name", list(ESTIMATORS))
@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_private_bound_is_inside_the_spend(name, epsilon):
    """``data_norm="private"`` at ``epsilon`` is, draw for draw, the exponential-mechanism
    bound at 10 % of epsilon (from its own stream) followed by the fit at the other 90 %
    with that bound; ``epsilon_spent_`` adds the two."""
    X, y = _data(name)
    share = epsilon * DATA_NORM_EPSILON_SHARE
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataNormWarning)
        private = ESTIMATORS[name](epsilon=epsilon, data_norm="private", random_state=7).fit(X, y)
    bound = private_quantile(row_norms(X), share, data_norm_generator(7))
    assert private.data_norm_ == bound
    assert private.data_norm_epsilon_ == share
    replay = ESTIMATORS[name](epsilon=epsilon - share, data_norm=bound, random_state=7).fit(X, y)
    assert_array_equal(private.coef_, replay.coef_)
    assert_array_equal(private.intercept_, replay.intercept_)
    assert private.epsilon_spent_ == replay.epsilon_spent_ + share
    assert private.epsilon_spent_ <= epsilon * (1 + 1e-12)
    assert private.delta_spent_ == replay.delta_spent_
    if hasattr(private, "privacy_report_"):
        assert private.privacy_report_["epsilon_data_norm"] == share
        assert private.privacy_report_["epsilon_spent"] == private.epsilon_spent_
    # prediction clips to the chosen bound, as the fit did
    assert_array_equal(private.predict(X), replay.predict(X))


@pytest.fixture(scope="module")
def adult_raw():
    """Adult's training rows, raw: the six numeric columns unscaled (age up to 90,
    fnlwgt up to 1.5e6), and the one-hot route before clipping."""
    from skdp.datasets import load_adult

    from ..datasets.test_loaders import SHARED

    if SHARED is None:
        pytest.skip("shared Adult files not found")
    frames = load_adult(data_home=SHARED, download_if_missing=False, as_frame=True)
    numeric = frames.X_train.select_dtypes("number")
    onehot = load_adult(data_home=SHARED, download_if_missing=False, data_norm=np.inf)
    return {"numeric": numeric.to_numpy(),
            "age, education, hours": numeric[["age", "education-num",
                                              "hours-per-week"]].to_numpy(),
            "one-hot, unclipped": onehot.X_train}, frames.y_train


@pytest.mark.parametrize("columns", ["numeric", "age, education, hours", "one-hot, unclipped"])
def test_private_bound_on_adult_raw_features(adult_raw, columns):
    """On Adult (30,162 rows) at epsilon 1 (the bound's 0.1): the probability that the
    bound's rank falls outside the 0.85 to 0.95 quantiles is below 1e-30 (computed
    exactly), and a fit's bound (seed fixed) is within 2 % of the 0.9 quantile."""
    from skdp.mechanisms import quantile_intervals

    X, y = adult_raw[0][columns], adult_raw[1]
    norms = row_norms(X)
    n = len(norms)
    _, p = quantile_intervals(norms, 0.1)
    rank = np.arange(n + 1)
    assert p[(rank < 0.85 * n) | (rank > 0.95 * n)].sum() < 1e-30
    clf = ObjPertLogisticRegression(epsilon=1.0, data_norm="private", random_state=0).fit(X, y)
    assert clf.data_norm_ == pytest.approx(np.quantile(norms, 0.9), rel=0.02)
    assert clf.epsilon_spent_ == pytest.approx(1.0) and clf.data_norm_epsilon_ == 0.1


def test_private_bound_on_few_rows_is_loose():
    """400 rows at epsilon 1 (the bound's 0.1): the exponential mechanism cannot tell the
    0.9 quantile from the empty top of the public range, and puts most of its mass
    above the largest norm (the documented limit: ``n * epsilon`` in the thousands)."""
    from skdp.mechanisms import quantile_intervals

    _, p = quantile_intervals(row_norms(X_RAW), 0.1)
    assert p[-1] > 0.5


@pytest.mark.parametrize("name", ["ObjPertLogisticRegression", "DPSGDClassifier",
                                  "NAPPLassoClassifier"])
def test_private_bound_has_no_derivative_in_epsilon(name):
    estimator = ESTIMATORS[name](data_norm="private", random_state=0)
    assert not get_privacy_tags(estimator).epsilon_derivative
    with pytest.raises(NotImplementedError, match="no derivative"):
        estimator.fit_release(*_data(name))


def test_private_bound_refuses_one_run_at_several_epsilons():
    """Noise reduction and DP-GD checkpoints release one fit at several epsilons; the
    bound would be spent once for all of them, which their accounting does not say."""
    svm = OutputPertSVM(noise="laplace", data_norm="private")
    assert not svm._supports_noise_reduction()
    with pytest.raises(ValueError, match="public data_norm"):
        svm._noise_reduction_path(X_RAW, Y)
    gd = DPSGDClassifier(sample_rate=1.0, data_norm="private")
    assert not gd._supports_checkpoints()


@pytest.mark.parametrize("name", ["ObjPertLogisticRegression", "OutputPertSVM",
                                  "DPSGDClassifier", "NAPPLassoClassifier"])
def test_one_class_is_refused_before_the_private_bound(name, monkeypatch):
    """The one-class refusal comes before any stream is created (nor the bound's)."""
    def no_stream(random_state):
        raise AssertionError("a noise stream was created before the refusal")

    monkeypatch.setattr("skdp.linear_model._base.data_norm_generator", no_stream)
    monkeypatch.setattr("skdp.linear_model._base.private_data_norm",
                        lambda *a: no_stream(None))
    with pytest.raises(ValueError, match="one class"):
        ESTIMATORS[name](data_norm="private", random_state=0).fit(X_RAW, np.zeros(400))


X3, Y3 = make_classification(n_samples=600, n_features=5, n_informative=3, n_classes=3,
                             random_state=1)
X3 = 20.0 * X3


@pytest.mark.parametrize("name, params, X, y", [
    ("ObjPertLogisticRegression", dict(), sp.csr_matrix(X_RAW), Y),
    ("DPSGDClassifier", dict(epochs=2), sp.csr_matrix(X_RAW), Y),
    ("ObjPertLogisticRegression", dict(multi_class="multinomial"), X3, Y3),
    ("ObjPertLogisticRegression", dict(multi_class="ovr", delta=1e-6), X3, Y3),
    ("OutputPertSVM", dict(), X3, Y3),
    ("NAPPLassoClassifier", dict(alpha=2.0), X3, Y3),
], ids=["objpert-sparse", "dpsgd-sparse", "objpert-multinomial", "objpert-ovr-gaussian",
        "outputpert-ovr", "napp-ovr"])
def test_private_bound_replays_on_sparse_and_multiclass_fits(name, params, X, y):
    """Sparse rows and several classes: the bound's share comes off the whole budget
    before one-vs-rest splits the rest."""
    Est = {"ObjPertLogisticRegression": ObjPertLogisticRegression,
           "OutputPertSVM": OutputPertSVM, "DPSGDClassifier": DPSGDClassifier,
           "NAPPLassoClassifier": NAPPLassoClassifier}[name]
    private = Est(epsilon=2.0, data_norm="private", random_state=5, **params).fit(X, y)
    bound = private_quantile(row_norms(X), 0.2, data_norm_generator(5))
    assert private.data_norm_ == bound
    replay = Est(epsilon=1.8, data_norm=bound, random_state=5, **params).fit(X, y)
    assert_array_equal(private.coef_, replay.coef_)
    assert private.epsilon_spent_ == pytest.approx(replay.epsilon_spent_ + 0.2, rel=1e-15)


def test_dpsgd_given_noise_multiplier_is_checked_against_the_remaining_budget():
    """A noise multiplier that fits epsilon but not the 90 % left after the bound is
    refused before any noise, and the message says why."""
    from skdp import PrivacyBudgetError
    from skdp.accounting._dpsgd import default_count_noise_std, dpsgd_epsilon

    z = 1.1
    spent = dpsgd_epsilon(z, 0.1, 20, 1e-5, accountant="rdp",
                          count_noise_std=default_count_noise_std(0.9 * 2.0, 1e-5))
    epsilon = spent / 0.95     # spent is within epsilon, above 0.9 epsilon
    clf = DPSGDClassifier(epsilon=epsilon, noise_multiplier=z, epochs=2, data_norm="private")
    with pytest.raises(PrivacyBudgetError, match="private data_norm's share"):
        clf.fit(X_RAW, Y)


def test_private_bound_refuses_a_dask_array():
    da = pytest.importorskip("dask.array")
    X, y = da.from_array(X_RAW, chunks=(100, 4)), da.from_array(Y, chunks=100)
    with pytest.raises(ValueError, match="data_norm='private' needs the rows in memory"):
        ObjPertLogisticRegression(data_norm="private").fit(X, y)
