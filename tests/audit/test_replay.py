"""Record/replay sensitivity and control-flow checks of every estimator (issue 7).

Each check runs an estimator's real pre-noise computation (its ``_releases``, or the
internal functions ``_releases`` calls, recorded through monkeypatch wrappers) on
neighbouring datasets and asserts that the quantity the noise protects moves by
at most the sensitivity the estimator *used*, read back from the calibration it
actually applied:

* objective perturbation (ObjPert, NAPP): the gradient of the unperturbed loss
  sum moves by at most ``zeta`` and each differing record's rank-1 Hessian term
  is at most ``beta_H``, at the released solutions and at adversarial points;
* output perturbation: the exact minimisers move by at most the sensitivity
  behind the noise scale;
* DP-SGD: with the same batches, the clipped gradient sum of each step moves by
  at most ``max_grad_norm``; each step divides by the expected batch size;
* control flow: the random streams consume the same draws on neighbouring data.

The ``check_*`` functions return a list of violations (empty: the check passes);
``tests/audit/test_planted_bugs.py`` runs them against planted calibration bugs
to show that they have power.
"""

import contextlib
from unittest import mock

import numpy as np
import pytest

import skdp.linear_model._dpsgd as dpsgd_module
import skdp.utils._random as random_module
from skdp import DPSGDClassifier, NAPPLassoClassifier, ObjPertLogisticRegression, OutputPertSVM
from skdp.solvers import glm_gradient, glm_hessian
from skdp.mechanisms import split_budget
from tests._dpsgd_steps import StepRecorder

RELATIVE_SLACK = 1e-9  # floating-point slack on every "at most" comparison


# ------------------------------------------------------------------ neighbouring data


