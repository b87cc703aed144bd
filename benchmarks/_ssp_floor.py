"""The floor of SSP's family in a cell where the privacy noise dominates the error:
``docs/privacy/sufficient_statistics.rst``, "Where the noise dominates".

A cell is noise-dominated when AdaSSP's excess test MSE over least squares exceeds least
squares' own (:func:`noise_dominated`). There the family ``theta = (A~ + alpha I)^{-1}
b~`` on the released ``A~ = A + E`` and ``b~ = b + e`` is measured against three
oracles, each computed with the test set, which no private rule may read:

* **the shipped split, one ridge per cell**: SSP's own releases (the benchmark's seeds,
  hence its very noise), the ``alpha`` of a fine grid with the least mean test MSE over
  the draws: what the best rule of the form ``alpha = f(public values)`` can reach;
* **any split, one ridge per cell**: the same with the Gaussian budget ``mu^2`` split
  ``g`` to ``A`` and ``1 - g`` to ``b`` (no eigenvalue release, which only a private rule
  needs), ``g`` in :data:`GRAM_SHARES`;
* **one ridge per draw**: the best ``alpha`` of each draw. It knows where the draw's noise
  fell relative to the exact statistics, which no function of the released statistics
  does (an unbiased estimate of the risk from the release has a standard deviation many
  times the gain it would select on: the docs' derivation), so it is not a floor of
  rules, only of what the family can represent.

One private rule is measured beside them, :func:`risk_estimate_ridge`: the ridge at
least SSP's own that minimises an estimate of the risk from the release and the noise's
known law (post-processing), whose noise outweighs what it selects on.

With a large ridge ``theta ~ b~ / alpha`` needs no Gram matrix: :func:`moment_only_bound`
is the least expected test MSE of ``c b~`` over ``c`` (chosen knowing ``b``) with the
whole budget on ``b``, in closed form.
"""

import numpy as np

from skdp.accounting import gdp_mu
from skdp.linear_model._sufficient_statistics import _sufficient_statistics_perturbation
from skdp.mechanisms._sufficient_statistics import (SSPCalibration, draw_ssp_noise,
                                                    gram_coordinates, gram_from_coordinates,
                                                    ssp_sensitivities)
from skdp.utils._random import noise_generator

GRAM_SHARES = (0.05, 0.1, 0.2, 0.3, 0.45, 0.6, 0.8)
"""The Gram matrix's shares of ``mu^2`` the oracle tries (the moment takes the rest)."""

ALPHAS = np.r_[0.0, np.geomspace(1e-3, 1e8, 221), np.inf]
"""The oracle's ridges (sum form): 0, a grid of ratio 1.12, and ``inf`` (predict 0)."""

GOAL_RATIO = 0.9
"""The issue's goal in a noise-dominated cell: a test MSE at most 0.9 times AdaSSP's."""


def noise_dominated(adassp_mse, ols_mse):
    """Whether AdaSSP's excess test MSE over least squares exceeds least squares' own."""
    return adassp_mse - ols_mse > ols_mse


def ridge_path_mse(gram, moment, test_design, y_test, alphas=ALPHAS):
    """The test MSE of ``(gram + alpha I)^{-1} moment`` at each ``alpha`` (``inf``:
    the zero vector; a singular system: ``inf``), from one eigendecomposition."""
    values, vectors = np.linalg.eigh(gram)
    rotated = vectors.T @ moment
    projected = test_design @ vectors
    out = np.empty(len(alphas))
    for k, alpha in enumerate(alphas):
        if np.isinf(alpha):
            out[k] = np.mean(y_test**2)
            continue
        shifted = values + alpha
        if np.min(np.abs(shifted)) < 1e-12 * max(1.0, np.max(np.abs(values))):
            out[k] = np.inf
            continue
        out[k] = np.mean((projected @ (rotated / shifted) - y_test) ** 2)
    return out


