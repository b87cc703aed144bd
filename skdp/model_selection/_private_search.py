"""Hyperparameter search inside the guarantee: private selection by random stopping.

A search over the parameters of a private estimator (or of a Pipeline of public steps
ending in one) whose choice is covered by one public budget, fixed before the data are
read. Each trial draws a candidate at random, fits it with fresh independent noise and
scores it by a noisy sum of a bounded per-row utility; the number of trials is random
and secret, and only the best trial is released (:mod:`._repeat_and_select`).

One trial ``Q`` is a private mechanism of the rows:

* the model, at the candidate's epsilon (its certified spend, or its Renyi curve);
* the score ``sum_i u_i + noise`` with ``u_i`` in [0, 1] (sensitivity 1 under add/remove
  and replace): Laplace noise in pure DP, Gaussian noise under Renyi accounting;
* both on all the rows (sequential composition: the model and the score add), or, with
  ``validation_fraction``, the model on a training part and the score on a validation
  part split by independent public coins (parallel composition: the larger of the two).

A trial's candidate is a uniform draw from the grid (or a draw from the distributions),
on the secret stream, so ``Q`` is a mixture over candidates with data-independent
weights: its Renyi divergence at every order is at most the largest candidate's
(Renyi divergence is jointly quasi-convex; van Erven & Harremoes 2014, Theorem 13).
A Laplace count of the scoring rows (post-processed into the released mean score) is
composed in sequence.

Persons (``fit(X, y, groups=g)``): the unit becomes one person, all of their rows. The
split is one public coin per person (:func:`._private_selection.person_coin_split`), a
trial's score is ``sum_p mean_{i in p} u_i = sum_i u_i / k_i`` (``k_i`` the row's
person's number of rows; adding or removing a person moves it by their mean utility, in
[0, 1]: sensitivity 1 per person), the count is of persons (``sum_i 1 / k_i``,
sensitivity 1), and every candidate is fitted with its part's groups and must certify
add/remove-person neighbours. A candidate's cost is then per person: pure fits,
Gaussian output perturbation (its calibration is the weighted fit's at a person's
weight bound, still ``mu``-GDP) and DP-SGD (persons sampled at the rate ``q``, the
same steps and noise, so the same Renyi curve) unchanged; Gaussian objective
perturbation has no Renyi curve for persons and is refused (:func:`check_person_search`).
"""

import functools
import itertools
from numbers import Real

import numpy as np
from sklearn.base import BaseEstimator, MetaEstimatorMixin, clone, is_classifier
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import ParameterGrid
from sklearn.utils.validation import check_is_fitted

from ..accounting._costs import pure_rdp
from ..accounting._rdp import ORDERS, rdp_to_epsilon
from ..base import atomic_fit
from ..exceptions import InferenceError, PrivacyBudgetError
from ..utils._docstrings import fill_doc
from ..utils._format import format_guarantee
from ..utils._sklearn_compat import HasMethods, Interval, StrOptions
from ..utils._groups import check_groups
from ._private_selection import _SelectionStreams, _select_rows, coin_split, person_coin_split
from ._selection_tests import bounded_utilities, count_epsilon, person_shares
from ._selection_checks import (
    accepts_groups,
    check_private_step_params,
    validate_private_input,
    whole_label_set,
)
from ._accounts import check_label_set_cost, declared_classes
from ._gate import SecretTrials, Statement, check_fit, check_space, private_step
from ._partitioned_rows import (Part, check_partitioned_rows, is_partitioned,
                                partitioned_histogram, partitioned_parts, partitioned_sum)
from ._released import ReleasedModelMixin
from ._scoring import clipped_utility, probe_scoring
from ._repeat_and_select import (
    draw_runs,
    pure_selection_epsilon,
    selection_rdp,
    stopping_parameter,
    stopping_shape,
)

COST_PARAMS = ("epsilon", "delta", "epochs", "sample_rate", "noise_multiplier",
               "count_noise_std", "accountant", "noise", "mode", "neighboring")
"""Private-step parameters that change what a fit costs: a randomised search must give
them as lists, so that the largest cost is known before the data are read."""

_CALIBRATION_STEPS = 40


# -- what one candidate costs -----------------------------------------------------------

def candidate_cost(final, renyi, infinite_budget=False):
    """A candidate's certified cost, from its parameters alone.

    ``renyi=False``: its pure epsilon (refused when it has ``delta > 0`` or certifies
    no finite epsilon). ``renyi=True``: the Renyi curve the estimator declares
    (``final._renyi_cost``, for the label set's size :func:`declared_classes`);
    a mechanism that declares none is refused.
    """
    name = type(final).__name__
    epsilon, delta = final._claimed_spend()
    if not np.isfinite(epsilon) and not infinite_budget:
        raise ValueError(f"{name} with these parameters certifies no finite epsilon (a "
                         "research mode): the search cannot account for it. Nothing was "
                         "fitted.")
    if not renyi:
        if delta:
            raise ValueError(
                f"{name} with delta={delta:g} is not pure DP, and the search has delta=0 "
                "(pure DP): give the search a delta > 0 (Renyi accounting) or the "
                "estimator delta=0. Nothing was fitted.")
        return float(epsilon)
    curve = final._renyi_cost(n_classes=declared_classes(final))
    if curve is None:
        raise ValueError(
            f"{name} with delta={delta:g} is (epsilon, delta)-DP with no Renyi curve, which "
            "the search's accounting needs: use delta=0 (pure DP) for it, or "
            "DPSGDClassifier (Gaussian ObjPertLogisticRegression has one with "
            "neighboring='add_remove', not multinomial). Nothing was fitted.")
    return curve


