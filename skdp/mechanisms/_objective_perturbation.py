"""Noise and extra-ridge calibration of objective perturbation (sum form).

The perturbed objective is ``sum_i l_i(theta) + (ridge + extra_ridge)/2 ||theta||^2
+ <b, theta>`` with per-example gradient norm at most ``gradient_bound`` (G) and
per-example Hessian eigenvalues at most ``hessian_bound`` (beta_H). The
neighbouring records' gradients differ by at most ``zeta = G`` (add/remove-one)
or ``2 G`` (replace-one). Derivation: ``docs/privacy/objective_perturbation.rst``
sections 3 and 4.
"""

from dataclasses import dataclass, replace

import numpy as np

from ._approximate_minima import EpsilonDerivatives, in_total_epsilon, split_budget


@dataclass(frozen=True)
class ObjPertCalibration(EpsilonDerivatives):
    """What one objective-perturbation fit adds to the objective.

    Attributes
    ----------
    extra_ridge : float
        Additional L2 curvature Delta (sum form).
    noise : {"gamma_norm", "gaussian", "none"}
        Law of the linear noise vector ``b``.
    noise_scale : float
        Gamma-norm: the scale ``1/beta`` of the density ``exp(-||b|| beta)``;
        Gaussian: the per-coordinate standard deviation.
    epsilon_noise : float
        Part of epsilon paid by the noise term (the rest covers the Jacobian).

    And the derivatives of :class:`~skdp.mechanisms.EpsilonDerivatives`.
    """

    extra_ridge: float
    noise: str
    noise_scale: float
    epsilon_noise: float


def gradient_sensitivity(gradient_bound, neighboring):
    """Bound on the difference of two neighbouring records' gradients (zeta)."""
    return (2.0 if neighboring == "replace" else 1.0) * gradient_bound


def _jacobian_multiplier(neighboring):
    # Chaudhuri et al. bound the log-Jacobian by 2 log(1 + c/lambda) for a replaced
    # record; adding or removing one record changes one rank-1 term: log(1 + c/lambda).
    return 2.0 if neighboring == "replace" else 1.0


def person_hessian(hessian_bound, hessian_rank, dim):
    """The Jacobian constants ``(beta', r')`` of one person (several rows) in dimension ``dim``.

    The Jacobian term of the calibrations below is ``m r log(1 + beta / lambda)``:
    the bound on ``log det(I + A^{-1/2} E A^{-1/2})`` for ``A >= lambda I`` and ``E``
    positive semidefinite of rank at most ``r`` and trace at most ``r beta``. The
    eigenvalues ``e_i >= 0`` of ``A^{-1/2} E A^{-1/2}`` are then at most ``r'`` in
    number (``rank E``) and sum to ``tr(A^{-1} E) <= tr(E) / lambda``; ``sum_i log(1 +
    e_i)`` is concave in them, so it is at most ``r' log(1 + tr(E) / (r' lambda))``.

    A person's Hessian is the sum of their rows' Hessians, each of rank at most ``r =
    hessian_rank`` and norm at most ``beta_j`` with ``sum_j beta_j <= beta =
    hessian_bound`` (the rows' weights sum to at most the bound ``W`` at which
    ``beta`` is taken): its trace is at most ``r beta`` whatever the number of rows,
    and its rank at most ``r dim`` (a record's Hessian lives in a space of dimension
    ``r dim``: ``dim`` coefficients for a margin loss, ``(K - 1) dim`` for the
    softmax). So the person's Jacobian term is ``m r dim log(1 + beta / (dim
    lambda))``: the record's formula at ``beta' = beta / dim`` and ``r' = r dim``
    (``docs/privacy/objective_perturbation.rst``, "Persons"). It lies between the
    record's ``m r log(1 + beta / lambda)`` and ``m r beta / lambda``. ``dim`` is
    public (the number of coefficients); the number of a person's rows is not
    read.

    Parameters
    ----------
    hessian_bound : float
        ``beta``: a record's Hessian bound at the largest total weight ``W``.
    hessian_rank : int
        ``r``: a record's Hessian rank bound.
    dim : int
        Coefficients per class (intercept included); 1 gives the record's constants.

    Returns
    -------
    hessian_bound, hessian_rank : float, int
    """
    return hessian_bound / dim, hessian_rank * dim


