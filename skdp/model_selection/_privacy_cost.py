"""What a model-selection run cost in privacy, under basic composition."""

import numpy as np
from sklearn.base import clone
from sklearn.pipeline import Pipeline

from ..utils._random import noise_independence
from ..utils._sklearn_compat import BaseSearchCV

SEARCH_STATEMENT = (
    "Every candidate was fitted on every training fold and the best one refitted on all "
    "data, each fit spending its own certified (epsilon, delta); the totals are their sum "
    "(basic sequential composition, valid whatever the overlap of the folds, provided the "
    "fits drew independent noise). The choice of the best candidate used validation "
    "scores computed from the private data without noise: that choice is data-dependent "
    "and not covered by any of these guarantees."
)


def _private_estimator(estimator):
    """The private estimator at the end of a Pipeline (or ``estimator`` itself).

    Every step before it must be public preprocessing (it learns nothing from
    the rows), or the Pipeline's fits release more than the estimator's spend.
    The type is matched exactly: a subclass of Pipeline may fit its steps otherwise.
    """
    from ._public_steps import check_public_preprocessing

    while type(estimator) is Pipeline:
        for name, step in estimator.steps[:-1]:
            check_public_preprocessing(step, name=f"Pipeline step {name!r}")
        estimator = estimator.steps[-1][1]
    return estimator


def _claimed_spend(estimator):
    """``(epsilon, delta)`` a successful fit of ``estimator`` certifies, from its parameters."""
    if hasattr(estimator, "_claimed_spend"):
        return estimator._claimed_spend()
    params = estimator.get_params() if hasattr(estimator, "get_params") else {}
    if "epsilon" not in params:
        raise ValueError("The searched estimator has no 'epsilon' parameter: it is not a "
                         "private estimator, so its privacy cost is unbounded.")
    return float(params["epsilon"]), float(params.get("delta", 0.0))


def _search_fits(search):
    """One record per fit of a fitted search, with its certified spend and random_state."""
    if not hasattr(search, "cv_results_"):
        raise ValueError("The search is not fitted yet.")
    results = search.cv_results_
    fits = []
    for i, candidate in enumerate(results["params"]):
        estimator = _private_estimator(clone(search.estimator).set_params(**candidate))
        epsilon, delta = _claimed_spend(estimator)
        random_state = estimator.get_params().get("random_state")
        for k in range(search.n_splits_):
            failed = not np.isfinite(results[f"split{k}_test_score"][i])
            fits.append({"epsilon": np.inf if failed else epsilon, "delta": delta,
                         "purpose": "candidate x fold" + (" (failed)" if failed else ""),
                         "params": candidate, "random_state": random_state})
    if search.refit:
        estimator = _private_estimator(
            clone(search.estimator).set_params(**search.best_params_))
        epsilon, delta = _claimed_spend(estimator)
        fits.append({"epsilon": epsilon, "delta": delta, "purpose": "refit",
                     "params": search.best_params_,
                     "random_state": estimator.get_params().get("random_state")})
    return fits


def _estimator_fits(estimators):
    fits = []
    for estimator in map(_private_estimator, estimators):
        if not hasattr(estimator, "epsilon_spent_"):
            raise ValueError(f"{type(estimator).__name__} is not a fitted skdp estimator "
                             "(no epsilon_spent_).")
        fits.append({"epsilon": float(estimator.epsilon_spent_),
                     "delta": float(estimator.delta_spent_), "purpose": "fit",
                     "random_state": estimator.get_params().get("random_state")})
    return fits


def privacy_cost_of_search(search):
    """Total (epsilon, delta) spent by a fitted search or a list of fitted estimators.

    For a fitted ``GridSearchCV``/``RandomizedSearchCV`` the fits are
    ``n_candidates x n_splits`` plus the refit; each fit's spend is what a
    successful fit with the candidate's parameters certifies (``inf`` for a
    research mode), because the fold estimators themselves are not kept; a fold
    fit that failed (no score) counts as ``inf``: a failure is itself an output
    of the private data. For a list, each estimator's certified
    ``epsilon_spent_`` and ``delta_spent_`` are added.

    A ``Pipeline`` ending in a private estimator costs what that estimator
    spends, provided every step before it learns nothing from the rows
    (:func:`check_public_preprocessing`, which each candidate's Pipeline must
    pass); otherwise a ``ValueError`` names the step and says how to declare it.

    The spends add up only when the fits drew independent noise. With
    ``random_state=None`` (the default) they do. An integer shared by several
    fits (a search clones its estimator, seed included, for every candidate and
    fold) or a numpy ``Generator`` (which ``clone`` copies) gives them the same
    noise: the report then says ``inf`` and why.

    Parameters
    ----------
    search : fitted BaseSearchCV or list of fitted skdp estimators
        The search whose fits are counted, or the estimators whose spends are
        added. The searched estimator, and each estimator of the list, may be
        a ``Pipeline`` of public steps ending in a private estimator.

    Returns
    -------
    report : dict
        ``total_epsilon``, ``total_delta``, ``n_fits``, per-fit ``fits``, a
        ``composition`` line (why the totals are what they are) and a
        ``statement`` on what the totals do and do not cover.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.model_selection import GridSearchCV
    >>> from skdp import ObjPertLogisticRegression
    >>> from skdp.model_selection import privacy_cost_of_search
    >>> X, y = make_classification(n_samples=300, random_state=0)
    >>> grid = GridSearchCV(ObjPertLogisticRegression(epsilon=0.5),
    ...                     {"C": [0.1, 1.0]}, cv=3).fit(X, y)
    >>> privacy_cost_of_search(grid)["total_epsilon"]  # 2 x 3 fits at 0.5 + refit at 0.5
    3.5
    >>> seeded = GridSearchCV(ObjPertLogisticRegression(epsilon=0.5, random_state=0),
    ...                       {"C": [0.1, 1.0]}, cv=3).fit(X, y)
    >>> privacy_cost_of_search(seeded)["total_epsilon"]  # the fits share their noise
    inf
    """
    if isinstance(search, BaseSearchCV):
        fits = _search_fits(search)
    else:
        fits = _estimator_fits(search)
    independent, reason = noise_independence([f.pop("random_state") for f in fits])
    total_epsilon = float(np.sum([f["epsilon"] for f in fits]))
    total_delta = float(min(1.0, np.sum([f["delta"] for f in fits])))
    if not independent:
        total_epsilon = np.inf
    elif not np.isfinite(total_epsilon):
        reason = ("a fit certified no finite epsilon (a research mode, or a fit that failed "
                  "and so revealed that it failed)")
    return {
        "total_epsilon": total_epsilon,
        "total_delta": total_delta,
        "n_fits": len(fits),
        "fits": fits,
        "composition": reason or "basic sequential composition of independent fits",
        "statement": SEARCH_STATEMENT,
    }
