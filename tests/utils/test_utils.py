import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from skdp.utils import augment_intercept, check_rng, clip_rows_to_norm, effective_data_norm


def test_clip_rows_to_norm():
    X = np.array([[3.0, 4.0], [0.3, 0.4], [0.0, 0.0]])
    clipped = clip_rows_to_norm(X, 1.0)
    assert_allclose(np.linalg.norm(clipped, axis=1), [1.0, 0.5, 0.0])
    assert_allclose(clipped[0], [0.6, 0.8])
    assert_array_equal(clipped[1:], X[1:])  # rows inside the ball untouched, bit for bit
    assert X[0, 0] == 3.0  # input not modified
    assert_array_equal(clip_rows_to_norm(X, np.inf), X)
    # spec 8.4: a row of norm 10 becomes norm R
    assert_allclose(np.linalg.norm(clip_rows_to_norm(np.array([[6.0, 8.0]]), 2.5)), 2.5)


def test_intercept_augmentation_and_effective_norm():
    X = np.ones((3, 2))
    assert_array_equal(augment_intercept(X, 2.0)[:, -1], [2.0, 2.0, 2.0])
    assert effective_data_norm(1.0, True, 1.0) == pytest.approx(np.sqrt(2))
    assert effective_data_norm(3.0, True, 4.0) == pytest.approx(5.0)
    assert effective_data_norm(3.0, False, 4.0) == 3.0


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
def test_sparse_intercept_augmentation_equals_the_dense_one(fmt):
    import scipy.sparse as sp

    X = sp.random(40, 6, density=0.15, format="csr", random_state=0, dtype=np.float32)
    X = sp.csr_matrix(X.toarray() * (np.arange(40) % 7 != 3)[:, None])  # empty rows
    X = X.asformat(fmt)
    augmented = augment_intercept(X, 2.5)
    assert sp.isspmatrix_csr(augmented) and augmented.dtype == np.float64
    assert_array_equal(augmented.toarray(), np.hstack([X.toarray(), np.full((40, 1), 2.5)]))
    clipped = clip_rows_to_norm(X, 0.5)
    assert_allclose(clipped.toarray(), clip_rows_to_norm(X.toarray(), 0.5))


def test_check_rng():
    gen = np.random.default_rng(0)
    assert check_rng(gen) is gen
    assert check_rng(3).integers(1000) == np.random.default_rng(3).integers(1000)
    a = check_rng(np.random.RandomState(7)).integers(10**9)
    b = check_rng(np.random.RandomState(7)).integers(10**9)
    assert a == b
    assert isinstance(check_rng(None), np.random.Generator)
    with pytest.raises(ValueError, match="random_state"):
        check_rng("seed")


# Rows whose squared norm (or norm) is beyond float64, rows whose squares underflow,
# and an ordinary row: (row, its norm, rounded to float64; inf beyond its range).
EXTREME_ROWS = [
    (np.array([1e200, -3.0, 0.0]), 1e200),
    (np.array([1e-200, -1e-200, 1e-200]), np.sqrt(3.0) * 1e-200),
    (np.array([1e308, 1e308, 0.0]), np.sqrt(2.0) * 1e308),
    (np.array([1e308, 1.0, -1e308]), np.sqrt(2.0) * 1e308),
    (np.array([3.0, 4.0, 0.0]), 5.0),
    (np.array([1.5e308, -1.5e308, 1.5e308]), np.inf),   # sqrt(3) * 1.5e308
]


def _direction(row):
    """The unit vector of ``row``, divided by its largest entry first (no overflow)."""
    unit = row / np.max(np.abs(row))
    return unit / np.linalg.norm(unit)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("data_norm", [1.0, 1e-3, 7.5])
def test_clip_rows_to_norm_keeps_the_direction_of_extreme_rows(sparse, data_norm):
    """Every finite row longer than data_norm lands on the sphere in its own direction,
    however large its entries (an overflowing squared norm gave a NaN row); rows inside
    the ball are unchanged bit for bit, tiny ones included."""
    import scipy.sparse as sp

    X = np.array([row for row, _ in EXTREME_ROWS])
    clipped = clip_rows_to_norm(sp.csr_matrix(X) if sparse else X, data_norm)
    clipped = clipped.toarray() if sparse else clipped
    assert np.all(np.isfinite(clipped))
    for row, out, (_, norm) in zip(X, clipped, EXTREME_ROWS):
        if norm > data_norm:
            assert_allclose(np.linalg.norm(out), data_norm, rtol=1e-14)
            assert_allclose(out / data_norm, _direction(row), rtol=1e-14, atol=1e-300)
        else:
            assert_array_equal(out, row)
    assert clipped[2, 0] == clipped[2, 1] > 0 and clipped[3, 1] > 0  # the 1.0 survives


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
def test_row_clipping_norms_and_wide_rows(sparse):
    """The clipped norms and factors of extreme rows; rows of norm above 1e100 are
    wide (factor 0, clipped values apart), the others are clipped by their factor."""
    import scipy.sparse as sp

    from skdp.utils.validation import WIDE_ROW_NORM, row_clipping, scaled_row_norms

    X = np.array([row for row, _ in EXTREME_ROWS])
    clipping = row_clipping(sp.csr_matrix(X) if sparse else X, 2.0)
    norms = np.array([norm for _, norm in EXTREME_ROWS])
    assert_allclose(clipping.norms, np.minimum(norms, 2.0), rtol=1e-14)
    assert clipping.norms[1] > 0  # the squares underflow, the norm does not
    assert_array_equal(clipping.wide, np.flatnonzero(norms > WIDE_ROW_NORM))
    assert_array_equal(clipping.factors[clipping.wide], 0.0)
    assert_allclose(clipping.factors[[1, 4]], [1.0, 0.4], rtol=1e-15)
    assert_array_equal(clipping.wide, [0, 2, 3, 5])
    wide = clipping.wide_rows.toarray() if sparse else clipping.wide_rows
    assert_allclose(wide, 2.0 * np.array([_direction(X[i]) for i in clipping.wide]),
                    rtol=1e-14, atol=1e-300)
    peak, ratio = scaled_row_norms(sp.csr_matrix(X) if sparse else X)
    assert_array_equal(peak, np.max(np.abs(X), axis=1))
    assert_allclose(ratio, [1.0, np.sqrt(3.0), np.sqrt(2.0), np.sqrt(2.0), 5.0 / 4.0,
                            np.sqrt(3.0)], rtol=1e-15)
