"""Memory a fit will need, checked from the shapes before anything is allocated."""

import os

_GIB = 2.0**30


def available_memory():
    """Bytes of memory available to new allocations (``MemAvailable`` on Linux)."""
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return 1024.0 * int(line.split()[1])
    except OSError:
        pass
    return float(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))


def check_allocation(nbytes, what):
    """Raise :class:`MemoryError` before the work when ``nbytes`` exceed what is free.

    Parameters
    ----------
    nbytes : float
        Bytes the allocation needs, from the shapes.
    what : str
        What needs them, for the message.

    Raises
    ------
    MemoryError
        With the need and the available memory; nothing has been fitted, and no
        privacy budget spent.
    """
    available = available_memory()
    if nbytes > available:
        raise MemoryError(f"{what} needs about {nbytes / _GIB:.1f} GiB, and "
                          f"{available / _GIB:.1f} GiB is available; nothing was fitted "
                          "and no privacy budget was spent.")