def _cell_setting(statistics, epsilon, delta, data_norm, y_bound):
    dim = statistics.moment.size
    return dict(epsilon=epsilon, delta=delta, neighboring="add_remove", data_norm=data_norm,
                intercept_scaling=1.0, n_features=dim - 1, y_bound=y_bound,
                weight_bound=1.0)


def shipped_releases(statistics, epsilon, delta, data_norm, y_bound, seeds):
    """SSP's own releases (``alpha="auto"``) at ``seeds``: ``[(A~, b~, alpha,
    calibration), ...]``, the noise of ``SSPLinearRegression(random_state=seed)`` on
    the same statistics."""
    setting = _cell_setting(statistics, epsilon, delta, data_norm, y_bound)
    out = []
    for seed in seeds:
        release = _sufficient_statistics_perturbation(statistics, alpha=None,
                                                      rng=noise_generator(seed), **setting)
        gram, moment, _ = release.noisy()
        out.append((gram, moment, release.alpha, release.calibration))
    return out


def split_calibration(sensitivities, mu, gram_share):
    """Gaussian noise with ``gram_share`` of ``mu^2`` on ``A`` and the rest on ``b``."""
    return SSPCalibration("gaussian", sensitivities.gram / (mu * np.sqrt(gram_share)),
                          sensitivities.moment / (mu * np.sqrt(1.0 - gram_share)), 0.0)


def split_releases(statistics, epsilon, delta, data_norm, y_bound, gram_share, seeds):
    """Releases of ``A`` and ``b`` at the split ``gram_share``: ``[(A~, b~), ...]``."""
    setting = _cell_setting(statistics, epsilon, delta, data_norm, y_bound)
    sensitivities = ssp_sensitivities(
        law="gaussian", **{k: setting[k] for k in ("data_norm", "intercept_scaling",
                                                   "n_features", "y_bound", "weight_bound",
                                                   "neighboring")})
    calibration = split_calibration(sensitivities, gdp_mu(epsilon, delta), gram_share)
    dim = statistics.moment.size
    exact = gram_coordinates(statistics.gram, "gaussian")
    out = []
    for seed in seeds:
        noise = draw_ssp_noise(calibration, dim, noise_generator(seed), private_ridge=False)
        out.append((gram_from_coordinates(exact + noise["gram"], dim, "gaussian"),
                    statistics.moment + noise["moment"]))
    return out


def ridge_oracle(releases, test_design, y_test):
    """The mean test MSE over draws at the best ``alpha`` fixed for the cell, that
    ``alpha``, and the mean of each draw's best (``per_draw``)."""
    paths = np.array([ridge_path_mse(gram, moment, test_design, y_test)
                      for gram, moment, *_ in releases])
    mean = paths.mean(axis=0)
    best = int(np.argmin(mean))
    return {"alpha": float(ALPHAS[best]), "mse": float(mean[best]),
            "per_draw_mse": float(np.mean(paths.min(axis=1)))}


def risk_estimate(gram, moment, calibration, alpha):
    """An estimate of ``J(alpha) = theta^T A theta - 2 theta^T b`` (the sum-form risk up
    to a constant) for ``theta = M b~``, ``M = (A~ + alpha I)^{-1}``, from the release:
    ``theta^T A~ theta - 2 theta^T b~ + 2 v_b tr M`` (exact in ``e``: ``M`` does not
    depend on it) ``+ 2 v_o (theta^T M theta + tr M ||theta||^2) + 2 (v_d - 2 v_o)
    sum_i M_ii theta_i^2`` (the Gram noise's ``E[theta^T E theta]`` to second order),
    ``v_b``, ``v_d``, ``v_o`` the variances of a moment, a diagonal and an
    off-diagonal noise entry. ``inf`` where ``A~ + alpha I`` is not positive
    definite."""
    values, vectors = np.linalg.eigh(gram)
    shifted = values + alpha
    if shifted.min() <= 0:
        return np.inf
    rotated = vectors.T @ moment / shifted                    # theta, rotated
    theta = vectors @ rotated
    trace = np.sum(1.0 / shifted)
    diagonal = calibration.variance("gram")
    off = diagonal / 2.0 if calibration.law == "gaussian" else diagonal
    return float(rotated @ (values * rotated) - 2.0 * rotated @ (vectors.T @ moment)
                 + 2.0 * calibration.variance("moment") * trace
                 + 2.0 * off * (rotated @ (rotated / shifted) + trace * theta @ theta)
                 + 2.0 * (diagonal - 2.0 * off) * np.sum((vectors**2 @ (1.0 / shifted))
                                                         * theta**2))


