"""The coverage goal of issue 46 as a statistical test (stdlib only, exact binomials).

A cell of the coverage grid keeps ``kept`` fits (those not refused); each coefficient's
nominal 95 % interval covers the true value in ``hits`` of them. Two criteria:

* the literal goal: the coefficient's estimated coverage ``hits / kept`` is in
  ``[0.93, 0.97]``; the cell passes when at least 90 % of its coefficients do. It is a
  Monte Carlo event: an exact interval fails it by chance (:func:`cell_pass_probability`
  of :func:`literal_pass` at coverage 0.95 is its floor);
* the re-scoped goal: the coefficient passes when its 99 % Clopper-Pearson interval of
  coverage meets ``[0.93, 0.97]`` (its coverage is not significantly outside the band);
  the cell passes when at least 90 % of its coefficients do.

The Clopper-Pearson upper bound at level ``1 - a`` is below 0.93 exactly when ``P(X <=
hits) < a / 2`` for ``X ~ Binomial(kept, 0.93)``, and its lower bound is above 0.97
exactly when ``P(X >= hits) < a / 2`` for ``X ~ Binomial(kept, 0.97)`` (the tails are
monotone in the proportion), so the re-scoped test needs binomial tails only. The
probabilities over a cell treat its coefficients as independent (an approximation: the
coefficients of one fit share its noise).
"""

import math

BAND = (0.93, 0.97)
NOMINAL = 0.95
LEVEL = 0.99
CELL_SHARE = 0.9


def binomial_pmf(k, m, p):
    """``P(X = k)`` for ``X ~ Binomial(m, p)`` (in logs: no overflow for large ``m``)."""
    if p in (0.0, 1.0):
        return float(k == (m if p == 1.0 else 0))
    log = (math.lgamma(m + 1) - math.lgamma(k + 1) - math.lgamma(m - k + 1)
           + k * math.log(p) + (m - k) * math.log1p(-p))
    return math.exp(log)


def binomial_tail(k, m, p, upper=False):
    """``P(X <= k)``, or ``P(X >= k)`` with ``upper``, for ``X ~ Binomial(m, p)``."""
    ks = range(k, m + 1) if upper else range(0, k + 1)
    return min(1.0, math.fsum(binomial_pmf(j, m, p) for j in ks))


def literal_pass(hits, kept, band=BAND):
    """Whether the estimated coverage ``hits / kept`` is in ``band``."""
    return kept > 0 and band[0] <= hits / kept <= band[1]


def rescoped_pass(hits, kept, band=BAND, level=LEVEL):
    """Whether the ``level`` Clopper-Pearson interval of the coverage meets ``band``."""
    if kept == 0:
        return False
    half = (1.0 - level) / 2.0
    return (binomial_tail(hits, kept, band[0]) >= half
            and binomial_tail(hits, kept, band[1], upper=True) >= half)


def cell_passes(passes, share=CELL_SHARE):
    """Whether at least ``share`` of a cell's coefficients pass."""
    passes = list(passes)
    return bool(passes) and sum(passes) / len(passes) >= share


def pass_probability(kept, coverage, criterion):
    """The probability that a coefficient of true ``coverage`` passes ``criterion``
    (:func:`literal_pass` or :func:`rescoped_pass`) with ``kept`` draws."""
    return math.fsum(binomial_pmf(k, kept, coverage) for k in range(kept + 1)
                     if criterion(k, kept))


def cell_pass_probability(per_coefficient, n_coefficients, share=CELL_SHARE):
    """The probability that at least ``share`` of ``n_coefficients`` independent
    coefficients pass, each with probability ``per_coefficient``."""
    needed = next(j for j in range(n_coefficients + 1) if j / n_coefficients >= share)
    return binomial_tail(needed, n_coefficients, per_coefficient, upper=True)
