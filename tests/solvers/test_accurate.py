"""The certificate's fallback: double-double gradients with proven error bounds.

The fast certificate adds to the computed gradient norm an estimate of its rounding
error that grows linearly with the number of rows; at ``C = 3000`` it alone passes the
default ``tol = 1e-8`` between 20,000 and 24,000 unit rows, so the fit failed at 24,000
rows whatever the data (an observable event that depends on one row). These tests
check that such fits now certify, that the fallback's bound is a bound (against exact
rational and 90-digit decimal arithmetic on problems with heavy cancellation), that the
building blocks are exact where they claim to be, and that an ordinary fit never
leaves the fast path.
"""

from decimal import Decimal, getcontext
from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_classification

from skdp import ObjPertLogisticRegression
from skdp.exceptions import ConvergenceError
from skdp.losses import HuberHingeLoss, LogisticLoss, SoftmaxLoss, SquaredLoss
from skdp.solvers import _hinge, _multinomial, _newton, glm_gradient, newton_minimise
from skdp.solvers._accurate import (accurate_data_gradient, accurate_transpose_product,
                                    assemble_gradient, norm_above)
from skdp.solvers._design import ScaledDesign
from skdp.utils import _double_double as dd

getcontext().prec = 90


def _unit_rows(n, d, seed=0, n_classes=2):
    """Rows of norm one and noisy labels: the slopes stay large at the minimiser."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    if n_classes == 2:
        return X, (X[:, 0] + 0.5 * rng.standard_normal(n) > 0).astype(int)
    scores = X[:, :n_classes] + 0.5 * rng.standard_normal((n, n_classes))
    return X, np.argmax(scores, axis=1)


def _without_fallback(monkeypatch):
    """The former solvers: the fast certificate alone decides."""
    monkeypatch.setattr(_newton, "_has_fallback", lambda loss: False)
    monkeypatch.setattr(_multinomial.MultinomialProblem, "accurate_certificate",
                        lambda self, theta, tol, row_norm: None)


@pytest.mark.parametrize("n", [24_000, 300_000])
def test_large_C_fit_certifies_where_the_estimate_alone_failed(monkeypatch, n):
    """C = 3000 on unit rows: the fit certifies at 24,000 and 300,000 rows; with the
    fast certificate alone it raises (always, from about 24,000 rows)."""
    X, y = _unit_rows(n, 20)
    fitted = ObjPertLogisticRegression(C=3000, random_state=0).fit(X, y)
    assert np.all(np.isfinite(fitted.coef_))
    _without_fallback(monkeypatch)
    with pytest.raises(ConvergenceError):
        ObjPertLogisticRegression(C=3000, random_state=0).fit(X, y)


@pytest.mark.slow
def test_large_C_fit_certifies_at_a_million_rows():
    X, y = _unit_rows(1_000_000, 20)
    fitted = ObjPertLogisticRegression(C=10_000, random_state=0).fit(X, y)
    assert np.all(np.isfinite(fitted.coef_))


def test_large_C_multinomial_fit_certifies_where_the_estimate_alone_failed(monkeypatch):
    X, y = _unit_rows(20_000, 20, n_classes=3)
    fitted = ObjPertLogisticRegression(C=3000, random_state=0).fit(X, y)
    assert fitted.coef_.shape == (3, 20)
    _without_fallback(monkeypatch)
    with pytest.raises(ConvergenceError):
        ObjPertLogisticRegression(C=3000, random_state=0).fit(X, y)


def test_ordinary_fits_take_the_fast_path(monkeypatch):
    """The default C on ordinary data: the cheap certificate decides, the fallback
    never runs (binary, one-vs-rest Huber and multinomial)."""
    calls = []
    monkeypatch.setattr(_newton, "_accurate_certificate",
                        lambda *args: calls.append("glm"))
    monkeypatch.setattr(_multinomial.MultinomialProblem, "accurate_certificate",
                        lambda *args: calls.append("softmax"))
    X, y = make_classification(n_samples=20_000, n_features=30, random_state=0)
    ObjPertLogisticRegression(random_state=0).fit(X, y)
    ObjPertLogisticRegression(C=10.0, random_state=0).fit(X, y)
    X3, y3 = make_classification(n_samples=5_000, n_features=30, n_informative=6,
                                 n_classes=3, random_state=0)
    ObjPertLogisticRegression(random_state=0).fit(X3, y3)
    ObjPertLogisticRegression(loss="huber", random_state=0).fit(X3, y3)
    assert calls == []


# -- the bound is a bound: exact references ---------------------------------------------

def _explicit_rows(X):
    """The design's rows ``[s_i x_i, c]`` as exact rationals."""
    design = X if isinstance(X, ScaledDesign) else ScaledDesign(X, None, None)
    raw = design.X.toarray() if sp.issparse(design.X) else design.X
    rows = []
    for i, values in enumerate(raw):
        factor = Fraction(1) if design.scale is None else Fraction(design.scale[i])
        row = [factor * Fraction(v) for v in values]
        rows.append(row + ([] if design.intercept is None else [Fraction(design.intercept)]))
    return rows


