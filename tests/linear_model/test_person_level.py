"""Person-level privacy (``fit(X, y, groups=...)``) of the perturbation estimators
OutputPertSVM and ObjPertLogisticRegression: the row-level fit when every person has
one row, the calibration by hand (a person's Jacobian term), exact replays of the
privacy loss between a dataset and the same with one person of several rows more,
refusals before any noise, and the reported relation."""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.special import expit
from scipy.stats import chi2
from sklearn.base import clone

import skdp.linear_model._objective_perturbation as objpert_module
import skdp.linear_model._output_perturbation as outpert_module
from skdp import ObjPertLogisticRegression, OutputPertSVM


def _three_classes(X):
    return np.arange(X.shape[0]) % 3


def _pairs(n):
    """Persons of two rows each (the last one alone when ``n`` is odd)."""
    return np.arange(n) // 2


# -- one row per person: the row-level fit ---------------------------------------------------

@pytest.mark.parametrize("params", [
    dict(loss="hinge"), dict(loss="logistic"), dict(loss="huber"),
    dict(loss="hinge", neighboring="replace"), dict(loss="logistic", delta=1e-5),
    dict(loss="hinge", noise="laplace"), dict(kernel="rbf", n_components=20),
    dict(loss="hinge", class_weight={0: 2.0, 1: 0.5}),
])
def test_output_perturbation_with_one_row_per_person_is_the_row_level_fit(
        params, unit_ball_classification):
    X, y = unit_ball_classification
    labels = [y, _three_classes(X)] if params.get("kernel") != "rbf" else [y]
    for target in labels:
        kw = dict(epsilon=1.0, C=0.5, data_norm=1.0, random_state=0, **params)
        rows = OutputPertSVM(**kw).fit(X, target)
        # labels of any kind, in any order: one label per row
        persons = OutputPertSVM(**kw).fit(X, target, groups=[f"p{i}" for i in
                                                             range(len(target))][::-1])
        assert_array_equal(persons.coef_, rows.coef_)
        assert_array_equal(persons.intercept_, rows.intercept_)
        assert persons.weight_bound_ == rows.weight_bound_
        assert persons.neighboring_ == rows.neighboring_ + "_person"
        # and C="auto" resolves to the same C
        auto = {**kw, "C": "auto"}
        assert_array_equal(OutputPertSVM(**auto).fit(X, target, groups=np.arange(len(y))).coef_,
                           OutputPertSVM(**auto).fit(X, target).coef_)


def test_output_perturbation_sensitivity_is_a_person_of_weight_M(unit_ball_classification):
    X, y = unit_ball_classification
    R, C, M = np.sqrt(2.0), 0.1, 3.0
    for neighboring, factor in (("add_remove", 1.0), ("replace", 2.0)):
        for target, multiplier in ((y, 1.0), (_three_classes(X), np.sqrt(2.0))):
            kw = dict(epsilon=1.0, C=C, loss="logistic", data_norm=1.0,
                      neighboring=neighboring, random_state=0)
            solution = OutputPertSVM(max_rows_per_group=M, **kw)._releases(
                X, target, groups=_pairs(len(y)))[0]
            # softmax (three classes, logistic): sqrt(2) C W R
            assert_allclose(solution.base_sensitivity, factor * multiplier * C * M * R,
                            rtol=1e-12)
            plain = OutputPertSVM(**{**kw, "C": C * M})._releases(X, target)[0]
            assert_allclose(solution.noise_scale(), plain.noise_scale(), rtol=1e-15)
    # with sample weights: W = max_sample_weight * M
    weighted = OutputPertSVM(epsilon=1.0, C=C, data_norm=1.0, max_sample_weight=2.0,
                             max_rows_per_group=M, random_state=0).fit(
        X, y, sample_weight=np.full(len(y), 5.0), groups=_pairs(len(y)))
    assert weighted.weight_bound_ == 2.0 * M


