"""ScaledDesign: the clipped, intercept-augmented design without a copy of X, against
the explicit design it stands for."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose

from skdp import ObjPertLogisticRegression
from skdp.linear_model._base import design_matrix, solver_design
from skdp.losses import LogisticLoss
from skdp.solvers import glm_hessian, newton_minimise
from skdp.solvers._design import RowBuffers, ScaledDesign

from ._memory import peak_allocation


def _pair(fit_intercept=True, seed=0):
    X = np.random.default_rng(seed).normal(size=(70, 4))  # many rows outside the ball
    kwargs = dict(data_norm=1.5, fit_intercept=fit_intercept, intercept_scaling=0.7)
    return solver_design(X, **kwargs), design_matrix(X, **kwargs), X


def _check_max_row_norm(implicit, explicit):
    """The largest row norm: as given by clipping, and as computed by blocks of rows
    when not given."""
    largest = np.linalg.norm(explicit, axis=1).max()
    assert_allclose(implicit.max_row_norm(), largest, rtol=1e-12)
    computed = ScaledDesign(implicit.X, implicit.scale, implicit.intercept,
                            wide=getattr(implicit, "wide", None))
    assert_allclose(computed.max_row_norm(), largest, rtol=1e-12)
    assert_allclose(implicit.subset(slice(0, 9)).max_row_norm(), largest, rtol=1e-12)


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_products_blocks_and_norms_are_the_explicit_design_s(fit_intercept):
    implicit, explicit, X = _pair(fit_intercept)
    assert isinstance(implicit, ScaledDesign) and implicit.scale is not None
    assert implicit.shape == explicit.shape
    rng = np.random.default_rng(1)
    theta, matrix = rng.normal(size=explicit.shape[1]), rng.normal(size=(explicit.shape[1], 3))
    values, rows = rng.normal(size=70), rng.normal(size=(70, 3))
    assert_allclose(implicit @ theta, explicit @ theta, rtol=1e-12, atol=1e-12)
    assert_allclose(implicit @ matrix, explicit @ matrix, rtol=1e-12, atol=1e-12)
    assert_allclose(implicit.T @ values, explicit.T @ values, rtol=1e-12, atol=1e-12)
    assert_allclose(implicit.T @ rows, explicit.T @ rows, rtol=1e-12, atol=1e-12)
    assert_allclose(rows.T @ implicit, rows.T @ explicit, rtol=1e-12, atol=1e-12)
    assert_allclose(implicit.T @ implicit, explicit.T @ explicit, rtol=1e-12, atol=1e-12)
    for index in (slice(3, 17), slice(None, None, 4), np.array([5, 0, 69]),
                  np.arange(70) % 3 == 0):
        assert_allclose(implicit[index], explicit[index], rtol=1e-15)
    assert_allclose(implicit[-1], explicit[-1], rtol=1e-15)
    assert_allclose(implicit.every(3)[:], explicit[::3], rtol=1e-15)
    assert_allclose(implicit.row_norms(), np.linalg.norm(explicit, axis=1), rtol=1e-12, atol=1e-12)
    _check_max_row_norm(implicit, explicit)
    assert_allclose(implicit.toarray(), explicit, rtol=1e-15)
    # the clipped rows are on the ball, and X itself is untouched
    assert np.linalg.norm(explicit[:, :4], axis=1).max() <= 1.5 * (1 + 1e-15)
    assert np.linalg.norm(X, axis=1).max() > 1.5


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_weighted_blocks_are_the_explicit_design_s(fit_intercept, monkeypatch):
    """The blockwise weighted squares, weighted rows and the blocks' products, over
    blocks of a few rows (the last one partial), against the explicit design."""
    from skdp.solvers import _design

    monkeypatch.setattr(_design, "_CACHE_BYTES", 8 * 5 * 16)  # blocks of 16 or 20 rows
    implicit, explicit, X = _pair(fit_intercept)
    rng = np.random.default_rng(7)
    weights, per_class = rng.random(70), rng.random((70, 3))
    assert_allclose(implicit.weighted_column_squares(weights),
                    (explicit**2).T @ weights, rtol=1e-12)
    assert_allclose(implicit.weighted_column_squares(per_class),
                    (explicit**2).T @ per_class, rtol=1e-12)
    assert_allclose(implicit.weighted_rows(weights), weights[:, None] * explicit, rtol=1e-15)
    assert_allclose(_design.as_design(X).weighted_column_squares(weights),
                    (X**2).T @ weights, rtol=1e-12)
    v = rng.normal(size=explicit.shape[1])
    stops, total = [], np.zeros(explicit.shape[1])
    for start, stop, block in implicit.blocks():
        stops.append(stop)
        total += block.T @ (weights[start:stop] * (block @ v))
    rows = 16 if fit_intercept else 20
    assert stops == list(range(rows, 70, rows)) + [70]
    assert_allclose(total, explicit.T @ (weights * (explicit @ v)), rtol=1e-12)


def test_rows_inside_the_ball_keep_no_factors():
    X = np.random.default_rng(2).normal(size=(20, 3)) / 10
    design = solver_design(X, data_norm=1.0, fit_intercept=True, intercept_scaling=1.0)
    assert design.scale is None and design.X is X


def test_never_converted_implicitly():
    implicit, _, _ = _pair()
    with pytest.raises(TypeError, match="never converted implicitly"):
        np.asarray(implicit)


def test_newton_on_the_implicit_design_is_newton_on_the_explicit_one():
    implicit, explicit, _ = _pair(seed=3)
    y = np.where(np.random.default_rng(4).random(70) < 0.5, -1.0, 1.0)
    linear = np.random.default_rng(5).normal(size=explicit.shape[1])
    runs = [newton_minimise(design, y, LogisticLoss(), C=2.0, ridge=1.0, linear=linear,
                            tol=1e-10, max_iter=50) for design in (implicit, explicit)]
    assert all(run.certified_norm <= 1e-10 for run in runs)
    # both within 1e-10 of the one minimiser (strong convexity 1)
    assert np.linalg.norm(runs[0].theta - runs[1].theta) <= 2e-10
    assert_allclose(glm_hessian(runs[0].theta, implicit, y, LogisticLoss(), 2.0, 1.0),
                    glm_hessian(runs[0].theta, explicit, y, LogisticLoss(), 2.0, 1.0),
                    rtol=1e-12)


def test_hinge_on_the_implicit_design_is_hinge_on_the_explicit_one():
    """liblinear gets the clipped rows and its own bias feature for the intercept
    column: the certified minimiser is the explicit design's, within the two
    certificates."""
    from skdp.solvers import certified_hinge_minimiser

    implicit, explicit, _ = _pair(seed=7)
    y = np.where(np.random.default_rng(8).random(70) < 0.5, -1.0, 1.0)
    runs = [certified_hinge_minimiser(design, y, C=0.5, target_distance=1e-6, max_iter=10_000)
            for design in (implicit, explicit)]
    assert all(distance <= 1e-6 for _, distance, _ in runs)
    assert np.linalg.norm(runs[0][0] - runs[1][0]) <= runs[0][1] + runs[1][1]
    assert abs(runs[0][0][-1]) > 1e-3  # the intercept coefficient is not vacuous


def test_hinge_gives_liblinear_rows_clipped_by_rounding_only_as_they_are():
    """Rows of norm data_norm up to rounding (clipping factors 1 - 1e-16) are not
    copied for liblinear; the certificate, computed on the exact design, still holds."""
    from skdp import OutputPertSVM
    from skdp.solvers import certified_hinge_minimiser

    rng = np.random.default_rng(9)
    X = rng.normal(size=(20_000, 40))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    X[::3] *= 1 + 4e-16  # just outside the ball: factors below 1 by rounding
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=20_000) > 0, 1, -1)
    design = solver_design(X, data_norm=1.0, fit_intercept=True, intercept_scaling=1.0)
    assert design.scale is not None and design.scale.min() < 1.0
    theta, distance, _ = certified_hinge_minimiser(design, y.astype(float), C=0.01,
                                                    target_distance=1e-6, max_iter=10_000)
    explicit = design.toarray()
    exact, exact_distance, _ = certified_hinge_minimiser(explicit, y.astype(float), C=0.01,
                                                         target_distance=1e-6, max_iter=10_000)
    assert distance <= 1e-6 and np.linalg.norm(theta - exact) <= distance + exact_distance
    estimator = OutputPertSVM(C=0.01, random_state=0)
    estimator.fit(X[:100], y[:100])
    peak = peak_allocation(lambda: estimator.fit(X, y))  # numpy's allocations only
    assert peak < X.nbytes / 2, (peak, X.nbytes)


def test_fits_do_not_copy_X():
    """ObjPert and DP-GD read X in place: their peak allocation during a fit (numpy's
    allocations are traced) is well below one copy of X (the explicit design took
    more than X itself)."""
    from skdp import DPSGDClassifier

    X = np.random.default_rng(6).normal(size=(40_000, 50))
    y = (X[:, 0] > 0).astype(int)
    for estimator in (ObjPertLogisticRegression(random_state=0),
                      DPSGDClassifier(epochs=2, random_state=0)):
        estimator.fit(X[:100], y[:100])  # imports and caches outside the measurement
        peak = peak_allocation(lambda: estimator.fit(X, y))
        assert peak < X.nbytes / 2, (type(estimator).__name__, peak, X.nbytes)


def test_objective_perturbation_on_a_tall_design_keeps_few_row_vectors():
    """The Newton solver holds the predictor and the line search's candidate, and
    evaluates the per-row losses by chunks of rows: the peak of a fit on a tall X is
    about five vectors of n values beyond X (it was nine: the row norms, the slopes
    and the loss's temporaries, each of n)."""
    n = 200_000
    X = np.random.default_rng(6).normal(size=(n, 5))
    X /= 1.01 * np.linalg.norm(X, axis=1, keepdims=True)
    y = (X[:, 0] > 0).astype(int)
    estimator = ObjPertLogisticRegression(random_state=0)
    estimator.fit(X[:100], y[:100])
    peak = peak_allocation(lambda: estimator.fit(X, y))
    assert peak < 6 * 8 * n, peak / (8 * n)


@pytest.mark.parametrize("sample_rate", [1.0, 0.1])
def test_dp_gd_on_a_tall_design_keeps_few_row_vectors(sample_rate):
    """DP-GD holds the targets, the clipping factors and the row norms (three vectors
    of n) and, within a step, a block's residuals: the peak of a fit on a tall X that
    streams by blocks is under four vectors of n values beyond X. It was six: the
    label encoding's sort held four at once, and every step kept a vector of n clip
    factors that only the derivative in epsilon reads. A Poisson batch is read by
    blocks too (a copy of the batch would be 1.2 vectors of n here)."""
    from skdp import DPSGDClassifier

    n = 400_000
    X = np.random.default_rng(6).normal(size=(n, 12))  # 38 MB: read by blocks
    X /= 1.01 * np.linalg.norm(X, axis=1, keepdims=True)
    y = (X[:, 0] > 0).astype(int)
    estimator = DPSGDClassifier(sample_rate=sample_rate, epochs=2, random_state=0)
    estimator.fit(X[:100], y[:100])
    peak = peak_allocation(lambda: estimator.fit(X, y))
    assert peak < 4 * 8 * n, peak / (8 * n)


def test_dp_sgd_on_a_wide_sparse_design_keeps_few_coefficient_vectors():
    """DP-SGD on a wide CSR (the coefficients, d values, dominate) holds the first
    iterate its caller keeps, the iterate, the sum of the averaged ones, the velocity,
    and one vector more at a time: the product ``X.T @ r`` that scipy allocates, then
    the step's noise: five vectors of d. It held six while the noise had a buffer of
    its own beside the product, and eight before that: a step's noise was a new array
    drawn while the last step's was still held, and the product was copied to join the
    intercept's entry."""
    from skdp import DPSGDClassifier

    n, d = 2000, 200_000
    rng = np.random.default_rng(0)   # five entries a row: tiny batches
    X = sp.csr_matrix((rng.uniform(size=5 * n), rng.integers(0, d, 5 * n),
                       np.arange(0, 5 * n + 1, 5)), shape=(n, d))
    X.sum_duplicates()
    y = rng.integers(0, 2, n)
    estimator = DPSGDClassifier(epochs=2, data_norm=1.0, random_state=0)
    estimator.fit(X, y)   # lazy imports and the accountant's cache before the measure
    peak = peak_allocation(lambda: estimator.fit(X, y))
    assert peak < 5.5 * 8 * d, peak / (8 * d)


def test_dp_sgd_gathers_its_sparse_batches_into_the_same_arrays(monkeypatch):
    """The rows of a sparse Poisson batch are gathered into the arrays of the last
    step's batch (:class:`RowBuffers`), not into new ones: a new array of a batch's size
    at every step lands, by glibc's choice, now in the heap and now in memory mapped
    for it, and a fit's peak resident memory then held two batches in most processes
    (``test_dp_sgd_peak_resident_memory_stays_near_its_floor``). Over 50 steps the
    batches' values lie in at most two arrays (the first, and one grown by a batch
    larger than the first): the gather made 50."""
    from skdp import DPSGDClassifier
    from skdp.linear_model import _dpsgd

    n, d = 4000, 20_000
    rng = np.random.default_rng(0)
    X = sp.csr_matrix((rng.uniform(size=5 * n), rng.integers(0, d, 5 * n),
                       np.arange(0, 5 * n + 1, 5)), shape=(n, d))
    X.sum_duplicates()
    y = rng.integers(0, 2, n)
    owners, steps = {}, []
    clipped_sum = _dpsgd.clipped_gradient_sum

    def recorded(Xb, *args, **kwargs):
        data = Xb.X.data
        owner = data if data.base is None else data.base
        owners[id(owner)] = owner   # held, so that no id is reused
        steps.append(Xb.shape[0])
        return clipped_sum(Xb, *args, **kwargs)

    monkeypatch.setattr(_dpsgd, "clipped_gradient_sum", recorded)
    estimator = DPSGDClassifier(epochs=5, data_norm=1.0, random_state=0).fit(X, y)
    assert len(steps) == estimator.n_steps_ == 50 and max(steps) < n
    assert len(owners) <= 2, len(owners)


@pytest.mark.slow
def test_dp_sgd_peak_resident_memory_stays_near_its_floor(tmp_path):
    """The growth of the peak resident set (``VmHWM``) of a DP-SGD fit with defaults on
    an RCV1-shaped CSR (50,000 x 50,000, 50 entries a row; the benchmark's design and
    its measure, in fresh processes) stays within 1.5x its floor, the four vectors of
    the coefficients' size and the default batch's gathered values and indices
    (``docs/scaling.rst``, "Memory of a sparse DP-SGD fit"). With a new array for each
    step's batch most processes held two batches at their peak: 1.9x the floor in 5 of
    7 processes, 1.44x in the others. Five processes, each within the bound."""
    if not sys.platform.startswith("linux"):
        pytest.skip("reads /proc/self/status")
    n = d = 50_000
    rng = np.random.default_rng(0)
    X = sp.csr_matrix((rng.uniform(size=50 * n), rng.integers(0, d, 50 * n),
                       np.arange(0, 50 * n + 1, 50)), shape=(n, d))
    X.sum_duplicates()
    X.data /= np.repeat(sp.linalg.norm(X, axis=1), np.diff(X.indptr))   # unit rows
    path = tmp_path / "rcv1_shaped.npz"
    sp.save_npz(path, X)
    np.save(tmp_path / "labels.npy", (X @ rng.standard_normal(d) > 0).astype(int))
    floor = 4 * 8 * (d + 1) + 0.1 * X.nnz * (8 + 4)   # q = 0.1; float64, int32
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    for _ in range(5):
        done = subprocess.run([sys.executable, "-W", "ignore", "-c", _PEAK_CHILD, str(path),
                               str(tmp_path / "labels.npy")], capture_output=True,
                              text=True, env=env, check=True, timeout=300)
        growth = json.loads(done.stdout.strip().splitlines()[-1])["growth"]
        assert growth < 1.5 * floor, (growth / 2**20, floor / 2**20)


_PEAK_CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    import scipy.sparse as sp
    from skdp import DPSGDClassifier

    def status(field):
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) * 1024 for line in f
                        if line.startswith(field + ":"))

    X, y = sp.load_npz(sys.argv[1]), np.load(sys.argv[2])
    DPSGDClassifier(epsilon=1.0, random_state=0).fit(X[:200], y[:200])   # imports
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")   # resets VmHWM
    before = status("VmRSS")
    DPSGDClassifier(epsilon=1.0, random_state=0).fit(X, y)
    print(json.dumps({"growth": status("VmHWM") - before}))
