"""The utility as a function of epsilon, from noisy measurements (plain numerics).

A measurement is the utility of one private fit at one epsilon and its pathwise
derivative in epsilon. :class:`UtilityCurve` averages the draws per epsilon,
expands to first order in an expansion variable (``log``, ``inverse`` or
``linear`` in epsilon), interpolates between two measured points by a monotone
cubic Hermite, and solves for the epsilon at which the utility meets a target.
"""

import numpy as np
from scipy.optimize import brentq
from sklearn.utils import Bunch

# refinement fits move at most this factor in epsilon from the previous measuring point
MAX_STEP = 5.0


def _standard_error(values):
    """Standard error of the mean of the draws (NaN for one draw)."""
    return values.std(ddof=1) / np.sqrt(len(values)) if len(values) > 1 else np.nan


def _to_expansion_variable(epsilon, expansion):
    if expansion == "inverse":
        return 1.0 / epsilon
    return np.log(epsilon) if expansion == "log" else epsilon


def _from_expansion_variable(value, expansion):
    if expansion == "inverse":
        return np.inf if value <= 0 else 1.0 / value
    return np.exp(value) if expansion == "log" else value


def _variable_derivative(epsilon, expansion):
    """``dv/depsilon`` of the expansion variable ``v``."""
    if expansion == "inverse":
        return -1.0 / epsilon**2
    return 1.0 / epsilon if expansion == "log" else 1.0


