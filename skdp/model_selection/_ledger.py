"""One budget for a whole analysis: a privacy filter with an odometer.

The analyst opens a :class:`PrivacyLedger` with a total budget and runs every private
fit of the analysis through it. Before a fit, the ledger charges what the fit can cost
at most (its a priori figure, a function of its public parameters) and refuses, before
any noise, a fit that would take the total past the budget; afterwards it records what
the fit certifies. Which fit comes next, and its budget, may depend on everything
released before: the ledger is a privacy filter for fully adaptive composition.

* ``composition="basic"``: the sum of the fits' (epsilon, delta). For pure fits the
  privacy loss of the whole analysis is the sum of the fits' losses pointwise, each at
  most the fit's realised (ex-post) epsilon, so the filter may record ex-post figures.
  Fits with delta > 0 are recorded at their a priori figure (Rogers, Roth, Ullman &
  Vadhan 2016, basic composition filter).
* ``composition="renyi"``: one Renyi order ``alpha``, fixed when the ledger is opened;
  every fit charges its RDP at ``alpha`` and the filter keeps the sum within the Renyi
  budget that converts to the ledger's ``(epsilon, delta)`` (Feldman & Zrnic 2021, Renyi
  filter; conversion of Canonne, Kamath & Steinke 2020). For Gaussian-noise fits
  (DP-SGD, Gaussian output perturbation) this admits far more fits than the basic sum;
  fits without a Renyi curve are refused.
"""

import numpy as np
from sklearn.base import is_classifier

from ..accounting._budget import RenyiFilter, SumFilter
from ..utils._format import format_guarantee
from ..utils._groups import check_groups
from ..utils._random import noise_independence
from ._accounts import check_label_set_cost
from ._analytic_epsilon import AnalyticEpsilonForUtility
from . import _ledger_analysis
from ._epsilon_for_utility import EpsilonForUtility
from ._gate import Statement, check_fit, private_step, route_fit_params
from ._private_search import _BasePrivateSearch, candidate_cost
from ._selection_checks import whole_label_set


def _a_priori(obj, renyi, index, statement):
    """``(epsilon, delta, rdp_at_order, kind)`` the fit of ``obj`` can cost at most,
    from public parameters alone, after every check that reads no data (refusals
    before any charge); ``index`` is the Renyi filter's order in ``ORDERS``."""
    from sklearn.model_selection._search import BaseSearchCV

    if isinstance(obj, BaseSearchCV):
        raise ValueError(
            f"{type(obj).__name__} chooses its candidate by exact scores on the private "
            "rows, a choice no guarantee covers: use skdp.model_selection."
            "PrivateGridSearchCV or PrivateRandomizedSearchCV.")
    if isinstance(obj, _BasePrivateSearch):
        plan = obj.check_before_data(statement.persons)
        rdp = None
        if renyi:
            if not plan.renyi:
                raise ValueError("A pure-DP search (delta=0) has no Renyi curve in this "
                                 "ledger: give it a delta > 0, or open a basic ledger.")
            rdp = float(plan.total_rdp[index])
        return (*plan.a_priori, rdp, "private search")
    if isinstance(obj, AnalyticEpsilonForUtility):
        raise ValueError(
            "AnalyticEpsilonForUtility measures utilities on the rows without noise: the "
            "analytic selection is not covered by any guarantee. A ledger takes "
            "EpsilonForUtility (one public cap on the whole search).")
    if isinstance(obj, EpsilonForUtility):
        if renyi:
            raise ValueError("EpsilonForUtility enters a ledger with composition='basic' "
                             "(its odometers state (epsilon, delta), not a Renyi curve).")
        account, _ = obj.check_before_data(statement.persons)
        epsilon, delta = account.guarantee()[1]
        return float(epsilon), float(delta), None, "private selection of epsilon"
    final = check_fit(obj, statement)
    epsilon, delta = final._claimed_spend()
    if not np.isfinite(epsilon):
        raise ValueError(f"{type(final).__name__} with these parameters certifies no finite "
                         "epsilon (a research mode).")
    rdp = float(candidate_cost(final, renyi=True)[index]) if renyi else None
    return float(epsilon), float(delta), rdp, "fit"


def _check_renyi_curve(obj, y, persons):
    """Refuse, before any noise, a fit whose Renyi curve on these labels (and unit)
    is not the one charged: none at all (a Gaussian objective-perturbation fit with
    ``groups`` has none: its curve is of one record), or another for a label set of
    another size than the declared ``classes`` (else two)."""
    final, _ = private_step(obj)
    name = type(final).__name__
    n_classes = len(whole_label_set(final, y)) if is_classifier(final) else None
    curve = final._renyi_cost(n_classes=n_classes, persons=persons)
    if curve is None:
        raise ValueError(
            f"{name} fitted {'with groups' if persons else 'here'} has no Renyi curve (a "
            "Gaussian objective perturbation's is of one record, and a person's rows have "
            "many): enter it in a ledger with composition='basic'. Nothing was fitted.")
    if n_classes is not None:
        check_label_set_cost(final, n_classes)


