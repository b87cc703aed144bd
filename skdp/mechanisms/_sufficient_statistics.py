"""Sufficient-statistics perturbation (SSP) of linear regression: sensitivities,
calibration and the private ridge.

Three statistics of the clipped, intercept-augmented design ``Z`` (rows ``z_i``,
``||z_i|| <= B = sqrt(R^2 + c^2)``) and clipped targets ``|y_i| <= Y``, with row
weights ``0 <= w_i <= W`` (``W`` also bounds a person's total weight):

* the Gram matrix ``A = sum w_i z_i z_i^T``, released through its upper triangle;
* the moment vector ``b = sum w_i y_i z_i``;
* with a private ridge, the smallest eigenvalue ``lambda_min(A)``.

Derivation: ``docs/privacy/sufficient_statistics.rst``. Gaussian noise (``delta >
0``): the three releases are one Gaussian mechanism of ``mu = gdp_mu(epsilon, delta)``
whose ``mu^2`` is split between them (Gaussian DP composes in squares, Dong, Roth &
Su 2022). Laplace noise (``delta = 0``): ``epsilon`` is split (pure DP composes by
addition, which is tight).
"""

from dataclasses import dataclass

import numpy as np

from ..accounting import gdp_mu
from ._dominance import noise_floor
from ._noise import draw_noise

RIDGE_FAILURE = 0.05
"""The probability ``rho`` with which each high-probability bound of the private ridge
(the lower bound on ``lambda_min(A)``, the upper bound on the noise's spectral norm) may
fail, as in AdaSSP (Wang 2018). It affects accuracy only, never privacy."""

STATISTICS = ("gram", "moment", "eigenvalue")


@dataclass(frozen=True)
class SSPSensitivities:
    """The sensitivities of the three statistics in the norm of the noise's law.

    Attributes
    ----------
    law : {"gaussian", "laplace"}
        L2 sensitivities for Gaussian noise, L1 for Laplace.
    gram : float
        Of the Gram matrix's release coordinates (:func:`gram_coordinates`).
    moment : float
        Of ``b``.
    eigenvalue : float
        Of ``lambda_min(A)``.
    """

    law: str
    gram: float
    moment: float
    eigenvalue: float


def ssp_sensitivities(*, law, data_norm, intercept_scaling, n_features, y_bound,
                      weight_bound, neighboring):
    """The sensitivities of the Gram matrix, the moment and ``lambda_min``.

    Parameters
    ----------
    law : {"gaussian", "laplace"}
    data_norm : float
        ``R``, the bound of a feature row's L2 norm.
    intercept_scaling : float
        ``c``, the public intercept column (0 without one).
    n_features : int
        ``d``, the number of features (without the intercept column).
    y_bound : float
        ``Y``, the bound of ``|y|``.
    weight_bound : float
        ``W``, the bound of a record's (a person's) total weight.
    neighboring : {"add_remove", "replace"}

    Returns
    -------
    sensitivities : SSPSensitivities

    Examples
    --------
    >>> from skdp.mechanisms._sufficient_statistics import ssp_sensitivities
    >>> s = ssp_sensitivities(law="gaussian", data_norm=1.0, intercept_scaling=1.0,
    ...                       n_features=3, y_bound=2.0, weight_bound=1.0,
    ...                       neighboring="add_remove")
    >>> float(s.gram), float(s.moment), float(s.eigenvalue)
    (2.0, 2.8284271247461903, 2.0)
    """
    R, c, W, Y = float(data_norm), float(intercept_scaling), float(weight_bound), float(y_bound)
    squared_norm = R**2 + c**2                    # B^2
    eigenvalue = W * squared_norm                 # Weyl, under both relations
    replace = neighboring == "replace"
    if law == "gaussian":
        # ||sum w z z^T||_F <= W B^2; two PSD terms of non-negative inner product: sqrt(2)
        gram = W * squared_norm * (np.sqrt(2.0) if replace else 1.0)
        moment = W * np.sqrt(squared_norm) * Y * (2.0 if replace else 1.0)
        return SSPSensitivities(law, float(gram), float(moment), float(eigenvalue))
    # L1: sum_{i<=j} |z_i z_j| = ((sum |z_i|)^2 + ||z||^2) / 2, ||x||_1 <= sqrt(d) R
    l1 = np.sqrt(n_features) * R + c
    factor = 2.0 if replace else 1.0
    gram = factor * W * (l1**2 + squared_norm) / 2.0
    moment = factor * W * Y * l1
    return SSPSensitivities(law, float(gram), float(moment), float(eigenvalue))


EIGENVALUE_SHARE = 0.1
"""The eigenvalue's share of the budget with a private ridge (of ``mu^2`` for Gaussian
noise, of ``epsilon`` for Laplace); the Gram matrix and the moment share the rest
equally. One number that only sets the ridge needs less than AdaSSP's third: measured
on diabetes, Adult (age) and a synthetic task at epsilon 0.3 to 3 (ten draws each), a
tenth gave a test MSE 1 to 3 % below the thirds' with Gaussian noise and 2 to 30 %
below with Laplace noise (``benchmarks/bench_ssp.py``)."""


