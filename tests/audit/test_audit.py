import numpy as np
import pytest

import skdp.mechanisms._objective_perturbation as objpert_module
from skdp import DPSGDClassifier, NAPPLassoClassifier, ObjPertLogisticRegression, OutputPertSVM
from skdp.accounting import analytic_gaussian_sigma
from skdp.audit import audit_estimator, audit_mechanism, audit_statistics, clopper_pearson
from skdp.mechanisms import sample_noise


def test_clopper_pearson_brackets_the_proportion():
    lo, hi = clopper_pearson(30, 100, 0.05)
    assert lo < 0.3 < hi
    assert clopper_pearson(0, 50, 0.05)[0] == 0.0
    assert clopper_pearson(50, 50, 0.05)[1] == 1.0
    # exact one-sided coverage: P(X >= 30 | p = lo) = alpha
    from scipy.stats import binom
    assert binom.sf(29, 100, lo) == pytest.approx(0.05, rel=1e-6)


def test_audit_certifies_most_of_a_laplace_mechanism():
    # the Gamma-norm vector in one dimension is the Laplace mechanism
    mechanism = lambda v, rng: v + sample_noise("gamma_norm", 1, 1.0, rng)  # noqa: E731
    result = audit_mechanism(mechanism, 1.0, 0.0, epsilon=1.0, n_runs=100_000, random_state=0)
    assert not result.contradicted
    assert result.certified_fraction >= 0.8, str(result)


def test_audit_contradicts_a_halved_noise_scale():
    mechanism = lambda v, rng: v + rng.laplace(scale=0.5)  # claims epsilon = 1 wrongly  # noqa: E731
    result = audit_mechanism(mechanism, 1.0, 0.0, epsilon=1.0, n_runs=50_000, random_state=1)
    assert result.contradicted and result.epsilon_lower_bound > 1.5


def test_gaussian_mechanism_audit_is_consistent():
    sigma = analytic_gaussian_sigma(1.0, 1e-3, 1.0)
    mechanism = lambda v, rng: v + sigma * rng.standard_normal()  # noqa: E731
    result = audit_mechanism(mechanism, 1.0, 0.0, epsilon=1.0, delta=1e-3, n_runs=100_000,
                             random_state=2)
    assert not result.contradicted
    assert result.epsilon_lower_bound > 0.5


def test_audit_statistics_orientation_is_symmetric():
    rng = np.random.default_rng(0)
    a, b = rng.laplace(1.0, 1.0, 20_000), rng.laplace(0.0, 1.0, 20_000)
    ab = audit_statistics(a, b, epsilon=1.0)
    ba = audit_statistics(b, a, epsilon=1.0)
    assert ab.epsilon_lower_bound > 0.7 and ba.epsilon_lower_bound > 0.7


def _canary_setting():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 2)) * [0.3, 0.0]  # the second direction is unused by D
    y = (X[:, 0] > 0).astype(int)
    return X, y, np.array([0.0, 1.0]), 1


def test_estimator_audit_does_not_contradict_objpert():
    X, y, cx, cy = _canary_setting()
    for neighboring in ("add_remove", "replace"):
        est = ObjPertLogisticRegression(epsilon=1.0, C=5.0, neighboring=neighboring)
        result = audit_estimator(est, X, y, cx, cy, n_runs=400, random_state=0)
        assert not result.contradicted, str(result)
        assert result.details["neighboring"] == neighboring


def test_estimator_audit_catches_noise_scaled_down(monkeypatch):
    """A planted bug: the Chaudhuri noise scale divided by 20."""
    original = objpert_module.chaudhuri_calibration

    def buggy(*args, **kwargs):
        cal = original(*args, **kwargs)
        return type(cal)(cal.extra_ridge, cal.noise, cal.noise_scale / 20, cal.epsilon_noise)

    monkeypatch.setattr(objpert_module, "chaudhuri_calibration", buggy)
    X, y, cx, cy = _canary_setting()
    est = ObjPertLogisticRegression(epsilon=1.0, C=5.0)
    result = audit_estimator(est, X, y, cx, cy, n_runs=400, random_state=0)
    assert result.contradicted, str(result)


# ------------------------------------------------- every estimator against its claim


def _one_dimensional_setting():
    """``D``: 20 rows at 0, so the canary ``x = 1`` uses a direction ``D`` does not.

    One coefficient and no intercept: the release is a one-dimensional
    mechanism, where a threshold audit has the most power. With the Huber loss
    in its linear region the canary shifts the exact minimiser by the full
    sensitivity.
    """
    return np.zeros((20, 1)), np.arange(20) % 2, np.array([1.0]), 1


AUDITED = {
    "objpert-pure": lambda eps: ObjPertLogisticRegression(
        epsilon=eps, C=0.1, loss="huber", fit_intercept=False),
    "objpert-gaussian": lambda eps: ObjPertLogisticRegression(
        epsilon=eps, delta=1e-5, C=0.1, loss="huber", fit_intercept=False),
    "outpert-pure": lambda eps: OutputPertSVM(
        epsilon=eps, C=0.25, loss="huber", fit_intercept=False),
    "outpert-gaussian": lambda eps: OutputPertSVM(
        epsilon=eps, delta=1e-5, C=0.25, loss="huber", fit_intercept=False),
    "outpert-hinge": lambda eps: OutputPertSVM(epsilon=eps, C=0.25, fit_intercept=False),
    "napp": lambda eps: NAPPLassoClassifier(epsilon=eps, alpha=1e-3, fit_intercept=False),
    "dpsgd": lambda eps: DPSGDClassifier(epsilon=eps, delta=1e-5, epochs=5,
                                         max_grad_norm=1.0, fit_intercept=False),
}


def _audit_claim(name, epsilon, n_runs):
    X, y, cx, cy = _one_dimensional_setting()
    result = audit_estimator(AUDITED[name](epsilon), X, y, cx, cy, n_runs=n_runs,
                             random_state=1)
    print(f"{name} epsilon={epsilon}: {result} (certified fraction "
          f"{result.certified_fraction:.2f})")
    return result


@pytest.mark.parametrize("name", ["objpert-gaussian", "outpert-hinge", "napp", "dpsgd"])
def test_no_estimator_audit_contradicts_its_claim(name):
    result = _audit_claim(name, 1.0, n_runs=300)
    assert not result.contradicted, str(result)


@pytest.mark.slow
@pytest.mark.parametrize("epsilon", [0.5, 2.0])
@pytest.mark.parametrize("name", list(AUDITED))
def test_no_estimator_audit_contradicts_its_claim_large(name, epsilon):
    result = _audit_claim(name, epsilon, n_runs=2000)
    assert not result.contradicted, str(result)
    if name in ("objpert-pure", "outpert-pure", "outpert-hinge"):
        # not vacuous: these one-dimensional releases are nearly Laplace mechanisms
        assert result.certified_fraction > 0.4, str(result)
