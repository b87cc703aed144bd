"""Separable convex penalties ``alpha * sum_j rho(theta_j)`` (sum form).

Every penalty is described by three public pieces that the solvers combine:
an L1 weight, an L2 (ridge) weight and a bridge weight with exponent ``q``::

    P(theta) = l1_weight * ||theta||_1 + l2_weight / 2 * ||theta||_2**2
               + bridge_weight * sum_j |theta_j|**q

Each also carries the constant the privacy analyses use, its guaranteed
curvature (:meth:`strong_convexity`), and the local quadratic approximation
(LQA) weight that noise augmentation realises with pseudo-rows
(``spec/napp_erm.md`` section 1.3).
"""

from dataclasses import dataclass

import numpy as np

_LQA_FLOOR = 1e-300


@dataclass(frozen=True)
class _SeparablePenalty:
    l1_weight: float = 0.0
    l2_weight: float = 0.0
    bridge_weight: float = 0.0
    q: float = 2.0

    def value(self, theta):
        """Penalty value at ``theta``.

        Parameters
        ----------
        theta : array-like of shape (n_coefficients,)
            The coefficients.

        Returns
        -------
        value : float
            ``P(theta)``.
        """
        theta = np.asarray(theta, dtype=float)
        total = self.l1_weight * np.abs(theta).sum() + 0.5 * self.l2_weight * theta @ theta
        if self.bridge_weight:
            total += self.bridge_weight * np.sum(np.abs(theta) ** self.q)
        return float(total)

    def strong_convexity(self, coef_bound=None):
        """Curvature the penalty guarantees in every coordinate (``mu_P``).

        ``inf_t rho''(t)`` over the domain ``|t| <= coef_bound``: the ridge part's
        weight, plus ``q (q - 1) coef_bound**(q - 2)`` times the bridge weight.
        The L1 part has curvature 0.

        Parameters
        ----------
        coef_bound : float or None, default=None
            Public bound on every ``|theta_j|``. Only the bridge part needs it,
            finite; the other parts ignore it.

        Returns
        -------
        mu : float
            The guaranteed curvature, ``>= 0``.

        Raises
        ------
        ValueError
            If the penalty has a bridge part and ``coef_bound`` is ``None`` or
            infinite.
        """
        mu = self.l2_weight
        if self.bridge_weight:
            if coef_bound is None or not np.isfinite(coef_bound):
                raise ValueError("The bridge penalty's curvature needs a finite coef_bound.")
            mu += self.bridge_weight * self.q * (self.q - 1.0) * coef_bound ** (self.q - 2.0)
        return float(mu)

    def lqa_weight(self, theta, cap):
        """Ridge weights with the penalty's gradient at ``theta`` (gradient matching).

        ``rho'(|t|) / |t|`` per coordinate, capped at ``cap`` near zero.

        Parameters
        ----------
        theta : array-like of shape (n_coefficients,)
            The point of the approximation.
        cap : float
            Largest weight returned; it bounds the L1 and bridge parts' weights,
            which grow without limit as a coordinate nears zero.

        Returns
        -------
        weights : ndarray of shape (n_coefficients,)
            One ridge weight per coordinate.
        """
        a = np.maximum(np.abs(np.asarray(theta, dtype=float)), _LQA_FLOOR)
        w = self.l2_weight + self.l1_weight / a
        if self.bridge_weight:
            w = w + self.bridge_weight * self.q * a ** (self.q - 2.0)
        return np.minimum(w, cap)


@dataclass(frozen=True)
class L1(_SeparablePenalty):
    """Lasso ``alpha * ||theta||_1``.

    Parameters
    ----------
    alpha : float
        Weight of the L1 norm.
    """

    def __init__(self, alpha):
        super().__init__(l1_weight=float(alpha))


@dataclass(frozen=True)
class L2(_SeparablePenalty):
    """Ridge ``alpha / 2 * ||theta||_2**2``; curvature ``alpha``.

    Parameters
    ----------
    alpha : float
        Weight of the halved squared L2 norm.
    """

    def __init__(self, alpha):
        super().__init__(l2_weight=float(alpha))


@dataclass(frozen=True)
class ElasticNet(_SeparablePenalty):
    """``alpha * (l1_ratio ||theta||_1 + (1 - l1_ratio) / 2 ||theta||_2**2)``.

    Parameters
    ----------
    alpha : float
        Overall weight.
    l1_ratio : float
        Share of ``alpha`` given to the L1 part, in [0, 1]; the rest goes to the
        ridge part.
    """

    def __init__(self, alpha, l1_ratio):
        super().__init__(l1_weight=float(alpha * l1_ratio),
                         l2_weight=float(alpha * (1.0 - l1_ratio)))


@dataclass(frozen=True)
class Bridge(_SeparablePenalty):
    """Bridge ``alpha * sum_j |theta_j|**q`` with ``q`` in (1, 2] (convex).

    Its curvature ``alpha q (q - 1) |t|**(q - 2)`` is smallest at the edge of
    the domain, so a guaranteed curvature needs a bound on ``|theta_j|``.

    Parameters
    ----------
    alpha : float
        Weight of the sum.
    q : float
        Exponent, in (1, 2].

    Raises
    ------
    ValueError
        If ``q`` is outside (1, 2].
    """

    def __init__(self, alpha, q):
        if not 1.0 < q <= 2.0:
            raise ValueError(f"The bridge exponent q must be in (1, 2]; got q={q!r}. "
                             "q <= 1 is not convex and not allowed in a private fit.")
        super().__init__(bridge_weight=float(alpha), q=float(q))


def make_penalty(name, alpha, *, l1_ratio=0.5, q=1.5):
    """Penalty object from its name: ``l1``, ``l2``, ``elasticnet`` or ``bridge``.

    Parameters
    ----------
    name : {"l1", "l2", "elasticnet", "bridge"}
        The penalty.
    alpha : float
        Its overall weight.
    l1_ratio : float, default=0.5
        Share of ``alpha`` on the L1 part; read only for ``"elasticnet"``.
    q : float, default=1.5
        Exponent, in (1, 2]; read only for ``"bridge"``.

    Returns
    -------
    penalty : L1, L2, ElasticNet or Bridge

    Raises
    ------
    ValueError
        If ``name`` is none of the four.
    """
    if name == "l1":
        return L1(alpha)
    if name == "l2":
        return L2(alpha)
    if name == "elasticnet":
        return ElasticNet(alpha, l1_ratio)
    if name == "bridge":
        return Bridge(alpha, q)
    raise ValueError(f"Unknown penalty {name!r}; choose l1, l2, elasticnet or bridge.")
