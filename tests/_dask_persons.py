"""In-memory rows with persons cut into dask partitions, for the person-level dask
tests."""

import numpy as np


def dask_persons(X, y, groups, chunks):
    """``X``, ``y`` and ``groups`` as dask arrays cut into the same row chunks."""
    import dask.array as da

    Xd = da.from_array(X, chunks=(chunks, -1))
    return (Xd, da.from_array(y, chunks=(Xd.chunks[0],)),
            da.from_array(groups, chunks=(Xd.chunks[0],)))


def spanning_persons(groups, chunks):
    """How many persons have rows in more than one partition."""
    blocks = np.repeat(np.arange(len(chunks)), chunks)
    return sum(len(np.unique(blocks[groups == g])) > 1 for g in np.unique(groups))
