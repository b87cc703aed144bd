"""Private mean squared error and R^2 with a public bound on the targets.

Targets and predictions are clipped into ``[-y_bound, y_bound]`` (a per-row operation),
so a row's squared error lies in ``[0, 4 y_bound^2]``. R^2 releases, in one noisy vector,
the total weight and the centred sums of ``y``, ``y^2`` and the squared error, and reads
``1 - SSE / (S_yy - S_y^2 / N)`` off them. Derivations: ``docs/privacy/metrics.rst``.
"""

import numpy as np

from ..stats._cells import Privacy, release_cells
from ..stats._descriptive import one_dimension
from ..stats._release import PRIVACY_PARAMS, check_finite, check_lengths, check_positive, ratio
from ..utils._docstrings import fill_doc


def _targets(y_true, y_pred, y_bound):
    """Both inputs checked, 1-D, and clipped into ``[-y_bound, y_bound]``."""
    check_positive("y_bound", y_bound)
    y_true = check_finite("y_true", one_dimension("y_true", y_true))
    y_pred = check_finite("y_pred", one_dimension("y_pred", y_pred))
    check_lengths(y_true, y_pred)
    bound = float(y_bound)
    return np.clip(y_true, -bound, bound), np.clip(y_pred, -bound, bound)


@fill_doc(fragments=PRIVACY_PARAMS)
def private_mean_squared_error(y_true, y_pred, *, epsilon, y_bound, delta=0.0,
                               sample_weight=None, groups=None, max_rows_per_group=1.0,
                               max_sample_weight=1.0, random_state=None):
    """Private mean squared error, targets and predictions clipped to a public bound.

    Parameters
    ----------
    y_true, y_pred : array-like of shape (n_samples,)
        Targets and predictions (finite).
    %(epsilon)s
    y_bound : float
        Public bound on ``|y|``: both inputs are clipped into ``[-y_bound, y_bound]``.
        The noise grows as ``y_bound^2``.
    %(delta)s
    %(sample_weight)s
    %(groups)s
    %(max_rows_per_group)s
    %(max_sample_weight)s
    %(random_state)s

    Returns
    -------
    mse : PrivateEstimate

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.metrics import private_mean_squared_error
    >>> float(private_mean_squared_error([0.0, 1.0], [0.0, 0.5], y_bound=1.0, epsilon=np.inf))
    0.125
    """
    privacy = Privacy(epsilon, delta, sample_weight, groups, max_rows_per_group,
                      max_sample_weight, random_state)
    y_true, y_pred = _targets(y_true, y_pred, y_bound)
    bounds = (0.0, 4.0 * float(y_bound) ** 2)
    sums = release_cells(np.zeros(y_true.size, dtype=np.intp), 1, privacy,
                         ((y_true - y_pred) ** 2)[:, None], [bounds])
    return sums.estimate(lambda flat: sums.mean(flat, 0), bounds, denominators=[0])


@fill_doc(fragments=PRIVACY_PARAMS)
def private_r2_score(y_true, y_pred, *, epsilon, y_bound, delta=0.0, sample_weight=None,
                     groups=None, max_rows_per_group=1.0, max_sample_weight=1.0,
                     random_state=None):
    """Private coefficient of determination, targets and predictions clipped to a public
    bound.

    Parameters
    ----------
    y_true, y_pred : array-like of shape (n_samples,)
        Targets and predictions (finite).
    %(epsilon)s
    y_bound : float
        Public bound on ``|y|``, as in :func:`private_mean_squared_error`.
    %(delta)s
    %(sample_weight)s
    %(groups)s
    %(max_rows_per_group)s
    %(max_sample_weight)s
    %(random_state)s

    Returns
    -------
    r2 : PrivateEstimate
        At most 1. The noisy total sum of squares is floored at its noise's standard
        deviation (a public number).

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.metrics import private_r2_score
    >>> float(private_r2_score([0.0, 1.0, 2.0], [0.0, 1.0, 1.0], y_bound=2.0, epsilon=np.inf))
    0.5
    """
    privacy = Privacy(epsilon, delta, sample_weight, groups, max_rows_per_group,
                      max_sample_weight, random_state)
    y_true, y_pred = _targets(y_true, y_pred, y_bound)
    bound = float(y_bound)
    values = np.column_stack([y_true, y_true ** 2, (y_true - y_pred) ** 2])
    sums = release_cells(np.zeros(y_true.size, dtype=np.intp), 1, privacy, values,
                         [(-bound, bound), (0.0, bound ** 2), (0.0, 4.0 * bound ** 2)])

    def r2(flat):
        weight = sums.weight(flat, 0)
        total = sums.total(flat, 0, 1) - ratio(sums.total(flat, 0, 0) ** 2, weight,
                                               sums.noise_std())
        return 1.0 - ratio(sums.total(flat, 0, 2), total, sums.noise_std(2))

    return sums.estimate(r2, (-np.inf, 1.0), denominators=[0])
