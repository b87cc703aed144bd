"""Intervals for gradient perturbation (DP-SGD): a noisy gradient and information
matrix at the released iterate, the one-step estimate, its sampling covariance and a
parametric bootstrap with the noise's exact law.

DP-SGD's iterate ``theta_s`` has no closed-form law, so it is not bootstrapped.
After the steps the fit releases, at ``theta_s``, the logistic loss's gradient sum and
Hessian sum over the clipped, intercept-augmented rows ``z_i`` (``||z_i|| <= B``):

    ``g~ = sum_i l'(y_i z_i^T theta_s) y_i z_i + e``,
    ``H~ = sum_i l''(y_i z_i^T theta_s) z_i z_i^T + E``,

with Gaussian ``e`` (one record moves the sum by at most ``B``: ``|l'| <= 1``, no
clipping needed) and ``E`` symmetric Gaussian on the coordinates of
:func:`~skdp.mechanisms._sufficient_statistics.gram_coordinates` (one record's term
has Frobenius norm at most ``B^2 / 4``). The one-step estimate

    ``theta_d = theta_s - H~^{-1} g~``

has ``theta_d - theta* = -H^{-1} (g(theta*) + e) + H^{-1} E H^{-1} g~`` to first order
(``theta*`` the population minimiser of the unpenalised loss, ``H`` the Hessian sum;
the start's error ``theta_s - theta*`` enters at second order), whose sampling
covariance is ``H^{-1} J H^{-1} = H^{-1}`` (``J = Cov(g) = H`` for the logistic model);
the noise ``e`` and ``E`` is simulated by the parametric bootstrap. Derivation:
``docs/privacy/inference.rst``.
"""

from dataclasses import dataclass

import numpy as np

from ..exceptions import InferenceError
from ._glm_inference import FLAT_DIRECTION, release_information
from ._sufficient_statistics import (BOOTSTRAP_DRAWS, BOOTSTRAP_SEED, INFERENCE_REFUSAL,
                                     LinearInference, SSPCalibration, accepted_bootstrap,
                                     singular_within_noise, symmetric_noise_draws,
                                     world_matrix)

ONE_STEP_SHARE = 0.1
"""The share of the Gaussian-DP budget ``mu^2`` of the two releases of the one-step
estimate together (half each); DP-SGD's steps are calibrated to what is left."""

LOGISTIC_SMOOTHNESS = 0.25
"""``sup l''`` of the logistic loss: one record's information term is at most
``B^2 / 4`` in Frobenius norm."""


@dataclass(frozen=True)
class OneStepCalibration:
    """The noise of the gradient and of the information matrix.

    Attributes
    ----------
    gradient_std : float
        Standard deviation of each coordinate of ``e`` (0 without noise).
    information : SSPCalibration
        The information matrix's noise: its ``gram`` scale on the coordinates of
        :func:`~skdp.mechanisms._sufficient_statistics.gram_coordinates` (law
        ``"none"`` without noise).
    """

    gradient_std: float
    information: SSPCalibration

    @property
    def law(self):
        return self.information.law


def one_step_mu(mu):
    """The Gaussian-DP ``mu`` of the two releases together for a target ``mu``:
    ``mu sqrt(ONE_STEP_SHARE)``."""
    return mu * np.sqrt(ONE_STEP_SHARE)


def one_step_calibration(mu, row_norm):
    """The noise of the two releases within ``one_step_mu(mu)``-GDP.

    Each release gets half of ``one_step_mu(mu)^2``, so ``mu_each = mu sqrt(share /
    2)``; its standard deviation is its sensitivity over ``mu_each``: ``B`` for the
    gradient, ``B^2 / 4`` for the information matrix (add/remove one record, ``B``
    the public bound on an augmented row's norm).

    Parameters
    ----------
    mu : float
        The Gaussian-DP ``mu`` of the whole fit's target (``inf``: no noise).
    row_norm : float
        ``B``.

    Returns
    -------
    calibration : OneStepCalibration

    Examples
    --------
    >>> from skdp.mechanisms._one_step import one_step_calibration
    >>> calibration = one_step_calibration(2.0, row_norm=1.0)
    >>> round(calibration.gradient_std, 4), round(calibration.information.gram, 4)
    (2.2361, 0.559)
    """
    if np.isinf(mu):
        return OneStepCalibration(0.0, SSPCalibration("none", 0.0, 0.0, 0.0))
    mu_each = mu * np.sqrt(ONE_STEP_SHARE / 2.0)
    return OneStepCalibration(
        float(row_norm / mu_each),
        SSPCalibration("gaussian", float(LOGISTIC_SMOOTHNESS * row_norm**2 / mu_each),
                       0.0, 0.0))


