"""What a model-selection run cost in privacy.

:func:`privacy_cost_of_search` composes the fits of what users actually fit: a fitted
``GridSearchCV``/``RandomizedSearchCV`` (over a ``Pipeline`` of public steps, or over
another search: nested cross-validation), the dict ``cross_validate(...,
return_estimator=True)`` returns, fitted estimators, and lists mixing all of these. It
reports the basic sum of the fits' certified (epsilon, delta), a Renyi composition when
every fit is a Gaussian DP-SGD fit or pure epsilon-DP, and a per-row figure when the fold
assignment is declared public (the derivation is in the function's Notes).
"""

import numbers

import numpy as np
from sklearn.base import clone
from sklearn.model_selection import (GridSearchCV, ParameterGrid, ParameterSampler,
                                     PredefinedSplit, RandomizedSearchCV, check_cv)

from ..accounting._costs import pure_rdp
from ..accounting._rdp import ORDERS, rdp_to_epsilon
from ..exceptions import PrivacyBudgetError
from ..utils._random import noise_independence
from ..utils._sklearn_compat import BaseSearchCV
from ._gate import Statement, check_public_steps, check_relation

SEARCH_STATEMENT = (
    "Every candidate was fitted on every training fold and the best one refitted on all "
    "data, each fit spending its own certified (epsilon, delta); the basic totals are "
    "their sum (sequential composition, valid whatever the overlap of the folds, provided "
    "the fits drew independent noise and each fit's training set changes by at most the "
    "added or removed row between neighbouring datasets, which holds when each row's fold "
    "does not depend on the other rows; a splitter whose folds depend on the row count, "
    "the row order or the labels (KFold, StratifiedKFold, GroupKFold, any shuffle) can "
    "move other rows across a fold boundary when one row is added, and the totals then "
    "hold conditionally on the fold assignment, treated as public). The choice of the "
    "best candidate used validation scores computed from the private data without noise: "
    "that choice is data-dependent and not covered by any of these guarantees."
)

PER_ROW_NONE = (
    "no per-row figure: the fold assignment is not declared public. A row pays only for "
    "the fits whose training fold holds it when each row's fold is a public function of "
    "that row alone (PredefinedSplit with a public test_fold, or an explicit list of "
    "(train, test) index pairs drawn from public coins, passed as the search's cv, or "
    "as cv= beside a cross_validate(..., return_indices=True) result). Other splitters "
    "assign folds from the row count, order or labels, so adding one row moves others "
    "between folds and the per-row sum bounds nothing; they get the basic sum."
)

PER_ROW_STATEMENT = (
    "per_row_epsilon is the largest, over the fold patterns of the rows, of the "
    "composition of the fits whose training set holds such a row (the refit holds every "
    "row; a nested search counts whole for every row of its outer training fold; items "
    "of a list add up). It is a guarantee for every row, under add/remove, provided the "
    "declared fold assignment is public and per row: a row's fold is a function of that "
    "row's own public label (a new row's label is one of those present, and no fold "
    "appears or disappears when one row is added or removed)."
)

UNBOUNDED_FIT = (
    "a fit certified no finite epsilon (a research mode, a fit that failed and so "
    "revealed that it failed, or an inner search whose fits cannot be determined from its "
    "parameters: see the fits' purposes)")

BASIC_COMPOSITION = "basic sequential composition of independent fits"

RENYI_COMPOSITION = (
    "basic sequential composition of independent fits, and Renyi composition: every fit "
    "is Gaussian DP-SGD, Gaussian objective perturbation with a Renyi curve, or pure "
    "epsilon-DP, with parameters fixed before the data are read (non-adaptive), so their "
    "Renyi curves add and the sum is converted at total_delta; total_epsilon is the "
    "smaller figure")


def _private_estimator(estimator):
    """The private estimator (or search) at the end of a Pipeline, or ``estimator``,
    through the gate: every step before it is public preprocessing, and its relation
    is add/remove (:mod:`._gate`)."""
    final = check_public_steps(estimator)
    if hasattr(final, "get_params"):
        check_relation(final, Statement("privacy_cost_of_search"))
    return final