def test_persons_weights_are_min_one_M_over_k(unit_ball_classification):
    """A person of ``k`` rows weighs ``min(1, M / k)`` per row: the infinite-epsilon fit
    with groups is the weighted fit with those weights."""
    X, y = unit_ball_classification
    groups = np.arange(len(y)) // 5          # persons of five rows
    M = 2.0
    kw = dict(epsilon=np.inf, C=0.5, data_norm=1.0)
    for make in (lambda **k: OutputPertSVM(loss="logistic", tol=1e-9, **kw, **k),
                 lambda **k: ObjPertLogisticRegression(**kw, **k)):
        persons = make(max_rows_per_group=M).fit(X, y, groups=groups)
        weighted = make().fit(X, y, sample_weight=np.full(len(y), M / 5))
        assert_allclose(persons.coef_, weighted.coef_, atol=1e-8)
        other = make(max_rows_per_group=2 * M).fit(X, y, groups=groups)
        assert not np.allclose(other.coef_, persons.coef_, atol=1e-3)


# -- objective perturbation: a person's Jacobian term, by hand -------------------------------

def _person_calibration(epsilon, *, beta, zeta, dim, rank=1, m=1, frac=0.5):
    """Noise scale and extra ridge of the pure mechanism with the person's Jacobian term
    ``m r d log(1 + beta / (d lambda))``, computed here from the derivation."""
    epsilon_mech = 0.99 * epsilon
    terms = m * rank * dim
    kappa = terms * np.log1p(beta / dim)
    if kappa <= frac * epsilon_mech:
        return zeta / (epsilon_mech - kappa), 0.0
    # Delta solves terms * log(1 + beta / (dim (1 + Delta))) = frac * epsilon_mech
    extra = beta / (dim * np.expm1(frac * epsilon_mech / terms)) - 1.0
    return zeta / ((1.0 - frac) * epsilon_mech), extra


@pytest.mark.parametrize("neighboring", ["add_remove", "replace"])
@pytest.mark.parametrize("C", [0.05, 0.5, 20.0])
def test_objpert_person_calibration_by_hand(C, neighboring, unit_ball_classification):
    X, y = unit_ball_classification
    M, R, d = 3.0, np.sqrt(2.0), X.shape[1] + 1        # intercept column
    m = 2 if neighboring == "replace" else 1
    kw = dict(epsilon=1.0, C=C, data_norm=1.0, neighboring=neighboring, random_state=0)
    for target, c, rank, gradient in ((y, 0.25, 1, 1.0),
                                      (_three_classes(X), 0.5, 2, np.sqrt(2.0))):
        solution = ObjPertLogisticRegression(max_rows_per_group=M, **kw)._releases(
            X, target, groups=_pairs(len(y)))[0]
        scale, extra = _person_calibration(1.0, beta=c * C * M * R**2,
                                           zeta=m * gradient * C * M * R, dim=d, rank=rank,
                                           m=m)
        assert_allclose(solution.calibration.noise_scale, scale, rtol=1e-12)
        assert_allclose(solution.calibration.extra_ridge, extra, rtol=1e-12, atol=1e-15)
        # the Jacobian term actually paid is the person's, within its share of epsilon
        lam = 1.0 + solution.calibration.extra_ridge
        jacobian = m * rank * d * np.log1p(c * C * M * R**2 / (d * lam))
        assert jacobian + solution.calibration.epsilon_noise <= 0.99 * (1 + 1e-12)
        # and it is more than the record's term: the row-level calibration differs
        record = ObjPertLogisticRegression(C=C * M, **{k: v for k, v in kw.items()
                                                      if k != "C"})._releases(X, target)[0]
        assert (solution.calibration.noise_scale > record.calibration.noise_scale
                or solution.calibration.extra_ridge > record.calibration.extra_ridge)


