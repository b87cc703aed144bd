"""Output noise that covers a solver's distance to the exact minimiser.

Objective perturbation (and NAPP) is private for the *exact* minimiser ``M`` of the
perturbed objective. A solver stops at a point ``A`` whose gradient norm is at most
the public tolerance ``gamma``; with the objective ``lambda``-strongly convex,
``||A - M|| <= r = gamma / lambda`` for every noise draw and every dataset. Releasing
``A + W`` with ``W`` of density proportional to ``exp(-||w|| / s)``, ``s = 2 r /
epsilon_out``, gives pointwise ``p_W(o - A) <= exp(r / s) p_W(o - M) = exp(epsilon_out
/ 2) p_W(o - M)``, and ``M + W`` is post-processing of ``M``. Going from a dataset to
its neighbour through ``M + W`` (once each way) gives ``(epsilon_mech + epsilon_out,
exp(epsilon_out / 2) delta_mech)``-DP (approximate minima perturbation, Iyengar et
al. 2019, with Gamma-norm output noise for both the pure and the Gaussian variants).

:func:`split_budget` shares a request ``(epsilon, delta)`` so that the total is
exactly the request. Derivation: ``docs/privacy/objective_perturbation.rst``.
"""

import math
from dataclasses import dataclass

from ._gamma_norm import draw_gamma_norm

# the public share of epsilon paid for the cover
COVER_EPSILON_SHARE = 0.01
# the largest public tolerance an estimator accepts: with tol = 1e-6 and unit strong
# convexity the cover's norm is about 2e-4 d / epsilon, small next to a model's
MAX_TOL = 1e-6


@dataclass(frozen=True)
class Budget:
    """A request ``(epsilon, delta)`` shared between a mechanism and its cover.

    Attributes
    ----------
    epsilon_mechanism, delta_mechanism : float
        The exact-minimiser mechanism's share.
    epsilon_cover : float
        The cover's share.
    """

    epsilon_mechanism: float
    delta_mechanism: float
    epsilon_cover: float


def split_budget(epsilon, delta):
    """Share ``(epsilon, delta)`` between the exact-minimiser mechanism and its cover.

    Parameters
    ----------
    epsilon : float
        Total epsilon; ``inf`` (no noise) is not split.
    delta : float
        Total delta.

    Returns
    -------
    budget : Budget
        ``epsilon_cover = 0.01 epsilon``, ``epsilon_mechanism = 0.99 epsilon`` and
        ``delta_mechanism = delta exp(-epsilon_cover / 2)``.

    Examples
    --------
    >>> from skdp.mechanisms import split_budget
    >>> b = split_budget(1.0, 1e-5)
    >>> round(b.epsilon_mechanism + b.epsilon_cover, 12), b.delta_mechanism < 1e-5
    (1.0, True)
    """
    if math.isinf(epsilon):
        return Budget(math.inf, delta, math.inf)
    epsilon_cover = COVER_EPSILON_SHARE * epsilon
    return Budget(epsilon - epsilon_cover, delta * math.exp(-epsilon_cover / 2),
                  epsilon_cover)


@dataclass(frozen=True)
class SolverCover:
    """The cover's noise law: Gamma-norm of scale ``2 radius / epsilon``.

    Attributes
    ----------
    radius : float
        Public bound ``tol / strong_convexity`` on the solver's distance to the
        exact minimiser.
    epsilon : float
        Epsilon paid by the cover; ``inf`` means no cover noise.
    """

    radius: float
    epsilon: float

    @property
    def scale(self):
        """``2 radius / epsilon`` (0 when epsilon is infinite)."""
        return 0.0 if math.isinf(self.epsilon) else 2.0 * self.radius / self.epsilon

    def draw(self, dim, rng):
        """The standard draws of the cover's noise (a Gamma-norm draw).

        Parameters
        ----------
        dim : int
            Dimension of the released vector.
        rng : numpy.random.Generator
            The noise stream.

        Returns
        -------
        draw : GammaNormDraw
        """
        return draw_gamma_norm(dim, rng)


@dataclass(frozen=True, kw_only=True)
class EpsilonDerivatives:
    """A calibration's derivatives in epsilon, for pathwise (common-noise) derivatives.

    The noise vector is ``noise_scale(epsilon)`` times fixed standard draws, so it
    moves by ``d_log_noise_scale`` times itself; the extra ridge by
    ``d_extra_ridge``.

    Attributes
    ----------
    d_extra_ridge : float
        ``d extra_ridge / d epsilon``.
    d_log_noise_scale : float
        ``d log(noise_scale) / d epsilon``.
    d_log_noise_scale_d_log_delta : float
        ``d log(noise_scale) / d log(delta)`` (0 for pure epsilon-DP).
    """

    d_extra_ridge: float = 0.0
    d_log_noise_scale: float = 0.0
    d_log_noise_scale_d_log_delta: float = 0.0


def in_total_epsilon(calibration):
    """A mechanism's calibration derivatives in the total epsilon of :func:`split_budget`.

    The mechanism runs at ``epsilon_m = (1 - a) epsilon`` and ``delta_m = delta
    exp(-a epsilon / 2)`` (``a`` the cover's share), so ``dlog s / depsilon =
    (1 - a) dlog s / depsilon_m - (a / 2) dlog s / dlog delta_m``.

    Parameters
    ----------
    calibration : EpsilonDerivatives
        In the mechanism's epsilon.

    Returns
    -------
    d_extra_ridge, d_log_noise_scale : float
        In the total epsilon.
    """
    share = 1.0 - COVER_EPSILON_SHARE
    return (share * calibration.d_extra_ridge,
            share * calibration.d_log_noise_scale
            - 0.5 * COVER_EPSILON_SHARE * calibration.d_log_noise_scale_d_log_delta)


def solver_cover(tol, strong_convexity, epsilon_cover):
    """The cover for a solver certified to gradient norm ``tol``.

    Parameters
    ----------
    tol : float
        Public gradient-norm tolerance the solver reached.
    strong_convexity : float
        Public lower bound on the objective's strong convexity.
    epsilon_cover : float
        Epsilon paid by the cover (see :func:`split_budget`).

    Returns
    -------
    cover : SolverCover
    """
    return SolverCover(radius=float(tol) / float(strong_convexity),
                       epsilon=float(epsilon_cover))
