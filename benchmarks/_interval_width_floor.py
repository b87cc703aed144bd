"""The narrowest intervals the releases allow, to first order (issue 46).

The first-order standard errors of the coefficients at the population's values
(:func:`benchmarks.bench_refusal.standard_errors`: the sampling term and the noise's
exact covariance, from the estimators' own calibration at their shipped shares) against
the non-private Wald interval's: least squares ``s^2 A^{-1}`` and logistic regression
``H^{-1}``, ``A`` and ``H`` the population's Gram and information matrices at ``n``
rows. For least squares, whose error is ``A^{-1} (Z^T r + e - E theta*)``, the ratio of
coordinate ``j`` is, ``A`` being diagonal on the benchmark's population,

    ``sqrt(1 + (v_b + v_d theta_j^2 + v_o sum_{k != j} theta_k^2) / (s^2 A_jj))``

(``v_b``, ``v_d``, ``v_o`` the variances of the moment's and the Gram matrix's diagonal
and off-diagonal noise); for logistic regression (objective perturbation, ``theta_d =
theta_p + (r / C) H~^{-1} theta_p``) the variance is ``H^{-1} (H + v_b I / C^2 + (r /
C)^2 Cov(E u)) H^{-1}``, ``u = H^{-1} theta_p``. An interval narrower than this
under-covers at large ``n``; the report compares the measured widths with it. It is a
floor only where the first order holds: where ``E`` is as large as the matrix's
smallest eigenvalues, the estimator's spread is larger.
"""

import json

import numpy as np

from ._common import RESULTS_DIR
from .bench_refusal import NOISE_SD, PARAMS, population_matrix, standard_errors


def first_order_width_ratios(kind, n, d, epsilon, delta):
    """The first-order width of the intervals over the Wald interval's, per
    coordinate (the intercept first, as ``conf_int``), for the benchmark's ``kind``
    (``"linear"`` or ``"logistic"``) cell; ``None`` where the estimator would refuse
    the population's own release."""
    sigma = population_matrix(kind, d, PARAMS["information_rows"], PARAMS["seed"])
    errors = standard_errors(kind, sigma, n, epsilon, delta, PARAMS["shares"][kind][0])
    if errors is None:
        return None
    wald = np.diag(np.linalg.inv(n * sigma)) * (NOISE_SD**2 if kind == "linear" else 1.0)
    ratios = errors / np.sqrt(wald)
    return np.r_[ratios[-1], ratios[:-1]]      # the intercept first


def annotate(cells):
    """Add to each ``linear`` and ``logistic`` cell of the coverage grid its
    ``first_order_width_ratio`` (per coordinate, the intercept first; ``None`` where
    the population's release is refused)."""
    for cell in cells:
        if cell["estimator"] in ("linear", "logistic"):
            ratios = first_order_width_ratios(cell["estimator"], cell["n"], cell["d"],
                                              cell["epsilon"], cell["delta"])
            cell["first_order_width_ratio"] = None if ratios is None else ratios.tolist()
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