def test_objpert_person_calibration_paper_rule_and_auto_C(unit_ball_classification):
    X, y = unit_ball_classification
    M, R, d = 2.0, np.sqrt(2.0), X.shape[1] + 1
    # delta_rule="paper": no ridge while kappa < epsilon_mech, else Jacobian = epsilon / 2
    for C in (0.3, 5.0):
        solution = ObjPertLogisticRegression(
            epsilon=1.0, C=C, data_norm=1.0, delta_rule="paper", max_rows_per_group=M,
            random_state=0)._releases(X, y, groups=_pairs(len(y)))[0]
        beta = 0.25 * C * M * R**2
        kappa = d * np.log1p(beta / d)
        if kappa < 0.99:
            assert solution.calibration.extra_ridge == 0.0
            assert_allclose(solution.calibration.noise_scale, C * M * R / (0.99 - kappa),
                            rtol=1e-12)
        else:
            lam = 1.0 + solution.calibration.extra_ridge
            assert_allclose(d * np.log1p(beta / (d * lam)), 0.5 * 0.99, rtol=1e-12)
    # C="auto": the person's Jacobian term takes 5 % of epsilon (binary), and the fit
    # then needs no extra ridge
    for epsilon in (0.1, 1.0, 5.0):
        fitted = ObjPertLogisticRegression(epsilon=epsilon, data_norm=1.0,
                                           max_rows_per_group=M, random_state=0)
        solution = fitted._releases(X, y, groups=_pairs(len(y)))[0]
        beta = 0.25 * fitted.C_ * M * R**2
        assert_allclose(d * np.log1p(beta / d), 0.05 * epsilon, rtol=1e-10)
        assert solution.calibration.extra_ridge == 0.0


def test_objpert_person_epsilon_derivative_matches_finite_differences(
        unit_ball_classification):
    X, y = unit_ball_classification
    groups = _pairs(len(y))

    def make(epsilon, C=0.5, delta=0.0):
        return ObjPertLogisticRegression(epsilon=epsilon, C=C, delta=delta, data_norm=1.0,
                                         max_rows_per_group=2.0, random_state=0)

    h = 1e-5
    for delta in (0.0, 1e-5):             # pure, and Gaussian (the chi-square tail)
        for C in (0.5, 20.0, "auto"):     # no ridge, the extra-ridge branch, C moving
            for labels in (y, _three_classes(X)):
                release = make(2.0, C, delta).fit_release(X, labels, groups=groups)
                up = make(2.0 + h, C, delta).fit(X, labels, groups=groups).coef_
                down = make(2.0 - h, C, delta).fit(X, labels, groups=groups).coef_
                assert_allclose(release.coef_derivative, (up - down) / (2 * h), atol=1e-6)


# -- objective perturbation, Gaussian: the tail of a person's gradient subspace -------------