""")


def _sparse_pair(fit_intercept=True, seed=0):
    X = sp.random(90, 6, density=0.5, format="csr", random_state=seed) * 3.0  # many clipped
    X = sp.csr_matrix(sp.diags_array((np.arange(90) != 4).astype(float)) @ X)  # row 4 empty
    X.eliminate_zeros()
    X.sum_duplicates()  # canonical: read as it is
    kwargs = dict(data_norm=1.5, fit_intercept=fit_intercept, intercept_scaling=0.7)
    return solver_design(X, **kwargs), design_matrix(X.toarray(), **kwargs), X


@pytest.mark.parametrize("buffer_bytes", [8 * 7, None])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_a_sparse_design_is_the_explicit_design(fit_intercept, buffer_bytes, monkeypatch):
    """The implicit design of a CSR X (no copy of X) against the explicit dense design:
    products, rows (CSR), norms, squares and Gram matrices, with square blocks of a
    few rows (the empty row alone in its block, or inside the one block)."""
    from skdp.solvers import _design

    monkeypatch.setattr(_design, "_CACHE_BYTES", 8 * 7)
    if buffer_bytes:
        monkeypatch.setattr(_design, "_BUFFER_BYTES", buffer_bytes)  # blocks of 2 rows
    implicit, explicit, X = _sparse_pair(fit_intercept)
    assert implicit.sparse and implicit.X is X and implicit.scale.min() < 0.6
    assert implicit.nnz == X.nnz + (90 if fit_intercept else 0)
    rng = np.random.default_rng(1)
    theta, matrix = rng.normal(size=explicit.shape[1]), rng.normal(size=(explicit.shape[1], 3))
    values, rows = rng.normal(size=90), rng.normal(size=(90, 3))
    assert_allclose(implicit @ theta, explicit @ theta, rtol=1e-12, atol=1e-12)
    assert_allclose(implicit @ matrix, explicit @ matrix, rtol=1e-12, atol=1e-12)
    assert_allclose(implicit.T @ values, explicit.T @ values, rtol=1e-12, atol=1e-12)
    assert_allclose(rows.T @ implicit, rows.T @ explicit, rtol=1e-12, atol=1e-12)
    assert_allclose(implicit.T @ implicit, explicit.T @ explicit, rtol=1e-12, atol=1e-12)
    assert_allclose(implicit.weighted_gram(values**2),
                    explicit.T @ (values[:, None]**2 * explicit), rtol=1e-12, atol=1e-12)
    assert_allclose(implicit.weighted_column_squares(values**2),
                    (explicit**2).T @ values**2, rtol=1e-12)
    assert_allclose(implicit.weighted_column_squares(rows**2),
                    (explicit**2).T @ rows**2, rtol=1e-12)
    assert_allclose(implicit.row_norms(), np.linalg.norm(explicit, axis=1), rtol=1e-12)
    _check_max_row_norm(implicit, explicit)
    for index in (slice(3, 17), np.array([5, 0, 89, 4])):
        block = implicit[index]
        assert sp.issparse(block) and block.format == "csr"
        assert_allclose(block.toarray(), explicit[index], rtol=1e-15)
    assert_allclose((implicit.subset(np.array([7, 2])) @ theta), explicit[[7, 2]] @ theta,
                    rtol=1e-12)
    assert_allclose(implicit.every(4).toarray(), explicit[::4], rtol=1e-15)
    assert_allclose(implicit.toarray(), explicit, rtol=1e-15)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_transpose_product_into_out_adds_the_same_values(fit_intercept, sparse):
    """``transpose_product(v, out=o)`` is ``o + transpose_product(v)`` bit for bit (the
    same additions, no joined copy), for a vector and for columns."""
    implicit = (_sparse_pair if sparse else _pair)(fit_intercept)[0]
    rng = np.random.default_rng(3)
    for values in (rng.normal(size=implicit.shape[0]),
                   rng.normal(size=(implicit.shape[0], 2))):
        start = rng.normal(size=(implicit.shape[1],) + values.shape[1:])
        out = start.copy()
        assert implicit.transpose_product(values, out=out) is out
        np.testing.assert_array_equal(out, start + implicit.transpose_product(values))


@pytest.mark.parametrize("private_gather", [True, False], ids=["scipy", "fallback"])
def test_row_buffers_gather_the_rows_into_the_same_arrays(private_gather, monkeypatch):
    """Blocks of rows gathered into :class:`RowBuffers` are ``X[rows]`` exactly (an
    empty row, an empty block, rows repeated or in reverse order), and a subset of a
    design with buffers is the subset without them. The blocks are views of the same
    two arrays until a block needs more than they hold (scipy copies a block of less
    than half of them, as it does any view that small). Also through the public gather
    that stands in when scipy's private one is missing."""
    from skdp.utils import _scipy_compat

    if not private_gather:
        monkeypatch.setattr(_scipy_compat, "csr_row_index", None)
    implicit, _, X = _sparse_pair()
    buffers = RowBuffers()
    blocks = (np.arange(2, 90, 5), np.arange(4, 90, 5), np.array([4, 0, 89, 4]),
              np.array([], dtype=np.intp), np.arange(90), np.arange(89, 0, -1))
    gathered = []
    for rows in blocks:
        block = buffers.gather(X, rows)
        assert type(block) is type(X) and block.shape == (rows.size, X.shape[1])
        expected = X[rows]
        np.testing.assert_array_equal(block.indptr, expected.indptr)
        np.testing.assert_array_equal(block.indices, expected.indices)
        np.testing.assert_array_equal(block.data, expected.data)
        gathered.append(block)
        subset = implicit.subset(rows, RowBuffers())
        np.testing.assert_array_equal(subset.toarray(), implicit.subset(rows).toarray())
    # 49 values, then 42 in the same arrays; all 268 in larger ones, then 267 in those
    first, second, _, _, every, reversed_rows = gathered
    for block, before, shared in ((second, first, True), (every, second, False),
                                  (reversed_rows, every, True)):
        assert np.shares_memory(block.data, before.data) == shared
        assert np.shares_memory(block.indices, before.indices) == shared


