"""Exact one-dimensional privacy audits of the NAPP mechanisms (``spec/napp_erm.md`` Appendix A).

Setting: logistic loss ``l(eta; y) = log(1 + exp(eta)) - y eta`` with ``y`` in
{0, 1}, one coefficient, records ``(x, y)`` with ``|x| <= 1`` and add/remove
neighbours ``D = D' + {record}``. Each mechanism is a deterministic map from
the noise ``b`` to the output, so its output law is computed exactly on a fine
quadrature grid of ``b`` (weights proportional to the noise density), for
``D`` and ``D'``. Binning the outputs (post-processing) and summing
``max(0, P_D - exp(eps) P_D')`` over bins, in both directions, gives a lower
bound ``delta_hat(eps)`` on the ``delta`` of the mechanism at ``eps`` (up to
quadrature error). A mechanism that is ``eps``-DP must show ``delta_hat ~ 0``.

A record may carry a weight as a third entry, ``(x, y, w)`` (the loss ``w l``): a
person's rows with the weights ``min(1, M / k)`` of ``groups``, so that ``D`` and ``D'``
can differ by all the rows of one person.
"""

import numpy as np
from scipy.special import expit

from ..mechanisms._napp import MAX_JACOBIAN_EPSILON


def laplace_grid(scale, n_points=60_000, width=30.0):
    """Quadrature grid of ``b`` over ``+-width`` scales (even size: no exact ``b = 0``)."""
    grid = np.linspace(-width * scale, width * scale, n_points)
    weights = np.exp(-np.abs(grid) / scale)
    return grid, weights / weights.sum()


def gaussian_grid(sigma, n_points=60_000, width=12.0):
    """Quadrature grid of a centred Gaussian ``b``."""
    grid = np.linspace(-width * sigma, width * sigma, n_points)
    weights = np.exp(-0.5 * (grid / sigma) ** 2)
    return grid, weights / weights.sum()


def exponential_grid(mean, n_points=60_000, width=40.0):
    """Quadrature grid of the half-Laplace (exponential) noise of NAPP-VS+."""
    step = width * mean / n_points
    grid = (np.arange(n_points) + 0.5) * step
    weights = np.exp(-grid / mean)
    return grid, weights / weights.sum()


def _weighted(records):
    """``(x, y, w)`` for each record, ``w = 1`` when a record has no weight."""
    return [(r[0], r[1], r[2] if len(r) > 2 else 1.0) for r in records]


def loss_derivative(theta, records):
    """``sum_i w_i (sigmoid(x_i theta) - y_i) x_i`` for each entry of ``theta``."""
    total = np.zeros_like(theta)
    for x, y, w in _weighted(records):
        total += w * (expit(x * theta) - y) * x
    return total


def _loss_curvature(theta, records):
    total = np.zeros_like(theta)
    for x, _, w in _weighted(records):
        p = expit(x * theta)
        total += w * p * (1.0 - p) * x * x
    return total


def solve_increasing(offset, slope, records, lo, hi, start=None, n_steps=200):
    """Root of ``L'(theta) + offset + slope * theta`` (increasing) in ``[lo, hi]``, elementwise.

    Safeguarded Newton: a Newton step that leaves the bracket is replaced by
    bisection; stops when every step is below ``1e-14`` relative.
    """
    lo = np.broadcast_to(np.asarray(lo, dtype=float), offset.shape).copy()
    hi = np.broadcast_to(np.asarray(hi, dtype=float), offset.shape).copy()
    theta = 0.5 * (lo + hi) if start is None else np.clip(start, lo, hi)
    for _ in range(n_steps):
        value = loss_derivative(theta, records) + offset + slope * theta
        lo = np.where(value < 0, theta, lo)
        hi = np.where(value > 0, theta, hi)
        step = value / (_loss_curvature(theta, records) + slope)
        new = theta - step
        outside = (new <= lo) | (new >= hi)
        new = np.where(outside, 0.5 * (lo + hi), new)
        done = np.max(np.abs(new - theta) / (1.0 + np.abs(theta)))
        theta = np.where(value == 0, theta, new)
        if done < 1e-14:
            break
    return theta


def _bracket(b, records, lam, curvature):
    total = sum(max(1.0, w) for _, _, w in _weighted(records))
    return (np.max(np.abs(b)) + total + lam) / curvature + 1.0


def kifer_lasso_1d(b, records, lam, curvature):
    """Exact minimiser of ``sum l + b theta + lam |theta| + curvature/2 theta^2`` (Estimator A)."""
    b = np.asarray(b, dtype=float)
    g0 = loss_derivative(np.zeros_like(b), records) + b
    m = _bracket(b, records, lam, curvature)
    theta = np.zeros_like(b)
    pos, neg = g0 < -lam, g0 > lam
    if np.any(pos):
        theta[pos] = solve_increasing(b[pos] + lam, curvature, records, 0.0, m)
    if np.any(neg):
        theta[neg] = solve_increasing(b[neg] - lam, curvature, records, -m, 0.0)
    return theta


def lqa_iteration_1d(b, records, lam, curvature, *, moor, n_iter=60):
    """The NAPP fixed-point iteration in the ``n_aug -> infinity`` limit.

    ``theta <- argmin sum l + b theta + 1/2 w theta^2`` with ``w = curvature +
    lam / |theta_prev|`` (Claim 2) or ``max(curvature, lam / |theta_prev|)``
    (MOOR); start ``lam + curvature`` or ``max(lam, curvature)``; ``|theta| < 1e-8``
    is set to 0 at the end.
    """
    b = np.asarray(b, dtype=float)
    w = np.full_like(b, max(lam, curvature) if moor else lam + curvature)
    m = _bracket(b, records, lam, curvature)
    theta = None
    for _ in range(n_iter):
        theta = solve_increasing(b, w, records, -m, m, start=theta)
        u = lam / np.maximum(np.abs(theta), 1e-300)
        w = np.maximum(curvature, u) if moor else curvature + u
        w = np.minimum(w, 1e300)
    return np.where(np.abs(theta) < 1e-8, 0.0, theta)


