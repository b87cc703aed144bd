"""Stand-ins and hand computations shared by the person-level selection and search tests."""

import numpy as np
import pandas as pd

from skdp import ObjPertLogisticRegression
from skdp.model_selection._private_selection import _SelectionStreams
from skdp.utils._groups import check_groups


class _PersonStub(ObjPertLogisticRegression):
    """A stand-in for an estimator with person-level privacy: it records the groups
    each fit receives and fits the rows as given (pure objective perturbation, the
    same noise with or without groups), declaring ``neighboring_ =
    "add_remove_person"`` when given groups. It tests the searches' plumbing, not a
    mechanism."""

    received = []

    def fit(self, X, y, groups=None):
        _PersonStub.received.append(None if groups is None else np.asarray(groups).copy())
        super().fit(X, y)
        if groups is not None:
            self.neighboring_ = "add_remove_person"
        return self


class _RowsOnly(ObjPertLogisticRegression):
    """A fit without groups."""

    def fit(self, X, y):
        return super().fit(X, y)


class _ReleasesRowsOnly(ObjPertLogisticRegression):
    """The weighted fit, whose ``_releases`` takes no groups."""

    def _releases(self, X, y, with_derivative=False, sample_weight=None):
        return super()._releases(X, y, with_derivative, sample_weight=sample_weight)


def _person_coins(seed, codes, fraction=0.2):
    """The persons' split by hand: person ``j`` goes to validation when the ``j``-th
    draw of the coins' stream is below ``fraction``."""
    draws = _SelectionStreams(seed).coins().random(codes.max() + 1)
    return (draws < fraction)[codes]


def _straddling(codes, in_validation):
    """Number of persons with rows in both parts."""
    frame = pd.DataFrame({"person": codes, "validation": in_validation})
    return int((frame.groupby("person")["validation"].nunique() > 1).sum())


def _with_a_person(model, X, y, groups, k, right, first):
    """Person-level neighbours: the first 200 rows, and the same plus one new person of
    the ``k`` rows from ``first`` on, labelled as ``model`` predicts them (``right``)
    or at random. Returns the two row sets, their person codes and the second's labels."""
    base, added = np.arange(200), np.arange(first, first + k)
    both = np.r_[base, added]
    codes = check_groups(groups[base], len(base))
    codes_both = np.r_[codes, [codes.max() + 1] * k]
    y_both = y[both].copy()
    y_both[len(base):] = (model.predict(X[added]) if right
                          else np.random.default_rng(k).integers(0, 2, k))
    return base, both, codes, codes_both, y_both
