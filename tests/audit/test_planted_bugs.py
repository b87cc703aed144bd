"""Planted bugs: every check of the privacy verification suite must have power (issue 7).

Each planted bug monkeypatches a real seam of an estimator (a calibration
function, a constant, the design builder, or one line of a worker rewritten by
:func:`mutate`) into a plausibly wrong version. The checks of the estimator's
family then run on the patched code:

* ``oracle``: the calibration a fit applied (read from its transient solution
  or from the worker's arguments) against the spec formulas, recomputed here;
* ``noise-law``: the noise recovered from the released model (stationarity for
  objective perturbation, ``theta - theta*`` for output perturbation) against
  the spec's law, by a Kolmogorov-Smirnov test;
* ``replay``, ``step-normalisation``, ``step-noise``, ``control-flow``: the
  record/replay checks of ``tests/audit/test_replay.py``;
* ``ledger``: every pass over the private data, recorded at the estimator's
  ``_releases``, against the spend a search or EpsilonForUtility reports;
* ``audit``: the black-box audit of :mod:`skdp.audit` in a one-dimensional
  setting where it has power (objective and output perturbation). It costs
  about 2 s per run, so the default run applies it to the noise-scale bugs
  only; the slow run adds it to every check of those two families.

A bug passes the suite only if at least one check flags it; the test prints
``BUG <name> caught by <checks>`` (visible with ``-rA`` or ``-s``) and records
it as the ``caught_by`` property. ``test_unpatched_code_passes_every_check``
shows the checks do not flag everything.
"""

import dataclasses
import functools
import inspect
import textwrap
import types

import numpy as np
import pytest
from scipy import stats
from sklearn.model_selection import GridSearchCV

import skdp.linear_model._dpsgd as dpsgd_module
import skdp.linear_model._napp._estimators as napp_module
import skdp.linear_model._objective_perturbation as objpert_module
import skdp.linear_model._output_perturbation as outpert_module
import skdp.mechanisms._objective_perturbation as objpert_mechanism
import skdp.model_selection._analytic_epsilon as e4u_module
import skdp.model_selection._privacy_cost as privacy_cost_module
from skdp import (
    AnalyticEpsilonForUtility,
    NAPPLassoClassifier,
    ObjPertLogisticRegression,
    OutputPertSVM,
)
from skdp.audit import audit_estimator
from skdp.mechanisms._napp import napp_calibration
from skdp.linear_model._output_perturbation import OutputPertSolution
from skdp.solvers import glm_gradient
from skdp.losses import LogisticLoss
from tests._dpsgd_steps import StepRecorder
from tests.audit.test_replay import (
    base_data,
    check_dpsgd_control_flow,
    check_dpsgd_noise_std,
    check_dpsgd_normalisation,
    check_dpsgd_replay,
    check_napp_replay,
    check_objpert_replay,
    check_outpert_replay,
    check_rng_consumption,
    dpsgd_estimator,
)

KS_LEVEL = 1e-3  # a correct noise law fails a KS check with probability 1e-3 (fixed seeds)


def mutate(monkeypatch, module, name, old, new):
    """Replace one line of a module-level function's source for this test.

    The mutated function keeps the module's globals, so other patches of the
    module (recorders, planted bugs) stay visible to it. Fails loudly when the
    line has changed, so a planted bug cannot silently stop being planted.
    """
    original = getattr(module, name)
    source = textwrap.dedent(inspect.getsource(original))
    assert source.count(old) == 1, f"planted bug out of date: {old!r} not found in {name}"
    namespace = {}
    exec(compile(source.replace(old, new), module.__file__, "exec"), vars(module), namespace)
    compiled = namespace[name]
    mutant = types.FunctionType(compiled.__code__, vars(module), name, compiled.__defaults__,
                                compiled.__closure__)
    mutant.__kwdefaults__ = compiled.__kwdefaults__
    monkeypatch.setattr(module, name, mutant)