# -- the plan: every noise scale and the a priori guarantee, from public parameters -----

class SearchPlan:
    """The search's noise scales and its a priori guarantee, fixed before any data.

    Parameters
    ----------
    estimator : estimator or Pipeline
        The private estimator searched over.
    variants : list of dict
        Every combination of cost-relevant parameters a candidate can take.
    epsilon, delta : float
        The whole search's budget (``delta=0``: pure DP).
    eta : float
        Shape of the law of the number of trials.
    mean_trials : float
        Its mean, > 1.
    score_share : float
        With the score on the training rows, its share of a trial's budget.
    held_out : bool
        Whether the score is on a validation part (parallel composition).
    """

    def __init__(self, estimator, variants, epsilon, delta, eta, mean_trials, score_share,
                 held_out):
        self.estimator, self.variants = estimator, variants
        self.budget = (float(epsilon), float(delta))
        self.eta, self.mean_trials = eta, float(mean_trials)
        self.gamma = stopping_parameter(eta, mean_trials)
        self.score_share, self.held_out = float(score_share), held_out
        self.renyi = bool(delta)
        _, self.prefix = private_step(estimator)
        self.searched_epsilon = any(self.prefix + "epsilon" in v for v in variants)
        self.count_epsilon = count_epsilon(epsilon)
        if self.renyi:
            self._plan_renyi()
        else:
            self._plan_pure()

    def _final(self, variant, epsilon=None):
        params = dict(variant)
        if epsilon is not None:
            params[self.prefix + "epsilon"] = epsilon
        return private_step(clone(self.estimator).set_params(**params))[0]

    def _plan_pure(self):
        epsilon, _ = self.budget
        trial = (epsilon - self.count_epsilon) / (2 + self.eta)
        self.score_epsilon = trial if self.held_out else self.score_share * trial
        model_cap = trial if self.held_out else (1 - self.score_share) * trial
        if self.searched_epsilon:
            costs = [candidate_cost(self._final(v), False, not np.isfinite(epsilon))
                     for v in self.variants]
            largest = max(costs)
            if largest > model_cap * (1 + 1e-12):
                raise PrivacyBudgetError(
                    f"The grid's largest candidate epsilon, {largest:g}, does not fit: a "
                    f"whole-search budget of {epsilon:g} allows candidates up to "
                    f"{model_cap:.4g} (each trial is repeated a secret random number of "
                    f"times and the best released, which costs {2 + self.eta:g} trials; "
                    f"{self.count_epsilon:g} goes to the row count). Nothing was fitted.")
            self.candidate_epsilon = None
        else:
            for v in self.variants:
                candidate_cost(self._final(v, model_cap), False, not np.isfinite(epsilon))
            self.candidate_epsilon, largest = model_cap, model_cap
        self.model_cap = largest
        self.score_noise = {"kind": "laplace", "scale": 1.0 / self.score_epsilon}
        trial_cost = max(largest, self.score_epsilon) if self.held_out else (
            largest + self.score_epsilon)
        self.a_priori = (self.count_epsilon + pure_selection_epsilon(trial_cost, self.eta), 0.0)

    def _score_sd(self, scale):
        """The Gaussian score's standard deviation at the trial scale ``scale``."""
        return 1.0 / (scale if self.held_out else self.score_share * scale)

    def _total_rdp(self, model_rdp, score_sd):
        score_rdp = ORDERS / (2 * score_sd**2)
        trial = (np.maximum(model_rdp, score_rdp) if self.held_out
                 else model_rdp + score_rdp)
        return selection_rdp(trial, self.eta, self.gamma) + pure_rdp(self.count_epsilon)

    def _search_rdp(self, scale):
        """The whole search's RDP at :data:`ORDERS` with trials at ``scale``."""
        if self.searched_epsilon:
            finals = [self._final(v) for v in self.variants]
        else:
            finals = [self._final(v, scale) for v in self.variants]
        model_rdp = np.max([candidate_cost(f, renyi=True) for f in finals], axis=0)
        return self._total_rdp(model_rdp, self._score_sd(scale))

    def _renyi_epsilon(self, scale):
        """Whole-search epsilon (at the budget's delta) with trials at ``scale``."""
        return rdp_to_epsilon(self._search_rdp(scale), self.budget[1])

    def _plan_renyi(self):
        epsilon, delta = self.budget
        if self.searched_epsilon:
            scale = max(self._final(v)._claimed_spend()[0] for v in self.variants)
            total = self._renyi_epsilon(scale)
            if total > epsilon:
                raise PrivacyBudgetError(
                    f"The grid's candidates cost the whole search ({total:.4g}, {delta:g})-"
                    f"DP, above the budget ({epsilon:g}, {delta:g}): lower the grid's "
                    "epsilons or raise the budget. Nothing was fitted.")
            self.candidate_epsilon = None
        else:
            scale, total = self._largest_scale()
            self.candidate_epsilon = scale
        self.score_noise = {"kind": "gaussian", "scale": self._score_sd(scale)}
        self.total_rdp = self._search_rdp(scale)
        self.a_priori = (float(total), delta)

    def _largest_scale(self):
        """The largest candidate epsilon whose search fits the budget (bisection in log)."""
        epsilon, delta = self.budget

        def fits(scale):
            try:
                total = self._renyi_epsilon(scale)
            except PrivacyBudgetError:
                return False, None  # the estimator refuses so small an epsilon
            return total <= epsilon, total

        high = epsilon
        ok, total = fits(high)
        if ok:
            return high, total
        low = high  # step down until a scale fits (the estimator may refuse tiny ones)
        for _ in range(_CALIBRATION_STEPS):
            low /= 2
            ok, low_total = fits(low)
            if ok or low_total is None:
                break  # fits, or refused: smaller scales are refused too
        if not ok:
            raise PrivacyBudgetError(
                f"No candidate epsilon fits the budget ({epsilon:g}, {delta:g}) for this "
                "estimator (its training length needs more, or the search's repetition "
                "costs more than the budget): raise the budget or shorten the training. "
                "Nothing was fitted.")
        high = low * 2
        total = low_total
        for _ in range(_CALIBRATION_STEPS):
            middle = np.sqrt(low * high)
            ok, middle_total = fits(middle)
            if ok:
                low, total = middle, middle_total
            else:
                high = middle
            if high / low < 1 + 1e-3:
                break
        return float(low), total

    def describe(self):
        """The plan as released in the report (public quantities only)."""
        return {"stopping_shape": self.eta, "stopping_parameter": self.gamma,
                "mean_trials": self.mean_trials,
                "candidate_epsilon": self.candidate_epsilon,
                "score_noise": dict(self.score_noise),
                "count_epsilon": self.count_epsilon,
                "scoring_rows": "validation part" if self.held_out else "all rows",
                "accounting": ("Renyi DP (Papernot & Steinke 2022, Theorem 2), converted "
                               "by Canonne, Kamath & Steinke 2020, Prop. 12" if self.renyi
                               else f"pure DP: {2 + self.eta:g} times a trial (Liu & "
                                    "Talwar 2019; Papernot & Steinke 2022)")}


