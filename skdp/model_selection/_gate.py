"""The one door through which a composer fits on private rows.

A composer (:class:`~skdp.EpsilonForUtility`, the private searches,
:class:`~skdp.PrivacyLedger`, :func:`~skdp.model_selection.privacy_cost_of_search`)
runs several fits and states one guarantee. Every check that guarantee rests on,
and that reads no data, lives here, so that no composer keeps a copy of its own:

* :func:`private_step`: the one descent rule into a ``Pipeline`` (its exact type:
  a subclass may fit its steps otherwise);
* :func:`check_fit`: the estimator as configured for this very fit (after
  ``set_params``): every step before the private one is public preprocessing, the
  private step certifies a finite cost, and its neighbouring relation is the
  composer's (add/remove-one record, or add/remove-one person with ``groups``);
* :func:`check_space`: every candidate of a search space, before any data;
* :func:`route_fit_params`: which step of a Pipeline takes ``groups`` and
  ``sample_weight``, resolved before any charge;
* :func:`secret_fit`: a fit whose output is secret (a trial, a rung), checked,
  then run silenced (``verbose`` off, warnings, prints and logs captured); only
  the released fit speaks, through :meth:`Speech.replay`;
* :class:`SecretTrials`: a composer's trials (a search's candidates, a selection's
  rungs) on its private rows: each a fresh clone through :func:`secret_fit`, checked
  after its fit for the person-level relation with ``groups``, and one released
  (:meth:`SecretTrials.release`) with the user's own ``random_state``; a trial whose
  intervals were refused (``inference=True``) counts as failed and is never released.
"""

import contextlib
import inspect
import io
import logging
import warnings
from dataclasses import dataclass, field

from sklearn.base import clone
from sklearn.pipeline import Pipeline

from ..utils._secret_trial import secret_trial

STATED_RELATION = "add_remove"
"""The neighbouring relation every composer states: adding or removing one record
(with ``groups``: one person, all of their rows)."""


@dataclass(frozen=True)
class Statement:
    """What a composer states about its fits: who states it (for messages), the unit
    of privacy (``persons``: one person with all of their rows, else one row), and
    whether its fits are secret trials of which it releases one (``trials``)."""

    who: str
    persons: bool = False
    trials: bool = False

    @property
    def unit(self):
        return "person" if self.persons else "row"


# -- (a) the estimator as configured -------------------------------------------------------

def private_step(estimator):
    """``(private estimator, parameter prefix)``: the last step of a Pipeline, or itself.

    The one descent rule of every composer. A Pipeline is recognised by its exact
    type: a subclass may fit or transform its steps otherwise, and is refused.

    Raises
    ------
    ValueError
        For a subclass of ``Pipeline``.
    """
    if isinstance(estimator, Pipeline):
        if type(estimator) is not Pipeline:
            raise ValueError(
                f"{type(estimator).__name__} is a subclass of Pipeline, whose fit may read "
                "the rows otherwise than its steps say: use sklearn.pipeline.Pipeline "
                "itself. Nothing was fitted.")
        name, final = estimator.steps[-1]
        return final, f"{name}__"
    return estimator, ""


def check_public_steps(estimator):
    """Refuse a Pipeline whose steps before the private one learn from the rows."""
    from ._public_steps import check_public_preprocessing  # sklearn's composites: lazily

    final, prefix = private_step(estimator)
    if prefix:
        for name, step in estimator.steps[:-1]:
            check_public_preprocessing(step, name=f"Pipeline step {name!r}")
    return final


def check_fit(estimator, statement):
    """Refuse, before any data is read, a fit the composer's statement cannot cover.

    Checked on the object that will be fitted (after every ``set_params``): its
    Pipeline steps are public preprocessing (exact types and parameters), its
    private step is an skdp private estimator (it declares its cost), and it
    certifies the composer's relation: add/remove neighbours (``neighboring="replace"`` is
    refused: under it the row count is public and a fit may use it, which an
    add/remove statement does not cover), and with persons a bound that holds per
    person (``data_norm="private"`` does not).

    Parameters
    ----------
    estimator : estimator or Pipeline
        As configured for the fit.
    statement : Statement
        The composer's unit and name.

    Returns
    -------
    final : estimator
        The private step.
    """
    final = check_public_steps(estimator)
    if not hasattr(final, "_claimed_spend"):
        raise ValueError(
            f"{type(final).__name__} is not an skdp private estimator: {statement.who} "
            "cannot account for its fits. Nothing was fitted.")
    check_relation(final, statement)
    if statement.persons and final.get_params().get("data_norm") == "private":
        raise ValueError(
            f"{statement.who} with groups: data_norm='private' spends on a bound of the "
            "rows' norm that is private per row, not per person; pass a numeric data_norm "
            "(a public bound). Nothing was fitted.")
    return final


