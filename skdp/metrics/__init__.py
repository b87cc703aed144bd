"""Private evaluation of a model on private held-out rows.

Each metric releases noisy sums of bounded per-row contributions (under add/remove of a
row, or with ``groups`` of a person with all their rows) and returns a
:class:`~skdp.stats.PrivateEstimate`: it converts with ``float()`` and states the
noise it carries (``noise_std``, ``conf_int``), never a count of the rows. No metric
divides by an exact count: a mean is a noisy sum over a noisy total weight. At
``epsilon=np.inf`` each equals scikit-learn's metric (the AUC: of the scores rounded to
their public bins). The derivations are in ``docs/privacy/metrics.rst``.
"""

from ._classification import (private_accuracy_score, private_balanced_accuracy_score,
                              private_brier_score_loss, private_log_loss)
from ._ranking import private_calibration_curve, private_roc_auc_score
from ._regression import private_mean_squared_error, private_r2_score

__all__ = [
    "private_accuracy_score",
    "private_balanced_accuracy_score",
    "private_brier_score_loss",
    "private_calibration_curve",
    "private_log_loss",
    "private_mean_squared_error",
    "private_r2_score",
    "private_roc_auc_score",
]
