import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose
from scipy import stats
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.multiclass import OneVsRestClassifier
from sklearn.svm import LinearSVC

from skdp import ConvergenceError, DataNormWarning, OutputPertSVM
from skdp.accounting import analytic_gaussian_sigma
from skdp.mechanisms import draw_gamma_norm, draw_noise, minimiser_sensitivity
from skdp.solvers import certified_hinge_minimiser, glm_objective, hinge_duality_gap
from skdp.losses import HingeLoss
from skdp.linear_model._random_features import draw_random_fourier_map
from skdp.utils import check_rng, privacy_streams


def _design(X, data_norm=1.0, scaling=1.0):
    norms = np.linalg.norm(X, axis=1)
    Xc = X * np.minimum(1.0, data_norm / norms)[:, None]
    return np.hstack([Xc, np.full((len(X), 1), scaling)])


def _reference_svc(design, y, C, multi=False, tol=1e-9):
    ref = LinearSVC(C=C, loss="hinge", dual=True, fit_intercept=False, tol=tol,
                    max_iter=1_000_000, random_state=0)
    if multi:
        ref = OneVsRestClassifier(ref)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ref.fit(design, y)
    return np.vstack([e.coef_ for e in ref.estimators_]) if multi else ref.coef_


# ---------------------------------------------------------------- exact minimiser


@pytest.mark.parametrize("C", [0.1, 1.0, 10.0])
def test_infinite_epsilon_equals_linear_svc_on_augmented_clipped_design(seed, C):
    X, y = make_classification(n_samples=300, n_features=6, random_state=seed)
    design = _design(X, data_norm=2.0, scaling=1.5)
    ref = _reference_svc(design, y, C)
    ours = OutputPertSVM(epsilon=np.inf, C=C, data_norm=2.0, intercept_scaling=1.5).fit(X, y)
    assert_allclose(ours.coef_, ref[:, :-1], atol=1e-6 * max(1.0, C))
    assert_allclose(ours.intercept_, ref[:, -1] * 1.5, atol=1e-6 * max(1.0, C))
    # the objective of the released point is at least as low as liblinear's
    loss = HingeLoss()
    theta = np.append(ours.coef_.ravel(), ours.intercept_ / 1.5)
    s = np.where(y == 1, 1.0, -1.0)
    zero = np.zeros(design.shape[1])
    ours_value = glm_objective(theta, design, s, loss, C, 1.0, zero)
    assert ours_value <= glm_objective(ref.ravel(), design, s, loss, C, 1.0, zero) + 1e-9


def test_infinite_epsilon_multiclass_is_one_vs_rest(seed):
    X, y = make_classification(n_samples=300, n_features=6, n_informative=4, n_classes=3,
                               random_state=seed)
    ref = _reference_svc(_design(X), y, 1.0, multi=True)
    ours = OutputPertSVM(epsilon=np.inf).fit(X, y)
    assert ours.coef_.shape == (3, 6)
    assert_allclose(ours.coef_, ref[:, :-1], atol=1e-6)
    assert_allclose(ours.intercept_, ref[:, -1], atol=1e-6)


def test_smooth_losses_at_infinite_epsilon(unit_ball_classification):
    X, y = unit_ball_classification
    ref = LogisticRegression(C=3.0, fit_intercept=False, tol=1e-12, max_iter=10_000).fit(X, y)
    ours = OutputPertSVM(epsilon=np.inf, loss="logistic", C=3.0, fit_intercept=False,
                         tol=1e-9).fit(X, y)
    assert_allclose(ours.coef_, ref.coef_, atol=1e-6)
    assert ours.predict_proba(X).shape == (len(X), 2)
    huber = OutputPertSVM(epsilon=np.inf, loss="huber", huber_h=1e-3, C=3.0,
                          tol=1e-9).fit(X, y)
    hinge = OutputPertSVM(epsilon=np.inf, C=3.0).fit(X, y)
    # the Huber hinge tends to the hinge: P_h - P in [0, C n h / 4], so the distance of
    # the minimisers is at most sqrt(2 C n h / 4)
    gap = np.hypot(np.linalg.norm(huber.coef_ - hinge.coef_), huber.intercept_ - hinge.intercept_)
    assert gap <= np.sqrt(2 * 3.0 * len(X) * 1e-3 / 4)


def test_certificate_is_an_upper_bound_of_the_true_distance():
    X, y = make_classification(n_samples=400, n_features=5, random_state=3)
    design = _design(X)
    s = np.where(y == 1, 1.0, -1.0)
    ref = _reference_svc(design, s, 2.0).ravel()
    # a crude dual point: its gap certifies the distance of its primal image
    alpha = np.where(s * (design @ ref) < 1, 2.0, 0.0)
    theta, gap = hinge_duality_gap(design, s, 2.0, alpha)
    assert np.linalg.norm(theta - ref) <= np.sqrt(2 * gap) + 1e-7
    assert gap > 1e-3  # not a vacuous check: the crude point is far from optimal