class UtilityCurve:
    """The estimated utility curve of a set of measurements.

    Parameters
    ----------
    measurements : list of dict
        Each with ``epsilon``, ``utility`` and ``derivative`` (``dU / d epsilon``).
    expansion : {"log", "inverse", "linear"}
        The variable in which the utility is expanded to first order.
    target : float
        The utility to reach.
    bounds : tuple of float
        ``(low, high)``: a Newton step's answer is kept within ``(low / 2, 2 high)``.

    Attributes
    ----------
    points : list of Bunch
        Per measuring epsilon (ascending): ``epsilon``, mean ``utility`` and
        ``derivative``, and their standard errors ``utility_sem`` and
        ``derivative_sem`` (NaN for one draw).
    """

    def __init__(self, measurements, expansion, target, bounds):
        self.expansion = expansion
        self.target = target
        self.bounds = bounds
        self.points = self._aggregate(measurements)

    @staticmethod
    def _aggregate(measurements):
        """Per measuring epsilon: mean utility, mean derivative and their standard errors."""
        by_eps = {}
        for m in sorted(measurements, key=lambda m: m["epsilon"]):
            # epsilons a rounding apart (a bound times the size ratio) are one point
            close = [e for e in by_eps if np.isclose(e, m["epsilon"], rtol=1e-9, atol=0)]
            by_eps.setdefault(close[0] if close else m["epsilon"], []).append(m)
        points = []
        for eps, ms in by_eps.items():
            u = np.array([m["utility"] for m in ms])
            d = np.array([m["derivative"] for m in ms])
            points.append(Bunch(epsilon=eps, utility=u.mean(), derivative=d.mean(),
                                utility_sem=_standard_error(u),
                                derivative_sem=_standard_error(d)))
        return points

    def slope(self, point):
        """``dU/dv`` at a measuring point for its expansion, with its standard error.

        The measured derivative, unless it is implausibly flat next to another
        measured point: of the wrong sign or below a third of the secant slope to
        the nearest other point (whose utility difference has little noise: same
        draws, same split), as a single noisy draw can be, and a flat slope takes a
        huge step; then the secant slope. (A steep derivative only shortens the
        step, and is kept: on an S-shaped curve it is the local truth.)
        """
        # dU/dv = (dU/depsilon) / (dv/depsilon)
        scale = 1.0 / _variable_derivative(point.epsilon, self.expansion)
        slope, slope_sem = point.derivative * scale, point.derivative_sem * abs(scale)
        v0 = _to_expansion_variable(point.epsilon, self.expansion)
        others = [p for p in self.points if p.epsilon != point.epsilon]
        if not others:
            return slope, slope_sem
        other = min(others, key=lambda p: abs(_to_expansion_variable(p.epsilon,
                                                                     self.expansion) - v0))
        width = _to_expansion_variable(other.epsilon, self.expansion) - v0
        secant = (other.utility - point.utility) / width
        if secant != 0 and slope / secant < 1 / 3:
            return secant, np.hypot(point.utility_sem, other.utility_sem) / abs(width)
        return slope, slope_sem

    def expand(self, point, epsilon):
        """First-order utility at ``epsilon`` from one measuring point, with its error."""
        v0 = _to_expansion_variable(point.epsilon, self.expansion)
        v = _to_expansion_variable(epsilon, self.expansion)
        slope, slope_sem = self.slope(point)
        value = point.utility + slope * (v - v0)
        error = np.hypot(point.utility_sem, slope_sem * (v - v0))
        return value, error, slope, v0

    def at(self, epsilon):
        """Estimated utility at ``epsilon``, with its standard error.

        Between two measuring points: the cubic Hermite interpolant of their
        utilities and derivatives (in the expansion variable, see
        :meth:`between`); outside them: the first-order expansion from the
        nearest end point.
        """
        points = self.points
        v = _to_expansion_variable(epsilon, self.expansion)
        for a, b in zip(points, points[1:]):
            if a.epsilon <= epsilon <= b.epsilon:
                return self.between(a, b)(v)
        end = points[0] if epsilon < points[0].epsilon else points[-1]
        value, error, _, _ = self.expand(end, epsilon)
        return value, error

    def between(self, a, b):
        """Utility between neighbouring measuring points ``a`` and ``b`` as a function
        of the expansion variable ``v``: ``(value, standard error)``.

        The cubic Hermite interpolant through both utilities with the measured slopes
        ``dU/dv``; it uses the derivatives at both ends, so on a curved utility it
        is much closer than the straight line over a wide interval. When noisy slopes
        would make the cubic non-monotone (outside Fritsch & Carlson's sufficient
        region ``alpha, beta >= 0``, ``alpha**2 + beta**2 <= 9`` of the slopes
        relative to the secant), both slopes are replaced by the secant slope, which
        gives the straight line.
        """
        va, vb = (_to_expansion_variable(p.epsilon, self.expansion) for p in (a, b))
        width = vb - va
        secant = (b.utility - a.utility) / width
        slopes = [p.derivative / _variable_derivative(p.epsilon, self.expansion)
                  for p in (a, b)]
        slope_sems = [p.derivative_sem / abs(_variable_derivative(p.epsilon, self.expansion))
                      for p in (a, b)]
        ratios = [s / secant if secant != 0 else -1.0 for s in slopes]
        line = min(ratios) < 0 or ratios[0] ** 2 + ratios[1] ** 2 > 9

        def curve(v):
            t = (v - va) / width
            if line:
                weights = (1 - t, t, 0.0, 0.0)
            else:
                weights = (2 * t**3 - 3 * t**2 + 1, -2 * t**3 + 3 * t**2,
                           width * (t**3 - 2 * t**2 + t), width * (t**3 - t**2))
            value = (weights[0] * a.utility + weights[1] * b.utility
                     + weights[2] * slopes[0] + weights[3] * slopes[1])
            error = np.sqrt((weights[0] * a.utility_sem) ** 2 + (weights[1] * b.utility_sem) ** 2
                            + (weights[2] * slope_sems[0]) ** 2
                            + (weights[3] * slope_sems[1]) ** 2)
            return value, error

        return curve

    def solve(self):
        """The epsilon where the estimated utility meets the target.

        When two neighbouring measuring points bracket the target, solve the
        interpolant between them (:meth:`between`, monotone there); otherwise take
        a Newton step in the expansion variable from the point whose utility is
        nearest the target.
        """
        points = self.points
        target = self.target
        for a, b in zip(points, points[1:]):
            if (a.utility - target) * (b.utility - target) <= 0 and a.utility != b.utility:
                va, vb = (_to_expansion_variable(p.epsilon, self.expansion) for p in (a, b))
                curve = self.between(a, b)
                v = brentq(lambda v: curve(v)[0] - target, va, vb, xtol=1e-14 * abs(vb - va))
                return _from_expansion_variable(v, self.expansion), target
        point = min(points, key=lambda p: abs(p.utility - target))
        epsilon = self._root(point)
        return epsilon, self.expand(point, epsilon)[0]

    def _root(self, point):
        _, _, slope, v0 = self.expand(point, point.epsilon)
        gap = self.target - point.utility
        lo, hi = self.bounds
        if slope == 0 or not np.isfinite(slope):
            return 2.0 * hi if gap > 0 else point.epsilon
        epsilon = _from_expansion_variable(v0 + gap / slope, self.expansion)
        # outside the bounds on either side: clipped (with a warning) by fit
        return float(np.clip(epsilon, lo / 2.0, 2.0 * hi))
