"""Row weights (``sample_weight``, ``class_weight``, ``max_sample_weight``) of the
perturbation estimators: calibration at the largest weight, non-private oracles,
clipping, refusals before any noise, and an exact replay of the privacy loss."""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.optimize import minimize
from scipy.special import expit
from sklearn.datasets import make_regression
from sklearn.linear_model import Lasso, LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer
from sklearn.svm import LinearSVC

import skdp.linear_model._napp._estimators as napp_module
import skdp.linear_model._objective_perturbation as objpert_module
import skdp.linear_model._output_perturbation as outpert_module
from skdp import (DPSGDClassifier, NAPPLasso, NAPPLassoClassifier, ObjPertLogisticRegression,
                  OutputPertSVM, SampleWeightWarning)

W = 3.0


@pytest.fixture
def weighted_classification(unit_ball_classification):
    X, y = unit_ball_classification
    weights = np.random.default_rng(1).uniform(0.0, W, X.shape[0])
    return X, y, weights


def _three_classes(X):
    return np.arange(X.shape[0]) % 3


# -- calibration at the largest weight, by hand ------------------------------------------

def test_objpert_calibration_is_the_unweighted_one_at_C_times_W(weighted_classification):
    X, y, weights = weighted_classification
    C, R = 0.2, np.sqrt(2.0)   # the intercept column: R = sqrt(1 + 1)
    for delta in (0.0, 1e-5):
        kw = dict(epsilon=1.0, delta=delta, data_norm=1.0, random_state=0)
        weighted = ObjPertLogisticRegression(C=C, max_sample_weight=W, **kw)._releases(
            X, y, sample_weight=weights)[0].calibration
        plain = ObjPertLogisticRegression(C=C * W, **kw)._releases(X, y)[0].calibration
        assert_allclose(weighted.noise_scale, plain.noise_scale, rtol=1e-15)
        assert_allclose(weighted.extra_ridge, plain.extra_ridge, rtol=1e-15)
    # pure, add/remove: scale zeta / (epsilon_m - kappa) with zeta = C W R and kappa =
    # log(1 + c C W R^2), c = 1/4, epsilon_m = 0.99 epsilon (the cover takes 1 %)
    pure = ObjPertLogisticRegression(C=C, max_sample_weight=W, epsilon=1.0, data_norm=1.0,
                                     random_state=0)._releases(X, y, sample_weight=weights)[0]
    kappa = np.log1p(0.25 * C * W * R**2)
    assert kappa <= 0.5 * 0.99   # no extra ridge at these values
    assert_allclose(pure.calibration.noise_scale, C * W * R / (0.99 - kappa), rtol=1e-12)
    assert pure.calibration.extra_ridge == 0.0


def test_objpert_auto_C_divides_by_the_weight_bound(weighted_classification):
    X, y, weights = weighted_classification
    kw = dict(epsilon=1.0, data_norm=1.0, random_state=0)
    plain = ObjPertLogisticRegression(**kw).fit(X, y)
    weighted = ObjPertLogisticRegression(max_sample_weight=W, **kw).fit(
        X, y, sample_weight=weights)
    assert_allclose(weighted.C_, plain.C_ / W, rtol=1e-12)
    assert weighted.weight_bound_ == W and plain.weight_bound_ == 1.0


def test_output_perturbation_sensitivity_scales_with_the_weight_bound(weighted_classification):
    X, y, weights = weighted_classification
    R = np.sqrt(2.0)
    for loss in ("hinge", "logistic"):
        kw = dict(epsilon=1.0, data_norm=1.0, loss=loss, random_state=0)
        weighted = OutputPertSVM(C=0.1, max_sample_weight=W, **kw)._releases(
            X, y, sample_weight=weights)[0]
        plain = OutputPertSVM(C=0.1 * W, **kw)._releases(X, y)[0]
        assert_allclose(weighted.base_sensitivity, 0.1 * W * R, rtol=1e-12)
        assert_allclose(weighted.noise_scale(), plain.noise_scale(), rtol=1e-15)
    replace = OutputPertSVM(C=0.1, max_sample_weight=W, neighboring="replace", epsilon=1.0,
                            data_norm=1.0, random_state=0)._releases(X, y, sample_weight=weights)
    assert_allclose(replace[0].base_sensitivity, 2 * 0.1 * W * R, rtol=1e-12)


