"""The contract shared by every private estimator: parameters, spend, privacy tags."""

import copy
import functools
import warnings
from dataclasses import dataclass, fields
from numbers import Real

import numpy as np
from sklearn.utils import Tags, get_tags

from .accounting._costs import pure_rdp
from .exceptions import LargeDeltaWarning, NoiseDominanceWarning
from .utils._sklearn_compat import Interval, StrOptions, _fit_context
from .utils.validation import check_data_norm

__all__ = ["EpsilonRelease", "PrivacyTags", "PrivateTags", "copy_with_coefficients",
           "get_privacy_tags", "with_privacy_tags"]

NEIGHBORING_RELATIONS = ("add_remove", "replace")

LARGE_DELTA = 1e-3
"""``delta`` above which every fit warns (:class:`~skdp.LargeDeltaWarning`): such a
``delta`` is at least ``1 / n`` for every dataset of 1,000 rows or more."""


def warn_large_delta(delta, name):
    """Warn when ``delta`` exceeds :data:`LARGE_DELTA`, from ``delta`` alone.

    The number of rows is private under add/remove, so the test ``delta >= 1 / n`` is
    not made on the data: a warning that fired on it would tell neighbouring datasets
    apart. A ``delta`` above 1e-3 is at least ``1 / n`` for every dataset of 1,000 rows
    or more, and with fewer rows the noise of a private linear model is rarely worth
    fitting; so the test reads the parameter only.

    Parameters
    ----------
    delta : float
        The estimator's ``delta``.
    name : str
        The estimator's name, for the message.
    """
    if delta > LARGE_DELTA:
        warnings.warn(
            f"{name}: delta={delta:g} is above {LARGE_DELTA:g}. A mechanism that publishes "
            "each record whole with probability delta is (0, delta)-DP, so this guarantee "
            f"allows publishing a record of any dataset of {1 / delta:.0f} rows or more. "
            "Choose delta well below 1 / n for a public upper bound n on the number of "
            "rows (1 / n**2 is common), or delta=0 for pure DP where the estimator has it.",
            LargeDeltaWarning, stacklevel=4)


def warn_noise_floor(name, count, floor, unit, source):
    """Warn (:class:`~skdp.NoiseDominanceWarning`) when ``count`` units are fewer than
    the noise floor: the number of units whose largest contributions the noise
    outweighs with probability 0.99 (:func:`~skdp.mechanisms._dominance.noise_floor`).

    ``count`` must be public, or a differentially private quantity the fit releases
    (``source`` says which, for the message): never the private number of rows.
    """
    if not count < floor:
        return
    warnings.warn(
        f"{name}: the noise outweighs the data. With these parameters the noise is, with "
        f"probability 0.99, longer than everything fewer than {floor:,.0f} {unit}s can "
        f"contribute, and this fit has {source}: whatever the {unit}s hold, the released "
        "model points where its noise points. Raise epsilon, use fewer features, a "
        "smaller data_norm or a smaller C where the estimator has one, or more "
        f"{unit}s.", NoiseDominanceWarning, stacklevel=5)


def atomic_fit(*, prefer_skip_nested_validation):
    """scikit-learn's ``_fit_context`` for a fit method, under the rule "nothing is
    released for a fit that fails".

    The parameters are validated first (as ``_fit_context`` does); then a call that
    raises, at any point (a refusal, a solver that misses its tolerance, a dask
    partition that fails), leaves the estimator's attributes exactly as the call found
    them: unfitted, or the previous successful fit whole (for ``partial_fit`` and
    ``warm_start``, the run before the call), never a mix with attributes the failed
    call had set. A successful call replaces them.

    Parameters
    ----------
    prefer_skip_nested_validation : bool
        As for ``_fit_context``: ``True`` for estimators, ``False`` for
        meta-estimators.

    Returns
    -------
    decorator : callable
    """
    def decorator(fit_method):
        @functools.wraps(fit_method)
        def wrapper(estimator, *args, **kwargs):
            # a shallow copy: a Generator passed as random_state stays the object the
            # failed call advanced, so a later fit never draws the same noise again
            before = dict(vars(estimator))
            try:
                return fit_method(estimator, *args, **kwargs)
            except BaseException:
                vars(estimator).clear()
                vars(estimator).update(before)
                raise
        return _fit_context(prefer_skip_nested_validation=prefer_skip_nested_validation)(
            wrapper)
    return decorator


