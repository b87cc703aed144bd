"""Private descriptive statistics: counts, bounded means, quantiles, histograms, tables.

Every function releases noisy sums of bounded per-row contributions under add/remove of
one row, or with ``groups`` of one person with all their rows, and returns a
:class:`PrivateEstimate` (or :class:`PrivateEstimates`) that converts with ``float()``
and states its noise (``noise_std``, ``conf_int``). Bounds, bins and categories are
public and given by the caller; the number of rows is private and is never divided by.
The derivations are in ``docs/privacy/metrics.rst``.
"""

from ._describe import describe
from ._descriptive import (private_count, private_crosstab, private_histogram, private_mean,
                           private_quantile)
from ._estimate import NoiseLaw, PrivateEstimate, PrivateEstimates

__all__ = [
    "NoiseLaw",
    "PrivateEstimate",
    "PrivateEstimates",
    "describe",
    "private_count",
    "private_crosstab",
    "private_histogram",
    "private_mean",
    "private_quantile",
]