def test_the_certified_slack_is_what_is_added():
    X, y = make_classification(n_samples=200, n_features=4, random_state=0)
    for loss in ("hinge", "logistic", "huber"):
        for delta in (0.0, 1e-6):
            est = OutputPertSVM(epsilon=0.7, delta=delta, C=0.3, loss=loss, tol=1e-2,
                                random_state=0)
            (sol,) = est._releases(X, y)
            base = 0.3 * np.sqrt(2.0)
            assert sol.base_sensitivity == pytest.approx(base)
            assert sol.converged and sol.certified_distance <= 1e-2 * base
            assert sol.slack == pytest.approx(1e-2 * base)
            assert sol.sensitivity == pytest.approx(base * (1 + 2e-2))
            expected = (analytic_gaussian_sigma(0.7, 1e-6, base * 1.02) if delta
                        else base * 1.02 / 0.7)
            assert sol.noise_scale() == pytest.approx(expected, rel=1e-12)
            # the released coefficients are theta* plus exactly that noise
            est.fit(X, y)
            released = np.append(est.coef_.ravel(), est.intercept_)
            assert_allclose(released, sol.theta_star + sol.draw.vector(expected), atol=1e-12)


@pytest.mark.parametrize("C", [0.01, 1.0, 30.0])
def test_every_polished_candidate_is_certified_against_a_tight_reference(C):
    """Right or wrong margin partition, the certificate bounds the true distance."""
    from skdp.solvers._hinge import _certify, _polish_round

    rng = np.random.default_rng(int(C * 100))
    checked = far = 0
    for trial in range(6):
        X, y = make_classification(n_samples=int(rng.integers(80, 300)), n_features=6,
                                   flip_y=0.1, random_state=int(rng.integers(1000)))
        design = _design(X)
        s = np.where(y == 1, 1.0, -1.0)
        ref = _reference_svc(design, s, C, tol=1e-12).ravel()
        ref_error = 1e-6 * max(1.0, C)  # the reference's own (uncertified) accuracy
        # start the polish from liblinear points of several accuracies
        for liblinear_tol in (1e-1, 1e-3, 1e-6):
            w = _reference_svc(design, s, C, tol=liblinear_tol).ravel()
            for bound, theta, alpha in _polish_round(design, s, C, w):
                assert np.all((alpha >= 0) & (alpha <= C))
                assert_allclose(theta, design.T @ (alpha * s), atol=1e-9 * max(1.0, C))
                distance = _certify(design, s, C, theta, alpha)
                assert np.sqrt(2 * bound) <= distance * (1 + 1e-9) + 1e-12
                assert np.linalg.norm(theta - ref) <= distance + ref_error
                checked += 1
                far += distance > 1e-3 * max(1.0, C)
        # and the solver's answer meets a tight target
        theta, distance, _ = certified_hinge_minimiser(design, s, C=C, max_iter=100_000,
                                                       target_distance=1e-6 * C)
        assert distance <= 1e-6 * C
        assert np.linalg.norm(theta - ref) <= distance + ref_error
    assert far > 0 and checked > far  # wrong partitions were among the candidates


def test_huber_path_certifies_when_liblinear_stalls():
    X, y = make_classification(n_samples=300, n_features=5, random_state=4)
    design = _design(X)
    s = np.where(y == 1, 1.0, -1.0)
    ref = _reference_svc(design, s, 5.0).ravel()
    # 5 liblinear iterations are far from enough; the Huber-smoothed Newton path is used
    theta, distance, _ = certified_hinge_minimiser(design, s, C=5.0, target_distance=1e-6,
                                                   max_iter=5)
    assert distance <= 1e-6
    assert np.linalg.norm(theta - ref) <= 1e-6 + 1e-6


def test_capped_iterations_raise_and_release_nothing():
    X, y = make_classification(n_samples=300, n_features=5, n_informative=3, n_classes=3,
                               random_state=0)
    est = OutputPertSVM(max_iter=1, C=100.0, random_state=0)
    with pytest.raises(ConvergenceError, match="nothing is released") as info:
        est.fit(X, y)
    assert not [k for k in vars(est) if k.endswith("_")]
    public = str(info.value).replace("tol=0.001", "").replace("max_iter=1", "")
    assert not any(ch.isdigit() for ch in public), "the message holds a number"


def test_declared_classes_set_the_one_vs_rest_split():
    """Four declared classes, three present: four problems, each at epsilon / 4, the
    noise of a binary fit at epsilon = 1; a label outside the declared set is refused."""
    X, y = make_classification(n_samples=150, n_features=4, n_informative=3,
                               n_redundant=0, n_classes=3, random_state=0)
    est = OutputPertSVM(epsilon=4.0, C=0.1, classes=[0, 1, 2, 7], random_state=0).fit(X, y)
    assert est.coef_.shape == (4, 4) and list(est.classes_) == [0, 1, 2, 7]
    (single,) = OutputPertSVM(epsilon=1.0, C=0.1, random_state=0)._releases(X, y == 0)
    for solution in est._releases(X, y):
        assert solution.noise_scale() == pytest.approx(single.noise_scale())
    with pytest.raises(ValueError):
        OutputPertSVM(classes=[0, 1], random_state=0).fit(X, y)


