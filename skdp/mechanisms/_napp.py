"""Privacy constants and budget calibration of NAPP (``docs/privacy/napp.rst``).

The released estimate is the exact minimiser of::

    sum_i l(<x_i, theta>; y_i) + <b, theta> + alpha P(theta) + extra_ridge / 2 ||theta||^2

over ``||theta||_2 <= coef_bound``. With per-record gradient norm at most ``G``
and Hessian eigenvalue at most ``beta_H`` on that domain, it is
``eps_jacobian + eps_noise``-DP when the penalty part is ``Delta``-strongly
convex with ``Delta = beta_H / (exp(eps_jacobian) - 1)`` (rank-one determinant
lemma, spec 5.1-5.2) and ``b`` has density ``exp(-eps_noise ||b|| / zeta)``
(pure) or is Gaussian with the standard deviation of Corollary 5 (spec 5.3);
``zeta = G`` (add/remove) or ``2 G`` (replace).

With ``groups`` (persons as the unit of privacy) ``G`` and ``beta_H`` bound a whole
person's weighted gradient and Hessian trace, and the Jacobian is bounded for a
Hessian difference of rank up to the number of coefficients ``m``:
``eps_jacobian = m log(1 + beta_H / (m Delta))`` (``docs/privacy/napp.rst``, "Persons
(groups)"); ``m = 1`` is the row-level rank-one bound.
"""

from dataclasses import asdict, dataclass

import numpy as np
from scipy.stats import chi2

from ._approximate_minima import EpsilonDerivatives
from ._objective_perturbation import (
    gradient_sensitivity,
    kst_extra_ridge,
    kst_gaussian_std,
)


MAX_JACOBIAN_EPSILON = 5.0
"""The most the Jacobian term spends (nats), whatever its planned share: its curvature
is never below ``beta_H / expm1(5)``, about ``beta_H / 147``, a public minimum ridge that
keeps the certified distance bound, and so the cover's noise, small at large epsilon."""


def jacobian_curvature(epsilon_jacobian, hessian_bound, rank=1):
    """``Delta = beta_H / (m (exp(eps_J / m) - 1))``: the curvature that bounds the
    Jacobian term of a Hessian difference of trace at most ``beta_H`` and rank at most
    ``m = rank`` (``m = 1``: one row, ``beta_H / (exp(eps_J) - 1)``)."""
    return float(hessian_bound / (rank * np.expm1(epsilon_jacobian / rank)))


def jacobian_epsilon(curvature, hessian_bound, rank=1):
    """``eps_J = m log(1 + beta_H / (m Delta))``, the inverse of :func:`jacobian_curvature`."""
    return float(rank * np.log1p(hessian_bound / (rank * curvature)))


def gaussian_tail(delta, neighboring="add_remove", persons_dimension=None):
    """``t``, the bound on the noise's projection in units of ``sigma``, and ``dt / dlog delta``.

    One row: ``t = sqrt(2 log(2/delta))`` for add/remove (one projection ``<b, x>``),
    ``sqrt(2 log(4/delta))`` for replace (two projections, union bound; spec 5.4).
    A person (``persons_dimension = m``, the number of coefficients): the gradient
    difference lies in the span of the person's rows (of both persons under
    replace), of dimension at most ``m``, and the norm of the noise's projection on a
    fixed subspace of dimension ``r <= m`` is ``sigma`` times a chi variable with
    ``r`` degrees of freedom: ``t = sqrt(chi2.isf(delta, m))`` bounds it but with
    probability ``delta``.
    """
    if persons_dimension is None:
        k = 4.0 if neighboring == "replace" else 2.0
        t = np.sqrt(2.0 * np.log(k / delta))
        return float(t), float(-1.0 / t)
    m = max(1, int(persons_dimension))
    q = chi2.isf(delta, m)
    t = np.sqrt(q)
    # d q / d delta = -1 / pdf(q): dt / dlog delta = -delta / (2 t pdf(q))
    return float(t), float(-delta / (2.0 * t * chi2.pdf(q, m)))


def napp_gaussian_std(epsilon_noise, delta, sensitivity, neighboring="add_remove",
                      persons_dimension=None):
    """Corollary 5: ``sigma = zeta (t + sqrt(t**2 + 2 eps_b)) / (2 eps_b)``.

    ``t`` from :func:`gaussian_tail`: ``sqrt(2 log(2/delta))`` for add/remove (one
    projection ``<b, x>``); ``sqrt(2 log(4/delta))`` for replace (two projections,
    union bound; spec 5.4); for a person, the chi quantile of
    :func:`gaussian_tail`. This is the root of ``zeta t / sigma + zeta**2 / (2
    sigma**2) = eps_b``.
    """
    if np.isinf(epsilon_noise):
        return 0.0
    t, _ = gaussian_tail(delta, neighboring, persons_dimension)
    return float(sensitivity * (t + np.sqrt(t * t + 2.0 * epsilon_noise)) / (2.0 * epsilon_noise))