# -- candidates -------------------------------------------------------------------------

def _as_list_of_dicts(space):
    return [space] if isinstance(space, dict) else list(space)


def _draw_candidate(space, rng, grid):
    """One candidate: a uniform draw from the grid, or one draw of every distribution."""
    if grid is not None:
        return grid[int(rng.integers(len(grid)))]
    spaces = _as_list_of_dicts(space)
    chosen = spaces[int(rng.integers(len(spaces)))]
    candidate = {}
    for name in sorted(chosen):
        values = chosen[name]
        if hasattr(values, "rvs"):
            candidate[name] = values.rvs(random_state=rng)
        else:
            candidate[name] = values[int(rng.integers(len(values)))]
    return candidate


def _cost_variants(space, prefix, grid, extra_names=()):
    """Every combination of the cost-relevant parameters a candidate can take
    (``COST_PARAMS`` and ``extra_names``)."""
    cost_names = {prefix + name for name in COST_PARAMS + tuple(extra_names)}
    if grid is not None:
        variants = [{k: v for k, v in c.items() if k in cost_names} for c in grid]
    else:
        variants = []
        for chosen in _as_list_of_dicts(space):
            lists = {}
            for name, values in chosen.items():
                if name not in cost_names:
                    continue
                if hasattr(values, "rvs"):
                    raise ValueError(
                        f"{name!r} changes what a fit costs, so its values must be a list "
                        "(the search's cost is the largest candidate's, known before the "
                        "data are read), not a distribution.")
                lists[name] = list(values)
            names = sorted(lists)
            variants += [dict(zip(names, combo))
                         for combo in itertools.product(*(lists[n] for n in names))]
    unique = []
    for variant in variants:
        if variant not in unique:
            unique.append(variant)
    return unique or [{}]


def _check_renyi_classes(plan, classes):
    """Refuse, before any noise, a label set whose size changes a candidate's Renyi
    curve from the one the plan charged (computed for the declared ``classes``, else
    two)."""
    if not plan.renyi:
        return
    for variant in plan.variants:
        check_label_set_cost(plan._final(variant), len(classes))


def _check_no_step_replaced(estimator, space):
    """Refuse a space that replaces a Pipeline's steps (``"<step>"`` or ``"steps"`` as a
    key): the plan's costs and the public-preprocessing check read the steps given, so
    a candidate must change their parameters (``"<step>__<param>"``), never the steps."""
    from sklearn.pipeline import Pipeline

    if not isinstance(estimator, Pipeline):
        return
    names = {name for name, _ in estimator.steps} | {"steps"}
    for chosen in _as_list_of_dicts(space):
        replaced = sorted(names & set(chosen))
        if replaced:
            raise ValueError(
                f"The search space replaces the Pipeline's {replaced[0]!r}: the search "
                "plans its cost and checks its public steps on the steps given, so search "
                "over their parameters ('<step>__<param>') instead. Nothing was fitted.")


