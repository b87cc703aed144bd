"""Persons on row-partitioned dask data: ``fit(X, y, groups=...)`` out of core.

A person's rows may lie in several partitions. Everything a person-level fit needs
is reduced by person key on the dask graph, never by bringing rows to the driver:

* :func:`partitioned_person_codes` gives each row its person's code ``0 .. P - 1``,
  the rank of its label among the sorted distinct labels, exactly as
  :func:`~skdp.utils._groups.check_groups` does in memory: each partition finds its
  distinct labels, one task merges them (kept where it ran, on a worker), and each
  partition looks its labels up in the merged set. The driver receives two facts
  (whether a label is missing, and the number of persons ``P``).
* :func:`partitioned_person_weights` gives each row the weight ``min(1, M / k)`` of
  :func:`~skdp.utils._groups.person_row_weights` (``k`` its person's number of
  rows): each partition counts its persons' rows, one task adds the counts by person
  (kept on a worker), and each partition reads its rows' counts.
* :func:`co_partition_by_person` moves every person's rows into one partition (a
  shuffle: partition ``j`` receives the persons of codes ``[j P / m, (j + 1) P / m)``
  from every input partition, its rows sorted by person, each person's rows in their
  original order), so that the in-memory person-level code runs inside each
  partition on whole persons.

The number of persons and their sizes are private: the driver sees ``P`` and the
new partitions' sizes, which no release reads (a fit uses ``P`` only through its DP
count, the sizes only through the person-level bounds). Nothing here draws noise.
"""

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ..utils._groups import (MISMATCHED_GROUPS, MISSING_GROUP, UNORDERED_GROUPS, one_column,
                             person_weights_of_sizes)


def _as_groups_array(groups, row_chunks):
    """``groups`` as a 1-D dask array with the row chunks ``row_chunks`` of ``X`` (a
    column of labels is taken as one); refused (``ValueError``) when it cannot be one
    label per row of ``X``."""
    import dask.array as da

    if hasattr(groups, "to_dask_array"):              # dask Series
        groups = groups.to_dask_array(lengths=True)
    if not isinstance(groups, da.Array):              # in memory beside a dask X
        groups = one_column(np.asarray(groups, dtype=object))
        if len(groups) != sum(row_chunks):
            raise ValueError(MISMATCHED_GROUPS)
        return da.from_array(groups, chunks=(tuple(row_chunks),))
    groups = one_column(groups)
    if any(np.isnan(c) for c in groups.chunks[0]):
        raise ValueError("groups needs known chunk sizes (call compute_chunk_sizes(), or "
                         "to_dask_array(lengths=True) on a dask Series).")
    if groups.shape[0] != sum(row_chunks):
        raise ValueError(MISMATCHED_GROUPS)
    if tuple(groups.chunks[0]) != tuple(row_chunks):
        groups = groups.rechunk({0: tuple(row_chunks)})
    return groups


# Label kinds whose numpy order is the order of the same labels as Python objects (the
# in-memory codes' order): booleans, integers, floats and unicode strings (code points).
_NATIVE_KINDS = "biufU"


def _block_labels(groups):
    """A partition's person labels, and whether one is missing: in their own dtype
    when numpy sorts it as Python sorts the objects (ten times faster than objects),
    else as objects, as in memory."""
    labels = np.asarray(groups).ravel()
    if labels.dtype.kind not in _NATIVE_KINDS:
        labels = labels.astype(object)
    return labels, bool(pd.isna(labels).any())


def _sorted_distinct(labels):
    """The sorted distinct labels, or ``None`` when they cannot be ordered together."""
    try:
        return np.unique(labels)
    except TypeError:
        return None


def _distinct_labels(groups):
    """A partition's distinct labels (``None`` when one is missing or they cannot be
    ordered) and whether one is missing."""
    labels, missing = _block_labels(groups)
    return (None if missing else _sorted_distinct(labels)), missing


def _merge_labels(*parts):
    """The sorted distinct labels of every partition (``None`` when some cannot be
    ordered together), and whether one was missing."""
    missing = any(flag for _, flag in parts)
    if missing or any(labels is None for labels, _ in parts):
        return None, missing
    return _sorted_distinct(np.concatenate([labels for labels, _ in parts])), missing


def _facts(merged):
    """What the driver receives: whether a label is missing, whether the labels can
    be ordered, and ``P``."""
    labels, missing = merged
    return missing, labels is not None, 0 if labels is None else len(labels)