def test_a_csr_with_duplicate_entries_is_clipped_by_its_true_rows():
    """A stored row (0.8, 0.8) in one column is the value 1.6: its clipping factor
    is 1 / 1.6, not the 1 / 1.13 that its stored values' squares would give; the
    caller's matrix is not modified."""
    X = sp.csr_matrix((np.array([0.8, 0.8, 0.5]), np.array([0, 0, 1]), np.array([0, 2, 3])),
                      shape=(2, 3))
    assert not X.has_canonical_format
    design = solver_design(X, data_norm=1.0, fit_intercept=False, intercept_scaling=1.0)
    assert_allclose(design.toarray(), [[1.0, 0.0, 0.0], [0.0, 0.5, 0.0]], rtol=1e-15)
    assert_allclose(design.row_norms(), [1.0, 0.5], rtol=1e-15)
    assert X.data.size == 3 and not X.has_canonical_format


def test_sparse_fits_do_not_copy_X():
    """ObjPert and DP-GD read a CSR X in place: the peak of numpy's allocations during
    a fit is well below X's stored arrays (clipping and the intercept column were a
    new CSR matrix, and the squares another). The hinge gives liblinear the clipped
    values on X's own index arrays (two thirds of X's stored bytes; liblinear's input
    checks add a little)."""
    from skdp import DPSGDClassifier, OutputPertSVM

    rng = np.random.default_rng(0)
    n, d, per_row = 40_000, 20_000, 50
    X = sp.csr_matrix((rng.random(n * per_row), rng.integers(0, d, n * per_row),
                       np.arange(0, n * per_row + 1, per_row)), shape=(n, d))
    X.sum_duplicates()  # canonical, so read in place; norms about 4: rows clipped
    score = X @ rng.normal(size=d)
    y = (score > np.median(score)).astype(int)
    stored = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
    for estimator, share in ((ObjPertLogisticRegression(random_state=0), 0.5),
                             (OutputPertSVM(C=0.01, random_state=0), 1.25),
                             (DPSGDClassifier(epochs=2, random_state=0), 0.5)):
        estimator.fit(X[:200], y[:200])
        peak = peak_allocation(lambda: estimator.fit(X, y))
        assert peak < share * stored, (type(estimator).__name__, peak, stored)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_columns_of_a_design_are_the_explicit_design_s(fit_intercept, sparse):
    """Column subsets (the two-stage NAPP's support), with and without the intercept
    column, and none at all: still implicit, and the explicit design's columns."""
    implicit, explicit, _ = _sparse_pair(fit_intercept) if sparse else _pair(fit_intercept)
    last = explicit.shape[1] - 1
    for index in ([0, 2, last], [1, 3], [], list(range(last + 1))):
        part = implicit.columns(index)
        assert part.sparse == sparse and part.scale is implicit.scale
        assert_allclose(part.toarray(), explicit[:, index].reshape(len(explicit), -1),
                        rtol=1e-15)
        assert_allclose(part.gram(), explicit[:, index].T @ explicit[:, index], rtol=1e-12,
                        atol=1e-12)
    with pytest.raises(ValueError, match="increasing indices"):
        implicit.columns([2, 1])
    with pytest.raises(ValueError, match="increasing indices"):
        implicit.columns([last + 1])