def _seeds(obj):
    """The ``random_state`` values that decide a fit's noise (a meta-estimator's own
    and its private estimator's)."""
    inner = getattr(obj, "estimator", None)
    objects = [private_step(obj)[0]] if inner is None else [obj, private_step(inner)[0]]
    seeds = [o.get_params(deep=False).get("random_state") for o in objects
             if hasattr(o, "get_params")]
    return [s for s in seeds if s is not None]


def _realised(obj, epsilon, delta):
    """What a successful fit certifies: pure fits ex post, others a priori."""
    if delta:
        return epsilon, delta
    report = getattr(obj, "privacy_report_", None)
    if isinstance(report, dict) and "ex_post" in report:
        return min(epsilon, float(report["ex_post"]["epsilon"])), delta
    final, _ = private_step(getattr(obj, "best_estimator_", obj))
    spent = getattr(final, "epsilon_spent_", None)
    return (epsilon if spent is None else min(epsilon, float(spent))), delta


def _groups(fit_params):
    """The persons a fit is given (``groups``, or a Pipeline step's ``<step>__groups``)."""
    given = [value for key, value in fit_params.items()
             if (key == "groups" or key.endswith("__groups")) and value is not None]
    return given[0] if given else None


def _n_rows(X):
    return X.shape[0] if hasattr(X, "shape") else len(X)


def _releases(count):
    """The subject of the ledger's statement and its pronoun, singular or plural."""
    if count == 1:
        return "The 1 release of this analysis is", "it"
    return (f"The {count} releases of this analysis, each chosen in view of the earlier "
            "ones, are together", "them")