def jacobian_share_C(epsilon, share, *, hessian_bound, ridge=1.0, neighboring="add_remove",
                     hessian_rank=1):
    """The ``C`` at which the Jacobian term ``m r log(1 + C beta_H / ridge)`` is ``share * epsilon``.

    ``hessian_bound`` is a record's Hessian bound at ``C = 1``, ``m`` is 1
    (add/remove-one) or 2 (replace-one) and ``r`` the Hessian rank: below this
    ``C`` Chaudhuri et al.'s mechanism needs no extra ridge while ``share`` is
    below ``eps_jacobian_frac``. Public: it reads no data.
    """
    m = _jacobian_multiplier(neighboring) * hessian_rank
    return float(ridge * np.expm1(share * epsilon / m) / hessian_bound)


def chaudhuri_calibration(epsilon, *, gradient_bound, hessian_bound, ridge,
                          neighboring="replace", delta_rule="continuous", eps_jacobian_frac=0.5,
                          hessian_rank=1):
    """Chaudhuri, Monteleoni & Sarwate 2011, Algorithm 2 (pure epsilon-DP).

    The privacy loss splits into a Jacobian term ``m log(1 + beta_H / (ridge +
    Delta))`` (``m = 2`` replace-one, as in the paper; ``1`` add/remove-one)
    and a noise term ``epsilon_noise`` paid by noise with density
    ``exp(-epsilon_noise ||b|| / zeta)``; any ``Delta >= 0`` is valid (spec
    section 3.1). Let ``kappa`` be the Jacobian term at ``Delta = 0``. A
    per-record Hessian of rank ``r = hessian_rank`` (``K - 1`` for the softmax
    loss) multiplies the Jacobian term by ``r``: ``det(I + A^{-1} E) <= (1 +
    beta_H / lambda)^r`` for ``E`` of rank ``r`` and norm ``beta_H``.

    * ``delta_rule="paper"``: ``Delta = 0`` and ``epsilon_noise = epsilon - kappa`` when
      that is positive; otherwise the extra ridge makes the Jacobian term
      ``epsilon / 2`` and ``epsilon_noise = epsilon / 2`` (discontinuous in epsilon).
    * ``delta_rule="continuous"``: ``Delta = 0`` while ``kappa <= eps_jacobian_frac * epsilon``;
      otherwise the extra ridge makes the Jacobian term ``eps_jacobian_frac * epsilon``
      and ``epsilon_noise = (1 - eps_jacobian_frac) * epsilon``. Both branches agree
      where they meet, so the mechanism is continuous in epsilon; ``eps_jacobian_frac
      = 0.5`` is the continuous delta_rule of the spec.
    """
    if np.isinf(epsilon):
        return ObjPertCalibration(0.0, "none", 0.0, np.inf)
    m = _jacobian_multiplier(neighboring) * hessian_rank
    zeta = gradient_sensitivity(gradient_bound, neighboring)
    kappa = m * np.log1p(hessian_bound / ridge)
    frac = 0.5 if delta_rule == "paper" else eps_jacobian_frac
    main_branch = kappa < epsilon if delta_rule == "paper" else kappa <= frac * epsilon
    if main_branch:
        # scale zeta / (epsilon - kappa)
        extra_ridge, epsilon_noise = 0.0, epsilon - kappa
        d_extra, d_log_scale = 0.0, -1.0 / epsilon_noise
    else:
        # Delta = beta_H / expm1(f epsilon / m) - ridge, scale zeta / ((1 - f) epsilon)
        rate = frac / m
        extra_ridge = hessian_bound / np.expm1(rate * epsilon) - ridge
        epsilon_noise = (1.0 - frac) * epsilon
        d_extra = -hessian_bound * rate * np.exp(rate * epsilon) / np.expm1(rate * epsilon) ** 2
        d_log_scale = -1.0 / epsilon
    return ObjPertCalibration(float(extra_ridge), "gamma_norm", zeta / epsilon_noise,
                              float(epsilon_noise), d_extra_ridge=float(d_extra),
                              d_log_noise_scale=float(d_log_scale))