def scaled_result(function, factor, field="noise_scale"):
    """``function`` whose returned (frozen dataclass) calibration has ``field * factor``."""
    @functools.wraps(function)
    def wrong(*args, **kwargs):
        result = function(*args, **kwargs)
        return dataclasses.replace(result, **{field: getattr(result, field) * factor})
    return wrong


def _flag(condition, message):
    return [message] if condition else []


def _close(a, b):
    return np.isclose(a, b, rtol=1e-9, atol=1e-12)


# --------------------------------------------------------------- spec oracles (by hand)


def spec_objpert(epsilon, delta, C, relation, *, c=0.25, data_norm=1.0, scaling=1.0):
    """Spec objective_perturbation.md 3, 3.1 (continuous rule, share 1/2), 3.3 and 4:
    ``(noise_scale, extra_ridge)`` in sum form with unit base ridge, at the mechanism's
    share of the budget (privacy_engineering.md 3: 1 % of epsilon, and delta
    ``exp(-epsilon_cover / 2)``, pay for the solver's cover)."""
    epsilon, delta = 0.99 * epsilon, delta * np.exp(-0.005 * epsilon)
    R = np.hypot(data_norm, scaling)
    zeta = (2.0 if relation == "replace" else 1.0) * C * R
    beta = C * c * R**2
    if delta > 0:
        return zeta * np.sqrt(8 * np.log(2 / delta) + 4 * epsilon) / epsilon, 2 * beta / epsilon
    m = 2.0 if relation == "replace" else 1.0
    kappa = m * np.log1p(beta)
    if kappa <= epsilon / 2:
        return zeta / (epsilon - kappa), 0.0
    return zeta / (epsilon / 2), beta / np.expm1(epsilon / (2 * m)) - 1.0


def spec_outpert_scale(epsilon, C, relation, tol, *, data_norm=1.0, scaling=1.0):
    """Spec output_perturbation.md: Gamma-norm scale ``(1 + 2 tol) Delta / epsilon``."""
    delta_sens = (2.0 if relation == "replace" else 1.0) * C * np.hypot(data_norm, scaling)
    return (1 + 2 * tol) * delta_sens / epsilon


def spec_napp(epsilon, relation, *, frac=0.5, data_norm=1.0, scaling=1.0):
    """Spec napp_erm.md 7.1, logistic loss, L1 penalty (no curvature of its own):
    ``(noise_scale, extra_ridge)``, at the mechanism's 99 % of epsilon
    (privacy_engineering.md 3: the rest pays for the solver's cover)."""
    epsilon = 0.99 * epsilon
    R = np.hypot(data_norm, scaling)
    zeta = (2.0 if relation == "replace" else 1.0) * R
    beta = 0.25 * R**2
    eps_j = frac * epsilon
    return zeta / (epsilon - eps_j), beta / np.expm1(eps_j)


# ------------------------------------------------------------------------------ checks

OBJPERT_SETTINGS = [(0.3, 0.0, "add_remove"), (2.0, 0.0, "replace"), (1.0, 1e-5, "add_remove")]


def objpert_oracle():
    X, y = base_data()
    violations = []
    for epsilon, delta, relation in OBJPERT_SETTINGS:
        est = ObjPertLogisticRegression(epsilon=epsilon, delta=delta, neighboring=relation,
                                        random_state=0)
        (sol,) = est._releases(X, y)
        scale, ridge = spec_objpert(epsilon, delta, est.C_, relation)
        violations += _flag(not _close(sol.calibration.noise_scale, scale),
                            f"noise scale {sol.calibration.noise_scale:.6g} != spec {scale:.6g}")
        violations += _flag(not _close(sol.ridge - 1.0, ridge),
                            f"extra ridge {sol.ridge - 1.0:.6g} != spec {ridge:.6g}")
    return violations