def test_napp_constants_scale_with_the_weight_bound(weighted_classification):
    X, y, weights = weighted_classification
    kw = dict(alpha=2.0, epsilon=1.0, data_norm=1.0, random_state=0)
    plain = NAPPLassoClassifier(**kw).fit(X, y).privacy_report_
    weighted = NAPPLassoClassifier(max_sample_weight=W, **kw).fit(
        X, y, sample_weight=weights).privacy_report_
    assert_allclose(weighted["sensitivity"], W * np.sqrt(2.0), rtol=1e-12)
    for name in ("sensitivity", "curvature", "noise_scale"):   # all linear in G, beta_H
        assert_allclose(weighted[name], W * plain[name], rtol=1e-12)
    assert weighted["eps_noise"] == plain["eps_noise"]


def test_class_weight_sets_the_bound(weighted_classification):
    X, y, weights = weighted_classification
    est = ObjPertLogisticRegression(class_weight={0: 2.0, 1: 0.5}, max_sample_weight=W,
                                    data_norm=1.0, random_state=0)
    assert est.fit(X, y).weight_bound_ == 2.0            # no sample_weight: records weigh 1
    assert est.fit(X, y, sample_weight=weights).weight_bound_ == 2.0 * W
    # a class missing from the dict weighs 1
    assert est.set_params(class_weight={0: 0.5}).fit(X, y).weight_bound_ == 1.0


# -- the non-private weighted solution ------------------------------------------------------

def test_infinite_epsilon_objpert_is_sklearns_weighted_fit(weighted_classification):
    X, y, weights = weighted_classification
    kw = dict(epsilon=np.inf, C=10.0, fit_intercept=False, data_norm=1.0, max_sample_weight=W)
    for labels in (y, _three_classes(X)):   # binary, and the softmax problem
        ours = ObjPertLogisticRegression(**kw).fit(X, labels, sample_weight=weights)
        theirs = LogisticRegression(C=10.0, fit_intercept=False, tol=1e-12).fit(
            X, labels, sample_weight=weights)
        assert_allclose(ours.coef_, theirs.coef_, rtol=1e-6, atol=1e-7)
    class_weight = {0: 2.0, 1: 0.5}
    ours = ObjPertLogisticRegression(class_weight=class_weight, **kw).fit(X, y)
    theirs = LogisticRegression(C=10.0, fit_intercept=False, tol=1e-12,
                                class_weight=class_weight).fit(X, y)
    assert_allclose(ours.coef_, theirs.coef_, rtol=1e-6, atol=1e-7)


def test_infinite_epsilon_objpert_ovr_huber_is_an_independent_minimiser(
        weighted_classification):
    X, y, weights = weighted_classification
    C, h = 5.0, 0.5
    ours = ObjPertLogisticRegression(epsilon=np.inf, C=C, loss="huber", fit_intercept=False,
                                     data_norm=1.0, max_sample_weight=W).fit(
        X, y, sample_weight=weights)

    def objective(theta):
        m = (2.0 * y - 1.0) * (X @ theta)
        f = np.where(m > 1 + h, 0.0, np.where(m < 1 - h, 1.0 - m, (1 + h - m)**2 / (4 * h)))
        return C * weights @ f + 0.5 * theta @ theta

    reference = minimize(objective, np.zeros(X.shape[1]), method="BFGS",
                         options={"gtol": 1e-10}).x
    assert_allclose(ours.coef_.ravel(), reference, rtol=1e-5, atol=1e-6)


def test_infinite_epsilon_output_perturbation_is_sklearns_weighted_fit(weighted_classification):
    X, y, weights = weighted_classification
    weights = weights.copy()
    weights[:50] = 0.0   # rows of weight 0 leave the problem
    # certified within tol * C W R = 4e-5 of the exact minimiser
    kw = dict(epsilon=np.inf, C=10.0, fit_intercept=False, data_norm=1.0, max_sample_weight=W,
              tol=1e-6)
    hinge = OutputPertSVM(**kw).fit(X, y, sample_weight=weights)
    svc = LinearSVC(C=10.0, loss="hinge", fit_intercept=False, tol=1e-12,
                    max_iter=1_000_000).fit(X, y, sample_weight=weights)
    assert_allclose(hinge.coef_, svc.coef_, atol=1e-4)
    for labels in (y, _three_classes(X)):
        ours = OutputPertSVM(loss="logistic", **kw).fit(X, labels, sample_weight=weights)
        theirs = LogisticRegression(C=10.0, fit_intercept=False, tol=1e-12).fit(
            X, labels, sample_weight=weights)
        assert_allclose(ours.coef_, theirs.coef_, atol=1e-4)


