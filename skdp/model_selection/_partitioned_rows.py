"""The composers' private rows on a dask array (with persons): split and read on the graph.

:class:`~skdp.EpsilonForUtility` and the private searches split their rows by public
coins into a part the secret trials are fitted on and a part they are scored on, and
read the scored part only through sums (a test's or a trial's sum of utilities, the
label counts). On a dask ``X``, ``y`` (and ``groups``) every step runs on the dask
graph, and no row reaches the driver:

* :func:`check_partitioned_rows`: the input checks of a dask fit, one pass over the
  partitions (:func:`~skdp.solvers._partitioned.check_partitioned_input`), and the
  persons by a person-keyed reduction
  (:func:`~skdp.solvers._partitioned_persons.partitioned_person_codes`), before any
  noise; a Pipeline is taken when its preprocessing maps each partition lazily
  (:data:`LAZY_STEPS`: declared bounds, fitted on the shape alone) and refused,
  before any partition is computed, otherwise;
* :func:`coin_parts`: unit ``j``'s coin (a person's code, or without ``groups`` a row's
  index) is the ``j``-th draw of the public stream, as
  :func:`~._private_selection.coin_split` and
  :func:`~._private_selection.person_coin_split` draw it in memory, so both parts are
  the in-memory ones for any chunking; the coins are drawn in one task on a worker,
  each partition reads its rows' coins, and a person's rows all go to one part;
* :func:`partitioned_sum` and :func:`partitioned_histogram`: the sums, partition by
  partition, only the totals reaching the driver.

The driver sees the parts' partition sizes (the dask arrays need them); no release
reads them. Nothing here draws noise.
"""

from dataclasses import dataclass

import numpy as np
from sklearn.base import is_classifier
from sklearn.pipeline import Pipeline

from ..linear_model._base import record_features
from ..preprocessing import BoundedScaler, Clipper
from ..solvers._partitioned import check_partitioned_input, is_dask_collection
from ..solvers._partitioned_persons import (_from_blocks, partitioned_person_codes,
                                            partitioned_person_weights)
from ._gate import check_public_steps, private_step


def is_partitioned(*values):
    """Whether any of ``values`` is a dask collection."""
    return any(is_dask_collection(v) for v in values)


@dataclass
class PartitionedRows:
    """Checked rows of a composer on dask.

    Attributes
    ----------
    X, y : dask.array.Array
        Known row chunks, ``X`` one column chunk.
    classes : ndarray or None
        The label set (declared, or the union over the partitions); ``None`` for a
        regressor.
    persons : PartitionedPersons or None
        The persons of ``groups`` (private: their number and sizes).
    """

    X: object
    y: object
    classes: object
    persons: object = None

    @property
    def codes(self):
        """Each row's unit: its person's code, or (without groups) its index."""
        import dask.array as da

        if self.persons is not None:
            return self.persons.codes
        return da.arange(self.X.shape[0], chunks=(self.X.chunks[0],))

    @property
    def n_units(self):
        return self.X.shape[0] if self.persons is None else self.persons.n_persons

    def shares(self):
        """Each row's share ``1 / k`` of its person (``None`` without groups), lazily:
        the person-keyed sizes stay on a worker."""
        if self.persons is None:
            return None
        return partitioned_person_weights(self.persons, 1.0)


LAZY_STEPS = (BoundedScaler, Clipper)
"""The preprocessing a composer takes on dask, by exact type: public (declared bounds),
fitted on the shape of a dask array alone and mapped over its partitions lazily."""


def check_partitioned_steps(estimator, who):
    """Refuse, before any partition is computed, a Pipeline whose preprocessing
    would fit on the private rows or bring them into memory.

    Every step before the private one must be public
    (:func:`~._gate.check_public_steps`: it learns nothing from the rows) and one of
    :data:`LAZY_STEPS` (or ``"passthrough"``, ``None``): another public step (an
    encoder, a ``FunctionTransformer``) would compute the dask array in memory.

    Parameters
    ----------
    estimator : estimator or Pipeline
    who : str
        The composer's name, for messages.

    Raises
    ------
    ValueError
        Naming the step and what to do instead.
    """
    check_public_steps(estimator)
    if not isinstance(estimator, Pipeline):
        return
    for name, step in estimator.steps[:-1]:
        if step is None or (type(step) is str and step == "passthrough"):
            continue
        if type(step) not in LAZY_STEPS:
            raise ValueError(
                f"{who} on a dask array: Pipeline step {name!r} ({type(step).__name__}) "
                "is public but would transform the rows in memory. On dask a Pipeline's "
                "preprocessing may be skdp.preprocessing.BoundedScaler or Clipper (each "
                "partition transformed lazily); transform the dask array yourself for "
                "other public steps, then pass the Pipeline without them. Nothing was "
                "fitted.")