# ---------------------------------------------------------------- sensitivity


def test_sensitivity_formula_matches_the_chaudhuri_form():
    # spec 6.1: n = 1000, Lambda = 0.01, R = 1 => replace-one Delta = 2 R / (n Lambda) = 0.2,
    # with sklearn's C = 1 / (n Lambda)
    n, lam = 1000, 0.01
    C = 1.0 / (n * lam)
    assert minimiser_sensitivity(C, 1.0, 1.0, "replace") == pytest.approx(0.2)
    assert minimiser_sensitivity(C, 1.0, 1.0, "add_remove") == pytest.approx(0.1)
    assert minimiser_sensitivity(2.0, 1.0, np.hypot(3.0, 1.0), "add_remove") == pytest.approx(
        2.0 * np.sqrt(10.0))


def _neighbour(rng, X, y, relation, R, adversarial):
    """A neighbouring dataset: one row added (add_remove) or replaced (replace)."""
    d = X.shape[1]
    if adversarial:  # a row on the norm bound with the flipped label of an existing row
        j = rng.integers(len(X))
        direction = X[j] / np.linalg.norm(X[j])
        row, label = R * direction, -y[j]
    else:
        row = rng.normal(size=d)
        row *= R * rng.uniform(0.2, 1.0) / np.linalg.norm(row)
        label = rng.choice([-1, 1])
    if relation == "add_remove":
        return np.vstack([X, row]), np.append(y, label)
    i = rng.integers(len(X))
    X2, y2 = X.copy(), y.copy()
    X2[i], y2[i] = row, label
    return X2, y2


@pytest.mark.parametrize("loss", ["hinge", "logistic", "huber"])
@pytest.mark.parametrize("relation", ["add_remove", "replace"])
def test_record_replay_neighbouring_minimisers_within_sensitivity(loss, relation):
    """Record many neighbouring pairs, replay the exact solves, compare with Delta."""
    rng = np.random.default_rng(12)
    record = []
    for trial in range(30):
        n, d = rng.integers(10, 60), rng.integers(2, 5)
        C = float(rng.choice([0.01, 0.1, 1.0, 10.0]))
        X = rng.normal(size=(n, d))
        X *= (rng.uniform(0.1, 1.0, size=n) / np.linalg.norm(X, axis=1))[:, None]
        y = np.where(X[:, 0] + 0.3 * rng.normal(size=n) > 0, 1, -1)
        y[:2] = [-1, 1]
        X2, y2 = _neighbour(rng, X, y, relation, 1.0, adversarial=trial % 2 == 0)
        record.append((X, y, X2, y2, C))
    ratios = []
    for X, y, X2, y2, C in record:
        est = OutputPertSVM(epsilon=np.inf, C=C, loss=loss, neighboring=relation, tol=1e-6)
        (a,) = est._releases(X, y)
        (b,) = est._releases(X2, y2)
        assert a.converged and b.converged
        assert a.base_sensitivity == minimiser_sensitivity(C, 1.0, np.sqrt(2.0), relation)
        moved = np.linalg.norm(a.theta_star - b.theta_star)
        assert moved <= a.base_sensitivity + a.certified_distance + b.certified_distance
        assert a.sensitivity >= a.base_sensitivity + a.certified_distance + b.certified_distance
        ratios.append(moved / a.base_sensitivity)
    # not vacuous: at small C the added/replaced row's loss gradient is ~f'(0) times the
    # row, so the bound is attained for hinge and Huber (f'(0) = -1) and half-attained for
    # the logistic loss (f'(0) = -1/2)
    assert max(ratios) > (0.35 if loss == "logistic" else 0.9)


# ---------------------------------------------------------------- noise calibration


@pytest.mark.parametrize("eps, delta, sigma, dsigma", [
    (0.1, 1e-5, 30.749566, -280.740369),
    (0.5, 1e-6, 8.057618, -15.055817),
    (1.0, 1e-5, 3.730632, -3.397234),
    (4.0, 1e-5, 1.081162, -0.234682),
    (8.0, 1e-5, 0.600229, -0.062089),
])
def test_analytic_gaussian_oracles_of_the_spec(eps, delta, sigma, dsigma):
    X, y = make_classification(n_samples=60, n_features=3, n_redundant=0, random_state=0)
    # Delta = C * data_norm = 1 without intercept (add/remove)
    est = OutputPertSVM(epsilon=eps, delta=delta, C=1.0, fit_intercept=False, tol=1e-6,
                        random_state=0)
    (sol,) = est._releases(X, y)
    factor = sol.sensitivity  # sigma is linear in the sensitivity: (1 + 2 tol) * 1
    assert sol.base_sensitivity == 1.0
    assert sol.noise_scale() / factor == pytest.approx(sigma, abs=1e-6)
    assert sol.noise_scale_derivative() / factor == pytest.approx(dsigma, abs=1e-6)