def _decimal(fraction):
    return Decimal(fraction.numerator) / Decimal(fraction.denominator)


def _exact_slope(loss, z, label):
    """``l'(z)`` to 90 digits, as a rational."""
    if isinstance(loss, SquaredLoss):
        return z - Fraction(label)
    margin = _decimal(z) * Decimal(label)
    if isinstance(loss, LogisticLoss):
        derivative = -1 / (1 + margin.exp())
    else:
        h = Decimal(loss.h)
        derivative = -min(max((1 + h - margin) / (2 * h), Decimal(0)), Decimal(1))
    return Fraction(derivative) * Fraction(label)


def _exact_gradient(X, y, loss, C, ridge, linear, theta):
    """``C X^T l'(X theta) + ridge theta + linear`` in rationals (and 90-digit exp)."""
    coefficients = [Fraction(t) for t in theta]
    total = [Fraction(0)] * len(theta)
    for row, label in zip(_explicit_rows(X), y):
        slope = _exact_slope(loss, sum(a * b for a, b in zip(row, coefficients)), label)
        total = [t + slope * a for t, a in zip(total, row)]
    return [Fraction(C) * t + Fraction(ridge) * c + Fraction(b)
            for t, c, b in zip(total, coefficients, linear)]


def _distance(pair, exact):
    """``||(hi + lo) - exact||`` with the difference taken exactly."""
    return float(sum((Fraction(h) + Fraction(l) - e) ** 2
                     for h, l, e in zip(pair[0], pair[1], exact))) ** 0.5


def _cancelling_design(kind, rng, n=80, d=5):
    """Columns 0 and 1 of size 1e6 that nearly cancel in every row."""
    A = rng.normal(size=(n, d))
    A[:, 0] *= 1e6
    A[:, 1] = -A[:, 0] + rng.normal(size=n)
    if "sparse" in kind:
        A[rng.random((n, d)) < 0.3] = 0.0
        A[:, :2] = np.where(A[:, :2] == 0.0, 1.0, A[:, :2])
    raw = sp.csr_matrix(A) if "sparse" in kind else A
    if kind.startswith("clipped"):   # rows scaled into a ball of radius 3, intercept 0.7
        return ScaledDesign(raw, np.minimum(1.0, 3.0 / np.linalg.norm(A, axis=1)), 0.7)
    return raw / np.linalg.norm(A, axis=1).max()