def check_person_search(estimator, space, grid, who):
    """Refuse, before any data is read, a search over persons (``groups``) that its
    candidates cannot take.

    Every candidate is a fresh fit ``fit(X, y, groups=...)`` that must certify
    add/remove-person neighbours and whose certified cost must hold per person.
    Refused: an estimator whose ``fit`` does not take ``groups``
    (:func:`~._selection_checks.accepts_groups`), and any candidate of the space
    with ``neighboring="replace"`` (a replace-person guarantee does not cover adding
    or removing a person), ``data_norm="private"`` (a bound private per row) or
    Gaussian ``ObjPertLogisticRegression`` (its Renyi curve is a record's, and the
    search's Renyi accounting has no place for its (epsilon, delta); with
    ``delta=0`` it is refused as any approximate-DP candidate). ``data_norm`` must
    then be a list in a randomised search.
    """
    final, prefix = private_step(estimator)
    name = type(final).__name__
    if not accepts_groups(final):
        raise ValueError(
            f"{who} with groups fits every candidate with fit(X, y, groups=...), and "
            f"{name} does not take groups: choose an estimator with person-level "
            "privacy, or fit without groups (one row is then the unit of privacy). "
            "Nothing was fitted.")
    for variant in _cost_variants(space, prefix, grid, ("data_norm",)):
        configured = clone(estimator).set_params(**variant)
        candidate = check_fit(configured, Statement(who, persons=True, trials=True))
        if candidate.get_params().get("delta") and candidate._renyi_cost(
                n_classes=declared_classes(candidate), persons=True) is None:
            raise ValueError(
                f"{who} with groups: {name} with delta > 0 fitted with groups has no Renyi "
                "curve (Gaussian objective perturbation needs one gradient direction per "
                "record, which a person's rows do not keep), and the search's accounting "
                "needs one. Use delta=0 for it (pure DP), DPSGDClassifier or Gaussian "
                "output perturbation. Nothing was fitted.")


def trial_sum(utility, model, X, y, shares=None):
    """A trial's score before noise: ``sum_i u_i`` over the scoring rows, or with
    persons (``shares``, each row's ``1 / k_i``, all of a person's rows in this part)
    ``sum_p mean_{i in p} u_i = sum_i u_i / k_i``. Adding or removing one row (one
    person, all of their rows) moves it by at most 1: sensitivity 1."""
    if is_partitioned(X):  # partition by partition, on the dask graph
        return partitioned_sum(functools.partial(utility, model), X, y, shares)
    utilities = utility(model, X, y)
    return float(np.sum(utilities) if shares is None else np.sum(shares * utilities))


def scored_size(y, shares=None):
    """The scoring rows' size before noise: their number, or with persons (``shares``)
    the number of persons, ``sum_i 1 / k_i`` (sensitivity 1)."""
    if shares is None:
        return len(y)
    if is_partitioned(shares):
        return float(partitioned_histogram(y, None, shares)[0])
    return float(np.sum(shares))


def _memory_parts(X, y, groups, codes, validation_fraction, public_rng):
    """``(fitted part, scored part)`` of rows in memory: one public coin per row (per
    person with ``codes``), or every row for both when ``validation_fraction`` is None;
    with persons, the fitted part's groups and the scored rows' shares ``1 / k`` (a
    person's rows all in one part)."""
    shares = None if codes is None else person_shares(codes)
    if validation_fraction is None:
        every = Part(X, y, groups, shares)
        return every, every
    in_validation = (coin_split(len(y), validation_fraction, public_rng) if codes is None
                     else person_coin_split(codes, validation_fraction, public_rng))

    def cut(mask):
        return Part(_select_rows(X, mask), np.asarray(y)[mask],
                    None if codes is None else groups[mask],
                    None if codes is None else shares[mask])

    return cut(~in_validation), cut(in_validation)


def _check_fresh_noise(random_states, user_random_state):
    """Refuse, before any fit, trials that would share their noise.

    ``None`` everywhere is fresh cryptographic noise. In reproducibility mode every
    trial has a generator of its own (distinct objects in distinct states), and none
    is the user's own seed or generator.
    """
    if all(rs is None for rs in random_states):
        return
    states = []
    for rs in random_states:
        if not isinstance(rs, np.random.Generator) or rs is user_random_state:
            raise RuntimeError("A trial would reuse a seed or generator of the user's "
                               "estimator: trials must draw independent noise.")
        states.append(repr(rs.bit_generator.state))
    if len(set(states)) < len(states) or len({id(rs) for rs in random_states}) < len(states):
        raise RuntimeError("Two trials would share their noise (the same generator or "
                           "state): their releases would not compose. Nothing was fitted.")


# -- the search estimators --------------------------------------------------------------

