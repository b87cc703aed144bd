"""Empirical privacy audits: lower bounds on epsilon from neighbouring runs.

A mechanism is (epsilon, delta)-DP only if, for every event S and neighbouring
inputs a, b, ``P_a(S) <= e^epsilon P_b(S) + delta``. An audit runs the mechanism
many times on a and on b, picks an event S (a threshold on a one-dimensional
statistic, chosen on one half of the runs) and bounds the two probabilities on
the other half with Clopper-Pearson intervals. Then

    epsilon >= log((P_a(S)_lower - delta) / P_b(S)_upper)

holds with the stated confidence. A bound above the claimed epsilon contradicts
the claim; a bound below it proves nothing about the claim (an audit can only
refute, never certify, a guarantee).
"""

from dataclasses import dataclass, field

import numpy as np
from joblib import Parallel, delayed
from scipy.stats import beta as beta_law
from sklearn.base import clone

from ..utils._random import check_rng


@dataclass
class AuditResult:
    """Outcome of a privacy audit.

    Attributes
    ----------
    claimed_epsilon, claimed_delta : float
        The guarantee the mechanism claims.
    epsilon_lower_bound : float
        Lower bound on the true epsilon, valid with probability ``confidence``
        (0 when the runs show no distinguishability).
    confidence : float
        Joint confidence of the two Clopper-Pearson bounds.
    contradicted : bool
        Whether ``epsilon_lower_bound`` exceeds ``claimed_epsilon``.
    details : dict
        Threshold, event direction and the counts behind the bound.
    """

    claimed_epsilon: float
    claimed_delta: float
    epsilon_lower_bound: float
    confidence: float
    contradicted: bool
    details: dict = field(default_factory=dict)

    @property
    def certified_fraction(self):
        """``epsilon_lower_bound / claimed_epsilon``: how much of the claim the audit reaches."""
        return self.epsilon_lower_bound / self.claimed_epsilon

    def __str__(self):
        verdict = "CONTRADICTS the claim" if self.contradicted else "consistent with the claim"
        return (f"audit: epsilon >= {self.epsilon_lower_bound:.4f} with confidence "
                f"{self.confidence:.3f} (claimed epsilon={self.claimed_epsilon:g}, "
                f"delta={self.claimed_delta:g}): {verdict}")


def clopper_pearson(successes, trials, alpha):
    """Two one-sided ``1 - alpha`` Clopper-Pearson bounds ``(lower, upper)`` on a proportion.

    Parameters
    ----------
    successes : int
        Number of runs in which the event happened.
    trials : int
        Number of runs.
    alpha : float
        One-sided error of each bound.

    Returns
    -------
    lower, upper : float
    """
    lower = 0.0 if successes == 0 else beta_law.ppf(alpha, successes, trials - successes + 1)
    upper = 1.0 if successes == trials else beta_law.ppf(1 - alpha, successes + 1,
                                                         trials - successes)
    return float(lower), float(upper)


def _epsilon_bound(in_a, in_b, delta, alpha):
    """Lower bound on epsilon from counts of the event under a and under b."""
    n_a, n_b = len(in_a), len(in_b)
    p_a, _ = clopper_pearson(int(np.sum(in_a)), n_a, alpha)
    _, p_b = clopper_pearson(int(np.sum(in_b)), n_b, alpha)
    if p_a - delta <= 0 or p_b <= 0:
        return 0.0
    return max(0.0, float(np.log((p_a - delta) / p_b)))


def _empirical_bound(stat_a, stat_b, delta):
    """Point estimate of the bound for a threshold event, used to choose the threshold."""
    n = min(len(stat_a), len(stat_b))
    candidates = np.quantile(np.concatenate([stat_a, stat_b]), np.linspace(0.5, 0.999, 60))
    best, best_threshold, best_sign = -np.inf, candidates[0], 1.0
    for sign in (1.0, -1.0):
        for t in candidates * sign:
            p_a = (np.sum(sign * stat_a > t) + 0.5) / (len(stat_a) + 1)
            p_b = (np.sum(sign * stat_b > t) + 0.5) / (len(stat_b) + 1)
            # penalise events too rare to bound well: one standard error
            value = np.log(max(p_a - delta - np.sqrt(p_a / n), 1e-300) / (p_b + np.sqrt(p_b / n)))
            if value > best:
                best, best_threshold, best_sign = value, t, sign
    return best_threshold, best_sign


