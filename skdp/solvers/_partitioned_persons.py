"""Persons on row-partitioned dask data: ``fit(X, y, groups=...)`` out of core.

A person's rows may lie in several partitions. Everything a person-level fit needs
is reduced by person key on the dask graph, never by bringing rows to the driver:

* :func:`partitioned_person_codes` gives each row its person's code ``0 .. P - 1``,
  the rank of its label among the sorted distinct labels, exactly as
  :func:`~skdp.utils._groups.check_groups` does in memory: each partition finds its
  distinct labels, one task merges them (kept where it ran, on a worker), and each
  partition looks its labels up in the merged set. The driver receives two facts
  (whether a label is missing, and the number of persons ``P``).
* :func:`partitioned_person_sizes` gives each row its person's number of rows ``k``:
  each partition counts its persons' rows, one task adds the counts by person (kept
  on a worker), and each partition reads its rows' counts;
  :func:`partitioned_person_weights` turns them into the weights ``min(1, M / k)`` of
  :func:`~skdp.utils._groups.person_row_weights`.
* :func:`reduce_by_person` adds per-person sums over the partitions without moving
  rows (DP-SGD's clipped person gradients): each partition sums its rows by person
  and finishes (clips and adds) the persons whose rows are all in it; the partial
  sums of the persons spread over partitions are added by person up a tree of tasks
  on the workers, each person finished at the first node that has seen all of its
  rows. ``X`` is read in place, never copied or moved.

The number of persons and their sizes are private: the driver sees ``P`` and the
number of persons in a sum, which no release reads (a fit uses ``P`` only through
its DP count, the sizes only through the person-level bounds). Nothing here draws
noise.
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


def _block_sizes(codes, sizes):
    return sizes[codes]


def partitioned_person_sizes(persons):
    """Each row's person's number of rows ``k``, as
    :func:`~skdp.utils._groups.rows_per_person` in memory (private: only inside a
    person-level bound).

    Parameters
    ----------
    persons : PartitionedPersons

    Returns
    -------
    sizes : dask.array.Array of shape (n_samples,)
        Lazy, with the row chunks of the codes; the persons' sizes are added in one
        task (kept on its worker) and never reach the driver.
    """
    import dask

    blocks = persons.codes.to_delayed(optimize_graph=False).ravel()
    count = dask.delayed(_block_counts, pure=True)
    sizes = dask.delayed(_add_counts, pure=True)(persons.n_persons,
                                                 *[count(block) for block in blocks])
    look_up = dask.delayed(_block_sizes, pure=True)
    return _from_blocks([look_up(block, sizes) for block in blocks],
                        persons.codes.chunks[0], np.intp)


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
        Lazy, with the row chunks of the codes (:func:`partitioned_person_sizes`).
    """
    return partitioned_person_sizes(persons).map_blocks(
        person_weights_of_sizes, float(max_rows_per_group), dtype=np.float64)


# -- sums by person over the partitions ----------------------------------------------------

# The fan-in of the reduction tree of :func:`reduce_by_person` (public, data-independent).
SPLIT_EVERY = 8


class PersonSums:
    """Partial sums by person: a partition's, or a node's of :func:`reduce_by_person`.

    Attributes
    ----------
    total : ndarray
        The sum of ``finish`` over the persons whose rows were all seen (finished).
    n_finished : int
        Their number.
    codes : ndarray of shape (m,)
        The open persons (some of their rows not yet seen), increasing.
    seen, sizes : ndarray of shape (m,)
        Their numbers of rows seen so far, and of rows in all.
    sums : ndarray or CSR matrix of shape (m, w)
        Their partial sums over the rows seen.
    """

    def __init__(self, total, n_finished, codes, seen, sizes, sums):
        self.total, self.n_finished = total, int(n_finished)
        self.codes, self.seen, self.sizes, self.sums = codes, seen, sizes, sums


def _finished(codes, seen, sizes, sums, finish, total=None, n_finished=0):
    """:class:`PersonSums` with the persons whose rows were all seen finished: their
    sums go through ``finish(sums, sizes)`` (one array, the persons' clipped total)."""
    done = seen == sizes
    part = finish(sums[np.flatnonzero(done)], sizes[done])
    total = part if total is None else total + part
    keep = np.flatnonzero(~done)
    return PersonSums(total, n_finished + int(done.sum()), codes[keep], seen[keep],
                      sizes[keep], sums[keep])


