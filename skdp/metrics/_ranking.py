"""Private ROC AUC and calibration curve, both over public bins of the score.

AUC: a noisy histogram of the scores of each class (a row in one cell: sensitivity
``U``), and the AUC of the binned scores read off it (ties in a bin count one half, as
scikit-learn counts tied scores). Calibration: in each public bin of the predicted
probability, the noisy weight and the noisy centred sums of the label and of the
probability. Derivations: ``docs/privacy/metrics.rst``.
"""

import numpy as np

from ..stats._cells import Privacy, release_cells
from ..stats._descriptive import bin_codes, check_bounds, check_edges
from ..stats._estimate import PrivateEstimates
from ..stats._release import PRIVACY_PARAMS, check_finite, check_lengths
from ..utils._docstrings import fill_doc
from ._checks import binary_target, check_labels, check_probabilities

AUC_BINS = 32
"""Default number of public score bins of :func:`private_roc_auc_score`."""


def binned_auc(negatives, positives, floor=0.0, clip=True):
    """The AUC of two histograms over the same ordered bins (noisy counts clipped at 0;
    each class's total floored at ``floor``, a public number).

    Parameters
    ----------
    negatives, positives : ndarray of shape (n_bins,)
        Weighted counts of each class in each bin, lowest scores first.
    floor : float, default=0.0
        Least value of each class's total.
    clip : bool, default=True
        Clip the counts at 0 (``False``: the smooth formula, whose gradient states
        the noise).

    Returns
    -------
    auc : float
    """
    if clip:
        negatives, positives = np.maximum(negatives, 0.0), np.maximum(positives, 0.0)
    below = np.cumsum(negatives) - negatives
    wins = np.sum(positives * (below + 0.5 * negatives))
    with np.errstate(divide="ignore", invalid="ignore"):
        return wins / (max(positives.sum(), floor) * max(negatives.sum(), floor))


@fill_doc(fragments=PRIVACY_PARAMS)
def private_roc_auc_score(y_true, y_score, *, epsilon, bins=AUC_BINS, score_bounds=(0.0, 1.0),
                          labels=None, delta=0.0, sample_weight=None, groups=None,
                          max_rows_per_group=1.0, max_sample_weight=1.0, random_state=None):
    """Private area under the ROC curve of a binary classifier, over public score bins.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Labels, two classes.
    y_score : array-like of shape (n_samples,)
        Score of the positive (second) label: a probability, or any score inside
        ``score_bounds`` (outside scores are clipped into it).
    %(epsilon)s
    bins : int or array-like of edges, default=32
        Public bins of the score: a number of equal bins of ``score_bounds``, or
        increasing edges. Fewer bins: less noise, coarser ranking.
    score_bounds : tuple of two floats, default=(0.0, 1.0)
        The public range of the score.
    labels : array-like of two labels, default=None
        ``[negative, positive]``, public. ``None``: the two labels of ``y_true`` sorted.
    %(delta)s
    %(sample_weight)s
    %(groups)s
    %(max_rows_per_group)s
    %(max_sample_weight)s
    %(random_state)s

    Returns
    -------
    auc : PrivateEstimate

    Notes
    -----
    It equals scikit-learn's AUC of the scores rounded to their bins (exactly so at
    ``epsilon=inf``); a pair of rows in one bin counts one half.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.metrics import private_roc_auc_score
    >>> float(private_roc_auc_score([0, 0, 1, 1], [0.1, 0.6, 0.4, 0.9], bins=10,
    ...                             epsilon=np.inf))
    0.75
    """
    privacy = Privacy(epsilon, delta, sample_weight, groups, max_rows_per_group,
                      max_sample_weight, random_state)
    edges = check_edges(bins, check_bounds(score_bounds, "score_bounds"))
    y_true = check_labels("y_true", y_true)
    y_score = check_finite("y_score", np.ravel(y_score))
    check_lengths(y_true, y_score)
    positive = binary_target(y_true, labels).astype(np.intp)
    n_bins = edges.size - 1
    sums = release_cells(positive * n_bins + bin_codes(y_score, edges), 2 * n_bins, privacy)
    floor = sums.noise_std()

    def auc(flat, clip=True):
        counts = sums.table(flat)[:, 0]
        return binned_auc(counts[:n_bins], counts[n_bins:], floor, clip)

    return sums.estimate(auc, (0.0, 1.0), lambda flat: auc(flat, clip=False))


@fill_doc(fragments=PRIVACY_PARAMS)
def private_calibration_curve(y_true, y_prob, *, epsilon, bins=5, labels=None, delta=0.0,
                              sample_weight=None, groups=None, max_rows_per_group=1.0,
                              max_sample_weight=1.0, random_state=None):
    """Private calibration curve: in each public bin of the predicted probability, the
    share of positives and the mean predicted probability.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Labels, two classes.
    y_prob : array-like of shape (n_samples,)
        Probability of the positive (second) label, in [0, 1].
    %(epsilon)s
    bins : int or array-like of edges, default=5
        A number of equal bins of [0, 1], or increasing edges from 0 to 1. Bins are
        ``(a, b]`` with the first closed, as scikit-learn's ``calibration_curve``.
    labels : array-like of two labels, default=None
        ``[negative, positive]``, public. ``None``: the two labels of ``y_true`` sorted.
    %(delta)s
    %(sample_weight)s
    %(groups)s
    %(max_rows_per_group)s
    %(max_sample_weight)s
    %(random_state)s

    Returns
    -------
    prob_true, prob_pred : PrivateEstimates
        One estimate per bin (every bin, labelled by its edges: an empty bin is
        released too, its values dominated by noise, since which bins are empty is
        private).

    Notes
    -----
    Per bin, noisy ``(sum w, sum w (y - 1/2), sum w (p - 1/2))``, each on its own scale
    (``epsilon / 3`` each; a row is in one bin): Laplace ``3 U / epsilon`` for the weight
    and ``1.5 U / epsilon`` for each sum. A bin whose noisy weight is below 10 of its
    noise's standard deviations states ``noise_std = nan``.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.metrics import private_calibration_curve
    >>> prob_true, prob_pred = private_calibration_curve(
    ...     [0, 1, 1, 1], [0.1, 0.3, 0.8, 0.9], bins=2, epsilon=np.inf)
    >>> prob_true.values.round(6).tolist(), prob_pred.values.round(6).tolist()
    ([0.5, 1.0], [0.2, 0.85])
    """
    privacy = Privacy(epsilon, delta, sample_weight, groups, max_rows_per_group,
                      max_sample_weight, random_state)
    edges = check_edges(bins, (0.0, 1.0))
    if edges[0] != 0.0 or edges[-1] != 1.0:
        raise ValueError("The edges of the calibration bins must run from 0 to 1.")
    y_true = check_labels("y_true", y_true)
    y_prob = check_probabilities("y_prob", np.ravel(y_prob))
    check_lengths(y_true, y_prob)
    n_bins = edges.size - 1
    values = np.column_stack([binary_target(y_true, labels), y_prob])
    sums = release_cells(bin_codes(y_prob, edges, side="left"), n_bins, privacy, values,
                         [(0.0, 1.0), (0.0, 1.0)])
    labels = tuple(zip(edges[:-1].tolist(), edges[1:].tolist()))
    prob_true, prob_pred = (PrivateEstimates(tuple(
        sums.estimate(lambda flat, k=k, j=column: sums.mean(flat, k, j), (0.0, 1.0),
                      denominators=[k])
        for k in range(n_bins)), labels) for column in (0, 1))
    return prob_true, prob_pred
