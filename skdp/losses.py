"""Losses of a linear predictor, carrying the constants the privacy analyses use.

Every loss is written as a function of the linear predictor ``z = <theta, x>``
and the target ``y``. Margin losses (``y`` in {-1, +1}) are functions ``f`` of
the margin ``m = y * z``; the squared loss is a function of the residual
``z - y``. For both, ``y**2 == 1`` or the residual's derivative is 1, so the
second derivative in ``z`` equals the second derivative in the argument.

Constants (suprema over the argument):

* ``lipschitz``  : sup |f'|, the per-example gradient bound is ``lipschitz * R``;
* ``smoothness`` : sup f'', the per-example Hessian bound is ``smoothness * R**2``
  (``np.inf`` for losses without a bounded second derivative, e.g. the hinge).

Every loss states its per-record bounds on public quantities with
``bounds(row_norm, y_bound=None, coef_bound=None)``: the squared and Poisson losses
have no global constants and need the label bound and the coefficient ball.
:data:`LOSSES` is the one registry; each estimator narrows it to the losses its
mechanism supports, and :func:`make_loss` builds one by name.
"""

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from scipy.special import expit, logsumexp, softmax

from .utils import _double_double as dd
from .utils._docstrings import fill_doc


def _returns(name, what):
    return f"""Returns
        -------
        {name} : ndarray
            {what}"""


_MARGIN = """Parameters
        ----------
        m : array-like
            Margins ``y * z``.

        """
_PREDICTOR = """Parameters
        ----------
        z : array-like
            Linear predictors ``<theta, x>``.
        y : array-like or float
            Targets.

        """
# shared Parameters/Returns sections of the losses' methods (``%(name)s`` in docstrings)
_LOSS_DOC = {
    "margin_value": _MARGIN + _returns("value", "``f(m)``."),
    "margin_grad": _MARGIN + _returns("derivative", "``f'(m)``."),
    "margin_hessian": _MARGIN + _returns("second_derivative", "``f''(m)``."),
    "predictor_value": _PREDICTOR + _returns("value", "The per-example loss."),
    "predictor_dz": _PREDICTOR + _returns("derivative", "Its derivative in ``z``."),
    "predictor_d2z": _PREDICTOR + _returns("second_derivative",
                                           "Its second derivative in ``z``."),
    "dz_accurate": """Parameters
        ----------
        z : tuple of ndarray
            Double-double linear predictors ``(hi, lo)``.
        y : ndarray
            Targets.
        z_error : ndarray
            Bounds on the predictors' errors.

        Returns
        -------
        derivative : tuple of ndarray
            Double-double derivative in ``z``.
        error : ndarray
            A bound on its error against the derivative at the exact predictor.""",
    "scores": """Parameters
        ----------
        S : ndarray of shape (n_samples, n_classes)
            Scores ``X Theta^T``.
        Y : ndarray of shape (n_samples, n_classes)
            One-hot labels.""",
    "bounds": """Parameters
        ----------
        row_norm : float
            Public bound ``R`` on a row's norm.
        y_bound : float, default=None
            Public bound ``Y`` on ``|y|`` (losses that need it).
        coef_bound : float, default=None
            Public radius ``B`` of the coefficient ball (losses that need it).

        Returns
        -------
        gradient_bound, hessian_bound : float
            Per-record bounds on the gradient's norm and the Hessian's eigenvalues.""",
}

def _margin_dz_accurate(grad_accurate, smoothness, z, y, z_error):
    """``y f'(y z)`` in double-double from ``grad_accurate(m) -> (f'(m), error)`` for
    labels ``y`` in {-1, +1} (the margin is exact); the predictors' error moves the
    derivative by at most ``smoothness`` times it."""
    (hi, lo), error = grad_accurate((y * z[0], y * z[1]))
    return (y * hi, y * lo), error + smoothness * z_error + dd.TINY


@fill_doc(fragments=_LOSS_DOC)

