"""Loaders for the benchmark datasets of the DP-ERM literature.

:func:`load_adult`, :func:`load_kddcup99` and :func:`load_mnist` return the
features already scaled to [0, 1] with data-independent bounds and with every row clipped to a
public L2 norm ``data_norm``, the assumption the privacy analyses of the skdp
estimators rest on. The raw files are read from :func:`get_data_home` (the
``data_home`` argument, else ``$SKDP_DATA_HOME``, else ``~/skdp_data``) and
downloaded (UCI archive, MNIST mirror) when missing.

``load_adult(as_frame=True)`` returns Adult's raw columns instead, for
:func:`adult_preprocessor`, a public preprocessor (categories declared in the
dataset's documentation, fixed numeric bounds) that may precede a private
estimator in a ``Pipeline``.
"""

from ._base import get_data_home, verify_checksums
from ._loaders import adult_preprocessor, load_adult, load_kddcup99, load_mnist

__all__ = ["adult_preprocessor", "get_data_home", "load_adult", "load_kddcup99",
           "load_mnist", "verify_checksums"]