def check_partitioned_rows(meta, estimator, X, y, groups, who):
    """Every input check of a composer's dask fit, before any noise.

    Parameters
    ----------
    meta : estimator
        The composer (records ``n_features_in_`` and ``feature_names_in_``).
    estimator : estimator or Pipeline
        The private estimator, or a Pipeline of :data:`LAZY_STEPS` ending in one
        (:func:`check_partitioned_steps`, before any partition is computed).
    X, y : dask collections (``y`` may be in memory)
    groups : dask array, dask Series, array-like or None
    who : str
        The composer's name, for messages.

    Returns
    -------
    rows : PartitionedRows
    """
    check_partitioned_steps(estimator, who)
    classifier = is_classifier(estimator)
    final, _ = private_step(estimator)   # a Pipeline's private step declares the classes
    declared = final.get_params().get("classes") if classifier else None
    X, y, classes, _, names = check_partitioned_input(X, y, declared,
                                                      regression=not classifier)
    record_features(meta, X, names)
    persons = None if groups is None else partitioned_person_codes(groups, X)
    return PartitionedRows(X, y, classes, persons)


def _block_coins(coins, codes):
    return coins[codes]


def _select(X, mask):
    return X[np.asarray(mask, dtype=bool)]


def _count(mask):
    return int(np.count_nonzero(mask))


def _selected(blocks, masks, sizes, like):
    """The dask array of ``blocks`` cut to their ``masks`` (``sizes`` rows each; empty
    partitions dropped), with the dtype and columns of ``like``."""
    import dask

    import dask.array as da

    kept = [(dask.delayed(_select, pure=True)(b, m), s)
            for b, m, s in zip(blocks, masks, sizes) if s]
    width = None if like.ndim == 1 else like.shape[1]
    if not kept:  # no row on this side
        return da.from_array(np.empty((0,) + like.shape[1:], dtype=like.dtype))
    return _from_blocks([b for b, _ in kept], [s for _, s in kept], like.dtype, width,
                        like._meta)


@dataclass
class Part:
    """One side of the split: rows, labels, the persons' codes (``groups`` of its fits)
    and each row's share ``1 / k`` (``None`` without groups)."""

    X: object
    y: object
    groups: object
    shares: object


def _part(rows, shares, masks, sizes):
    """The rows whose ``masks`` are set, as a :class:`Part`."""
    def cut(values):
        blocks = values.to_delayed(optimize_graph=False).ravel()
        return _selected(blocks, masks, sizes, values)

    persons = rows.persons is not None
    return Part(cut(rows.X), cut(rows.y), cut(rows.codes) if persons else None,
                cut(shares) if persons else None)


