"""The certified hinge minimiser: wide sparse designs (the Gram-matrix polish) and
duplicated rows."""

import numpy as np
import pytest
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


def test_duplicated_rows_polish_as_one_row_with_their_summed_bound():
    """Every row repeated k times is the problem with C * k on the distinct rows: the
    polish merges identical rows (one dual value in [0, k C], shared equally), and both
    certified points are near the one exact minimiser."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(60, 5)) / 3
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=60) > 0, 1.0, -1.0)
    k, C, target = 8, 0.5, 1e-6
    merged, merged_distance, _ = certified_hinge_minimiser(
        np.repeat(X, k, axis=0), np.repeat(y, k), C=C, target_distance=target,
        max_iter=100_000)
    weighted, weighted_distance, _ = certified_hinge_minimiser(
        X, y, C=k * C, target_distance=target, max_iter=100_000)
    assert merged_distance <= target and weighted_distance <= target
    assert np.linalg.norm(merged - weighted) <= merged_distance + weighted_distance
    on_margin = np.abs(y * (X @ weighted) - 1.0) < 1e-6
    assert on_margin.sum() >= 3  # the duplicated margin rows were solved for


def test_margin_dual_of_duplicates_solves_the_full_bounded_least_squares():
    from scipy.optimize import lsq_linear

    from skdp.solvers._hinge import _margin_dual

    rng = np.random.default_rng(2)
    distinct = rng.normal(size=(6, 10))
    signed = np.repeat(distinct, [1, 4, 2, 1, 3, 5], axis=0)
    C, fixed = 0.05, rng.normal(size=10)
    alpha = _margin_dual(signed, C, fixed)
    assert np.all((alpha >= 0) & (alpha <= C))
    # the same residual as bounded least squares on all rows (the problem it solves)
    on_margin = np.linalg.lstsq(signed, np.ones(len(signed)), rcond=None)[0]
    full = lsq_linear(signed.T, on_margin - fixed, bounds=(0.0, C), method="bvls").x
    residual = np.linalg.norm(signed.T @ alpha - (on_margin - fixed))
    assert residual == pytest.approx(np.linalg.norm(signed.T @ full - (on_margin - fixed)),
                                     rel=1e-9, abs=1e-12)
    # identical rows share their value
    start = np.cumsum([0, 1, 4, 2, 1, 3])
    for first, count in zip(start, [1, 4, 2, 1, 3, 5]):
        assert np.ptp(alpha[first:first + count]) == 0


@pytest.mark.parametrize("shape", [(30, 50), (80, 40), (200, 200)])
def test_box_least_squares_matches_bvls(shape, monkeypatch):
    """Projected Newton on ``min ||M a - b||``, ``0 <= a <= u``, against bvls: the same
    objective, on full-rank and rank-deficient (more variables than rows) problems
    with many bounds active (the projected steps for every size here)."""
    from scipy.optimize import lsq_linear

    from skdp.solvers import _hinge
    from skdp.solvers._hinge import _box_least_squares

    monkeypatch.setattr(_hinge, "_BVLS_SIZE", 0)
    rng = np.random.default_rng(shape[0])
    M = rng.normal(size=shape)
    b = M @ rng.normal(scale=2.0, size=shape[1]) + rng.normal(size=shape[0])
    upper = rng.uniform(0.5, 1.5, size=shape[1])
    ours = _box_least_squares(M, b, upper, np.zeros(shape[1]))
    reference = lsq_linear(M, b, bounds=(np.zeros(shape[1]), upper), method="bvls").x
    assert np.all((ours >= 0.0) & (ours <= upper))
    assert 0.0 < np.mean((reference > 0) & (reference < upper)) < 1.0  # bounds matter
    value = np.linalg.norm(M @ ours - b)
    assert value <= np.linalg.norm(M @ reference - b) * (1 + 1e-10) + 1e-12


def test_distinct_rows_is_unique_with_its_inverse_and_counts():
    """Rows told apart by their projection are returned as they are; rows with equal
    projections (true duplicates, or a collision) go through np.unique."""
    from skdp.solvers._hinge import _distinct_rows

    rng = np.random.default_rng(0)
    rows = rng.normal(size=(6, 4))
    distinct, inverse, counts = _distinct_rows(rows)
    assert distinct is rows and np.array_equal(inverse, np.arange(6)) and np.all(counts == 1)
    with_duplicates = rows[[0, 1, 0, 2, 1, 0]]
    colliding = np.array([[1.0, 0.0], [0.0, 0.0]])
    colliding[1, 1] = np.cos(0.5) / np.cos(1.5)  # the same projection, another row
    signed_zeros = np.array([[0.0, 1.0], [-0.0, 1.0], [2.0, -3.0], [0.0, 1.0], [-0.0, -0.0],
                             [0.0, 0.0]])  # equal in value, not in bytes
    wide = rng.integers(-2, 3, size=(12, 40)).astype(float)[rng.integers(0, 12, size=80)]
    for matrix in (with_duplicates, colliding, signed_zeros, wide):
        distinct, inverse, counts = _distinct_rows(matrix)
        expected = np.unique(matrix, axis=0, return_inverse=True, return_counts=True)
        assert np.array_equal(distinct, expected[0])
        assert np.array_equal(inverse, expected[1].ravel())
        assert np.array_equal(distinct[inverse], matrix)
        assert np.array_equal(counts, expected[2])


def test_small_box_least_squares_is_bvls():
    """At most _BVLS_SIZE variables, or that many rows (the rank) and at most
    _BVLS_LOW_RANK_VARIABLES variables: bvls's own solution, bit for bit."""
    from scipy.optimize import lsq_linear

    from skdp.solvers._hinge import _BVLS_LOW_RANK_VARIABLES, _BVLS_SIZE, _box_least_squares

    rng = np.random.default_rng(5)
    for rows, variables in ((6, 12), (_BVLS_SIZE // 2, _BVLS_SIZE),
                            (_BVLS_SIZE, _BVLS_LOW_RANK_VARIABLES)):
        M = rng.normal(size=(rows, variables))
        b = M @ rng.normal(scale=2.0, size=variables)
        upper = rng.uniform(0.5, 1.5, size=variables)
        reference = lsq_linear(M, b, bounds=(np.zeros(variables), upper), method="bvls").x
        np.testing.assert_array_equal(_box_least_squares(M, b, upper, np.zeros(variables)),
                                      reference)


def _dense_problem(rng):
    X = rng.normal(size=(30_000, 20))
    return X, np.where(X[:, :5].sum(axis=1) + 0.3 * rng.normal(size=30_000) > 0, 1.0, -1.0)


def _sparse_problem(rng):
    X = sp.random(20_000, 300, density=0.05, format="csr", random_state=1)
    score = X @ rng.normal(size=300)
    return X, np.where(score + 0.05 * rng.normal(size=20_000) > np.median(score), 1.0, -1.0)


def _perturbed_minimiser(problem, rng):
    """A design, its labels, the certified minimiser and a point 1e-3 away from it
    (liblinear's error at 1e6 rows)."""
    from skdp.linear_model._base import solver_design

    X, y = problem(rng)
    design = solver_design(X, data_norm=1.0, fit_intercept=True, intercept_scaling=1.0)
    theta, distance, _ = certified_hinge_minimiser(design, y, C=0.01, target_distance=1e-6,
                                                   max_iter=1000)
    assert distance <= 1e-6
    return design, y, theta, theta + 1e-3 * rng.normal(size=theta.size)


@pytest.mark.parametrize("problem", [_dense_problem, _sparse_problem])
def test_band_huber_path_recovers_the_partition_that_polishing_misses(problem, monkeypatch):
    """Polishing the margin partition of a point 1e-3 from the minimiser (its prefixes
    only: no active-set steps) certifies only a distance of about 0.1; the Huber path
    over the rows nearest its margin, the others held on their side, gives a point
    whose polish certifies the minimiser to rounding level, without a pass of
    Newton's method over every row."""
    from skdp.solvers import _hinge

    monkeypatch.setattr(_hinge, "_ACTIVE_SET_STEPS", 0)
    design, y, theta, start = _perturbed_minimiser(problem, np.random.default_rng(0))
    alone = _hinge._polish(design, y, 0.01, start, (None, np.inf), 1e-6)
    assert alone[1] > 1e-2
    band_start, _ = _hinge._band_huber_path(design, y, 0.01, start, max_iter=1000)
    polished, certified = _hinge._polish(design, y, 0.01, band_start, (None, np.inf), 1e-6)
    assert certified <= 1e-6
    np.testing.assert_allclose(polished, theta, atol=2e-6)


def test_active_set_steps_certify_where_no_prefix_of_the_band_does(monkeypatch):
    """On the sparse problem, no prefix of the band (rows by distance to the margin of
    a point 1e-3 from the minimiser) certifies better than about 0.1; active-set steps
    from the best prefix (rows at a bound leave the margin set, rows on the wrong side
    join it) reach the minimiser."""
    from skdp.solvers import _hinge

    design, y, theta, start = _perturbed_minimiser(_sparse_problem, np.random.default_rng(0))
    with monkeypatch.context() as patch:
        patch.setattr(_hinge, "_ACTIVE_SET_STEPS", 0)
        assert _hinge._polish(design, y, 0.01, start, (None, np.inf), 1e-6)[1] > 1e-2
    polished, certified = _hinge._polish(design, y, 0.01, start, (None, np.inf), 1e-6)
    assert certified <= 1e-6
    np.testing.assert_allclose(polished, theta, atol=2e-6)


def test_kddcup99_hinge_certifies():
    """KDDCup99 at C = 0.01 raised ConvergenceError: near its margin lie 13 distinct
    points (of 67 rows) spanning 12 dimensions, so no prefix of the band could sit on
    the margin; the active-set steps certify it."""
    from skdp import OutputPertSVM
    from skdp.datasets import load_kddcup99

    from ..conftest import shared_data_home

    try:
        data = load_kddcup99(data_home=shared_data_home(), download_if_missing=False)
    except OSError:
        pytest.skip("KDDCup99 not available")
    model = OutputPertSVM(epsilon=1.0, C=0.01, random_state=0).fit(data.X_train, data.y_train)
    assert model.score(data.X_test, data.y_test) > 0.95


def test_kddcup99_certifies_from_liblinears_first_partition(monkeypatch):
    """At the default C (and at 0.01) liblinear's first point (tolerance 1e-4) certifies
    by its own polish: the margin bands' bounded least squares solved exactly (bvls).
    The projected Newton steps stopped above their minimum there, and the fit needed
    the band's Huber path (a fit as run took 2.4x LinearSVC())."""
    from skdp import OutputPertSVM
    from skdp.datasets import load_kddcup99
    from skdp.solvers import _hinge

    from ..conftest import shared_data_home

    try:
        data = load_kddcup99(data_home=shared_data_home(), download_if_missing=False)
    except OSError:
        pytest.skip("KDDCup99 not available")

    def refuse(*args, **kwargs):
        raise AssertionError("the band's Huber path was needed")

    monkeypatch.setattr(_hinge, "_band_huber_path", refuse)
    for C in ("auto", 0.01):
        OutputPertSVM(epsilon=1.0, C=C, data_norm=1.0, random_state=0).fit(data.X_train,
                                                                          data.y_train)


def test_band_caps_grow_only_where_the_shape_lets_the_band_grow():
    """The larger band cap is tried only where the smaller one truncates the
    ``10 d + 100`` rows nearest the margin (dense rows of d entries; sparse bands
    capped on their Gram matrix)."""
    from skdp.solvers._hinge import _BAND_ENTRIES, _band_caps, _band_rows

    small, large = _BAND_ENTRIES
    assert _band_caps(np.empty((1_000_000, 101))) == [small]
    assert _band_caps(np.empty((6000, 5001))) == [small, large]
    assert _band_rows(np.empty((6000, 5001)), small) == small // 5001
    assert _band_caps(sp.csr_matrix((50_000, 50_000))) == [small, large]
    assert _band_caps(sp.csr_matrix((1000, 50_000))) == [small]


def test_band_counts_try_the_largest_jump_first():
    """The cut after the support vectors (distances at liblinear's tolerance, then a
    jump to the other rows) comes first, rows exactly on the margin (distance 0) making
    no jump; every other cut and width follows, smallest first, each once."""
    from skdp.solvers import _hinge

    distances = np.r_[0.0, 0.0, np.linspace(1e-9, 5e-8, 40), np.linspace(1e-3, 0.5, 60)]
    counts = _hinge._band_counts(distances)
    assert counts[0] == 42                      # the two zeros and the 40 near rows
    rest = counts[1:]
    assert np.all(np.diff(rest) > 0) and 42 not in rest
    widths = np.searchsorted(distances, _hinge._MARGIN_BANDS, side="right")
    assert set(widths) <= set(counts)
    assert len(counts) <= _hinge._N_JUMP_BANDS + len(_hinge._MARGIN_BANDS)
