"""The ledger's releases beyond fits: private scores, a Table 1, a private cross-validation.

Each is admitted like a fit: its unit is the ledger's, its noise is independent of the
ledger's earlier releases, and its whole cost is charged (refused past the budget)
before any noise is drawn. The releases are those of :mod:`skdp.metrics` and
:mod:`skdp.stats`; a cross-validation's fits go through the gate (:func:`secret_fit`).

Cross-validation. Each unit (a row, or a person with ``groups``) falls in one of ``k``
folds by a public coin drawn from its own stream, independent of the data. A unit is in
the training rows of ``k - 1`` fits and in the test rows of one score, so the whole run
costs ``(k - 1) (epsilon_fit, delta_fit) + (epsilon_score, delta_score)`` per unit
(basic composition; the scores of the other folds are post-processing of their fits).
"""

import numpy as np
from sklearn.base import clone

from ..metrics import (private_accuracy_score, private_balanced_accuracy_score,
                       private_brier_score_loss, private_log_loss,
                       private_mean_squared_error, private_r2_score, private_roc_auc_score)
from ..stats import describe
from ..stats._release import check_budget
from ..utils._groups import check_groups
from ..utils._random import check_rng, noise_independence
from ._gate import (Statement, check_fit, check_person_fit, private_step, route_fit_params,
                    secret_fit)

SCORERS = {
    "accuracy": (private_accuracy_score, "predict"),
    "balanced_accuracy": (private_balanced_accuracy_score, "predict"),
    "roc_auc": (private_roc_auc_score, "positive_proba"),
    "brier_score_loss": (private_brier_score_loss, "positive_proba"),
    "log_loss": (private_log_loss, "predict_proba"),
    "mean_squared_error": (private_mean_squared_error, "predict"),
    "r2": (private_r2_score, "predict"),
}
"""The ``scoring`` names of :meth:`PrivacyLedger.score`: the metric, and what of the
model it reads."""

_SPLIT_PARAMS = ("groups", "sample_weight")


def _scorer(scoring):
    if scoring not in SCORERS:
        raise ValueError(f"scoring must be one of {sorted(SCORERS)}; got {scoring!r}.")
    return SCORERS[scoring]


def _predictions(estimator, X, reads):
    if reads == "positive_proba":
        return estimator.predict_proba(X)[:, 1]
    return getattr(estimator, reads)(X)


def _metric_params(estimator, reads, params):
    """A classifier's public label set goes to the metric (its ``classes_``)."""
    if reads in ("positive_proba", "predict_proba") and "labels" not in params:
        return {**params, "labels": list(estimator.classes_)}
    return params


def _finite_budget(epsilon, delta):
    check_budget(epsilon, delta)
    if not np.isfinite(epsilon):
        raise ValueError("A ledger charges finite budgets: epsilon=inf releases the exact "
                         "value, which no guarantee covers.")


def admit_release(ledger, what, epsilon, delta, persons, seeds=()):
    """Check the unit and the noise's independence, then charge (refused past the budget).

    Parameters
    ----------
    ledger : PrivacyLedger
        The analysis's ledger.
    what : str
        The release's description.
    epsilon, delta : float
        Its whole cost.
    persons : bool
        Whether its unit is a person.
    seeds : sequence, default=()
        The non-None ``random_state`` values of its noise.

    Returns
    -------
    entry : dict
    """
    unit = "person" if persons else "row"
    ledger._check_unit(what, unit)
    independent, reason = noise_independence(ledger._seeds + list(seeds))
    if not independent:
        raise ValueError(f"{what} cannot enter the ledger: {reason}. Use random_state=None "
                         "(fresh noise) for released values.")
    entry = ledger.charge(epsilon, delta, what=what)
    ledger._seeds += list(seeds)
    ledger.unit = unit
    return entry


def score(ledger, estimator, X, y, *, scoring, epsilon, delta=0.0, groups=None,
          random_state=None, **metric_params):
    """:meth:`PrivacyLedger.score`: charge, then release one private score."""
    metric, reads = _scorer(scoring)
    _finite_budget(epsilon, delta)
    seeds = [] if random_state is None else [random_state]
    entry = admit_release(ledger, f"score {scoring}", epsilon, delta, groups is not None,
                          seeds)
    estimate = metric(y, _predictions(estimator, X, reads), epsilon=epsilon, delta=delta,
                      groups=groups, random_state=random_state,
                      **_metric_params(estimator, reads, metric_params))
    entry["noise_std"] = estimate.noise_std
    return estimate