@pytest.mark.parametrize("neighboring", ["add_remove", "replace"])
@pytest.mark.parametrize("C", [0.05, 2.0])
def test_objpert_gaussian_person_calibration_by_hand(C, neighboring, unit_ball_classification):
    """With groups, ``delta > 0``: ``s = zeta sqrt(4 q^2 + 4 eps) / eps`` with ``q^2 =
    max(2 log(2/delta), chi2.isf(delta, m))`` and ``m = r d`` (a person's gradient
    turns in the span of their rows: ``d`` coefficients, ``r = 1`` binary, ``K - 1``
    softmax), the extra ridge ``2 r beta / eps`` of KST; at the mechanism's share. The
    person's chi-square tail keeps the noise term within ``eps / 2`` outside ``delta``
    whatever the direction in the span; the record's calibration (one direction) does
    not."""
    X, y = unit_ball_classification
    M, R, d, delta = 3.0, np.sqrt(2.0), X.shape[1] + 1, 1e-6
    factor = 2.0 if neighboring == "replace" else 1.0
    eps_m, delta_m = 0.99, delta * np.exp(-0.005)
    kw = dict(epsilon=1.0, delta=delta, C=C, data_norm=1.0, neighboring=neighboring,
              random_state=0)
    for target, c, rank, gradient in ((y, 0.25, 1, 1.0),
                                      (_three_classes(X), 0.5, 2, np.sqrt(2.0))):
        solution = ObjPertLogisticRegression(max_rows_per_group=M, **kw)._releases(
            X, target, groups=_pairs(len(y)))[0]
        calibration = solution.calibration
        zeta, m = factor * gradient * C * M * R, rank * d
        q2 = max(2.0 * np.log(2.0 / delta_m), chi2.isf(delta_m, m))
        assert q2 > 2.0 * np.log(2.0 / delta_m)      # the person's tail is wider
        assert calibration.noise == "gaussian"
        assert_allclose(calibration.noise_scale, zeta * np.sqrt(4 * q2 + 4 * eps_m) / eps_m,
                        rtol=1e-12)
        assert_allclose(calibration.extra_ridge, 2 * rank * c * C * M * R**2 / eps_m,
                        rtol=1e-12)
        # the noise term a ||P_V b|| / s + a^2 / 2 (a = zeta / s) passes eps / 2 only
        # where ||P_V b|| / s > t: probability chi2.sf(t^2, m), at most delta
        a = zeta / calibration.noise_scale
        t = (eps_m / 2 - a * a / 2) / a
        assert chi2.sf(t * t, m) <= delta_m * (1 + 1e-9)
        # the record's calibration at C W: far more than delta
        record = ObjPertLogisticRegression(**{**kw, "C": C * M})._releases(X, target)[0]
        a = zeta / record.calibration.noise_scale
        t = (eps_m / 2 - a * a / 2) / a
        assert chi2.sf(t * t, m) > 10 * delta_m


def test_objpert_gaussian_fit_with_groups_has_no_renyi_curve(unit_ball_classification):
    X, y = unit_ball_classification
    est = ObjPertLogisticRegression(epsilon=1.0, delta=1e-5, data_norm=1.0, random_state=0)
    rows = clone(est).fit(X, y)
    persons = clone(est).fit(X, y, groups=_pairs(len(y)))
    assert persons.neighboring_ == "add_remove_person"
    assert np.all(np.isfinite(rows.renyi_curve()))
    with pytest.raises(ValueError, match="groups.*no Renyi curve"):
        persons.renyi_curve()
    # what each fit declares to the composers: the record's curve, none for persons
    np.testing.assert_array_equal(rows._renyi_spent(), rows.renyi_curve())
    assert persons._renyi_spent() is None
    assert rows._renyi_cost(n_classes=2) is not None
    assert rows._renyi_cost(n_classes=2, persons=True) is None


def test_person_selection_of_gaussian_objpert_is_not_charged_a_renyi_curve():
    """A search over persons with Gaussian objective-perturbation rungs composes their
    (epsilon, delta) (basic-composition odometer), never the record's Renyi curve."""
    from skdp.accounting._odometers import ApproxDPOdometer, RenyiOdometer
    from skdp.model_selection._selection_accounts import training_account

    est = ObjPertLogisticRegression(delta=1e-6, data_norm=1.0)
    rows, _ = training_account(est, 2.0, 1e-5)
    persons, params = training_account(est, 2.0, 1e-5, persons=True)
    assert isinstance(rows, RenyiOdometer)
    assert isinstance(persons, ApproxDPOdometer) and 0 < params["delta"] < 1e-5


def test_renyi_ledger_refuses_a_gaussian_objpert_fit_with_groups(unit_ball_classification,
                                                                 monkeypatch):
    from skdp import PrivacyLedger

    X, y = unit_ball_classification
    _no_noise(monkeypatch)
    ledger = PrivacyLedger(epsilon=5.0, delta=1e-5, composition="renyi")
    with pytest.raises(ValueError, match="groups has no Renyi curve"):
        ledger.fit(ObjPertLogisticRegression(delta=1e-7, data_norm=1.0), X, y,
                   groups=_pairs(len(y)))
    assert ledger.entries == []