def test_infinite_epsilon_napp_is_sklearns_weighted_fit(weighted_classification):
    X, y, weights = weighted_classification
    alpha = 2.0
    clf = NAPPLassoClassifier(epsilon=np.inf, alpha=alpha, data_norm=1.0, fit_intercept=False,
                              max_sample_weight=W).fit(X, y, sample_weight=weights)
    l1 = LogisticRegression(C=1 / alpha, l1_ratio=1.0, solver="liblinear", fit_intercept=False,
                            tol=1e-12, max_iter=100_000).fit(X, y, sample_weight=weights)
    assert_allclose(clf.coef_, l1.coef_, rtol=1e-5, atol=1e-6)
    Xr, yr = make_regression(n_samples=300, n_features=5, noise=1.0, random_state=0)
    Xr /= np.linalg.norm(Xr, axis=1).max()
    yr /= np.abs(yr).max()
    reg = NAPPLasso(epsilon=np.inf, alpha=alpha, data_norm=1.0, y_bound=1.0, coef_bound=100.0,
                    fit_intercept=False, max_sample_weight=W).fit(Xr, yr, sample_weight=weights)
    # sklearn's Lasso: sum_i s_i r_i^2 / (2 sum_i s_i) + a ||theta||_1
    lasso = Lasso(alpha=alpha / weights.sum(), fit_intercept=False, tol=1e-14,
                  max_iter=1_000_000).fit(Xr, yr, sample_weight=weights)
    assert_allclose(reg.coef_, lasso.coef_, rtol=1e-5, atol=1e-7)


# -- clipping, equivalences -----------------------------------------------------------------

@pytest.mark.parametrize("make", [
    lambda: ObjPertLogisticRegression(epsilon=1.0, data_norm=1.0, random_state=0),
    lambda: OutputPertSVM(epsilon=1.0, C=0.5, data_norm=1.0, random_state=0),
    lambda: NAPPLassoClassifier(alpha=2.0, epsilon=1.0, data_norm=1.0, random_state=0),
])
def test_weights_above_the_bound_are_clipped(make, weighted_classification):
    X, y, weights = weighted_classification
    high, clipped = weights.copy(), weights.copy()
    high[:5], clipped[:5] = 10.0, W        # a replay: the same seed, the same noise
    a = make().set_params(max_sample_weight=W).fit(X, y, sample_weight=high)
    b = make().set_params(max_sample_weight=W).fit(X, y, sample_weight=clipped)
    assert_array_equal(a.coef_, b.coef_)
    assert_array_equal(a.intercept_, b.intercept_)
    c = make().set_params(max_sample_weight=W).fit(X, y, sample_weight=weights)
    assert not np.array_equal(a.coef_, c.coef_)   # the weights do move the model


def test_unit_weights_are_the_unweighted_fit(weighted_classification):
    X, y, _ = weighted_classification
    for est in (ObjPertLogisticRegression(epsilon=1.0, data_norm=1.0, random_state=0),
                OutputPertSVM(epsilon=1.0, C=0.5, data_norm=1.0, random_state=0),
                NAPPLassoClassifier(alpha=2.0, epsilon=1.0, data_norm=1.0, random_state=0)):
        plain = est.fit(X, y).coef_.copy()
        ones = est.fit(X, y, sample_weight=np.ones(len(y))).coef_
        assert_allclose(ones, plain, rtol=1e-7, atol=1e-9)
        assert est.epsilon_spent_ == 1.0


# -- the default bound's warning, from the parameters alone ----------------------------------

WEIGHTED_ESTIMATORS = [
    lambda: ObjPertLogisticRegression(epsilon=1.0, data_norm=1.0, random_state=0),
    lambda: OutputPertSVM(epsilon=1.0, C=0.5, data_norm=1.0, random_state=0),
    lambda: NAPPLassoClassifier(alpha=2.0, epsilon=1.0, data_norm=1.0, random_state=0),
    lambda: DPSGDClassifier(epsilon=1.0, data_norm=1.0, epochs=2, random_state=0),
]


def _weight_warnings(est, X, y, **fit_params):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X, y, **fit_params)
    return [str(w.message) for w in caught if issubclass(w.category, SampleWeightWarning)]


