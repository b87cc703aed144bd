"""What private selection asks of an estimator, checked before any data is read.

The gate (:mod:`._gate`) checks every composer's fits; these are the selection's own
refusals on top of it (an ``epsilon`` and a ``random_state`` to set per rung, a
finite certified epsilon, persons only for rungs that take ``groups``), the input
checks run before any noise (:func:`validate_private_input`, :func:`whole_label_set`),
and the public properties of the rungs read from the estimator's parameters (noise
reduction, checkpoints). The searches (:mod:`._private_search`) share them.
"""

import numpy as np
from sklearn.base import clone, is_classifier
from sklearn.pipeline import Pipeline

from ._gate import Statement, check_fit, private_step


def default_estimator(estimator):
    """The composer's estimator: ``estimator``, or ``ObjPertLogisticRegression()``
    for ``None``."""
    if estimator is None:
        from ..linear_model import ObjPertLogisticRegression

        return ObjPertLogisticRegression()
    return estimator


def private_step_params(estimator):
    """The private estimator's own parameters (without the Pipeline prefix)."""
    return private_step(estimator)[0].get_params()


def check_private_step_params(estimator, who="EpsilonForUtility", persons=False):
    """Refuse, before any work, what the selection cannot account for.

    The gate's check of the estimator as configured (:func:`~._gate.check_fit`:
    public preprocessing, a finite certified epsilon, add/remove neighbours of one
    row, or of one person with ``persons``), then what a selection needs of it: an
    ``epsilon`` and a ``random_state`` parameter, and no ``data_norm="private"``
    with ``delta > 0`` (its rungs are charged their Gaussian or Renyi cost, which
    leaves the bound's pure epsilon out).
    """
    final, _ = private_step(estimator)
    for name in ("epsilon", "random_state"):
        if name not in final.get_params():
            raise ValueError(f"{who} needs a private estimator with an {name!r} "
                             f"parameter; {type(final).__name__} has none.")
    check_fit(estimator, Statement(who, persons, trials=True))
    if not np.isfinite(final._claimed_spend()[0]):
        raise ValueError(
            f"{type(final).__name__} with these parameters certifies no finite epsilon (a "
            "research mode): private selection cannot account for its fits. Nothing was "
            "fitted.")
    params = final.get_params()
    if params.get("data_norm") == "private" and params.get("delta", 0.0) > 0:
        raise ValueError(
            f"{who} charges a rung with delta > 0 its Gaussian or Renyi cost from its public "
            "calibration, which leaves out the pure epsilon that data_norm='private' spends "
            "on the bound: pass a numeric data_norm (a public bound on the rows' L2 norm). "
            "Nothing was fitted.")


def validate_private_input(meta, estimator, X, y):
    """Every input error of a private search raised before any noise is drawn.

    A bare estimator's ``X`` is validated as scikit-learn does (``meta`` records
    ``n_features_in_``). A Pipeline's is passed on as given (a DataFrame keeps its
    columns for a ColumnTransformer), and its public preprocessing is run once on all
    the rows first (it learns nothing from them), so that an error it raises, or a
    non-finite value it produces, stops the search before any noise.
    """
    from sklearn.utils.validation import check_array, check_consistent_length, validate_data

    if not isinstance(estimator, Pipeline):
        return validate_data(meta, X, y, accept_sparse=("csr", "csc"), dtype=None,
                             ensure_all_finite=True, reset=True,
                             y_numeric=not is_classifier(estimator))
    validate_data(meta, X, skip_check_array=True, reset=True)
    y = check_array(y, ensure_2d=False, dtype=None if is_classifier(estimator) else "numeric",
                    ensure_all_finite=True)
    check_consistent_length(X, y)
    head = clone(Pipeline(estimator.steps[:-1]))
    check_array(head.fit_transform(X, y), accept_sparse=True, ensure_all_finite=True)
    return X, y