# -- exact replays of the privacy loss on person-level neighbours ---------------------------

def _orthonormal_complement(theta):
    """An orthonormal basis of the hyperplane orthogonal to ``theta`` (rows)."""
    q, _ = np.linalg.qr(np.column_stack([theta, np.eye(theta.size)]))
    return q[:, 1:theta.size].T


def _replayed_release(X, y, C, M, **params):
    """A released fit with groups on rows of small weight (little curvature besides the
    ridge), and what the proof rebuilds from it: the minimiser, the noise scale, the
    ridge, the noise ``b`` recomputed from the stationarity condition (checked against
    the drawn one) and the objective's Hessian ``A`` at the minimiser."""
    d = X.shape[1]
    background = np.full(len(y), 1e-3)
    est = ObjPertLogisticRegression(C=C, fit_intercept=False, data_norm=1.0,
                                    max_rows_per_group=M, random_state=3, **params)
    solution = est._releases(X, y, sample_weight=background, groups=np.arange(len(y)))[0]
    theta, lam = solution.minimiser, solution.ridge
    signs = 2.0 * y - 1.0
    margins = signs * (X @ theta)
    b = -(C * X.T @ (background * -signs * expit(-margins)) + lam * theta)
    assert_allclose(b, solution.noise, rtol=1e-6, atol=1e-8)
    hessian = (C * (X.T * (background * expit(margins) * expit(-margins))) @ X
               + lam * np.eye(d))
    return solution.calibration, theta, solution.calibration.noise_scale, lam, b, hessian


def test_objpert_replayed_privacy_loss_of_a_person_is_within_epsilon(unit_ball_classification):
    """From a released pure fit, rebuild the noise that the dataset with one more person
    would have needed for the same output, and the Jacobian ratio ``det(A + E) / det(A)``
    of that person's rows, exactly as the proof does. The person has ``d - 1``
    orthogonal rows at margin 0 (largest curvature), so their Hessian is not rank one:
    the Jacobian term exceeds the record's bound ``log(1 + beta / lambda)`` and stays
    within the person's; the whole privacy loss stays within epsilon. A second person
    of ``M`` rows along the noise moves it as far as their weight allows: beyond what a
    calibration for one row would pay."""
    X, y = unit_ball_classification
    X, y = X[:60], y[:60]
    d = X.shape[1]
    C, epsilon, M = 8.0, 1.0, 3.0
    calibration, theta, scale, lam, b, hessian = _replayed_release(X, y, C, M, epsilon=epsilon)
    assert calibration.extra_ridge > 0          # the person's term needed the ridge
    beta = 0.25 * C * M                         # R = 1 without the intercept
    mechanism_epsilon, jacobian_share = 0.99 * epsilon, 0.99 * epsilon - calibration.epsilon_noise

    def privacy_loss(rows, labels, weights):
        person_margins = labels * (rows @ theta)
        gradient = C * rows.T @ (weights * -labels * expit(-person_margins))
        curvature = C * weights * expit(person_margins) * expit(-person_margins)
        E = (rows.T * curvature) @ rows
        log_jacobian = np.linalg.slogdet(np.eye(d) + np.linalg.solve(hessian, E))[1]
        noise_term = (np.linalg.norm(b - gradient) - np.linalg.norm(b)) / scale
        return noise_term, log_jacobian

    # a person of d - 1 orthogonal rows at margin 0, weights M / (d - 1) each
    rows = _orthonormal_complement(theta)
    k = rows.shape[0]
    noise_term, log_jacobian = privacy_loss(rows, np.ones(k), np.full(k, min(1.0, M / k)))
    assert log_jacobian > np.log1p(beta / lam)         # the record's bound fails
    assert log_jacobian <= jacobian_share * (1 + 1e-12)
    assert abs(noise_term) <= calibration.epsilon_noise
    assert max(noise_term - log_jacobian, log_jacobian - noise_term) <= mechanism_epsilon

    # a person of M rows along -b with label -1: their gradient adds along b
    direction = -b / np.linalg.norm(b)
    rows = np.tile(direction, (int(M), 1))
    noise_term, log_jacobian = privacy_loss(rows, -np.ones(int(M)), np.ones(int(M)))
    assert max(noise_term - log_jacobian, log_jacobian - noise_term) <= mechanism_epsilon
    assert noise_term > calibration.epsilon_noise / M   # one row's calibration: it would fail