@fill_doc
class _BasePrivateSearch(ReleasedModelMixin, MetaEstimatorMixin, BaseEstimator):
    """Shared by :class:`PrivateGridSearchCV` and :class:`PrivateRandomizedSearchCV`."""

    _parameter_constraints = {
        "estimator": [HasMethods(["fit", "predict"])],
        "epsilon": [Interval(Real, 0, None, closed="right")],
        "delta": [Interval(Real, 0, 1, closed="left")],
        "stopping": [StrOptions({"geometric", "logarithmic"}),
                     Interval(Real, 0, None, closed="left")],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither"), None],
        "score_share": [Interval(Real, 0, 1, closed="neither")],
        "scoring": [None, StrOptions({"accuracy"}), callable],
        "refit": ["boolean"],
        "random_state": ["random_state", np.random.Generator],
        "verbose": ["verbose"],
    }

    def _space(self):
        raise NotImplementedError

    def _grid(self):
        return None

    def _mean_trials(self, grid):
        raise NotImplementedError

    def _check_scoring(self, estimator):
        """The per-row utility in [0, 1] (``bounded_utilities`` with the regressor's
        ``y_bound``), or a user's per-row utility, clipped into [0, 1]."""
        if is_classifier(estimator) or self.scoring is not None:
            y_bound = None
        else:
            y_bound = private_step(estimator)[0].get_params().get("y_bound")
            if y_bound is None or not np.isfinite(y_bound) or y_bound <= 0:
                raise ValueError(
                    "A private search over a regressor scores 1 - min(1, (y - y_hat)^2 / "
                    "(4 y_bound^2)) with y clipped to the public y_bound: set the "
                    f"regressor's y_bound to a finite public bound on |y| (got {y_bound!r}).")
        if self.scoring is None or self.scoring == "accuracy":
            if self.scoring == "accuracy" and not is_classifier(estimator):
                raise ValueError("scoring='accuracy' needs a classifier.")
            return lambda model, X, y: bounded_utilities(model, X, y, y_bound)
        return clipped_utility(self.scoring)

    def plan(self):
        """The search's plan from its public parameters alone (no data read).

        Returns
        -------
        plan : SearchPlan
            Noise scales, candidate epsilon and the a priori guarantee; raises
            before any data is read when the budget cannot cover the search.
        """
        estimator = self.estimator
        check_private_step_params(estimator, who=type(self).__name__)
        _check_no_step_replaced(estimator, self._space())
        check_space(estimator, self._space(), Statement(type(self).__name__, trials=True))
        _, prefix = private_step(estimator)
        grid = self._grid()
        # under Renyi accounting the estimator may declare more parameters its curve reads
        extra = getattr(private_step(estimator)[0], "_renyi_cost_params", ()) if self.delta else ()
        return SearchPlan(estimator, _cost_variants(self._space(), prefix, grid, extra),
                          self.epsilon, self.delta, stopping_shape(self.stopping),
                          self._mean_trials(grid), self.score_share,
                          self.validation_fraction is not None)

    def check_before_data(self, persons=False):
        """Every refusal that reads no data, in the order :meth:`fit` makes them.

        Parameters
        ----------
        persons : bool, default=False
            Whether the search is fitted with ``groups``.

        Returns
        -------
        plan : SearchPlan
        """
        if persons:  # what the candidates cannot take with groups, before anything else
            check_private_step_params(self.estimator, who=type(self).__name__, persons=True)
            check_person_search(self.estimator, self._space(), self._grid(),
                                type(self).__name__)
        plan = self.plan()
        self._check_scoring(self.estimator)
        return plan

    @atomic_fit(prefer_skip_nested_validation=False)
    def fit(self, X, y, groups=None):
        """Search privately and release the best trial's model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The private rows; a dask array or DataFrame is split, fitted and scored
            on the dask graph (the in-memory search's release for any chunking; a
            Pipeline's preprocessing must then be BoundedScaler or Clipper, applied
            lazily, and anything else is refused before any partition is computed).
        y : array-like of shape (n_samples,)
            Labels or targets (a dask array or Series beside a dask ``X``).
        groups : array-like of shape (n_samples,), default=None
            The person of each row (any labels, or a dask array or Series; a wrong
            length or a missing label is refused before any noise). Given, the unit of
            privacy is one person, all of their rows (``privacy_report_["neighboring"] ==
            "add_remove_person"``): ``validation_fraction`` splits by one public coin per
            person; a trial's score sums over persons each person's mean utility
            (sensitivity 1 per person) and the noisy count counts persons, so
            ``best_score_`` is a mean over persons; every candidate is fitted with its
            part's groups (a Pipeline's private step as ``<step>__groups``) and must certify
            add/remove-person neighbours. Refused before any data is read: an estimator
            whose ``fit`` takes no ``groups``, ``neighboring="replace"``,
            ``data_norm="private"`` and Gaussian ``ObjPertLogisticRegression`` (no Renyi
            curve for persons).

        Returns
        -------
        self : object
        """
        estimator = self.estimator
        persons = groups is not None
        plan = self.check_before_data(persons)  # every refusal on public parameters first
        utility = self._check_scoring(estimator)
        final, prefix = private_step(estimator)
        partitioned = is_partitioned(X, y, groups)
        if partitioned:  # every check in one pass over the partitions, before any noise
            rows = check_partitioned_rows(self, estimator, X, y, groups, type(self).__name__)
        else:
            X, y = validate_private_input(self, estimator, X, y)
        if persons and not partitioned:
            codes = check_groups(groups, len(y))  # bad groups: refused before any noise
            groups = np.asarray(groups).reshape(len(y))
        extra = {}
        if is_classifier(estimator) and "classes" in final.get_params():
            extra[prefix + "classes"] = (rows.classes if partitioned
                                         else whole_label_set(final, y))
            _check_renyi_classes(plan, extra[prefix + "classes"])
        if self.scoring is not None:  # a user's utility, tried on public input first
            probe_scoring(utility, estimator, X, extra.get(prefix + "classes"))
        user_random_state = final.get_params().get("random_state")
        streams = _SelectionStreams(self.random_state, user_random_state)
        noise_rng = streams.noise()
        # the number of trials, their candidates and their noise streams: drawn before
        # the data are read, kept secret, checked for shared noise
        n_trials = draw_runs(plan.eta, plan.gamma, noise_rng)
        grid = self._grid()
        candidates = [_draw_candidate(self._space(), noise_rng, grid) for _ in range(n_trials)]
        random_states = [streams.rungs.next()[1] for _ in range(n_trials)]
        _check_fresh_noise(random_states, user_random_state)
        budget_params = ({} if plan.candidate_epsilon is None
                         else {prefix + "epsilon": plan.candidate_epsilon})
        self._check_candidates(plan, candidates, budget_params)
        fitted, scored = (partitioned_parts(rows, self.validation_fraction, streams.coins())
                          if partitioned else  # the same parts, on the dask graph
                          _memory_parts(X, y, groups, codes if persons else None,
                                        self.validation_fraction, streams.coins()))
        # the scoring rows' count (of persons: sum of shares, sensitivity 1)
        size = scored_size(scored.y, scored.shares)
        noisy_count = size + noise_rng.laplace(scale=1.0 / plan.count_epsilon)
        trials = SecretTrials(estimator, fitted.X, fitted.y, type(self).__name__,
                              fitted.groups)
        best = None
        for candidate, random_state in zip(candidates, random_states):
            model, speech = trials.fit({**candidate, **budget_params, **extra}, random_state)
            noisy_sum = trial_sum(utility, model, scored.X, scored.y, scored.shares) + float(
                self._score_noise(plan, noise_rng))
            if trials.intervals_refused(model):
                continue   # its intervals refused (inference=True): it cannot win
            if best is None or noisy_sum > best[0]:
                best = (noisy_sum, candidate, model, speech)
        if best is None:
            raise InferenceError(
                f"{type(self).__name__}: no trial's intervals could be given "
                "(inference=True; see docs/privacy/inference.rst); the budget is spent and "
                "nothing was released.")
        noisy_sum, candidate, model, speech = best
        model = trials.release(model, speech, user_random_state)  # only it speaks
        self._release(plan, candidate, model, noisy_sum, noisy_count, persons)
        return self

    @staticmethod
    def _check_candidates(plan, candidates, budget_params):
        """Every drawn candidate within the plan's cost (a distribution over a
        cost-free parameter cannot change it; checked all the same, before any data)."""
        if plan.renyi:
            return  # the Renyi plan covers every cost variant of the space
        for candidate in candidates:
            final = plan._final({**candidate, **budget_params})
            if candidate_cost(final, False, True) > plan.model_cap * (1 + 1e-12):
                raise RuntimeError("A drawn candidate costs more than the plan allows.")

    @staticmethod
    def _score_noise(plan, rng):
        if plan.score_noise["kind"] == "laplace":
            return rng.laplace(scale=plan.score_noise["scale"])
        return rng.normal(scale=plan.score_noise["scale"])

    def _release(self, plan, candidate, model, noisy_sum, noisy_count, persons=False):
        score = noisy_sum / max(noisy_count, 1.0)
        self.best_params_ = dict(candidate)
        self.best_score_ = float(score)
        self.best_index_ = 0
        self.cv_results_ = {
            "params": [dict(candidate)],
            "mean_test_score": np.array([score]),
            "rank_test_score": np.array([1], dtype=np.int32),
            **{f"param_{k}": np.ma.MaskedArray([v], dtype=object) for k, v in candidate.items()},
        }
        if self.refit:
            self.best_estimator_ = self._named(model)
        self.privacy_report_ = search_report(self, plan, model, score, noisy_count, persons)
        if self.verbose:
            print(f"[{type(self).__name__}] {self.privacy_report_['statement']}", flush=True)

    def _released(self):
        check_is_fitted(self)
        if not hasattr(self, "best_estimator_"):
            raise NotFittedError(f"{type(self).__name__} was fitted with refit=False: no "
                                 "model was kept.")
        return self.best_estimator_

    def _inner(self):
        return self.estimator

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = True
        return tags


