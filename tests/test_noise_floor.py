"""A cohort too small for its noise is loud, and only from public or private counts.

Every fit sets ``noise_floor_``: the number of rows (persons) whose largest
contributions the noise outweighs with probability 0.99, from public quantities.
The warning compares it with a count the guarantee allows reading: the number of
rows under ``neighboring="replace"`` (public there), or DP-SGD's differentially
private row count. Under add/remove the perturbation estimators have neither, and
stay silent whatever the number of rows.
"""

import math
import warnings

import numpy as np
import pytest
from scipy import stats

from skdp import (DPSGDClassifier, NAPPLasso, NAPPLassoClassifier, NoiseDominanceWarning,
                  ObjPertLogisticRegression, OutputPertSVM, SSPLinearRegression)
from skdp.audit import clopper_pearson
from skdp.linear_model._objective_perturbation import _objective_perturbation
from skdp.linear_model._output_perturbation import _output_perturbation
from skdp.losses import HingeLoss, LogisticLoss, WeightedLoss
from skdp.mechanisms import sample_noise
from skdp.mechanisms._dominance import noise_floor, noise_norm

ESTIMATORS = {
    "ObjPertLogisticRegression": lambda **p: ObjPertLogisticRegression(**p),
    "OutputPertSVM": lambda **p: OutputPertSVM(**p),
    "NAPPLassoClassifier": lambda **p: NAPPLassoClassifier(alpha=2.0, **p),
    "NAPPLasso": lambda **p: NAPPLasso(alpha=5.0, y_bound=10.0, coef_bound=10.0, **p),
    "SSPLinearRegression": lambda **p: SSPLinearRegression(y_bound=10.0, **p),
}
REGRESSORS = ("NAPPLasso", "SSPLinearRegression")