def test_noise_scale_path_and_derivatives():
    X, y = make_classification(n_samples=90, n_features=4, n_informative=3, n_redundant=0,
                               n_classes=3, random_state=0)
    for delta in (0.0, 3e-5):
        est = OutputPertSVM(epsilon=3.0, delta=delta, C=0.5, random_state=0)
        for sol in est._releases(X, y):
            assert sol.n_problems == 3 and sol.epsilon == 1.0
            for eps in (0.5, 3.0, 9.0):
                h = 1e-6 * eps
                fd = (sol.noise_scale(eps + h) - sol.noise_scale(eps - h)) / (2 * h)
                assert sol.noise_scale_derivative(eps) == pytest.approx(fd, rel=1e-5)
                # pathwise: d theta / d eps = (s'/s) (theta_eps - theta*)
                dtheta = (sol.released(eps + h) - sol.released(eps - h)) / (2 * h)
                ratio = sol.noise_scale_derivative(eps) / sol.noise_scale(eps)
                assert_allclose(dtheta, ratio * (sol.released(eps) - sol.theta_star), rtol=1e-5,
                                atol=1e-9)
            if delta == 0:
                assert sol.noise_scale(3.0) == pytest.approx(sol.sensitivity / 1.0)


def test_multiclass_splits_the_budget():
    X, y = make_classification(n_samples=90, n_features=4, n_informative=3, n_redundant=0,
                               n_classes=3, random_state=0)
    est = OutputPertSVM(epsilon=3.0, delta=3e-5, C=0.5, random_state=0)
    (reference,) = OutputPertSVM(epsilon=1.0, delta=1e-5, C=0.5)._releases(X, y == 0)
    for sol in est._releases(X, y):
        assert sol.noise_scale() == pytest.approx(reference.noise_scale())
    est.fit(X, y)
    assert est.epsilon_spent_ == 3.0 and est.delta_spent_ == 3e-5


@pytest.mark.parametrize("neighboring, factor", [("add_remove", 1.0), ("replace", 2.0)])
def test_released_noise_has_the_gamma_norm_law(neighboring, factor):
    X, y = make_classification(n_samples=50, n_features=3, n_informative=2, n_redundant=0,
                               random_state=0)
    C, eps, tol = 0.5, 2.0, 1e-3
    theta_star = OutputPertSVM(epsilon=np.inf, C=C).fit(X, y)
    center = np.append(theta_star.coef_.ravel(), theta_star.intercept_)
    scale = factor * C * np.sqrt(2.0) * (1 + 2 * tol) / eps
    norms = []
    for s in range(300):
        est = OutputPertSVM(epsilon=eps, C=C, neighboring=neighboring, tol=tol,
                            random_state=s).fit(X, y)
        norms.append(np.linalg.norm(np.append(est.coef_.ravel(), est.intercept_) - center))
    assert stats.kstest(norms, stats.gamma(a=4, scale=scale).cdf).pvalue > 1e-3


def test_released_noise_has_the_gaussian_law():
    X, y = make_classification(n_samples=50, n_features=3, n_informative=2, n_redundant=0,
                               random_state=1)
    C, eps, delta = 0.5, 1.5, 1e-5
    ref = OutputPertSVM(epsilon=np.inf, C=C).fit(X, y)
    center = np.append(ref.coef_.ravel(), ref.intercept_)
    sigma = analytic_gaussian_sigma(eps, delta, C * np.sqrt(2.0) * (1 + 2e-3))
    noise = []
    for s in range(300):
        est = OutputPertSVM(epsilon=eps, delta=delta, C=C, random_state=s).fit(X, y)
        noise.append(np.append(est.coef_.ravel(), est.intercept_) - center)
    noise = np.array(noise)
    assert stats.kstest(noise.ravel() / sigma, "norm").pvalue > 1e-3
    # per-coordinate std within 2 % is the spec's criterion for 20,000 draws; with
    # 1,200 values the standard error of the std is 2 %, so allow 4 standard errors
    assert noise.std() / sigma == pytest.approx(1.0, rel=0.08)


def _laplace_noise(X, y, C, eps, seeds, **params):
    center = OutputPertSVM(epsilon=np.inf, C=C).fit(X, y)
    center = np.append(center.coef_.ravel(), center.intercept_)
    return np.array([np.append(m.coef_.ravel(), m.intercept_) - center for m in
                     (OutputPertSVM(epsilon=eps, C=C, noise="laplace", random_state=s, **params)
                      .fit(X, y) for s in seeds)])