def test_objpert_gaussian_replayed_privacy_loss_of_a_person(unit_ball_classification):
    """The Gaussian variant with groups, replayed at a released fit as above: a person
    of ``d - 1`` orthonormal rows at margin 0 has a Jacobian term above the record's
    bound and within the ``eps / 2`` of Kifer et al.'s ridge, and their gradient lies
    in the span of their rows, where the noise term is at most ``a ||P_V b|| / s + a^2 /
    2`` (``a = ||v|| / s``): within ``eps / 2`` since ``||P_V b|| <= s q`` at the
    person's ``q`` (``m = d``)."""
    X, y = unit_ball_classification
    X, y = X[:60], y[:60]
    d = X.shape[1]
    C, epsilon, delta, M = 8.0, 1.0, 1e-5, 3.0
    _, theta, scale, lam, b, hessian = _replayed_release(X, y, C, M, epsilon=epsilon,
                                                         delta=delta)
    beta, eps_m = 0.25 * C * M, 0.99 * epsilon
    rows = _orthonormal_complement(theta)
    k = rows.shape[0]
    weights = np.full(k, min(1.0, M / k))
    gradient = C * rows.T @ (weights * -expit(-(rows @ theta)))
    curvature = C * weights * expit(rows @ theta) * expit(-(rows @ theta))
    E = (rows.T * curvature) @ rows
    log_jacobian = np.linalg.slogdet(np.eye(d) + np.linalg.solve(hessian, E))[1]
    assert log_jacobian > np.log1p(beta / lam)           # not one record's term
    assert log_jacobian <= eps_m / 2
    noise_term = (np.sum((b - gradient) ** 2) - np.sum(b**2)) / (2 * scale**2)
    # the span of the person's rows: ||P_V b|| within s q, so the noise term within eps/2
    projected = np.linalg.norm(rows @ b)
    q = np.sqrt(max(2 * np.log(2 / (delta * np.exp(-0.005))),
                    chi2.isf(delta * np.exp(-0.005), d)))
    assert projected <= scale * q
    a = np.linalg.norm(gradient) / scale
    assert abs(noise_term) <= a * projected / scale + a * a / 2 <= eps_m / 2
    assert abs(noise_term) + log_jacobian <= eps_m


@pytest.mark.parametrize("loss", ["hinge", "logistic"])
def test_output_perturbation_replayed_privacy_loss_of_a_person_is_within_epsilon(
        loss, unit_ball_classification):
    """Fit a dataset and the same with one more person of ``M`` rows, each against the
    model (all on the wrong side of the margin), with the same noise draws; the privacy
    loss of the Gamma-norm release at the worst output, ``||theta_D - theta_D'|| /
    scale``, and at the released point are within epsilon, and the person moves the
    minimiser by more than one row's sensitivity ``C R`` (a calibration for one row
    would not cover them)."""
    X, y = unit_ball_classification
    C, M, epsilon = 0.1, 3, 1.0
    background = np.full(len(y), 0.01)
    kw = dict(epsilon=epsilon, C=C, loss=loss, fit_intercept=False, data_norm=1.0,
              max_rows_per_group=float(M), tol=1e-6, random_state=0)
    groups = np.arange(len(y))
    before = OutputPertSVM(**kw)._releases(X, y, sample_weight=background, groups=groups)[0]
    x_new = -before.theta_star.ravel() / np.linalg.norm(before.theta_star)
    after = OutputPertSVM(**kw)._releases(
        np.vstack([X] + [x_new] * M), np.append(y, [1] * M),
        sample_weight=np.append(background, [1.0] * M),
        groups=np.append(groups, [-1] * M))[0]    # one person, M rows
    scale = before.noise_scale()
    assert_allclose(scale, after.noise_scale(), rtol=0)
    assert_allclose(before.base_sensitivity, C * M)           # W = M, R = 1
    moved = np.linalg.norm(after.theta_star - before.theta_star)
    assert moved / scale <= epsilon                             # the worst output
    released = before.theta
    loss_at_release = (np.linalg.norm(released - after.theta_star)
                       - np.linalg.norm(released - before.theta_star)) / scale
    assert abs(loss_at_release) <= epsilon
    # more than one row's sensitivity (1 + 2 tol) C R: calibrated for one row (scale / M),
    # the loss at the worst output would pass epsilon
    assert moved > (1 + 2e-6) * C
    assert moved / (scale / M) > epsilon


