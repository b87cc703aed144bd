"""Intervals for objective and output perturbation: a noisy information matrix, the
one-step correction of the ridge's bias, and the parametric bootstrap that includes
the noise's known law.

The fit releases ``theta_p = theta_r + w``, ``theta_r`` the minimiser of ``C sum_i
l_i(theta) + (r / 2) ||theta||^2 + <b, theta>`` (objective perturbation: ``r = 1 +
Delta``, ``w`` its solver cover; output perturbation: ``r = 1``, ``b = 0``, ``w`` its
output noise), then the information matrix at it, ``H~ = sum_i l''_i(theta_p) z_i
z_i^T + E``, with Gaussian or Laplace noise ``E`` on the coordinates of
:func:`~skdp.mechanisms._sufficient_statistics.gram_coordinates` (one record's term
``l'' z z^T`` is the Gram matrix's with weight ``sup l''``). Linearising the
stationarity ``C g(theta_r) + r theta_r + b = 0`` at the population minimiser
``theta*`` of the unpenalised loss (``g`` the loss gradient sum, ``H`` its Hessian):
``C H (theta_r - theta*) + r theta_r = -(C g(theta*) + b)``, so

    ``theta_d = theta_p + (r / C) H~^{-1} theta_p``

has ``theta_d - theta* = -H^{-1} g(theta*) - H^{-1} b / C + (I + (r / C) H^{-1}) w``
to first order, whose sampling covariance is ``H^{-1} J H^{-1}`` with ``J = Cov(g) =
H`` for the logistic loss (the model-based covariance of statsmodels' ``Logit``); the
noise (``b``, ``w`` and ``E``) is simulated by the parametric bootstrap. For the Huber
hinge ``J != H``: the fit also releases ``J~ = sum_i l'_i^2 z_i z_i^T + E_J`` (weight
bound ``sup l'^2 = 1``) and the covariance is the sandwich with ``J~`` in the middle.
Derivation: ``docs/privacy/inference.rst``.
"""

import numpy as np

from ..accounting import gdp_mu
from ..exceptions import InferenceError
from ._noise import draw_noise, sample_noise_draws
from ._sufficient_statistics import (BOOTSTRAP_DRAWS, BOOTSTRAP_SEED, INFERENCE_REFUSAL,
                                     LinearInference, SSPCalibration, accepted_bootstrap,
                                     gram_coordinates, gram_from_coordinates,
                                     singular_within_noise, ssp_sensitivities,
                                     symmetric_noise_draws, world_matrix)

INFORMATION_SHARE = 0.1
"""The share of the budget (of ``epsilon`` and of ``delta``, composed by addition) of
the information matrix with ``inference=True``; the objective perturbation gets the
rest."""