def objpert_noise_law(n_fits=150):
    """The noise implied by stationarity, ``-grad(C sum l + (1 + Delta)/2 |theta|^2)``
    with the spec's ``Delta``, has a Gamma(d, spec scale) norm."""
    X, y = base_data(40)
    C, epsilon = 1.0, 2.0
    scale, ridge = spec_objpert(epsilon, 0.0, C, "add_remove")
    norms = []
    for seed in range(n_fits):
        est = ObjPertLogisticRegression(epsilon=epsilon, C=C, random_state=seed)
        (sol,) = est._releases(X, y)
        zero = np.zeros_like(sol.minimiser)
        norms.append(np.linalg.norm(glm_gradient(sol.minimiser, sol.X, sol.y, LogisticLoss(), C,
                                                 1.0 + ridge, zero)))
    pvalue = stats.kstest(norms, stats.gamma(a=3, scale=scale).cdf).pvalue
    return _flag(pvalue < KS_LEVEL, f"implied noise norm is not Gamma(3, {scale:.4g}) "
                                    f"(KS p={pvalue:.2g})")


def audit_1d(estimator, n_runs=600):
    """Black-box audit where it has power: one coefficient, no intercept, ``D``'s rows
    all 0 and a canary ``x = 1``. With the Huber loss in its linear region the canary
    shifts the released coefficient by exactly the sensitivity, so the release is a
    one-dimensional Laplace mechanism (plus the Jacobian term for objective
    perturbation) and the threshold audit certifies most of its epsilon."""
    X, y = np.zeros((20, 1)), np.arange(20) % 2
    result = audit_estimator(estimator, X, y, [1.0], 1, n_runs=n_runs, random_state=0)
    return _flag(result.contradicted, str(result))


AUDITS = {
    "objpert": lambda n_runs=600: audit_1d(ObjPertLogisticRegression(
        epsilon=1.0, C=0.1, loss="huber", fit_intercept=False), n_runs),
    "outpert": lambda n_runs=600: audit_1d(OutputPertSVM(
        epsilon=1.0, C=0.25, loss="huber", fit_intercept=False), n_runs),
}


def objpert_replay():
    violations = []
    for epsilon, delta, relation in OBJPERT_SETTINGS + [(1.0, 1e-5, "replace")]:
        violations += check_objpert_replay(relation, epsilon, delta)
    return violations


def objpert_control_flow():
    return check_rng_consumption(
        lambda relation, rng: ObjPertLogisticRegression(neighboring=relation, random_state=rng))


def outpert_oracle():
    X, y = base_data()
    violations = []
    for epsilon, relation, tol in ((0.5, "add_remove", 1e-3), (2.0, "replace", 1e-2)):
        est = OutputPertSVM(epsilon=epsilon, C=0.1, neighboring=relation, tol=tol,
                            random_state=0)
        (sol,) = est._releases(X, y)
        scale = spec_outpert_scale(epsilon, 0.1, relation, tol)
        violations += _flag(not _close(sol.noise_scale(), scale),
                            f"noise scale {sol.noise_scale():.6g} != spec {scale:.6g}")
    return violations


def outpert_noise_law(n_fits=150):
    """Released ``theta - theta*`` has a Gamma(d, spec scale) norm."""
    X, y = base_data(40)
    C, epsilon, tol = 0.5, 1.0, 1e-3
    ref = OutputPertSVM(epsilon=np.inf, C=C, tol=tol).fit(X, y)
    center = np.append(ref.coef_.ravel(), ref.intercept_)
    norms = []
    for seed in range(n_fits):
        est = OutputPertSVM(epsilon=epsilon, C=C, tol=tol, random_state=seed).fit(X, y)
        norms.append(np.linalg.norm(np.append(est.coef_.ravel(), est.intercept_) - center))
    scale = spec_outpert_scale(epsilon, C, "add_remove", tol)
    pvalue = stats.kstest(norms, stats.gamma(a=3, scale=scale).cdf).pvalue
    return _flag(pvalue < KS_LEVEL, f"released noise norm is not Gamma(3, {scale:.4g}) "
                                    f"(KS p={pvalue:.2g})")


def outpert_replay():
    return (check_outpert_replay("add_remove") + check_outpert_replay("replace")
            + check_outpert_replay("add_remove", loss="logistic"))