def release_one_step(gradient, information, calibration, rng):
    """``(g~, H~)``: the gradient and information sums with their noise, drawn from
    the noise stream ``rng`` (the gradient's first)."""
    if calibration.law == "none":
        return gradient, information
    noisy_gradient = gradient + calibration.gradient_std * rng.standard_normal(gradient.size)
    return noisy_gradient, release_information(information, calibration.information, rng)


def one_step_inference(theta, gradient, information, calibration):
    """The one-step estimate from ``theta_s``, its sampling covariance ``H~^{-1}`` and
    bootstrap deviations.

    Parameters
    ----------
    theta : ndarray of shape (dim,)
        The released iterate ``theta_s`` (augmented coordinates).
    gradient : ndarray of shape (dim,)
        The released ``g~`` at ``theta_s``.
    information : ndarray of shape (dim, dim)
        The released ``H~`` at ``theta_s``.
    calibration : OneStepCalibration

    Returns
    -------
    inference : LinearInference
        Normal quantiles (``df = inf``) and no deviations without noise.

    Raises
    ------
    InferenceError
        When ``H~`` is singular within its noise
        (:func:`~skdp.mechanisms._sufficient_statistics.singular_within_noise`: too few
        rows for the noise, or a collinear design): decided from the release alone.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.mechanisms._one_step import one_step_calibration, one_step_inference
    >>> fit = one_step_inference(np.array([0.5]), np.array([1.0]), np.array([[4.0]]),
    ...                          one_step_calibration(np.inf, row_norm=1.0))
    >>> fit.theta.tolist(), fit.covariance.tolist()
    ([0.25], [[0.25]])
    """
    if singular_within_noise(information, calibration.information):
        raise InferenceError(INFERENCE_REFUSAL.format(reason=FLAT_DIRECTION))
    inverse = np.linalg.inv(information)
    estimate = theta - inverse @ gradient
    deviations = (None if calibration.law == "none"
                  else _bootstrap(theta, estimate, information, calibration))
    return LinearInference(estimate, 0.5 * (inverse + inverse.T), np.inf, deviations)


def _bootstrap(theta, estimate, information, calibration):
    """Draws of ``theta_d - theta*`` in the world fitted to the release: ``theta* =
    theta_d``, ``H = W`` (``H~`` deconvolved of its noise,
    :func:`~skdp.mechanisms._sufficient_statistics.world_matrix`), ``theta_s`` held
    at its released value. The gradient sum at ``theta_s`` is ``W (theta_s - theta_d)
    + g* + e*`` with ``g* ~ N(0, W)`` and ``e*`` from its exact law; ``theta_d* =
    theta_s - (W + E*)^{-1}`` of it, ``E*`` from its exact law, kept when ``W + E*``
    passes the refusal rule
    (:func:`~skdp.mechanisms._sufficient_statistics.accepted_bootstrap`)."""
    dim = theta.size
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    world = world_matrix(information, calibration.information, rng)
    root = np.linalg.cholesky(world)
    mean_gradient = world @ (theta - estimate)

    def draw_batch(rng):
        sampling = rng.standard_normal((BOOTSTRAP_DRAWS, dim)) @ root.T
        noise = calibration.gradient_std * rng.standard_normal((BOOTSTRAP_DRAWS, dim))
        gradients = mean_gradient + sampling + noise
        informations = world + symmetric_noise_draws(calibration.information, dim, rng)
        corrected = theta - np.linalg.solve(informations, gradients[..., None])[..., 0]
        accepted = ~singular_within_noise(informations, calibration.information)
        return accepted, corrected - estimate

    return accepted_bootstrap(draw_batch, rng)
