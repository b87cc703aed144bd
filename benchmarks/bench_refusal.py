"""How many rows ``inference=True`` needs: the refusal probability from the released
matrix's law alone, without fitting a model (issue 46).

A fit refuses its intervals when the released Gram-like matrix ``M~ = M + E`` is
singular within its noise (:func:`~skdp.mechanisms._sufficient_statistics.
singular_within_noise`: ``lambda_min(M~) <= 2 s``). Here ``M = n Sigma``, ``Sigma``
the population matrix per row of the coverage grid's population
(``benchmarks/bench_inference.py``: ``d`` features uniform on ``[-1, 1] / sqrt(d)``,
the intercept column 1): least squares, the Gram matrix ``E[z z^T]`` (exact); logistic
regression, the information ``E[l''(z^T theta*) z z^T]`` (Monte Carlo over
``information_rows`` rows), at the population parameter instead of the release
``theta_p`` and without the sample's own fluctuation around ``n Sigma``. The noise
``E`` is drawn from the calibration the estimators use
(:func:`~skdp.mechanisms._sufficient_statistics.ssp_calibration` with
``inference=True``; :func:`~skdp.mechanisms._glm_inference.information_calibration`
at :data:`~skdp.mechanisms._glm_inference.INFORMATION_SHARE` of the budget), with
the defaults of :class:`~skdp.SSPLinearRegression` and
:class:`~skdp.ObjPertLogisticRegression` and the grid's public bounds
(``data_norm=1``, ``y_bound=4``, add/remove).

Since ``lambda_min(n Sigma + E)`` grows with ``n``, each noise draw has a threshold:
the fit is refused exactly when ``n`` is at most ``lambda_max(Sigma^{-1/2} (2 s I - E)
Sigma^{-1/2})``. The refusal probability at ``n`` is the share of draws whose
threshold is at least ``n``, and the smallest ``n`` refused by it with probability
below 5 % (50 %) is the 95 % (50 %) quantile of the thresholds. Least squares also
refuses a release whose noisy residual sum of squares or degrees of freedom are not
positive: its refusal curve adds that rule, estimated on up to ``validation_releases``
accepted draws at each of :data:`CURVE_SIZES` (``b~`` and ``c~`` drawn from the
population values and their noise), and its sizes are read from that curve
(log-linear between the sizes). The closed form beside them:
``lambda_min(n Sigma)`` against twice the noise's standard deviation on a direction
plus the spread of the noise's spectrum (``2 s_o sqrt(p)`` for off-diagonal standard
deviation ``s_o``, a Wigner matrix's edge), ``n ~ (2 s + 2 s_o sqrt(p)) /
lambda_min(Sigma)``.

Validation against the coverage grid (``results/inference.json``): at each cell's
``n``, the simulated refusal rate of the identification rule (the rule itself on
``n Sigma + E``), and of the fit's further refusals, estimated on a sample of the
accepted draws: least squares' residual rule and the parametric bootstrap's (fewer than one kept draw in a hundred
of a batch of ``BOOTSTRAP_DRAWS`` draws of the world fitted to the release; the fit
draws up to ten batches).

The trade-off of a larger information share: the refusal sizes at the logistic
information's share 0.2 and 0.3 (the objective perturbation keeps the rest), and for
least squares at a Gram share of 0.6 or 0.7 (the moment keeps the rest of 0.9; 0.45
each ship) or a residual share of 0.2 or 0.3 (0.1 ships), with the first-order
standard errors of the coefficients (sampling and noise at the population values,
the noise's exact covariances; none where the estimator would refuse that
release) against the shipped shares' at ``se_sizes``.

Run ``python -m benchmarks.bench_refusal [--quick]`` from the repo root; writes
``results/refusal.json`` (``refusal_quick.json``) and its PNG. Seconds to minutes; BLAS
is limited to one thread.
"""

import argparse
import dataclasses
import itertools
import json
import warnings

import numpy as np
from scipy.special import expit
from threadpoolctl import threadpool_limits

from skdp import InferenceError
from skdp.linear_model._objective_perturbation import _calibration_at, auto_C
from skdp.losses import LogisticLoss
from skdp.mechanisms._approximate_minima import solver_cover
from skdp.mechanisms._glm_inference import (INFORMATION_SHARE, glm_inference,
                                            information_calibration)