def _block_codes(groups, merged):
    """Each row's person code: its label's rank among the sorted distinct labels."""
    return np.searchsorted(merged[0], _block_labels(groups)[0]).astype(np.intp, copy=False)


def _from_blocks(blocks, chunks, dtype, width=None, meta=None):
    """A dask array of the delayed ``blocks`` with the row sizes ``chunks`` (and
    ``width`` columns)."""
    import dask.array as da

    parts = [da.from_delayed(block, shape=(size,) if width is None else (size, width),
                             dtype=dtype, meta=meta)
             for block, size in zip(blocks, chunks)]
    return da.concatenate(parts, axis=0)


class PartitionedPersons:
    """The persons of a row-partitioned fit (:func:`partitioned_person_codes`).

    Attributes
    ----------
    codes : dask.array.Array of shape (n_samples,)
        Each row's person code, with the row chunks of ``X``.
    n_persons : int
        ``P`` (private: only through a DP count or a person-level bound).
    """

    def __init__(self, codes, n_persons):
        self.codes, self.n_persons = codes, int(n_persons)


def partitioned_person_codes(groups, X):
    """Each row's person code ``0 .. P - 1`` over the partitions of a dask ``X``.

    The codes are those of :func:`~skdp.utils._groups.check_groups` on the whole
    ``groups`` (ranks among the sorted distinct labels), whatever the chunking. One
    pass over ``groups`` finds the distinct labels (merged in one task, kept on its
    worker); the codes are computed lazily, inside each partition.

    Parameters
    ----------
    groups : dask array, dask Series or array-like of shape (n_samples,)
        The person of each row.
    X : dask.array.Array of shape (n_samples, n_features)
        The rows (known row chunks).

    Returns
    -------
    persons : PartitionedPersons

    Raises
    ------
    ValueError
        ``groups`` is not one label per row of ``X``, holds a missing value, or mixes
        labels that cannot be ordered together (before any noise; only flags reach
        the driver, and no message states a length).

    Examples
    --------
    >>> import dask.array as da
    >>> import numpy as np
    >>> X = da.zeros((5, 2), chunks=(2, 2))
    >>> groups = da.from_array(np.array(["b", "a", "b", "c", "a"]), chunks=2)
    >>> persons = partitioned_person_codes(groups, X)
    >>> persons.n_persons, persons.codes.compute().tolist()
    (3, [1, 0, 1, 2, 0])
    >>> partitioned_person_weights(persons, 1.0).compute().tolist()
    [0.5, 0.5, 0.5, 1.0, 0.5]
    """
    import dask

    row_chunks = tuple(X.chunks[0])
    groups = _as_groups_array(groups, row_chunks)
    blocks = groups.to_delayed(optimize_graph=False).ravel()
    distinct = dask.delayed(_distinct_labels, pure=True)
    (merged,) = dask.persist(dask.delayed(_merge_labels, pure=True)(
        *[distinct(block) for block in blocks]))
    missing, ordered, n_persons = dask.compute(dask.delayed(_facts, pure=True)(merged))[0]
    if missing:
        raise ValueError(MISSING_GROUP)
    if not ordered:
        raise ValueError(UNORDERED_GROUPS)
    code = dask.delayed(_block_codes, pure=True)
    codes = _from_blocks([code(block, merged) for block in blocks], row_chunks, np.intp)
    return PartitionedPersons(codes, n_persons)


def _block_counts(codes):
    """A partition's persons and their numbers of rows in it."""
    return np.unique(codes, return_counts=True)


def _add_counts(n_persons, *parts):
    """Every person's number of rows: the partitions' counts added by person."""
    persons = np.concatenate([p for p, _ in parts])
    counts = np.concatenate([c for _, c in parts])
    return np.bincount(persons, weights=counts, minlength=n_persons).astype(np.intp)


def _block_weights(codes, sizes, max_rows_per_group):
    return person_weights_of_sizes(sizes[codes], max_rows_per_group)


