"""A user's per-row utility for the private searches: clipped into [0, 1], and tried
on public stand-ins before any noise.

A search scores each secret trial by a noisy sum of per-row utilities in [0, 1]
(sensitivity 1). A callable of the wrong shape is refused on public input first
(:func:`probe_scoring`), and no message states a count of the private rows.
"""

import numpy as np
from sklearn.base import is_classifier


def clipped_utility(user):
    """``user``'s per-row utility, clipped into [0, 1] (a NaN counts 0).

    Parameters
    ----------
    user : callable
        ``(model, X, y) -> array of shape (n_rows,)``.

    Returns
    -------
    utility : callable
        The same signature; raises a ValueError that states no count for another
        shape.
    """
    def clipped(model, X, y):
        values = np.asarray(user(model, X, y), dtype=float)
        if values.shape != (len(y),):
            # the shape would count the scoring rows: the message states none
            raise ValueError(
                "scoring must be a per-row utility: a callable (model, X, y) returning "
                "one value per row of X (an array of shape (n_rows,)).")
        return np.clip(np.nan_to_num(values, nan=0.0), 0.0, 1.0)

    return clipped


class _ScoringProbe:
    """A stand-in fitted model (constant outputs) on which a user's scoring callable
    is tried before any noise: it reads no private row."""

    def __init__(self, classes, estimator):
        self.classes_ = classes
        self._estimator = estimator

    def __getattr__(self, name):  # the candidate's public parameters (C, epsilon, ...)
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._estimator, name)

    def predict(self, X):
        if self.classes_ is None:
            return np.zeros(_n_rows(X))
        return np.repeat(self.classes_[:1], _n_rows(X))

    def predict_proba(self, X):
        k = len(self.classes_)
        return np.full((_n_rows(X), k), 1.0 / k)

    def decision_function(self, X):
        k = len(self.classes_)
        return np.zeros(_n_rows(X) if k == 2 else (_n_rows(X), k))

    def score(self, X, y):
        return float(np.mean(self.predict(X) == y))


def _n_rows(X):
    return X.shape[0] if hasattr(X, "shape") else len(X)


_PROBE_ROWS = 3


def _probe_input(X):
    """Public stand-in rows with ``X``'s columns (zeros; a frame keeps its names)."""
    if hasattr(X, "iloc"):
        import pandas as pd

        return pd.DataFrame(np.zeros((_PROBE_ROWS, X.shape[1])), columns=X.columns)
    return np.zeros((_PROBE_ROWS, X.shape[1]))


def probe_scoring(utility, estimator, X, classes):
    """Refuse, before any noise, a scoring callable that does not return one utility
    per row, by calling it on public stand-in rows and a constant stand-in model
    (:class:`_ScoringProbe`, which also answers the estimator's parameters); nothing
    in the message depends on the private rows. A callable that reads what the
    stand-in cannot give (a fitted attribute) is left to its real call, whose
    message states no count either."""
    classes = None if classes is None else np.asarray(classes)
    classifier = is_classifier(estimator) and classes is not None
    y_probe = np.resize(classes, _PROBE_ROWS) if classifier else np.zeros(_PROBE_ROWS)
    probe = _ScoringProbe(classes if classifier else None, estimator)
    try:
        utility(probe, _probe_input(X), y_probe)
    except AttributeError:
        return
    except Exception as error:
        raise ValueError(
            "scoring must be a per-row utility: a callable (model, X, y) returning one value "
            "per row from the model's predictions. Tried before any noise on public "
            "stand-in rows and a stand-in model (predict, predict_proba, decision_function, "
            f"score), it failed with {type(error).__name__}: {error} Nothing was "
            "fitted.") from None