class _MarginLoss:
    """Loss ``f(y * z)`` of the margin; subclasses define ``value/grad/hessian``."""

    # the constants are global: no label bound or coefficient ball needed
    needs_public_bounds: ClassVar[bool] = False

    def loss(self, z, y):
        """Per-example loss at linear predictor ``z`` and label ``y`` in {-1, +1}.

        %(predictor_value)s
        """
        return self.value(y * z)

    def dz(self, z, y):
        """Derivative of the per-example loss in ``z``.

        %(predictor_dz)s
        """
        return y * self.grad(y * z)

    def d2z(self, z, y):
        """Second derivative of the per-example loss in ``z`` (``y**2 == 1``).

        %(predictor_d2z)s
        """
        return self.hessian(y * z)

    def bounds(self, row_norm, y_bound=None, coef_bound=None):
        """Per-record gradient and Hessian bounds ``(lipschitz R, smoothness R**2)``.

        Labels are in {-1, +1} and the constants are global, so ``y_bound`` and
        ``coef_bound`` are not needed.

        %(bounds)s
        """
        return float(self.lipschitz * row_norm), float(self.smoothness * row_norm**2)


@fill_doc(fragments=_LOSS_DOC)
@dataclass(frozen=True)
class LogisticLoss(_MarginLoss):
    """Logistic loss ``f(m) = log(1 + exp(-m))``."""

    name: ClassVar[str] = "logistic"
    lipschitz: ClassVar[float] = 1.0
    smoothness: ClassVar[float] = 0.25

    def value(self, m):
        """The logistic loss at margins ``m``.

        %(margin_value)s
        """
        return np.logaddexp(0.0, -m)

    def grad(self, m):
        """Its derivative ``-expit(-m)``.

        %(margin_grad)s
        """
        return -expit(-m)

    def hessian(self, m):
        """Its second derivative ``p (1 - p)``, ``p = expit(m)``.

        %(margin_hessian)s
        """
        p = expit(m)
        return p * (1.0 - p)

    def dz_accurate(self, z, y, z_error):
        """:meth:`dz` in double-double, for the certificate's fallback.

        ``f'(m) = -t / (1 + t)`` for ``m >= 0`` and ``-1 / (1 + t)`` otherwise, ``t =
        exp(-|m|)``: relative error at most ``(2 EXP + ADD + DIV + 1) U**2`` (the
        constants of :mod:`skdp.utils._double_double`), about ``1.2e-28``.

        %(dz_accurate)s
        """
        return _margin_dz_accurate(self._grad_accurate, self.smoothness, z, y, z_error)

    @staticmethod
    def _grad_accurate(m):
        sign = np.where(m[0] < 0, -1.0, 1.0)
        t = dd.exp((-sign * m[0], -sign * m[1]))
        numerator = (np.where(sign > 0, t[0], 1.0), np.where(sign > 0, t[1], 0.0))
        quotient = dd.div(numerator, dd.add_double(t, 1.0))
        relative = (2.0 * dd.EXP_ERROR + dd.ADD_ERROR + dd.DIV_ERROR + 1.0) * dd.U**2
        return dd.negative(quotient), relative * np.abs(quotient[0]) * (1.0 + 1e-15)


