"""Figures for people: the numbers that statements and reports print.

A report's numeric fields stay floats (``0.1 + 0.2`` is ``0.30000000000000004``);
its text shows each figure to a few significant digits, and a privacy guarantee
rounded up, so that a statement never reads below what was certified.
"""

from decimal import ROUND_CEILING, ROUND_HALF_EVEN, Decimal

import numpy as np

# float noise: digits beyond the 12th significant one are dropped before rounding up,
# so that 0.1 + 0.2 reads 0.3 and 1.9999999999988671 reads 2
_CLEAN_DIGITS = 12


def format_figure(value, digits=4, *, bound=False):
    """A number as a person reads it: ``digits`` significant digits, no float noise.

    Parameters
    ----------
    value : float
        The figure.
    digits : int, default=4
        Significant digits shown.
    bound : bool, default=False
        Round up (towards +inf) instead of to the nearest, after dropping float noise
        beyond the 12th significant digit: for an upper bound such as a privacy loss,
        which then never reads below the certified figure.

    Returns
    -------
    text : str
        Positional notation from 1e-4 to 1e15 (``"0.3"``, ``"12350"``), scientific
        outside (``"1e-05"``); ``"inf"``, ``"nan"`` and ``"0"`` as such.

    Examples
    --------
    >>> from skdp.utils import format_figure
    >>> format_figure(0.1 + 0.2), format_figure(1.9999999999988671), format_figure(2 / 3)
    ('0.3', '2', '0.6667')
    >>> format_figure(0.30004, bound=True), format_figure(1e-5), format_figure(np.inf)
    ('0.3001', '1e-05', 'inf')
    """
    value = float(value)
    if value == 0.0:
        return "0"
    if not np.isfinite(value):
        return f"{value:g}"
    exact = Decimal(f"{value:.{_CLEAN_DIGITS}g}" if bound else repr(value))
    quantum = Decimal(1).scaleb(exact.adjusted() - digits + 1)
    rounded = exact.quantize(quantum, rounding=ROUND_CEILING if bound else ROUND_HALF_EVEN)
    if 1e-4 <= abs(rounded) < 1e15:
        return format(rounded.normalize(), "f")
    return f"{float(rounded):.{digits}g}"


def format_guarantee(epsilon, delta=0.0):
    """A privacy guarantee as a statement prints it: ``"eps"`` for pure DP, else
    ``"(eps, delta)"``, each rounded up (:func:`format_figure` with ``bound=True``;
    delta to 3 significant digits).

    Parameters
    ----------
    epsilon : float
        The guarantee's epsilon.
    delta : float, default=0.0
        Its delta; 0 means pure epsilon-DP.

    Returns
    -------
    text : str

    Examples
    --------
    >>> from skdp.utils import format_guarantee
    >>> format_guarantee(0.1 + 0.2), format_guarantee(1.9999999999988671, 1e-5)
    ('0.3', '(2, 1e-05)')
    """
    text = format_figure(epsilon, bound=True)
    return f"({text}, {format_figure(delta, 3, bound=True)})" if delta else text