def partitioned_person_weights(persons, max_rows_per_group):
    """Each row's weight ``min(1, M / k)``, ``k`` its person's number of rows, as
    :func:`~skdp.utils._groups.person_row_weights` in memory (the same values).

    Parameters
    ----------
    persons : PartitionedPersons
    max_rows_per_group : float
        ``M``, public.

    Returns
    -------
    weights : dask.array.Array of shape (n_samples,)
        Lazy, with the row chunks of the codes; the persons' sizes are added in one
        task (kept on its worker) and never reach the driver.
    """
    import dask

    blocks = persons.codes.to_delayed(optimize_graph=False).ravel()
    count = dask.delayed(_block_counts, pure=True)
    sizes = dask.delayed(_add_counts, pure=True)(persons.n_persons,
                                                 *[count(block) for block in blocks])
    weigh = dask.delayed(_block_weights, pure=True)
    return _from_blocks([weigh(block, sizes, float(max_rows_per_group)) for block in blocks],
                        persons.codes.chunks[0], np.float64)


def _take_rows(X, index):
    return X[index] if not sp.issparse(X) else sp.csr_matrix(X)[index]


def _split_by_person(X, y, codes, bounds):
    """A partition's rows cut into the persons of each range ``[bounds[j],
    bounds[j + 1])`` of codes: ``(X_j, y_j, codes_j)``, rows sorted by person (stable)."""
    order = np.argsort(codes, kind="stable")
    codes = codes[order]
    cuts = np.searchsorted(codes, bounds)
    X, y = _take_rows(X, order), np.asarray(y)[order]
    return [(X[a:b], y[a:b], codes[a:b]) for a, b in zip(cuts[:-1], cuts[1:])]


def _gather_persons(*pieces):
    """One new partition from its pieces of every input partition (in partition
    order): the rows sorted by person, each person's rows in their original order."""
    stack = sp.vstack if sp.issparse(pieces[0][0]) else np.concatenate
    X = stack([X for X, _, _ in pieces])
    y = np.concatenate([y for _, y, _ in pieces])
    codes = np.concatenate([c for _, _, c in pieces])
    order = np.argsort(codes, kind="stable")
    return _take_rows(X, order), y[order], codes[order]


def co_partition_by_person(X, y, persons):
    """``X``, ``y`` and the person codes with every person's rows in one partition.

    The persons are cut into ``m`` ranges of codes (``m`` the number of partitions of
    ``X``, at most ``P``), partition ``j`` holding the codes ``[floor(j P / m),
    floor((j + 1) P / m))``: each of them has rows (every code has), so no partition is
    empty. The new partitions are persisted (on the workers) and their sizes computed;
    the driver receives those sizes only.

    Parameters
    ----------
    X : dask.array.Array of shape (n_samples, n_features)
        One column chunk.
    y : dask.array.Array of shape (n_samples,)
        With the row chunks of ``X``.
    persons : PartitionedPersons

    Returns
    -------
    X, y, codes : dask.array.Array
        Co-partitioned by person; within a partition the rows are sorted by code,
        each person's rows in their order in the input.

    Examples
    --------
    >>> import dask.array as da
    >>> import numpy as np
    >>> X = da.from_array(np.arange(10.0).reshape(5, 2), chunks=(2, 2))
    >>> y = da.from_array(np.array([0, 1, 0, 1, 1]), chunks=2)
    >>> groups = da.from_array(np.array([1, 0, 1, 2, 0]), chunks=2)
    >>> Xp, yp, codes = co_partition_by_person(X, y, partitioned_person_codes(groups, X))
    >>> codes.chunks[0], codes.compute().tolist()
    ((2, 2, 1), [0, 0, 1, 1, 2])
    >>> Xp[:, 0].compute().tolist()
    [2.0, 8.0, 0.0, 4.0, 6.0]
    """
    import dask

    n_out = min(len(X.chunks[0]), persons.n_persons)
    bounds = (np.arange(n_out + 1) * persons.n_persons) // n_out
    split = dask.delayed(_split_by_person, pure=True, nout=n_out)
    pieces = [split(xb, yb, cb, bounds) for xb, yb, cb in zip(
        *(a.to_delayed(optimize_graph=False).ravel()
          for a in (X, y, persons.codes)))]
    gather = dask.delayed(_gather_persons, pure=True)
    blocks = dask.persist(*[gather(*[piece[j] for piece in pieces]) for j in range(n_out)])
    sizes = dask.compute(*[dask.delayed(len)(block[2]) for block in blocks])
    return (_from_blocks([b[0] for b in blocks], sizes, X.dtype, X.shape[1], X._meta),
            _from_blocks([b[1] for b in blocks], sizes, y.dtype, meta=y._meta),
            _from_blocks([b[2] for b in blocks], sizes, np.intp))