def risk_estimate_ridge(gram, moment, calibration, alpha):
    """The ridge of ``alpha + ALPHAS`` (finite) that minimises :func:`risk_estimate`:
    SSP's ridge or a larger one."""
    candidates = alpha + ALPHAS[np.isfinite(ALPHAS)]
    risks = [risk_estimate(gram, moment, calibration, a) for a in candidates]
    return float(candidates[int(np.argmin(risks))])


def moment_only_bound(moment, test_design, y_test, moment_sd):
    """``min_c E ||T c b~ - y||^2 / m`` for ``b~ = b + N(0, s^2 I)``, in closed form:
    ``mean(y^2) - (b^T r)^2 / (b^T S b + s^2 tr S)`` with ``S = T^T T / m``, ``r = T^T y
    / m``."""
    m = len(y_test)
    second = test_design.T @ test_design / m
    cross = test_design.T @ y_test / m
    signal = moment @ cross
    return float(np.mean(y_test**2) - signal**2 / (moment @ second @ moment
                                                   + moment_sd**2 * np.trace(second)))


def family_floor(statistics, test_design, y_test, *, epsilon, delta, data_norm, y_bound,
                 seeds, adassp_mse):
    """The oracles of the module docstring for one cell, with their ratios to AdaSSP's
    mean test MSE."""
    shipped = shipped_releases(statistics, epsilon, delta, data_norm, y_bound, seeds)
    splits = {str(g): ridge_oracle(split_releases(statistics, epsilon, delta, data_norm,
                                                  y_bound, g, seeds), test_design, y_test)
              for g in GRAM_SHARES}
    best_split = min(splits, key=lambda g: splits[g]["mse"])
    sensitivities = ssp_sensitivities(law="gaussian", data_norm=data_norm,
                                      intercept_scaling=1.0,
                                      n_features=statistics.moment.size - 1, y_bound=y_bound,
                                      weight_bound=1.0, neighboring="add_remove")
    bound = moment_only_bound(statistics.moment, test_design, y_test,
                              sensitivities.moment / gdp_mu(epsilon, delta))
    own_rule = np.mean([ridge_path_mse(gram, moment, test_design, y_test, [alpha])[0]
                        for gram, moment, alpha, _ in shipped])
    risk_rule = np.mean([ridge_path_mse(gram, moment, test_design, y_test, [
        risk_estimate_ridge(gram, moment, calibration, alpha)])[0]
        for gram, moment, alpha, calibration in shipped])
    floor = {"shipped_split": {**ridge_oracle(shipped, test_design, y_test),
                               "rule_mse": float(own_rule),
                               "risk_estimate_rule_mse": float(risk_rule)},
             "splits": splits, "best_split": float(best_split),
             "moment_only_bound_mse": bound, "predict_zero_mse": float(np.mean(y_test**2))}
    floor["ratios"] = {
        "shipped_split": floor["shipped_split"]["mse"] / adassp_mse,
        "best_split": splits[best_split]["mse"] / adassp_mse,
        "per_draw": floor["shipped_split"]["per_draw_mse"] / adassp_mse,
        "risk_estimate_rule": float(risk_rule) / adassp_mse,
        "moment_only_bound": bound / adassp_mse,
        "predict_zero": floor["predict_zero_mse"] / adassp_mse}
    return floor