from skdp.mechanisms._noise import sample_noise_draws
from skdp.mechanisms._sufficient_statistics import (BOOTSTRAP_BATCHES, BOOTSTRAP_DRAWS,
                                                    MIN_ACCEPTED_DRAWS,
                                                    gram_noise_variances, least_squares_inference,
                                                    quadratic_form_sd, release_shares,
                                                    singular_within_noise, ssp_calibration,
                                                    ssp_sensitivities, symmetric_noise_draws)
from skdp.utils.validation import effective_data_norm

from ._common import RESULTS_DIR, environment, write_results
from .bench_inference import PARAMS as GRID, coverage_interval, population

NAME = "refusal"
SSP_SHARES = {k: v for k, v in release_shares(False, True).items() if k != "eigenvalue"}
"""Least squares' shipped shares with ``inference=True``."""
DATA_NORM, Y_BOUND, NOISE_SD, INTERCEPT_SCALING = 1.0, 4.0, 0.5, 1.0
PARAMS = {"estimators": ["linear", "logistic"], "dims": [5, 20], "epsilons": [0.3, 1.0, 3.0],
          "deltas": [0.0, 1e-6], "seed": 0, "information_rows": 400_000,
          "validation_releases": 1000, "world_releases": 30,
          "shares": {"logistic": [INFORMATION_SHARE, 0.2, 0.3],
                     "linear": [SSP_SHARES, {"gram": 0.6, "moment": 0.3, "residual": 0.1},
                                {"gram": 0.7, "moment": 0.2, "residual": 0.1},
                                {"gram": 0.4, "moment": 0.4, "residual": 0.2},
                                {"gram": 0.35, "moment": 0.35, "residual": 0.3}]},
          "se_sizes": [20_000, 200_000]}
QUICK = {"dims": [5], "epsilons": [1.0], "information_rows": 50_000,
         "validation_releases": 20, "world_releases": 5}
LEVELS = (0.05, 0.5)
CURVE_SIZES = np.geomspace(250, 2.5e7, 101)
"""The sizes at which the JSON records the refusal probability (for the figure)."""


def population_matrix(kind, d, rows, seed):
    """``Sigma`` per row in the estimators' augmented coordinates (the features, then
    the intercept column): the Gram matrix (least squares, exact) or the logistic
    information at the population parameter (Monte Carlo over ``rows`` rows)."""
    if kind == "linear":
        return np.diag(np.r_[np.full(d, 1.0 / (3.0 * d)), INTERCEPT_SCALING**2])
    rng = np.random.default_rng(seed)
    Z = np.c_[rng.uniform(-1, 1, (rows, d)) / np.sqrt(d), np.full(rows, INTERCEPT_SCALING)]
    curvature = expit(Z @ augmented_parameter(d)) * expit(-(Z @ augmented_parameter(d)))
    return (Z * curvature[:, None]).T @ Z / rows


def augmented_parameter(d):
    """``theta*`` in the augmented coordinates (the intercept last)."""
    theta = population(d)
    return np.r_[theta[1:], theta[0] / INTERCEPT_SCALING]


def calibration(kind, d, epsilon, delta, share=None):
    """The noise of the releases as the estimator calibrates them, their shares of the
    budget ``share`` (the shipped ones by default): least squares, a dict of the Gram
    matrix's, the moment's and the residual sum's; logistic, the information's."""
    if kind == "logistic":
        share = INFORMATION_SHARE if share is None else share
        return information_calibration(epsilon * share, delta * share,
                                       smoothness=LogisticLoss.smoothness,
                                       data_norm=DATA_NORM,
                                       intercept_scaling=INTERCEPT_SCALING, n_features=d,
                                       neighboring="add_remove")
    law = "gaussian" if delta > 0 else "laplace"
    sensitivities = ssp_sensitivities(law=law, data_norm=DATA_NORM,
                                      intercept_scaling=INTERCEPT_SCALING, n_features=d,
                                      y_bound=Y_BOUND, weight_bound=1.0,
                                      neighboring="add_remove")
    shipped = ssp_calibration(epsilon, delta, sensitivities, private_ridge=False,
                              inference=True)
    if share is None:
        return shipped
    # scale ~ 1 / share (Laplace, of epsilon) or 1 / sqrt(share) (Gaussian, of mu^2)
    power = 0.5 if law == "gaussian" else 1.0
    return dataclasses.replace(shipped, **{
        name: shipped.scale(name) * (SSP_SHARES[name] / share[name]) ** power
        for name in SSP_SHARES})