@fill_doc(fragments=_LOSS_DOC)
@dataclass(frozen=True)
class HuberHingeLoss(_MarginLoss):
    """Huber-smoothed hinge of width ``h`` (the "Huber SVM" of Chaudhuri et al.).

    ``f(m) = 0`` for ``m > 1 + h``, ``(1 + h - m)**2 / (4 h)`` for
    ``|1 - m| <= h`` and ``1 - m`` for ``m < 1 - h``.

    Parameters
    ----------
    h : float, default=0.5
        Half-width of the quadratic band; the curvature bound is ``1 / (2 h)``.
    """

    h: float = 0.5
    name: ClassVar[str] = "huber"
    lipschitz: ClassVar[float] = 1.0

    @property
    def smoothness(self):
        """The supremum of the second derivative, ``1 / (2 h)``."""
        return 1.0 / (2.0 * self.h)

    def value(self, m):
        """The Huber hinge at margins ``m``.

        %(margin_value)s
        """
        m = np.asarray(m, dtype=float)
        middle = (1.0 + self.h - m) ** 2 / (4.0 * self.h)
        return np.where(m > 1.0 + self.h, 0.0, np.where(m < 1.0 - self.h, 1.0 - m, middle))

    def grad(self, m):
        """Its derivative.

        %(margin_grad)s
        """
        m = np.asarray(m, dtype=float)
        middle = -(1.0 + self.h - m) / (2.0 * self.h)
        return np.where(m > 1.0 + self.h, 0.0, np.where(m < 1.0 - self.h, -1.0, middle))

    def hessian(self, m):
        """Its second derivative, ``1 / (2 h)`` inside the band.

        %(margin_hessian)s
        """
        m = np.asarray(m, dtype=float)
        inside = np.abs(1.0 - m) <= self.h
        return np.where(inside, 1.0 / (2.0 * self.h), 0.0)

    def dz_accurate(self, z, y, z_error):
        """:meth:`dz` in double-double, for the certificate's fallback.

        ``f'(m) = -clip((1 + h - m) / (2 h), 0, 1)``: ``1 + h`` is exact, the
        difference and the quotient are within ``(ADD + DIV + 1) U**2`` of their value,
        and the clip (1-Lipschitz, constant outside ``[0, 1]``) keeps the error below
        twice that.

        %(dz_accurate)s
        """
        return _margin_dz_accurate(self._grad_accurate, self.smoothness, z, y, z_error)

    def _grad_accurate(self, m):
        width = 2.0 * self.h
        ratio = dd.div(dd.add(dd.two_sum(1.0, self.h), dd.negative(m)), (width, 0.0))
        above = (ratio[0] > 1.0) | ((ratio[0] == 1.0) & (ratio[1] >= 0.0))
        below = (ratio[0] < 0.0) | ((ratio[0] == 0.0) & (ratio[1] <= 0.0))
        hi = np.where(above, 1.0, np.where(below, 0.0, ratio[0]))
        lo = np.where(above | below, 0.0, ratio[1])
        error = 2.0 * (dd.ADD_ERROR + dd.DIV_ERROR + 1.0) * dd.U**2 * 2.0
        return (-hi, -lo), np.full(hi.shape, error)


@fill_doc(fragments=_LOSS_DOC)
@dataclass(frozen=True)
class HingeLoss(_MarginLoss):
    """Hinge loss ``f(m) = max(0, 1 - m)``: Lipschitz, no second derivative."""

    name: ClassVar[str] = "hinge"
    lipschitz: ClassVar[float] = 1.0
    smoothness: ClassVar[float] = np.inf

    def value(self, m):
        """The hinge at margins ``m``.

        %(margin_value)s
        """
        return np.maximum(0.0, 1.0 - np.asarray(m, dtype=float))

    def grad(self, m):
        """A subgradient: -1 where ``m < 1``, else 0.

        %(margin_grad)s
        """
        return np.where(np.asarray(m, dtype=float) < 1.0, -1.0, 0.0)

    def hessian(self, m):
        """The hinge has no second derivative.

        Parameters
        ----------
        m : array-like
            Margins ``y * z``.

        Raises
        ------
        ValueError
            Always: use output perturbation for the hinge.
        """
        raise ValueError("The hinge loss has no second derivative; use output perturbation.")


