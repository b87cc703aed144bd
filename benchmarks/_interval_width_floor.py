"""The narrowest intervals least squares' release allows, to first order (issue 46).

:class:`~skdp.SSPLinearRegression` with ``inference=True`` releases ``A~ = A + E`` and
``b~ = b + e`` and estimates ``theta~ = A~^{-1} b~``, whose error is, to first order,
``A^{-1} (Z^T r + e - E theta*)``: the sampling term, the moment's noise and the Gram
matrix's noise carried by the coefficients. On the coverage benchmark's population
(``bench_inference``: features uniform on ``[-1, 1] / sqrt(d)``, an intercept column
``c = 1``, Gaussian errors of standard deviation ``ERROR_SD``) ``A = n E[z z^T]`` is
diagonal, ``A_jj = n / (3 d)`` for a feature and ``n c^2`` for the intercept, so the
variance of coordinate ``j`` over the non-private (Wald) one is

    ``1 + (v_b + v_d theta_j^2 + v_o sum_{k != j} theta_k^2) / (s^2 A_jj)``,

``v_b`` the variance of a coordinate of ``e``, ``v_d`` and ``v_o`` those of ``E``'s
diagonal and off-diagonal entries (Gaussian noise of standard deviation ``sigma``:
``sigma^2`` and ``sigma^2 / 2``; Laplace of scale ``b``: ``2 b^2`` both), all from the
estimator's own calibration at ``(epsilon, delta)``. Its square root is the width ratio
an interval matching the release's first-order law has: below it, an interval must
under-cover for large ``n``; the measured widths are compared with it in the report.
"""

import numpy as np

from skdp.mechanisms._sufficient_statistics import ssp_calibration, ssp_sensitivities

from .bench_inference import ERROR_SD, population

INTERCEPT_SCALING = 1.0   # SSPLinearRegression's default, as the benchmark fits it


def gram_noise_variances(calibration):
    """``(v_d, v_o)``: the variances of the noisy Gram matrix's diagonal and
    off-diagonal entries."""
    if calibration.law == "gaussian":
        return calibration.gram**2, calibration.gram**2 / 2.0
    return 2.0 * calibration.gram**2, 2.0 * calibration.gram**2


def ssp_first_order_width_ratios(n, d, epsilon, delta):
    """The first-order width of the intervals over the Wald interval's, per
    coordinate (the intercept first, as ``conf_int``), for the benchmark's ``linear``
    cell ``(n, d, epsilon, delta)``."""
    sensitivities = ssp_sensitivities(
        law="gaussian" if delta > 0 else "laplace", data_norm=1.0,
        intercept_scaling=INTERCEPT_SCALING, n_features=d, y_bound=4.0, weight_bound=1.0,
        neighboring="add_remove")
    calibration = ssp_calibration(epsilon, delta, sensitivities, private_ridge=False,
                                  inference=True)
    intercept, coef = population(d)[0], population(d)[1:]
    theta = np.r_[intercept / INTERCEPT_SCALING, coef]   # the design's coordinates
    gram = n * np.r_[INTERCEPT_SCALING**2, np.full(d, 1.0 / (3.0 * d))]
    v_diagonal, v_off = gram_noise_variances(calibration)
    moment_variance = calibration.variance("moment")
    noise = (moment_variance + v_diagonal * theta**2
             + v_off * (theta @ theta - theta**2))
    return np.sqrt(1.0 + noise / (ERROR_SD**2 * gram))