def _claimed_spend(estimator):
    """``(epsilon, delta)`` a successful fit of ``estimator`` certifies, from its parameters."""
    if hasattr(estimator, "_claimed_spend"):
        return estimator._claimed_spend()
    params = estimator.get_params() if hasattr(estimator, "get_params") else {}
    if "epsilon" not in params:
        raise ValueError("The searched estimator has no 'epsilon' parameter: it is not a "
                         "private estimator, so its privacy cost is unbounded.")
    return float(params["epsilon"]), float(params.get("delta", 0.0))


# -- Renyi curves --------------------------------------------------------------------------

def _planned_rdp(estimator, epsilon, delta):
    """RDP curve of a fit with these parameters (its declared ``_renyi_cost`` for the
    declared label set; unknown without one), or None when it has none here."""
    if not np.isfinite(epsilon):
        return np.full(ORDERS.shape, np.inf)
    if not hasattr(estimator, "_renyi_cost"):  # a private estimator of another library
        return pure_rdp(epsilon) if delta == 0 else None
    classes = estimator.get_params().get("classes")
    try:
        return estimator._renyi_cost(n_classes=None if classes is None else len(classes))
    except PrivacyBudgetError:  # the fit would have refused: it failed (counted inf)
        return np.full(ORDERS.shape, np.inf)


def _fitted_rdp(estimator):
    """RDP curve of a fitted estimator, from what it fitted (its ``_renyi_spent``), or
    None."""
    if not np.isfinite(float(estimator.epsilon_spent_)):
        return np.full(ORDERS.shape, np.inf)
    return estimator._renyi_spent()


# -- the fits of each kind of object --------------------------------------------------------

def _record(epsilon, delta, purpose, random_state, rdp, params=None, fold=None):
    record = {"epsilon": float(epsilon), "delta": float(delta), "purpose": purpose,
              "random_state": random_state, "rdp": rdp, "fold": fold}
    if params is not None:
        record["params"] = params
    return record


def _failed(records, purpose):
    """The records of a fit that failed: its failure is an output of the private data."""
    return [dict(r, epsilon=np.inf, rdp=np.full(ORDERS.shape, np.inf),
                 purpose=purpose + " (failed)") for r in records]


def _planned_fits(estimator, purpose, params):
    """The fits a successful fit of (unfitted) ``estimator`` makes, from its parameters."""
    estimator = _private_estimator(estimator)
    if isinstance(estimator, BaseSearchCV):
        return _planned_search_fits(estimator, purpose)
    epsilon, delta = _claimed_spend(estimator)
    return [_record(epsilon, delta, purpose, estimator.get_params().get("random_state"),
                    _planned_rdp(estimator, epsilon, delta), params)]


def _undetermined(search, purpose, reason):
    return [_record(np.inf, 0.0, f"{purpose}: {reason}", None,
                    np.full(ORDERS.shape, np.inf))]


def _planned_candidates(search):
    """The candidates an inner search will try, or a reason why they are unknown."""
    if type(search) is GridSearchCV:
        return list(ParameterGrid(search.param_grid)), ""
    if type(search) is RandomizedSearchCV:
        distributions = search.param_distributions
        grids = distributions if isinstance(distributions, list) else [distributions]
        all_lists = all(all(not hasattr(v, "rvs") for v in g.values()) for g in grids)
        if all_lists and len(ParameterGrid(distributions)) <= search.n_iter:
            return list(ParameterGrid(distributions)), ""  # every point, in some order
        if isinstance(search.random_state, numbers.Integral):
            return list(ParameterSampler(distributions, search.n_iter,
                                         random_state=search.random_state)), ""
        return None, ("its candidates are drawn with an unseeded random_state, so they "
                      "cannot be determined from its parameters")
    return None, (f"{type(search).__name__} decides its fits from the data (only "
                  "GridSearchCV and RandomizedSearchCV are planned from parameters)")