@fill_doc(fragments=_LOSS_DOC)
@dataclass(frozen=True)
class SoftmaxLoss:
    """Multinomial (softmax) cross-entropy of a score vector ``s`` in R^K.

    ``l(s, y) = logsumexp(s) - s_y``; its gradient in ``s`` is ``p - e_y`` (``p =
    softmax(s)``), of norm at most ``sqrt(2)``, and its Hessian ``diag(p) - p p^T``
    has eigenvalues in ``[0, 1/2]`` and rank at most ``K - 1``. With a row ``x`` of
    norm at most ``R`` the per-record gradient in the coefficient matrix has
    Frobenius norm at most ``sqrt(2) R`` and the Hessian eigenvalues at most ``R**2 /
    2``, with rank at most ``K - 1`` (``docs/privacy/objective_perturbation.rst``).
    """

    name: ClassVar[str] = "softmax"
    lipschitz: ClassVar[float] = float(np.sqrt(2.0))
    smoothness: ClassVar[float] = 0.5
    needs_public_bounds: ClassVar[bool] = False

    def loss(self, S, Y):
        """Per-example loss at the scores.

        %(scores)s

        Returns
        -------
        value : ndarray of shape (n_samples,)
            ``logsumexp(S_i) - <S_i, Y_i>``.
        """
        return logsumexp(S, axis=1) - np.sum(S * Y, axis=1)

    def dz(self, S, Y):
        """Gradient of the per-example loss in the scores.

        %(scores)s

        Returns
        -------
        gradient : ndarray of shape (n_samples, n_classes)
            ``softmax(S) - Y``.
        """
        return softmax(S, axis=1) - Y

    def dz_accurate(self, S, Y, S_error):
        """:meth:`dz` in double-double, for the certificate's fallback.

        ``p = E / sum(E)`` with ``E = exp(S - max S)`` (each within ``(EXP + (ADD +
        1) |S_k - max S|) U**2``), summed and divided within ``(K ADD + DIV) U**2``;
        ``p - Y`` adds ``ADD U**2 |p - Y|``. The scores' errors move ``p`` by at most
        half their norm (the softmax Jacobian ``diag(p) - p p^T`` has norm at most 1/2).

        Parameters
        ----------
        S : tuple of ndarray
            Double-double scores, each of shape (n_samples, n_classes).
        Y : ndarray of shape (n_samples, n_classes)
            One-hot labels.
        S_error : ndarray of shape (n_samples, n_classes)
            Bounds on the scores' errors.

        Returns
        -------
        gradient : tuple of ndarray
            Double-double ``softmax(S) - Y``.
        error : ndarray of shape (n_samples,)
            A bound on the norm of each row's error against the exact scores'.
        """
        top = S[0].max(axis=1, keepdims=True)
        shifted = dd.add_double(S, -top)
        powers = dd.exp(shifted)
        total = (powers[0][:, 0], powers[1][:, 0])
        for k in range(1, S[0].shape[1]):
            total = dd.add(total, (powers[0][:, k], powers[1][:, k]))
        p = dd.div(powers, (total[0][:, None], total[1][:, None]))
        residual = dd.add_double(p, -Y)
        n_classes = S[0].shape[1]
        relative = (2.0 * dd.EXP_ERROR + 2.0 * (dd.ADD_ERROR + 1.0)
                    * np.max(np.abs(shifted[0]), axis=1)
                    + n_classes * dd.ADD_ERROR + dd.DIV_ERROR + 2.0) * dd.U**2
        error = (relative * (1.0 + 1e-15)   # sum_k p_k = 1
                 + (dd.ADD_ERROR + 1.0) * dd.U**2 * np.sum(np.abs(residual[0]), axis=1)
                 + 0.5 * np.linalg.norm(S_error, axis=1) + n_classes * dd.TINY)
        return residual, error

    def bounds(self, row_norm, y_bound=None, coef_bound=None):
        """Per-record gradient and Hessian bounds ``(sqrt(2) R, R**2 / 2)``.

        %(bounds)s
        """
        return float(self.lipschitz * row_norm), float(self.smoothness * row_norm**2)


@fill_doc(fragments=_LOSS_DOC)
@dataclass(frozen=True)
class SquaredLoss:
    """Squared loss of the residual, ``0.5 * (z - y)**2``.

    Its derivative ``z - y`` is unbounded, so it has no global Lipschitz constant:
    with public bounds ``|y| <= y_bound`` and ``|z| <= z_bound`` it is
    ``y_bound + z_bound`` (:meth:`lipschitz_on`).
    """

    name: ClassVar[str] = "squared"
    # bounds need |y| <= y_bound and ||theta|| <= coef_bound
    needs_public_bounds: ClassVar[bool] = True
    lipschitz: ClassVar[float] = np.inf
    smoothness: ClassVar[float] = 1.0
    # l'' = 1 everywhere: solvers may compute X^T diag(l'') X once
    constant_curvature: ClassVar[bool] = True

    def loss(self, z, y):
        """``0.5 (z - y)**2``.

        %(predictor_value)s
        """
        return 0.5 * (z - y) ** 2

    def dz(self, z, y):
        """``z - y``.

        %(predictor_dz)s
        """
        return z - y

    def dz_accurate(self, z, y, z_error):
        """:meth:`dz` in double-double (within ``ADD U**2`` of its value), for the
        certificate's fallback.

        %(dz_accurate)s
        """
        residual = dd.add_double(z, -np.asarray(y, dtype=float))
        return residual, (dd.ADD_ERROR + 1.0) * dd.U**2 * np.abs(residual[0]) + z_error

    def d2z(self, z, y):
        """``1``.

        %(predictor_d2z)s
        """
        return np.ones_like(np.asarray(z, dtype=float))

    @staticmethod
    def lipschitz_on(y_bound, z_bound):
        """Bound on ``|z - y|`` when ``|y| <= y_bound`` and ``|z| <= z_bound``.

        Parameters
        ----------
        y_bound, z_bound : float
            Public bounds on ``|y|`` and ``|z|``.

        Returns
        -------
        lipschitz : float
        """
        return float(y_bound) + float(z_bound)

    def bounds(self, row_norm, y_bound=None, coef_bound=None):
        """Per-record bounds on rows of norm ``R``, ``|y| <= Y`` and ``||theta|| <= B``.

        ``((R B + Y) R, R**2)``: ``|z| <= R B``.

        %(bounds)s
        """
        return (self.lipschitz_on(y_bound, row_norm * coef_bound) * row_norm,
                float(row_norm**2))