def information_calibration(epsilon, delta, *, smoothness, data_norm, intercept_scaling,
                            n_features, neighboring, parts=1):
    """The noise of the information matrix's release at ``(epsilon, delta)``.

    One record adds ``l'' z z^T`` with ``0 <= l'' <= smoothness``: the Gram matrix's
    term with weight bound ``smoothness``
    (:func:`~skdp.mechanisms._sufficient_statistics.ssp_sensitivities`). Gaussian
    (``delta > 0``): standard deviation ``Delta / gdp_mu(epsilon, delta)``, exactly
    ``(epsilon, delta)``-DP; Laplace: scale ``Delta_1 / epsilon``. With ``parts``
    releases of this form sharing ``(epsilon, delta)`` (the Huber loss's ``H~`` and
    ``J~``, whose ``smoothness`` is then ``sup l'^2``), each is ``mu / sqrt(parts)``-GDP
    (the ``parts`` compose to ``mu``-GDP exactly) or ``epsilon / parts``-DP (Laplace,
    by addition).

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
    scale = sensitivity * (np.sqrt(parts) / gdp_mu(epsilon, delta) if delta > 0
                           else parts / epsilon)
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


NO_NOISE = ("none", 0.0)


def glm_inference(theta, information, *, C, ridge, calibration, objective_noise=NO_NOISE,
                  output_noise=NO_NOISE, gradient_covariance=None, curvature_bound=0.0):
    """The one-step estimate of the unpenalised minimiser, its sampling covariance
    ``H~^{-1} J H~^{-1}`` and its bootstrap deviations.

    The release is ``theta_p = theta_r + w`` with ``theta_r`` the exact minimiser of
    ``C sum_i l_i + (r / 2) ||theta||^2 + <b, theta>`` and ``w`` output noise (the
    objective perturbation has ``b`` and its solver cover as ``w``; output
    perturbation has ``b = 0``). With ``theta_d = theta_p + (r / C) H~^{-1} theta_p``,
    to first order ``theta_d - theta* = -H^{-1} g(theta*) - H^{-1} b / C + (I + (r /
    C) H^{-1}) w``, plus the noise ``E`` of ``H~`` through the correction, ``-(r / C)
    H^{-1} E H^{-1} theta_p`` (see the module's docstring).

    Parameters
    ----------
    theta : ndarray of shape (dim,)
        The released ``theta_p``.
    information : ndarray of shape (dim, dim)
        The released ``H~``.
    C, ridge : float
        The objective's ``C`` and total ridge ``r``.
    calibration : SSPCalibration
        The information matrix's noise (:func:`information_calibration`).
    objective_noise, output_noise : (law, scale), default=("none", 0.0)
        The laws (``"gamma_norm"``, ``"gaussian"``, ``"laplace"`` or ``"none"``) and
        scales of ``b`` and ``w``.
    gradient_covariance : ndarray of shape (dim, dim) or None, default=None
        The released ``J~`` of a loss whose gradient covariance is not its Hessian
        (the Huber hinge): the covariance becomes the sandwich ``H~^{-1} J~ H~^{-1}``
        and the bootstrap draws gradients from ``N(0, J~)``. ``None``: ``J = H``.
    curvature_bound : float, default=0.0
        With ``gradient_covariance``: the largest trace one row adds to ``H``
        (``sup l'' R^2``), which bounds below the rows of positive curvature by
        ``trace(H~) / curvature_bound`` (:func:`flat_direction`; 0: not checked).

    Returns
    -------
    inference : LinearInference
        Normal quantiles (``df = inf``) without noise.

    Raises
    ------
    InferenceError
        When ``H~``'s smallest eigenvalue is within its noise (:func:`flat_direction`:
        a collinear design is refused with probability at least 0.977 under
        Gaussian noise); with ``gradient_covariance``, also when ``J~`` is not
        positive definite.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.mechanisms._glm_inference import glm_inference
    >>> from skdp.mechanisms._sufficient_statistics import SSPCalibration
    >>> fit = glm_inference(np.array([0.5]), np.array([[4.0]]), C=1.0, ridge=1.0,
    ...                     calibration=SSPCalibration("none", 0.0, 0.0, 0.0))
    >>> fit.theta.tolist(), fit.covariance.tolist()
    ([0.625], [[0.25]])
    """
    if flat_direction(information, calibration, curvature_bound):
        raise InferenceError(INFERENCE_REFUSAL.format(reason=FLAT_DIRECTION))
    if gradient_covariance is not None and np.linalg.eigvalsh(gradient_covariance)[0] <= 0:
        raise InferenceError(INFERENCE_REFUSAL.format(
            reason="the noisy covariance of the loss's gradient is not positive definite"))
    inverse = np.linalg.inv(information)
    estimate = theta + ridge / C * inverse @ theta
    middle = information if gradient_covariance is None else gradient_covariance
    covariance = inverse @ middle @ inverse
    deviations = None
    if calibration.law != "none":
        deviations = _bootstrap(estimate, information, gradient_covariance, C=C, ridge=ridge,
                                calibration=calibration, objective_noise=objective_noise,
                                output_noise=output_noise, curvature_bound=curvature_bound)
    return LinearInference(estimate, 0.5 * (covariance + covariance.T), np.inf, deviations)


FLAT_DIRECTION = ("the noisy information matrix is singular within its noise (the loss "
                  "is flat along a direction: a collinear design such as a full one-hot "
                  "encoding beside the intercept, separable classes, or too few rows in "
                  "the Huber loss's quadratic band), so the coefficients are not "
                  "identified")


MIN_CURVED_ROWS = 10
"""Rows of positive curvature per coefficient below which a sandwich is refused."""


def flat_direction(information, calibration, curvature_bound=0.0):
    """Whether ``H~`` may hide a direction of zero curvature: its smallest eigenvalue
    is within two standard deviations of the noise on a direction
    (:func:`~skdp.mechanisms._sufficient_statistics.singular_within_noise`), or, with
    ``curvature_bound``, it carries fewer than :data:`MIN_CURVED_ROWS` rows per
    coefficient: ``trace(H~) / curvature_bound`` bounds their number below, one row
    adding at most ``curvature_bound`` (a separable sample leaves a handful of rows at
    the edge of the Huber loss's band even without noise, and their sandwich would be
    an interval for a parameter that does not exist). A stack of matrices gives one
    answer per matrix.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.mechanisms._glm_inference import flat_direction
    >>> from skdp.mechanisms._sufficient_statistics import SSPCalibration
    >>> flat_direction(np.diag([4.0, 1.0]), SSPCalibration("gaussian", 0.1, 0.0, 0.0))
    False
    >>> flat_direction(np.diag([4.0, 0.15]), SSPCalibration("gaussian", 0.1, 0.0, 0.0))
    True
    >>> flat_direction(np.diag([4.0, 1.0]), SSPCalibration("none", 0.0, 0.0, 0.0),
    ...                curvature_bound=0.5)
    True
    """
    dim = information.shape[-1]
    few_rows = (np.trace(information, axis1=-2, axis2=-1)
                < MIN_CURVED_ROWS * dim * curvature_bound)
    flat = few_rows | singular_within_noise(information, calibration)
    return bool(flat) if np.ndim(flat) == 0 else flat


def _bootstrap(theta, information, gradient_covariance, *, C, ridge, calibration,
               objective_noise, output_noise, curvature_bound):
    """Draws of ``theta_d - theta*`` in the world fitted to the release: ``theta* =
    theta``, ``H = W`` (``H~`` deconvolved of its noise,
    :func:`~skdp.mechanisms._sufficient_statistics.world_matrix`); the linearised
    mechanism ``theta_p = theta - (C H + r I)^{-1} (C g + b + r theta) + w`` with ``g ~
    N(0, J~)`` (``J = W`` for the logistic loss: ``gradient_covariance`` ``None``),
    ``b`` and ``w`` from their exact laws, then the correction with a fresh ``H + E``
    (``E`` from its exact law), kept when ``H + E`` passes the refusal rule
    (:func:`flat_direction`;
    :func:`~skdp.mechanisms._sufficient_statistics.accepted_bootstrap`). The noise of
    ``J~`` only reaches the intervals' width (second order) and is not redrawn."""
    dim = theta.size
    (linear_law, linear_scale), (output_law, output_scale) = objective_noise, output_noise
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    world = world_matrix(information, calibration, rng)
    root = np.linalg.cholesky(world if gradient_covariance is None else gradient_covariance)
    system = C * world + ridge * np.eye(dim)

    def draw_batch(rng):
        gradients = rng.standard_normal((BOOTSTRAP_DRAWS, dim)) @ root.T
        linear = sample_noise_draws(linear_law, BOOTSTRAP_DRAWS, dim, linear_scale, rng)
        released = (theta - np.linalg.solve(system, (C * gradients + linear + ridge * theta).T).T
                    + sample_noise_draws(output_law, BOOTSTRAP_DRAWS, dim, output_scale, rng))
        informations = world + symmetric_noise_draws(calibration, dim, rng)
        corrected = (released
                     + ridge / C * np.linalg.solve(informations, released[..., None])[..., 0])
        accepted = ~flat_direction(informations, calibration, curvature_bound)
        return accepted, corrected - theta

    return accepted_bootstrap(draw_batch, rng)