@pytest.mark.parametrize("make", WEIGHTED_ESTIMATORS)
def test_default_weight_bound_warns_whatever_the_weights(make, weighted_classification):
    X, y, weights = weighted_classification
    above = _weight_warnings(make(), X, y, sample_weight=weights)   # some weights above 1
    below = _weight_warnings(make(), X, y, sample_weight=weights / W)   # all in [0, 1]
    # one warning per fit, the same text whether or not a weight is clipped: it reads
    # the parameter, never the weights
    assert len(above) == 1 and above == below
    assert "max_sample_weight at its default 1.0" in above[0]
    assert "every weight above 1 is lowered to 1" in above[0]


@pytest.mark.parametrize("make", WEIGHTED_ESTIMATORS)
def test_no_weight_warning_without_weights_or_with_a_bound(make, weighted_classification):
    X, y, weights = weighted_classification
    assert _weight_warnings(make(), X, y) == []
    assert _weight_warnings(make().set_params(max_sample_weight=W), X, y,
                            sample_weight=weights) == []


def test_no_weight_warning_for_persons_alone(weighted_classification):
    X, y, _ = weighted_classification
    est = ObjPertLogisticRegression(epsilon=1.0, data_norm=1.0, random_state=0)
    assert _weight_warnings(est, X, y, groups=np.arange(len(y)) // 2) == []


def test_regressor_warns_on_the_default_weight_bound():
    X, y = make_regression(n_samples=300, n_features=5, noise=1.0, random_state=0)
    X /= np.linalg.norm(X, axis=1).max()
    y /= np.abs(y).max()
    est = NAPPLasso(epsilon=1.0, alpha=2.0, data_norm=1.0, y_bound=1.0, coef_bound=100.0,
                    random_state=0)
    assert len(_weight_warnings(est, X, y, sample_weight=np.full(len(y), 0.5))) == 1


# -- refusals, before any noise ---------------------------------------------------------------

def _no_noise(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the noise stream was opened")
    for module in (objpert_module, outpert_module, napp_module):
        monkeypatch.setattr(module, "noise_generator", refuse)


@pytest.mark.parametrize("Est", [ObjPertLogisticRegression, OutputPertSVM, NAPPLassoClassifier])
def test_balanced_is_refused_before_any_data_is_read(Est, monkeypatch):
    _no_noise(monkeypatch)
    with pytest.raises(ValueError, match="class_weight='balanced' is refused.*private labels"
                                         ".*explicit dict"):
        Est(class_weight="balanced").fit("not even an array", None)


@pytest.mark.parametrize("bad", [-1.0, np.nan, np.inf])
def test_malformed_weights_are_refused_before_any_noise(bad, weighted_classification,
                                                        monkeypatch):
    X, y, weights = weighted_classification
    weights = weights.copy()
    weights[3] = bad
    _no_noise(monkeypatch)
    for est in (ObjPertLogisticRegression(data_norm=1.0), OutputPertSVM(data_norm=1.0),
                NAPPLassoClassifier(data_norm=1.0)):
        with pytest.raises(ValueError, match="sample_weight|NaN|infinity|Negative"):
            est.fit(X, y, sample_weight=weights)
        with pytest.raises(ValueError, match="sample_weight|shape"):
            est.fit(X, y, sample_weight=weights[:-1])


def test_class_weight_labels_outside_the_label_set_are_refused(weighted_classification,
                                                               monkeypatch):
    X, y, _ = weighted_classification
    _no_noise(monkeypatch)
    with pytest.raises(ValueError, match="not in class_weight"):
        ObjPertLogisticRegression(class_weight={0: 1.0, 7: 2.0}, data_norm=1.0).fit(X, y)
    with pytest.raises(ValueError, match="positive"):
        OutputPertSVM(class_weight={0: -1.0}, data_norm=1.0).fit(X, y)


def test_weights_on_a_dask_array_are_refused_by_name(weighted_classification):
    da = pytest.importorskip("dask.array")
    X, y, weights = weighted_classification
    dX, dy = da.from_array(X, chunks=100), da.from_array(y, chunks=100)
    for est in (ObjPertLogisticRegression(data_norm=1.0),
                OutputPertSVM(loss="logistic", data_norm=1.0),
                NAPPLassoClassifier(data_norm=1.0)):
        with pytest.raises(ValueError, match="sample_weight and class_weight are not "
                                             "supported on a dask array"):
            est.fit(dX, dy, sample_weight=weights)
        with pytest.raises(ValueError, match="not supported on a dask array"):
            est.set_params(class_weight={0: 2.0}).fit(dX, dy)


# -- pipelines, pandas, the private norm ------------------------------------------------------

def test_pipeline_pandas_and_private_norm(weighted_classification):
    pd = pytest.importorskip("pandas")
    X, y, weights = weighted_classification
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])])
    pipe = make_pipeline(FunctionTransformer(), ObjPertLogisticRegression(
        epsilon=20.0, data_norm="private", max_sample_weight=W, random_state=0))
    pipe.fit(frame, pd.Series(y), objpertlogisticregression__sample_weight=pd.Series(weights))
    est = pipe[-1]
    assert est.epsilon_spent_ == 20.0 and est.data_norm_epsilon_ == pytest.approx(2.0)
    assert list(est.feature_names_in_) == list(frame.columns)
    # the bound is the unweighted quantile: same seed, same data_norm_ without weights
    plain = ObjPertLogisticRegression(epsilon=20.0, data_norm="private",
                                      random_state=0).fit(frame, y)
    assert est.data_norm_ == plain.data_norm_
    assert pipe.score(frame, y) > 0.7


