"""Double-double arithmetic on float64 arrays, vectorised.

A double-double number is the unevaluated sum ``hi + lo`` of two float64 values with
``|lo| <= ulp(hi) / 2``, about 106 significant bits; here it is a pair ``(hi, lo)`` of
arrays of one shape. The error-free transformations (Knuth's two-sum, Dekker's product
with Veltkamp's splitting) return a rounded result together with its exact rounding
error; the operations built on them have relative error bounds in units of ``U**2``
(``U = 2**-53``, the unit roundoff of float64), from Joldes, Muller & Popescu, "Tight and
rigorous error bounds for basic building blocks of double-word arithmetic", ACM TOMS
44 (2017): :data:`ADD_ERROR`, :data:`MUL_ERROR`, :data:`DIV_ERROR` (each rounded up,
with room for the third-order terms), and :data:`EXP_ERROR` derived in :func:`exp`.

:func:`group_sums` sums the groups of a vector exactly (Rump, Ogita & Oishi's
extraction onto a grid on which every partial sum is exact), so that any plain
summation (numpy's along an axis, ``np.add.reduceat``, ``np.bincount``) can serve.

Valid without overflow or underflow: the splitting overflows above about ``1e300``, and
products and results below about ``1e-290`` (:data:`TINY`) lose their relative accuracy,
for an absolute error below ``1e-300`` that only the losses' bounds count (inputs that
small are out of scope).
"""

from fractions import Fraction
from math import factorial

import numpy as np

U = 2.0**-53
"""The unit roundoff of float64."""
ADD_ERROR = 4.0
"""Relative error of :func:`add`, in units of ``U**2`` (3 U^2 + 13 U^3: JMP17 Alg. 6)."""
MUL_ERROR = 8.0
"""Relative error of :func:`mul` and :func:`mul_double`, in units of ``U**2`` (7 U^2:
JMP17 Alg. 10; 1.5 U^2 + 4 U^3 for a float64 factor, Alg. 7)."""
DIV_ERROR = 16.0
"""Relative error of :func:`div`, in units of ``U**2`` (15 U^2 + 56 U^3: JMP17 Alg. 15)."""
EXP_ERROR = 4096.0
"""Relative error of :func:`exp` where its value is above :data:`TINY`, in units of
``U**2`` (see there)."""
TINY = 1e-290
"""Below this, results lose their relative accuracy to underflow; their absolute error
stays below ``1e-300``, which the bounds count as :data:`TINY` per value."""

_SPLITTER = 2.0**27 + 1.0


def as_pair(value):
    """A float64 number or array as a double-double pair (exact).

    Parameters
    ----------
    value : float or ndarray

    Returns
    -------
    pair : tuple of ndarray
    """
    value = np.asarray(value, dtype=float)
    return value, np.zeros_like(value)


def _pair_constant(fraction):
    """The double-double nearest a rational constant."""
    hi = float(fraction)
    return hi, float(fraction - Fraction(hi))


# ln 2 to 106 bits (its error, below 6e-34, is in the bound of exp)
_LN2 = (0.6931471805599453, 2.3190468138462996e-17)
# 1 / j! for the Taylor series of expm1 (j = 1 .. _TAYLOR_TERMS)
_TAYLOR_TERMS = 10
_INVERSE_FACTORIALS = [_pair_constant(Fraction(1, factorial(j)))
                       for j in range(_TAYLOR_TERMS + 1)]
# the reduced argument is divided by 2**_HALVINGS before the series
_HALVINGS = 8


def two_sum(a, b):
    """``s = fl(a + b)`` and its exact error ``e = a + b - s`` (Knuth).

    Parameters
    ----------
    a, b : ndarray or float

    Returns
    -------
    s, e : ndarray
    """
    s = a + b
    b_virtual = s - a
    return s, (a - (s - b_virtual)) + (b - b_virtual)