def kst_extra_ridge(epsilon, hessian_bound, hessian_rank=1):
    """Kifer, Smith & Thakurta 2012: ``Delta = 2 r beta_H / epsilon`` (sum form).

    ``r`` is the rank of a record's Hessian (1 for the margin losses): the
    Jacobian term is then at most ``r log(1 + epsilon / (2 r)) <= epsilon / 2``.
    """
    return 0.0 if np.isinf(epsilon) else 2.0 * hessian_rank * hessian_bound / epsilon


def kst_noise_dim(hessian_rank=1, neighboring="add_remove", person_dim=1, n_coef=None):
    """Dimension ``m`` of a fixed subspace that holds the gradient difference ``v(theta)``.

    Kifer et al.'s noise term is ``(2 <b, v> + ||v||^2) / (2 s^2)`` at the output
    ``theta``, where ``v(theta)`` is the gradient difference of the two neighbouring
    datasets and ``b`` the Gaussian noise that produced ``theta``. ``v`` moves with
    ``theta``, hence with ``b``; what stays fixed is a subspace ``V`` that holds it
    for every ``theta``, and ``|<b, v>| <= ||P_V b|| ||v||`` with ``||P_V b||^2 /
    s^2`` chi-square with ``m = dim V`` degrees of freedom
    (``docs/privacy/objective_perturbation.rst``, "The Gaussian tail"):

    * one record of a margin loss: ``v`` is a multiple of ``x``, ``m = 1`` (``2``
      under replace: ``x`` and ``x'``);
    * one record of the softmax loss: ``v = (p(theta) - e_y) x^T`` with ``sum (p -
      e_y) = 0``, ``m = r = K - 1`` (``2 r`` under replace);
    * one person (``person_dim = d`` coefficients per class): ``v`` lies in the span of
      their rows' gradients, ``m = r d`` whatever the relation.

    Every gradient of the softmax loss lies in ``{Theta: 1^T Theta = 0}``, of
    dimension ``r d`` (``d`` for a margin loss): ``m`` is capped there. Public: it
    reads the Hessian rank, the relation and the number of coefficients.

    Parameters
    ----------
    hessian_rank : int, default=1
        ``r``: 1 for a margin loss, ``K - 1`` for the softmax loss.
    neighboring : {"add_remove", "replace"}, default="add_remove"
    person_dim : int, default=1
        Coefficients per class of a fit with ``groups``; 1 for one record.
    n_coef : int, default=None
        Coefficients per class (``d``), for the cap; ``None``: no cap.

    Returns
    -------
    m : int
    """
    m = hessian_rank * person_dim * (1 if person_dim > 1 else
                                     int(_jacobian_multiplier(neighboring)))
    return int(m if n_coef is None else min(m, hessian_rank * n_coef))