@pytest.mark.parametrize("kind", ["dense", "sparse", "clipped", "clipped sparse"])
@pytest.mark.parametrize("loss", [LogisticLoss(), HuberHingeLoss(h=0.3), SquaredLoss()])
def test_accurate_gradient_is_within_its_bound_of_the_exact_one(kind, loss):
    """At a minimiser with C = 1e4 (terms of size 1e4 that cancel to 1e-11, products
    that cancel in every row), the float64 gradient is off by about its own size; the
    double-double one is within its bound of the exact gradient, a bound below 1e-18."""
    rng = np.random.default_rng(sum(map(ord, kind + type(loss).__name__)))
    X = _cancelling_design(kind, rng)
    y = rng.normal(size=X.shape[0]) if isinstance(loss, SquaredLoss) else \
        np.where(rng.random(X.shape[0]) < 0.5, -1.0, 1.0)
    C, ridge, linear = 1e4, 1.0, rng.normal(size=X.shape[1])
    theta = newton_minimise(X, y, loss, C=C, ridge=ridge, linear=linear, tol=0.0,
                            max_iter=30, refine=False).theta
    exact = _exact_gradient(X, y, loss, C, ridge, linear, theta)
    row_norm = max(float(sum(v * v for v in row)) for row in _explicit_rows(X)) ** 0.5

    def slopes(z, rows, z_bound):
        (hi, lo), error = loss.dz_accurate((z[0][:, 0], z[1][:, 0]), y[rows], z_bound[:, 0])
        return (hi[:, None], lo[:, None]), error

    data, bound, _ = accurate_data_gradient(X, dd.as_pair(theta[:, None]), slopes,
                                            row_norm * (1 + 1e-12))
    gradient, bound = assemble_gradient((data[0][:, 0], data[1][:, 0]), bound,
                                        dd.as_pair(theta), C, ridge, linear)
    plain = glm_gradient(theta, X, y, loss, C, ridge, linear)
    assert _distance(gradient, exact) <= bound <= 1e-18
    assert _distance((plain, np.zeros_like(plain)), exact) > 1e3 * bound


def test_accurate_softmax_gradient_is_within_its_bound_of_the_exact_one():
    rng = np.random.default_rng(7)
    X = _cancelling_design("clipped", rng, n=40, d=4)
    classes = rng.integers(0, 3, size=40)
    Y = np.eye(3)[classes]
    C, ridge = 1e4, 1.0
    linear = rng.normal(size=(3, 5))
    theta = _multinomial.multinomial_minimise(X, Y, C=C, ridge=ridge, linear=linear,
                                              tol=0.0, max_iter=30).theta
    rows, coefficients = _explicit_rows(X), [[Fraction(t) for t in k] for k in theta]
    exact = [[Fraction(C) * 0 for _ in range(5)] for _ in range(3)]
    for row, label in zip(rows, classes):
        scores = [_decimal(sum(a * b for a, b in zip(row, c))) for c in coefficients]
        powers = [s.exp() for s in scores]
        for k in range(3):
            residual = Fraction(powers[k] / sum(powers)) - (k == label)
            exact[k] = [e + residual * a for e, a in zip(exact[k], row)]
    exact = [Fraction(C) * e + Fraction(ridge) * Fraction(t) + Fraction(b)
             for k in range(3) for e, t, b in zip(exact[k], theta[k], linear[k])]
    row_norm = max(float(sum(v * v for v in row)) for row in rows) ** 0.5 * (1 + 1e-12)

    def slopes(scores, rows_, scores_bound):
        return SoftmaxLoss().dz_accurate(scores, Y[rows_], scores_bound)

    data, bound, _ = accurate_data_gradient(X, dd.as_pair(theta.T), slopes, row_norm)
    gradient, bound = assemble_gradient((data[0].T, data[1].T), bound, dd.as_pair(theta), C,
                                        ridge, linear)
    assert _distance((gradient[0].ravel(), gradient[1].ravel()), exact) <= bound <= 1e-18


@pytest.mark.parametrize("direction", ["cholesky", "products"])
def test_refined_point_is_within_its_certified_distance_below_the_float64_floor(
        monkeypatch, direction):
    """tol = 1e-12 at C = 3000 and 24,000 rows: no float64 point has an exact gradient
    that small (about ||H|| 1e-16 ||theta||), so the certificate is of a double-double
    point refined by Newton steps (Cholesky or conjugate gradients); the released
    float64 point is within the certified distance of the minimiser (computed here by
    more double-double Newton steps)."""
    X, labels = _unit_rows(24_000, 20)
    y = np.where(labels == 1, 1.0, -1.0)
    loss, C, ridge, tol = LogisticLoss(), 3000.0, 1.0, 1e-12
    linear = 30.0 * np.random.default_rng(1).normal(size=20)
    monkeypatch.setattr(_newton, "uses_hessian_products", lambda X: direction == "products")
    result = newton_minimise(X, y, loss, C=C, ridge=ridge, linear=linear, tol=tol,
                             max_iter=100)
    assert result.converged and result.certified_norm <= tol

    def slopes(z, rows, z_bound):
        (hi, lo), error = loss.dz_accurate((z[0][:, 0], z[1][:, 0]), y[rows], z_bound[:, 0])
        return (hi[:, None], lo[:, None]), error

    def gradient_at(point):
        data, bound, z = accurate_data_gradient(X, (point[0][:, None], point[1][:, None]),
                                                slopes, 1.0 + 1e-12)
        gradient, bound = assemble_gradient((data[0][:, 0], data[1][:, 0]), bound, point, C,
                                            ridge, linear)
        return gradient, bound, z[:, 0]

    gradient, _, _ = gradient_at(dd.as_pair(result.theta))
    assert norm_above(gradient) > 10 * tol   # the float64 point alone does not certify
    point = dd.as_pair(result.theta)
    for _ in range(3):
        gradient, bound, z = gradient_at(point)
        hessian = _newton._hessian_at(z, X, y, loss, C, ridge)
        point = dd.add_double(point, -np.linalg.solve(hessian, gradient[0] + gradient[1]))
    gradient, bound, _ = gradient_at(point)
    reference_error = (norm_above(gradient) + bound) / ridge
    assert reference_error < 1e-20
    distance = norm_above(dd.add_double(point, -result.theta))
    assert distance <= result.certified_norm / ridge + reference_error


