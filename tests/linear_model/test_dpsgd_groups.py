"""DP-SGD with persons (``fit(X, y, groups=...)``, issue 35).

Each step samples persons and clips the sum of each sampled person's (row-clipped,
weighted) gradients to ``W C`` as a whole; the DP count counts persons. Checked here:
one row per person is exactly the row-level fit; the clipped person sums against a
direct computation; the release against the formula of its noise streams; an exact
privacy profile on neighbours differing by a person of several rows, and a black-box
audit with a planted-bug control; a replay of the real steps in which a many-row
person moves each pre-noise sum by at most ``W C``; refusals before any noise;
pickling.
"""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal
from scipy.special import expit, softmax

import skdp.linear_model._dpsgd as dpsgd_module
from skdp import DPSGDClassifier
from skdp.audit import audit_statistics
from skdp.solvers._design import as_design
from tests._dpsgd_steps import StepRecorder
from tests.audit.test_dpsgd_privacy import _hockey_stick, _release_density

ETA, CLIP = 1.0, 0.5


def _data(n=60, d=3, n_classes=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = rng.integers(0, n_classes, size=n)
    y[:n_classes] = np.arange(n_classes)
    return X, y


# ------------------------------------------------------- one row per person: row level


@pytest.mark.parametrize("params, weighted, n_classes, sparse", [
    (dict(), False, 2, False),
    (dict(sample_rate=1.0, epochs=20), False, 2, False),
    (dict(max_sample_weight=2.0, class_weight={0: 1.5}), True, 2, False),
    (dict(sample_rate=0.2, epochs=3), False, 3, False),
    (dict(loss="hinge", sample_rate=1.0, epochs=5), True, 3, False),
    (dict(), True, 2, True),
])
def test_singletons_give_the_row_level_fit_exactly(params, weighted, n_classes, sparse):
    X, y = _data(80, 4, n_classes)
    X = sp.csr_matrix(X) if sparse else X
    weights = np.random.default_rng(1).uniform(0, 3, 80) if weighted else None
    settings = dict(epsilon=1.0, data_norm=2.0, random_state=3, **params)
    rows = DPSGDClassifier(**settings).fit(X, y, sample_weight=weights)
    persons = DPSGDClassifier(**settings).fit(X, y, sample_weight=weights,
                                              groups=[f"id{i:03d}" for i in range(80)])
    assert_array_equal(persons.coef_, rows.coef_)
    assert_array_equal(persons.intercept_, rows.intercept_)
    assert persons.learning_rate_ == rows.learning_rate_
    assert persons.epsilon_spent_ == rows.epsilon_spent_
    assert (rows.neighboring_, persons.neighboring_) == ("add_remove", "add_remove_person")


# ------------------------------------------------------ the clipped sum, computed directly


def _residuals(scores, y_idx, n_classes):
    """d loss / d scores of the logistic loss: binary margin, else softmax."""
    if n_classes == 2:
        signs = np.where(y_idx == 1, 1.0, -1.0)[:, None]
        return -signs * expit(-signs * scores)
    return softmax(scores, axis=1) - np.eye(n_classes)[y_idx]


def _direct_person_sum(X, y_idx, theta, weights, persons, n_classes, C, W):
    """Each row's gradient r_i x_i^T formed explicitly, clipped to C, weighted; each
    person's sum clipped to W C; the sum over persons (loops: an independent route)."""
    total = np.zeros_like(theta)
    for p in np.unique(persons):
        G = np.zeros_like(theta)
        for i in np.flatnonzero(persons == p):
            r = _residuals((X[i] @ theta.T)[None, :], y_idx[i:i + 1], n_classes)[0]
            g = np.outer(r, X[i])
            G += weights[i] * g * min(1.0, C / max(np.linalg.norm(g), 1e-300))
        total += G * min(1.0, W * C / max(np.linalg.norm(G), 1e-300))
    return total


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("streamed", [False, True])
def test_person_clipped_sum_is_the_direct_computation(n_classes, sparse, streamed,
                                                      monkeypatch):
    rng = np.random.default_rng(5)
    sizes = [1, 2, 5, 1, 3, 7, 1, 4]
    persons = np.repeat(np.arange(len(sizes)), sizes)
    n, d = persons.size, 4
    X = rng.normal(size=(n, d)) * rng.uniform(0.2, 6.0, size=(n, 1))  # some rows clip
    X[rng.random((n, d)) < 0.3] = 0.0
    y_idx = rng.integers(0, n_classes, size=n)
    aligned = persons == 5   # seven similar rows with one label: their gradients add up
    X[aligned] = [4.0, -3.0, 0.0, 1.0] + 0.1 * rng.normal(size=(7, d))
    y_idx[aligned] = 0
    K = 1 if n_classes == 2 else n_classes
    theta = rng.normal(size=(K, d))
    weights = rng.uniform(0.5, 1.5, size=n)
    C, W = 0.7, 1.5
    if streamed:   # dense blocks of about 4 rows, cut at person boundaries
        monkeypatch.setattr(dpsgd_module, "_STREAMED_BYTES", 0)
        monkeypatch.setattr(dpsgd_module, "_cache_rows", lambda d, b=None: 4)
    loss = DPSGDClassifier()._score_loss(n_classes)
    Y = (np.where(y_idx == 1, 1.0, -1.0)[:, None] if n_classes == 2
         else np.eye(n_classes)[y_idx])
    design = sp.csr_matrix(X) if sparse else X
    total, _ = dpsgd_module.clipped_gradient_sum(
        design, Y, theta, loss, C, np.linalg.norm(X, axis=1), weights=weights,
        persons=persons, person_bound=W * C)
    expected = _direct_person_sum(X, y_idx, theta, weights, persons, n_classes, C, W)
    assert_allclose(total, expected, rtol=1e-12, atol=1e-14)
    # the person clip is active on this data: the row-level sum differs
    rows, _ = dpsgd_module.clipped_gradient_sum(design, Y, theta, loss, C,
                                                np.linalg.norm(X, axis=1), weights=weights)
    assert not np.allclose(rows, expected)


def _previous_clip_person_sums(X, R, persons, bound):
    """The person clip as first written (a test oracle for the faster one): one sparse
    indicator per class, built from coordinates, times the explicit rows of the persons
    with several rows."""
    if persons.shape[0] < 2:
        return
    starts = np.r_[True, persons[1:] != persons[:-1]]
    seg = np.cumsum(starts) - 1
    sizes = np.bincount(seg)
    multi = np.flatnonzero(sizes[seg] > 1)
    if multi.size == 0:
        return
    seg = np.unique(seg[multi], return_inverse=True)[1]
    Z = as_design(X)[multi]
    columns = np.arange(multi.size)
    squares = np.zeros(seg[-1] + 1)
    for k in range(R.shape[1]):
        A = sp.csr_matrix((R[multi, k], (seg, columns)), shape=(squares.size, multi.size))
        G = A @ Z
        squares += (np.asarray(G.multiply(G).sum(axis=1)).ravel() if sp.issparse(G)
                    else np.einsum("ij,ij->i", G, G))
    R[multi] *= dpsgd_module.row_clip_factors(np.sqrt(squares), bound)[seg][:, None]


@pytest.mark.parametrize("n_classes", [2, 4])
@pytest.mark.parametrize("sparse", [False, True])
def test_person_clip_is_the_previous_implementation_s(n_classes, sparse, monkeypatch):
    """The person clip and a fit with sampled persons (rows scaled into the ball, an
    intercept, singletons among persons of up to 9 rows, the clip active) against the
    first implementation kept above: the clipped residuals to rounding (the rows'
    factors scale the indicator instead of the rows, and a sparse person's squares are
    summed in the product's stored order: a few ulps in a person's norm, so 1e-13
    relative); the block's sum it returns, the sum of the persons' clipped sums, is
    ``Z^T R`` of those residuals to rounding, and so are whole fits, whose noise is the
    same draws (both fits leave their sampling and noise streams at the same
    position)."""
    rng = np.random.default_rng(8)
    n, d = 400, 6
    X = rng.normal(size=(n, d)) * rng.uniform(0.3, 3.0, size=(n, 1))
    X[rng.random((n, d)) < 0.3] = 0.0
    y = rng.integers(0, n_classes, size=n)
    y[:n_classes] = np.arange(n_classes)
    groups = np.repeat(np.arange(n), rng.integers(1, 10, size=n))[:n]
    groups = rng.permutation(groups.max() + 1)[groups]   # persons' rows not in order
    X = sp.csr_matrix(X) if sparse else X
    # one block: the clip itself, on the design the estimator builds
    est = DPSGDClassifier(data_norm=2.0, random_state=0)
    design = dpsgd_module.solver_design(X, data_norm=2.0, fit_intercept=True,
                                        intercept_scaling=1.0)
    assert design.scale is not None
    codes = np.unique(groups, return_inverse=True)[1]
    order = np.argsort(codes, kind="stable")
    block, persons = design.subset(order), codes[order]
    K = 1 if n_classes == 2 else n_classes
    R = rng.normal(size=(n, K)) * 0.3
    new, old = R.copy(), R.copy()
    total = dpsgd_module._clip_person_sums(block, new, persons, 0.5)
    _previous_clip_person_sums(block, old, persons, 0.5)
    assert_allclose(new, old, rtol=1e-13, atol=0)
    assert_allclose(total, np.asarray(block.T @ new).T, rtol=1e-13, atol=1e-15)
    assert np.any(new != R), "the person clip is inactive: the comparison is vacuous"
    # whole fits with sampled persons, several blocks a step
    monkeypatch.setattr(dpsgd_module, "_cache_rows", lambda d, b=None: 40)
    monkeypatch.setattr(dpsgd_module, "_sparse_block_rows", lambda X, b: 40)
    settings = dict(epsilon=2.0, data_norm=2.0, sample_rate=0.4, epochs=3, random_state=5)
    streams, call_streams = [], dpsgd_module._call_streams
    monkeypatch.setattr(dpsgd_module, "_call_streams",
                        lambda *args: streams.append(call_streams(*args)) or streams[-1])
    fitted = est.set_params(**settings).fit(X, y, groups=groups)
    clipped = []

    def recorded(X, R, persons, bound):
        before = R.copy()
        _previous_clip_person_sums(X, R, persons, bound)
        clipped.append(np.any(R != before))

    monkeypatch.setattr(dpsgd_module, "_clip_person_sums", recorded)
    previous = DPSGDClassifier(**settings).fit(X, y, groups=groups)
    assert len(clipped) > 2 * fitted.n_steps_ and any(clipped)
    assert_allclose(fitted.coef_, previous.coef_, rtol=1e-12, atol=0)
    assert_allclose(fitted.intercept_, previous.intercept_, rtol=1e-12, atol=0)
    assert len(streams) == 2   # the same draws: each stream left at the same position
    for ours, theirs in zip(*streams):
        assert_array_equal(ours.bit_generator.random_raw(4), theirs.bit_generator.random_raw(4))


def test_noiseless_step_is_the_person_sum_over_the_person_count():
    """epsilon=inf, z=0: one full-batch step from 0 is -eta S / P, S the direct person
    sum (rows given in shuffled person order) and P the exact number of persons."""
    X, y = _data(40, 3)
    groups = np.random.default_rng(2).integers(0, 9, size=40)
    est = DPSGDClassifier(epsilon=np.inf, noise_multiplier=0.0, sample_rate=1.0, epochs=1,
                          learning_rate=ETA, momentum=0.0, average=0.0, alpha=0.0,
                          fit_intercept=False, max_grad_norm=CLIP, data_norm=100.0,
                          random_state=0).fit(X, y, groups=groups)
    P = np.unique(groups).size
    S = _direct_person_sum(X, y, np.zeros((1, 3)), np.ones(40), groups, 2, CLIP, 1.0)
    assert_allclose(est.coef_, -ETA * S / P, rtol=1e-12)
    assert est.neighboring_ == "add_remove_person"


def test_blocks_hold_whole_persons(monkeypatch):
    """Poisson steps through small blocks give the fit of one block per step (up to
    rounding): no person is split across blocks (a split person would be clipped in
    parts, and the clip is active here)."""
    X, y = _data(300, 3)
    X *= 3.0
    groups = np.random.default_rng(4).integers(0, 40, size=300)
    settings = dict(epsilon=2.0, data_norm=10.0, sample_rate=0.3, epochs=2, random_state=1)
    whole = DPSGDClassifier(**settings).fit(X, y, groups=groups)
    monkeypatch.setattr(dpsgd_module, "_cache_rows", lambda d, b=None: 5)
    blocked = DPSGDClassifier(**settings).fit(X, y, groups=groups)
    assert_allclose(blocked.coef_, whole.coef_, rtol=1e-9)


def test_person_rows_are_gathered_whole():
    rng = np.random.default_rng(0)
    codes = np.sort(rng.integers(0, 30, size=200))
    codes = np.unique(codes, return_inverse=True)[1]
    X, Y, norms = rng.normal(size=(200, 2)), np.ones((200, 1)), np.ones(200)
    *_, persons = dpsgd_module._by_person(X, Y, norms, None, codes)
    chosen = np.sort(rng.choice(codes.max() + 1, size=11, replace=False))
    idx, of = persons.rows(chosen)
    assert_array_equal(idx, np.flatnonzero(np.isin(codes, chosen)))
    assert_array_equal(of, codes[idx])
    # shuffled rows are sorted by person, each with its own targets
    order = rng.permutation(200)
    Xs, Ys, _, _, shuffled = dpsgd_module._by_person(X[order], Y[order], norms, None,
                                                     codes[order])
    assert_array_equal(shuffled.codes, codes)
    assert_array_equal(as_design(Xs)[np.arange(200)], X[order][np.argsort(codes[order],
                                                                          kind="stable")])


# ------------------------------------------------------------- the release and its profile


def _one_step(**params):
    return DPSGDClassifier(sample_rate=1.0, epochs=1, learning_rate=ETA, max_grad_norm=CLIP,
                           alpha=0.0, momentum=0.0, average=0.0, fit_intercept=False,
                           data_norm=1.0, **params)


def _person_neighbours(n, k=3):
    """``n`` single-row persons (x = 1, labels +1 but the first), and the same plus one
    person of ``k`` rows x = 1 labelled -1: each of its rows has gradient +0.5 (norm
    CLIP), together ``k CLIP``, clipped to CLIP."""
    X = np.ones((n, 1))
    y = np.ones(n, dtype=int)
    y[0] = 0
    groups = np.arange(n)
    return ((X, y, groups),
            (np.vstack([X, np.ones((k, 1))]), np.append(y, np.zeros(k, dtype=int)),
             np.append(groups, np.full(k, n))))


def _row_clipped_sum(y):
    return float(np.sum(np.where(y == 1, -0.5, 0.5)))


def test_release_is_the_formula_of_the_person_count_and_the_noisy_sum():
    """Replay the noise streams on D + one person of 3 rows: coef_ = -eta (S + z C xi) /
    max(P_tilde, 1), S with the person's 1.5 clipped to 0.5 and P_tilde the noisy count
    of persons (n + 1, not the n + 3 rows)."""
    (X, y, _), (Xp, yp, gp) = _person_neighbours(5)
    est = _one_step(epsilon=1.0, random_state=11).fit(Xp, yp, groups=gp)
    count_rng, _, noise_rng = dpsgd_module._call_streams(11, 0)
    p_tilde = 6 + est.count_noise_std_ * count_rng.standard_normal()
    xi = noise_rng.standard_normal((1, 1))
    S = _row_clipped_sum(y) + CLIP
    expected = -ETA * (S + est.noise_multiplier_ * CLIP * xi) / max(p_tilde, 1)
    assert_allclose(est.coef_, expected, rtol=1e-12)


@pytest.mark.parametrize("n", [2, 3])
def test_exact_profile_on_person_neighbours_is_within_the_claim(n):
    """The exact (epsilon, delta) of the one-step release on D against D plus one person
    of three rows (the release's formula is checked above)."""
    epsilon, delta = 1.0, 1e-3
    (X, y, groups), _ = _person_neighbours(n)
    est = _one_step(epsilon=epsilon, delta=delta, random_state=0).fit(X, y, groups=groups)
    z, s = est.noise_multiplier_, est.count_noise_std_
    grid = np.linspace(-60, 60, 30_001) * ETA * CLIP
    S = _row_clipped_sum(y)
    p = _release_density(grid, S, n, z, s)
    q = _release_density(grid, S + CLIP, n + 1, z, s)
    assert _hockey_stick(p, q, est.epsilon_spent_, grid) <= delta * 1.01
    # negative control: the person counted once but their rows clipped one by one
    # (no clip of their sum) moves the sum by 3 CLIP, beyond the claim
    q_rows = _release_density(grid, S + 3 * CLIP, n + 1, z, s)
    assert _hockey_stick(p, q_rows, est.epsilon_spent_, grid) > 10 * delta


def _person_release_statistics(n_runs, k):
    """The one-step releases (``coef_``) of ``n_runs`` seeds on D (three single-row
    persons) and on D plus one person of ``k`` rows (a function: recomputed on call),
    the noise fixed to the one calibrated at epsilon 1 (the fits skip the calibration),
    and the certified epsilon."""
    (X, y, groups), (Xp, yp, gp) = _person_neighbours(3, k)
    reference = _one_step(epsilon=1.0, delta=1e-5, random_state=0).fit(X, y, groups=groups)
    fixed = dict(epsilon=1.0, delta=1e-5, noise_multiplier=reference.noise_multiplier_,
                 count_noise_std=reference.count_noise_std_)

    def statistics(X, y, groups, first_seed):
        return [_one_step(random_state=first_seed + i, **fixed).fit(X, y, groups=groups)
                .coef_[0, 0] for i in range(n_runs)]

    return (statistics(X, y, groups, 0), lambda: statistics(Xp, yp, gp, 10**6),
            reference.epsilon_spent_)


@pytest.mark.slow
def test_black_box_audit_on_person_neighbours(monkeypatch):
    """A black-box audit (:func:`~skdp.audit.audit_statistics`, 1000 runs a side) does
    not contradict the claim on a person of six rows; with the person's sum left
    unclipped (a planted bug) it does, on the same seeds."""
    without, with_person, epsilon = _person_release_statistics(1000, k=6)
    result = audit_statistics(without, with_person(), epsilon=epsilon, delta=1e-5)
    assert not result.contradicted, str(result)
    monkeypatch.setattr(dpsgd_module, "_clip_person_sums", lambda *args: None)
    planted = audit_statistics(without, with_person(), epsilon=epsilon, delta=1e-5)
    assert planted.contradicted, str(planted)


# ------------------------------------------------------------------ replay of the steps


@pytest.mark.parametrize("weighted", [False, True])
def test_replay_a_many_row_person_moves_each_sum_by_at_most_the_bound(weighted,
                                                                      monkeypatch):
    """Each step's pre-noise sum with and without the canary person (8 rows, aligned
    gradients, spread through the data) differs by at most W C, the sensitivity the
    noise is scaled to; the same rows clipped one by one would move it by far more."""
    rng = np.random.default_rng(7)
    X, y = _data(120, 2)
    X *= 0.5
    groups = rng.integers(0, 30, size=120).astype(str)
    canary_rows = rng.choice(120, size=8, replace=False)
    X[canary_rows] = [3.0, -2.0]     # one direction, one label: the gradients add up
    y[canary_rows] = 1
    groups[canary_rows] = "zz-canary"  # sorted last: code P - 1
    weights = rng.uniform(0, 3, size=120) if weighted else None
    recorder = StepRecorder(monkeypatch)
    est = DPSGDClassifier(epsilon=np.inf, noise_multiplier=1.0, sample_rate=0.3, epochs=4,
                          learning_rate=1.0, max_grad_norm=0.5, data_norm=5.0,
                          max_sample_weight=2.0, random_state=0)
    est._releases(X, y, sample_weight=weights, groups=groups)
    canary = np.unique(groups).size - 1
    sizes = np.bincount(np.unique(groups, return_inverse=True)[1])
    bound = est.max_grad_norm * est.weight_bound_
    assert len(recorder.steps) == len(recorder.batches) == est._schedule()[1]
    moved, moved_by_rows = [], []
    for chosen, call in zip(recorder.batches, recorder.steps):
        persons = call["persons"]
        assert call["person_bound"] == bound
        # the block holds exactly the sampled persons, each with all of their rows
        assert_array_equal(np.unique(persons), chosen)
        assert_array_equal(np.bincount(persons, minlength=sizes.size)[chosen], sizes[chosen])
        if canary not in chosen:
            continue
        keep = np.flatnonzero(persons != canary)
        w = call["weights"]
        rest = dict(weights=None if w is None else w[keep], persons=persons[keep],
                    person_bound=bound)
        without, _ = recorder.clipped(as_design(call["X"]).subset(keep), call["Y"][keep],
                                      call["theta"], call["loss"], call["max_grad_norm"],
                                      call["row_norms"][keep], **rest)
        moved.append(np.linalg.norm(call["clipped_sum"] - without))
        # negative control: the same rows clipped one by one, not as a person
        plain = dict(weights=w)
        with_rows, _ = recorder.clipped(call["X"], call["Y"], call["theta"], call["loss"],
                                        call["max_grad_norm"], call["row_norms"], **plain)
        without_rows, _ = recorder.clipped(as_design(call["X"]).subset(keep),
                                           call["Y"][keep], call["theta"], call["loss"],
                                           call["max_grad_norm"], call["row_norms"][keep],
                                           weights=rest["weights"])
        moved_by_rows.append(np.linalg.norm(with_rows - without_rows))
    assert len(moved) >= 3, "the canary was sampled too rarely: the replay is vacuous"
    assert max(moved) <= bound * (1 + 1e-9)
    assert max(moved) >= 0.99 * bound            # the canary's sum is clipped: tight
    assert max(moved_by_rows) > 2 * bound


# --------------------------------------------------------------------------- refusals


@pytest.fixture
def no_noise(monkeypatch):
    """Fail the test if a fit draws any noise stream."""
    def refuse(*args, **kwargs):
        raise AssertionError("noise streams were drawn before the refusal")
    monkeypatch.setattr(dpsgd_module, "_call_streams", refuse)


@pytest.mark.parametrize("groups, match", [
    (np.arange(59), "another number of labels"),
    ([None] + list(range(59)), "missing value"),
    (np.zeros((60, 2)), "1-D"),
])
def test_bad_groups_are_refused_before_noise(groups, match, no_noise):
    X, y = _data()
    with pytest.raises(ValueError, match=match):
        DPSGDClassifier(data_norm=2.0, random_state=0).fit(X, y, groups=groups)


def test_unsupported_combinations_are_refused_before_noise(no_noise):
    X, y = _data()
    with pytest.raises(ValueError, match="not offered with groups"):
        DPSGDClassifier(data_norm="private", random_state=0).fit(X, y, groups=np.arange(60))


def test_a_run_keeps_its_unit(monkeypatch):
    X, y = _data()
    groups = np.arange(60) // 3
    est = DPSGDClassifier(data_norm=2.0, epochs=1, random_state=0)
    est.partial_fit(X[:30], y[:30], classes=[0, 1], groups=groups[:30])
    est.partial_fit(X[30:], y[30:], groups=groups[30:])
    assert est.neighboring_ == "add_remove_person" and len(est.dp_events_) == 2
    coef = est.coef_.copy()
    monkeypatch.setattr(dpsgd_module, "_call_streams",
                        lambda *a: pytest.fail("noise drawn before the refusal"))
    with pytest.raises(ValueError, match="unit of privacy"):
        est.partial_fit(X, y)
    assert np.array_equal(est.coef_, coef) and len(est.dp_events_) == 2


def test_warm_start_keeps_its_unit(monkeypatch):
    X, y = _data()
    est = DPSGDClassifier(data_norm=2.0, epochs=1, warm_start=True, random_state=0).fit(X, y)
    monkeypatch.setattr(dpsgd_module, "_call_streams",
                        lambda *a: pytest.fail("noise drawn before the refusal"))
    with pytest.raises(ValueError, match="unit of privacy"):
        est.fit(X, y, groups=np.arange(60) // 2)
    assert est.neighboring_ == "add_remove"


# --------------------------------------------------------------------------- pickling


def test_fitted_person_model_pickles():
    X, y = _data(90, 3, 3)
    est = DPSGDClassifier(data_norm=2.0, random_state=0).fit(X, y, groups=np.arange(90) % 17)
    clone = pickle.loads(pickle.dumps(est))
    assert_array_equal(clone.predict_proba(X), est.predict_proba(X))
    assert clone.neighboring_ == "add_remove_person"
    assert clone.epsilon_spent_ == est.epsilon_spent_
