"""One record must not defeat row clipping (attack: a finite but huge entry).

A row with an entry of about 1.4e154 or more has a squared L2 norm that overflows to
``inf``: a clip factor ``data_norm / norm`` computed from it is 0, and the clipped row
``inf * 0`` is NaN. An estimator that then raises, or releases NaN, tells with
certainty whether that record is in the data. Clipping is a function of the row
alone, so the fit on ``D`` plus the row must be the fit on ``D`` plus the row already
clipped to ``data_norm`` in the same direction (same seed, so the same noise), up to
the solver's certified tolerance.

Each attack row is also given as CSR input. A row of tiny entries (whose squared
norm underflows to 0) is not clipped; its fit is the fit with a zero row in its place.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose

from skdp import (DPSGDClassifier, NAPPLasso, NAPPLassoClassifier, ObjPertLogisticRegression,
                  OutputPertSVM)

DATA_NORM = 1.0

# name -> (estimator factory, number of classes (0: regression), atol of the comparison:
# the solvers' public tolerance, 1e-12 for DP-SGD, whose steps are exact arithmetic)
CASES = {
    "ObjPert": (lambda: ObjPertLogisticRegression(random_state=0), 2, 1e-8),
    "ObjPert-multinomial": (lambda: ObjPertLogisticRegression(random_state=0), 3, 1e-8),
    "OutputPert-hinge": (lambda: OutputPertSVM(random_state=0), 2, 1e-8),
    "OutputPert-logistic": (lambda: OutputPertSVM(loss="logistic", random_state=0), 2, 1e-8),
    "OutputPert-huber": (lambda: OutputPertSVM(loss="huber", random_state=0), 2, 1e-8),
    "OutputPert-multinomial": (lambda: OutputPertSVM(loss="logistic", random_state=0), 3,
                               1e-8),
    "OutputPert-rbf": (lambda: OutputPertSVM(kernel="rbf", random_state=0), 2, 1e-8),
    "DPSGD": (lambda: DPSGDClassifier(random_state=0), 2, 1e-12),
    "DPSGD-full-batch": (lambda: DPSGDClassifier(sample_rate=1.0, random_state=0), 2, 1e-12),
    "DPSGD-multiclass": (lambda: DPSGDClassifier(random_state=0), 3, 1e-12),
    "NAPPLasso": (lambda: NAPPLasso(alpha=0.1, coef_bound=5.0, y_bound=1.0, random_state=0),
                  0, 1e-8),
    "NAPPLassoClassifier": (lambda: NAPPLassoClassifier(alpha=0.1, random_state=0), 2, 1e-8),
}

# the attack rows: an entry whose square overflows, entries whose norm itself is beyond
# the largest float, and the same mixed with an ordinary entry
HUGE_ROWS = {
    "1e200": np.array([1e200, -3.0, 0.5, 0.0]),
    "two-1e308": np.array([1e308, 0.0, -1e308, 0.0]),
    "1e308-and-1": np.array([1e308, 1.0, 1e308, 1.0]),
}


def _data(n_classes, seed=0, n=40, d=4):
    """A small dataset ``D`` inside the unit ball, with labels (or a target)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(scale=0.4, size=(n, d))
    score = X @ rng.normal(size=d)
    if n_classes == 0:
        return X, np.clip(score, -1.0, 1.0)
    if n_classes == 2:
        return X, (score > 0).astype(int)
    return X, np.digitize(score, np.quantile(score, [1 / 3, 2 / 3]))


def _preclipped(row, data_norm):
    """``row`` scaled onto the sphere of radius ``data_norm``, by its largest entry
    first (no overflow): what clipping the row must give."""
    unit = row / np.max(np.abs(row))
    return unit * (data_norm / np.linalg.norm(unit))


def _fit(name, X, y, sparse):
    factory = CASES[name][0]
    return factory().fit(sp.csr_matrix(X) if sparse else X, y)