def test_released_noise_has_the_laplace_law_at_the_l1_sensitivity():
    X, y = make_classification(n_samples=50, n_features=3, n_informative=2, n_redundant=0,
                               random_state=2)
    C, eps, tol = 0.5, 2.0, 1e-3
    # L1 sensitivity sqrt(d) times the L2 one, d = 4 coefficients with the intercept
    scale = np.sqrt(4) * C * np.sqrt(2.0) * (1 + 2 * tol) / eps
    noise = _laplace_noise(X, y, C, eps, range(300), tol=tol)
    assert stats.kstest(noise.ravel() / scale, "laplace").pvalue > 1e-3


def test_laplace_noise_needs_delta_zero():
    X, y = make_classification(n_samples=50, n_features=3, n_redundant=0, random_state=0)
    with pytest.raises(ValueError, match="delta=0"):
        OutputPertSVM(noise="laplace", delta=1e-5).fit(X, y)


def test_noise_path_releases_have_the_fit_law_and_data_free_increments():
    """Each release of a path is distributed as a fit at its epsilon, and the noisier
    release is the later one plus an increment independent of it (0 with probability
    (e1 / e2)^2, else Laplace at the first scale): the pair costs what the second costs."""
    X, y = make_classification(n_samples=50, n_features=3, n_informative=2, n_redundant=0,
                               random_state=2)
    C, e1, e2 = 0.5, 1.0, 2.5
    center = OutputPertSVM(epsilon=np.inf, C=C).fit(X, y)
    center = np.append(center.coef_.ravel(), center.intercept_)
    scale = np.sqrt(4) * C * np.sqrt(2.0) * (1 + 2e-3)
    first, second = [], []
    for s in range(400):
        path = OutputPertSVM(epsilon=e1, C=C, noise="laplace", random_state=s)\
            ._noise_reduction_path(X, y)
        for out, eps in ((first, e1), (second, e2)):
            model = path.release(eps)
            assert model.epsilon == model.epsilon_spent_ == eps
            out.append(np.append(model.coef_.ravel(), model.intercept_) - center)
    first, second = np.array(first).ravel(), np.array(second).ravel()
    assert stats.kstest(first / (scale / e1), "laplace").pvalue > 1e-3
    assert stats.kstest(second / (scale / e2), "laplace").pvalue > 1e-3
    increment = first - second
    stay = increment == 0
    assert stats.binomtest(stay.sum(), stay.size, (e1 / e2) ** 2).pvalue > 1e-3
    assert stats.kstest(increment[~stay] / (scale / e1), "laplace").pvalue > 1e-3
    # independence of the increment from the later release (rank correlation)
    assert stats.spearmanr(np.abs(increment), np.abs(second)).pvalue > 1e-3
    with pytest.raises(ValueError, match="larger epsilons"):
        path.release(e1)


def test_gaussian_noise_path_releases_have_the_fit_law_and_data_free_increments():
    """Each release is distributed as a Gaussian fit at its epsilon (analytic sigma),
    and the noisier release is the later one plus an independent Gaussian increment
    (the Brownian bridge): the pair is a post-processing of the second release."""
    from skdp.accounting import analytic_gaussian_sigma

    X, y = make_classification(n_samples=50, n_features=3, n_informative=2, n_redundant=0,
                               random_state=2)
    C, e1, e2, delta = 0.5, 1.0, 2.5, 1e-6
    center = OutputPertSVM(epsilon=np.inf, C=C).fit(X, y)
    center = np.append(center.coef_.ravel(), center.intercept_)
    sensitivity = C * np.sqrt(2.0) * (1 + 2e-3)
    s1, s2 = (analytic_gaussian_sigma(e, delta, sensitivity) for e in (e1, e2))
    first, second = [], []
    for s in range(300):
        path = OutputPertSVM(epsilon=e1, delta=delta, C=C, random_state=s)\
            ._noise_reduction_path(X, y)
        for out, eps in ((first, e1), (second, e2)):
            model = path.release(eps)
            assert model.epsilon_spent_ == eps and model.delta_spent_ == delta
            out.append(np.append(model.coef_.ravel(), model.intercept_) - center)
    first, second = np.array(first).ravel(), np.array(second).ravel()
    assert stats.kstest(first / s1, "norm").pvalue > 1e-3
    assert stats.kstest(second / s2, "norm").pvalue > 1e-3
    increment = first - second
    assert stats.kstest(increment / np.sqrt(s1**2 - s2**2), "norm").pvalue > 1e-3
    assert stats.pearsonr(increment, second).pvalue > 1e-3


def test_first_release_of_a_path_is_the_fit():
    X, y = make_classification(n_samples=80, n_features=3, n_redundant=0, random_state=0)
    path = OutputPertSVM(epsilon=0.7, noise="laplace", random_state=5)._noise_reduction_path(X, y)
    fit = OutputPertSVM(epsilon=0.7, noise="laplace", random_state=5).fit(X, y)
    np.testing.assert_array_equal(path.release(0.7).coef_, fit.coef_)
    with pytest.raises(ValueError, match="noise='laplace'"):
        OutputPertSVM()._noise_reduction_path(X, y)  # Gamma-norm noise: no coupling


# ---------------------------------------------------------------- random features