# Rows that defeat clipping by plain sums of squares: squares that overflow (1e200), a
# norm beyond float64 (two 1e308), 1e308 beside ordinary entries, squares that underflow
_EXTREME_ROWS = {3: [1e200, -3.0, 0.5, 0.0], 17: [1e308, 0.0, -1e308, 0.0],
                 40: [1e308, 1.0, 1e308, 1.0], 55: [1e-200, -1e-200, 0.0, 1e-200]}


def _extreme_pair(fit_intercept, sparse, data_norm=1.5):
    """A design with extreme rows among ordinary ones, and the explicit clipped design
    built row by row from each row's direction (scaled by its largest entry first)."""
    X = np.random.default_rng(11).normal(size=(70, 4))
    X[5] = 0.0
    for i, row in _EXTREME_ROWS.items():
        X[i] = row
    explicit = np.empty((70, 4 + fit_intercept))
    for i, row in enumerate(X):
        unit = row / max(np.max(np.abs(row)), 1e-300)
        norm_of_unit = np.linalg.norm(unit)
        clipped = norm_of_unit > 0 and np.max(np.abs(row)) * norm_of_unit > data_norm
        explicit[i, :4] = unit * (data_norm / norm_of_unit) if clipped else row
    if fit_intercept:
        explicit[:, 4] = 0.7
    kwargs = dict(data_norm=data_norm, fit_intercept=fit_intercept, intercept_scaling=0.7)
    return solver_design(sp.csr_matrix(X) if sparse else X, **kwargs), explicit, X