def kst_tail(delta, noise_dim=1):
    """``q^2 = max(2 log(2/delta), chi2.isf(delta, m))`` and ``dq^2 / dlog delta``.

    ``||P_V b|| <= s q`` with probability at least ``1 - delta`` for ``b ~ N(0, s^2
    I)`` and ``V`` of dimension ``m = noise_dim`` (the chi-square quantile); the
    logarithmic term is Kifer et al.'s constant, which covers the chi-square quantile
    for ``m <= 2`` (``chi2.isf(delta, 2) = 2 log(1/delta)``, and the one-dimensional
    tail ``P(|Z| > t) <= exp(-t^2 / 2)``): it is kept there, bit for bit.
    """
    log_term = 2.0 * np.log(2.0 / delta)
    if noise_dim <= 2:
        return log_term, -2.0
    from scipy.stats import chi2

    quantile = float(chi2.isf(delta, noise_dim))
    if quantile <= log_term:
        return log_term, -2.0
    # delta = chi2.sf(q^2, m): dq^2 / ddelta = -1 / pdf(q^2)
    return quantile, float(-delta / chi2.pdf(quantile, noise_dim))


def kst_gaussian_std(epsilon, delta, zeta, noise_dim=1):
    """``s(epsilon) = zeta sqrt(4 q^2 + 4 epsilon) / epsilon``, ``q^2`` of :func:`kst_tail`.

    With ``a = zeta / s`` the noise term is at most ``a q + a^2 / 2`` outside an event
    of probability ``delta``, and this ``s`` makes that ``<= epsilon / 2``. For
    ``noise_dim <= 2`` it is the spec's ``zeta sqrt(8 log(2/delta) + 4 epsilon) /
    epsilon`` (spec 4).
    """
    if np.isinf(epsilon):
        return 0.0
    q2 = kst_tail(delta, noise_dim)[0]
    return zeta * np.sqrt(4.0 * q2 + 4.0 * epsilon) / epsilon


def kst_calibration(epsilon, delta, *, gradient_bound, hessian_bound, neighboring="replace",
                    hessian_rank=1, noise_dim=1):
    """KST objective perturbation: Gaussian noise if ``delta > 0``, else Gamma-norm.

    Both add the extra ridge ``2 beta_H / epsilon`` (``dDelta / depsilon = -2
    beta_H / epsilon**2``), which bounds the Jacobian term by ``log(1 +
    epsilon/2) <= epsilon/2`` under either relation. The Gaussian standard
    deviation is :func:`kst_gaussian_std` for a gradient difference in a fixed
    subspace of dimension ``noise_dim`` (:func:`kst_noise_dim`), with ``dlog s /
    depsilon = -(4t + epsilon) / (2 epsilon (2t + epsilon))`` and ``dlog s / dlog
    delta = (dq^2 / dlog delta) / (2 (2t + epsilon))``, ``t = q^2 / 2`` (:func:`kst_tail`;
    ``t = log(2/delta)`` and ``dlog s / dlog delta = -1 / (2t + epsilon)`` for
    ``noise_dim <= 2``; the source paper's eq. (6) has the opposite sign of ``s'``);
    the pure variant's Gamma-norm scale is ``2 zeta / epsilon``, with ``dlog s /
    depsilon = -1 / epsilon``.
    """
    if np.isinf(epsilon):
        return ObjPertCalibration(0.0, "none", 0.0, np.inf)
    zeta = gradient_sensitivity(gradient_bound, neighboring)
    extra_ridge = kst_extra_ridge(epsilon, hessian_bound, hessian_rank)
    d_extra = -2.0 * hessian_rank * hessian_bound / epsilon**2
    if delta > 0:
        q2, d_q2 = kst_tail(delta, noise_dim)
        t = 0.5 * q2
        return ObjPertCalibration(
            extra_ridge, "gaussian", float(kst_gaussian_std(epsilon, delta, zeta, noise_dim)),
            0.5 * epsilon, d_extra_ridge=d_extra,
            d_log_noise_scale=-(4.0 * t + epsilon) / (2.0 * epsilon * (2.0 * t + epsilon)),
            d_log_noise_scale_d_log_delta=d_q2 / (2.0 * (2.0 * t + epsilon)))
    return ObjPertCalibration(extra_ridge, "gamma_norm", 2.0 * zeta / epsilon, 0.5 * epsilon,
                              d_extra_ridge=d_extra, d_log_noise_scale=-1.0 / epsilon)