def test_random_fourier_map_norm_and_kernel():
    rng = np.random.default_rng(0)
    gamma, p = 0.3, 4
    small = draw_random_fourier_map(p, 200, gamma, np.random.default_rng(1))
    X = rng.normal(scale=5.0, size=(10_000, p))
    assert np.all(np.linalg.norm(small.transform(X), axis=1) <= 1.0 + 1e-12)
    big = draw_random_fourier_map(p, 20_000, gamma, np.random.default_rng(2))
    A, B = rng.normal(size=(50, p)), rng.normal(size=(50, p))
    approx = np.einsum("ij,ij->i", big.transform(A), big.transform(B))
    exact = np.exp(-gamma * np.sum((A - B) ** 2, axis=1)) / 2
    assert np.max(np.abs(approx - exact)) < 0.02


def test_random_fourier_map_does_not_depend_on_the_data():
    X1, y1 = make_classification(n_samples=80, n_features=5, random_state=0)
    X2, y2 = make_classification(n_samples=120, n_features=5, random_state=1)
    kw = dict(kernel="rbf", n_components=30, feature_random_state=7, epsilon=1.0)
    a = OutputPertSVM(random_state=0, **kw).fit(X1, y1)
    b = OutputPertSVM(random_state=1, **kw).fit(X2, y2)
    assert_allclose(a.random_weights_, b.random_weights_, rtol=0, atol=0)
    assert_allclose(a.random_offset_, b.random_offset_, rtol=0, atol=0)
    # default: drawn from the public constant feature_random_state=0 (data-independent)
    c = OutputPertSVM(kernel="rbf", n_components=30, random_state=3).fit(X1, y1)
    d = OutputPertSVM(kernel="rbf", n_components=30, random_state=3).fit(X2, y2)
    assert_allclose(c.random_weights_, d.random_weights_, rtol=0, atol=0)
    # gamma="auto" = 1 / data_norm**2 (public), or 1 / n_features without a norm bound
    for data_norm, gamma in ((1.0, 1.0), (2.0, 0.25), (None, 1 / 5)):
        e = OutputPertSVM(kernel="rbf", n_components=30, data_norm=data_norm,
                          random_state=3).fit(X1, y1)
        omega = check_rng(0).normal(scale=np.sqrt(2 * gamma), size=(5, 30))
        assert_allclose(e.random_weights_, omega)


def _seeds_regenerating_map(fitted, derive, gamma=1.0, candidates=range(2000)):
    """The attacker's search: candidates whose stream ``derive(c)`` redraws the map."""
    n_features, n_components = fitted.random_weights_.shape
    return [c for c in candidates
            if np.array_equal(draw_random_fourier_map(n_features, n_components, gamma,
                                                      derive(c)).weights,
                              fitted.random_weights_)]


def test_published_map_does_not_reveal_a_small_noise_seed():
    """Attack: brute-force a small ``random_state`` from the published map, then subtract
    the noise it regenerates. When the map came from the public stream of
    ``privacy_streams(random_state)``, the search found the seed in a fraction of a
    second and the released coefficients minus the regenerated noise were the
    non-private minimiser to 1e-16. The map now comes from ``feature_random_state``
    alone: the search through the noise seed's public stream finds nothing, and the
    search through the map's own derivation finds only its public seed."""
    X, y = make_classification(n_samples=150, n_features=5, random_state=0)
    seed = 1234
    kw = dict(kernel="rbf", n_components=30, epsilon=1.0)
    est = OutputPertSVM(random_state=seed, **kw).fit(X, y)
    assert _seeds_regenerating_map(est, lambda c: privacy_streams(c)[1]) == []
    assert _seeds_regenerating_map(est, check_rng) == [0]  # the public default, not 1234
    # what the attacker then does with the candidate: its noise does not come off
    (solution,) = OutputPertSVM(random_state=seed, **kw)._releases(X, y)
    guess = draw_noise(solution.noise, solution.theta_star.size, privacy_streams(0)[0])
    recovered = est.coef_.ravel() - guess.vector(solution.noise_scale())[:-1]
    assert not np.allclose(recovered, solution.theta_star[:-1], atol=1e-3)


def test_map_depends_on_feature_random_state_only():
    """Same ``feature_random_state`` (given, or the default), any ``random_state``: the
    same published map."""
    X, y = make_classification(n_samples=100, n_features=4, random_state=0)
    kw = dict(kernel="rbf", n_components=20, epsilon=1.0)
    for feature_kw in ({}, {"feature_random_state": 5}):
        fits = [OutputPertSVM(random_state=rs, **feature_kw, **kw).fit(X, y)
                for rs in (1, 2, None)]
        assert not np.allclose(fits[0].coef_, fits[1].coef_)  # other noise, same map
        for other in fits[1:]:
            np.testing.assert_array_equal(other.random_weights_, fits[0].random_weights_)
            np.testing.assert_array_equal(other.random_offset_, fits[0].random_offset_)
    assert OutputPertSVM().feature_random_state == 0  # a public constant by default
    a, b = (OutputPertSVM(feature_random_state=None, random_state=1, **kw).fit(X, y)
            for _ in range(2))
    assert not np.allclose(a.random_weights_, b.random_weights_)  # None: fresh entropy