def fast_two_sum(a, b):
    """:func:`two_sum` for ``|a| >= |b|`` (or ``a == 0``), in three operations (Dekker).

    Parameters
    ----------
    a, b : ndarray or float

    Returns
    -------
    s, e : ndarray
    """
    s = a + b
    return s, b - (s - a)


def split(a):
    """Veltkamp's splitting ``a = hi + lo``, each part of at most 26 significant bits.

    Parameters
    ----------
    a : ndarray or float

    Returns
    -------
    hi, lo : ndarray
    """
    c = _SPLITTER * a
    hi = c - (c - a)
    return hi, a - hi


def two_product(a, b, b_parts=None):
    """``p = fl(a b)`` and its exact error ``e = a b - p`` (Dekker).

    Parameters
    ----------
    a, b : ndarray or float
        Broadcastable factors.
    b_parts : tuple of ndarray, default=None
        ``split(b)``, when ``b`` is reused across calls.

    Returns
    -------
    p, e : ndarray
    """
    p = a * b
    a_hi, a_lo = split(a)
    b_hi, b_lo = split(b) if b_parts is None else b_parts
    return p, ((a_hi * b_hi - p) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo


def add(x, y):
    """Sum of two double-doubles, relative error at most :data:`ADD_ERROR` ``U**2``.

    Parameters
    ----------
    x, y : tuple of ndarray
        ``(hi, lo)`` pairs.

    Returns
    -------
    sum : tuple of ndarray
    """
    s, e = two_sum(x[0], y[0])
    t, f = two_sum(x[1], y[1])
    s, e = fast_two_sum(s, e + t)
    return fast_two_sum(s, e + f)


def add_double(x, b):
    """``x + b`` for a double-double ``x`` and a float64 ``b`` (as :func:`add`).

    Parameters
    ----------
    x : tuple of ndarray
    b : ndarray or float

    Returns
    -------
    sum : tuple of ndarray
    """
    s, e = two_sum(x[0], b)
    return fast_two_sum(s, e + x[1])


def negative(x):
    """``-x`` (exact).

    Parameters
    ----------
    x : tuple of ndarray

    Returns
    -------
    negative : tuple of ndarray
    """
    return -x[0], -x[1]


def mul(x, y):
    """Product of two double-doubles, relative error at most :data:`MUL_ERROR` ``U**2``.

    Parameters
    ----------
    x, y : tuple of ndarray

    Returns
    -------
    product : tuple of ndarray
    """
    p, e = two_product(x[0], y[0])
    return fast_two_sum(p, e + (x[0] * y[1] + x[1] * y[0]))


def mul_double(x, b):
    """``x b`` for a double-double ``x`` and a float64 ``b`` (JMP17 Alg. 7; within
    :data:`MUL_ERROR` ``U**2``).

    Parameters
    ----------
    x : tuple of ndarray
    b : ndarray or float

    Returns
    -------
    product : tuple of ndarray
    """
    p, e = two_product(x[0], b)
    hi, lo = fast_two_sum(p, x[1] * b)
    return fast_two_sum(hi, lo + e)


def div(x, y):
    """Quotient ``x / y`` of double-doubles, relative error at most :data:`DIV_ERROR`
    ``U**2`` (``y`` nonzero).

    Parameters
    ----------
    x, y : tuple of ndarray

    Returns
    -------
    quotient : tuple of ndarray
    """
    q = x[0] / y[0]
    r = mul_double(y, q)
    correction = ((x[0] - r[0]) + (x[1] - r[1])) / y[0]
    return fast_two_sum(q, correction)


def exp(x):
    """``exp(x)`` of a double-double, relative error at most :data:`EXP_ERROR` ``U**2``
    where the value is above :data:`TINY` (below it, an absolute error under ``1e-300``;
    ``x`` above 709.7 overflows).

    ``x = k ln 2 + r`` with ``|r| <= ln(2) / 2``; ``expm1(r / 256)`` by its Taylor series
    to the 10th power (the next term is below ``1e-38``), then eight doublings of the
    argument by ``expm1(2 a) = expm1(a) (2 + expm1(a))``, which keep the relative error
    of ``expm1`` (each multiplies it by at most ``1 + expm1(a) / 2`` and adds two
    operations' errors), and ``exp(x) = 2^k (1 + expm1(r))``. The error is at most
    about ``(1.7e3 + 3e2) U**2``: ``|k| <= 1076`` times the error of ``ln 2`` (below
    ``6e-34``) and of the product (``k ln 2`` to ``1.5 U**2``) in ``r``, then about 110
    ``U**2`` for the series and 20 per doubling, amplified at most 1.5-fold;
    :data:`EXP_ERROR` rounds it up twofold (measured against 80-digit decimals: at most
    665 ``U**2`` on ``[-660, 705]``).

    Parameters
    ----------
    x : tuple of ndarray

    Returns
    -------
    value : tuple of ndarray
    """
    k = np.rint(x[0] / _LN2[0])
    reduced = add(x, negative(mul_double(_LN2, k)))
    scaled = (np.ldexp(reduced[0], -_HALVINGS), np.ldexp(reduced[1], -_HALVINGS))
    series = _INVERSE_FACTORIALS[_TAYLOR_TERMS]
    for j in range(_TAYLOR_TERMS - 1, 0, -1):
        series = add(mul(series, scaled), _INVERSE_FACTORIALS[j])
    expm1 = mul(series, scaled)
    for _ in range(_HALVINGS):
        expm1 = mul(expm1, add_double(expm1, 2.0))
    value = add_double(expm1, 1.0)
    exponent = k.astype(np.int64)
    return np.ldexp(value[0], exponent), np.ldexp(value[1], exponent)


def power_of_two_above(values):
    """The least power of two strictly above each value (zero for zero).

    Parameters
    ----------
    values : ndarray
        Non-negative.

    Returns
    -------
    powers : ndarray
    """
    _, exponent = np.frexp(values)
    return np.where(values > 0, np.ldexp(1.0, exponent), 0.0)


def _extract(values, grid):
    """Rump-Ogita-Oishi's ExtractVector: ``values = high + low`` exactly, ``high`` a
    multiple of ``U grid`` with ``|high| <= 2^-M grid`` when ``|values| <= 2^-M grid``,
    and ``|low| <= U grid``; ``grid`` is a power of two (elementwise)."""
    high = (grid + values) - grid
    return high, values - high


class AxisGroups:
    """The groups of a dense array along one axis.

    Parameters
    ----------
    axis : int
        The axis summed over.
    size : int
        Its length.
    """

    def __init__(self, axis, size):
        self.axis, self.sizes = axis, size

    def sum(self, values):
        """Plain sums of the groups."""
        return values.sum(axis=self.axis)

    def max(self, values):
        """Largest value of each group."""
        return values.max(axis=self.axis, initial=0.0)

    def spread(self, per_group):
        """A per-group array broadcast over the elements."""
        return np.expand_dims(per_group, self.axis)


class SegmentGroups:
    """Consecutive segments of the first axis (the rows of a CSR matrix).

    Parameters
    ----------
    indptr : ndarray of shape (n_groups + 1,)
        Segment ``i`` is ``[indptr[i] - indptr[0], indptr[i + 1] - indptr[0])``; the
        values are of shape ``(indptr[-1] - indptr[0], K)``.
    """

    def __init__(self, indptr):
        lengths = np.diff(indptr)
        self._lengths, self._filled = lengths, lengths > 0
        self._starts = (indptr[:-1] - indptr[0])[self._filled]
        self.sizes = lengths[:, None]   # broadcasts against sums of shape (n_groups, K)

    def _reduce(self, ufunc, values):
        out = np.zeros((self.sizes.size,) + values.shape[1:])
        if values.shape[0]:
            # reduceat reads an empty segment's neighbour: empty segments stay zero
            out[self._filled] = ufunc.reduceat(values, self._starts, axis=0)
        return out

    def sum(self, values):
        """Plain sums of the groups (zero for an empty one)."""
        return self._reduce(np.add, values)

    def max(self, values):
        """Largest value of each group (zero for an empty one)."""
        return self._reduce(np.maximum, values)

    def spread(self, per_group):
        """A per-group array repeated over the elements."""
        return np.repeat(per_group, self._lengths, axis=0)


class LabelGroups:
    """Elements grouped by an integer label (the columns of CSR entries), summed by
    ``np.bincount``; one grid for all the groups (their common maximum).

    Parameters
    ----------
    labels : ndarray of int
        The group of each element (first axis).
    n_groups : int
    size : int
        A bound on the number of elements of a group.
    """

    def __init__(self, labels, n_groups, size):
        self.labels, self.n_groups, self.sizes = labels, n_groups, size

    def sum(self, values):
        """Plain sums of the groups, shape ``(n_groups,) + values.shape[1:]``."""
        columns = values.reshape(values.shape[0], -1)
        sums = [np.bincount(self.labels, weights=column, minlength=self.n_groups)
                for column in columns.T]
        return np.stack(sums, axis=-1).reshape((self.n_groups,) + values.shape[1:])

    def max(self, values):
        """The largest value over all the elements, for every group."""
        return np.full((self.n_groups,) + values.shape[1:], values.max(initial=0.0))

    def spread(self, per_group):
        """The common grid (the same for every group)."""
        return per_group.max(axis=0, initial=0.0)


def group_sums(values, errors, groups):
    """Sums of groups of ``values + errors`` as double-doubles, with a bound on the error.

    ``groups`` (:class:`AxisGroups`, :class:`SegmentGroups` or :class:`LabelGroups`)
    sums by groups in plain float64, in any order; ``errors`` are the rounding errors
    of the products ``values`` (``|errors| <= 1.6 U |values|``, exact to ``2.2 U^2
    |values|``), or ``None``.

    Two levels of extraction (Rump, Ogita & Oishi, "Accurate floating-point summation
    part I", SIAM J. Sci. Comput. 31, 2008, Lemma 3.3). With ``grid`` a power of two at
    least ``h max |values|`` over a group of ``m`` terms, ``h >= 2 m + 2`` a power of
    two, the high parts are multiples of ``U grid`` of magnitude at most ``grid / h``,
    so every partial sum of them is a representable multiple of ``U grid``: their plain
    sum is exact, in any order. The low parts (at most ``U grid``) and the errors are
    extracted again on ``grid_2 = h U grid``, exactly as well; what is left, at most
    ``2 U grid_2`` per term after one addition, is summed in plain float64, within
    ``(3 m^2 + 2 m) U^2 grid_2`` (``m U <= 1/4``).

    Parameters
    ----------
    values : ndarray
    errors : ndarray or None
    groups : object

    Returns
    -------
    total : tuple of ndarray
        ``(hi, lo)`` of each group's sum.
    bound : ndarray
        A bound on the absolute error of each group's sum.
    """
    size = np.asarray(groups.sizes, dtype=float)
    headroom = power_of_two_above(2.0 * size + 1.0)
    grid = power_of_two_above(headroom * groups.max(np.abs(values)))
    second_grid = headroom * U * grid
    first, low = _extract(values, groups.spread(grid))
    element_grid = groups.spread(second_grid)
    second, low = _extract(low, element_grid)
    if errors is not None:
        second_errors, rest = _extract(errors, element_grid)
        second += second_errors
        low += rest
    hi, lo = two_sum(groups.sum(first), groups.sum(second))
    remainder = groups.sum(low)
    total = two_sum(hi, lo + remainder)
    # the rest's plain sum; the rounding of lo + remainder; errors that were themselves
    # rounded sums (at most 2.2 U^2 |values| each, at most grid / headroom)
    bound = ((3.0 * size**2 + 2.0 * size) * U**2 * second_grid
             + U * (np.abs(lo) + np.abs(remainder)) + 2.2 * U**2 * size * grid / headroom)
    return total, bound