@pytest.mark.filterwarnings("error")  # no overflow or NaN escapes, even as a warning
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_a_design_clips_rows_whose_norm_overflows(fit_intercept, sparse, monkeypatch):
    """Wide rows (norm above 1e100) are held clipped apart: every product, row block,
    column subset, square and norm is the explicit clipped design's, finite even
    where the raw row's product with the coefficients overflows (``1e308 * 10``)."""
    from skdp.solvers import _design

    monkeypatch.setattr(_design, "_CACHE_BYTES", 8 * 5 * 16)   # blocks of 16 or 20 rows
    monkeypatch.setattr(_design, "_BUFFER_BYTES", 8 * 5 * 16)
    implicit, explicit, X = _extreme_pair(fit_intercept, sparse)
    assert implicit.wide is not None and list(implicit.wide.index) == [3, 17, 40]
    assert implicit.X is X or sparse   # X itself, never a copy (dense)
    rng = np.random.default_rng(1)
    d = explicit.shape[1]
    theta, matrix = 10.0 * rng.normal(size=d), 10.0 * rng.normal(size=(d, 3))
    values, rows = rng.random(70), rng.random((70, 3))
    for got, want in [(implicit @ theta, explicit @ theta), (implicit @ matrix, explicit @ matrix),
                      (implicit.T @ values, explicit.T @ values),
                      (rows.T @ implicit, rows.T @ explicit),
                      (implicit.T @ implicit, explicit.T @ explicit),
                      (implicit.weighted_gram(values), explicit.T @ (values[:, None] * explicit)),
                      (implicit.weighted_column_squares(values), (explicit**2).T @ values),
                      (implicit.weighted_column_squares(rows), (explicit**2).T @ rows),
                      (implicit.row_norms(), np.linalg.norm(explicit, axis=1))]:
        assert np.all(np.isfinite(got))
        assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    if fit_intercept:
        assert_allclose(implicit.row_norms()[55], np.hypot(np.sqrt(3) * 1e-200, 0.7))
    else:  # the squares underflow, the norm does not
        assert_allclose(implicit.row_norms()[55], np.sqrt(3) * 1e-200, rtol=1e-14)
    _check_max_row_norm(implicit, explicit)
    if not sparse:
        assert_allclose(implicit.weighted_rows(values), values[:, None] * explicit, rtol=1e-15)
    dense = (lambda a: a.toarray()) if sparse else np.asarray
    for index in (slice(2, 41), slice(None, None, 3), np.array([40, 0, 17, 3, 3]),
                  np.arange(70) % 2 == 1):
        assert_allclose(dense(implicit[index]), explicit[index], rtol=1e-15)
        assert_allclose(implicit.subset(index) @ theta, explicit[index] @ theta, rtol=1e-12)
    assert_allclose(dense(implicit.clipped_rows()), explicit[:, :4], rtol=1e-15)
    assert_allclose(implicit.toarray(), explicit, rtol=1e-15)
    total = np.zeros(d)
    for start, stop, block in implicit.blocks():
        total += block.T @ (values[start:stop] * (block @ theta))
    assert_allclose(total, explicit.T @ (values * (explicit @ theta)), rtol=1e-12)
    part = implicit.columns([0, 2])
    assert_allclose(part @ theta[:2], explicit[:, [0, 2]] @ theta[:2], rtol=1e-12)
    assert_allclose(part.gram(), explicit[:, [0, 2]].T @ explicit[:, [0, 2]], rtol=1e-12)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