def check_relation(final, statement):
    """Refuse a private step whose neighbouring relation is not the composer's
    (add/remove): under replace-one the number of rows is public, and a fit may use
    it (its noise floor, its warnings), which an add/remove statement does not cover."""
    relation = final.get_params().get("neighboring", STATED_RELATION)
    if relation != STATED_RELATION:
        raise ValueError(
            f"{statement.who} states its guarantee for adding or removing one "
            f"{statement.unit}, and {type(final).__name__}(neighboring={relation!r}) "
            "certifies another relation (under replace-one the number of rows is public, "
            "and a fit may use it): use neighboring='add_remove'. Nothing was fitted.")


def _as_list_of_dicts(space):
    return [space] if isinstance(space, dict) else list(space)


GATED_PARAMS = ("neighboring", "data_norm")
"""The private step's parameters :func:`check_fit` reads: a search key that sets one is
checked for every value, before any data."""


def _gated_keys(estimator, chosen):
    """The keys of one space dict that :func:`check_fit` reads: those addressing a step
    before the private one, and the private step's :data:`GATED_PARAMS`."""
    _, prefix = private_step(estimator)
    gated = {prefix + name for name in GATED_PARAMS}
    return sorted(key for key in chosen
                  if (prefix and not key.startswith(prefix)) or key in gated)


def check_space(estimator, space, statement):
    """Refuse, before any data is read, a search space one of whose candidates the
    statement cannot cover.

    A key that addresses a preprocessing step (not the private step's
    ``<step>__<param>``), or one of the private step's :data:`GATED_PARAMS`, takes a
    list of values, and every combination of those values is checked with
    :func:`check_fit`: a candidate may otherwise turn a public step into a fitted one
    (``SimpleImputer(strategy="mean")``, ``FunctionTransformer(func=scale)``) or leave
    the composer's statement (``neighboring="replace"``). The per-fit check of :func:`secret_fit` then checks each drawn candidate
    again, as configured.
    """
    import itertools

    for chosen in _as_list_of_dicts(space):
        keys = _gated_keys(estimator, chosen)
        for key in keys:
            if hasattr(chosen[key], "rvs"):
                raise ValueError(
                    f"{key!r} is read by the gate, so its values must be a list (each is "
                    "checked before the data are read), not a distribution. Nothing was "
                    "fitted.")
        for combo in itertools.product(*(list(chosen[key]) for key in keys)):
            check_fit(clone(estimator).set_params(**dict(zip(keys, combo))), statement)


# -- (c) routing -----------------------------------------------------------------------

ROUTED_TO_PRIVATE_STEP = ("groups", "sample_weight")


def _fit_parameters(step):
    return inspect.signature(type(step).fit).parameters


def route_fit_params(estimator, fit_params, who):
    """Fit parameters resolved for ``estimator.fit``, refused before any charge.

    For a Pipeline, ``groups`` and ``sample_weight`` go to its private step (as
    ``<step>__groups``), and a ``<step>__<param>`` must name a step whose ``fit``
    takes ``<param>``; for an estimator, each key must be a parameter of its
    ``fit``. Nothing here reads the values.

    Returns
    -------
    routed : dict
    """
    final, prefix = private_step(estimator)
    routed = {}
    for key, value in fit_params.items():
        if prefix and key in ROUTED_TO_PRIVATE_STEP:
            key = prefix + key
        routed[key] = value
    steps = dict(estimator.steps) if prefix else {}
    for key in routed:
        if prefix:
            step_name, _, param = key.partition("__")
            step = steps.get(step_name)
            if not param or step is None:
                raise ValueError(
                    f"{who}: the fit parameter {key!r} names no step of the Pipeline "
                    f"(steps {sorted(steps)}); pass '<step>__<param>', or groups / "
                    "sample_weight for the private step. Nothing was fitted.")
        else:
            step, param = final, key
        parameters = _fit_parameters(step)
        takes_any = any(p.kind is p.VAR_KEYWORD for p in parameters.values())
        if param not in parameters and not takes_any:
            raise ValueError(
                f"{who}: {type(step).__name__}.fit takes no {param!r}. Nothing was "
                "fitted.")
    return routed


# -- (d) secret fits ---------------------------------------------------------------------

@dataclass
class Speech:
    """What a secret fit said: its warnings (kept to be replayed if it is released)."""

    warnings: list = field(default_factory=list)

    def replay(self):
        """Emit the released fit's warnings, now that its output is public."""
        for message in self.warnings:
            warnings.warn(message.message, message.category, stacklevel=2)


def _verbose_params(model):
    """The ``verbose`` parameters of ``model`` and of its Pipeline's steps."""
    return {key: value for key, value in model.get_params().items()
            if key == "verbose" or key.endswith("__verbose")}