def test_published_random_fourier_map_is_independent_of_the_noise_stream():
    """Formerly the map was the generator output drawn just before the noise. Now: the
    map is the same whatever the noise (another epsilon, another noise law), none of its
    draws comes from the noise stream, and the noise is the noise stream's first draws,
    so knowing the map predicts nothing about it."""
    X, y = make_classification(n_samples=150, n_features=5, random_state=0)
    kw = dict(kernel="rbf", n_components=30, random_state=11)
    fits = [OutputPertSVM(epsilon=eps, delta=delta, **kw).fit(X, y)
            for eps, delta in ((1.0, 0.0), (3.0, 0.0), (1.0, 1e-5))]
    assert not np.allclose(fits[0].coef_, fits[1].coef_)
    for other in fits[1:]:
        np.testing.assert_array_equal(fits[0].random_weights_, other.random_weights_)
        np.testing.assert_array_equal(fits[0].random_offset_, other.random_offset_)
    (solution,) = OutputPertSVM(**kw)._releases(X, y)
    replayed = draw_gamma_norm(31, privacy_streams(11)[0])      # 30 features + intercept
    assert_allclose(solution.draw.vector(1.0), replayed.vector(1.0), rtol=1e-14)
    noise_draws = privacy_streams(11)[0].standard_normal(1_000_000)
    standard_map = fits[0].random_weights_ / np.sqrt(2.0)       # gamma = 1 / data_norm**2
    assert not np.isin(standard_map, noise_draws).any()


def test_rbf_clips_rows_to_data_norm_in_fit_and_predict():
    X, y = make_classification(n_samples=120, n_features=4, random_state=0)
    X /= np.linalg.norm(X, axis=1)[:, None]
    kw = dict(kernel="rbf", n_components=40, feature_random_state=0, random_state=0)
    a = OutputPertSVM(**kw).fit(X, y)
    b = OutputPertSVM(**kw).fit(3.0 * X, y)  # long rows are clipped back onto the ball
    assert_allclose(a.coef_, b.coef_, atol=1e-7)
    assert_allclose(a.decision_function(X), b.decision_function(3.0 * X), atol=1e-7)
    unclipped = OutputPertSVM(data_norm=None, gamma=1.0, **kw).fit(3.0 * X, y)
    assert not np.allclose(unclipped.decision_function(3.0 * X), a.decision_function(X))


def test_rbf_uses_unit_feature_norm_and_fits_nonlinear_data():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(600, 2))
    y = (np.linalg.norm(X, axis=1) < 0.6).astype(int)  # a disc: not linearly separable
    est = OutputPertSVM(kernel="rbf", gamma=3.0, n_components=300, C=10.0, epsilon=np.inf,
                        data_norm=None, feature_random_state=0).fit(X, y)
    (sol,) = est._releases(X, y)
    assert sol.base_sensitivity == pytest.approx(10.0 * np.sqrt(2.0))  # R = sqrt(1 + 1)
    assert est.coef_.shape == (1, 300)
    linear = OutputPertSVM(C=10.0, epsilon=np.inf, data_norm=2.0).fit(X, y)
    assert est.score(X, y) > 0.9 > linear.score(X, y)
    # degenerate linear problem: theta* = (0, 0, -1), 434 rows exactly on the margin;
    # both fits were certified (an uncertified fit raises)


# ---------------------------------------------------------------- estimator behaviour


def test_same_seed_same_model_other_seed_other_model(unit_ball_classification):
    X, y = unit_ball_classification
    for kw in (dict(), dict(delta=1e-5), dict(kernel="rbf", n_components=20)):
        a = OutputPertSVM(random_state=3, **kw).fit(X, y)
        b = OutputPertSVM(random_state=3, **kw).fit(X, y)
        c = OutputPertSVM(random_state=4, **kw).fit(X, y)
        assert_allclose(a.coef_, b.coef_, rtol=0, atol=0)
        assert not np.allclose(a.coef_, c.coef_)


def test_fitted_estimator_keeps_no_noise_or_data(unit_ball_classification):
    X, y = unit_ball_classification
    common = {"coef_", "intercept_", "classes_", "n_features_in_", "C_", "data_norm_",
              "data_norm_epsilon_", "epsilon_spent_", "delta_spent_", "neighboring_",
              "weight_bound_", "noise_floor_"}
    for kw, extra in ((dict(), set()),
                      (dict(kernel="rbf", n_components=10), {"random_weights_",
                                                               "random_offset_"})):
        est = OutputPertSVM(random_state=0, **kw).fit(X, y)
        fitted = {k for k in vars(est) if k.endswith("_") and not k.startswith("__")}
        assert fitted == common | extra
        assert not [k for k in vars(est) if k.startswith("_") and not k.startswith("__")]