def base_data(n=12, seed=0):
    """A small binary problem strictly inside the unit ball (data_norm = 1)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    X *= (rng.uniform(0.2, 0.9, size=n) / np.linalg.norm(X, axis=1))[:, None]
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=n) > 0, 1, 0)
    y[:2] = [0, 1]
    return X, y


def canaries(X, y):
    """Records that stress a bound: on the norm bound against an existing row's label,
    far outside the ball (clipping must bring it back), and an ordinary one."""
    direction = X[2] / np.linalg.norm(X[2])
    return [(direction, 1 - y[2]), (10.0 * np.array([0.6, -0.8]), 1),
            (np.array([0.3, 0.2]), 0)]


def neighbouring_pairs(relation, n=12, seed=0):
    """``(D, D')`` pairs: D' adds a canary (add/remove) or replaces row 0 by it."""
    X, y = base_data(n, seed)
    pairs = []
    for row, label in canaries(X, y):
        if relation == "replace":
            X2, y2 = X.copy(), y.copy()
            X2[0], y2[0] = row, label
        else:
            X2, y2 = np.vstack([X, row]), np.append(y, label)
        pairs.append(((X, y), (X2, y2)))
    return pairs


def differing_records(Xa, ya, Xb, yb, relation):
    """The records of the (clipped) designs that differ between the neighbours."""
    if relation == "replace":
        return [(Xa[0], ya[0]), (Xb[0], yb[0])]
    return [(Xb[-1], yb[-1])]


def probe_points(thetas, records, margins=(-8.0, -2.0, 0.0, 2.0)):
    """The released solutions plus points where each differing record has a given
    margin: a large negative margin maximises ``|f'|``, margin 0 maximises ``f''``."""
    points = [np.asarray(t, float) for t in thetas] + [np.zeros_like(thetas[0])]
    for x, label in records:
        x = np.asarray(x, float)
        for m in margins:
            points.append(m * label * x / max(x @ x, 1e-300))
    return points


def _exceeds(value, bound):
    return value > bound * (1.0 + RELATIVE_SLACK) + 1e-12


# ------------------------------------------------------------ objective perturbation


def objpert_bounds_used(solution, epsilon, delta, relation):
    """``(zeta, beta_H)`` implied by the calibration a fit applied.

    Chaudhuri (pure): the noise scale is ``zeta / eps_noise`` and the Jacobian
    share ``m log(1 + beta_H / ridge)`` is ``epsilon - eps_noise`` (``m = 2``
    replace, 1 add/remove; ``ridge`` includes the extra ridge). KST Gaussian:
    ``s = zeta sqrt(8 log(2/delta) + 4 epsilon) / epsilon`` and ``Delta = 2
    beta_H / epsilon``; both at the mechanism's share of ``(epsilon, delta)`` (the
    rest pays for the cover of the solver's error).
    """
    budget = split_budget(epsilon, delta)
    epsilon, delta = budget.epsilon_mechanism, budget.delta_mechanism
    cal = solution.calibration
    if cal.noise == "gaussian":
        zeta = cal.noise_scale * epsilon / np.sqrt(8.0 * np.log(2.0 / delta) + 4.0 * epsilon)
        return zeta, cal.extra_ridge * epsilon / 2.0
    m = 2.0 if relation == "replace" else 1.0
    zeta = cal.noise_scale * cal.epsilon_noise
    return zeta, solution.ridge * np.expm1((epsilon - cal.epsilon_noise) / m)


def _glm_replay(name, grad, hess, thetas, records, zeta, beta):
    """Violations of ``||grad_D - grad_D'|| <= zeta`` and of ``lambda_max(H_i) <= beta``."""
    violations = []
    for theta in probe_points(thetas, records):
        moved = np.linalg.norm(grad(theta))
        if _exceeds(moved, zeta):
            violations.append(f"{name}: gradient moved {moved:.4g} > zeta={zeta:.4g}")
        for x, label in records:
            top = np.linalg.eigvalsh(hess(theta, x, label))[-1]
            if _exceeds(top, beta):
                violations.append(f"{name}: rank-1 Hessian term {top:.4g} > "
                                  f"beta_H={beta:.4g}")
    return violations


def check_objpert_replay(relation="add_remove", epsilon=1.0, delta=0.0, C=1.0,
                         loss="logistic"):
    """Gradient difference and curvature term of ObjPert vs the bounds it used."""
    violations = []
    for (Xa, ya), (Xb, yb) in neighbouring_pairs(relation):
        est = ObjPertLogisticRegression(epsilon=epsilon, delta=delta, C=C, loss=loss,
                                        neighboring=relation, random_state=0)
        (a,), (b,) = est._releases(Xa, ya), est._releases(Xb, yb)
        zeta, beta = objpert_bounds_used(a, epsilon, delta, relation)
        zero = np.zeros(a.X.shape[1])

        def grad(theta):
            return (glm_gradient(theta, a.X, a.y, a.loss, C, 0.0, zero)
                    - glm_gradient(theta, b.X, b.y, b.loss, C, 0.0, zero))

        def hess(theta, x, label):
            return glm_hessian(theta, x[None, :], np.array([label]), a.loss, C, 0.0)

        records = differing_records(a.X, a.y, b.X, b.y, relation)
        violations += _glm_replay("objpert", grad, hess, [a.theta, b.theta], records, zeta,
                                  beta)
    return violations


def check_napp_replay(relation="add_remove", epsilon=1.0, delta=0.0, alpha=0.1):
    """NAPP (sum form, no C): the same two bounds, read from its calibration."""
    violations = []
    for (Xa, ya), (Xb, yb) in neighbouring_pairs(relation):
        est = NAPPLassoClassifier(epsilon=epsilon, delta=delta, alpha=alpha,
                                  neighboring=relation, random_state=0)
        (a,), (b,) = est._releases(Xa, ya), est._releases(Xb, yb)
        cal = a.calibration
        zeta = (cal.noise_scale * cal.eps_noise if cal.noise == "gamma_norm"
                else cal.sensitivity)
        beta = (cal.penalty_curvature + cal.extra_ridge) * np.expm1(cal.eps_jacobian)
        pa, pb = a.problem, b.problem
        zero = np.zeros(pa.X.shape[1])

        def grad(theta):
            return (glm_gradient(theta, pa.X, pa.y, pa.loss, 1.0, 0.0, zero)
                    - glm_gradient(theta, pb.X, pb.y, pb.loss, 1.0, 0.0, zero))

        def hess(theta, x, label):
            return glm_hessian(theta, x[None, :], np.array([label]), pa.loss, 1.0, 0.0)

        records = differing_records(pa.X, pa.y, pb.X, pb.y, relation)
        violations += _glm_replay("napp", grad, hess, [a.theta, b.theta], records, zeta, beta)
    return violations


# ---------------------------------------------------------------- output perturbation


def check_outpert_replay(relation="add_remove", epsilon=1.0, C=0.01, loss="hinge"):
    """Distance between the certified minimisers vs the sensitivity behind the noise.

    At small ``C`` a record's loss gradient barely moves the others, so the
    minimiser moves by almost the full ``C ||x||``: the bound is nearly attained.
    """
    violations = []
    for (Xa, ya), (Xb, yb) in neighbouring_pairs(relation):
        est = OutputPertSVM(epsilon=epsilon, C=C, loss=loss, neighboring=relation,
                            random_state=0)
        (a,), (b,) = est._releases(Xa, ya), est._releases(Xb, yb)
        used = a.noise_scale() * a.epsilon  # Gamma-norm scale = sensitivity / epsilon
        moved = np.linalg.norm(a.theta_star - b.theta_star)
        if _exceeds(moved, used):
            violations.append(f"outpert: minimiser moved {moved:.4g} > sensitivity "
                              f"{used:.4g}")
    return violations


# ----------------------------------------------------------------------------- DP-SGD


def dpsgd_estimator(**params):
    """Small Poisson-sampled runs; a given noise multiplier skips the (slow) calibration."""
    settings = dict(epsilon=np.inf, delta=1e-3, noise_multiplier=1.0, sample_rate=0.15, epochs=4,
                    max_grad_norm=0.5, learning_rate=1.0, momentum=0.5, alpha=0.01,
                    random_state=0)
    return DPSGDClassifier(**{**settings, **params})


def check_dpsgd_replay(monkeypatch, **params):
    """Per step, with the batch the run drew: ``||S(B) - S(B without canary)|| <= C``.

    Replays the real ``clipped_gradient_sum`` (as the module holds it) at the
    recorded iterate on the batch with and without the added canary.
    """
    recorder = StepRecorder(monkeypatch)
    violations, compared = [], 0
    for _, (Xb, yb) in neighbouring_pairs("add_remove"):
        recorder.reset()
        est = dpsgd_estimator(**params)
        est._releases(Xb, yb)
        canary = len(Xb) - 1
        for idx, step in zip(recorder.batches, recorder.steps):
            if canary not in idx:
                continue
            keep = idx != canary
            C = step["max_grad_norm"]
            without, _ = dpsgd_module.clipped_gradient_sum(
                step["X"][keep], step["Y"][keep], step["theta"], step["loss"], C,
                step["row_norms"][keep])
            moved = np.linalg.norm(step["clipped_sum"] - without)
            compared += 1
            if _exceeds(moved, C):
                violations.append(f"dpsgd: clipped sum moved {moved:.4g} > "
                                  f"max_grad_norm={C:.4g}")
    assert compared > 0, "no step sampled the canary: the replay would be vacuous"
    return violations


def recovered_step_noise(recorder, estimator):
    """Noise of each step, recovered from the recorded trajectory.

    ``theta_{t+1} = theta_t - eta v_t``, ``v_t = mu v_{t-1} + g_t`` and
    ``g_t = (S_t + noise_t) / c + alpha theta_t`` give
    ``noise_t = (g_t - alpha theta_t) c - S_t`` (constant learning rate), with ``c`` the
    run's normaliser (``q`` times the DP row count).
    """
    run = recorder.runs[-1]
    normaliser = run["normaliser"]
    eta, mu, alpha = run["learning_rate"], run["momentum"], run["alpha"]
    thetas = [s["theta"] for s in recorder.steps]
    noises, velocity = [], np.zeros_like(thetas[0])
    for t in range(len(thetas) - 1):
        new_velocity = (thetas[t] - thetas[t + 1]) / eta
        g = new_velocity - mu * velocity
        velocity = new_velocity
        noises.append((g - alpha * thetas[t]) * normaliser
                      - recorder.steps[t]["clipped_sum"])
    return np.array(noises), estimator.noise_multiplier_ * run["max_grad_norm"]


def check_dpsgd_normalisation(monkeypatch):
    """Without noise (``z = 0``, ``epsilon = inf``: the count is exact) each step must be
    exactly ``S_t / (q n) + alpha theta_t``: divided by the expected batch size, never by
    the realised one."""
    recorder = StepRecorder(monkeypatch)
    X, y = base_data(30)
    est = dpsgd_estimator(noise_multiplier=0.0, epsilon=np.inf, sample_rate=1 / 3, epochs=5)
    est._releases(X, y)
    est.noise_multiplier_ = 0.0
    if recorder.runs[-1]["normaliser"] != len(X) / 3:
        return ["dpsgd: the noiseless normaliser is not q n"]
    noise, _ = recovered_step_noise(recorder, est)
    scale = max(np.max(np.abs([s["clipped_sum"] for s in recorder.steps])), 1e-12)
    worst = np.max(np.abs(noise)) / scale
    if worst > 1e-8:
        return [f"dpsgd: a noiseless step is not S_t / (q n) + alpha theta_t (relative "
                f"residual {worst:.3g}): not divided by the expected batch size"]
    return []


def check_dpsgd_noise_std(monkeypatch, n_fits=6):
    """The recovered per-step noise has standard deviation ``noise_multiplier * C``.

    ``n_fits * 23 steps * 3`` coordinates (about 400 values): the standard
    error of the sample standard deviation is about 3.5 %; the check flags a
    ratio outside [0.85, 1.15] (more than 4 standard errors) and a
    Kolmogorov-Smirnov p-value below 1e-3.
    """
    from scipy import stats

    recorder = StepRecorder(monkeypatch)
    X, y = base_data(30)
    ratios = []
    for seed in range(n_fits):
        recorder.reset()
        est = dpsgd_estimator(sample_rate=1 / 3, epochs=8, random_state=seed)
        est._set_fitted(est._releases(X, y))
        noise, sigma = recovered_step_noise(recorder, est)
        ratios.append(noise.ravel() / sigma)
    ratios = np.concatenate(ratios)
    violations = []
    if not 0.85 <= ratios.std() <= 1.15:
        violations.append(f"dpsgd: recovered noise std / (z C) = {ratios.std():.3f}")
    pvalue = stats.kstest(ratios, "norm").pvalue
    if pvalue < 1e-3:
        violations.append(f"dpsgd: recovered noise is not N(0, (z C)^2) (KS p={pvalue:.2g})")
    return violations


# ----------------------------------------------------------------------- control flow


def _state(generator):
    return _frozen(generator.bit_generator.state)


def _frozen(value):
    """A comparable copy of a bit generator's state (ChaCha's holds arrays)."""
    if isinstance(value, dict):
        return tuple(sorted((k, _frozen(v)) for k, v in value.items()))
    if isinstance(value, np.ndarray):
        return tuple(value.ravel().tolist())
    return value


@contextlib.contextmanager
def recorded_noise_streams():
    """The noise generators that fits create while the context is open."""
    created = []
    original = random_module._chacha

    def recording(seed_sequence):
        created.append(original(seed_sequence))
        return created[-1]

    with mock.patch.object(random_module, "_chacha", recording):
        yield created


def check_rng_consumption(make_estimator, relations=("add_remove", "replace")):
    """A fit draws the same random numbers whatever the private data (same seed)."""
    violations = []
    for relation in relations:
        for (Xa, ya), (Xb, yb) in neighbouring_pairs(relation):
            ga, gb = np.random.default_rng(5), np.random.default_rng(5)
            with recorded_noise_streams() as noise_a:
                make_estimator(relation, ga)._releases(Xa, ya)
            with recorded_noise_streams() as noise_b:
                make_estimator(relation, gb)._releases(Xb, yb)
            if _state(ga) != _state(gb) or ([_state(g) for g in noise_a]
                                            != [_state(g) for g in noise_b]):
                violations.append(f"control flow: the generator advanced differently on "
                                  f"{relation} neighbours")
    return violations


def check_dpsgd_control_flow(monkeypatch):
    """The number of steps is the public schedule of ``n``; on datasets of equal size
    (replace neighbours) the masks and the noise draw the same numbers."""
    recorder = StepRecorder(monkeypatch)
    violations = []
    for relation in ("add_remove", "replace"):
        for (Xa, ya), (Xb, yb) in neighbouring_pairs(relation):
            ends = []
            for X, y in ((Xa, ya), (Xb, yb)):
                recorder.reset()
                est = dpsgd_estimator()
                est._releases(X, y)
                run = recorder.runs[-1]
                if run["result"].n_steps != est._schedule()[1]:
                    violations.append("dpsgd control flow: the number of steps is not the "
                                      "public schedule")
                ends.append((_state(run["noise_rng"]), _state(run["sampling_rng"])))
            if relation == "replace" and ends[0] != ends[1]:
                violations.append("dpsgd control flow: the random streams advanced "
                                  "differently on replace neighbours")
    return violations


# ------------------------------------------------------------------------------ tests


@pytest.mark.parametrize("relation", ["add_remove", "replace"])
@pytest.mark.parametrize("epsilon, delta", [(0.3, 0.0), (2.0, 0.0), (1.0, 1e-5)])
def test_objpert_gradient_and_curvature_within_the_bounds_used(relation, epsilon, delta):
    # epsilon=0.3 takes the extra-ridge branch of the continuous rule, 2.0 the main one
    assert check_objpert_replay(relation, epsilon, delta) == []


def test_objpert_huber_curvature_within_the_bound_used():
    assert check_objpert_replay("add_remove", 1.0, 0.0, C=1.0, loss="huber") == []


def test_objpert_replay_is_not_vacuous():
    """The adversarial canary nearly attains zeta, and margin 0 attains beta_H exactly."""
    (Xa, ya), (Xb, yb) = neighbouring_pairs("add_remove")[0]
    est = ObjPertLogisticRegression(epsilon=2.0, C=1.0, random_state=0)
    (a,), (b,) = est._releases(Xa, ya), est._releases(Xb, yb)
    zeta, beta = objpert_bounds_used(a, 2.0, 0.0, "add_remove")
    assert zeta == pytest.approx(np.sqrt(2.0)) and beta == pytest.approx(0.5)
    x, label = b.X[-1], b.y[-1]
    zero = np.zeros(3)
    far = -8.0 * label * x / (x @ x)  # margin -8: |f'| = expit(8)
    moved = np.linalg.norm(glm_gradient(far, a.X, a.y, a.loss, 1.0, 0.0, zero)
                           - glm_gradient(far, b.X, b.y, b.loss, 1.0, 0.0, zero))
    assert moved > 0.999 * zeta
    top = np.linalg.eigvalsh(glm_hessian(zero, x[None, :], np.array([label]), a.loss, 1.0,
                                         0.0))[-1]
    assert top == pytest.approx(beta, rel=1e-12)


@pytest.mark.parametrize("relation", ["add_remove", "replace"])
def test_napp_gradient_and_curvature_within_the_bounds_used(relation):
    assert check_napp_replay(relation) == []


@pytest.mark.parametrize("relation", ["add_remove", "replace"])
@pytest.mark.parametrize("loss", ["hinge", "logistic"])
def test_outpert_minimisers_within_the_sensitivity_used(relation, loss):
    assert check_outpert_replay(relation, loss=loss) == []


def test_outpert_replay_is_not_vacuous():
    (Xa, ya), (Xb, yb) = neighbouring_pairs("add_remove")[0]
    est = OutputPertSVM(epsilon=1.0, C=0.01, random_state=0)
    (a,), (b,) = est._releases(Xa, ya), est._releases(Xb, yb)
    moved = np.linalg.norm(a.theta_star - b.theta_star)
    assert moved > 0.95 * a.noise_scale() * a.epsilon


def test_dpsgd_clipped_sum_moves_at_most_the_clipping_norm(monkeypatch):
    assert check_dpsgd_replay(monkeypatch) == []


def test_dpsgd_replay_is_not_vacuous(monkeypatch):
    """Early on, the canary on the norm bound has a gradient longer than C: clipping
    is active and the clipped sum moves by exactly C when the canary is sampled."""
    recorder = StepRecorder(monkeypatch)
    (_, (Xb, yb)) = neighbouring_pairs("add_remove")[0]
    dpsgd_estimator()._releases(Xb, yb)
    canary = len(Xb) - 1
    moves = []
    for idx, step in zip(recorder.batches, recorder.steps):
        if canary in idx:
            keep = idx != canary
            without, _ = dpsgd_module.clipped_gradient_sum(
                step["X"][keep], step["Y"][keep], step["theta"], step["loss"], 0.5,
                step["row_norms"][keep])
            moves.append(np.linalg.norm(step["clipped_sum"] - without))
    assert max(moves) == pytest.approx(0.5, rel=1e-12)


def test_dpsgd_divides_by_the_expected_batch_size(monkeypatch):
    assert check_dpsgd_normalisation(monkeypatch) == []


def test_dpsgd_step_noise_has_std_noise_multiplier_times_clip(monkeypatch):
    assert check_dpsgd_noise_std(monkeypatch) == []


def test_dpsgd_control_flow_does_not_depend_on_the_data(monkeypatch):
    assert check_dpsgd_control_flow(monkeypatch) == []


@pytest.mark.parametrize("name", ["objpert", "objpert-gaussian", "outpert", "napp"])
def test_random_draws_do_not_depend_on_the_data(name):
    makers = {
        "objpert": lambda rel, g: ObjPertLogisticRegression(neighboring=rel, random_state=g),
        "objpert-gaussian": lambda rel, g: ObjPertLogisticRegression(
            delta=1e-5, neighboring=rel, random_state=g),
        "outpert": lambda rel, g: OutputPertSVM(C=0.1, neighboring=rel, random_state=g),
        "napp": lambda rel, g: NAPPLassoClassifier(alpha=0.1, neighboring=rel,
                                                   random_state=g),
    }
    assert check_rng_consumption(makers[name]) == []


def test_rng_check_is_not_vacuous():
    """A fit that draws one extra number when a label is 1 is flagged."""

    class Leaky(ObjPertLogisticRegression):
        def _releases(self, X, y, with_derivative=False):
            if np.sum(y) % 2:
                self.random_state.standard_normal()
            return super()._releases(X, y, with_derivative)

    assert check_rng_consumption(lambda rel, g: Leaky(neighboring=rel, random_state=g))
