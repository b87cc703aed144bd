"""Oracle tables of shared/spec/objective_perturbation.md sections 3.4 and 4.2."""

import numpy as np
import pytest

from skdp.mechanisms._objective_perturbation import (
    chaudhuri_calibration,
    gradient_sensitivity,
    kst_calibration,
    kst_extra_ridge,
    kst_gaussian_std,
)

# loss smoothness c, n, Lambda, epsilon, kappa, epsilon' used, Delta (mean form), beta_noise
CHAUDHURI_TABLE = [
    (0.25, 10000, 1e-3, 0.1, 0.049385, 0.050615, 0.0, 0.025307),
    (0.25, 10000, 1e-3, 1.0, 0.049385, 0.950615, 0.0, 0.475307),
    (0.25, 1000, 1e-3, 0.1, 0.446287, 0.05, 0.00887552, 0.025),
    (0.25, 1000, 1e-3, 1.0, 0.446287, 0.553713, 0.0, 0.276856),
    (1.0, 10000, 1e-3, 0.1, 0.190620, 0.05, 0.00295021, 0.025),
    (1.0, 1000, 1e-3, 1.0, 1.386294, 0.5, 0.00252081, 0.25),
    (5.0, 10000, 1e-3, 1.0, 0.810930, 0.189070, 0.0, 0.094535),
]


def _chaudhuri_mean_form(c, n, lam, eps, rule):
    # Chaudhuri's mean form L + Lambda/2 ||theta||^2 + b/n is the sum form times 1/n:
    # ridge n Lambda, per-example Hessian bound c (R = 1), replace-one gradient gap 2.
    cal = chaudhuri_calibration(eps, gradient_bound=1.0, hessian_bound=c, ridge=n * lam,
                                neighboring="replace", delta_rule=rule)
    return cal.epsilon_noise, cal.extra_ridge / n, 1.0 / cal.noise_scale


@pytest.mark.parametrize("c, n, lam, eps, kappa, eps_noise, extra, beta", CHAUDHURI_TABLE)
def test_chaudhuri_paper_rule_reproduces_table(c, n, lam, eps, kappa, eps_noise, extra, beta):
    got_eps_noise, got_extra, got_beta = _chaudhuri_mean_form(c, n, lam, eps, "paper")
    assert got_eps_noise == pytest.approx(eps_noise, abs=1e-6)
    assert got_extra == pytest.approx(extra, abs=1e-8)
    assert got_beta == pytest.approx(beta, abs=1e-6)
    if extra == 0.0:
        assert eps - got_eps_noise == pytest.approx(kappa, abs=1e-6)
    assert 2 * np.log1p(c / (n * lam)) == pytest.approx(kappa, abs=1e-6)


@pytest.mark.parametrize("c, n, lam, eps, kappa, eps_noise, extra, beta", CHAUDHURI_TABLE)
def test_chaudhuri_continuous_rule(c, n, lam, eps, kappa, eps_noise, extra, beta):
    got_eps_noise, got_extra, _ = _chaudhuri_mean_form(c, n, lam, eps, "continuous")
    if 0 < eps_noise < eps / 2:  # rows that switch to the fallback
        assert got_eps_noise == pytest.approx(eps / 2)
        assert got_extra > 0
    else:
        assert got_eps_noise == pytest.approx(eps_noise, abs=1e-6)
        assert got_extra == pytest.approx(extra, abs=1e-8)
    # the guarantee: Jacobian term + noise term never exceed epsilon
    jacobian = 2 * np.log1p(c / (n * (lam + got_extra)))
    assert jacobian + got_eps_noise <= eps * (1 + 1e-12)


def test_continuous_rule_is_continuous_at_two_kappa():
    c, ridge = 0.25, 5.0
    for neighboring, m in (("replace", 2), ("add_remove", 1)):
        kappa = m * np.log1p(c / ridge)
        below = chaudhuri_calibration(2 * kappa * (1 - 1e-9), gradient_bound=1, hessian_bound=c,
                                      ridge=ridge, neighboring=neighboring)
        above = chaudhuri_calibration(2 * kappa * (1 + 1e-9), gradient_bound=1, hessian_bound=c,
                                      ridge=ridge, neighboring=neighboring)
        assert below.extra_ridge == pytest.approx(0.0, abs=1e-7)
        assert above.extra_ridge == 0.0
        assert below.noise_scale == pytest.approx(above.noise_scale, rel=1e-6)