def test_refit_linear_after_rbf_drops_the_map(unit_ball_classification):
    X, y = unit_ball_classification
    est = OutputPertSVM(kernel="rbf", n_components=10, random_state=0).fit(X, y)
    est.set_params(kernel="linear").fit(X, y)
    assert not hasattr(est, "random_weights_")


def test_predict_proba_only_for_logistic(unit_ball_classification):
    X, y = unit_ball_classification
    for loss in ("hinge", "huber"):
        assert not hasattr(OutputPertSVM(loss=loss, random_state=0).fit(X, y), "predict_proba")
    est = OutputPertSVM(loss="logistic", random_state=0).fit(X, y)
    assert_allclose(est.predict_proba(X).sum(axis=1), 1.0)


def test_rows_inside_the_ball_untouched_long_rows_clipped(seed):
    X, y = make_classification(n_samples=200, n_features=4, random_state=seed)
    X /= np.linalg.norm(X, axis=1)[:, None]
    a = OutputPertSVM(random_state=seed, C=0.5).fit(X, y)
    b = OutputPertSVM(random_state=seed, C=0.5).fit(5.0 * X, y)
    assert_allclose(a.coef_, b.coef_, atol=1e-7)
    assert_allclose(a.decision_function(X), b.decision_function(5 * X), atol=1e-7)


def test_one_pass_design_equals_clip_then_append_bit_for_bit():
    from skdp.linear_model._base import design_matrix
    from skdp.utils.validation import augment_intercept, clip_rows_to_norm

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 7)) * rng.uniform(0.1, 3.0, size=(300, 1))  # inside and outside
    X[0] = 0.0
    for data_norm, scaling in ((1.0, 1.0), (2.5, 0.3), (np.inf, 1.0)):
        kw = dict(data_norm=data_norm, fit_intercept=True, intercept_scaling=scaling)
        ours = design_matrix(X, **kw)
        assert np.array_equal(ours, augment_intercept(clip_rows_to_norm(X, data_norm), scaling))
        assert ours.flags.c_contiguous
    kw = dict(data_norm=1.0, fit_intercept=True, intercept_scaling=1.0)
    sparse = design_matrix(sp.csr_matrix(X), **kw)
    assert sp.issparse(sparse) and sparse.format == "csr"
    assert_allclose(sparse.toarray(), design_matrix(X, **kw), rtol=1e-14)


def test_sparse_input_equals_dense():
    X = sp.random(80, 8, density=0.4, random_state=0, format="csr") * 3
    y = np.arange(80) % 2
    for kw in (dict(), dict(kernel="rbf", n_components=20)):
        dense = OutputPertSVM(random_state=1, **kw).fit(X.toarray(), y)
        sparse = OutputPertSVM(random_state=1, **kw).fit(X, y)
        assert_allclose(sparse.coef_, dense.coef_, atol=1e-7)
        assert_allclose(sparse.decision_function(X), dense.decision_function(X.toarray()),
                        atol=1e-7)


def test_grid_search_and_pickle(unit_ball_classification):
    X, y = unit_ball_classification
    grid = GridSearchCV(OutputPertSVM(random_state=0),
                        {"epsilon": [0.5, 5.0], "kernel": ["linear", "rbf"]}, cv=3)
    grid.fit(X, y)
    restored = pickle.loads(pickle.dumps(grid.best_estimator_))
    assert_allclose(restored.decision_function(X), grid.best_estimator_.decision_function(X))


def test_default_fit_emits_no_warning_but_the_data_norm_one(unit_ball_classification):
    X, y = unit_ball_classification
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        OutputPertSVM(data_norm=1.0, random_state=0).fit(X, y)
        OutputPertSVM(kernel="rbf", data_norm=1.0, random_state=0).fit(X, y)
    for kw in (dict(), dict(kernel="rbf")):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            OutputPertSVM(random_state=0, **kw).fit(X, y)
        assert [w.category for w in caught] == [DataNormWarning]


@pytest.mark.slow
def test_utility_improves_with_epsilon_on_average():
    X, y = make_classification(n_samples=600, n_features=5, random_state=0)
    X /= np.linalg.norm(X, axis=1).max()
    accuracies = []
    for eps in (0.1, 1.0, 10.0, 50.0):
        accuracies.append(np.mean([OutputPertSVM(epsilon=eps, C=0.2, random_state=s)
                                   .fit(X, y).score(X, y) for s in range(30)]))
    assert np.all(np.diff(accuracies) > 0)
    exact = OutputPertSVM(epsilon=np.inf, C=0.2).fit(X, y).score(X, y)
    assert accuracies[-1] >= exact - 0.01


def test_rbf_ignores_data_norm():
    X = np.random.default_rng(0).normal(size=(30, 3)) / 3
    est = OutputPertSVM(kernel="rbf", data_norm=None, n_components=10, random_state=0)
    assert est.fit(X, np.arange(30) % 2).epsilon_spent_ == 1.0
