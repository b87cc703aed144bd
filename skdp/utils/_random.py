"""Conversion of ``random_state`` into one :class:`numpy.random.Generator`."""

import numbers

import numpy as np


def check_rng(random_state):
    """Return a :class:`numpy.random.Generator` built from ``random_state``.

    Parameters
    ----------
    random_state : None, int, numpy.random.RandomState or numpy.random.Generator
        ``None`` draws fresh entropy from the operating system, so the global
        ``np.random.seed`` never freezes the privacy noise. A ``Generator`` is
        used as is (its state advances), an int seeds a new one, and a
        ``RandomState`` seeds a new one from one of its draws.

    Returns
    -------
    rng : numpy.random.Generator
    """
    if random_state is None:
        return np.random.default_rng()
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(np.iinfo(np.int32).max))
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        return np.random.default_rng(int(random_state))
    raise ValueError(
        f"random_state={random_state!r} cannot be used to seed a numpy Generator; "
        "pass None, an int, a numpy RandomState or a numpy Generator."
    )