def describe_release(ledger, frame, schema, *, epsilon, delta=0.0, groups=None,
                     random_state=None, **describe_params):
    """:meth:`PrivacyLedger.describe`: charge, then release a Table 1."""
    _finite_budget(epsilon, delta)
    seeds = [] if random_state is None else [random_state]
    entry = admit_release(ledger, "describe (Table 1)", epsilon, delta, groups is not None,
                          seeds)
    table = describe(frame, schema, epsilon=epsilon, delta=delta, groups=groups,
                     random_state=random_state, **describe_params)
    entry["noise_std"] = table["noise_std"].to_dict()
    return table


def _folds(n_rows, groups, k, cv_random_state):
    """Each row's fold: a public coin per unit, from a stream of its own."""
    coins = check_rng(cv_random_state)
    if groups is None:
        return coins.integers(k, size=n_rows)
    codes = check_groups(groups, n_rows)
    return coins.integers(k, size=codes.max() + 1)[codes]


def _subset(params, rows):
    """Fit parameters for a subset of rows (``groups`` and ``sample_weight`` sliced)."""
    return {key: (np.asarray(value)[rows] if key.endswith(_SPLIT_PARAMS) and value is not None
                  else value) for key, value in params.items()}


def cross_validate(ledger, estimator, X, y, *, cv=5, scoring, epsilon, delta=0.0,
                   groups=None, cv_random_state=None, **fit_params):
    """:meth:`PrivacyLedger.cross_validate`: charge the whole run, then fit and score
    each fold."""
    metric, reads = _scorer(scoring)
    _finite_budget(epsilon, delta)
    if isinstance(cv, bool) or not isinstance(cv, (int, np.integer)) or cv < 2:
        raise ValueError(f"cv must be a number of folds, at least 2; got {cv!r}.")
    if ledger.composition != "basic":
        raise ValueError("cross_validate composes fits and scores by their (epsilon, "
                         "delta): open a ledger with composition='basic'.")
    what = f"cross_validate {type(estimator).__name__} ({cv} folds, {scoring})"
    statement = Statement(f"PrivacyLedger.cross_validate ({type(estimator).__name__})",
                          persons=groups is not None, trials=True)
    routed = route_fit_params(estimator, {**fit_params, **(
        {} if groups is None else {"groups": groups})}, statement.who)
    fit_epsilon, fit_delta = check_fit(estimator, statement)._claimed_spend()
    if not np.isfinite(fit_epsilon):
        raise ValueError(f"{type(estimator).__name__} certifies no finite epsilon.")
    seed = private_step(estimator)[0].get_params().get("random_state")
    seeds = [] if seed is None else [seed] * cv   # one seed in every fold: refused
    entry = admit_release(ledger, what, (cv - 1) * fit_epsilon + epsilon,
                          (cv - 1) * fit_delta + delta, groups is not None, seeds)
    n_rows = X.shape[0] if hasattr(X, "shape") else len(X)
    folds = _folds(n_rows, groups, cv, cv_random_state)
    X, y = (np.asarray(X) if not hasattr(X, "iloc") else X), np.asarray(y)
    scores = []
    for fold in range(cv):
        train, test = folds != fold, folds == fold
        model, _ = secret_fit(clone(estimator), _take(X, train), y[train], statement,
                              _subset(routed, train))
        if statement.persons:
            check_person_fit(model)
        scores.append(metric(y[test], _predictions(model, _take(X, test), reads),
                             epsilon=epsilon, delta=delta,
                             groups=None if groups is None else np.asarray(groups)[test],
                             **_metric_params(model, reads, {})))
    entry["noise_std"] = [s.noise_std for s in scores]
    return {"test_score": scores, "epsilon": entry["a_priori"][0],
            "delta": entry["a_priori"][1]}


def _take(X, rows):
    return X.iloc[rows] if hasattr(X, "iloc") else X[rows]