def _planned_search_fits(search, purpose):
    """The fits of one fit of an inner search, from its parameters alone.

    Its refit is one of its candidates, chosen from the data: it is counted as
    the costliest (pointwise largest epsilon, delta and Renyi curve; when the
    candidates are searches themselves, as all of them).
    """
    purpose = f"{purpose} > inner {type(search).__name__}"
    if search.error_score != "raise":
        return _undetermined(search, purpose, (
            "an inner fit that fails is not visible once the inner search has caught it "
            "(error_score is not 'raise'), and a failure is itself an output of the "
            "private data; set error_score='raise' on the inner search"))
    candidates, reason = _planned_candidates(search)
    if candidates is None:
        return _undetermined(search, purpose, reason)
    try:
        n_splits = check_cv(search.cv).get_n_splits()
    except Exception:  # a splitter that needs the rows to count its folds
        return _undetermined(search, purpose, "its number of folds depends on the rows")
    plans = [_planned_fits(clone(search.estimator).set_params(**c), purpose + " candidate",
                           c) for c in candidates]
    records = [r for plan in plans for _ in range(n_splits) for r in plan]
    if search.refit and plans:
        if all(len(p) == 1 for p in plans):
            worst = max(plans, key=lambda p: p[0]["epsilon"])[0]
            rdps = [p[0]["rdp"] for p in plans]
            records.append(_record(
                max(p[0]["epsilon"] for p in plans), max(p[0]["delta"] for p in plans),
                purpose + " refit (costliest candidate)", worst["random_state"],
                None if any(r is None for r in rdps) else np.max(rdps, axis=0)))
        else:
            records += [dict(r, purpose=purpose + " refit (any candidate)")
                        for p in plans for r in p]
    return records


def _fitted_fits(obj, purpose):
    """The fits of a fitted object: an estimator, a Pipeline or a search."""
    estimator = _private_estimator(obj)
    if isinstance(estimator, BaseSearchCV):
        return _search_fits(estimator, purpose)[0]
    if not hasattr(estimator, "epsilon_spent_"):
        raise ValueError(f"{type(estimator).__name__} is not a fitted skdp estimator "
                         "(no epsilon_spent_).")
    return [_record(estimator.epsilon_spent_, estimator.delta_spent_, purpose,
                    estimator.get_params().get("random_state"), _fitted_rdp(estimator))]


def _public_folds(cv):
    """The training folds of a cv declared public, or None."""
    if type(cv) is PredefinedSplit:
        return [np.asarray(train) for train, _ in cv.split()]
    if isinstance(cv, (list, tuple)) and all(
            isinstance(pair, (list, tuple)) and len(pair) == 2 for pair in cv):
        return [np.asarray(train) for train, _ in cv]
    return None


def _search_fits(search, purpose=""):
    """The fits of a fitted search (each with its fold), and its public folds or None."""
    if not hasattr(search, "cv_results_"):
        raise ValueError("The search is not fitted yet.")
    prefix = f"{purpose} > " if purpose else ""
    results = search.cv_results_
    fits = []
    for i, candidate in enumerate(results["params"]):
        plan = None
        for k in range(search.n_splits_):
            if plan is None:
                plan = _planned_fits(clone(search.estimator).set_params(**candidate),
                                     prefix + "candidate x fold", candidate)
            records = [dict(r, fold=k) for r in plan]
            if not all(np.isfinite(results[key][i]) for key in results
                       if key.startswith(f"split{k}_test_")):
                records = _failed(records, prefix + "candidate x fold")
            fits += records
    if search.refit:
        inner = _private_estimator(search.best_estimator_)
        if isinstance(inner, BaseSearchCV):  # nested: the refitted inner search is here
            fits += [dict(r, fold=None)  # the refit holds every row
                     for r in _search_fits(inner, prefix + "refit")[0]]
        else:
            fits += _planned_fits(clone(search.estimator).set_params(**search.best_params_),
                                  prefix + "refit", search.best_params_)
    folds = _public_folds(search.cv)
    if folds is not None and len(folds) != search.n_splits_:
        folds = None
    return fits, folds


def _cross_validate_fits(result, cv):
    """The fits of a ``cross_validate`` result, and its public folds or None."""
    if "estimator" not in result:
        raise ValueError(
            "This cross_validate result holds no fitted estimators, so their certified "
            "spends cannot be read: call cross_validate(..., return_estimator=True) (and "
            "return_indices=True, with cv= a PredefinedSplit or a list of public (train, "
            "test) index pairs, for the per-row figure).")
    fits = []
    for k, estimator in enumerate(result["estimator"]):
        fits += [dict(r, fold=k) for r in _fitted_fits(estimator, "cross_validate fold")]
    folds = None
    declared = _public_folds(cv) if cv is not None else None
    if declared is not None and "indices" in result:
        folds = [np.asarray(train) for train in result["indices"]["train"]]
        if len(folds) != len(declared) or any(
                not np.array_equal(np.sort(a), np.sort(b)) for a, b in zip(folds, declared)):
            raise ValueError("The training folds in the cross_validate result are not those "
                             "of the cv given: pass the cv the result was computed with.")
    return fits, folds