def outpert_control_flow():
    return check_rng_consumption(
        lambda relation, rng: OutputPertSVM(C=0.1, neighboring=relation, random_state=rng))


@functools.lru_cache(maxsize=None)
def pld_epsilon(noise_multiplier, sample_rate, n_steps, delta, count_noise_std):
    """Epsilon of the Gaussian row count and ``T`` Poisson-sampled Gaussian steps,
    straight from dp-accounting."""
    import dp_accounting
    from dp_accounting.pld import PLDAccountant

    accountant = PLDAccountant()
    accountant.compose(dp_accounting.GaussianDpEvent(count_noise_std))
    accountant.compose(dp_accounting.SelfComposedDpEvent(dp_accounting.PoissonSampledDpEvent(
        sample_rate, dp_accounting.GaussianDpEvent(noise_multiplier)), n_steps))
    return accountant.get_epsilon(delta)


def dpsgd_oracle(monkeypatch):
    """Account the noise multiplier the steps actually used, with the spec's
    public ``q = sample_rate`` and ``T = ceil(epochs / q)`` and the row count's Gaussian,
    directly with dp-accounting."""
    recorder = StepRecorder(monkeypatch)
    X, y = base_data(30)
    epsilon, delta, q, epochs, count_noise = 2.0, 1e-3, 1 / 3, 4, 20.0
    est = dpsgd_estimator(epsilon=epsilon, delta=delta, noise_multiplier=None,
                          sample_rate=q, epochs=epochs, count_noise_std=count_noise)
    est._set_fitted(est._releases(X, y))
    run = recorder.runs[-1]
    steps = int(np.ceil(epochs / q))
    violations = _flag(run["sample_rate"] != q or run["n_steps"] != steps,
                       f"schedule (q={run['sample_rate']}, T={run['n_steps']}) != spec "
                       f"({q}, {steps})")
    certified = pld_epsilon(float(run["noise_multiplier"]), q, steps, delta, count_noise)
    violations += _flag(certified > epsilon * 1.002,
                        f"the noise used certifies epsilon={certified:.4g} > claimed {epsilon}")
    violations += _flag(est.noise_multiplier_ != run["noise_multiplier"],
                        "reported noise multiplier is not the one used")
    return violations


def napp_oracle():
    X, y = base_data()
    violations = []
    for epsilon, relation in ((0.5, "add_remove"), (2.0, "replace")):
        est = NAPPLassoClassifier(epsilon=epsilon, alpha=0.1, neighboring=relation,
                                  random_state=0)
        (sol,) = est._releases(X, y)
        scale, ridge = spec_napp(epsilon, relation)
        noise = np.linalg.norm(sol.problem.linear)
        expected_noise = np.linalg.norm(sol.draw.vector(scale))
        violations += _flag(not _close(noise, expected_noise),
                            f"noise norm {noise:.6g} != spec {expected_noise:.6g}")
        used_ridge = np.max(sol.problem.ridge)
        violations += _flag(not _close(used_ridge, ridge),
                            f"curvature added {used_ridge:.6g} != spec {ridge:.6g}")
    return violations


def napp_replay():
    return check_napp_replay("add_remove") + check_napp_replay("replace", epsilon=2.0)


def napp_control_flow():
    return check_rng_consumption(
        lambda relation, rng: NAPPLassoClassifier(alpha=0.1, neighboring=relation,
                                                  random_state=rng))


def _ledger(monkeypatch):
    """Record ``(epsilon, delta)`` of every pass over the data (``_releases``)."""
    passes = []
    original = ObjPertLogisticRegression._releases

    def recorded(self, X, y, with_derivative=False):
        passes.append((float(self.epsilon), float(self.delta)))
        return original(self, X, y, with_derivative)

    monkeypatch.setattr(ObjPertLogisticRegression, "_releases", recorded)
    return passes


def _ledger_violations(passes, report):
    spent = sum(e for e, _ in passes)
    return _flag(report["total_epsilon"] < spent * (1 - 1e-12),
                 f"reported total epsilon {report['total_epsilon']:.4g} < "
                 f"{spent:.4g} spent in {len(passes)} passes over the data")