def whole_label_set(final, y):
    """The label set every internal fit sees: the declared ``classes``, or the whole input's.

    Checked before any noise (two classes at least, no label outside the declared set),
    so that no fit's label error or ``classes_`` depends on which labels fell into a
    part of the rows.
    """
    from sklearn.utils.multiclass import check_classification_targets

    from ..linear_model._base import encode_labels

    check_classification_targets(y)
    classes, _ = encode_labels(y, final.get_params().get("classes"))
    return classes


def supports_noise_reduction(estimator):
    """Whether the rungs can share one noise path: Laplace (``noise="laplace"``) or
    Gaussian (``delta > 0``) output perturbation."""
    final, _ = private_step(estimator)
    return hasattr(final, "_supports_noise_reduction") and final._supports_noise_reduction()


def supports_checkpoints(estimator):
    """Whether the rungs can be checkpoints of one run: ``DPSGDClassifier(sample_rate=1.0)``
    with a constant schedule and a calibrated noise multiplier."""
    final, _ = private_step(estimator)
    return hasattr(final, "_supports_checkpoints") and final._supports_checkpoints()


def rungs_share_a_path(estimator, checkpoints=False):
    """Whether the rungs are releases of one path whose cost is the last release's:
    noise reduction, or (asked for with ``checkpoints``) checkpoints of one DP-GD run."""
    return supports_noise_reduction(estimator) or (checkpoints and supports_checkpoints(estimator))


def path_takes_groups(estimator):
    """Whether the rungs' noise path is fitted with ``groups``: the private step's
    ``_noise_reduction_path`` takes them (SSP: its path releases the person-weighted
    statistics, each release a person-level fit). Read from the class."""
    import inspect

    final, _ = private_step(estimator)
    return supports_noise_reduction(estimator) and (
        "groups" in inspect.signature(final._noise_reduction_path).parameters)


def accepts_groups(final):
    """Whether the private estimator ``final`` fits with ``groups``: its ``fit`` takes
    them and, when that ``fit`` is the weighted estimators' (which passes them on to
    ``_releases``), so does its ``_releases``. Read from the class, before any data."""
    import inspect

    from ..linear_model._weights import WeightedFitMixin

    fit = type(final).fit
    if "groups" not in inspect.signature(fit).parameters:
        return False
    if fit is WeightedFitMixin.fit:
        return "groups" in inspect.signature(final._releases).parameters
    return True


def check_person_selection(estimator, checkpoints=False, who="EpsilonForUtility"):
    """Refuse, before any data is read, a search over persons (``groups``) that its
    rungs cannot take.

    Every rung is a fresh fit ``fit(X, y, groups=...)`` of a private estimator that
    takes ``groups`` and certifies add/remove-person neighbours (or a release of a
    noise path fitted with them, :func:`path_takes_groups`): refused are estimators
    without ``groups``, rungs that are releases of a path fitted without them (noise
    reduction of other estimators, checkpoints), ``neighboring="replace"``
    (a replace-person guarantee does not cover adding or removing a person, the
    search's relation) and ``data_norm="private"`` (its bound is private per row).
    """
    final, _ = private_step(estimator)
    name = type(final).__name__
    if not accepts_groups(final):
        raise ValueError(
            f"{who} with groups fits every rung with fit(X, y, groups=...), and {name} "
            "does not take groups: choose an estimator with person-level privacy, or fit "
            "without groups (one row is then the unit of privacy). Nothing was fitted.")
    if rungs_share_a_path(estimator, checkpoints) and not path_takes_groups(estimator):
        raise ValueError(
            f"{who} with groups needs fresh rungs: the releases of one noise path (noise "
            f"reduction of {name}, or checkpoints of one DP-GD run) do not take groups. "
            "Use OutputPertSVM(noise='auto', delta=0) (Gamma-norm noise, fresh fits) or "
            "another estimator, or "
            "checkpoints=False. Nothing was fitted.")
    check_private_step_params(estimator, who, persons=True)