# -- composition ----------------------------------------------------------------------------

def _compose(fits):
    """Basic and Renyi totals of independent fits: ``(basic, delta, renyi)``."""
    basic = float(np.sum([f["epsilon"] for f in fits]))
    delta = float(min(1.0, np.sum([f["delta"] for f in fits])))
    renyi = None
    if fits and all(f["rdp"] is not None for f in fits) and 0 < delta < 1:
        renyi = rdp_to_epsilon(np.sum([f["rdp"] for f in fits], axis=0), delta)
    return basic, delta, renyi


def _row_cost(fits, folds):
    """Largest per-row ``(epsilon, delta)`` over the rows' fold patterns."""
    n_rows = 1 + max((int(f.max()) for f in folds if f.size), default=-1)
    membership = np.zeros((n_rows, len(folds)), dtype=bool)
    for k, train in enumerate(folds):
        membership[train, k] = True
    worst_epsilon, worst_delta = 0.0, 0.0
    for pattern in np.unique(membership, axis=0):
        row_fits = [f for f in fits if f["fold"] is None or pattern[f["fold"]]]
        basic, delta, renyi = _compose(row_fits)
        worst_epsilon = max(worst_epsilon, basic if renyi is None else min(basic, renyi))
        worst_delta = max(worst_delta, delta)
    return worst_epsilon, worst_delta


def _items(search, cv):
    """``(fits, public folds or None)`` for each object of ``search``."""
    if isinstance(search, dict):
        return [_cross_validate_fits(search, cv)]
    if isinstance(search, (list, tuple)):
        items = []
        for obj in search:
            if isinstance(obj, (dict, list, tuple)):
                items += _items(obj, cv)
            else:
                items.append(_item(obj))
        return items
    return [_item(search)]


def _item(obj):
    if isinstance(obj, BaseSearchCV):
        return _search_fits(obj, "")
    return [dict(r, fold=None) for r in _fitted_fits(obj, "fit")], None


def _per_row(items):
    """The per-row ``(epsilon, delta)`` of the items (``(None, None)`` when no item has
    a public fold assignment): each item's row cost, or its total without one."""
    if all(folds is None for _, folds in items):
        return None, None
    per_row_epsilon = per_row_delta = 0.0
    for item_fits, folds in items:
        if folds is not None:
            epsilon, delta = _row_cost(item_fits, folds)
        else:
            item_basic, delta, item_renyi = _compose(item_fits)
            epsilon = item_basic if item_renyi is None else min(item_basic, item_renyi)
        per_row_epsilon += epsilon
        per_row_delta = min(1.0, per_row_delta + delta)
    return per_row_epsilon, per_row_delta