def thresholds(sigma, noise, calibration):
    """Per noise draw, the largest ``n`` at which ``n Sigma + E`` is refused:
    ``lambda_max(Sigma^{-1/2} (2 s I - E) Sigma^{-1/2})`` (0 when never refused)."""
    values, vectors = np.linalg.eigh(sigma)
    root = vectors / np.sqrt(values)          # Sigma^{-1/2} up to a rotation
    floor = 2.0 * quadratic_form_sd(calibration) * np.eye(sigma.shape[0])
    largest = np.linalg.eigvalsh(root.T @ (floor - noise) @ root)[:, -1]
    return np.maximum(largest, 0.0)


def closed_form(sigma, calibration):
    """``(2 s + 2 s_o sqrt(p)) / lambda_min(Sigma)``, ``s_o`` the off-diagonal
    standard deviation of the noise (Gaussian ``sigma / sqrt(2)``, Laplace ``sqrt(2)
    b``)."""
    p = sigma.shape[0]
    off = calibration.gram * (np.sqrt(0.5) if calibration.law == "gaussian" else np.sqrt(2.0))
    return (2.0 * quadratic_form_sd(calibration) + 2.0 * off * np.sqrt(p)) / np.linalg.eigvalsh(
        sigma)[0]


def residual_refused(kind, sigma, n, noisy_grams, calibration, rng):
    """Least squares: whether the noisy residual sum of squares or its degrees of
    freedom are not positive, for the releases ``noisy_grams`` (their ``b~`` and
    ``c~`` drawn from the population values and the noise's law); never for
    logistic regression."""
    if kind != "linear":
        return np.zeros(len(noisy_grams), dtype=bool)
    theta = augmented_parameter(sigma.shape[0] - 1)
    dim, draws = theta.size, len(noisy_grams)
    moments = (n * sigma @ theta
               + sample_noise_draws(calibration.law, draws, dim, calibration.moment, rng))
    sums = (n * (theta @ sigma @ theta + NOISE_SD**2)
            + sample_noise_draws(calibration.law, draws, 1, calibration.residual, rng)[:, 0])
    fitted = np.linalg.solve(noisy_grams, moments[..., None])[..., 0]
    df = noisy_grams[:, -1, -1] / INTERCEPT_SCALING**2 - dim
    return ~((df > 0) & (sums - np.einsum("ij,ij->i", fitted, moments) > 0))


def world_refused(noisy_gram, calibration, rng):
    """Whether the bootstrap's world fitted to the release accepts fewer than one draw
    in :data:`BOOTSTRAP_BATCHES` times :data:`BOOTSTRAP_DRAWS` / ``MIN_ACCEPTED_DRAWS``
    (estimated on one batch)."""
    dim = noisy_gram.shape[0]
    accepted = ~singular_within_noise(noisy_gram + symmetric_noise_draws(calibration, dim, rng),
                                      calibration)
    return accepted.mean() < MIN_ACCEPTED_DRAWS / (BOOTSTRAP_BATCHES * BOOTSTRAP_DRAWS)


def validate_cell(kind, sigma, n, noise, calibration, params, rng):
    """Simulated refusal rates at ``n``: the identification rule on every draw, then
    among the accepted ones the residual refusal (on up to ``validation_releases``)
    and the bootstrap's (on up to ``world_releases``)."""
    grams = n * sigma + noise
    refused = singular_within_noise(grams, calibration)
    accepted = np.flatnonzero(~refused)
    rate = float(refused.mean())
    residual = world = 0.0
    if accepted.size:
        residual = float(np.mean(residual_refused(
            kind, sigma, n, grams[accepted[:params["validation_releases"]]], calibration, rng)))
        world = float(np.mean([world_refused(grams[i], calibration, rng)
                               for i in accepted[:params["world_releases"]]]))
    further = 1.0 - (1.0 - residual) * (1.0 - world)
    return {"identification": rate, "residual_given_accepted": residual,
            "bootstrap_given_accepted": world, "total": rate + (1.0 - rate) * further}


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