class PrivacyParamsMixin:
    """Shared privacy parameters: validation and spend bookkeeping.

    Subclasses compose ``_privacy_parameter_constraints`` into their own
    ``_parameter_constraints`` and call :meth:`_check_privacy_params` first in
    ``fit``, so every error is raised before any noise is drawn.
    """

    _privacy_parameter_constraints = {
        "epsilon": [Interval(Real, 0, None, closed="right")],
        "delta": [Interval(Real, 0, 1, closed="left")],
        "data_norm": [Interval(Real, 0, None, closed="neither"),
                      StrOptions({"warn", "private"}), None],
        "random_state": ["random_state", np.random.Generator],
    }

    def _check_privacy_params(self):
        check_data_norm(self.data_norm)
        warn_large_delta(self.delta, type(self).__name__)

    def _claimed_spend(self):
        """``(epsilon, delta)`` that a successful fit with these parameters certifies.

        Read from the parameters alone, without fitting (composing reports such
        as :func:`~skdp.model_selection.privacy_cost_of_search` use it for fits
        they cannot see). Estimators whose options can void the guarantee (a
        research mode) override it to return ``(inf, delta)``.
        """
        return float(self.epsilon), float(self.delta)

    def _renyi_cost(self, n_classes=None, persons=False):
        """The Renyi DP curve (at :data:`~skdp.accounting._rdp.ORDERS`) that a fit with
        these parameters costs, from the parameters alone; ``None`` where the
        mechanism has none here.

        The one declaration of a fit's cost that the composers' Renyi filters and
        odometers read (they never look at an estimator's class). Pure fits:
        ``min(epsilon, alpha epsilon^2 / 2)``; estimators with a Gaussian curve
        override it.

        Parameters
        ----------
        n_classes : int, default=None
            The number of classes the fit will see (``None``: not known yet); a
            curve that depends on it is ``None`` without it.
        persons : bool, default=False
            Whether the fit is given ``groups`` (one person is the unit).

        Returns
        -------
        rdp : ndarray of shape ORDERS.shape, or None
        """
        epsilon, delta = self._claimed_spend()
        return pure_rdp(epsilon) if delta == 0 else None

    def _renyi_spent(self):
        """The fitted mechanism's Renyi DP curve (what the fit certifies), or ``None``
        where it has none here (:meth:`_renyi_cost` before the fit)."""
        if float(self.delta_spent_) == 0:
            return pure_rdp(self.epsilon_spent_)
        return None

    def _gdp_mu_spent(self):
        """The fitted mechanism's Gaussian-DP ``mu`` (what the fit certifies), or
        ``None`` where it is not ``mu``-GDP (the Gaussian-DP odometer's check)."""
        return None

    def _composes_in_gdp(self):
        """Whether fits with these parameters are ``gdp_mu(epsilon, delta)``-GDP and
        are best composed in Gaussian DP (the private selection then accounts fresh
        rungs by its Gaussian-DP odometer); from the parameters alone."""
        return False

    def _selection_refusal(self):
        """Why a private selection cannot account rungs with these parameters (a
        sentence for the user), or ``None``; from the parameters alone."""
        return None

    def _record_spend(self, epsilon, delta, neighboring):
        self.epsilon_spent_ = float(epsilon)
        self.delta_spent_ = float(delta)
        self.neighboring_ = neighboring


def neighboring_constraint():
    """Parameter constraint of ``neighboring``."""
    return [StrOptions(set(NEIGHBORING_RELATIONS))]