def vs_plus_1d(b, records, curvature):
    """Exact minimiser of ``sum l + b |theta| + curvature/2 theta^2`` with ``b >= 0`` (VS+)."""
    return _weighted_lasso_1d(b, records, curvature)


def _weighted_lasso_1d(weights, records, curvature):
    weights = np.asarray(weights, dtype=float)
    g0 = loss_derivative(np.zeros_like(weights), records)
    m = _bracket(weights, records, 0.0, curvature)
    theta = np.zeros_like(weights)
    pos, neg = g0 < -weights, g0 > weights
    if np.any(pos):
        theta[pos] = solve_increasing(weights[pos], curvature, records, 0.0, m)
    if np.any(neg):
        theta[neg] = solve_increasing(-weights[neg], curvature, records, -m, 0.0)
    return theta


def hockey_stick(out_d, out_dp, weights, epsilons, *, n_bins=4000):
    """Binned lower bound on ``delta(eps)`` from two exact output laws.

    Outputs equal to 0 form their own atom; the rest is binned on a common
    grid. Returns an array, one ``delta_hat`` per epsilon (maximum of both
    directions).
    """
    epsilons = np.atleast_1d(np.asarray(epsilons, dtype=float))
    both = np.concatenate([out_d, out_dp])
    nonzero = both[both != 0]
    if len(nonzero):
        edges = np.linspace(nonzero.min(), nonzero.max(), n_bins + 1)
        edges[-1] = np.nextafter(edges[-1], np.inf)
    else:
        edges = np.array([-1.0, 1.0])

    def law(out):
        mass = np.histogram(out[out != 0], bins=edges, weights=weights[out != 0])[0]
        return np.concatenate([[weights[out == 0].sum()], mass])

    p, q = law(out_d), law(out_dp)
    return np.array([max(np.maximum(0, p - np.exp(e) * q).sum(),
                         np.maximum(0, q - np.exp(e) * p).sum()) for e in epsilons])


def hockey_stick_2d(out_d, out_dp, weights, epsilons, *, n_bins=300):
    """:func:`hockey_stick` for two-dimensional outputs (two-stage releases), zeros as atoms."""
    epsilons = np.atleast_1d(np.asarray(epsilons, dtype=float))

    def edges(column):
        values = column[column != 0]
        if not len(values):
            return np.array([-1.0, 1.0])
        e = np.linspace(values.min(), values.max(), n_bins + 1)
        e[-1] = np.nextafter(e[-1], np.inf)
        return e

    both = np.vstack([out_d, out_dp])
    e0, e1 = edges(both[:, 0]), edges(both[:, 1])

    def index(column, e):
        i = np.clip(np.searchsorted(e, column, side="right"), 1, len(e) - 1)
        return np.where(column == 0, 0, i)

    def law(out):
        i, j = index(out[:, 0], e0), index(out[:, 1], e1)
        flat = i * (len(e1) + 1) + j
        return np.bincount(flat, weights=weights, minlength=(len(e0) + 1) * (len(e1) + 1))

    p, q = law(out_d), law(out_dp)
    return np.array([max(np.maximum(0, p - np.exp(e) * q).sum(),
                         np.maximum(0, q - np.exp(e) * p).sum()) for e in epsilons])


def audit(mechanism, d_records, dp_records, grid, weights, epsilons, **kwargs):
    """``delta_hat(eps)`` of ``mechanism(b, records)`` between ``D`` and ``D'``."""
    return hockey_stick(mechanism(grid, d_records), mechanism(grid, dp_records), weights,
                        epsilons, **kwargs)


def two_stage_1d(b1, u2, records, lam, *, epsilon, stage1_frac=0.3, eps_jacobian_frac=0.5,
                 gradient_bound=1.0, hessian_bound=0.25):
    """The two-stage estimator of spec 7.3 in one dimension, for every pair ``(b1, u2)``.

    ``b1`` is the stage-1 noise; ``u2`` the standard (unit-scale) stage-2 noise,
    rescaled by the stage-2 scale that the retrieval computes from stage 1's
    output. Returns outputs of shape ``(len(b1) * len(u2), 2)``.
    """
    eps1 = stage1_frac * epsilon
    eps2 = epsilon - eps1
    curvature1 = hessian_bound / np.expm1(min(eps_jacobian_frac * eps1, MAX_JACOBIAN_EPSILON))
    theta1 = kifer_lasso_1d(b1, records, lam, curvature1)
    floor = hessian_bound / np.expm1(min(eps_jacobian_frac * eps2, MAX_JACOBIAN_EPSILON))
    w = np.maximum(floor, lam / np.maximum(np.abs(theta1), 1e-300))
    eps_j_star = np.log1p(hessian_bound / w)
    scale2 = gradient_bound / (eps2 - eps_j_star)
    t1 = np.repeat(theta1, len(u2))
    b2 = np.repeat(scale2, len(u2)) * np.tile(u2, len(b1))
    ww = np.repeat(w, len(u2))
    m = (np.max(np.abs(b2)) + len(records)) / floor + 1.0
    theta2 = solve_increasing(b2, ww, records, -m, m)
    theta2 = np.where(t1 == 0, 0.0, theta2)
    return np.column_stack([t1, theta2])
