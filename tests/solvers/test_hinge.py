"""The certified hinge minimiser on wide sparse designs (the Gram-matrix polish)."""

import numpy as np
import scipy.sparse as sp

from skdp.solvers import certified_hinge_minimiser


def test_sparse_polish_certifies_the_same_minimiser_as_the_dense_one():
    """Fewer rows than features: most rows end on the margin, which the polish must
    solve exactly. The sparse rows go through the Gram matrix, the dense ones through
    the SVD; both certificates hold, so the two points are within the sum of the
    certified distances of each other (both are near the one exact minimiser)."""
    rng = np.random.default_rng(0)
    X = sp.random(300, 2000, density=0.01, format="csr", random_state=0)
    y = np.where(rng.random(300) < 0.5, -1.0, 1.0)
    target = 1e-5  # above the floor sqrt(2 gap) ~ 3e-6 that rounding of the gap sets
    sparse_theta, sparse_distance, _ = certified_hinge_minimiser(
        X, y, C=10.0, target_distance=target, max_iter=10_000)
    dense_theta, dense_distance, _ = certified_hinge_minimiser(
        X.toarray(), y, C=10.0, target_distance=target, max_iter=10_000)
    assert sparse_distance <= target and dense_distance <= target
    on_margin = np.abs(y * (X @ dense_theta) - 1.0) < 1e-6
    assert on_margin.sum() > 100
    assert np.linalg.norm(sparse_theta - dense_theta) <= sparse_distance + dense_distance
