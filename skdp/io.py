"""Save and load fitted models with ``skops.io``: loading runs no arbitrary code.

``skops.io.load`` refuses every type it does not trust by default; skdp's own
estimators are trusted here by exact name (never ``trusted=True``), and a file holding
any other unknown type is refused with the list, for the user to inspect.
"""

import numpy as np

from .accounting._dpsgd import DPSGDEvent
from .linear_model import (DPSGDClassifier, NAPPLasso, NAPPLassoClassifier,
                           ObjPertLogisticRegression, OutputPertSVM, SSPLinearRegression)
from .model_selection import (AnalyticEpsilonForUtility, EpsilonForUtility,
                              PrivateGridSearchCV, PrivateRandomizedSearchCV)
from .preprocessing import BoundedScaler, Clipper

__all__ = ["load_model", "save_model"]


def _qualified_name(kind):
    return f"{kind.__module__}.{kind.__qualname__}"


TRUSTED_TYPES = frozenset(_qualified_name(kind) for kind in (
    DPSGDClassifier, NAPPLasso, NAPPLassoClassifier, ObjPertLogisticRegression,
    OutputPertSVM, SSPLinearRegression, AnalyticEpsilonForUtility, EpsilonForUtility,
    PrivateGridSearchCV, PrivateRandomizedSearchCV, BoundedScaler, Clipper, DPSGDEvent,
    np.dtype))
"""The types skdp's models hold beyond those ``skops.io`` trusts by default."""


def save_model(model, path):
    """Write a fitted model to ``path`` in the ``skops.io`` format.

    Parameters
    ----------
    model : estimator
        A fitted estimator or Pipeline.
    path : str or Path
        The file to write (``.skops`` by convention).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from skdp import ObjPertLogisticRegression
    >>> clf = ObjPertLogisticRegression(random_state=0).fit([[0.1], [0.9]] * 5, [0, 1] * 5)
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "model.skops"
    >>> from skdp.io import load_model, save_model
    >>> save_model(clf, path)
    >>> (load_model(path).coef_ == clf.coef_).all()
    np.True_
    """
    import skops.io

    skops.io.dump(model, path)


def load_model(path):
    """Load a model written by :func:`save_model`, trusting only skdp's own types.

    Parameters
    ----------
    path : str or Path
        The ``.skops`` file.

    Returns
    -------
    model : estimator

    Raises
    ------
    ValueError
        The file holds a type that neither ``skops.io`` nor skdp trusts; nothing is
        loaded. Inspect it with ``skops.io.get_untrusted_types`` and load it with
        ``skops.io.load(path, trusted=[...])`` if you trust it.
    """
    import skops.io

    untrusted = skops.io.get_untrusted_types(file=path)
    if unknown := sorted(set(untrusted) - TRUSTED_TYPES):
        raise ValueError(f"{path} holds types that skdp does not trust: {unknown}. "
                         "Nothing was loaded; inspect them with skops.io.get_untrusted_types "
                         "and pass the ones you trust to skops.io.load(path, trusted=[...]).")
    return skops.io.load(path, trusted=untrusted)