def _data(n, d=20, seed=0, regression=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = X @ np.linspace(-1, 1, d) if regression else (X[:, 0] > 0).astype(int)
    if not regression:
        y[:2] = [0, 1]
    return X, y


def _dominance(make, X, y, **fit_params):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = make().fit(X, y, **fit_params)
    messages = [str(w.message) for w in caught if issubclass(w.category, NoiseDominanceWarning)]
    return model, messages


@pytest.mark.parametrize("law", ["gamma_norm", "gaussian", "laplace"])
def test_noise_norm_quantile_is_exceeded_with_its_certainty(law):
    """The sampler's norms fall below the 0.99 quantile in about 1 % of draws
    (Laplace: at most, its quantile being a lower bound), by Clopper-Pearson."""
    dim, scale, n = 12, 0.7, 20000
    rng = np.random.default_rng(3)
    norms = np.linalg.norm([sample_noise(law, dim, scale, rng) for _ in range(n)], axis=1)
    below = int(np.sum(norms < noise_norm(law, dim, scale, certainty=0.99)))
    lower, upper = clopper_pearson(below, n, 1e-4)
    assert lower <= 0.01
    if law != "laplace":
        assert 0.01 <= upper
    mean = noise_norm(law, dim, scale)
    tolerance = 5 * norms.std() / math.sqrt(n)
    if law == "laplace":   # the root mean square: above the mean norm
        assert mean >= norms.mean() - tolerance
    else:
        assert abs(norms.mean() - mean) <= tolerance


def test_noise_floor_is_the_quantile_over_the_record_bound():
    assert noise_floor("gamma_norm", 10, 2.0, 4.0) == pytest.approx(
        stats.gamma.ppf(0.01, 10, scale=2.0) / 4.0)
    assert noise_floor("gaussian", 10, 2.0, 4.0, certainty=0.9) == pytest.approx(
        2.0 * stats.chi.ppf(0.1, 10) / 4.0)


@pytest.mark.parametrize("weighted", [False, True])
def test_output_perturbation_record_bound_bounds_the_minimiser(weighted):
    """The floor rests on ``||theta*|| <= n G``: checked on the solver's minimiser,
    with row weights up to W (the bound then carries W)."""
    X, y = _data(40, d=6)
    X = np.hstack([X, np.ones((40, 1))]) / math.sqrt(2)
    signs = np.where(y == 1, 1.0, -1.0)
    loss, targets = HingeLoss(), signs
    if weighted:
        weights = np.random.default_rng(1).uniform(0, 3.0, size=40)
        loss, targets = WeightedLoss(loss, 3.0), np.column_stack([signs, weights])
    solution = _output_perturbation(X, targets, loss, C=50.0, epsilon=1.0, delta=0.0,
                                    neighboring="add_remove", row_norm=1.0, n_problems=1,
                                    tol=1e-6, max_iter=1000, rng=np.random.default_rng(0))
    assert solution.record_bound == pytest.approx(50.0 * (3.0 if weighted else 1.0))
    assert np.linalg.norm(solution.theta_star) <= 40 * solution.record_bound
    # C large: the minimiser's norm is a sizeable share of the bound, so a bound
    # missing C or W would fail
    assert np.linalg.norm(solution.theta_star) > 0.05 * 40 * solution.record_bound / 50.0


def test_objective_perturbation_data_gradient_is_within_the_record_bound():
    """At the solution, ``(1 + Delta) theta + b`` is minus the data's gradient sum:
    its norm is at most ``n`` record bounds, so on fewer rows than the floor the noise
    is longer (checked here on 5 rows, below the floor)."""
    X, y = _data(5, d=30)
    signs = np.where(y == 1, 1.0, -1.0)
    solution = _objective_perturbation(X, signs, LogisticLoss(), C=2.0, epsilon=0.5,
                                       delta=0.0, neighboring="add_remove",
                                       delta_rule="kifer", row_norm=1.0, tol=1e-10,
                                       max_iter=200, rng=np.random.default_rng(0))
    data_gradient = solution.ridge * solution.minimiser + solution.noise
    assert np.linalg.norm(data_gradient) <= 5 * solution.record_bound + 1e-8
    assert solution.record_bound == pytest.approx(2.0)
    assert solution.noise_floor() > 5
    assert np.linalg.norm(solution.noise) > np.linalg.norm(data_gradient)


@pytest.mark.parametrize("name", ESTIMATORS)
def test_replace_warns_below_the_floor_and_not_above(name):
    """Under replace the row count is public: the fit compares it with its floor."""
    regression = name in REGRESSORS

    def make():
        return ESTIMATORS[name](epsilon=0.2, data_norm=1.0, neighboring="replace",
                                random_state=0)

    few, messages = _dominance(make, *_data(8, regression=regression))
    assert few.noise_floor_ > 8
    assert len(messages) == 1 and "this fit has 8 rows" in messages[0]
    many = int(4 * few.noise_floor_) + 10
    model, messages = _dominance(make, *_data(many, regression=regression))
    assert messages == [] and model.noise_floor_ == pytest.approx(few.noise_floor_)


def test_replace_with_groups_counts_persons():
    X, y = _data(24)
    make = lambda: ObjPertLogisticRegression(epsilon=0.2, data_norm=1.0,  # noqa: E731
                                             neighboring="replace", random_state=0)
    model, messages = _dominance(make, X, y, groups=np.repeat(np.arange(6), 4))
    assert model.noise_floor_ > 6
    assert len(messages) == 1 and "this fit has 6 persons" in messages[0]


@pytest.mark.parametrize("name", ESTIMATORS)
def test_add_remove_never_reads_the_row_count(name):
    """Under add/remove the number of rows is private and the perturbation estimators
    hold no DP count of it: no warning however few the rows, and the floor is the
    same function of public quantities at any size."""
    regression = name in REGRESSORS

    def make():
        return ESTIMATORS[name](epsilon=0.2, data_norm=1.0, random_state=0)

    few, messages = _dominance(make, *_data(8, regression=regression))
    assert messages == [] and few.noise_floor_ > 8
    many, _ = _dominance(make, *_data(300, regression=regression))
    assert many.noise_floor_ == few.noise_floor_


def test_dpsgd_floor_formula_and_warning_from_its_dp_count():
    """DP-SGD's floor: the steps' summed noise (chi quantile times ``z sqrt(T)``) over
    a unit's expected pull ``q T``; it warns when its DP count's 0.99 upper bound is
    below, and the warning's count is the DP count (never the row count)."""
    def make():
        return DPSGDClassifier(epsilon=1.0, delta=1e-5, data_norm=1.0, epochs=2,
                               count_noise_std=5.0, random_state=0)

    # wide rows, and a count whose noise (accounted) is well below the floor
    few, messages = _dominance(make, *_data(10, d=800))
    z, q, steps = few.noise_multiplier_, few.sample_rate_, few.n_steps_
    expected = stats.chi.ppf(0.01, 801) * z * math.sqrt(steps) / (q * steps)
    assert few.noise_floor_ == pytest.approx(expected)
    assert few.noise_floor_ > 10 + 3 * few.count_noise_std_
    assert len(messages) == 1 and "differentially private row count" in messages[0]
    assert "10 rows" not in messages[0]
    many, messages = _dominance(make, *_data(int(few.noise_floor_ * 3) + 100, d=800))
    assert messages == []
