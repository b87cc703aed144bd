"""Loaders for the benchmark datasets of the DP-ERM literature.

:func:`load_adult` and :func:`load_kddcup99` return the features already
scaled to [0, 1] with data-independent bounds and with every row clipped to a
public L2 norm ``data_norm``, the assumption the privacy analyses of the skdp
estimators rest on. The raw files are read from :func:`get_data_home` (the
``data_home`` argument, else ``$SKDP_DATA_HOME``, else ``~/skdp_data``) and
downloaded from the UCI archive when missing.
"""

from ._base import get_data_home, verify_checksums
from ._loaders import load_adult, load_kddcup99

__all__ = ["get_data_home", "load_adult", "load_kddcup99", "verify_checksums"]