def search_ledger(monkeypatch):
    passes = _ledger(monkeypatch)
    X, y = base_data(60)
    grid = GridSearchCV(ObjPertLogisticRegression(), {"epsilon": [0.5, 1.0]}, cv=3).fit(X, y)
    return _ledger_violations(passes, privacy_cost_module.privacy_cost_of_search(grid))


def e4u_ledger(monkeypatch):
    passes = _ledger(monkeypatch)
    X, y = base_data(200)
    search = AnalyticEpsilonForUtility(ObjPertLogisticRegression(C=10.0, delta=1e-5),
                                       target_utility=0.7, n_draws=2, max_fits=9,
                                       random_state=0).fit(X, y)
    return _ledger_violations(passes, search.privacy_report_)


def _needs_monkeypatch(check):
    return "monkeypatch" in inspect.signature(check).parameters


CHECKS = {
    "objpert": {"oracle": objpert_oracle, "noise-law": objpert_noise_law,
                "replay": objpert_replay, "control-flow": objpert_control_flow},
    "outpert": {"oracle": outpert_oracle, "noise-law": outpert_noise_law,
                "replay": outpert_replay, "control-flow": outpert_control_flow},
    "dpsgd": {"oracle": dpsgd_oracle, "replay": check_dpsgd_replay,
              "step-normalisation": check_dpsgd_normalisation,
              "step-noise": check_dpsgd_noise_std, "control-flow": check_dpsgd_control_flow},
    "napp": {"oracle": napp_oracle, "replay": napp_replay, "control-flow": napp_control_flow},
    "composition": {"ledger-search": search_ledger, "ledger-epsilon-for-utility": e4u_ledger},
}


def run_checks(family, monkeypatch):
    """``{check name: violations}`` for the checks of a family that flag something."""
    flagged = {}
    for name, check in CHECKS[family].items():
        with monkeypatch.context() as local:  # recorders of one check do not leak
            violations = check(local) if _needs_monkeypatch(check) else check()
        if violations:
            flagged[name] = violations
    return flagged


# -------------------------------------------------------------------------- the bugs


class _OptimisticLogistic(LogisticLoss):
    """The logistic loss with its curvature bound halved (1/8 instead of 1/4)."""

    smoothness = 0.125


def _no_clipping(design_matrix):
    def unclipped(X, *, data_norm, fit_intercept, intercept_scaling):
        return design_matrix(X, data_norm=np.inf, fit_intercept=fit_intercept,
                             intercept_scaling=intercept_scaling)
    return unclipped


def _norm_without_intercept(data_norm, fit_intercept, intercept_scaling):
    return float(data_norm)


def plant_objpert_noise(factor):
    def plant(mp):
        mp.setattr(objpert_mechanism, "chaudhuri_calibration",
                   scaled_result(objpert_mechanism.chaudhuri_calibration, factor))
    return plant


def plant_objpert_gaussian_noise(mp):
    mp.setattr(objpert_mechanism, "kst_calibration",
               scaled_result(objpert_mechanism.kst_calibration, 0.5))


def plant_outpert_noise(factor):
    def plant(mp):
        original = OutputPertSolution.noise_scale
        mp.setattr(OutputPertSolution, "noise_scale",
                   lambda self, epsilon=None: factor * original(self, epsilon))
    return plant


def plant_napp_noise(factor):
    def plant(mp):
        mp.setattr(napp_module, "napp_release",
                   functools.partial(napp_module.napp_release,
                                     calibrate=scaled_result(napp_calibration, factor)))
    return plant


def scaled_pair(function, first, second):
    """``function`` returning a pair, each entry scaled (e.g. ``(G, beta_H)``)."""
    def wrong(*args, **kwargs):
        a, b = function(*args, **kwargs)
        return a * first, b * second
    return wrong


def plant_dpsgd_calibration_half(mp):
    original = dpsgd_module.calibrate_noise_multiplier

    def wrong(*args, **kwargs):
        z, spent = original(*args, **kwargs)
        return z / 2, spent
    mp.setattr(dpsgd_module, "calibrate_noise_multiplier", wrong)


