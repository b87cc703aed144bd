"""What a model-selection run cost in privacy, under basic composition."""

import numpy as np

from ..utils._sklearn_compat import BaseSearchCV

SEARCH_STATEMENT = (
    "Every candidate was fitted on every training fold and the best one refitted on all "
    "data, each fit spending its own (epsilon, delta); the totals are their sum (basic "
    "sequential composition, valid whatever the overlap of the folds). The choice of the "
    "best candidate used validation scores computed from the private data without noise: "
    "that choice is data-dependent and not covered by any of these guarantees."
)


def _spend_of_params(params):
    epsilon = params.get("epsilon")
    if epsilon is None:
        raise ValueError("The searched estimator has no 'epsilon' parameter: it is not a "
                         "private estimator, so its privacy cost is unbounded.")
    return float(epsilon), float(params.get("delta", 0.0))


def privacy_cost_of_search(search):
    """Total (epsilon, delta) spent by a fitted search or a list of fitted estimators.

    For a fitted ``GridSearchCV``/``RandomizedSearchCV`` the fits are
    ``n_candidates x n_splits`` plus the refit; each fit's spend is taken from
    the candidate's parameters (the requested epsilon and delta, an upper bound
    on what an accountant-calibrated estimator certifies), because the fold
    estimators themselves are not kept. For a list, each estimator's
    ``epsilon_spent_`` and ``delta_spent_`` are added.

    Parameters
    ----------
    search : fitted BaseSearchCV or list of fitted skdp estimators

    Returns
    -------
    report : dict
        ``total_epsilon``, ``total_delta``, ``n_fits``, per-fit ``fits`` and a
        ``statement`` on what the totals do and do not cover.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.model_selection import GridSearchCV
    >>> from skdp import ObjPertLogisticRegression
    >>> from skdp.model_selection import privacy_cost_of_search
    >>> X, y = make_classification(n_samples=300, random_state=0)
    >>> grid = GridSearchCV(ObjPertLogisticRegression(random_state=0),
    ...                     {"epsilon": [0.5, 1.0]}, cv=3).fit(X, y)
    >>> privacy_cost_of_search(grid)["total_epsilon"]  # 3 x 0.5 + 3 x 1.0 + refit at 1.0
    5.5
    """
    fits = []
    if isinstance(search, BaseSearchCV):
        if not hasattr(search, "cv_results_"):
            raise ValueError("The search is not fitted yet.")
        base = search.estimator.get_params()
        n_splits = search.n_splits_
        for candidate in search.cv_results_["params"]:
            epsilon, delta = _spend_of_params({**base, **candidate})
            fits += [{"epsilon": epsilon, "delta": delta, "purpose": "candidate x fold",
                      "params": candidate}] * n_splits
        if search.refit:
            epsilon, delta = _spend_of_params({**base, **search.best_params_})
            fits.append({"epsilon": epsilon, "delta": delta, "purpose": "refit",
                         "params": search.best_params_})
    else:
        for estimator in search:
            if not hasattr(estimator, "epsilon_spent_"):
                raise ValueError(f"{type(estimator).__name__} is not a fitted skdp estimator "
                                 "(no epsilon_spent_).")
            fits.append({"epsilon": float(estimator.epsilon_spent_),
                         "delta": float(estimator.delta_spent_), "purpose": "fit"})
    return {
        "total_epsilon": float(np.sum([f["epsilon"] for f in fits])),
        "total_delta": float(np.sum([f["delta"] for f in fits])),
        "n_fits": len(fits),
        "fits": fits,
        "statement": SEARCH_STATEMENT,
    }