def partition_person_sums(persons, sizes, codes, sums, finish):
    """A partition's :class:`PersonSums` from a kernel's partial sums by person.

    Parameters
    ----------
    persons, sizes : ndarray of shape (n_rows,)
        Each row's person code and its person's number of rows in all.
    codes : ndarray of shape (m,)
        The persons the kernel summed (increasing), each over all of its rows in the
        partition.
    sums : ndarray or CSR matrix of shape (m, w)
        Their sums.
    finish : callable
        ``finish(sums, sizes)``: the total of whole persons' sums (their clipping).

    Returns
    -------
    part : PersonSums
        The persons with every row in this partition finished here; the others open.
    """
    present, first, counts = np.unique(persons, return_index=True, return_counts=True)
    at = np.searchsorted(present, codes)
    return _finished(codes, counts[at], sizes[first[at]], sums, finish)


def _merge(finish, *parts):
    """One node of the reduction: the parts' totals added in order, their open
    persons' sums added by person (a sparse indicator product), and the persons now
    seen whole finished."""
    total = parts[0].total
    for part in parts[1:]:
        total = total + part.total
    n_finished = sum(part.n_finished for part in parts)
    codes = np.concatenate([part.codes for part in parts])
    if codes.size == 0:   # every person finished below: the first part's empty sums
        first = parts[0]
        return PersonSums(total, n_finished, first.codes, first.seen, first.sizes,
                          first.sums)
    stack = sp.vstack if sp.issparse(parts[0].sums) else np.vstack
    sums = stack([part.sums for part in parts])
    merged, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
    inverse = inverse.ravel()
    indicator = sp.csr_matrix((np.ones(codes.size), (inverse, np.arange(codes.size))),
                              shape=(merged.size, codes.size))
    seen = np.bincount(inverse, weights=np.concatenate([p.seen for p in parts]),
                       minlength=merged.size).astype(np.intp)
    sizes = np.concatenate([part.sizes for part in parts])[first]
    summed = indicator @ sums
    return _finished(merged, seen, sizes, sp.csr_matrix(summed) if sp.issparse(sums)
                     else np.asarray(summed), finish, total, n_finished)


def reduce_by_person(parts, finish, split_every=SPLIT_EVERY):
    """The total of ``finish`` over every person, from the partitions'
    :class:`PersonSums` (delayed), by a tree of ``split_every`` parts a node.

    A person whose rows lie in one partition is finished there; the partial sums of
    a person spread over partitions travel up the tree (on the workers) until a node
    has seen all of the person's rows. The driver receives the root's total and the
    number of persons in it.

    Parameters
    ----------
    parts : list of dask.delayed.Delayed
        Each partition's :class:`PersonSums` (:func:`partition_person_sums`), in
        partition order.
    finish : callable
        ``finish(sums, sizes)`` (picklable).
    split_every : int, default=SPLIT_EVERY

    Returns
    -------
    total : ndarray
    n_persons : int
        The number of persons summed (private: for the run's record only).

    Examples
    --------
    >>> import dask
    >>> import numpy as np
    >>> def total(sums, sizes):        # each person's sum capped at 2, then added
    ...     return np.array([np.minimum(sums[:, 0], 2.0).sum()])
    >>> persons = [np.array([0, 0, 1]), np.array([1, 2])]   # person 1 in both parts
    >>> sizes = [np.array([2, 2, 2]), np.array([2, 1])]
    >>> parts = [dask.delayed(partition_person_sums)(
    ...     p, k, np.unique(p), np.bincount(p)[np.unique(p), None] * 1.5, total)
    ...     for p, k in zip(persons, sizes)]
    >>> reduce_by_person(parts, total)   # min(3, 2) + min(3, 2) + min(1.5, 2)
    (array([5.5]), 3)
    """
    import dask

    merge = dask.delayed(_merge, pure=True)
    while len(parts) > 1:
        parts = [merge(finish, *parts[i:i + split_every])
                 for i in range(0, len(parts), split_every)]
    root = dask.compute(dask.delayed(_root, pure=True)(parts[0]))[0]
    return root


def _root(part):
    """The driver's share of the root: the total and the number of persons."""
    if part.codes.size:
        raise RuntimeError("The reduction by person ended with a person whose rows were "
                           "not all summed.")
    return part.total, part.n_finished
