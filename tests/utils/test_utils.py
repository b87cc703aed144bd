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
