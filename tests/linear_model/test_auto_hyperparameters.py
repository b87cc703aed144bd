"""The public rules behind C="auto" and learning_rate="auto", against hand computations."""

import numpy as np
import pytest
from sklearn.datasets import make_classification

from skdp import DPSGDClassifier, ObjPertLogisticRegression, OutputPertSVM
from skdp.accounting import analytic_gaussian_sigma
from skdp.base import get_privacy_tags
from skdp.mechanisms import draw_noise
from skdp.mechanisms._output_perturbation import OutputPertCalibration, coordinate_noise_std
from skdp.utils._random import noise_generator

R2 = 2.0  # data_norm 1 and the intercept column at scaling 1


def _data(n, n_classes=2, seed=0):
    X, y = make_classification(n_samples=n, n_features=5, n_informative=3,
                               n_classes=n_classes, random_state=seed)
    return X / np.linalg.norm(X, axis=1).max(), y


@pytest.mark.parametrize("epsilon, delta, neighboring, n_classes, m, r, c, share", [
    (1.0, 0.0, "add_remove", 2, 1, 1, 0.25, 0.05),
    (0.1, 0.0, "replace", 2, 2, 1, 0.25, 0.05),
    (1.0, 1e-5, "add_remove", 2, 1, 1, 0.25, 0.05),
    # multinomial: rank K - 1, softmax curvature, a share by noise law
    (5.0, 0.0, "add_remove", 3, 1, 2, 0.5, 0.025),
    (1.0, 1e-5, "add_remove", 3, 1, 2, 0.5, 0.2),
])
def test_objpert_auto_C_gives_the_jacobian_term_its_share(epsilon, delta, neighboring,
                                                          n_classes, m, r, c, share):
    X, y = _data(120, n_classes)
    est = ObjPertLogisticRegression(epsilon=epsilon, delta=delta, neighboring=neighboring,
                                    random_state=0)
    solutions = est._releases(X, y)
    jacobian = m * r * np.log1p(est.C_ * c * R2)
    assert jacobian == pytest.approx(share * epsilon, rel=1e-12)
    if delta == 0:  # no extra ridge needed (the Gaussian variant always adds one)
        assert all(s.ridge == 1.0 for s in solutions)
    assert all(s.C == est.C_ for s in solutions)


def test_auto_C_reads_no_data():
    for Est in (ObjPertLogisticRegression, OutputPertSVM):
        small = Est(epsilon=0.7, random_state=0).fit(*_data(60, seed=1))
        large = Est(epsilon=0.7, random_state=0).fit(*_data(400, seed=2))
        assert small.C_ == large.C_
        assert Est(epsilon=0.7, C=0.3, random_state=0).fit(*_data(60)).C_ == 0.3


def test_auto_C_without_noise_is_scikit_learns_default():
    for Est in (ObjPertLogisticRegression, OutputPertSVM):
        assert Est(epsilon=np.inf).fit(*_data(60)).C_ == 1.0


@pytest.mark.parametrize("params, expected", [
    # Gamma-norm: coordinate sd sqrt(d + 1) * (1 + 2 tol) C R / epsilon, d = 6
    (dict(epsilon=1.0), 0.2 * 1.0 / (R2 * 1.002 * np.sqrt(7))),
    (dict(epsilon=2.0, neighboring="replace"), 0.2 * 2.0 / (R2 * 1.002 * 2 * np.sqrt(7))),
    # Laplace: scale sqrt(d) (1 + 2 tol) C R / epsilon, coordinate sd sqrt(2) scale
    (dict(epsilon=1.0, noise="laplace"), 0.2 / (R2 * 1.002 * np.sqrt(6) * np.sqrt(2))),
    # analytic Gaussian: sd sigma(epsilon, delta, (1 + 2 tol) C R)
    (dict(epsilon=1.0, delta=1e-5), 0.2 / (np.sqrt(R2) * analytic_gaussian_sigma(
        1.0, 1e-5, 1.002 * np.sqrt(R2)))),
    # random features (norm at most 1, with the intercept R^2 = 2): margin noise 0.6
    (dict(epsilon=1.0, kernel="rbf", n_components=10), 0.6 / (R2 * 1.002 * np.sqrt(12))),
])
def test_outpert_auto_C_puts_a_fixed_noise_on_the_margin(params, expected):
    est = OutputPertSVM(random_state=0, **params).fit(*_data(80))
    assert est.C_ == pytest.approx(expected, rel=1e-9)