def search_report(search, plan, model, score, noisy_count, persons=False):
    """``privacy_report_`` of a private search, with a statement to sign (``persons``:
    fitted with ``groups``, the unit of privacy one person, all of their rows)."""
    epsilon, delta = plan.a_priori
    fmt = format_guarantee(epsilon, delta)
    final, _ = private_step(model)
    name = type(final).__name__
    spent = (float(final.epsilon_spent_), float(final.delta_spent_))
    if persons:
        scoring_rows = ("a validation part of the persons, split from the training part "
                        "by one independent coin per person (all of a person's rows on "
                        "one side)" if plan.held_out else "the same persons")
        score_text = ("a noisy sum over persons of each person's mean per-row utility in "
                      f"[0, 1] on {scoring_rows}, over a noisy count of persons")
        unit = "any one person (all of their rows)"
    else:
        scoring_rows = ("a validation part of the records, split from the training part "
                        "by independent coins" if plan.held_out else "the same records")
        score_text = f"a noisy sum of a per-row utility in [0, 1] on {scoring_rows}"
        unit = "any one record (row)"
    statement = (
        f"The search fitted {name} candidates drawn at random from the grid, each with "
        f"fresh noise, a secret random number of times (mean {plan.mean_trials:g}), scored "
        f"each by {score_text}, and "
        f"released only the best: its parameters, its model and its noisy score "
        f"{score:.4f}. Everything released, the choice included, is {fmt}-differentially "
        f"private with respect to adding or removing {unit} among those "
        "given. This figure was fixed before the data were read and is the same on every "
        "run. The number of trials, the other candidates and their scores are not released "
        "and must not be: the guarantee depends on their staying secret (the search's "
        "running time reveals the number of trials to whoever watches it).")
    return {
        "selection": "private (random stopping)",
        "neighboring": "add_remove_person" if persons else "add_remove",
        "unit": "person" if persons else "row",
        "a_priori": {"epsilon": epsilon, "delta": delta},
        "ex_post": {"epsilon": epsilon, "delta": delta},
        "budget": {"epsilon": plan.budget[0], "delta": plan.budget[1]},
        "plan": plan.describe(),
        "released_model": {"params": dict(search.best_params_),
                           "epsilon": spent[0], "delta": spent[1]},
        "transcript": {"best_noisy_score": score, "noisy_count": float(noisy_count)},
        "resolution": {"score_noise_sd": float(
            plan.score_noise["scale"] * (np.sqrt(2) if plan.score_noise["kind"] == "laplace"
                                         else 1.0) / max(noisy_count, 1.0))},
        "statement": statement,
    }


