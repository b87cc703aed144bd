"""Persons as the unit of privacy: ``fit(X, y, groups=...)``.

With ``groups`` given, two datasets are neighbours when one has all the rows of one
person (one group label) more or fewer than the other (``neighboring_ =
"add_remove_person"``), or, under ``neighboring="replace"``, one person's rows in
place of another's (``"replace_person"``). A person's rows may be any number.

The mechanisms bound a person's whole contribution, never a row's alone:

* the weighted mechanisms (objective and output perturbation, NAPP) give each of a
  person's ``k`` rows the weight ``min(1, M / k)`` for the public
  ``max_rows_per_group`` ``M``, so a person's weights sum to at most ``M``
  (:func:`person_row_weights`); a person with ``k <= M`` rows keeps them whole;
* DP-SGD clips the sum of a person's per-row gradients and samples persons.

A person's number of rows and the number of persons are private: they enter only
through the bounds above, never through a released statistic or a data-dependent
choice.
"""

import numpy as np
import pandas as pd

PERSON_RELATIONS = {"add_remove": "add_remove_person", "replace": "replace_person"}


MISSING_GROUP = "groups holds a missing value; give every row a person label."

MISMATCHED_GROUPS = ("groups has another number of labels than X has rows; give one "
                     "person label per row.")
"""The refusal of a wrong length (neither length is stated: under add/remove the
number of rows is private)."""

UNORDERED_GROUPS = ("groups mixes labels of types that cannot be ordered together (for "
                    "example strings and numbers); give every person a label of one type.")


def check_groups(groups, n_samples):
    """Each row's person, as integer codes ``0 .. n_persons - 1``.

    Parameters
    ----------
    groups : array-like of shape (n_samples,)
        The person of each row: any hashable labels (a pandas Series included).
    n_samples : int
        The number of rows of ``X``.

    Returns
    -------
    codes : ndarray of shape (n_samples,), dtype=intp

    Raises
    ------
    ValueError
        ``groups`` is not one label per row, or holds a missing value. Raised before
        any noise is drawn.
    """
    labels = one_column(_labels(groups))
    if pd.isna(labels).any():
        raise ValueError(MISSING_GROUP)
    if labels.shape[0] != n_samples:
        raise ValueError(MISMATCHED_GROUPS)
    try:
        _, codes = np.unique(labels, return_inverse=True)
    except TypeError:
        raise ValueError(UNORDERED_GROUPS) from None
    return codes.astype(np.intp, copy=False)


def _labels(groups):
    """``groups`` as an array: numbers given as a numpy array or a pandas Series of a
    numeric numpy dtype kept as they are (their codes are those of the same labels as
    objects, and sorting them is ~20x faster), anything else as objects (so that
    labels of several types are never coerced to one, but refused when unordered)."""
    dtype = getattr(groups, "dtype", None)
    if isinstance(dtype, np.dtype) and dtype.kind in "biuf":
        return np.asarray(groups)
    return np.asarray(groups, dtype=object)


def one_column(labels):
    """``labels`` as one dimension (a column of labels taken as one), or refused."""
    if labels.ndim == 2 and labels.shape[1] == 1:
        labels = labels[:, 0]
    if labels.ndim != 1:
        raise ValueError(f"groups must be one person label per row, a 1-D array; got an "
                         f"array of {labels.ndim} dimensions.")
    return labels


def rows_per_person(codes):
    """Each row's person's number of rows, ``k_i`` (private: use only inside a bound)."""
    return np.bincount(codes)[codes]


def person_row_weights(codes, max_rows_per_group):
    """Each row's weight ``min(1, M / k)``, ``k`` its person's number of rows: a
    person's weights sum to ``min(k, M) <= M``.

    Parameters
    ----------
    codes : ndarray of shape (n_samples,)
        From :func:`check_groups`.
    max_rows_per_group : float
        ``M``, public.

    Returns
    -------
    weights : ndarray of shape (n_samples,)
    """
    return person_weights_of_sizes(rows_per_person(codes), max_rows_per_group)


def person_weights_of_sizes(sizes, max_rows_per_group):
    """Each row's weight ``min(1, M / k)`` from its person's number of rows ``k``
    (``sizes``, one per row): the weights of :func:`person_row_weights`, also
    computed partition by partition on a dask fit.

    Parameters
    ----------
    sizes : ndarray of shape (n_samples,)
        Each row's ``k`` (private: use only inside this bound).
    max_rows_per_group : float
        ``M``, public.

    Returns
    -------
    weights : ndarray of shape (n_samples,)
    """
    return np.minimum(1.0, float(max_rows_per_group) / sizes)


def person_relation(neighboring):
    """The reported relation of a fit with ``groups`` under ``neighboring``."""
    return PERSON_RELATIONS[neighboring]
