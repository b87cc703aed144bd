"""Private accuracy, balanced accuracy, Brier score and log loss.

Each is a bounded per-row loss averaged as a noisy centred sum over a noisy total weight
(:mod:`skdp.stats._cells`); balanced accuracy does so within each class (parallel
composition: a row is in one class). Sensitivities: ``docs/privacy/metrics.rst``.
"""

import numpy as np

from ..stats._cells import Privacy, release_cells
from ..stats._release import PRIVACY_PARAMS, check_lengths, check_positive
from ..utils._docstrings import fill_doc
from ._checks import binary_target, check_labels, check_probabilities, class_codes

UNIT = (0.0, 1.0)

LOG_LOSS_BOUND = float(-np.log(1e-4))
"""Default public bound of a row's log loss: probabilities below 1e-4 count as 1e-4."""


def _mean_of(values, privacy, bounds):
    """The private weighted mean of per-row values in public ``bounds``."""
    sums = release_cells(np.zeros(len(values), dtype=np.intp), 1, privacy,
                         values[:, None], [bounds])
    return sums.estimate(lambda flat: sums.mean(flat, 0), bounds, denominators=[0])


@fill_doc(fragments=PRIVACY_PARAMS)
def private_accuracy_score(y_true, y_pred, *, epsilon, delta=0.0, sample_weight=None,
                           groups=None, max_rows_per_group=1.0, max_sample_weight=1.0,
                           random_state=None):
    """Private accuracy: the weighted share of rows whose prediction equals the label.

    Parameters
    ----------
    y_true, y_pred : array-like of shape (n_samples,)
        Labels and predictions.
    %(epsilon)s
    %(delta)s
    %(sample_weight)s
    %(groups)s
    %(max_rows_per_group)s
    %(max_sample_weight)s
    %(random_state)s

    Returns
    -------
    accuracy : PrivateEstimate

    Notes
    -----
    Noisy ``(sum_i w_i, sum_i w_i (a_i - 1/2))`` with ``a_i`` in {0, 1}, each on its
    own scale: Laplace ``2 U / epsilon`` for the weight and ``U / epsilon`` for the sum
    (``epsilon / 2`` each; ``docs/privacy/metrics.rst``).

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.metrics import private_accuracy_score
    >>> float(private_accuracy_score([0, 1, 1, 0], [0, 1, 0, 0], epsilon=np.inf))
    0.75
    """
    privacy = Privacy(epsilon, delta, sample_weight, groups, max_rows_per_group,
                      max_sample_weight, random_state)
    y_true, y_pred = check_labels("y_true", y_true), check_labels("y_pred", y_pred)
    check_lengths(y_true, y_pred)
    return _mean_of((y_true == y_pred).astype(float), privacy, UNIT)


@fill_doc(fragments=PRIVACY_PARAMS)
def private_balanced_accuracy_score(y_true, y_pred, *, epsilon, labels=None, delta=0.0,
                                    sample_weight=None, groups=None, max_rows_per_group=1.0,
                                    max_sample_weight=1.0, random_state=None):
    """Private balanced accuracy: the mean over the classes of each class's recall.

    Parameters
    ----------
    y_true, y_pred : array-like of shape (n_samples,)
        Labels and predictions.
    %(epsilon)s
    labels : array-like, default=None
        The public label set. ``None``: the labels of ``y_true``, treated as public.
    %(delta)s
    %(sample_weight)s
    %(groups)s
    %(max_rows_per_group)s
    %(max_sample_weight)s
    %(random_state)s

    Returns
    -------
    balanced_accuracy : PrivateEstimate

    Notes
    -----
    Each class's recall is a noisy ratio as in :func:`private_accuracy_score`; a row
    is in one class, so all classes share one budget (parallel composition).

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.metrics import private_balanced_accuracy_score
    >>> float(private_balanced_accuracy_score([0, 0, 0, 1], [0, 0, 1, 1], epsilon=np.inf))
    0.8333333333333333
    """
    privacy = Privacy(epsilon, delta, sample_weight, groups, max_rows_per_group,
                      max_sample_weight, random_state)
    y_true, y_pred = check_labels("y_true", y_true), check_labels("y_pred", y_pred)
    check_lengths(y_true, y_pred)
    codes, labels = class_codes(y_true, labels)
    sums = release_cells(codes, len(labels), privacy,
                         (y_true == y_pred).astype(float)[:, None], [UNIT])
    return sums.estimate(lambda flat: np.mean([sums.mean(flat, k)
                                               for k in range(len(labels))]), UNIT,
                         denominators=range(len(labels)))