def test_add_remove_halves_jacobian_and_gradient_gap():
    common = dict(gradient_bound=3.0, hessian_bound=0.5, ridge=1.0)
    rep = chaudhuri_calibration(4.0, neighboring="replace", **common)
    add = chaudhuri_calibration(4.0, neighboring="add_remove", **common)
    assert rep.epsilon_noise == pytest.approx(4.0 - 2 * np.log1p(0.5))
    assert add.epsilon_noise == pytest.approx(4.0 - np.log1p(0.5))
    assert rep.noise_scale == pytest.approx(6.0 / rep.epsilon_noise)
    assert add.noise_scale == pytest.approx(3.0 / add.epsilon_noise)
    # fallback of add/remove: log(1 + c / (ridge + Delta)) = epsilon / 2
    small = chaudhuri_calibration(0.2, neighboring="add_remove", **common)
    assert np.log1p(0.5 / (1.0 + small.extra_ridge)) == pytest.approx(0.1)
    assert gradient_sensitivity(3.0, "replace") == 6.0


KST_TABLE = [  # delta, epsilon, s, s'
    (1e-5, 0.05, 197.836883, -3952.693934),
    (1e-5, 0.1, 99.019484, -988.175031),
    (1e-5, 0.5, 19.964827, -39.528950),
    (1e-5, 1.0, 10.082092, -9.883721),
    (1e-5, 2.0, 5.139275, -2.472347),
    (1e-5, 5.0, 2.169319, -0.396986),
    (1e-5, 10.0, 1.173237, -0.100277),
    (1e-6, 1.0, 10.957612, -10.775091),
]


@pytest.mark.parametrize("delta, eps, s, s_prime", KST_TABLE)
def test_kst_std_and_derivative_reproduce_table(delta, eps, s, s_prime):
    assert kst_gaussian_std(eps, delta, 1.0) == pytest.approx(s, abs=1e-6)
    calibration = kst_calibration(eps, delta, gradient_bound=1.0, hessian_bound=1.0,
                                  neighboring="add_remove")
    assert calibration.noise_scale == kst_gaussian_std(eps, delta, 1.0)
    s_derivative = calibration.d_log_noise_scale * calibration.noise_scale
    assert s_derivative == pytest.approx(s_prime, abs=1e-6)
    t = np.log(2 / delta)
    assert calibration.d_log_noise_scale == pytest.approx(
        -(4 * t + eps) / (2 * eps * (2 * t + eps)), rel=1e-12)
    assert kst_extra_ridge(eps, 1.0) == pytest.approx(2 / eps)
    assert kst_gaussian_std(eps, delta, 3.0) == pytest.approx(3 * s, abs=3e-6)


def test_kst_calibration_variants():
    gauss = kst_calibration(1.0, 1e-5, gradient_bound=1.0, hessian_bound=0.25,
                            neighboring="add_remove")
    assert gauss.noise == "gaussian"
    assert gauss.noise_scale == pytest.approx(10.082092, abs=1e-6)
    assert gauss.extra_ridge == pytest.approx(0.5)
    replace = kst_calibration(1.0, 1e-5, gradient_bound=1.0, hessian_bound=0.25,
                              neighboring="replace")
    assert replace.noise_scale == pytest.approx(2 * 10.082092, abs=2e-6)
    pure = kst_calibration(0.5, 0.0, gradient_bound=1.5, hessian_bound=0.25,
                           neighboring="replace")
    assert pure.noise == "gamma_norm"
    assert pure.noise_scale == pytest.approx(2 * 3.0 / 0.5)  # density exp(-eps ||b|| / (2 zeta))


def test_infinite_epsilon_means_no_noise():
    for cal in (chaudhuri_calibration(np.inf, gradient_bound=1, hessian_bound=1, ridge=1),
                kst_calibration(np.inf, 1e-5, gradient_bound=1, hessian_bound=1)):
        assert cal.noise == "none" and cal.noise_scale == 0 and cal.extra_ridge == 0