# -- refusals, before any noise --------------------------------------------------------------

def _no_noise(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the noise stream was opened")
    for module in (objpert_module, outpert_module):
        monkeypatch.setattr(module, "noise_generator", refuse)


@pytest.mark.parametrize("make", [lambda: ObjPertLogisticRegression(data_norm=1.0),
                                  lambda: OutputPertSVM(data_norm=1.0)])
def test_bad_groups_are_refused_before_any_noise(make, unit_ball_classification, monkeypatch):
    X, y = unit_ball_classification
    _no_noise(monkeypatch)
    with pytest.raises(ValueError, match="another number of labels"):
        make().fit(X, y, groups=np.arange(len(y) - 1))
    with pytest.raises(ValueError, match="missing value"):
        make().fit(X, y, groups=np.where(np.arange(len(y)) == 4, np.nan, 1.0))
    with pytest.raises(ValueError, match="max_rows_per_group"):
        make().set_params(max_rows_per_group=0.0).fit(X, y, groups=np.arange(len(y)))


@pytest.mark.parametrize("make", [lambda: ObjPertLogisticRegression(data_norm="private"),
                                  lambda: OutputPertSVM(data_norm="private"),
                                  lambda: OutputPertSVM(data_norm="private", kernel="rbf")])
def test_private_norm_with_groups_is_refused_before_any_noise(make, unit_ball_classification,
                                                              monkeypatch):
    X, y = unit_ball_classification
    import skdp.linear_model._base as base_module

    def no_quantile(*args, **kwargs):
        raise AssertionError("the private quantile was drawn")
    monkeypatch.setattr(base_module, "private_data_norm", no_quantile)
    _no_noise(monkeypatch)
    with pytest.raises(ValueError, match="data_norm='private' is refused with groups.*one "
                                         "person's rows"):
        make().fit(X, y, groups=np.arange(len(y)))


# -- the reported relation --------------------------------------------------------------------

@pytest.mark.parametrize("Est", [ObjPertLogisticRegression, OutputPertSVM])
def test_neighboring_is_reported_per_person(Est, unit_ball_classification):
    X, y = unit_ball_classification
    est = Est(epsilon=1.0, C=0.5, data_norm=1.0, random_state=0)
    assert est.fit(X, y, groups=_pairs(len(y))).neighboring_ == "add_remove_person"
    assert est.epsilon_spent_ == 1.0 and est.delta_spent_ == 0.0
    assert est.fit(X, y).neighboring_ == "add_remove"      # a refit without groups
    est.set_params(neighboring="replace")
    assert est.fit(X, y, groups=_pairs(len(y))).neighboring_ == "replace_person"
    release = est.fit_release(X, y, groups=_pairs(len(y)))
    assert est.neighboring_ == "replace_person"
    assert_array_equal(release.coef, est.coef_)
    assert est.get_params()["max_rows_per_group"] == 1.0
