"""Peak allocation of a call, as the memory tests measure it."""

import tracemalloc


def peak_allocation(call):
    """Bytes at the peak of numpy's (traced) allocations while ``call()`` runs."""
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