@dataclass
class PrivacyTags:
    """What a private estimator declares to the tools that wrap it.

    Read with :func:`get_privacy_tags`. A third-party estimator takes part in
    :class:`~skdp.EpsilonForUtility`'s analytic measurements by returning
    :class:`PrivateTags` from ``__sklearn_tags__`` with these set, and
    implementing ``fit_release(X, y)`` (which returns an :class:`EpsilonRelease`)
    and ``with_coefficients(coef, intercept)``.

    Attributes
    ----------
    epsilon_derivative : bool, default=False
        Whether ``fit_release`` gives the derivative in ``epsilon`` of the
        released coefficients with the noise's standard draws held fixed.
        Without it, a wrapper differentiates by reruns that share one noise draw
        (whose spends then do not compose).
    epsilon_expansion : {"log", "inverse", "linear"}, default="inverse"
        The variable in which the utility is closest to linear in epsilon:
        ``"log"`` where the noise enters through the objective, ``"inverse"``
        where the released coefficients move with the noise scale itself (the
        noise scale of most mechanisms is close to proportional to ``1 /
        epsilon``).
    """

    epsilon_derivative: bool = False
    epsilon_expansion: str = "inverse"


@dataclass
class PrivateTags(Tags):
    """scikit-learn's :class:`~sklearn.utils.Tags` with the :class:`PrivacyTags`.

    Attributes
    ----------
    privacy_tags : PrivacyTags or None, default=None
        ``None`` for an estimator that declares nothing about its privacy.
    """

    privacy_tags: PrivacyTags = None


def with_privacy_tags(tags, privacy_tags):
    """scikit-learn ``tags`` extended by ``privacy_tags``.

    Parameters
    ----------
    tags : sklearn.utils.Tags
        The tags of the estimator's other base classes.
    privacy_tags : PrivacyTags
        What the estimator declares about its privacy.

    Returns
    -------
    tags : PrivateTags
    """
    values = {field.name: getattr(tags, field.name) for field in fields(Tags)}
    return PrivateTags(**values, privacy_tags=privacy_tags)


def copy_with_coefficients(estimator, coef, intercept):
    """A shallow copy of a fitted linear model with ``coef_`` and ``intercept_`` replaced.

    Parameters
    ----------
    estimator : fitted estimator
        A linear model with ``coef_`` and ``intercept_``; it is not modified.
    coef : array-like of the shape of ``coef_``
        The coefficients of the copy.
    intercept : array-like of the shape of ``intercept_``
        Its intercepts.

    Returns
    -------
    model : estimator
    """
    model = copy.copy(estimator)
    model.coef_ = np.asarray(coef, dtype=float).reshape(np.shape(estimator.coef_))
    model.intercept_ = np.asarray(intercept, dtype=float).reshape(np.shape(estimator.intercept_))
    return model


def get_privacy_tags(estimator):
    """The :class:`PrivacyTags` of an estimator, or the defaults when it declares none.

    Parameters
    ----------
    estimator : estimator object
        The estimator, fitted or not; its scikit-learn tags are read.

    Returns
    -------
    privacy_tags : PrivacyTags
    """
    declared = getattr(get_tags(estimator), "privacy_tags", None)
    return PrivacyTags() if declared is None else declared


@dataclass(frozen=True)
class EpsilonRelease:
    """A fitted model's released coefficients and their derivative in epsilon.

    The derivative is pathwise: the noise's standard draws are held fixed while
    ``epsilon`` moves, so it is the slope of the released model along one noise
    realisation. It is returned by ``fit_release`` and never stored on the
    estimator.

    .. warning:: The derivatives are **not private**. They are computed from the
       noise and the private data (for output perturbation ``coef_derivative`` is
       the noise vector times a public factor, so ``coef - coef_derivative *
       factor`` is the non-private minimiser). Only ``coef`` and ``intercept``
       carry the estimator's guarantee; never publish the derivatives. They
       exist for :class:`~skdp.EpsilonForUtility`'s analytic measurements,
       whose report states that the selection is not covered.

    Attributes
    ----------
    coef : ndarray of shape (n_problems, n_coefficients)
        The released ``coef_``.
    intercept : ndarray of shape (n_problems,)
        The released ``intercept_``.
    coef_derivative : ndarray of shape (n_problems, n_coefficients)
        ``d coef_ / d epsilon``.
    intercept_derivative : ndarray of shape (n_problems,)
        ``d intercept_ / d epsilon``.
    """

    coef: np.ndarray
    intercept: np.ndarray
    coef_derivative: np.ndarray
    intercept_derivative: np.ndarray