def audit_statistics(stat_a, stat_b, *, epsilon, delta=0.0, alpha=0.05):
    """Audit from one-dimensional statistics of runs on two neighbouring inputs.

    The first half of each sample chooses the event ``sign * stat > threshold``
    (and which input plays ``a``); the second half bounds it.

    Parameters
    ----------
    stat_a, stat_b : array-like of shape (n_runs,)
        The statistic of each run on input a and on input b.
    epsilon, delta : float
        The claimed guarantee.
    alpha : float, default=0.05
        Each Clopper-Pearson bound fails with probability ``alpha``; the result
        holds with confidence ``1 - 2 alpha``.

    Returns
    -------
    result : AuditResult
    """
    stat_a, stat_b = np.asarray(stat_a, dtype=float), np.asarray(stat_b, dtype=float)
    half_a, half_b = len(stat_a) // 2, len(stat_b) // 2
    best = None
    for first, second in ((stat_a, stat_b), (stat_b, stat_a)):
        h1, h2 = (half_a, half_b) if first is stat_a else (half_b, half_a)
        threshold, sign = _empirical_bound(first[:h1], second[:h2], delta)
        bound = _epsilon_bound(sign * first[h1:] > threshold, sign * second[h2:] > threshold,
                               delta, alpha)
        if best is None or bound > best[0]:
            best = (bound, threshold, sign, first is stat_a)
    bound, threshold, sign, a_first = best
    # both orientations were tried on the same held-out halves: Bonferroni over the two
    return AuditResult(
        claimed_epsilon=float(epsilon), claimed_delta=float(delta),
        epsilon_lower_bound=bound, confidence=1.0 - 4.0 * alpha,
        contradicted=bool(bound > epsilon),
        details={"threshold": float(threshold), "direction": float(sign),
                 "event_favours": "a" if a_first else "b",
                 "n_runs": (len(stat_a), len(stat_b))})


def audit_mechanism(mechanism, input_a, input_b, *, epsilon, delta=0.0, n_runs=100_000,
                    statistic=None, alpha=0.05, random_state=None):
    """Audit a noise mechanism on two neighbouring inputs.

    Parameters
    ----------
    mechanism : callable
        ``mechanism(value, rng)`` returns one noisy release (array-like).
    input_a, input_b : array-like
        Neighbouring inputs (for a sensitivity-based mechanism: two values at
        distance equal to the sensitivity).
    epsilon, delta : float
        The claimed guarantee.
    n_runs : int, default=100_000
        Releases per input.
    statistic : callable, default=None
        Maps a release to a float; default: the projection onto
        ``input_a - input_b``.
    alpha : float, default=0.05
        Failure probability of each confidence bound.
    random_state : int, Generator or None, default=None
        Seeds the audit's own runs (an audit is a test, never a release).

    Returns
    -------
    result : AuditResult

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.audit import audit_mechanism
    >>> laplace = lambda v, rng: v + rng.laplace(scale=1.0)
    >>> result = audit_mechanism(laplace, 1.0, 0.0, epsilon=1.0, random_state=0)
    >>> result.contradicted, result.certified_fraction > 0.8
    (False, True)
    """
    rng = check_rng(random_state)
    a, b = np.atleast_1d(np.asarray(input_a, float)), np.atleast_1d(np.asarray(input_b, float))
    if statistic is None:
        direction = (a - b) / max(np.linalg.norm(a - b), 1e-300)
        statistic = (lambda release: float(np.atleast_1d(release) @ direction))
    stat_a = np.array([statistic(mechanism(input_a, rng)) for _ in range(n_runs)])
    stat_b = np.array([statistic(mechanism(input_b, rng)) for _ in range(n_runs)])
    return audit_statistics(stat_a, stat_b, epsilon=epsilon, delta=delta, alpha=alpha)