@fill_doc(fragments=_LOSS_DOC)
@dataclass(frozen=True)
class PoissonLoss:
    """Poisson negative log-likelihood with log link, ``exp(z) - y z`` (``log y!`` dropped).

    Its derivatives ``exp(z) - y`` and ``exp(z)`` are unbounded, so it has no
    global constants: with public bounds ``0 <= y <= y_bound`` and
    ``|z| <= z_bound`` they are :meth:`lipschitz_on` and :meth:`smoothness_on`.
    """

    name: ClassVar[str] = "poisson"
    needs_public_bounds: ClassVar[bool] = True
    lipschitz: ClassVar[float] = np.inf
    smoothness: ClassVar[float] = np.inf

    @staticmethod
    def lipschitz_on(y_bound, z_bound):
        """Bound on ``|exp(z) - y|`` when ``0 <= y <= y_bound`` and ``|z| <= z_bound``.

        Parameters
        ----------
        y_bound : float
            Public bound on ``y >= 0``.
        z_bound : float
            Public bound on ``|z|``.

        Returns
        -------
        lipschitz : float
        """
        return float(max(np.exp(z_bound), y_bound))

    @staticmethod
    def smoothness_on(z_bound):
        """Bound on ``exp(z)`` when ``|z| <= z_bound``.

        Parameters
        ----------
        z_bound : float
            Public bound on ``|z|``.

        Returns
        -------
        smoothness : float
        """
        return float(np.exp(z_bound))

    def loss(self, z, y):
        """``exp(z) - y z``.

        %(predictor_value)s
        """
        return np.exp(z) - y * z

    def dz(self, z, y):
        """``exp(z) - y``.

        %(predictor_dz)s
        """
        return np.exp(z) - y

    def d2z(self, z, y):
        """``exp(z)``.

        %(predictor_d2z)s
        """
        return np.exp(np.asarray(z, dtype=float))

    def bounds(self, row_norm, y_bound=None, coef_bound=None):
        """Per-record bounds on rows of norm ``R``, ``0 <= y <= Y`` and ``||theta|| <= B``.

        ``(max(exp(R B), Y) R, exp(R B) R**2)``: ``|z| <= R B``.

        %(bounds)s
        """
        z_bound = row_norm * coef_bound
        return (self.lipschitz_on(y_bound, z_bound) * row_norm,
                self.smoothness_on(z_bound) * row_norm**2)