class PrivacyLedger:
    """One privacy budget for a whole analysis: refuses the fit that would cross it.

    Run every private fit of an analysis through :meth:`fit` (estimators, Pipelines of
    public steps ending in one, :class:`~skdp.PrivateGridSearchCV`,
    :class:`~skdp.PrivateRandomizedSearchCV`,
    :class:`~skdp.EpsilonForUtility`), private scores, Table 1s and cross-validations
    through :meth:`score`, :meth:`describe` and :meth:`cross_validate`, and any other
    release through :meth:`charge`. Each is charged its a priori cost before it runs;
    one that would take the total past the budget raises
    :class:`~skdp.PrivacyBudgetError` before any noise is drawn. A fit that raises
    keeps its charge (a failure is itself an outcome of the private data).

    Parameters
    ----------
    epsilon : float
        The analysis's total epsilon.
    delta : float, default=0.0
        Its total delta (``composition="renyi"`` needs ``delta > 0``).
    composition : {"basic", "renyi"}, default="basic"
        ``"basic"``: the sum of the fits' (epsilon, delta), ex post for pure fits.
        ``"renyi"``: a Renyi filter at one order fixed now (for Gaussian-noise fits).
    order : float, default=None
        The Renyi filter's order, one of the accountant's orders
        (``skdp.accounting._rdp.ORDERS``); ``None``: the order at which a Gaussian
        mechanism's admissible ``mu^2`` is largest, ``argmax (epsilon - shift(alpha,
        delta)) / alpha``. Public.

    Attributes
    ----------
    entries : list of dict
        One per charge: what, ``a_priori`` and ``realised`` (epsilon, delta) and, in
        Renyi mode, ``rdp``.
    unit : {"row", "person"} or None
        The unit of privacy of the ledger's fits: ``"person"`` when they are given
        ``groups``; one ledger takes fits of one unit (``None`` before the first).

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from skdp import ObjPertLogisticRegression, PrivacyBudgetError
    >>> from skdp import PrivacyLedger
    >>> X, y = make_classification(n_samples=300, random_state=0)
    >>> ledger = PrivacyLedger(epsilon=1.0)
    >>> model = ledger.fit(ObjPertLogisticRegression(epsilon=0.6, data_norm=1.0), X, y)
    >>> ledger.spent
    (0.6, 0.0)
    >>> try:
    ...     ledger.fit(ObjPertLogisticRegression(epsilon=0.6, data_norm=1.0), X, y)
    ... except PrivacyBudgetError as error:
    ...     print("refused")
    refused
    """

    def __init__(self, epsilon, delta=0.0, *, composition="basic", order=None):
        if not (np.isfinite(epsilon) and epsilon > 0):
            raise ValueError(f"epsilon must be finite and > 0, got {epsilon!r}.")
        if not 0 <= delta < 1:
            raise ValueError(f"delta must be in [0, 1), got {delta!r}.")
        if composition not in ("basic", "renyi"):
            raise ValueError(f"composition must be 'basic' or 'renyi', got {composition!r}.")
        self.epsilon, self.delta, self.composition = float(epsilon), float(delta), composition
        self._filter = (RenyiFilter(self.epsilon, self.delta, order) if composition == "renyi"
                        else SumFilter(self.epsilon, self.delta))
        self.entries = []
        self._seeds = []
        self.unit = None

    @property
    def order(self):
        """The Renyi filter's order (``None`` for basic composition)."""
        return getattr(self._filter, "order", None)

    @property
    def rdp_budget(self):
        """The Renyi budget at :attr:`order` (``None`` for basic composition)."""
        return getattr(self._filter, "budget", None)

    @property
    def spent(self):
        """``(epsilon, delta)`` certified so far (Renyi mode: the sum's conversion)."""
        return self._filter.spent

    @property
    def remaining(self):
        """``(epsilon, delta)`` left for basic composition; in Renyi mode, the Renyi
        budget left at ``order``."""
        return self._filter.remaining

    def _record(self, what, epsilon, delta, rdp):
        """Admit and charge a release (refused before any noise), and enter it."""
        rdp = self._filter.cost(epsilon, delta, rdp) if self.composition == "renyi" else None
        index = self._filter.charge(what, float(epsilon), float(delta), rdp)
        entry = {"what": what, "a_priori": (float(epsilon), float(delta)),
                 "realised": (float(epsilon), float(delta)), "rdp": rdp}
        self.entries.append(entry)
        return index, entry

    def charge(self, epsilon, delta=0.0, *, what="a release"):
        """Charge a release made outside :meth:`fit`, refusing it if it does not fit.

        Parameters
        ----------
        epsilon, delta : float
            The release's certified cost.
        what : str, default="a release"
            Its description in ``entries``.

        Returns
        -------
        entry : dict
        """
        return self._record(what, epsilon, delta, None)[1]

    def fit(self, estimator, X, y=None, **fit_params):
        """Charge ``estimator``'s a priori cost, then fit it (refused before any noise).

        Parameters
        ----------
        estimator : estimator object
            A private estimator (or a Pipeline of public steps ending in one), a
            private search or ``EpsilonForUtility``.
        X, y : array-like
            The private rows.
        **fit_params : dict
            Passed to ``estimator.fit``.

        Returns
        -------
        estimator : object
            The fitted estimator.
        """
        what = type(estimator).__name__
        fit_params = route_fit_params(estimator, fit_params, f"PrivacyLedger.fit({what})")
        groups = _groups(fit_params)
        if groups is not None:  # malformed persons: refused before any charge
            check_groups(groups, _n_rows(X))
        unit = "row" if groups is None else "person"
        self._check_unit(what, unit)
        statement = Statement(f"PrivacyLedger ({what})", persons=groups is not None)
        epsilon, delta, rdp, kind = _a_priori(estimator, self.composition == "renyi",
                                              getattr(self._filter, "order_index", None),
                                              statement)
        seeds = _seeds(estimator)
        independent, reason = noise_independence(self._seeds + seeds)
        if not independent:
            raise ValueError(f"{what} cannot enter the ledger: {reason}. Use "
                             "random_state=None (fresh noise) for released fits.")
        if self.composition == "renyi" and kind == "fit":
            _check_renyi_curve(estimator, y, groups is not None)
        index, entry = self._record(f"{what} ({kind})", epsilon, delta, rdp)
        self._seeds += seeds
        self.unit = unit
        estimator.fit(X, y, **fit_params)
        if self.composition == "basic":
            entry["realised"] = _realised(estimator, epsilon, delta)
            self._filter.settle(index, *entry["realised"])
        return estimator

    def score(self, estimator, X, y, *, scoring, epsilon, delta=0.0, groups=None,
              random_state=None, **metric_params):
        """Charge, then release a private score of a fitted model on private rows.

        Refused before any noise when it would cross the budget, or when its unit or
        its seed does not fit the ledger (as :meth:`fit`). A score whose input is then
        refused (a probability outside [0, 1], ...) keeps its charge, as a failed fit
        does.

        Parameters
        ----------
        estimator : estimator object
            A fitted (released) model.
        X, y : array-like
            The private held-out rows.
        scoring : str
            One of ``"accuracy"``, ``"balanced_accuracy"``, ``"roc_auc"``,
            ``"brier_score_loss"``, ``"log_loss"``, ``"mean_squared_error"``, ``"r2"``
            (the metrics of :mod:`skdp.metrics`).
        epsilon : float
            The score's budget, finite.
        delta : float, default=0.0
            Its delta (``0``: Laplace noise).
        groups : array-like of shape (n_samples,), default=None
            Each row's person (the ledger's unit must be a person then).
        random_state : None, int, RandomState or Generator, default=None
            Seed of the noise (``None``: fresh cryptographic noise).
        **metric_params : dict
            Passed to the metric (``y_bound``, ``bins``, ``max_rows_per_group``, ...).

        Returns
        -------
        score : skdp.stats.PrivateEstimate
        """
        return _ledger_analysis.score(self, estimator, X, y, scoring=scoring, epsilon=epsilon,
                                      delta=delta, groups=groups, random_state=random_state,
                                      **metric_params)

    def describe(self, frame, schema, *, epsilon, delta=0.0, groups=None, random_state=None,
                 **describe_params):
        """Charge, then release a private Table 1 (:func:`skdp.stats.describe`).

        Parameters
        ----------
        frame : pandas.DataFrame
            The private rows, every column declared by ``schema``.
        schema : dict or Schema
            The public data dictionary (bounds and categories).
        epsilon : float
            The table's whole budget, finite.
        delta : float, default=0.0
            Its delta.
        groups : array-like of shape (n_samples,), default=None
            Each row's person.
        random_state : None, int, RandomState or Generator, default=None
            Seed of the noise.
        **describe_params : dict
            Passed to :func:`skdp.stats.describe` (``max_rows_per_group``).

        Returns
        -------
        table : pandas.DataFrame
        """
        return _ledger_analysis.describe_release(
            self, frame, schema, epsilon=epsilon, delta=delta, groups=groups,
            random_state=random_state, **describe_params)

    def cross_validate(self, estimator, X, y, *, cv=5, scoring, epsilon, delta=0.0,
                       groups=None, cv_random_state=None, **fit_params):
        """Charge a whole private cross-validation, then fit and score each fold.

        Each unit falls in a fold by a public coin; it is in the training rows of
        ``cv - 1`` fits and the test rows of one score, so the run is charged ``(cv -
        1)`` times the estimator's cost plus the score's ``(epsilon, delta)``, before
        any fit. The fits go through the gate and are silent; only the scores are
        released (basic composition only).

        Parameters
        ----------
        estimator : estimator or Pipeline
            An skdp private estimator (or a Pipeline of public steps ending in one),
            with ``random_state=None``.
        X, y : array-like
            The private rows.
        cv : int, default=5
            The number of folds, at least 2.
        scoring : str
            As in :meth:`score`.
        epsilon : float
            Each fold's score's budget, finite.
        delta : float, default=0.0
            Each score's delta.
        groups : array-like of shape (n_samples,), default=None
            Each row's person: persons fall in folds whole.
        cv_random_state : None, int, RandomState or Generator, default=None
            Seed of the public coins of the folds (never of any noise).
        **fit_params : dict
            Passed to each fit (``sample_weight`` is split with the rows).

        Returns
        -------
        result : dict
            ``test_score`` (one :class:`~skdp.stats.PrivateEstimate` per fold),
            ``epsilon`` and ``delta`` (the run's charge).
        """
        return _ledger_analysis.cross_validate(
            self, estimator, X, y, cv=cv, scoring=scoring, epsilon=epsilon, delta=delta,
            groups=groups, cv_random_state=cv_random_state, **fit_params)

    def _check_unit(self, what, unit):
        """One unit of privacy per ledger: a fit with ``groups`` protects one person
        (all of their rows), one without protects one row, and neither claim covers
        the other's neighbours (removing one of a person's rows replaces that person),
        so their sum would state no relation at all. Refused before any charge."""
        if self.unit is not None and unit != self.unit:
            raise ValueError(
                f"{what} cannot enter the ledger: its unit of privacy is one {unit}, and "
                f"the ledger's fits so far protect one {self.unit}. Run every fit of an "
                "analysis with groups (one person) or every fit without (one row).")

    def report(self):
        """The ledger's entries, totals and what they cover.

        Returns
        -------
        report : dict
            ``budget``, ``spent``, ``composition``, ``entries`` and ``statement``.
        """
        epsilon, delta = self.spent
        how = self._filter.description
        fmt = format_guarantee(epsilon, delta)
        unit = "one person (all of their rows)" if self.unit == "person" else "one row"
        subject, pronoun = _releases(len(self.entries))
        return {
            "budget": {"epsilon": self.epsilon, "delta": self.delta},
            "spent": {"epsilon": epsilon, "delta": delta},
            "composition": how,
            "entries": [dict(e) for e in self.entries],
            "unit": self.unit,
            "statement": (f"{subject} {fmt}-differentially "
                          f"private ({how}) with respect to adding or removing {unit}; "
                          f"no release could have taken {pronoun} past the "
                          f"budget ({self.epsilon:g}, {self.delta:g})."),
        }