def test_row_norms_of_a_raw_design_do_not_overflow_or_underflow(sparse):
    """The norms of a design without clipping: 1e200, 1e-200 and two 1e308 entries
    (squares beyond float64) give their true norms; three entries of 1.5e308 a norm
    beyond float64, inf (not NaN)."""
    from skdp.solvers._design import as_design

    X = np.array([[1e200, 0.0, 0.0], [1e-200, 1e-200, 0.0], [1e308, 1e308, 0.0],
                  [1.5e308, 1.5e308, 1.5e308], [3.0, 4.0, 0.0], [0.0, 0.0, 0.0]])
    norms = as_design(sp.csr_matrix(X) if sparse else X).row_norms()
    assert_allclose(norms, [1e200, np.sqrt(2) * 1e-200, np.sqrt(2) * 1e308, np.inf, 5.0, 0.0],
                    rtol=1e-15)


@pytest.mark.filterwarnings("error")  # the wide rows' raw values never overflow
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_left_product_squares_are_the_explicit_product_s(fit_intercept, sparse):
    """The squared row norms of ``A Z`` for a sparse ``A`` (segment sums of weighted
    rows; rows outside the ball and wide rows among them): those of the product with
    the explicit clipped design, and those of scipy's product with the design's own
    explicit rows, to rounding (the rows' factors scale ``A`` instead of the rows)."""
    implicit, explicit, _ = _extreme_pair(fit_intercept, sparse)
    rng = np.random.default_rng(3)
    segments = np.sort(rng.integers(0, 25, size=70))   # some segments empty
    A = sp.csr_matrix((rng.normal(size=70), (segments, np.arange(70))), shape=(25, 70))
    squares = implicit.left_product_squares(A)
    assert_allclose(squares, np.sum((A @ explicit)**2, axis=1), rtol=1e-13, atol=1e-300)
    assert np.all(squares[np.setdiff1d(np.arange(25), segments)] == 0.0)
    product = A @ implicit[:]
    product = product.toarray() if sp.issparse(product) else product
    assert_allclose(squares, np.einsum("ij,ij->i", product, product), rtol=1e-13,
                    atol=1e-300)
    for scaled in (implicit.subset(np.arange(0, 70, 2)), _pair(fit_intercept)[0]):
        A = sp.csr_matrix(rng.normal(size=(6, scaled.shape[0])) * (rng.random((6, 1)) < 0.8))
        explicit_rows = scaled[:].toarray() if sp.issparse(scaled[:]) else scaled[:]
        assert_allclose(scaled.left_product_squares(A), np.sum((A @ explicit_rows)**2, axis=1),
                        rtol=1e-13)
