"""Renyi DP of DP-SGD's events, vectorised over the orders (spec ``dp_sgd_and_accounting.md`` 3).

The same orders, series, truncation and conversions as dp-accounting 0.6.0's
``RdpAccountant`` (its values are this module's test oracle), computed with numpy over
all orders at once instead of one Python loop per order and term: a calibration asks
for tens of evaluations, and each takes about a millisecond here.
"""

import math
from functools import lru_cache

import numpy as np
from scipy.special import gammaln, log_ndtr

ORDERS = np.array([1 + x / 10 for x in range(1, 100)] + list(range(11, 64))
                  + [128, 256, 512, 1024], dtype=float)
# a fractional order's series is cut once its terms fall below e^-30 of the sum; one
# that has not after this many terms is left out (its bound is infinite)
_MAX_TERMS = 1000
_TERM_CHUNKS = (32, 64, 128, 256, _MAX_TERMS)


def _log_comb(n, k):
    """``log |C(n, k)|`` for real ``n`` (the generalised binomial, no sign kept: the
    series of fractional orders then bounds ``A_alpha`` from above)."""
    return gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1)


@lru_cache(maxsize=8)
def _integer_terms(orders):
    """For integer orders, the pairs ``(alpha, k)``, ``k = 0..alpha``, laid end to end,
    their ``log C(alpha, k)`` and where each order's run starts."""
    alpha = np.repeat(np.array(orders), np.array(orders, dtype=int) + 1)
    k = np.concatenate([np.arange(int(a) + 1) for a in orders]).astype(float)
    starts = np.concatenate([[0], np.cumsum(np.array(orders, dtype=int) + 1)[:-1]])
    return alpha, k, _log_comb(alpha, k), starts


@lru_cache(maxsize=8)
def _fractional_comb(orders):
    """``log |C(alpha, i)|`` of fractional orders for every term ``i`` a series may use."""
    return _log_comb(np.array(orders)[:, None], np.arange(_MAX_TERMS, dtype=float))


def _log_a_integer(q, z, orders):
    """``log A_alpha`` of integer orders: ``A_alpha = sum_k C(alpha, k) (1 - q)^(alpha - k)
    q^k exp((k^2 - k) / (2 z^2))``, ``k = 0..alpha``."""
    alpha, k, log_comb, starts = _integer_terms(tuple(orders))
    terms = log_comb + k * math.log(q) + (alpha - k) * math.log1p(-q) + (k * k - k) / (2 * z * z)
    return np.logaddexp.reduceat(terms, starts)


def _log_a_fractional_terms(q, z, orders, log_comb):
    """The two series of fractional orders (Mironov, Talwar & Zhang 2019, 3.3), their
    terms ``i = 0 .. n_terms - 1`` (``log_comb`` of shape (orders, terms)):
    ``(log s0, log s1)``, each (orders, terms)."""
    i = np.arange(log_comb.shape[1], dtype=float)
    alpha = orders[:, None]
    j = alpha - i
    z0 = z * z * math.log(1 / q - 1) + 0.5
    log_q, log_1mq = math.log(q), math.log1p(-q)
    # log(erfc(x) / 2) = log_ndtr(-sqrt(2) x)
    log_s0 = (log_comb + i * log_q + j * log_1mq + (i * i - i) / (2 * z * z)
              + log_ndtr(-(i - z0) / z))
    log_s1 = (log_comb + j * log_q + i * log_1mq + (j * j - j) / (2 * z * z)
              + log_ndtr(-(z0 - j) / z))
    return log_s0, log_s1


def _log_a_fractional(q, z, orders):
    """``log A_alpha`` of fractional orders, each series cut at the first term where
    both series decrease and the larger new term is below ``e^-30`` of the running sum
    (dp-accounting's rule); ``inf`` where that does not happen within 1,000 terms."""
    all_comb = _fractional_comb(tuple(orders))
    result = np.full(orders.shape, np.inf)
    pending = np.arange(orders.size)
    for n_terms in _TERM_CHUNKS:
        log_s0, log_s1 = _log_a_fractional_terms(q, z, orders[pending],
                                                 all_comb[pending, :n_terms])
        total = np.logaddexp(np.logaddexp.accumulate(log_s0, axis=1),
                             np.logaddexp.accumulate(log_s1, axis=1))
        stop = np.zeros(log_s0.shape, dtype=bool)
        stop[:, 1:] = ((log_s0[:, 1:] < log_s0[:, :-1]) & (log_s1[:, 1:] < log_s1[:, :-1])
                       & (np.maximum(log_s0[:, 1:], log_s1[:, 1:]) < total[:, 1:] - 30))
        done = stop.any(axis=1)
        first = stop.argmax(axis=1)
        result[pending[done]] = total[done, first[done]]
        pending = pending[~done]
        if pending.size == 0:
            break
    return result


def sampled_gaussian_rdp(q, z, orders=ORDERS):
    """RDP of one Poisson-sampled Gaussian step at each order (add/remove-one).

    Parameters
    ----------
    q : float
        Sampling probability in [0, 1]; ``1`` is the Gaussian mechanism,
        ``alpha / (2 z^2)``.
    z : float
        Noise multiplier (noise standard deviation over the sensitivity).
    orders : ndarray, default=ORDERS
        Orders > 1 (dp-accounting's default grid).

    Returns
    -------
    rdp : ndarray of shape orders.shape
    """
    orders = np.asarray(orders, dtype=float)
    if q == 0:
        return np.zeros(orders.shape)
    if z == 0:
        return np.full(orders.shape, np.inf)
    if q == 1:
        return orders / (2 * z * z)
    integer = orders == np.round(orders)
    log_a = np.empty(orders.shape)
    if integer.any():
        log_a[integer] = _log_a_integer(q, z, orders[integer])
    if not integer.all():
        log_a[~integer] = _log_a_fractional(q, z, orders[~integer])
    return log_a / (orders - 1)


def dpsgd_rdp(noise_multiplier, sample_rate, n_steps, count_noise_std=None):
    """RDP at :data:`ORDERS` of the Gaussian count (if any) and ``T`` sampled steps."""
    rdp = n_steps * sampled_gaussian_rdp(sample_rate, noise_multiplier)
    if count_noise_std is not None:
        rdp = rdp + ORDERS / (2 * count_noise_std**2)
    return rdp


def rdp_to_epsilon(rdp, delta, orders=ORDERS):
    """Smallest epsilon over the orders (Canonne, Kamath & Steinke 2020, Prop. 12),
    with dp-accounting's rules: 0 where the KL bound already gives ``delta``, orders at
    most 1.01 ignored."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        epsilon = rdp + np.log1p(-1 / orders) - np.log(delta * orders) / (orders - 1)
        epsilon = np.where(orders > 1.01, epsilon, np.inf)
        epsilon = np.where(delta**2 + np.expm1(-rdp) > 0, 0.0, epsilon)
    epsilon = np.where(rdp < 0, 0.0, epsilon)
    return max(0.0, float(np.nan_to_num(epsilon, nan=np.inf).min()))


def rdp_to_delta(rdp, epsilon, orders=ORDERS):
    """Smallest delta over the orders (the same proposition), at most 1."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        kl = np.where(rdp > 0, 0.5 * np.log1p(-np.exp(-rdp)), -np.inf)
        bound = (orders - 1) * (rdp - epsilon + np.log1p(-1 / orders)) - np.log(orders)
        log_delta = np.where(orders > 1.01, np.minimum(kl, bound), kl)
    log_delta = np.where(rdp < 0, -np.inf, log_delta)
    return min(math.exp(float(np.nan_to_num(log_delta, nan=np.inf).min())), 1.0)