def objective_mechanism(d, epsilon, delta):
    """``C``, the total ridge and the noises of :class:`~skdp.ObjPertLogisticRegression`
    at its mechanism's ``(epsilon, delta)`` (its defaults: ``C="auto"``, ``tol=1e-8``),
    as its fit calibrates them."""
    loss = LogisticLoss()
    row_norm = effective_data_norm(DATA_NORM, True, INTERCEPT_SCALING)
    C = auto_C(loss, epsilon=epsilon, neighboring="add_remove", row_norm=row_norm,
               pure=delta == 0)[0]
    budget, noise = _calibration_at(epsilon, delta, loss.bounds(row_norm), C, ridge=1.0,
                                    neighboring="add_remove", delta_rule="continuous",
                                    eps_jacobian_frac=0.5, n_coef=d + 1)
    ridge = 1.0 + noise.extra_ridge
    return dict(C=C, ridge=ridge, objective_noise=(noise.noise, noise.noise_scale),
                output_noise=("gamma_norm", solver_cover(1e-8, ridge, budget.epsilon_cover).scale))


def standard_errors(kind, sigma, n, epsilon, delta, share):
    """The first-order standard errors of the coefficients (sampling and noise) at the
    population values with the budget split at ``share``; ``None`` when the
    population matrix itself would be refused."""
    d = sigma.shape[0] - 1
    theta = augmented_parameter(d)
    noise = calibration(kind, d, epsilon, delta, share)
    matrix = n * sigma
    mechanism = (None if kind == "linear" else
                 objective_mechanism(d, epsilon * (1 - share), delta * (1 - share)))
    try:   # the estimators' own refusal of the population's release (rule and bootstrap)
        if kind == "linear":
            least_squares_inference(matrix, matrix @ theta,
                                    n * (theta @ sigma @ theta + NOISE_SD**2), noise,
                                    INTERCEPT_SCALING)
        else:
            glm_inference(theta, matrix, calibration=noise, **mechanism)
    except InferenceError:
        return None
    inverse = np.linalg.inv(matrix)
    if kind == "linear":
        middle = (NOISE_SD**2 * matrix + noise.variance("moment") * np.eye(d + 1)
                  + symmetric_noise_covariance(noise, theta))
    else:
        C, ridge = mechanism["C"], mechanism["ridge"]
        penalised = np.linalg.solve(np.eye(d + 1) + ridge / C * inverse, theta)
        middle = (matrix + vector_noise_variance(*mechanism["objective_noise"], d + 1)
                  / C**2 * np.eye(d + 1)
                  + (ridge / C) ** 2 * symmetric_noise_covariance(noise, inverse @ penalised))
    return np.sqrt(np.diag(inverse @ middle @ inverse))


def refusal_curve(kind, sigma, noise, calibration, releases, rng):
    """The refusal probability at each of :data:`CURVE_SIZES`: the identification
    rule's from the thresholds of the draws ``noise``, and for least squares also the
    residual refusal, estimated on up to ``releases`` accepted draws per size."""
    limits = thresholds(sigma, noise, calibration)
    refused = np.mean(limits[:, None] >= CURVE_SIZES, axis=0)
    if kind != "linear":
        return refused
    curve = refused.copy()
    for k, n in enumerate(CURVE_SIZES):
        accepted = np.flatnonzero(limits < n)[:releases]
        if accepted.size:
            residual = residual_refused(kind, sigma, n, n * sigma + noise[accepted],
                                        calibration, rng)
            curve[k] += (1.0 - refused[k]) * residual.mean()
    return curve


def sizes_below(curve):
    """Per level of :data:`LEVELS`, the smallest ``n`` whose refusal probability is
    below it (log-linear between the sizes of :data:`CURVE_SIZES`; ``None`` beyond
    them)."""
    sizes = {}
    for level in LEVELS:
        below = np.flatnonzero(curve < level)
        if not below.size:
            sizes[f"{level:g}"] = None
            continue
        k = below[0]
        if k == 0:
            sizes[f"{level:g}"] = float(CURVE_SIZES[0])
            continue
        low, high = curve[k - 1], curve[k]
        weight = (low - level) / (low - high)
        sizes[f"{level:g}"] = float(np.exp(np.log(CURVE_SIZES[k - 1])
                                           + weight * np.log(CURVE_SIZES[k] / CURVE_SIZES[k - 1])))
    return sizes