@fill_doc(fragments=_LOSS_DOC)
@dataclass(frozen=True)
class WeightedLoss:
    """A loss times a public, bounded per-row weight: ``w_i l(z_i, y_i)``, ``0 <= w_i <= W``.

    The targets are rows ``(y_i, w_i)`` (shape ``(n, 2)``, :func:`weighted_targets`),
    so that the weight travels with its row through every block, chunk and subsample
    a solver takes. A weight in ``[0, W]`` scales the derivatives by at most ``W`` and
    keeps their signs, so the weighted loss is convex when ``l`` is and its constants
    are ``W`` times ``l``'s: ``lipschitz``, ``smoothness`` and :meth:`bounds` are what
    the privacy analyses read (``docs/privacy/objective_perturbation.rst``, "Sample
    weights").

    Parameters
    ----------
    unweighted : object
        The loss of one row (a loss of this module but the softmax).
    max_weight : float
        The public bound ``W`` on every weight.
    """

    unweighted: object
    max_weight: float

    @property
    def name(self):
        """The unweighted loss's name."""
        return self.unweighted.name

    @property
    def lipschitz(self):
        """``W`` times the unweighted loss's."""
        return self.max_weight * self.unweighted.lipschitz

    @property
    def smoothness(self):
        """``W`` times the unweighted loss's."""
        return self.max_weight * self.unweighted.smoothness

    @property
    def needs_public_bounds(self):
        """As the unweighted loss."""
        return self.unweighted.needs_public_bounds

    @property
    def constant_curvature(self):
        """Whether ``l''`` does not depend on the point (then neither does ``w l''``)."""
        return getattr(self.unweighted, "constant_curvature", False)

    def loss(self, z, y):
        """``w l(z, y)``.

        %(predictor_value)s
        """
        return y[:, 1] * self.unweighted.loss(z, y[:, 0])

    def dz(self, z, y):
        """``w l'(z, y)``.

        %(predictor_dz)s
        """
        return y[:, 1] * self.unweighted.dz(z, y[:, 0])

    def d2z(self, z, y):
        """``w l''(z, y)``.

        %(predictor_d2z)s
        """
        return y[:, 1] * self.unweighted.d2z(z, y[:, 0])

    @property
    def dz_accurate(self):
        """:meth:`dz` in double-double (``None`` when the unweighted loss has none):
        the unweighted derivative's error times ``w``, plus the product's rounding
        (:data:`~skdp.utils._double_double.MUL_ERROR` ``U**2`` relative)."""
        accurate = getattr(self.unweighted, "dz_accurate", None)
        if accurate is None:
            return None

        def weighted(z, y, z_error):
            weights = y[:, 1]
            derivative, error = accurate(z, y[:, 0], z_error)
            product = dd.mul_double(derivative, weights)
            rounding = (dd.MUL_ERROR + 1.0) * dd.U**2 * np.abs(product[0]) * (1.0 + 1e-15)
            return product, weights * error + rounding + dd.TINY

        return weighted

    def bounds(self, row_norm, y_bound=None, coef_bound=None):
        """``W`` times the unweighted loss's per-record bounds.

        %(bounds)s
        """
        gradient_bound, hessian_bound = self.unweighted.bounds(row_norm, y_bound, coef_bound)
        return self.max_weight * gradient_bound, self.max_weight * hessian_bound


def weighted_targets(y, weights):
    """The targets of a :class:`WeightedLoss`: rows ``(y_i, w_i)``.

    Parameters
    ----------
    y : ndarray of shape (n_samples,)
        The targets.
    weights : ndarray of shape (n_samples,)
        The rows' weights.

    Returns
    -------
    targets : ndarray of shape (n_samples, 2)
    """
    return np.column_stack([np.asarray(y, dtype=float), np.asarray(weights, dtype=float)])


def unweighted(loss):
    """The loss of one row of a :class:`WeightedLoss` (``loss`` itself otherwise).

    Parameters
    ----------
    loss : object
        A loss, weighted or not.

    Returns
    -------
    loss : object
        The loss of one row.
    """
    return getattr(loss, "unweighted", loss)


LOSSES = {
    "logistic": LogisticLoss,
    "huber": HuberHingeLoss,
    "hinge": HingeLoss,
    "squared": SquaredLoss,
    "poisson": PoissonLoss,
}


def make_loss(name, *, huber_h=0.5):
    """Build a loss of :data:`LOSSES` by name.

    Parameters
    ----------
    name : {"logistic", "huber", "hinge", "squared", "poisson"}
    huber_h : float, default=0.5
        Width of the Huber hinge (used by ``"huber"`` only).

    Returns
    -------
    loss : object

    Examples
    --------
    >>> from skdp.losses import make_loss
    >>> make_loss("huber", huber_h=0.1).smoothness
    5.0
    """
    try:
        cls = LOSSES[name]
    except KeyError:
        raise ValueError(f"Unknown loss {name!r}; choose one of {sorted(LOSSES)}.") from None
    return cls(h=huber_h) if cls is HuberHingeLoss else cls()