def objective_perturbation_calibration(epsilon, delta, *, gradient_bound, hessian_bound,
                                       ridge, neighboring, delta_rule="continuous",
                                       eps_jacobian_frac=0.5, hessian_rank=1, noise_dim=1):
    """The whole calibration of one objective-perturbation release.

    The request ``(epsilon, delta)`` is shared with the cover of the solver's error
    (:func:`~skdp.mechanisms.split_budget`); the mechanism's share is calibrated by
    :func:`kst_calibration` when its delta is positive, else by
    :func:`chaudhuri_calibration`.

    Parameters
    ----------
    epsilon, delta : float
        The release's total budget.
    gradient_bound, hessian_bound : float
        Per-record bounds ``G`` and ``beta_H`` (sum form).
    ridge : float
        The objective's own L2 curvature.
    neighboring : {"add_remove", "replace"}
    delta_rule : {"continuous", "paper"}, default="continuous"
        Extra-ridge rule of the pure mechanism.
    eps_jacobian_frac : float, default=0.5
        Jacobian share of the continuous rule.
    hessian_rank : int, default=1
        Bound on the rank of a record's Hessian (``K - 1`` for the softmax loss).
    noise_dim : int, default=1
        Dimension of a fixed subspace holding the gradient difference of two
        neighbours (:func:`kst_noise_dim`), read by the Gaussian variant only.

    Returns
    -------
    budget : Budget
        The shares of the mechanism and of the cover.
    calibration : ObjPertCalibration
        The mechanism's calibration, its derivatives taken in the total epsilon.
    """
    budget = split_budget(epsilon, delta)
    if budget.delta_mechanism > 0:
        calibration = kst_calibration(budget.epsilon_mechanism, budget.delta_mechanism,
                                      gradient_bound=gradient_bound,
                                      hessian_bound=hessian_bound, neighboring=neighboring,
                                      hessian_rank=hessian_rank, noise_dim=noise_dim)
    else:
        calibration = chaudhuri_calibration(budget.epsilon_mechanism,
                                            gradient_bound=gradient_bound,
                                            hessian_bound=hessian_bound, ridge=ridge,
                                            neighboring=neighboring, delta_rule=delta_rule,
                                            eps_jacobian_frac=eps_jacobian_frac,
                                            hessian_rank=hessian_rank)
    d_extra_ridge, d_log_noise_scale = in_total_epsilon(calibration)
    return budget, replace(calibration, d_extra_ridge=d_extra_ridge,
                           d_log_noise_scale=d_log_noise_scale)


# -- Renyi DP of the Gaussian variant (Redberg, Koskela & Wang 2023, adapted) --------------

def gaussian_objective_rdp(orders, *, sensitivity, noise_std, log_jacobian):
    """RDP of the exact minimiser of Gaussian objective perturbation, at each order.

    ``c + alpha L^2 / (2 sigma^2) + log(2 Phi((alpha - 1) L / sigma)) / (alpha - 1)``
    with ``L = sensitivity`` (the norm of one record's gradient, whose direction
    does not depend on ``theta``: a margin loss), ``sigma = noise_std`` and ``c =
    log_jacobian`` a bound on the log of the Jacobian ratio. Both directions of the
    privacy loss under the numerator's law are at most ``c + L^2 / (2 sigma^2) + L
    |Z| / sigma`` with ``Z`` standard normal, whose moment generating function gives
    the formula (``docs/privacy/objective_perturbation.rst``, section 5). Redberg et
    al. take ``c = -log(1 - beta / lambda)``; skdp uses ``log(1 + beta / lambda)``.

    Parameters
    ----------
    orders : array-like
        Orders ``alpha > 1``.
    sensitivity : float
        ``L``, > 0.
    noise_std : float
        ``sigma``; 0 gives an infinite curve.
    log_jacobian : float
        ``c``, >= 0.

    Returns
    -------
    rdp : ndarray of shape orders.shape
    """
    from scipy.special import log_ndtr

    orders = np.asarray(orders, dtype=float)
    if noise_std == 0:
        return np.full(orders.shape, np.inf)
    ratio = sensitivity / noise_std
    return (log_jacobian + orders * ratio**2 / 2
            + (np.log(2.0) + log_ndtr((orders - 1.0) * ratio)) / (orders - 1.0))


