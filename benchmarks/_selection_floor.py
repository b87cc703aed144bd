"""The least median ratio (realised epsilon over the oracle epsilon) a noise-reduction
selection can reach, given the oracle's utility curve: ``docs/privacy/private_selection.rst``,
"What a noise-reduction selection can reach".

Setting: rungs are releases of one noise path at epsilons ``e_k = r e_{k-1}``, so the
rungs alone cost the last one; each is tested by a noisy sum of per-row utilities in
[0, 1] whose budget is ``tau`` times the rung's increment ``e_k (1 - 1 / r)``; the
oracle ``e*`` is the smallest epsilon at which one fit on all ``n`` rows meets the
target ``t`` on average (``U(e*) = t`` on the oracle's mean utility curve ``U``).

Three factors no ladder escapes, each a lower bound on its own:

1. **The account.** Pure (Laplace) rungs cost their epsilon ex post; Gaussian rungs
   are claimed through an odometer whose ``J`` levels share ``delta``: the claim at
   the oracle's ``mu`` is ``gaussian_epsilon(delta / J, mu*)``, above ``e* =
   gaussian_epsilon(delta, mu*)`` by the factor ``O`` (:func:`odometer_factor`).
2. **The rows.** On a held-out part of share ``v``, the rungs train on ``(1 - v) n``
   rows; SSP's noise is fixed in the statistics' units, so its effect scales as ``1 /
   (n epsilon)`` and the training part needs ``e* / (1 - v)``. On all the rows the
   tests join the rungs' account: ``(1 + tau) e`` (pure) or ``sqrt(1 + tau^2) mu``
   (Gaussian) plus the count.
3. **The tests.** A rung's test on ``m`` rows with budget ``b`` has noise of standard
   deviation ``s = sqrt(2) / (b m)`` in mean utility (Laplace; ``1 / (mu_t m)`` for a
   Gaussian test at ``mu_t``), with ``b = tau max(e (1 - 1 / r), B)``: the selection
   steps by at least the increment ``B / tau`` that buys a test noise of half the
   tolerance, and its first rung is at least that. A release must clear ``t +
   margin`` with the selection's margin (one standard deviation of the test's error:
   ``hypot(s, sqrt(t (1 - t) / m))``), so the passing rung sits where the training
   part's curve reaches ``t + margin(e)``, and ``s`` shrinks only as the increment
   grows.

:func:`selection_floor` returns the ratio of the first factor times the second
(``structural``: exact tests, a lower bound on any ladder's median ratio on the route)
and the ratio at the smallest epsilon whose mean training curve clears the margin
(``with_tests``: an estimate, not a bound). The estimate counts neither the ladder's
overshoot (the first rung at or above that epsilon lies up to ``r``, or one additive
step, above it: about ``sqrt(r)`` in median for an oracle placed at random on the
ladder) nor the tests that pass by chance before the curve clears the threshold, which
lower the realised ratio at the cost of releases below the target.
"""

import numpy as np

from skdp.accounting import gaussian_epsilon, gdp_mu
from skdp.accounting._odometers import GaussianDPOdometer


def odometer_factor(epsilon, delta, epsilon_max, epsilon_start):
    """``O``: the Gaussian odometer's ex-post claim at a rung's ``mu`` over the rung's
    own epsilon (1 for pure rungs, ``delta = 0``)."""
    if delta == 0:
        return 1.0
    odometer = GaussianDPOdometer(epsilon_max, delta, delta, epsilon_start, reduction=True)
    return float(gaussian_epsilon(odometer.level_delta, gdp_mu(epsilon, delta)) / epsilon)


def selection_floor(curve_epsilons, curve_utilities, target, oracle, *, n, delta, route,
                    epsilon_max, epsilon_start, count, tolerance=0.05, test_ratio=1.0,
                    validation_fraction=0.2, ratio=1.2):
    """The least median ratio of a noise-reduction selection, and an estimate with its tests.

    Parameters
    ----------
    curve_epsilons, curve_utilities : array-like
        The oracle's mean utility curve (one fit on all the rows, averaged over seeds),
        increasing in epsilon.
    target : float
        The target utility.
    oracle : float
        The oracle epsilon.
    n : int
        The rows.
    delta : float
        The rungs' delta (0: pure, Laplace).
    route : {"held_out", "all"}
        Where the tests read.
    epsilon_max, epsilon_start : float
        The selection's cap and first rung (they fix the odometer's levels).
    count : float
        The count's budget (epsilon, or ``mu`` for Gaussian tests on all the rows).
    tolerance, test_ratio, validation_fraction, ratio : float
        The selection's parameters (the smallest test budget keeps the test's noise
        below half the tolerance).

    Returns
    -------
    floor : dict
        ``structural`` (exact tests: a lower bound) and ``with_tests`` (where the mean
        curve clears the margin: an estimate).
    """
    held_out = route == "held_out"
    share = 1.0 - validation_fraction if held_out else 1.0
    m = validation_fraction * n if held_out else n
    gaussian_tests = delta > 0 and not held_out
    sampling = np.sqrt(target * (1 - target) / m)
    log_e = np.log(np.asarray(curve_epsilons, dtype=float))

    def utility(e):  # the training part's curve, by n epsilon scaling
        return np.interp(np.log(e * share), log_e, curve_utilities)

    # a rung's increment: a factor r on the ladder, and at least what buys a test
    # noise of half the tolerance (the selection's smallest budget; the first rung
    # pays in full, so it is at least that increment too)
    smallest = 1.0 / (test_ratio * m * tolerance / 2)
    if not gaussian_tests:
        smallest *= np.sqrt(2.0)

    def test_sd(e):
        if gaussian_tests:
            increment = max(gdp_mu(e, delta) * np.sqrt(1 - ratio**-2), smallest)
            return 1.0 / (test_ratio * increment * m)
        return np.sqrt(2.0) / (test_ratio * max(e * (1 - 1 / ratio), smallest) * m)

    def claim(mu):  # the Gaussian odometer's ex-post epsilon at a realised mu
        return odometer_factor(gaussian_epsilon(delta, mu), delta, epsilon_max,
                               epsilon_start) * gaussian_epsilon(delta, mu)

    def cost(e):
        if held_out:  # the parts in parallel; the Laplace tests repay the count
            return max(claim(gdp_mu(e, delta)) if delta > 0 else e,
                       max(count, test_ratio * e))
        if gaussian_tests:
            return claim(np.sqrt((1 + test_ratio**2) * gdp_mu(e, delta) ** 2 + count**2))
        return (1 + test_ratio) * e + count

    structural = cost(oracle / share) / oracle
    grid = oracle * np.geomspace(0.5, 20.0, 2000)
    first = (gaussian_epsilon(delta, smallest) if gaussian_tests else smallest)
    clear = [e for e in grid if e >= first
             and utility(e) >= target + np.hypot(test_sd(e), sampling)]
    with_tests = cost(clear[0]) / oracle if clear else np.inf
    return {"structural": float(structural), "with_tests": float(max(with_tests, structural))}