def plant_dpsgd_half_the_steps(mp):
    original = dpsgd_module.calibrate_noise_multiplier
    mp.setattr(dpsgd_module, "calibrate_noise_multiplier",
               lambda eps, delta, q, steps, **kw: original(eps, delta, q, max(1, steps // 2),
                                                           **kw))


def plant_dpsgd_intercept(mp):
    # the norms of the rows without their intercept column (intercept_scaling 1)
    norms = dpsgd_module._row_norms
    mp.setattr(dpsgd_module, "_row_norms",
               lambda X: np.sqrt(np.maximum(norms(X) ** 2 - 1.0, 0.0)))


def plant_search_once_per_candidate(mp):
    mutate(mp, privacy_cost_module, "_search_fits",
           "for k in range(search.n_splits_):", "for k in range(1):")


def plant_e4u_once_per_epsilon(mp):
    """The report counts each measuring epsilon once, not once per draw."""
    original, seen = e4u_module._measure, set()

    def wrong(estimator, epsilon, *args, **kwargs):
        result = original(estimator, epsilon, *args, **kwargs)
        if epsilon in seen:
            result["fits"] = []
        seen.add(epsilon)
        return result
    mp.setattr(e4u_module, "_measure", wrong)


BUGS = {
    # objective perturbation
    "objpert-noise-halved": ("objpert", plant_objpert_noise(0.5)),
    "objpert-noise-quartered": ("objpert", plant_objpert_noise(0.25)),
    "objpert-gaussian-noise-halved": ("objpert", plant_objpert_gaussian_noise),
    "objpert-rows-not-clipped": ("objpert", lambda mp: mp.setattr(
        objpert_module, "solver_design", _no_clipping(objpert_module.solver_design))),
    "objpert-intercept-not-in-norm-bound": ("objpert", lambda mp: mp.setattr(
        objpert_module, "effective_data_norm", _norm_without_intercept)),
    "objpert-smoothness-too-small": ("objpert", lambda mp: mp.setattr(
        ObjPertLogisticRegression, "_make_loss", lambda self: _OptimisticLogistic())),
    "objpert-replace-uses-add-remove-gradient-bound": ("objpert", lambda mp: mp.setattr(
        objpert_mechanism, "gradient_sensitivity", lambda bound, relation: bound)),
    "objpert-replace-uses-one-jacobian-term": ("objpert", lambda mp: mp.setattr(
        objpert_mechanism, "_jacobian_multiplier", lambda relation: 1.0)),
    # output perturbation
    "outpert-noise-halved": ("outpert", plant_outpert_noise(0.5)),
    "outpert-noise-quartered": ("outpert", plant_outpert_noise(0.25)),
    "outpert-rows-not-clipped": ("outpert", lambda mp: mp.setattr(
        outpert_module, "solver_design", _no_clipping(outpert_module.solver_design))),
    "outpert-intercept-not-in-norm-bound": ("outpert", lambda mp: mp.setattr(
        outpert_module, "effective_data_norm", _norm_without_intercept)),
    "outpert-certificate-slack-dropped": ("outpert", lambda mp: mp.setattr(
        OutputPertSolution, "sensitivity", property(lambda self: self.base_sensitivity))),
    "outpert-replace-uses-add-remove-sensitivity": ("outpert", lambda mp: mp.setattr(
        outpert_module, "minimiser_sensitivity",
        lambda C, lipschitz, row_norm, relation: C * lipschitz * row_norm)),
    # DP-SGD
    "dpsgd-noise-halved-in-calibration": ("dpsgd", plant_dpsgd_calibration_half),
    "dpsgd-noise-halved-in-step": ("dpsgd", lambda mp: mutate(
        mp, dpsgd_module, "_dp_sgd", "noise_scale = noise_multiplier * sensitivity",
        "noise_scale = 0.5 * noise_multiplier * sensitivity")),
    "dpsgd-noise-quartered-in-step": ("dpsgd", lambda mp: mutate(
        mp, dpsgd_module, "_dp_sgd", "noise_scale = noise_multiplier * sensitivity",
        "noise_scale = 0.25 * noise_multiplier * sensitivity")),
    "dpsgd-gradients-not-clipped": ("dpsgd", lambda mp: mutate(
        mp, dpsgd_module, "_residuals_and_clip_factors",
        "factors = row_clip_factors(norms, max_grad_norm)", "factors = np.ones_like(norms)")),
    "dpsgd-intercept-not-in-clip-norm": ("dpsgd", plant_dpsgd_intercept),
    "dpsgd-realised-batch-size": ("dpsgd", lambda mp: mutate(
        mp, dpsgd_module, "_dp_sgd", "-etas[t] / normaliser",
        "-etas[t] / max(Xb.shape[0], 1)")),
    "dpsgd-accountant-half-the-steps": ("dpsgd", plant_dpsgd_half_the_steps),
    # NAPP
    "napp-noise-halved": ("napp", plant_napp_noise(0.5)),
    "napp-noise-quartered": ("napp", plant_napp_noise(0.25)),
    "napp-rows-not-clipped": ("napp", lambda mp: mp.setattr(
        napp_module, "solver_design", _no_clipping(napp_module.solver_design))),
    "napp-intercept-not-in-norm-bound": ("napp", lambda mp: mp.setattr(
        napp_module, "effective_data_norm", _norm_without_intercept)),
    "napp-smoothness-too-small": ("napp", lambda mp: mp.setattr(
        LogisticLoss, "bounds", scaled_pair(LogisticLoss.bounds, 1.0, 0.5))),
    # composition
    "search-folds-not-counted": ("composition", plant_search_once_per_candidate),
    "epsilon-for-utility-draws-not-counted": ("composition", plant_e4u_once_per_epsilon),
}


def _report(bug, flagged, record_property):
    caught_by = ", ".join(flagged) if flagged else "NOTHING"
    record_property("caught_by", caught_by)
    print(f"BUG {bug} caught by {caught_by}")
    for name, violations in flagged.items():
        print(f"    {name}: {violations[0]}")


@pytest.mark.parametrize("bug", list(BUGS))
def test_every_planted_bug_is_caught(bug, monkeypatch, record_property):
    family, plant = BUGS[bug]
    plant(monkeypatch)
    flagged = run_checks(family, monkeypatch)
    _report(bug, flagged, record_property)
    assert flagged, f"planted bug {bug} passed every check"


@pytest.mark.parametrize("family", list(CHECKS))
def test_unpatched_code_passes_every_check(family, monkeypatch):
    assert run_checks(family, monkeypatch) == {}


@pytest.mark.parametrize("bug", ["objpert-noise-quartered", "outpert-noise-quartered"])
def test_black_box_audit_catches_the_noise_bugs(bug, monkeypatch, record_property):
    """The audit alone, with 600 runs per dataset: quartering the noise of a claimed
    epsilon = 1 release gives a lower bound of about 2.5 (halving it about 1.3, which
    the slow run checks)."""
    family, plant = BUGS[bug]
    plant(monkeypatch)
    flagged = {"audit": AUDITS[family]()}
    _report(bug, flagged, record_property)
    assert flagged["audit"], f"the audit missed {bug}"


@pytest.mark.parametrize("family", list(AUDITS))
def test_black_box_audit_passes_the_unpatched_code(family):
    assert AUDITS[family]() == []


@pytest.mark.slow
@pytest.mark.parametrize("bug", [b for b in BUGS if BUGS[b][0] in AUDITS])
def test_every_planted_bug_with_the_audit_among_the_checks(bug, monkeypatch,
                                                             record_property):
    """The full table with a larger black-box audit (2,000 runs) added to the checks."""
    family, plant = BUGS[bug]
    plant(monkeypatch)
    flagged = run_checks(family, monkeypatch)
    audit = AUDITS[family](2000)
    if audit:
        flagged["audit"] = audit
    _report(bug, flagged, record_property)
    assert flagged
