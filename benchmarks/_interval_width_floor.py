"""The narrowest intervals the releases allow, to first order (issue 46).

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

:class:`~skdp.ObjPertLogisticRegression` releases ``theta_p`` (noise ``b`` in the
objective ``C sum_i l_i + (r / 2) ||theta||^2 + <b, theta>``) and ``H~ = H + E``, and
reports ``theta_d = theta_p + (r / C) H~^{-1} theta_p``, whose first-order error
``-H^{-1} (g + b / C) - (r / C) H^{-1} E u`` (``u = H^{-1} theta_p``) has the variance
``H^{-1} (H + v_b I / C^2 + (r / C)^2 Cov(E u)) H^{-1}`` against the Wald ``H^{-1}``
(``H`` the logit information of the population's rows at ``theta*``, estimated from
:data:`POPULATION_ROWS` public draws; the solver's cover noise, about 1e-6, left out).
``C``, ``r`` and the noise laws are read from a fit of the estimator on public data.
This is a floor only where the first order holds: where ``E`` is as large as ``H``'s
smallest eigenvalues, the estimator's spread is larger.
"""

import json

import numpy as np
from scipy.special import expit

from skdp import InferenceError, ObjPertLogisticRegression
from skdp.mechanisms._sufficient_statistics import ssp_calibration, ssp_sensitivities

from ._common import RESULTS_DIR
from .bench_inference import ERROR_SD, make_data, population

POPULATION_ROWS = 400_000

INTERCEPT_SCALING = 1.0   # SSPLinearRegression's default, as the benchmark fits it


def gram_noise_variances(calibration):
    """``(v_d, v_o)``: the variances of the noisy Gram matrix's diagonal and
    off-diagonal entries."""
    if calibration.law == "gaussian":
        return calibration.gram**2, calibration.gram**2 / 2.0
    return 2.0 * calibration.gram**2, 2.0 * calibration.gram**2


def symmetric_noise_variance(calibration, u):
    """The diagonal of ``Cov(E u)`` for the symmetric noise ``E`` of a Gram-like
    release: ``v_d u_j^2 + v_o sum_{k != j} u_k^2``."""
    v_diagonal, v_off = gram_noise_variances(calibration)
    return v_diagonal * u**2 + v_off * (u @ u - u**2)


def symmetric_noise_covariance(calibration, u):
    """``Cov(E u)`` whole: ``(E u)_i = sum_j E_ij u_j`` with ``E_ij = E_ji`` shares
    the entry ``E_ij`` with ``(E u)_j``, so the off-diagonal terms are ``v_o u_i u_j``
    (:func:`symmetric_noise_variance` on the diagonal)."""
    v_off = gram_noise_variances(calibration)[1]
    covariance = v_off * np.outer(u, u)
    np.fill_diagonal(covariance, symmetric_noise_variance(calibration, u))
    return covariance


def vector_noise_variance(law, scale, dim):
    """The variance of one coordinate of an isotropic noise vector: Gaussian
    ``sigma^2``, Laplace ``2 b^2``, Gamma-norm (norm ``Gamma(dim, scale)``, uniform
    direction: ``E||b||^2 = dim (dim + 1) scale^2``) ``(dim + 1) scale^2``."""
    return {"gaussian": 1.0, "laplace": 2.0, "gamma_norm": dim + 1.0}[law] * scale**2


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
    noise = calibration.variance("moment") + symmetric_noise_variance(calibration, theta)
    return np.sqrt(1.0 + noise / (ERROR_SD**2 * gram))


class _RecordingObjPert(ObjPertLogisticRegression):
    """Records the constants of its intervals' mechanism when it fits (on the class: a
    refused fit restores the instance's attributes)."""

    recorded = None

    def _inference_mechanism(self, solution):
        mechanism = super()._inference_mechanism(solution)
        type(self).recorded = dict(mechanism, calibration=solution.information_calibration)
        return mechanism


def objpert_mechanism(d, epsilon, delta):
    """``C``, ``r``, the objective's noise law and the information's calibration of
    the benchmark's ``logistic`` estimator at ``(epsilon, delta)`` (public constants,
    read from a fit on the population's draws)."""
    X, y = make_data("logistic", 2_000, d, 0)
    model = _RecordingObjPert(epsilon=epsilon, delta=delta, data_norm=1.0, inference=True,
                              random_state=0)
    try:
        model.fit(X, y)
    except InferenceError:   # refused after the constants were recorded
        pass
    return _RecordingObjPert.recorded


def objpert_first_order_width_ratios(n, d, epsilon, delta):
    """The first-order width of the intervals over the Wald interval's, per
    coordinate (the intercept first), for the benchmark's ``logistic`` cell."""
    mechanism = objpert_mechanism(d, epsilon, delta)
    C, ridge = mechanism["C"], mechanism["ridge"]
    X, _ = make_data("logistic", POPULATION_ROWS, d, 0)
    Z = np.c_[np.ones(len(X)), X]
    theta = population(d)
    curvature = expit(Z @ theta) * (1.0 - expit(Z @ theta))
    information = n / len(X) * (Z * curvature[:, None]).T @ Z
    inverse = np.linalg.inv(information)
    penalised = np.linalg.solve(np.eye(d + 1) + ridge / C * inverse, theta)
    middle = (information + vector_noise_variance(*mechanism["objective_noise"], d + 1)
              / C**2 * np.eye(d + 1) + (ridge / C) ** 2 * np.diag(
                  symmetric_noise_variance(mechanism["calibration"], inverse @ penalised)))
    return np.sqrt(np.diag(inverse @ middle @ inverse) / np.diag(inverse))


FLOORS = {"linear": ssp_first_order_width_ratios, "logistic": objpert_first_order_width_ratios}


def annotate(cells):
    """Add to each ``linear`` and ``logistic`` cell of the coverage grid its
    ``first_order_width_ratio`` (per coordinate, the intercept first)."""
    for cell in cells:
        if cell["estimator"] in FLOORS:
            cell["first_order_width_ratio"] = FLOORS[cell["estimator"]](
                cell["n"], cell["d"], cell["epsilon"], cell["delta"]).tolist()
    return cells


def main():
    """Add the first-order widths to ``results/inference.json`` in place (after a run
    or a ``--merge`` of ``bench_inference``)."""
    path = RESULTS_DIR / "inference.json"
    payload = json.loads(path.read_text())
    annotate(payload["cells"])
    path.write_text(json.dumps(payload, indent=2) + "\n")
    print(f"added the first-order widths to {path}")


if __name__ == "__main__":
    main()
