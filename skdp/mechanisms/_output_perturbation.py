"""Noise calibration of output perturbation (an exact minimiser plus noise).

Derivation: ``docs/privacy/output_perturbation.rst``.
"""

from dataclasses import dataclass

import numpy as np

from ..accounting import analytic_gaussian_sigma, analytic_gaussian_sigma_derivative


def minimiser_sensitivity(C, lipschitz, row_norm, neighboring):
    """L2 sensitivity of the exact minimiser of ``C sum l_i + 0.5 ||theta||^2``.

    The objective is 1-strongly convex and one record's loss is
    ``G = C * lipschitz * row_norm``-Lipschitz in ``theta``, so adding or
    removing a record moves the minimiser by at most ``G`` and replacing one by
    at most ``2 G``.

    Parameters
    ----------
    C : float
        Weight of the loss sum.
    lipschitz : float
        Lipschitz constant of the loss in the margin.
    row_norm : float
        Public bound on the norm of a row of the design.
    neighboring : {"add_remove", "replace"}

    Returns
    -------
    sensitivity : float
    """
    gradient_bound = C * lipschitz * row_norm
    return (2.0 if neighboring == "replace" else 1.0) * gradient_bound


def coordinate_noise_std(calibration, dim):
    """Standard deviation of one coordinate of the calibrated noise in ``dim`` coordinates.

    Gamma-norm noise has norm ``Gamma(dim, scale)`` in a uniform direction, so
    ``E ||b||^2 = dim (dim + 1) scale^2`` spreads evenly over the coordinates;
    a Laplace coordinate has variance ``2 scale^2``; a Gaussian one ``sigma^2``.
    """
    if calibration.noise == "gamma_norm":
        return calibration.noise_scale * np.sqrt(dim + 1.0)
    if calibration.noise == "laplace":
        return calibration.noise_scale * np.sqrt(2.0)
    return calibration.noise_scale


@dataclass(frozen=True)
class OutputPertCalibration:
    """The noise added to the released minimiser.

    Attributes
    ----------
    noise : {"gamma_norm", "gaussian", "laplace", "none"}
        Law of the noise vector.
    noise_scale : float
        Gamma-norm scale ``sensitivity / epsilon``, analytic Gaussian sigma, or
        Laplace scale ``sqrt(dim) * sensitivity / epsilon``.
    d_noise_scale : float
        ``d noise_scale / d epsilon``.
    """

    noise: str
    noise_scale: float
    d_noise_scale: float


def output_perturbation_calibration(epsilon, delta, sensitivity, law="auto", dim=None):
    """Calibrate the noise on a minimiser of the given sensitivity.

    Parameters
    ----------
    epsilon, delta : float
        The release's budget: ``delta = 0`` gives Gamma-norm noise (pure
        epsilon-DP), ``delta > 0`` the analytic Gaussian mechanism, ``epsilon =
        inf`` no noise.
    sensitivity : float
        L2 sensitivity of the released point.
    law : {"auto", "laplace"}, default="auto"
        ``"laplace"``: i.i.d. Laplace coordinates at scale ``sqrt(dim) *
        sensitivity / epsilon`` (pure epsilon-DP: the L1 sensitivity is at most
        ``sqrt(dim)`` times the L2 one, by Cauchy-Schwarz); needs ``delta = 0``.
    dim : int, default=None
        Dimension of the released point (``law="laplace"`` only).

    Returns
    -------
    calibration : OutputPertCalibration

    Examples
    --------
    >>> from skdp.mechanisms import output_perturbation_calibration
    >>> output_perturbation_calibration(2.0, 0.0, sensitivity=1.0)
    OutputPertCalibration(noise='gamma_norm', noise_scale=0.5, d_noise_scale=-0.25)
    >>> output_perturbation_calibration(2.0, 0.0, sensitivity=1.0, law="laplace", dim=4)
    OutputPertCalibration(noise='laplace', noise_scale=1.0, d_noise_scale=-0.5)
    """
    if np.isinf(epsilon):
        return OutputPertCalibration("none", 0.0, 0.0)
    if law == "laplace":
        if delta > 0:
            raise ValueError("Laplace output perturbation is pure epsilon-DP: use delta=0.")
        l1_sensitivity = np.sqrt(dim) * sensitivity
        return OutputPertCalibration("laplace", float(l1_sensitivity / epsilon),
                                     float(-l1_sensitivity / epsilon**2))
    if delta > 0:
        return OutputPertCalibration(
            "gaussian", float(analytic_gaussian_sigma(epsilon, delta, sensitivity)),
            float(analytic_gaussian_sigma_derivative(epsilon, delta, sensitivity)))
    return OutputPertCalibration("gamma_norm", sensitivity / epsilon,
                                 -sensitivity / epsilon**2)
