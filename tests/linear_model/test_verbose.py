"""``verbose`` of the perturbation estimators: a line per problem, public quantities only."""

import re
import warnings

import numpy as np
import pytest
from sklearn.datasets import make_classification, make_regression

from skdp import (NAPPLasso, NAPPLassoClassifier, NoiseDominanceWarning,
                  ObjPertLogisticRegression, OutputPertSVM)

CLASSIFIERS = [
    ObjPertLogisticRegression(data_norm=5.0),
    ObjPertLogisticRegression(data_norm=5.0, multi_class="ovr"),
    OutputPertSVM(data_norm=5.0),
    OutputPertSVM(data_norm=5.0, loss="logistic"),
    NAPPLassoClassifier(data_norm=5.0),
]


def _classification(seed, n_samples=150):
    X, y = make_classification(n_samples=n_samples, n_features=4, n_informative=3,
                               n_redundant=0, n_classes=3, random_state=seed)
    return X, y


def _regression(seed, n_samples=150):
    X, y = make_regression(n_samples=n_samples, n_features=4, noise=1.0, random_state=seed)
    return X, y / 50.0


def _regressor():
    return NAPPLasso(alpha=5.0, y_bound=5.0, coef_bound=10.0, data_norm=3.0)


def _lines(estimator, X, y, capsys, verbose):
    capsys.readouterr()
    estimator.set_params(verbose=verbose, random_state=0).fit(X, y)
    return capsys.readouterr().out.splitlines()


def _without_times(lines):
    return [re.sub(r", [0-9.]+ s$", "", line) for line in lines]


@pytest.mark.parametrize("estimator", CLASSIFIERS, ids=repr)
def test_verbose_zero_prints_nothing(estimator, capsys):
    assert _lines(estimator, *_classification(0), capsys, verbose=0) == []
    assert _lines(_regressor(), *_regression(0), capsys, verbose=0) == []


@pytest.mark.parametrize("estimator", CLASSIFIERS, ids=repr)
def test_verbose_prints_one_line_per_problem(estimator, capsys):
    lines = _lines(estimator, *_classification(0), capsys, verbose=1)
    name = type(estimator).__name__
    assert all(line.startswith(f"[{name}] ") and line.endswith(" s") for line in lines)
    multinomial = len(lines) == 2
    assert len(lines) == (2 if multinomial else 4)
    if multinomial:
        assert "softmax problem (3 classes) solved" in lines[1]
    else:
        assert [f"problem {i}/3 (class {i - 1}) solved" in line
                for i, line in zip((1, 2, 3), lines[1:])] == [True] * 3
    assert "epsilon=" in lines[0] and "tol=" in lines[0]


def test_verbose_binary_and_regression(capsys):
    X, y = _classification(0)
    lines = _lines(NAPPLassoClassifier(data_norm=5.0), X, y == 0, capsys, verbose=1)
    assert "binary problem (True against False) solved" in lines[1]
    lines = _lines(_regressor(), *_regression(0), capsys, verbose=1)
    assert len(lines) == 2 and "[NAPPLasso] regression problem solved" in lines[1]


@pytest.mark.parametrize("estimator", CLASSIFIERS, ids=repr)
def test_verbose_lines_do_not_depend_on_the_rows(estimator, capsys):
    """Two datasets of different rows and sizes (neighbouring or not), the same public
    parameters and classes: the lines differ only in their elapsed times (no iteration
    count, objective value or statistic of the rows)."""
    first = _lines(estimator, *_classification(0), capsys, verbose=1)
    second = _lines(estimator, *_classification(1, n_samples=151), capsys, verbose=1)
    assert _without_times(first) == _without_times(second)
    first = _lines(_regressor(), *_regression(0), capsys, verbose=1)
    second = _lines(_regressor(), *_regression(1, n_samples=151), capsys, verbose=1)
    assert _without_times(first) == _without_times(second)


def test_verbose_is_validated():
    X, y = _classification(0)
    with pytest.raises(ValueError, match="verbose"):
        NAPPLassoClassifier(data_norm=5.0, verbose="yes").fit(X, y)
    assert np.all(NAPPLassoClassifier(data_norm=5.0, verbose=True, random_state=0)
                  .fit(X, y).classes_ == [0, 1, 2])


# -- NAPPLassoClassifier on many classes and features: a warning from public quantities --

def _wide_multiclass(n_samples, n_features=784, n_classes=10, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.random((n_samples, n_features))
    return X, np.arange(n_samples) % n_classes


def _noise_message(n_samples=60, **params):
    """The warning's message; the warning is made an error, so the fit stops there,
    before any noise is drawn."""
    X, y = _wide_multiclass(n_samples)
    with warnings.catch_warnings():
        warnings.simplefilter("error", NoiseDominanceWarning)
        with pytest.raises(NoiseDominanceWarning) as raised:
            NAPPLassoClassifier(data_norm=1.0, epsilon=1.0, **params).fit(X, y)
    return str(raised.value)


def test_napp_warns_when_the_noise_dominates_one_vs_rest():
    """MNIST's shape at epsilon 1 warns, names the estimators that work and the measured
    numbers."""
    message = _noise_message()
    assert "10 one-vs-rest problems of 785 coefficients" in message
    # Gamma-norm noise: 785 * zeta / eps_noise over G = zeta, eps_noise = 0.99 * 0.1 / 2
    assert "15,859 records" in message
    assert "DPSGDClassifier" in message and "ObjPertLogisticRegression" in message
    # Gaussian noise at the default Jacobian share (MNIST: about 0.62) still warns
    assert "3,051 records" in _noise_message(delta=1e-5)


def test_napp_noise_warning_reads_no_row_count():
    """The warning is a function of the shape, the classes and the budget: the same for
    any number of rows (the number of rows is private under add/remove), and it is
    raised before the noise (a fit whose warning is an error draws nothing)."""
    assert _noise_message(30) == _noise_message(90)


@pytest.mark.parametrize("params, n_classes, n_features", [
    ({}, 2, 784),                        # binary: one problem with the whole budget
    ({}, 3, 5),                          # few features
    ({"epsilon": np.inf}, 10, 784),      # no noise
    ({"epsilon": 100.0, "penalty": "l2"}, 10, 784),   # a budget that covers the shape
    # less noise: Gaussian, a small Jacobian share (about 1,600 records; 0.82 on MNIST)
    ({"delta": 1e-5, "eps_jacobian_frac": 0.05, "penalty": "l2"}, 10, 784),
])
def test_napp_noise_warning_not_raised(params, n_classes, n_features):
    X, y = _wide_multiclass(60, n_features, n_classes)
    with warnings.catch_warnings():
        warnings.simplefilter("error", NoiseDominanceWarning)
        NAPPLassoClassifier(data_norm=1.0, random_state=0, **params).fit(X, y)