_SEARCH_PARAMS = """epsilon : float, default=1.0
        The whole search's budget, fixed before the data are read: everything
        released (the chosen parameters, the model, its noisy score) is
        ``epsilon``-DP (``delta=0``) or ``(epsilon, delta)``-DP.
    delta : float, default=0.0
        ``0``: pure DP (candidates must be pure). ``> 0``: Renyi accounting, for
        :class:`~skdp.DPSGDClassifier`, Gaussian output perturbation and pure candidates.
    stopping : {"logarithmic", "geometric"} or float, default="logarithmic"
        The law of the secret number of trials (a truncated negative binomial of
        shape 0 or 1, or the shape itself). In pure DP the search costs ``2 + shape``
        trials whatever their mean: 2 for the logarithmic law, 3 for the geometric
        (Liu & Talwar's), whose number of trials is less often small. On Adult at a
        whole-search epsilon of 1 the logarithmic law's larger candidate epsilon won
        (objective perturbation over four C values, ten seeds: median test accuracy
        0.824 against 0.819); under Renyi accounting it also leaves the candidates
        more (DP-SGD at (1, 1e-5), mean 10 trials: 0.49 against 0.40).
    validation_fraction : float, default=None
        ``None``: every candidate is fitted and scored on all the rows (the model and
        the score compose in sequence; the released model has seen every row). A
        float: each row goes to a validation part by an independent public coin of
        that probability; candidates are fitted on the rest and scored on it (the two
        compose in parallel).
    score_share : float, default=0.1
        With ``validation_fraction=None``, the share of a trial's budget spent on its
        noisy score.
    scoring : None, "accuracy" or callable, default=None
        ``None``: accuracy for a classifier, the bounded squared-error utility for a
        regressor (with its public ``y_bound``). A callable ``(model, X, y)`` must return
        one utility per row; values are clipped into [0, 1] (the score's sensitivity
        is 1 whatever the callable returns). Aggregate scorers (AUC, log loss) have
        no bounded per-row form and are refused.
    refit : bool, default=True
        Keep the best trial's model as ``best_estimator_``. It is the model fitted
        inside the search (on all the rows, or on the training part), never refitted:
        a refit would be another release to pay for.
    random_state : None, int or Generator, default=None
        ``None``: fresh cryptographic noise everywhere and fresh public coins.
        Otherwise reproducibility mode (tests, never a release).
    verbose : int, default=0
        Print the statement at the end (never the number of trials)."""

_SEARCH_ATTRIBUTES = """best_estimator_ : estimator
        The released model (with ``refit=True``).
    best_params_ : dict
        The best trial's candidate.
    best_score_ : float
        Its noisy score (a noisy sum over the noisy count of the scoring rows; with
        ``groups``, of the persons' mean utilities over the noisy count of persons).
    best_index_ : int
        0: ``cv_results_`` holds the released candidate only.
    cv_results_ : dict
        ``params``, ``mean_test_score``, ``rank_test_score`` and ``param_*`` of the
        released candidate only: the others' scores are not released.
    privacy_report_ : dict
        ``neighboring`` (``"add_remove"``, or ``"add_remove_person"`` with
        ``groups``), ``unit`` (``"row"`` or ``"person"``),
        ``a_priori`` (= ``ex_post``) guarantee, ``budget``, ``plan`` (noise scales,
        law of the trials, accounting), ``released_model``, ``transcript``,
        ``resolution`` and ``statement``.
    n_features_in_ : int
        Number of features seen during fit."""