def privacy_cost_of_search(search, *, cv=None):
    """Total (epsilon, delta) spent by fitted searches, cross-validations and estimators.

    ``search`` may be:

    - a fitted ``GridSearchCV``/``RandomizedSearchCV``: its fits are
      ``n_candidates x n_splits`` plus the refit; each fit's spend is what a
      successful fit with the candidate's parameters certifies (``inf`` for a
      research mode), because the fold estimators themselves are not kept; a
      fold fit that failed (no score) counts as ``inf``: a failure is itself
      an output of the private data;
    - a nested search (the searched estimator is itself a search): each outer
      candidate x fold fit costs the inner search's total computed from its
      parameters (its candidates x folds, and its refit counted as its
      costliest candidate, since the data choose it); the outer refit is the
      fitted inner search, counted from its own results. An inner search whose
      fits cannot be determined from its parameters (an unseeded
      ``RandomizedSearchCV`` over distributions, a splitter that needs the rows
      to count its folds, or ``error_score`` other than ``"raise"``, which
      hides an inner failure) counts as ``inf``, and its record says why;
    - the dict ``sklearn.model_selection.cross_validate(...,
      return_estimator=True)`` returns: each fold's fitted estimator (or
      Pipeline, or search) counts its certified ``epsilon_spent_`` and
      ``delta_spent_``;
    - a fitted skdp estimator or a list (or tuple) mixing fitted estimators,
      Pipelines, fitted searches and ``cross_validate`` results: their fits
      are composed together.

    A ``Pipeline`` ending in a private estimator (or search) costs what that
    estimator spends, provided every step before it learns nothing from the
    rows (:func:`check_public_preprocessing`, which each candidate's Pipeline
    must pass); otherwise a ``ValueError`` names the step and says how to
    declare it.

    The spends add up only when the fits drew independent noise. With
    ``random_state=None`` (the default) they do. An integer shared by several
    fits (a search clones its estimator, seed included, for every candidate and
    fold; nested and listed objects are pooled) or a numpy ``Generator``
    (which ``clone`` copies) gives them the same noise: every total is then
    ``inf`` and the report says why.

    Parameters
    ----------
    search : fitted BaseSearchCV, dict, fitted estimator or list of these
        What is counted: a fitted search (possibly nested, possibly over a
        ``Pipeline`` of public steps), a ``cross_validate`` result computed
        with ``return_estimator=True``, a fitted skdp estimator or Pipeline,
        or a list mixing them.

    cv : PredefinedSplit or list of (train, test) index pairs, default=None
        The ``cv`` a ``cross_validate`` result was computed with (the result
        does not record it). Only a fold assignment declared public by its
        type counts: with ``return_indices=True`` in the result, its training
        folds (which must be this cv's) give the per-row figure. Ignored for
        searches, which hold their own ``cv``.

    Returns
    -------
    report : dict
        ``total_epsilon`` and ``total_delta``: the headline guarantee, the
        smaller of ``basic_epsilon`` (the sum of the fits' epsilons) and
        ``renyi_epsilon`` when the latter exists (both are at ``total_delta``,
        the sum of the fits' deltas, at most 1); ``basic_epsilon``;
        ``renyi_epsilon`` and ``renyi_delta`` (None when not every fit is a
        ``DPSGDClassifier``, a Gaussian ``ObjPertLogisticRegression`` with a Renyi
        curve, or pure, or when all are pure); ``per_row_epsilon``
        and ``per_row_delta`` (None unless the folds are declared public) with
        a ``per_row`` explanation; ``n_fits``; per-fit ``fits`` (``epsilon``,
        ``delta``, ``purpose``, and ``params`` when known); a ``composition``
        line (why the totals are what they are); and a ``statement`` on what
        the totals do and do not cover.

    Notes
    -----
    Renyi composition. A ``DPSGDClassifier`` fit is a Gaussian count and
    ``T`` Poisson-sampled Gaussian steps, with a Renyi curve at every order;
    a pure epsilon-DP fit (``delta == 0``) is ``(alpha, min(eps, alpha
    eps^2 / 2))``-RDP (it is eps^2/2-zCDP, Bun & Steinke 2016). The fits'
    parameters are fixed by the grid before the data are read, so the
    composition is non-adaptive and the curves add (Mironov 2017); the sum
    is converted to epsilon at ``total_delta`` (``rdp_to_epsilon``). DP-SGD
    curves come from the fitted mechanism (``noise_multiplier_``,
    ``sample_rate_``, ``n_steps_``, ``count_noise_std_``) for fitted
    estimators and from the parameters (``DPSGDRungCost``) for a search's
    fits. A Gaussian ``ObjPertLogisticRegression`` under add/remove-one, not
    multinomial, has the curve of its ``renyi_curve``: from the fitted model, or
    from the parameters when ``classes`` is declared (otherwise its number of
    problems is unknown and no Renyi figure is given). When every fit is pure, the total delta is 0 and no Renyi figure
    is given (the basic sum is the pure guarantee).

    Per-row composition, and when it holds. Under add/remove, let ``D' = D +
    x``. If the fold of every row of ``D`` is the same in ``D'`` (each row's
    fold is a function of that row alone), each fit's training set is the
    same in ``D`` and ``D'`` unless it holds ``x``, where the two differ by
    ``x`` only: the fits without ``x`` have the same output distribution on
    both (independent noise), and the privacy loss of ``x`` is the
    composition of the fits that hold it, the refit included. The largest
    such sum over the rows' fold patterns is then a guarantee for every row.
    Splitters that assign folds from the data do not satisfy the premise:
    ``KFold`` cuts contiguous blocks whose sizes depend on the row count
    ``n`` (private under add/remove), so adding one row moves up to two
    other rows across block boundaries and a training set changes by up to
    three rows; ``StratifiedKFold`` assigns from the labels and counts,
    ``GroupKFold`` from group sizes, and a shuffle (seeded or not) draws a
    permutation of ``n`` rows, which changes wholesale with ``n``. For them a
    row's fold depends on the other rows, a fit that does not hold ``x`` can
    still change, and the per-row sum bounds nothing; they get the basic
    sum (which holds conditionally on the fold assignment, treated as
    public; an unconditional bound would need group privacy over the moved
    rows). Only an assignment declared public is used: ``PredefinedSplit``
    (a public per-row fold label) or an explicit list of ``(train, test)``
    index pairs, which the user certifies were drawn per row from public
    coins. The guarantee also needs a new row's label to be one already
    present (a row in no test fold of a ``PredefinedSplit``, label ``-1``,
    is in every training fold and pays the basic sum) and the set of folds
    not to change when one row comes or goes. For a nested search the outer
    folds are used, each inner search counting whole for every row of its
    outer training fold; the items of a list add their per-row figures (or
    their totals), which is valid whatever rows each item was fitted on.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.model_selection import GridSearchCV, PredefinedSplit, cross_validate
    >>> from skdp import ObjPertLogisticRegression
    >>> from skdp.model_selection import privacy_cost_of_search
    >>> X, y = make_classification(n_samples=300, random_state=0)
    >>> grid = GridSearchCV(ObjPertLogisticRegression(epsilon=0.5, data_norm=1.0),
    ...                     {"C": [0.1, 1.0]}, cv=3).fit(X, y)
    >>> privacy_cost_of_search(grid)["total_epsilon"]  # 2 x 3 fits at 0.5 + refit at 0.5
    3.5
    >>> seeded = GridSearchCV(ObjPertLogisticRegression(epsilon=0.5, data_norm=1.0,
    ...                                                 random_state=0),
    ...                       {"C": [0.1, 1.0]}, cv=3).fit(X, y)
    >>> privacy_cost_of_search(seeded)["total_epsilon"]  # the fits share their noise
    inf

    With a public fold label, each row is in 2 of the 3 training folds:

    >>> folds = PredefinedSplit(np.arange(300) % 3)
    >>> public = GridSearchCV(ObjPertLogisticRegression(epsilon=0.5, data_norm=1.0),
    ...                       {"C": [0.1, 1.0]}, cv=folds).fit(X, y)
    >>> report = privacy_cost_of_search(public)
    >>> report["total_epsilon"], report["per_row_epsilon"]  # 2 x 2 x 0.5 + 0.5
    (3.5, 2.5)
    >>> result = cross_validate(ObjPertLogisticRegression(epsilon=0.5, data_norm=1.0), X, y,
    ...                         cv=folds,
    ...                         return_estimator=True, return_indices=True)
    >>> report = privacy_cost_of_search(result, cv=folds)
    >>> report["total_epsilon"], report["per_row_epsilon"]
    (1.5, 1.0)
    """
    items = _items(search, cv)
    fits = [f for item_fits, _ in items for f in item_fits]
    independent, reason = noise_independence([f["random_state"] for f in fits])
    basic, total_delta, renyi = _compose(fits)
    per_row_epsilon, per_row_delta = _per_row(items)
    if not independent:
        basic = np.inf
        renyi = None if renyi is None else np.inf
        per_row_epsilon = None if per_row_epsilon is None else np.inf
    elif not np.isfinite(basic):
        reason = UNBOUNDED_FIT
    total_epsilon = basic if renyi is None else min(basic, renyi)
    composition = reason or (RENYI_COMPOSITION if renyi is not None else BASIC_COMPOSITION)
    return {
        "total_epsilon": float(total_epsilon),
        "total_delta": total_delta,
        "basic_epsilon": float(basic),
        "renyi_epsilon": renyi,
        "renyi_delta": None if renyi is None else total_delta,
        "per_row_epsilon": per_row_epsilon,
        "per_row_delta": per_row_delta,
        "per_row": PER_ROW_NONE if per_row_epsilon is None else PER_ROW_STATEMENT,
        "n_fits": len(fits),
        "fits": [{k: v for k, v in f.items() if k not in ("random_state", "rdp", "fold")}
                 for f in fits],
        "composition": composition,
        "statement": SEARCH_STATEMENT + ("" if per_row_epsilon is None
                                         else " " + PER_ROW_STATEMENT),
    }
