"""Intervals for objective perturbation: a noisy information matrix, the one-step
correction of the ridge's bias, and the covariance and parametric bootstrap that
include the noise's known law.

The fit releases ``theta_p``, the minimiser of ``C sum_i l_i(theta) + (r / 2)
||theta||^2 + <b, theta>`` (``r = 1 + Delta``), then the information matrix at it,
``H~ = sum_i l''_i(theta_p) z_i z_i^T + E``, with Gaussian or Laplace noise ``E`` on the
coordinates of :func:`~skdp.mechanisms._sufficient_statistics.gram_coordinates`
(one record's term ``l'' z z^T`` is the Gram matrix's with weight ``sup l''``).
Linearising the stationarity ``C g(theta_p) + r theta_p + b = 0`` at the population
minimiser ``theta*`` of the unpenalised loss (``g`` the loss gradient sum, ``H`` its
Hessian): ``C H (theta_p - theta*) + r theta_p = -(C g(theta*) + b)``, so

    ``theta_d = theta_p + (r / C) H~^{-1} theta_p``

has ``theta_d - theta* = -H^{-1} g(theta*) - H^{-1} b / C`` to first order, with
covariance ``H^{-1} (J + Cov(b) / C^2) H^{-1}``, ``J = Cov(g) = H`` for the logistic
loss (the model-based covariance of statsmodels' ``Logit``). Derivation:
``docs/privacy/inference.rst``.
"""

import numpy as np

from ..accounting import gdp_mu
from ..exceptions import InferenceError
from ._noise import draw_noise, sample_noise_draws
from ._sufficient_statistics import (BOOTSTRAP_DRAWS, BOOTSTRAP_SEED, INFERENCE_REFUSAL,
                                     LinearInference, SSPCalibration, gram_coordinates,
                                     gram_from_coordinates, gram_noise_covariance,
                                     ssp_sensitivities, symmetric_noise_draws)

INFORMATION_SHARE = 0.1
"""The share of the budget (of ``epsilon`` and of ``delta``, composed by addition) of
the information matrix with ``inference=True``; the objective perturbation gets the
rest."""


def information_calibration(epsilon, delta, *, smoothness, data_norm, intercept_scaling,
                            n_features, neighboring):
    """The noise of the information matrix's release at ``(epsilon, delta)``.

    One record adds ``l'' z z^T`` with ``0 <= l'' <= smoothness``: the Gram matrix's
    term with weight bound ``smoothness``
    (:func:`~skdp.mechanisms._sufficient_statistics.ssp_sensitivities`). Gaussian
    (``delta > 0``): standard deviation ``Delta / gdp_mu(epsilon, delta)``, exactly
    ``(epsilon, delta)``-DP; Laplace: scale ``Delta_1 / epsilon``.

    Returns
    -------
    calibration : SSPCalibration
        Its ``gram`` holds the scale (the other statistics are not released).

    Examples
    --------
    >>> from skdp.mechanisms._glm_inference import information_calibration
    >>> information_calibration(0.5, 0.0, smoothness=0.25, data_norm=1.0,
    ...                         intercept_scaling=1.0, n_features=1,
    ...                         neighboring="add_remove").gram
    1.5
    """
    if np.isinf(epsilon):
        return SSPCalibration("none", 0.0, 0.0, 0.0)
    law = "gaussian" if delta > 0 else "laplace"
    sensitivity = ssp_sensitivities(law=law, data_norm=data_norm,
                                    intercept_scaling=intercept_scaling,
                                    n_features=n_features, y_bound=0.0,
                                    weight_bound=smoothness, neighboring=neighboring).gram
    scale = sensitivity / (gdp_mu(epsilon, delta) if delta > 0 else epsilon)
    return SSPCalibration(law, float(scale), 0.0, 0.0)


def release_information(information, calibration, rng):
    """``information`` plus the calibrated symmetric noise (from the noise stream)."""
    dim = information.shape[0]
    draw = draw_noise(calibration.law, dim * (dim + 1) // 2, rng)
    if draw is None:
        return information
    law = calibration.law
    return gram_from_coordinates(gram_coordinates(information, law)
                                 + draw.vector(calibration.gram), dim, law)


def objective_noise_variance(law, scale, dim):
    """The variance of one coordinate of the objective's linear noise ``b``: Gaussian
    ``sigma^2``; Gamma-norm (norm ``Gamma(dim, scale)``, uniform direction)
    ``E||b||^2 / dim = (dim + 1) scale^2``."""
    if law == "gaussian":
        return scale**2
    if law == "gamma_norm":
        return (dim + 1) * scale**2
    return 0.0


def glm_inference(theta, information, *, C, ridge, noise_law, noise_scale, calibration):
    """The one-step estimate of the unpenalised minimiser, its covariance and its
    bootstrap deviations (see the module's docstring).

    Parameters
    ----------
    theta : ndarray of shape (dim,)
        The released ``theta_p``.
    information : ndarray of shape (dim, dim)
        The released ``H~``.
    C, ridge : float
        The objective's ``C`` and total ridge ``r = 1 + Delta``.
    noise_law : {"gamma_norm", "gaussian", "none"}
    noise_scale : float
        The law and scale of the objective's linear noise ``b``.
    calibration : SSPCalibration
        The information matrix's noise (:func:`information_calibration`).

    Returns
    -------
    inference : LinearInference
        Normal quantiles (``df = inf``) without noise.

    Raises
    ------
    InferenceError
        When ``H~`` is not positive definite.
    """
    if np.linalg.eigvalsh(information)[0] <= 0:
        raise InferenceError(INFERENCE_REFUSAL.format(
            reason="the noisy information matrix is not positive definite"))
    inverse = np.linalg.inv(information)
    direction = inverse @ theta
    estimate = theta + ridge / C * direction
    noise_variance = objective_noise_variance(noise_law, noise_scale, theta.size)
    middle = (information + noise_variance / C**2 * np.eye(theta.size)
              + (ridge / C) ** 2 * gram_noise_covariance(direction, calibration))
    covariance = inverse @ middle @ inverse
    deviations = None
    if noise_law != "none":
        deviations = _bootstrap(estimate, information, C=C, ridge=ridge, noise_law=noise_law,
                                noise_scale=noise_scale, calibration=calibration)
    return LinearInference(estimate, 0.5 * (covariance + covariance.T), np.inf, deviations)


def _bootstrap(theta, information, *, C, ridge, noise_law, noise_scale, calibration):
    """Draws of ``theta_d - theta*`` in the world fitted to the release: ``theta* =
    theta``, ``H = H~``; the linearised mechanism ``theta_p = theta - (C H + r
    I)^{-1} (C g + b + r theta)`` with ``g ~ N(0, H)`` and ``b`` from its exact law,
    then the correction with a fresh ``H + E`` (``E`` from its exact law)."""
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    dim = theta.size
    gradients = rng.standard_normal((BOOTSTRAP_DRAWS, dim)) @ np.linalg.cholesky(information).T
    noise = sample_noise_draws(noise_law, BOOTSTRAP_DRAWS, dim, noise_scale, rng)
    system = C * information + ridge * np.eye(dim)
    released = theta - np.linalg.solve(system, (C * gradients + noise + ridge * theta).T).T
    informations = information + symmetric_noise_draws(calibration, dim, rng)
    corrected = released + ridge / C * np.linalg.solve(informations, released[..., None])[..., 0]
    return corrected - theta