def test_outpert_auto_C_over_one_vs_rest_problems():
    """Each of K problems has epsilon / K, and the margin noise aimed for is 0.2 / (2 K)."""
    ovr = OutputPertSVM(epsilon=3.0, random_state=0).fit(*_data(90, n_classes=3))
    binary = OutputPertSVM(epsilon=1.0, random_state=0).fit(*_data(90))
    assert ovr.C_ == pytest.approx(binary.C_ / 6, rel=1e-12)


@pytest.mark.parametrize("noise, scale", [("gamma_norm", 1.5), ("laplace", 0.7),
                                          ("gaussian", 2.0)])
def test_coordinate_noise_std_is_the_sampler_s(noise, scale):
    dim, n = 6, 20_000
    rng = np.random.default_rng(4)
    squares = np.array([draw_noise(noise, dim, rng).vector(scale) for _ in range(n)]) ** 2
    per_draw = squares.mean(axis=1)
    estimate, se = per_draw.mean(), per_draw.std(ddof=1) / np.sqrt(n)
    sd = coordinate_noise_std(OutputPertCalibration(noise, scale, 0.0), dim)
    assert abs(estimate - sd**2) < 5 * se


@pytest.mark.parametrize("n, params", [(300, dict(epsilon=0.2)),
                                       (300, dict(epsilon=1.0, sample_rate=0.2, epochs=2)),
                                       (20_000, dict(epsilon=5.0))])
def test_auto_learning_rate_reads_the_dp_count(n, params):
    X, y = _data(n)
    est = DPSGDClassifier(epochs=params.pop("epochs", 3), random_state=5, **params).fit(X, y)
    count_rng = noise_generator(5).spawn(3)[0]
    # the intercept correction (a binary logistic default) shares the count's Gaussian:
    # the count then carries sqrt(3) times count_noise_std_ (docs/privacy/dpsgd.rst)
    side = np.sqrt(3.0) if est.intercept_correction else 1.0
    n_tilde = n + side * est.count_noise_std_ * count_rng.standard_normal()
    noise_sd = est.noise_multiplier_ * est.max_grad_norm / max(est.sample_rate_ * n_tilde, 1)
    assert est.learning_rate_ == pytest.approx(min(64.0, 0.026 / noise_sd), rel=1e-12)
    given = DPSGDClassifier(epochs=1, learning_rate=2.5, random_state=5).fit(X, y)
    assert given.learning_rate_ == 2.5


def test_auto_values_without_a_derivative_say_so():
    """``fit_release`` of output perturbation and DP-SGD differentiates at a fixed ``C``
    or step size; "auto" moves them with epsilon, so the tags say so and
    EpsilonForUtility's analytic mode falls back to common-noise differences. Objective
    perturbation differentiates through ``C="auto"`` (test_objpert_derivative.py)."""
    assert get_privacy_tags(ObjPertLogisticRegression()).epsilon_derivative
    for auto, fixed in ((OutputPertSVM(), OutputPertSVM(C=0.1)),
                        (DPSGDClassifier(), DPSGDClassifier(learning_rate=4.0))):
        assert not get_privacy_tags(auto).epsilon_derivative
        assert get_privacy_tags(fixed).epsilon_derivative
        with pytest.raises(NotImplementedError):
            auto.fit_release(*_data(50))