def test_custom_loss_without_accurate_derivative_keeps_the_estimate():
    """A loss without ``dz_accurate`` has no fallback: exactly the fast path's result."""
    class Plain:
        loss, dz, d2z = LogisticLoss().loss, LogisticLoss().dz, LogisticLoss().d2z

    X, labels = _unit_rows(24_000, 20)
    X = np.hstack([X, np.ones((24_000, 1))])   # with an intercept column, as ObjPert's
    y = np.where(labels == 1, 1.0, -1.0)
    problem = dict(C=3000.0, ridge=1.0, linear=30.0 * np.random.default_rng(1).normal(size=21),
                   tol=1e-8, max_iter=100)
    plain = newton_minimise(X, y, Plain(), **problem)
    fast = newton_minimise(X, y, LogisticLoss(), refine=False, **problem)
    assert not plain.converged and not fast.converged
    assert np.array_equal(plain.theta, fast.theta)
    assert newton_minimise(X, y, LogisticLoss(), **problem).converged


# -- the hinge's certificate ------------------------------------------------------------

def test_hinge_certificate_replaces_its_linear_estimate_where_it_decides():
    """``_certify`` adds ``n eps ||theta||`` for the rounding of ``theta = X^T (alpha
    y)``; where that alone puts the distance above the target, the offset is computed in
    double-double instead, and it bounds the exact ``||theta - X^T (alpha y)||``."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 6)) / 3.0
    y = np.where(rng.random(300) < 0.5, -1.0, 1.0)
    alpha = rng.uniform(0.0, 2.0, size=300)
    theta, gap = _hinge.hinge_duality_gap(X, y, 2.0, alpha)
    estimate = 300 * np.finfo(float).eps * np.linalg.norm(theta)
    smooth = np.sqrt(2.0 * gap)
    assert np.isclose(_hinge._certify(X, y, 2.0, theta, alpha), smooth + estimate)
    target = smooth + 0.5 * estimate
    certified = _hinge._certify(X, y, 2.0, theta, alpha, target)
    assert certified <= target
    exact = [sum(Fraction(a) * Fraction(l) * Fraction(x) for a, l, x in zip(alpha, y, column))
             for column in X.T]
    offset = float(sum((Fraction(t) - e) ** 2 for t, e in zip(theta, exact))) ** 0.5
    assert smooth + offset <= certified


# -- building blocks --------------------------------------------------------------------

def test_error_free_transformations_are_exact():
    rng = np.random.default_rng(0)
    a = rng.normal(size=500) * 10.0 ** rng.integers(-20, 20, size=500)
    b = rng.normal(size=500) * 10.0 ** rng.integers(-20, 20, size=500)
    s, e = dd.two_sum(a, b)
    p, f = dd.two_product(a, b)
    for x, z, s_, e_, p_, f_ in zip(a, b, s, e, p, f):
        assert Fraction(s_) + Fraction(e_) == Fraction(x) + Fraction(z)
        assert Fraction(p_) + Fraction(f_) == Fraction(x) * Fraction(z)


def test_double_double_exp_is_within_its_bound():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(-660.0, 700.0, 300), rng.uniform(-1.0, 1.0, 200),
                        np.arange(-20, 21) * np.log(2.0)])
    hi, lo = dd.fast_two_sum(x, x * rng.uniform(-1.0, 1.0, x.size) * 2.0**-54)
    value = dd.exp((hi, lo))
    for h, l, vh, vl in zip(hi, lo, *value):
        exact = (Decimal(h) + Decimal(l)).exp()
        error = abs(Decimal(vh) + Decimal(vl) - exact) / exact
        assert float(error) <= dd.EXP_ERROR * dd.U**2


@pytest.mark.parametrize("kind", ["rows", "columns", "segments", "labels"])
def test_group_sums_are_exact_to_their_bound(kind):
    """Sums that cancel to nothing (1e16 + 1 - 1e16 ...) in every group: the
    double-double result is within its (tiny) bound of the exact rational sum."""
    rng = np.random.default_rng(1)
    values = rng.normal(size=(40, 9)) * 10.0 ** rng.integers(-10, 16, size=(40, 9))
    values[:, -1] = -values[:, :-1].sum(axis=1)   # each row sums to about zero
    values, errors = dd.two_product(values, 1.0 + 2.0**-30)
    if kind == "rows":
        groups, members = dd.AxisGroups(1, 9), [list(zip(v, e)) for v, e in zip(values,
                                                                                 errors)]
        values, errors = values[:, :, None], errors[:, :, None]
    elif kind == "columns":
        groups = dd.AxisGroups(0, 40)
        members = [list(zip(v, e)) for v, e in zip(values.T, errors.T)]
        values, errors = values[:, :, None], errors[:, :, None]
    else:
        flat, flat_errors = values.ravel()[:, None], errors.ravel()[:, None]
        if kind == "segments":
            indptr = np.array([0, 9, 9, 40, 100, 200, 360])   # one empty segment
            groups = dd.SegmentGroups(indptr)
        else:
            labels = rng.integers(0, 7, size=flat.shape[0])
            groups = dd.LabelGroups(labels, 7, flat.shape[0])
        segments = (np.split(np.arange(360), indptr[1:-1]) if kind == "segments" else
                    [np.flatnonzero(labels == k) for k in range(7)])
        members = [list(zip(flat[s, 0], flat_errors[s, 0])) for s in segments]
        values, errors = flat, flat_errors
    (hi, lo), bound = dd.group_sums(values, errors, groups)
    for h, l, b, terms in zip(hi.ravel(), lo.ravel(), np.ravel(bound), members):
        exact = sum(Fraction(v) + Fraction(e) for v, e in terms)
        assert abs(Fraction(h) + Fraction(l) - exact) <= Fraction(b)
        assert b <= 1e-28 * max((abs(v) for v, _ in terms), default=0.0)


def test_accurate_transpose_product_bounds_the_exact_one():
    rng = np.random.default_rng(2)
    X = _cancelling_design("clipped sparse", rng, n=60, d=4)
    weights = rng.normal(size=60) * 1e8
    product, bound = accurate_transpose_product(X, weights, 3.0 * (1 + 1e-12) + 0.7)
    exact = [sum(w * a for w, a in zip(map(Fraction, weights), column))
             for column in zip(*_explicit_rows(X))]
    assert _distance(product, exact) <= bound <= 1e-12


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
def test_accurate_products_read_a_wide_rows_clipped_values(sparse):
    """A row whose norm overflows is held clipped beside X (its factor 0): the fallback
    must read those values, not the raw ones (0 * inf gave NaN)."""
    from skdp.linear_model._base import solver_design

    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 4)) / 4
    X[7] = [1e308, 1.0, -1e308, 0.0]
    X = sp.csr_matrix(X) if sparse else X
    design = solver_design(X, data_norm=1.0, fit_intercept=True, intercept_scaling=1.0)
    assert design.wide is not None
    weights = rng.normal(size=30)
    product, bound = accurate_transpose_product(design, weights, row_norm=np.sqrt(2.0))
    expected = np.asarray(design.clipped_rows().T @ weights).ravel()
    assert np.all(np.isfinite(product[0]))
    np.testing.assert_allclose(product[0][:-1], expected, rtol=1e-12, atol=1e-14)
    assert product[0][-1] == pytest.approx(weights.sum())