def release_shares(private_ridge):
    """Each statistic's share of the budget (of ``mu^2`` for Gaussian noise, of
    ``epsilon`` for Laplace): :data:`EIGENVALUE_SHARE` to the eigenvalue with a private
    ridge, the rest split equally; a fixed ridge needs no eigenvalue and splits between
    the Gram matrix and the moment."""
    eigenvalue = EIGENVALUE_SHARE if private_ridge else 0.0
    rest = (1.0 - eigenvalue) / 2.0
    return {"gram": rest, "moment": rest, "eigenvalue": eigenvalue}


@dataclass(frozen=True)
class SSPCalibration:
    """The noise of each statistic.

    Attributes
    ----------
    law : {"gaussian", "laplace", "none"}
    gram, moment, eigenvalue : float
        Gaussian standard deviation or Laplace scale of each release coordinate (0
        for a statistic that is not released, and for ``law="none"``).
    """

    law: str
    gram: float
    moment: float
    eigenvalue: float

    def scale(self, name):
        """The noise scale of the statistic ``name``."""
        return getattr(self, name)


def ssp_calibration(epsilon, delta, sensitivities, private_ridge):
    """Calibrate the three releases to ``(epsilon, delta)`` together.

    Gaussian (``delta > 0``): the releases are one ``mu``-GDP mechanism with ``mu =
    gdp_mu(epsilon, delta)`` (exactly ``(epsilon, delta)``-DP), statistic ``k``
    getting ``mu_k = mu sqrt(share_k)`` and so standard deviation ``Delta_k / mu_k``.
    Laplace (``delta = 0``): statistic ``k`` gets ``epsilon share_k``, scale ``Delta_k
    / (epsilon share_k)``. ``epsilon = inf``: no noise.

    Parameters
    ----------
    epsilon, delta : float
    sensitivities : SSPSensitivities
    private_ridge : bool
        Whether ``lambda_min`` is released (:func:`release_shares`).

    Returns
    -------
    calibration : SSPCalibration

    Examples
    --------
    >>> from skdp.mechanisms._sufficient_statistics import (SSPSensitivities,
    ...                                                     ssp_calibration)
    >>> s = SSPSensitivities("laplace", gram=3.0, moment=2.0, eigenvalue=1.0)
    >>> ssp_calibration(2.0, 0.0, s, private_ridge=False)
    SSPCalibration(law='laplace', gram=3.0, moment=2.0, eigenvalue=0.0)
    """
    if np.isinf(epsilon):
        return SSPCalibration("none", 0.0, 0.0, 0.0)
    shares = release_shares(private_ridge)
    if delta > 0:
        if sensitivities.law != "gaussian":
            raise ValueError("delta > 0 needs the L2 (Gaussian) sensitivities.")
        mu = gdp_mu(epsilon, delta)
        return SSPCalibration("gaussian", **{
            k: float(getattr(sensitivities, k) / (mu * np.sqrt(share))) if share else 0.0
            for k, share in shares.items()})
    if sensitivities.law != "laplace":
        raise ValueError("delta = 0 needs the L1 (Laplace) sensitivities.")
    return SSPCalibration("laplace", **{
        k: float(getattr(sensitivities, k) / (epsilon * share)) if share else 0.0
        for k, share in shares.items()})


def gram_coordinates(gram, law):
    """The release coordinates of a symmetric matrix: its upper triangle, row by row,
    with the off-diagonal entries times ``sqrt(2)`` for Gaussian noise (an isometry
    from the Frobenius norm, so that the L2 sensitivity is ``||w z z^T||_F``) and as
    they are for Laplace noise (the L1 sensitivity of the upper triangle)."""
    rows, cols = np.triu_indices(gram.shape[0])
    weights = np.where(rows == cols, 1.0, np.sqrt(2.0) if law == "gaussian" else 1.0)
    return gram[rows, cols] * weights


def gram_from_coordinates(coordinates, dim, law):
    """The symmetric matrix of :func:`gram_coordinates`' coordinates."""
    rows, cols = np.triu_indices(dim)
    weights = np.where(rows == cols, 1.0, np.sqrt(0.5) if law == "gaussian" else 1.0)
    matrix = np.zeros((dim, dim))
    matrix[rows, cols] = coordinates * weights
    matrix[cols, rows] = matrix[rows, cols]
    return matrix


@dataclass
class SSPStatistics:
    """The exact statistics of one dataset (transient: never stored on a fitted
    estimator, they are not private).

    Attributes
    ----------
    gram : ndarray of shape (dim, dim)
    moment : ndarray of shape (dim,)
    eigenvalue : float
        ``lambda_min(gram)``.
    """

    gram: np.ndarray
    moment: np.ndarray
    eigenvalue: float

    @classmethod
    def of(cls, design, y, weights=None):
        """The statistics of the clipped design and clipped ``y``: ``design`` has
        ``weighted_gram(w)`` and ``transpose_product(v)``
        (:class:`~skdp.solvers._design.ScaledDesign`)."""
        if weights is None:
            return cls.from_sums(design.gram(), design.transpose_product(y))
        return cls.from_sums(design.weighted_gram(weights),
                             design.transpose_product(weights * y))

    @classmethod
    def from_sums(cls, gram, moment):
        """The statistics from ``A`` and ``b`` (summed over partitions, say)."""
        gram = np.asarray(gram, dtype=float)
        gram = 0.5 * (gram + gram.T)
        return cls(gram, np.asarray(moment, dtype=float).ravel(),
                   float(np.linalg.eigvalsh(gram)[0]))

    def coordinates(self, law):
        """Each statistic as the vector its noise is added to."""
        return {"gram": gram_coordinates(self.gram, law), "moment": self.moment,
                "eigenvalue": np.array([self.eigenvalue])}