def coin_parts(rows, validation_fraction, public_rng):
    """The training and validation parts of ``rows`` by one public coin per unit.

    Unit ``j`` (person code ``j``, or row ``j`` without groups) goes to the validation
    part when the ``j``-th draw of ``public_rng`` is below ``validation_fraction``:
    the in-memory split, whatever the chunking. The coins are drawn in one task (on a
    worker); the parts' partition sizes are computed in one pass over the codes.

    Parameters
    ----------
    rows : PartitionedRows
    validation_fraction : float
    public_rng : numpy.random.Generator
        A public stream (never one that draws privacy noise); it is copied into the
        task, not advanced here.

    Returns
    -------
    train, validation : Part

    Examples
    --------
    >>> import dask.array as da
    >>> import numpy as np
    >>> from skdp import ObjPertLogisticRegression
    >>> X = da.from_array(np.arange(12.0).reshape(6, 2) / 20, chunks=(4, 2))
    >>> y = da.from_array(np.array([0, 1, 0, 1, 0, 1]), chunks=4)
    >>> groups = da.from_array(np.array([5, 5, 7, 8, 7, 9]), chunks=4)
    >>> rows = check_partitioned_rows(ObjPertLogisticRegression(),
    ...                               ObjPertLogisticRegression(), X, y, groups, "doc")
    >>> train, validation = coin_parts(rows, 0.5, np.random.default_rng(0))
    >>> train.groups.compute().tolist(), validation.groups.compute().tolist()
    ([0, 0], [1, 2, 1, 3])
    >>> validation.shares.compute().tolist()
    [0.5, 1.0, 0.5, 1.0]
    """
    import dask

    from ._private_selection import coin_split

    # a key of its own (never a cached draw of another fit's stream)
    coins = dask.delayed(coin_split, pure=False)(rows.n_units, validation_fraction,
                                                 public_rng)
    codes = rows.codes.to_delayed(optimize_graph=False).ravel()
    (coins,) = dask.persist(coins)
    masks = [dask.delayed(_block_coins, pure=True)(coins, block) for block in codes]
    inverse = [dask.delayed(np.logical_not, pure=True)(mask) for mask in masks]
    counts = dask.compute(*[dask.delayed(_count, pure=True)(m) for m in masks + inverse])
    validation_sizes, train_sizes = counts[:len(masks)], counts[len(masks):]
    shares = rows.shares()
    return (_part(rows, shares, inverse, train_sizes),
            _part(rows, shares, masks, validation_sizes))


def partitioned_parts(rows, validation_fraction, public_rng):
    """``(fitted part, scored part)``: :func:`coin_parts`, or every row for both when
    ``validation_fraction`` is None."""
    if validation_fraction is not None:
        return coin_parts(rows, validation_fraction, public_rng)
    persons = rows.persons is not None
    every = Part(rows.X, rows.y, rows.codes if persons else None,
                 rows.shares() if persons else None)
    return every, every


def _block_sum(values, offset, X, y, weights):
    """A partition's ``sum_i w_i (values(X, y)_i - offset)`` (``w`` its shares, or 1)."""
    deviations = np.asarray(values(X, y), dtype=float) - offset
    return float(np.sum(deviations if weights is None else weights * deviations))


def partitioned_sum(values, X, y, shares=None, offset=0.0):
    """``sum_i w_i (values(X_b, y_b)_i - offset)`` over the partitions ``b`` of a dask
    ``X``, ``y`` (``w`` the ``shares``, or 1): one pass; ``values`` maps a partition's
    rows and labels to one value per row (pickled into each task)."""
    import dask

    blocks = [a.to_delayed(optimize_graph=False).ravel() for a in (X, y)]
    weights = (shares.to_delayed(optimize_graph=False).ravel() if shares is not None
               else [None] * len(blocks[0]))
    task = dask.delayed(_block_sum, pure=True)
    return float(sum(dask.compute(*[task(values, offset, xb, yb, wb)
                                    for xb, yb, wb in zip(*blocks, weights)])))


def _block_histogram(y, weights, classes):
    y = np.asarray(y)
    weights = np.ones(len(y)) if weights is None else np.asarray(weights)
    if classes is None:
        return np.array([np.sum(weights)])
    return np.array([np.sum(weights[y == c]) for c in classes], dtype=float)


def partitioned_histogram(y, classes, shares=None):
    """The label counts of a dask ``y`` (its size for a regressor, ``classes`` None),
    each row counted by its share (or 1), as
    :func:`~._selection_tests._validation_histogram` in memory: one pass."""
    import dask

    weights = (shares.to_delayed(optimize_graph=False).ravel() if shares is not None
               else [None] * len(y.chunks[0]))
    task = dask.delayed(_block_histogram, pure=True)
    parts = dask.compute(*[task(yb, wb, classes) for yb, wb in
                           zip(y.to_delayed(optimize_graph=False).ravel(), weights)])
    return np.sum(parts, axis=0) if parts else np.zeros(1 if classes is None
                                                        else len(classes))