def _with_row(X, y, row):
    return np.vstack([X, row]), np.append(y, y[0])


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("row", list(HUGE_ROWS), ids=list(HUGE_ROWS))
@pytest.mark.parametrize("name", list(CASES))
def test_a_huge_row_is_clipped_like_the_row_already_on_the_sphere(name, row, sparse):
    """The fit succeeds, releases finite coefficients, and is the fit with the row
    already clipped (same seed): the record's presence shows only through its
    clipped value, as for any other record."""
    X, y = _data(CASES[name][1])
    attacked = _fit(name, *_with_row(X, y, HUGE_ROWS[row]), sparse)
    clipped = _fit(name, *_with_row(X, y, _preclipped(HUGE_ROWS[row], DATA_NORM)), sparse)
    assert np.all(np.isfinite(attacked.coef_)) and np.all(np.isfinite(attacked.intercept_))
    atol = CASES[name][2]
    assert_allclose(attacked.coef_, clipped.coef_, rtol=0, atol=atol)
    assert_allclose(attacked.intercept_, clipped.intercept_, rtol=0, atol=atol)
    # prediction clips the same way: the attack row is scored like its clipped copy
    if hasattr(attacked, "decision_function"):
        assert_allclose(attacked.decision_function(HUGE_ROWS[row][None, :]),
                        attacked.decision_function(_preclipped(HUGE_ROWS[row],
                                                               DATA_NORM)[None, :]),
                        rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("name", list(CASES))
def test_a_tiny_row_is_fitted_like_a_zero_row(name, sparse):
    """Entries of 1e-300 (squared norm 0 in floating point): the fit succeeds and is
    the fit with a zero row in its place."""
    X, y = _data(CASES[name][1])
    tiny = _fit(name, *_with_row(X, y, np.array([1e-300, -1e-300, 0.0, 1e-300])), sparse)
    zero = _fit(name, *_with_row(X, y, np.zeros(4)), sparse)
    assert np.all(np.isfinite(tiny.coef_)) and np.all(np.isfinite(tiny.intercept_))
    atol = CASES[name][2]
    assert_allclose(tiny.coef_, zero.coef_, rtol=0, atol=atol)
    assert_allclose(tiny.intercept_, zero.intercept_, rtol=0, atol=atol)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("row", list(HUGE_ROWS), ids=list(HUGE_ROWS))
@pytest.mark.parametrize("factory", [
    lambda: DPSGDClassifier(data_norm=1e300, random_state=0),
    lambda: DPSGDClassifier(data_norm=1e300, sample_rate=1.0, random_state=0),
    lambda: OutputPertSVM(kernel="rbf", data_norm=None, random_state=0),
], ids=["DPSGD", "DPSGD-full-batch", "OutputPert-rbf"])
def test_without_a_data_norm_a_huge_row_is_capped(factory, row, sparse):
    """Where the privacy does not rest on data_norm (DP-SGD clips gradients, random
    features are bounded), a huge ``data_norm`` or ``None`` still caps rows at a
    norm of 1e150, so that ``x . theta`` stays finite: the fit is the fit with the
    row already at that norm, in its direction."""
    from skdp.utils.validation import MAX_FINITE_ROW_NORM

    X, y = _data(2)
    convert = sp.csr_matrix if sparse else np.asarray
    attacked = factory().fit(convert(np.vstack([X, HUGE_ROWS[row]])), np.append(y, y[0]))
    capped = _preclipped(HUGE_ROWS[row], MAX_FINITE_ROW_NORM)
    reference = factory().fit(convert(np.vstack([X, capped])), np.append(y, y[0]))
    assert np.all(np.isfinite(attacked.coef_)) and np.all(np.isfinite(attacked.intercept_))
    assert_allclose(attacked.coef_, reference.coef_, rtol=0, atol=1e-12)
    assert_allclose(attacked.intercept_, reference.intercept_, rtol=0, atol=1e-12)
    assert np.all(np.isfinite(attacked.decision_function(HUGE_ROWS[row][None, :])))


def _products_only(monkeypatch):
    """Newton directions from Hessian-vector products, read by blocks of 16 rows."""
    from skdp.solvers import _design, _newton

    monkeypatch.setattr(_newton, "_MAX_HESSIAN_ENTRIES", 0)
    monkeypatch.setattr(_design, "_CACHE_BYTES", 8 * 5 * 16)


def _streamed(monkeypatch):
    """DP-SGD steps over a design read by blocks of 16 rows (as beyond the cache)."""
    from skdp.linear_model import _dpsgd
    from skdp.solvers import _design

    monkeypatch.setattr(_dpsgd, "_STREAMED_BYTES", 0)
    monkeypatch.setattr(_design, "_CACHE_BYTES", 8 * 5 * 16)
    monkeypatch.setattr(_design, "_BUFFER_BYTES", 8 * 5 * 16)


PATHS = {
    # n = 2000 rows of 4: the Newton solver's subsampled Hessian (every 20th row)
    "ObjPert-subsampled-hessian": (lambda: ObjPertLogisticRegression(random_state=0), None),
    "ObjPert-hessian-products": (lambda: ObjPertLogisticRegression(random_state=0),
                                 _products_only),
    "ObjPert-multinomial-products": (lambda: ObjPertLogisticRegression(random_state=0),
                                     _products_only),
    "DPSGD-streamed": (lambda: DPSGDClassifier(epochs=2, random_state=0), _streamed),
    "DPSGD-full-batch-streamed": (lambda: DPSGDClassifier(sample_rate=1.0, random_state=0),
                                  _streamed),
    "NAPPLassoClassifier-two-stage": (
        lambda: NAPPLassoClassifier(alpha=0.1, adaptive_two_stage=True, random_state=0), None),
}


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("name", list(PATHS))
def test_a_huge_row_on_the_solvers_other_paths(name, sparse, monkeypatch):
    """The same attack on 2000 rows, through the paths that read the design by blocks,
    by strided subsets or by columns: the fit is the fit with the row pre-clipped."""
    factory, setup = PATHS[name]
    if setup is not None:
        setup(monkeypatch)
    X, y = _data(3 if "multinomial" in name else 2, n=2000)
    row = HUGE_ROWS["1e308-and-1"]
    convert = sp.csr_matrix if sparse else np.asarray
    labels = np.insert(y, 1000, y[0])
    fits = [factory().fit(convert(np.vstack([X[:1000], extra, X[1000:]])), labels)
            for extra in (row, _preclipped(row, DATA_NORM))]
    assert np.all(np.isfinite(fits[0].coef_))
    atol = 1e-12 if "DPSGD" in name else 1e-8
    assert_allclose(fits[0].coef_, fits[1].coef_, rtol=0, atol=atol)
    assert_allclose(fits[0].intercept_, fits[1].intercept_, rtol=0, atol=atol)