@dataclass(frozen=True)
class NAPPCalibration(EpsilonDerivatives):
    """The public constants of one NAPP release.

    Attributes
    ----------
    epsilon, delta : float
        Budget given to this release.
    epsilon_spent : float
        Epsilon of its guarantee (``epsilon`` unless the retrieved share is returned).
    eps_jacobian : float
        Epsilon paid by the Jacobian (curvature) term, after any retrieval.
    eps_noise : float
        Epsilon paid by the noise term.
    eps_retrieved : float
        Share of the planned Jacobian budget ``eps_jacobian_frac * epsilon`` that
        the penalty's own curvature made unnecessary (spec 7.2).
    curvature : float
        ``Delta`` required for the planned Jacobian budget.
    penalty_curvature : float
        ``mu_P``, the curvature the penalty guarantees on the domain.
    extra_ridge : float
        ``max(0, Delta - mu_P)``, the only curvature added to the objective.
    noise : {"gamma_norm", "gaussian", "none"}
    noise_scale : float
        Gamma-norm scale ``zeta / eps_noise`` or Gaussian standard deviation.
    sensitivity : float
        ``zeta``.
    gradient_bound, hessian_bound : float
        ``G`` and ``beta_H`` (of a whole person with ``groups``).
    neighboring : str
        The relation of the rows (``"add_remove"`` or ``"replace"``); with
        ``persons`` it holds for one person's rows.
    persons : bool
        Whether the unit of privacy is a person (``groups``).
    jacobian_rank : int
        ``m``, the rank the Jacobian bound allows for: 1 (one row), or the number
        of coefficients with ``persons``.

    And the derivatives of :class:`~skdp.mechanisms.EpsilonDerivatives`.
    """

    epsilon: float
    delta: float
    epsilon_spent: float
    eps_jacobian: float
    eps_noise: float
    eps_retrieved: float
    curvature: float
    penalty_curvature: float
    extra_ridge: float
    noise: str
    noise_scale: float
    sensitivity: float
    gradient_bound: float
    hessian_bound: float
    neighboring: str
    persons: bool = False
    jacobian_rank: int = 1

    def as_dict(self):
        """The calibration as a plain dict (for reports).

        Returns
        -------
        record : dict
        """
        return asdict(self)


