"""Checks of a metric's inputs, all before any noise, with messages that state no count
and no value read from the private rows."""

import numpy as np
import pandas as pd

from ..stats._descriptive import category_codes, one_dimension
from ..stats._release import check_finite


def check_labels(name, y):
    """``y`` as a 1-D object array, refused if it holds a missing label."""
    y = one_dimension(name, np.asarray(y, dtype=object))
    if pd.isna(y).any():
        raise ValueError(f"{name} holds a missing label (NaN or None); give every row a "
                         "label.")
    return y


def label_set(y_true, labels):
    """The public label set: ``labels`` when declared, else the labels of ``y_true``
    (treated as public: declare ``labels`` to keep it private)."""
    if labels is not None:
        return list(labels)
    try:
        return np.unique(y_true).tolist()
    except TypeError:
        raise ValueError("y_true mixes labels of types that cannot be ordered; declare "
                         "labels.") from None


def class_codes(y_true, labels):
    """Each row's position in the public label set (refusing undeclared labels)."""
    labels = label_set(y_true, labels)
    return category_codes(y_true, labels, "y_true"), labels


def binary_target(y_true, labels):
    """``y_true`` as 0/1 for the negative and positive (the second) of two labels."""
    codes, labels = class_codes(y_true, labels)
    if len(labels) != 2:
        raise ValueError("This metric needs two classes: y_true holds another number of "
                         "labels. Declare labels=[negative, positive] (public).")
    return codes.astype(float)


def check_probabilities(name, y_prob, n_columns=None):
    """Probabilities in [0, 1], finite; 2-D rows summing to 1."""
    y_prob = check_finite(name, y_prob)
    if np.any(y_prob < 0.0) or np.any(y_prob > 1.0):
        raise ValueError(f"{name} holds a value outside [0, 1]; give probabilities.")
    if y_prob.ndim == 2:
        if n_columns is not None and y_prob.shape[1] != n_columns:
            raise ValueError(f"{name} has another number of columns than there are labels; "
                             "give one column per label, in the order of labels.")
        if not np.allclose(y_prob.sum(axis=1), 1.0, rtol=0.0, atol=1e-8):
            raise ValueError(f"The rows of {name} must sum to 1.")
    return y_prob