def draw_ssp_noise(calibration, dim, rng, private_ridge):
    """The noise vectors of the releases at the calibrated scales (none drawn for
    ``law="none"``; no eigenvalue noise without a private ridge)."""
    sizes = {"gram": dim * (dim + 1) // 2, "moment": dim, "eigenvalue": 1}
    if not private_ridge:
        del sizes["eigenvalue"]
    noise = {}
    for name, size in sizes.items():
        draw = draw_noise(calibration.law, size, rng)
        noise[name] = np.zeros(size) if draw is None else draw.vector(calibration.scale(name))
    return noise


def eigenvalue_margin(calibration):
    """How far below ``lambda_min`` the private lower bound is set: the noise's upper
    ``rho`` quantile bound (Gaussian ``sigma sqrt(2 log(1 / rho))``, Laplace ``b
    log(1 / (2 rho))``), so that the bound holds with probability ``1 - rho``."""
    if calibration.law == "gaussian":
        return calibration.eigenvalue * np.sqrt(2.0 * np.log(1.0 / RIDGE_FAILURE))
    if calibration.law == "laplace":
        return calibration.eigenvalue * np.log(1.0 / (2.0 * RIDGE_FAILURE))
    return 0.0


def spectral_noise_bound(calibration, dim):
    """A bound on the Gram noise's spectral norm that holds with probability ``1 - rho``.

    Gaussian: the noise is ``sigma (G + G^T) / 2`` with ``G`` standard normal, whose
    largest eigenvalue has mean at most ``sigma sqrt(2 dim)`` (Sudakov-Fernique against
    ``sqrt(2) sigma <g, u>``) and is ``sigma``-Lipschitz in ``G``:
    ``sigma (sqrt(2 dim) + sqrt(2 log(1 / rho)))``. Laplace: the same expression in
    the off-diagonal standard deviation ``s = sqrt(2) b`` (``2 s (sqrt(dim) +
    sqrt(log(1 / rho)))``, the semicircle edge of a Wigner matrix plus its Gaussian
    tail); a rule of the same size, not a bound, which only accuracy depends on.
    """
    if calibration.law == "gaussian":
        off_diagonal = calibration.gram / np.sqrt(2.0)
    elif calibration.law == "laplace":
        off_diagonal = calibration.gram * np.sqrt(2.0)
    else:
        return 0.0
    return 2.0 * off_diagonal * (np.sqrt(dim) + np.sqrt(np.log(1.0 / RIDGE_FAILURE)))


def private_ridge(noisy_eigenvalue, calibration, dim):
    """AdaSSP's ridge from the noisy ``lambda_min`` (post-processing).

    ``lambda_tilde = max(0, noisy - margin)`` is below ``lambda_min(A)`` with
    probability ``1 - rho``; the ridge ``max(0, S - lambda_tilde)`` with ``S`` the
    noise's spectral bound (:func:`spectral_noise_bound`) then makes ``lambda_min(A)
    + ridge >= S``, so the noisy system ``A + E + ridge I`` is positive definite with
    probability ``1 - 2 rho``, and no ridge is added when the data alone are that
    well conditioned.
    """
    lower = max(0.0, float(noisy_eigenvalue) - eigenvalue_margin(calibration))
    return max(0.0, spectral_noise_bound(calibration, dim) - lower)


def solve_ridge(gram, moment, alpha):
    """``theta = (gram + alpha I)^{-1} moment``; least squares (minimum norm) when
    the system is singular (``epsilon = inf`` with ``alpha = 0`` on collinear rows)."""
    system = gram + alpha * np.eye(gram.shape[0])
    return np.linalg.lstsq(system, moment, rcond=None)[0]


def ssp_noise_floor(calibration, dim, sensitivities):
    """The records whose largest contributions the noise on the Gram matrix or on the
    moment outweighs (:func:`~skdp.mechanisms._dominance.noise_floor`, the larger);
    ``sensitivities`` are add/remove's, one record's largest term."""
    if calibration.law == "none":
        return 0.0
    sizes = {"gram": dim * (dim + 1) // 2, "moment": dim}
    # one record's term in the noise's coordinates: its L2 norm (Gaussian), at most
    # its L1 norm (Laplace, whose noise_norm is an L2 lower bound)
    return max(noise_floor(calibration.law, size, calibration.scale(name),
                           getattr(sensitivities, name)) for name, size in sizes.items())