def napp_calibration(epsilon, delta, *, gradient_bound, hessian_bound, penalty_curvature=0.0,
                     eps_jacobian_frac=0.5, neighboring="add_remove", retrieval="recycle",
                     persons=False, dimension=1):
    """Budget split, curvature and noise scale of the default NAPP mechanism (spec 7.1-7.2).

    The planned Jacobian share is ``eps_J = eps_jacobian_frac * epsilon`` and
    needs curvature ``Delta``. When the penalty already provides
    ``mu_P >= Delta`` (ridge, elastic net, bridge on a box), no ridge is added
    and the Jacobian costs only ``eps_J* = log(1 + beta_H / mu_P)``; the
    retrieved share ``eps_J - eps_J*`` is either given to the noise
    (``retrieval="recycle"``, same total epsilon, less noise) or not spent
    (``"return"``, same noise, smaller ``epsilon_spent``). Every quantity is
    public, so the rebalancing happens before any noise is drawn. The public
    minimum curvature ``beta_H / expm1(MAX_JACOBIAN_EPSILON)`` counts as the
    penalty's: when ``mu_P`` is below it, the difference is added as a ridge
    (``eps_J`` above 5 nats is always retrieved).

    The derivatives in epsilon are taken branch by branch (the branches meet
    only where the provided curvature equals ``Delta``): with retrieval
    ``eps_J*`` is constant, and recycling gives the noise all of ``d epsilon``,
    returning its planned share; otherwise ``Delta = beta_H / expm1(f epsilon)
    - mu_P``.

    With ``persons=True`` (``groups``) the bounds are a person's, whose Hessian
    difference has rank up to ``dimension`` (the number of coefficients, public):
    the Jacobian term is ``m log(1 + beta_H / (m Delta))`` with ``m = dimension``
    (:func:`jacobian_curvature`); without, ``m = 1``.
    """
    zeta = gradient_sensitivity(gradient_bound, neighboring)
    mu = float(penalty_curvature)
    m = max(1, int(dimension)) if persons else 1
    tail = dict(persons=bool(persons), jacobian_rank=m)
    if np.isinf(epsilon):
        return NAPPCalibration(np.inf, float(delta), np.inf, np.inf, np.inf, 0.0, 0.0, mu, 0.0,
                               "none", 0.0, zeta, gradient_bound, hessian_bound, neighboring,
                               **tail)
    eps_j = eps_jacobian_frac * epsilon
    curvature = jacobian_curvature(eps_j, hessian_bound, m)
    f = eps_jacobian_frac
    # the public minimum curvature counts as the penalty's: the part the penalty lacks
    # is added as a ridge, and the Jacobian's planned share beyond it is retrieved
    provided = max(mu, jacobian_curvature(MAX_JACOBIAN_EPSILON, hessian_bound, m))
    if provided >= curvature and provided > 0:
        eps_j_star = min(eps_j, jacobian_epsilon(provided, hessian_bound, m))
        extra, d_extra = provided - mu, 0.0
        d_eps_noise = 1.0 if retrieval == "recycle" else 1.0 - f
    else:
        eps_j_star = eps_j
        extra = curvature - mu
        # Delta = beta_H / (m expm1(f epsilon / m)) - mu_P
        rate = f / m
        d_extra = -hessian_bound * rate * np.exp(rate * epsilon) / (
            m * np.expm1(rate * epsilon) ** 2)
        d_eps_noise = 1.0 - f
    retrieved = eps_j - eps_j_star
    if retrieval == "return":
        eps_noise = epsilon - eps_j
        spent = eps_noise + eps_j_star
    else:
        eps_noise = epsilon - eps_j_star
        spent = float(epsilon)
    if delta > 0:
        persons_dimension = m if persons else None
        noise = "gaussian"
        scale = napp_gaussian_std(eps_noise, delta, zeta, neighboring, persons_dimension)
        # sigma = zeta (t + r) / (2 e), r = sqrt(t^2 + 2 e): dlog sigma / dt = 1 / r
        t, dt_dlog_delta = gaussian_tail(delta, neighboring, persons_dimension)
        r = np.sqrt(t * t + 2.0 * eps_noise)
        d_log_scale = (1.0 / (r * (t + r)) - 1.0 / eps_noise) * d_eps_noise
        d_log_scale_d_log_delta = (-1.0 / (r * t) if persons_dimension is None
                                   else dt_dlog_delta / r)
    else:
        noise, scale = "gamma_norm", zeta / eps_noise
        d_log_scale, d_log_scale_d_log_delta = -d_eps_noise / eps_noise, 0.0
    return NAPPCalibration(float(epsilon), float(delta), float(spent), float(eps_j_star),
                           float(eps_noise), float(retrieved), curvature, mu, float(extra),
                           noise, float(scale), zeta, gradient_bound, hessian_bound, neighboring,
                           d_extra_ridge=float(d_extra), d_log_noise_scale=float(d_log_scale),
                           d_log_noise_scale_d_log_delta=float(d_log_scale_d_log_delta), **tail)


def kifer_calibration(epsilon, delta, *, gradient_bound, hessian_bound, penalty_curvature=0.0,
                      neighboring="add_remove", persons=False, **_):
    """Existing DP-ERM of Kifer, Smith & Thakurta (2012) as a baseline.

    Target penalty plus ``Delta = 2 beta_H / epsilon`` on top (no dual purpose)
    and the KST noise (Gaussian ``zeta sqrt(8 log(2/delta) + 4 eps) / eps``, or
    Gamma-norm scale ``2 zeta / eps``). Reuses the objective-perturbation
    calibration functions; used by the benchmark. One row only: ``persons`` is
    refused (its rank-one Jacobian bound does not hold for a person).
    """
    if persons:
        raise ValueError("kifer_calibration bounds one row's Jacobian (rank one); it has "
                         "no calibration for a person of several rows.")
    zeta = gradient_sensitivity(gradient_bound, neighboring)
    if np.isinf(epsilon):
        return napp_calibration(epsilon, delta, gradient_bound=gradient_bound,
                                hessian_bound=hessian_bound, neighboring=neighboring)
    extra = kst_extra_ridge(epsilon, hessian_bound)
    if delta > 0:
        noise, scale = "gaussian", float(kst_gaussian_std(epsilon, delta, zeta))
    else:
        noise, scale = "gamma_norm", 2.0 * zeta / epsilon
    return NAPPCalibration(float(epsilon), float(delta), float(epsilon), 0.5 * epsilon,
                           0.5 * epsilon, 0.0, extra, float(penalty_curvature), extra, noise,
                           scale, zeta, gradient_bound, hessian_bound, neighboring)