@pytest.mark.parametrize("frac", [0.02, 0.3, 0.5, 0.9])
@pytest.mark.parametrize("neighboring, m", [("replace", 2.0), ("add_remove", 1.0)])
def test_jacobian_fraction_splits_the_budget_exactly(frac, neighboring, m):
    c, ridge = 0.5, 1.0
    for eps in (0.05, 0.3, 1.0, 4.0, 20.0):
        cal = chaudhuri_calibration(eps, gradient_bound=2.0, hessian_bound=c, ridge=ridge,
                                    neighboring=neighboring, eps_jacobian_frac=frac)
        jacobian = m * np.log1p(c / (ridge + cal.extra_ridge))
        assert jacobian + cal.epsilon_noise == pytest.approx(eps, rel=1e-12)
        assert jacobian <= frac * eps * (1 + 1e-12)
        assert cal.extra_ridge >= 0.0
        assert cal.noise_scale == pytest.approx(m * 2.0 / cal.epsilon_noise)
    # continuity where the branches meet: kappa = frac * epsilon
    meet = m * np.log1p(c / ridge) / frac
    lo, hi = (chaudhuri_calibration(meet * (1 + s), gradient_bound=2.0, hessian_bound=c,
                                    ridge=ridge, neighboring=neighboring, eps_jacobian_frac=frac)
              for s in (-1e-9, 1e-9))
    assert lo.noise_scale == pytest.approx(hi.noise_scale, rel=1e-6)
    assert lo.extra_ridge == pytest.approx(hi.extra_ridge, abs=1e-6)


@pytest.mark.parametrize("neighboring", ["replace", "add_remove"])
@pytest.mark.parametrize("eps", [0.1, 0.7, 5.0])
@pytest.mark.parametrize("frac", [0.05, 0.5])
def test_calibration_derivatives_match_central_differences(neighboring, eps, frac):
    common = dict(gradient_bound=1.3, hessian_bound=0.4, neighboring=neighboring)
    h = 1e-6 * eps
    cases = [
        lambda e, d=0.0: chaudhuri_calibration(e, ridge=1.0, eps_jacobian_frac=frac, **common),
        lambda e, d=1e-5: kst_calibration(e, d, **common),
        lambda e, d=0.0: kst_calibration(e, d, **common),
    ]
    for calibrate in cases:
        derivative = calibrate(eps)
        up, down = calibrate(eps + h), calibrate(eps - h)
        fd_ridge = (up.extra_ridge - down.extra_ridge) / (2 * h)
        fd_log_scale = (np.log(up.noise_scale) - np.log(down.noise_scale)) / (2 * h)
        assert derivative.d_extra_ridge == pytest.approx(fd_ridge, rel=1e-6, abs=1e-9)
        assert derivative.d_log_noise_scale == pytest.approx(fd_log_scale, rel=1e-6)
        # in log delta (Gaussian only; 0 for the pure variants)
        delta = calibrate.__defaults__[0]
        if delta > 0:
            k = 1e-6
            up, down = calibrate(eps, delta * np.exp(k)), calibrate(eps, delta * np.exp(-k))
            fd_delta = (np.log(up.noise_scale) - np.log(down.noise_scale)) / (2 * k)
            assert derivative.d_log_noise_scale_d_log_delta == pytest.approx(fd_delta, rel=1e-6)
        else:
            assert derivative.d_log_noise_scale_d_log_delta == 0.0


@pytest.mark.parametrize("delta", [0.0, 1e-5])
def test_whole_calibration_derivatives_are_in_the_total_epsilon(delta):
    from skdp.mechanisms._objective_perturbation import objective_perturbation_calibration

    common = dict(gradient_bound=1.3, hessian_bound=0.4, ridge=1.0, neighboring="add_remove")
    eps, h = 0.7, 1e-6
    _, calibration = objective_perturbation_calibration(eps, delta, **common)
    (_, up), (_, down) = (objective_perturbation_calibration(e, delta, **common)
                          for e in (eps + h, eps - h))
    assert calibration.d_extra_ridge == pytest.approx(
        (up.extra_ridge - down.extra_ridge) / (2 * h), rel=1e-6, abs=1e-9)
    assert calibration.d_log_noise_scale == pytest.approx(
        (np.log(up.noise_scale) - np.log(down.noise_scale)) / (2 * h), rel=1e-6)
