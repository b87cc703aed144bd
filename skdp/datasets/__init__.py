"""Loaders for the benchmark datasets of the DP-ERM literature.

:func:`load_adult`, :func:`load_kddcup99` and :func:`load_mnist` return the
features already scaled to [0, 1] with data-independent bounds and with every row clipped to a
public L2 norm ``data_norm``, the assumption the privacy analyses of the skdp
estimators rest on. The raw files are read from :func:`get_data_home` (the
``data_home`` argument, else ``$SKDP_DATA_HOME``, else ``~/skdp_data``) and
downloaded (UCI archive, MNIST mirror) when missing.
"""

from ._base import get_data_home, verify_checksums
from ._loaders import load_adult, load_kddcup99, load_mnist

__all__ = ["get_data_home", "load_adult", "load_kddcup99", "load_mnist", "verify_checksums"]