@fill_doc(fragments={"search_params": _SEARCH_PARAMS, "search_attributes": _SEARCH_ATTRIBUTES})
class PrivateGridSearchCV(_BasePrivateSearch):
    """Grid search whose choice is covered by one public privacy budget.

    A drop-in for :class:`~sklearn.model_selection.GridSearchCV` over the parameters of
    a private estimator, or of a Pipeline of public steps ending in one. Instead of
    fitting every candidate on every fold and choosing by exact scores (a choice no
    guarantee covers), it runs a secret random number of trials, each a candidate
    drawn uniformly from the grid, fitted with fresh noise and scored by a noisy sum of
    a bounded per-row utility, and releases the best trial only (Liu & Talwar 2019;
    Papernot & Steinke 2022). The budget covers everything released.

    Without ``epsilon`` in the grid, every candidate is fitted at the largest epsilon
    the budget allows (``privacy_report_["plan"]["candidate_epsilon"]``). With it, the
    grid's epsilons are used as given and must fit the budget (refused before any data
    otherwise); the search then costs what its largest candidate costs.

    Parameters
    ----------
    estimator : estimator object
        A private estimator with ``epsilon`` and ``random_state`` parameters, or a
        Pipeline of public steps ending in one.
    param_grid : dict or list of dict
        The grid, as :class:`~sklearn.model_selection.GridSearchCV` takes it.
    mean_trials : float, default=None
        Mean of the secret number of trials (> 1). ``None``: twice the grid's size, at
        least 10. In pure DP the cost does not depend on it; under Renyi accounting it
        adds ``log(mean_trials) / (lambda - 1)`` at order ``lambda``.
    %(search_params)s

    Attributes
    ----------
    %(search_attributes)s

    See Also
    --------
    PrivateRandomizedSearchCV : The same with candidates drawn from distributions.
    EpsilonForUtility : The smallest epsilon that meets a target utility.
    skdp.model_selection.privacy_cost_of_search : What a non-private search costs.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from skdp import ObjPertLogisticRegression
    >>> from skdp.model_selection import PrivateGridSearchCV
    >>> X, y = make_classification(n_samples=2000, random_state=0)
    >>> search = PrivateGridSearchCV(ObjPertLogisticRegression(data_norm=5.0),
    ...                              {"C": [0.1, 1.0, 10.0]}, epsilon=1.0,
    ...                              random_state=0).fit(X, y)
    >>> sorted(search.best_params_)
    ['C']
    >>> search.privacy_report_["a_priori"]["epsilon"] <= 1.0
    True
    """

    _parameter_constraints = {**_BasePrivateSearch._parameter_constraints,
                              "param_grid": [dict, list],
                              "mean_trials": [Interval(Real, 1, None, closed="neither"), None]}

    def __init__(self, estimator, param_grid, *, epsilon=1.0, delta=0.0, mean_trials=None,
                 stopping="logarithmic", validation_fraction=None, score_share=0.1,
                 scoring=None, refit=True, random_state=None, verbose=0):
        self.estimator = estimator
        self.param_grid = param_grid
        self.epsilon = epsilon
        self.delta = delta
        self.mean_trials = mean_trials
        self.stopping = stopping
        self.validation_fraction = validation_fraction
        self.score_share = score_share
        self.scoring = scoring
        self.refit = refit
        self.random_state = random_state
        self.verbose = verbose

    def _space(self):
        return self.param_grid

    def _grid(self):
        grid = list(ParameterGrid(self.param_grid))
        if not grid:
            raise ValueError("param_grid is empty.")
        return grid

    def _mean_trials(self, grid):
        return self.mean_trials if self.mean_trials is not None else max(10, 2 * len(grid))


@fill_doc(fragments={"search_params": _SEARCH_PARAMS, "search_attributes": _SEARCH_ATTRIBUTES})
class PrivateRandomizedSearchCV(_BasePrivateSearch):
    """Randomised search whose choice is covered by one public privacy budget.

    A drop-in for :class:`~sklearn.model_selection.RandomizedSearchCV`: as
    :class:`PrivateGridSearchCV`, with each trial's candidate one draw from
    ``param_distributions`` (lists drawn uniformly, scipy distributions by ``rvs``),
    on the secret stream. Parameters that change what a fit costs (``epsilon``,
    ``delta``, ``epochs``, ``sample_rate``, ...) must be lists.

    Parameters
    ----------
    estimator : estimator object
        A private estimator with ``epsilon`` and ``random_state`` parameters, or a
        Pipeline of public steps ending in one.
    param_distributions : dict or list of dict
        As :class:`~sklearn.model_selection.RandomizedSearchCV` takes it.
    n_iter : float, default=10
        Mean of the secret number of trials (> 1); unlike scikit-learn's, the number
        itself is random and never released.
    %(search_params)s

    Attributes
    ----------
    %(search_attributes)s

    See Also
    --------
    PrivateGridSearchCV : The same over a grid.

    Examples
    --------
    >>> from scipy.stats import loguniform
    >>> from sklearn.datasets import make_classification
    >>> from skdp import ObjPertLogisticRegression
    >>> from skdp.model_selection import PrivateRandomizedSearchCV
    >>> X, y = make_classification(n_samples=2000, random_state=0)
    >>> search = PrivateRandomizedSearchCV(ObjPertLogisticRegression(data_norm=5.0),
    ...                                    {"C": loguniform(0.01, 100)}, epsilon=1.0,
    ...                                    random_state=0).fit(X, y)
    >>> bool(0.01 <= search.best_params_["C"] <= 100)
    True
    """

    _parameter_constraints = {**_BasePrivateSearch._parameter_constraints,
                              "param_distributions": [dict, list],
                              "n_iter": [Interval(Real, 1, None, closed="neither")]}

    def __init__(self, estimator, param_distributions, *, n_iter=10, epsilon=1.0, delta=0.0,
                 stopping="logarithmic", validation_fraction=None, score_share=0.1,
                 scoring=None, refit=True, random_state=None, verbose=0):
        self.estimator = estimator
        self.param_distributions = param_distributions
        self.n_iter = n_iter
        self.epsilon = epsilon
        self.delta = delta
        self.stopping = stopping
        self.validation_fraction = validation_fraction
        self.score_share = score_share
        self.scoring = scoring
        self.refit = refit
        self.random_state = random_state
        self.verbose = verbose

    def _space(self):
        return self.param_distributions

    def _mean_trials(self, grid):
        return self.n_iter