@contextlib.contextmanager
def _silenced(speech):
    previous = logging.root.manager.disable
    sink = io.StringIO()
    with warnings.catch_warnings(record=True) as caught, \
            contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        warnings.simplefilter("always")
        logging.disable(logging.CRITICAL)
        try:
            yield
        finally:
            logging.disable(previous)
            speech.warnings.extend(caught)


@contextlib.contextmanager
def secret(model, statement):
    """Run a composer's secret step on ``model`` (a fit, a noise path, a release).

    The model is checked as configured (:func:`check_fit`), its ``verbose``
    parameters (and its Pipeline's) are turned off inside and restored after, and
    whatever it warns, prints or logs inside is captured in the yielded
    :class:`Speech`: the composer replays the warnings of the one fit it releases
    (:meth:`Speech.replay`) and drops the rest, whose number and content would
    reveal the secret trials. For a statement of trials the fit runs as a secret
    trial (:func:`~skdp.utils._secret_trial.secret_trial`): a refusal of its
    intervals is noted on the model, not raised (:meth:`SecretTrials.intervals_refused`).
    """
    check_fit(model, statement)
    verbose = _verbose_params(model)
    if verbose:
        model.set_params(**{key: False if isinstance(value, bool) else 0
                            for key, value in verbose.items()})
    speech = Speech()
    trial = secret_trial() if statement.trials else contextlib.nullcontext()
    try:
        with _silenced(speech), trial:
            yield speech
    finally:
        if verbose:
            model.set_params(**verbose)


def secret_fit(model, X, y, statement, fit_params=None):
    """Fit ``model`` on private rows as a composer's secret step (:func:`secret`).

    Parameters
    ----------
    model : estimator or Pipeline
        A fresh clone, configured for this fit.
    X, y : array-like
        The rows of this fit.
    statement : Statement
        The composer's statement.
    fit_params : dict, default=None
        Routed fit parameters (:func:`route_fit_params`).

    Returns
    -------
    model : estimator
        The fitted model.
    speech : Speech
        Its captured warnings.
    """
    with secret(model, statement) as speech:
        model.fit(X, y, **(fit_params or {}))
    return model, speech


def check_person_fit(model):
    """After a fit with ``groups``: its guarantee must be person-level
    (``neighboring_ == "add_remove_person"``)."""
    final, _ = private_step(model)
    relation = getattr(final, "neighboring_", None)
    if relation != "add_remove_person":
        raise RuntimeError(
            f"a rung fitted with groups certified neighboring_={relation!r}, not "
            "'add_remove_person': its spend does not cover persons.")


class SecretTrials:
    """A composer's trials on its private rows, each a secret fit through the gate.

    A trial is a fresh clone of the estimator with the trial's parameters and its own
    noise (``random_state``), fitted by :func:`secret_fit` (checked as configured,
    silenced) and, with ``groups``, checked to certify the person-level relation.
    The composer keeps the outputs secret and releases one (:meth:`release`): that
    model alone speaks, and carries the user's ``random_state``, never a derived one.

    Parameters
    ----------
    estimator : estimator or Pipeline
        The composer's estimator (unfitted; cloned for every trial).
    X, y : array-like
        The trials' rows.
    who : str
        The composer, for its :class:`Statement`.
    groups : array-like of shape (n_samples,), default=None
        The person of each row: every trial is fitted with them (a Pipeline's
        private step as ``<step>__groups``), the unit of privacy one person.
    """

    def __init__(self, estimator, X, y, who, groups=None):
        self.estimator, self.X, self.y = estimator, X, y
        self.statement = Statement(who, persons=groups is not None, trials=True)
        _, self.prefix = private_step(estimator)
        self.fit_params = {} if groups is None else {self.prefix + "groups": groups}

    def fit(self, params, random_state):
        """The trial with ``params`` (keys as for ``set_params`` of the estimator) and
        the private step's ``random_state``, fitted; returns ``(model, speech)``."""
        model = clone(self.estimator).set_params(
            **params, **{self.prefix + "random_state": random_state})
        model, speech = secret_fit(model, self.X, self.y, self.statement, self.fit_params)
        if self.statement.persons:
            check_person_fit(model)
        return model, speech

    @staticmethod
    def intervals_refused(model):
        """Whether the trial's intervals (``inference=True``) were refused from its own
        noisy release: the composer then counts it as a failed trial, which is a
        function of that trial's private output, and never releases it."""
        final, _ = private_step(model)
        return getattr(final, "_intervals_refusal", None) is not None

    def release(self, model, speech, user_random_state):
        """The trial ``model`` as released: the user's ``random_state`` set back on
        its private step, and its warnings replayed (the other trials stay silent)."""
        if self.intervals_refused(model):
            raise RuntimeError("A trial whose intervals were refused cannot be released.")
        _, prefix = private_step(model)
        model.set_params(**{prefix + "random_state": user_random_state})
        speech.replay()
        return model