def neighbouring_datasets(X, y, canary_x, canary_y, neighboring):
    """The pair (D, D') for an estimator audit under its neighbouring relation.

    add/remove-one: ``D' = D`` plus the canary; replace-one: the first row of
    ``D`` is replaced by the canary.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        The base rows.
    y : array-like of shape (n_samples,)
        Their labels.
    canary_x : array-like of shape (n_features,)
        The record that tells the two datasets apart.
    canary_y : scalar
        Its label.
    neighboring : {"add_remove", "replace"}

    Returns
    -------
    (X_a, y_a), (X_b, y_b) : tuple of tuples
        The two neighbouring datasets.
    """
    X, y = np.asarray(X, float), np.asarray(y)
    canary_x = np.asarray(canary_x, float)[None, :]
    if neighboring == "replace":
        X2, y2 = X.copy(), y.copy()
        X2[0], y2[0] = canary_x[0], canary_y
        return (X, y), (X2, y2)
    return (X, y), (np.vstack([X, canary_x]), np.append(y, canary_y))


def _fit_statistic(estimator, X, y, seed, direction):
    fitted = clone(estimator).set_params(random_state=seed).fit(X, y)
    params = np.concatenate([np.ravel(fitted.coef_), np.ravel(fitted.intercept_)])
    return float(params @ direction)


def audit_estimator(estimator, X, y, canary_x, canary_y, *, n_runs=1000, neighboring=None,
                    alpha=0.05, n_jobs=None, random_state=None):
    """Black-box audit of a private linear estimator with a canary record.

    The estimator is fitted ``n_runs`` times on ``D`` and on ``D'`` (with and
    without the canary, or with the canary replacing a row, per the estimator's
    relation), each with its own seed. The statistic is the projection of the
    released ``(coef_, intercept_)`` on the canary's direction.

    Parameters
    ----------
    estimator : estimator object
        A private estimator with ``epsilon``, ``delta`` and ``random_state``.
    X, y : array-like
        The base dataset D (keep it small: the audit makes ``2 n_runs`` fits).
    canary_x : array-like of shape (n_features,)
        The canary's features (for power: a row at the norm bound, in a
        direction the rest of the data does not use).
    canary_y : label
        The canary's label.
    n_runs : int, default=1000
        Fits on each of the two datasets.
    neighboring : {"add_remove", "replace"}, default=None
        Default: the estimator's ``neighboring`` parameter, else add/remove.
    alpha : float, default=0.05
        Failure probability of each confidence bound.
    n_jobs : int, default=None
        Parallel fits through joblib.
    random_state : int, Generator or None, default=None
        Seeds the audit's fits (an audit is a test, never a release).

    Returns
    -------
    result : AuditResult
    """
    params = estimator.get_params()
    if neighboring is None:
        neighboring = params.get("neighboring", "add_remove")
    (Xa, ya), (Xb, yb) = neighbouring_datasets(X, y, canary_x, canary_y, neighboring)
    sign = 1.0
    classes = np.unique(np.append(np.asarray(y), canary_y))
    if len(classes) == 2 and canary_y == classes[0]:
        sign = -1.0
    direction = sign * np.append(np.asarray(canary_x, float),
                                 params.get("intercept_scaling", 1.0) if params.get(
                                     "fit_intercept", True) else 0.0)
    rng = check_rng(random_state)
    seeds = rng.integers(2**31 - 1, size=2 * n_runs)
    stats = Parallel(n_jobs=n_jobs)(
        delayed(_fit_statistic)(estimator, Xd, yd, int(seed), direction)
        for (Xd, yd), seed in zip([(Xb, yb)] * n_runs + [(Xa, ya)] * n_runs, seeds))
    with_canary, without = np.array(stats[:n_runs]), np.array(stats[n_runs:])
    result = audit_statistics(with_canary, without, epsilon=params["epsilon"],
                              delta=params.get("delta", 0.0), alpha=alpha)
    result.details["neighboring"] = neighboring
    return result