# -- an exact replay of the privacy loss ------------------------------------------------------

def test_replayed_privacy_loss_of_a_largest_weight_record_is_within_epsilon(
        weighted_classification):
    """Rebuild, from a released model, the noise that a neighbouring dataset (one more
    record of the largest weight ``W``, chosen to push the noise's norm as far as it
    can) would have needed to give the same output, and bound the privacy loss
    exactly as the proof does: the noise densities' log-ratio plus the log-Jacobian.
    It must stay within the mechanism's epsilon, and would not if the noise were
    calibrated for weight 1."""
    X, y, weights = weighted_classification
    C, epsilon = 0.5, 1.0
    est = ObjPertLogisticRegression(epsilon=epsilon, C=C, fit_intercept=False, data_norm=1.0,
                                    max_sample_weight=W, random_state=0)
    solution = est._releases(X, y, sample_weight=weights)[0]
    theta, scale = solution.minimiser, solution.calibration.noise_scale
    ridge = solution.ridge            # 1 + extra ridge
    signs = 2.0 * y - 1.0
    # the noise the release came from, from the stationarity of the weighted objective
    slopes = -signs * expit(-signs * (X @ theta))
    b = -(C * X.T @ (weights * slopes) + ridge * theta)
    assert_allclose(b, solution.noise, rtol=1e-6, atol=1e-8)
    # the added record: norm 1, label -1, along -b, weight W (its gradient along b)
    x_new, label = -b / np.linalg.norm(b), -1.0
    margin = label * x_new @ theta
    b_new = b - C * W * (-label * expit(-margin)) * x_new
    curvature = weights * expit(signs * (X @ theta)) * expit(-signs * (X @ theta))
    hessian = C * (X.T * curvature) @ X + ridge * np.eye(X.shape[1])
    added = C * W * expit(margin) * expit(-margin)
    log_jacobian = np.log1p(added * x_new @ np.linalg.solve(hessian, x_new))
    noise_term = (np.linalg.norm(b_new) - np.linalg.norm(b)) / scale
    mechanism_epsilon = 0.99 * epsilon
    assert max(noise_term - log_jacobian, log_jacobian - noise_term) <= mechanism_epsilon
    assert noise_term > mechanism_epsilon / W   # calibrated for weight 1: the loss would pass


@pytest.mark.parametrize("delta", [0.0, 1e-5])
def test_weighted_epsilon_derivative_matches_finite_differences(delta, weighted_classification):
    X, y, weights = weighted_classification

    def make(epsilon):
        return ObjPertLogisticRegression(epsilon=epsilon, delta=delta, C=0.5, data_norm=1.0,
                                         max_sample_weight=W, random_state=0)

    h = 1e-5
    for labels in (y, _three_classes(X)):
        release = make(2.0).fit_release(X, labels, sample_weight=weights)
        up = make(2.0 + h).fit(X, labels, sample_weight=weights).coef_
        down = make(2.0 - h).fit(X, labels, sample_weight=weights).coef_
        assert_allclose(release.coef_derivative, (up - down) / (2 * h), atol=1e-7)