def run_setting(kind, d, epsilon, delta, sigma, params, grid_cells, rng):
    """Thresholds, closed form, share trade-off and validation of one setting."""
    shipped = calibration(kind, d, epsilon, delta)
    dim = d + 1
    noise = symmetric_noise_draws(shipped, dim, rng)
    draws = thresholds(sigma, noise, shipped)
    curve = refusal_curve(kind, sigma, noise, shipped, params["validation_releases"], rng)
    result = {"estimator": kind, "d": d, "epsilon": epsilon, "delta": delta,
              "noise_law": shipped.law, "noise_scale": shipped.gram,
              "quadratic_form_sd": quadratic_form_sd(shipped),
              "lambda_min_sigma": float(np.linalg.eigvalsh(sigma)[0]),
              "n_refused_below": sizes_below(curve),
              "identification_n_refused_below": {
                  f"{level:g}": float(np.quantile(draws, 1.0 - level)) for level in LEVELS},
              "closed_form_n": float(closed_form(sigma, shipped)), "curve": curve,
              "shares": []}
    base = None
    for share in params["shares"][kind]:
        scaled = calibration(kind, d, epsilon, delta, share)
        errors = {f"{n}": standard_errors(kind, sigma, n, epsilon, delta, share)
                  for n in params["se_sizes"]}
        base = base or errors
        result["shares"].append({
            "share": share, "noise_scale": scaled.gram,
            "n_refused_below": sizes_below(refusal_curve(
                kind, sigma, symmetric_noise_draws(scaled, dim, rng), scaled,
                params["validation_releases"], rng)),
            "se_ratio": {n: None if e is None or base[n] is None
                         else float(np.median(e / base[n])) for n, e in errors.items()}})
    result["validation"] = []
    for cell in grid_cells:
        simulated = validate_cell(kind, sigma, cell["n"], noise, shipped, params, rng)
        result["validation"].append({
            "n": cell["n"], "measured": cell["refusal_rate"], "draws": cell["draws"],
            "measured_ci": coverage_interval(cell["refused"], cell["draws"]),
            "from_thresholds": float(np.mean(draws >= cell["n"])), **simulated})
    return result


def plot(payload, path):
    """Per estimator and d: the refusal probability against n (one line per epsilon and
    delta) with the grid's measured rates as markers."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    settings = payload["settings"]
    panels = sorted({(s["estimator"], s["d"]) for s in settings})
    fig, axes = plt.subplots(1, len(panels), figsize=(3.6 * len(panels), 3.4), squeeze=False,
                             sharey=True)
    for ax, (kind, d) in zip(axes[0], panels):
        for k, s in enumerate(x for x in settings if (x["estimator"], x["d"]) == (kind, d)):
            style = "-" if s["delta"] > 0 else "--"
            ax.plot(payload["params"]["curve_sizes"], s["curve"], style, color=f"C{k // 2}", lw=1,
                    label=f"eps {s['epsilon']:g}, delta {s['delta']:g}")
            ax.plot([v["n"] for v in s["validation"]], [v["measured"] for v in s["validation"]],
                    "o" if s["delta"] > 0 else "s", color=f"C{k // 2}", ms=3, mfc="none")
        ax.set_xscale("log")
        ax.set_xlabel("n")
        ax.set_title(f"{kind}, d = {d}", fontsize=8)
    axes[0][0].set_ylabel("P(intervals refused)")
    axes[0][0].legend(fontsize=5)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def grid_cells(kind, d, epsilon, delta):
    """The coverage grid's measured cells of one setting (none if not run)."""
    path = RESULTS_DIR / "inference.json"
    if not path.exists():
        return []
    return [c for c in json.loads(path.read_text())["cells"]
            if (c["estimator"], c["d"], c["epsilon"], c["delta"]) == (kind, d, epsilon, delta)]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    params = {**PARAMS, **(QUICK if args.quick else {})}
    warnings.simplefilter("ignore")
    rng = np.random.default_rng(params["seed"])
    settings = []
    with threadpool_limits(1):
        for kind, d in itertools.product(params["estimators"], params["dims"]):
            sigma = population_matrix(kind, d, params["information_rows"], params["seed"])
            for epsilon, delta in itertools.product(params["epsilons"], params["deltas"]):
                setting = run_setting(kind, d, epsilon, delta, sigma, params,
                                      grid_cells(kind, d, epsilon, delta), rng)
                print({k: v for k, v in setting.items() if k not in ("validation", "curve")},
                      flush=True)
                settings.append(setting)
    name = f"{NAME}_quick" if args.quick else NAME
    payload = {"params": {**params, "draws": BOOTSTRAP_DRAWS, "grid_sizes": GRID["sizes"],
                          "curve_sizes": CURVE_SIZES},
               "settings": settings}
    path = write_results(name, payload)
    plot(json.loads(path.read_text()), path.with_suffix(".png"))
    print(f"wrote {path}; environment {environment()['git_sha']}")


if __name__ == "__main__":
    main()