def cover_rdp(orders, epsilon_cover):
    """RDP added by the solver's cover at each order: ``e (2 alpha - 1) / (2 (alpha - 1))``.

    The released density is within ``exp(+-e / 2)`` of the density of the exact
    minimiser plus the same noise (``e = epsilon_cover``, :mod:`._approximate_minima`),
    pointwise: the integral ``int p^alpha p'^(1 - alpha)`` grows by at most
    ``exp(alpha e / 2 + (alpha - 1) e / 2)``, and adding the noise to the exact
    minimiser is post-processing.
    """
    orders = np.asarray(orders, dtype=float)
    if np.isinf(epsilon_cover):
        return np.zeros(orders.shape)
    return epsilon_cover * (2.0 * orders - 1.0) / (2.0 * (orders - 1.0))


def kst_release_rdp(orders, epsilon, delta, *, gradient_bound, hessian_bound, ridge,
                    neighboring="add_remove", hessian_rank=1):
    """RDP of one Gaussian (KST) objective-perturbation release, cover included.

    The release of :func:`objective_perturbation_calibration` at ``(epsilon, delta)``
    with ``delta > 0``: the KST noise ``sigma`` and extra ridge ``Delta`` at the
    mechanism's share, the exact minimiser's curve :func:`gaussian_objective_rdp`
    with ``L = gradient_bound``, ``c = log(1 + beta_H / (ridge + Delta))``, plus
    :func:`cover_rdp` of the cover's share.

    Parameters
    ----------
    orders : array-like
        Orders ``alpha > 1``.
    epsilon, delta : float
        The release's budget (``delta > 0``).
    gradient_bound, hessian_bound : float
        Per-record bounds ``G`` and ``beta_H`` (sum form, ``C`` included).
    ridge : float
        The objective's own L2 curvature.
    neighboring : {"add_remove"}, default="add_remove"
    hessian_rank : {1}, default=1

    Returns
    -------
    rdp : ndarray of shape orders.shape

    Raises
    ------
    ValueError
        For ``delta = 0``, the replace-one relation (its gradient difference spans two
        directions) or a Hessian of rank above 1 (the softmax loss, whose gradient
        direction moves with ``theta``): the bound is derived for neither.
    """
    if not delta > 0:
        raise ValueError("The Renyi curve is of the Gaussian variant (delta > 0).")
    if neighboring != "add_remove":
        raise ValueError("The Renyi curve of Gaussian objective perturbation is derived "
                         "for add/remove-one neighbours only, not neighboring="
                         f"{neighboring!r}.")
    if hessian_rank != 1:
        raise ValueError("The Renyi curve of Gaussian objective perturbation needs a "
                         "margin loss (one gradient direction per record); the softmax "
                         "loss has none.")
    orders = np.asarray(orders, dtype=float)
    if np.isinf(epsilon):
        return np.full(orders.shape, np.inf)
    budget = split_budget(epsilon, delta)
    calibration = kst_calibration(budget.epsilon_mechanism, budget.delta_mechanism,
                                  gradient_bound=gradient_bound, hessian_bound=hessian_bound,
                                  neighboring=neighboring)
    total_ridge = ridge + calibration.extra_ridge
    curve = gaussian_objective_rdp(orders, sensitivity=gradient_bound,
                                   noise_std=calibration.noise_scale,
                                   log_jacobian=float(np.log1p(hessian_bound / total_ridge)))
    return curve + cover_rdp(orders, budget.epsilon_cover)