def test_weighted_renyi_curve_is_the_unweighted_one_at_C_times_W(weighted_classification):
    X, y, weights = weighted_classification
    kw = dict(epsilon=1.0, delta=1e-5, data_norm=1.0, random_state=0)
    weighted = ObjPertLogisticRegression(C=0.2, max_sample_weight=W, **kw).fit(
        X, y, sample_weight=weights)
    plain = ObjPertLogisticRegression(C=0.2 * W, **kw).fit(X, y)
    assert_allclose(weighted.renyi_curve(), plain.renyi_curve(), rtol=1e-12)
    assert np.all(weighted.renyi_curve()
                  > ObjPertLogisticRegression(C=0.2, **kw).fit(X, y).renyi_curve())


def test_renyi_curve_from_parameters_covers_class_weights(weighted_classification):
    """The accountants of private selection read a rung's curve from its parameters:
    class weights must raise it (here to the curve of the fitted rung, or above)."""
    from skdp.linear_model._objective_perturbation import gaussian_renyi_curve

    X, y, _ = weighted_classification
    kw = dict(epsilon=1.0, delta=1e-5, C=0.2, data_norm=1.0, random_state=0)
    for classes in (None, [0, 1]):
        est = ObjPertLogisticRegression(class_weight={0: 0.5, 1: 4.0}, classes=classes, **kw)
        planned = gaussian_renyi_curve(est, 2)
        fitted = est.fit(X, y).renyi_curve()
        assert np.all(planned >= fitted * (1 - 1e-12))
        assert_allclose(planned, gaussian_renyi_curve(ObjPertLogisticRegression(
            **{**kw, "C": 0.2 * 4.0}), 2), rtol=1e-12)


@pytest.mark.parametrize("make", [
    lambda: ObjPertLogisticRegression(epsilon=1.0, C=0.5, data_norm=0.5, max_sample_weight=W,
                                      random_state=0),
    lambda: OutputPertSVM(epsilon=1.0, C=0.5, data_norm=0.5, max_sample_weight=W,
                          random_state=0),
    lambda: NAPPLassoClassifier(epsilon=1.0, alpha=2.0, data_norm=0.5, max_sample_weight=W,
                                random_state=0),
    lambda: NAPPLassoClassifier(epsilon=1.0, alpha=2.0, data_norm=0.5, max_sample_weight=W,
                                augmentation="exact_moment", random_state=0),
])
def test_sparse_clipped_rows_with_weights(make, weighted_classification):
    sparse = pytest.importorskip("scipy.sparse")
    X, y, weights = weighted_classification
    X = np.where(X < 0.1, 0.0, X)      # rows of norm up to 1, clipped to 0.5
    dense = make().fit(X, y, sample_weight=weights)
    csr = make().fit(sparse.csr_matrix(X), y, sample_weight=weights)
    assert_allclose(csr.coef_, dense.coef_, atol=1e-12)
    if getattr(dense, "augmentation", "expected") != "expected":
        # the pseudo-rows only warm-start the solver: the release is the same minimiser
        expected = make().set_params(augmentation="expected").fit(X, y, sample_weight=weights)
        assert_allclose(dense.coef_, expected.coef_, atol=1e-6)


@pytest.mark.parametrize("loss", ["hinge", "logistic"])
def test_a_largest_weight_record_moves_the_minimiser_within_the_calibrated_sensitivity(
        loss, weighted_classification):
    """Output perturbation's noise is calibrated to ``C W R``: adding one record of
    weight ``W`` (on the wrong side of the margin, of norm ``R``) moves the exact
    minimiser by at most that, and by more than the unweighted ``C R``. The other
    rows weigh little, so that their curvature hardly damps the move."""
    X, y, weights = weighted_classification
    weights = 0.01 * weights
    C = 0.1
    kw = dict(epsilon=np.inf, C=C, loss=loss, fit_intercept=False, data_norm=1.0,
              max_sample_weight=W, tol=1e-6)
    before = OutputPertSVM(**kw).fit(X, y, sample_weight=weights).coef_.ravel()
    x_new = -before / np.linalg.norm(before)       # norm R = 1, against the model
    after = OutputPertSVM(**kw).fit(np.vstack([X, x_new]), np.append(y, 1),
                                    sample_weight=np.append(weights, W)).coef_.ravel()
    sensitivity = OutputPertSVM(**{**kw, "epsilon": 1.0}, random_state=0)._releases(
        X, y, sample_weight=weights)[0].base_sensitivity
    moved = np.linalg.norm(after - before)
    assert_allclose(sensitivity, C * W)
    assert C < moved <= sensitivity * (1 + 1e-6)