@fill_doc(fragments=PRIVACY_PARAMS)
def private_brier_score_loss(y_true, y_proba, *, epsilon, labels=None, delta=0.0,
                             sample_weight=None, groups=None, max_rows_per_group=1.0,
                             max_sample_weight=1.0, random_state=None):
    """Private Brier score of a binary classifier: the mean of ``(y - p)^2``.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Labels, two classes.
    y_proba : array-like of shape (n_samples,)
        Probability of the positive class (the second label), in [0, 1].
    %(epsilon)s
    labels : array-like of two labels, default=None
        ``[negative, positive]``, public. ``None``: the two labels of ``y_true`` sorted
        (treated as public).
    %(delta)s
    %(sample_weight)s
    %(groups)s
    %(max_rows_per_group)s
    %(max_sample_weight)s
    %(random_state)s

    Returns
    -------
    brier : PrivateEstimate

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.metrics import private_brier_score_loss
    >>> float(private_brier_score_loss([0, 1], [0.5, 1.0], epsilon=np.inf))
    0.125
    """
    privacy = Privacy(epsilon, delta, sample_weight, groups, max_rows_per_group,
                      max_sample_weight, random_state)
    y_true = check_labels("y_true", y_true)
    y_proba = check_probabilities("y_proba", np.ravel(y_proba))
    check_lengths(y_true, y_proba)
    return _mean_of((binary_target(y_true, labels) - y_proba) ** 2, privacy, UNIT)


@fill_doc(fragments=PRIVACY_PARAMS)
def private_log_loss(y_true, y_pred, *, epsilon, labels=None, max_loss=LOG_LOSS_BOUND,
                     delta=0.0, sample_weight=None, groups=None, max_rows_per_group=1.0,
                     max_sample_weight=1.0, random_state=None):
    """Private log loss, each row's loss clipped at a public ``max_loss``.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Labels.
    y_pred : array-like of shape (n_samples,) or (n_samples, n_labels)
        Probability of the positive (second) label, or of each label in the order of
        ``labels``; in [0, 1], rows summing to 1.
    %(epsilon)s
    labels : array-like, default=None
        The public label set. ``None``: the labels of ``y_true`` sorted (treated as
        public).
    max_loss : float, default=-log(1e-4)
        Public bound of a row's loss ``-log p``: a probability below ``exp(-max_loss)``
        counts as ``exp(-max_loss)``. The noise grows in proportion to it.
    %(delta)s
    %(sample_weight)s
    %(groups)s
    %(max_rows_per_group)s
    %(max_sample_weight)s
    %(random_state)s

    Returns
    -------
    log_loss : PrivateEstimate

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.metrics import private_log_loss
    >>> round(float(private_log_loss([0, 1], [0.5, 0.5], epsilon=np.inf)), 4)
    0.6931
    """
    privacy = Privacy(epsilon, delta, sample_weight, groups, max_rows_per_group,
                      max_sample_weight, random_state)
    check_positive("max_loss", max_loss)
    y_true = check_labels("y_true", y_true)
    codes, labels = class_codes(y_true, labels)
    y_pred = np.asarray(y_pred, dtype=float)
    if y_pred.ndim == 1:
        if len(labels) != 2:
            raise ValueError("A 1-D y_pred needs two labels; give one column per label.")
        y_pred = np.column_stack([1.0 - y_pred, y_pred])
    y_pred = check_probabilities("y_pred", y_pred, n_columns=len(labels))
    check_lengths(y_true, y_pred)
    truth = y_pred[np.arange(len(codes)), codes]
    with np.errstate(divide="ignore"):
        losses = np.minimum(-np.log(truth), float(max_loss))
    return _mean_of(losses, privacy, (0.0, float(max_loss)))
