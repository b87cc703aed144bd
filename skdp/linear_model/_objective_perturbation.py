"""Objective perturbation for logistic regression and the Huber SVM."""

from dataclasses import dataclass
from functools import partial
from numbers import Integral, Real

import numpy as np
from sklearn.base import ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ..base import neighboring_constraint
from ..mechanisms import draw_noise
from ..mechanisms._approximate_minima import COVER_EPSILON_SHARE, MAX_TOL, solver_cover
from ..mechanisms._dominance import noise_floor
from ..mechanisms._objective_perturbation import (_jacobian_multiplier, jacobian_share_C,
                                                  kst_noise_dim, kst_release_rdp,
                                                  objective_perturbation_calibration,
                                                  person_hessian)
from ..losses import SoftmaxLoss, WeightedLoss
from ..solvers import glm_hessian_solve, newton_minimise
from ..solvers._partitioned import (check_partitioned_hessian, is_dask_collection,
                                   one_vs_rest, partitioned_newton_minimise)
from ..solvers._multinomial import multinomial_hessian_solve, multinomial_minimise
from ..solvers._partitioned_softmax import one_hot, partitioned_multinomial_minimise
from ..utils._docstrings import fill_doc
from ..utils._progress import Progress, problem_names, problems_header, solve_each
from ..utils._random import noise_generator
from ..utils._sklearn_compat import Interval, StrOptions
from ..utils.validation import effective_data_norm
from ._weights import (PARTITIONED_SOFTMAX_PERSONS, WeightedFitMixin, check_class_weight,
                       check_person_params, parametric_weight_bound, person_constraints,
                       row_weights, weight_constraints, weighted_problem)
from ._base import (
    DEFAULT_DATA_NORM,
    PrivateLinearModel,
    _LinearClassifierMixin,
    _MultinomialMixin,
    linear_classifier_constraints,
    partitioned_design,
    solver_design,
    encode_labels,
    one_vs_rest_targets,
)
from ._inference import GLMInferenceMixin



AUTO_JACOBIAN_SHARE = {"binary": 0.05, "softmax, pure": 0.025, "softmax, Gaussian": 0.2}
"""Share of a problem's epsilon that the Jacobian term takes at ``C="auto"``: for a
binary problem (one-vs-rest included; chosen on Adult and KDDCup99 at epsilon 0.1 to 5)
and for the softmax problem, by noise law (chosen on MNIST at epsilon 0.1 to 5). The
softmax noise has ``K`` times the dimension: the norm of Gamma-norm noise grows with the
dimension, so the pure variant gains from a smaller ``C`` (half the binary share: about
two points at epsilon 1), while Gaussian noise grows with its square root and gains
from a larger one (four times the binary share, delta = 1/n^2: 1.5 to 2.7 points at
epsilon 0.1, 1 and 5). See the defaults benchmark."""


def auto_C(loss, *, epsilon, neighboring, row_norm, hessian_rank=1, pure=True, person_dim=1):
    """``C="auto"``: the Jacobian term takes :data:`AUTO_JACOBIAN_SHARE` of ``epsilon``.

    Public: it reads the problem's epsilon, the neighbouring relation, the norm
    bound, the Hessian rank (above 1 for the softmax loss only) and whether the
    noise is pure (``delta = 0``). ``epsilon = inf`` (no noise) gives scikit-learn's
    ``C = 1``. Returns ``C`` and ``dC / depsilon``: with ``C = expm1(a epsilon / k) /
    beta`` (ridge 1) it is ``(C + 1 / beta) a / k``. ``person_dim``: the number of
    coefficients per class of a fit with ``groups`` (the Jacobian term is a
    person's, :func:`~skdp.mechanisms._objective_perturbation.person_hessian`), 1
    for a record's.
    """
    if np.isinf(epsilon):
        return 1.0, 0.0
    share = AUTO_JACOBIAN_SHARE["binary" if hessian_rank == 1 else
                                "softmax, pure" if pure else "softmax, Gaussian"]
    hessian_bound, rank = person_hessian(loss.bounds(row_norm)[1], hessian_rank, person_dim)
    C = jacobian_share_C(epsilon, share, hessian_bound=hessian_bound,
                         neighboring=neighboring, hessian_rank=rank)
    per_unit = share / (_jacobian_multiplier(neighboring) * rank)
    return C, (C + 1.0 / hessian_bound) * per_unit


def gaussian_renyi_curve(estimator, n_classes, orders=None, C=None, weight_bound=None):
    """RDP of a Gaussian :class:`ObjPertLogisticRegression` fit, from its parameters.

    The fit is one binary problem (two classes) or ``K = n_classes`` one-vs-rest
    problems at ``(epsilon / K, delta / K)`` each on the same rows, whose curves
    add (Mironov 2017, Prop. 1); each problem's is
    :func:`~skdp.mechanisms._objective_perturbation.kst_release_rdp` with ``G = C R``,
    ``beta_H = c C R^2`` and ridge 1. Public: parameters, ``C`` (``C_`` of a fit,
    else the value of ``C="auto"``) and the number of classes.

    Parameters
    ----------
    estimator : ObjPertLogisticRegression
        With ``delta > 0`` and ``neighboring="add_remove"``.
    n_classes : int
        Number of classes, >= 2.
    orders : array-like, default=None
        Orders ``alpha > 1``; ``None``: :data:`~skdp.accounting._rdp.ORDERS`.
    C : float, default=None
        The fit's ``C``; ``None``: from the parameters.
    weight_bound : float, default=None
        The bound ``W`` on a record's weight (``weight_bound_`` of a fit): the bounds
        are those of ``C W``. ``None``: from the parameters
        (:func:`~skdp.linear_model._weights.parametric_weight_bound`, ``class_weight``
        over the declared ``classes``; at least the bound of any fit without
        ``sample_weight``).

    Returns
    -------
    rdp : ndarray of shape orders.shape

    Raises
    ------
    ValueError
        For ``delta = 0`` (pure DP), replace-one neighbours, or a multinomial fit: no
        Renyi curve is derived for them here.
    """
    from ..accounting._rdp import ORDERS

    orders = ORDERS if orders is None else np.asarray(orders, dtype=float)
    if not estimator.delta > 0:
        raise ValueError("ObjPertLogisticRegression with delta=0 is pure DP: it has no "
                         "Gaussian Renyi curve.")
    if estimator._is_multinomial(n_classes):
        raise ValueError("A multinomial (softmax) ObjPertLogisticRegression fit has no "
                         "Renyi curve here: the bound needs one gradient direction per "
                         "record. Use multi_class='ovr'.")
    data_norm = estimator.data_norm
    if isinstance(data_norm, str):
        if data_norm == "private":
            raise ValueError("data_norm='private' chooses the bound from the rows: the Renyi "
                             "curve needs a public numeric data_norm.")
        data_norm = DEFAULT_DATA_NORM  # "warn"
    k = 1 if n_classes == 2 else int(n_classes)
    row_norm = effective_data_norm(data_norm, estimator.fit_intercept,
                                   estimator.intercept_scaling)
    if weight_bound is None:
        weight_bound = parametric_weight_bound(estimator)
    loss = WeightedLoss(estimator._make_loss(), weight_bound)
    if C is None:
        C = (auto_C(loss, epsilon=estimator.epsilon / k, neighboring=estimator.neighboring,
                    row_norm=row_norm, pure=False)[0]
             if estimator.C == "auto" else float(estimator.C))
    gradient_bound, hessian_bound = loss.bounds(row_norm)
    return k * kst_release_rdp(orders, estimator.epsilon / k, estimator.delta / k,
                               gradient_bound=C * gradient_bound,
                               hessian_bound=C * hessian_bound, ridge=1.0,
                               neighboring=estimator.neighboring)


@dataclass
class ObjPertSolution:
    """One binary objective-perturbation fit, with what derivatives need.

    Transient: returned by :func:`_objective_perturbation`, never stored on a
    fitted estimator (it holds the noise and the clipped private design).
    """

    theta: np.ndarray
    minimiser: np.ndarray
    converged: bool
    calibration: object
    draw: object
    cover: object
    cover_draw: object
    X: np.ndarray
    y: np.ndarray
    C: float
    ridge: float
    loss: object
    n_problems: int = 1
    C_rate: float = 0.0
    recalibrate: object = None
    weights: np.ndarray = None
    record_bound: float = None
    information: np.ndarray = None
    information_calibration: object = None

    def noise_floor(self):
        """The records whose largest gradients the linear noise ``b`` outweighs: at
        the solution, ``(1 + Delta) theta + b`` is minus the data's gradient sum, of
        norm at most ``record_bound`` per record
        (:func:`~skdp.mechanisms._dominance.noise_floor`)."""
        c = self.calibration
        return noise_floor(c.noise, self.theta.size, c.noise_scale, self.record_bound)

    @property
    def noise(self):
        if self.draw is None:
            return np.zeros_like(self.theta)
        return self.draw.vector(self.calibration.noise_scale)

    def theta_derivative(self):
        """``dtheta/depsilon`` of the release with the standard draws held fixed.

        In the estimator's epsilon, of which this problem gets ``1 / n_problems``.
        Stationarity ``grad J(theta) = 0`` with ``J`` the perturbed objective gives
        ``W dtheta = -(dDelta theta + db)`` in the mechanism's epsilon, ``W`` the
        Hessian of ``J`` at theta (``docs/privacy/objective_perturbation.rst``), with
        the calibration's derivatives (taken in the total epsilon); plus
        :meth:`cover_derivative`.
        """
        if self.draw is None:
            return np.zeros_like(self.theta)
        d = self.calibration
        rhs = d.d_extra_ridge * self.minimiser + d.d_log_noise_scale * self.noise
        in_share = -self._hessian_solve(rhs) + self.cover_derivative()
        if self.C_rate:
            in_share = in_share + self.C_rate * self._C_derivative()
        return in_share / self.n_problems

    def _C_derivative(self):
        """``dtheta/dC`` at a fixed epsilon (``C="auto"`` moves ``C`` with epsilon).

        Stationarity ``C g + (1 + Delta) theta + s u = 0`` (``g`` the loss
        gradient sum, ``s u`` the noise) gives ``W dtheta/dC = -(g + Delta_C theta +
        s_C u)`` with ``g = -((1 + Delta) theta + s u) / C``; the calibration's
        derivatives in ``C`` are central differences of its closed form. The
        cover's scale ``2 tol / ((1 + Delta) epsilon_cover)`` moves by ``-Delta_C /
        (1 + Delta)`` times itself.
        """
        h = 1e-6 * self.C
        up, down = self.recalibrate(self.C + h), self.recalibrate(self.C - h)
        d_ridge = (up.extra_ridge - down.extra_ridge) / (2.0 * h)
        d_scale = (up.noise_scale - down.noise_scale) / (2.0 * h)
        standard = self.noise / self.calibration.noise_scale
        gradient_sum = -(self.ridge * self.minimiser + self.noise) / self.C
        rhs = gradient_sum + d_ridge * self.minimiser + d_scale * standard
        cover_noise = self.theta - self.minimiser
        return -self._hessian_solve(rhs) - (d_ridge / self.ridge) * cover_noise

    def _hessian_solve(self, rhs):
        return glm_hessian_solve(self.minimiser, self.X, self.y, self.loss, self.C, self.ridge,
                                 rhs)

    def cover_derivative(self):
        """``d/depsilon`` of the cover's noise with its standard draws held fixed.

        Its scale ``2 tol / (ridge * share * epsilon)`` falls with epsilon and with
        the total ridge, which moves by ``d_extra_ridge``: ``dlog scale / depsilon =
        -1 / epsilon - d_extra_ridge / ridge``.
        """
        epsilon = self.cover.epsilon / COVER_EPSILON_SHARE
        d_log_scale = -1.0 / epsilon - self.calibration.d_extra_ridge / self.ridge
        return d_log_scale * self.cover_draw.vector(self.cover.scale)


def _calibration_at(epsilon, delta, unit_bounds, C, hessian_rank=1, person_dim=1, n_coef=None,
                    **kwargs):
    """:func:`objective_perturbation_calibration` at ``C`` for the bounds at ``C = 1``;
    with ``person_dim`` above 1, the Jacobian constants of one person
    (:func:`~skdp.mechanisms._objective_perturbation.person_hessian`). The Gaussian
    noise covers a gradient difference in a subspace of dimension
    :func:`~skdp.mechanisms._objective_perturbation.kst_noise_dim` (``n_coef``: the
    coefficients per class, for its cap)."""
    gradient_bound, hessian_bound = unit_bounds
    noise_dim = kst_noise_dim(hessian_rank, kwargs.get("neighboring", "add_remove"),
                              person_dim, n_coef)
    hessian_bound, hessian_rank = person_hessian(C * hessian_bound, hessian_rank, person_dim)
    return objective_perturbation_calibration(epsilon, delta, gradient_bound=C * gradient_bound,
                                              hessian_bound=hessian_bound,
                                              hessian_rank=hessian_rank, noise_dim=noise_dim,
                                              **kwargs)


def _objective_perturbation(X, y, loss, *, C, epsilon, delta, neighboring, delta_rule,
                            row_norm, tol, max_iter, rng, eps_jacobian_frac=0.5,
                            n_problems=1, C_rate=0.0, person_dim=1):
    """Minimise ``C sum_i l(y_i <x_i, theta>) + (1 + Delta)/2 ||theta||^2 + <b, theta>``
    to gradient norm ``tol``, then add the cover's noise.

    ``X`` is the clipped (and intercept-augmented) design whose rows have norm at
    most ``row_norm``; ``y`` is in {-1, +1}. ``delta == 0`` uses Chaudhuri et al.
    Algorithm 2, ``delta > 0`` the KST Gaussian variant, each at the mechanism's
    share of the budget; the rest pays for Gamma-norm output noise that covers the
    distance ``tol / (1 + Delta)`` to the exact minimiser (approximate minima
    perturbation). ``epsilon`` and ``delta`` are this problem's share of the
    estimator's, ``1 / n_problems``. ``person_dim`` (the number of coefficients,
    with ``groups``) calibrates the Jacobian term for one person's rows
    (:func:`~skdp.mechanisms._objective_perturbation.person_hessian`); 1 for one row.
    """
    for attribute in ("lipschitz", "smoothness"):
        if not np.isfinite(getattr(loss, attribute)):
            raise ValueError(f"Objective perturbation needs a loss with a finite {attribute}.")
    ridge = 1.0
    calibrate = partial(_calibration_at, epsilon, delta, loss.bounds(row_norm), ridge=ridge,
                        neighboring=neighboring, delta_rule=delta_rule,
                        eps_jacobian_frac=eps_jacobian_frac, person_dim=person_dim,
                        n_coef=X.shape[1])
    budget, calibration = calibrate(C)
    d = X.shape[1]
    draw = draw_noise(calibration.noise, d, rng)
    noise = np.zeros(d) if draw is None else draw.vector(calibration.noise_scale)
    total_ridge = ridge + calibration.extra_ridge
    if getattr(X, "partitioned", False):  # the same solve, its reductions over partitions
        result = partitioned_newton_minimise(X, loss, C=C, ridge=total_ridge, linear=noise,
                                             tol=tol, max_iter=max_iter)
    else:
        result = newton_minimise(X, y, loss, C=C, ridge=total_ridge, linear=noise, tol=tol,
                                 max_iter=max_iter)
    cover = solver_cover(tol, total_ridge, budget.epsilon_cover)
    cover_draw = None if draw is None else cover.draw(d, rng)
    released = result.theta if draw is None else result.theta + cover_draw.vector(cover.scale)
    return ObjPertSolution(released, result.theta, result.converged, calibration, draw, cover,
                           cover_draw, X, y, C, total_ridge, loss, n_problems, C_rate=C_rate,
                           recalibrate=lambda c: calibrate(c)[1],
                           record_bound=C * loss.bounds(row_norm)[0])


@dataclass
class MultinomialObjPertSolution(ObjPertSolution):
    """One multinomial (softmax) objective-perturbation fit: ``theta`` is ``(K, d)``
    and ``y`` one-hot; the noise and its derivative are reshaped to it."""

    @property
    def noise(self):
        return super().noise.reshape(self.theta.shape)

    def _hessian_solve(self, rhs):
        return multinomial_hessian_solve(self.minimiser, self.X, self.y, self.C, self.ridge,
                                         rhs, weights=self.weights)

    def cover_derivative(self):
        return super().cover_derivative().reshape(self.theta.shape)


def _multinomial_objective_perturbation(X, Y, *, C, epsilon, delta, neighboring, delta_rule,
                                        row_norm, tol, max_iter, rng, eps_jacobian_frac=0.5,
                                        C_rate=0.0, n_classes=None, weights=None,
                                        weight_bound=1.0, person_dim=1):
    """Minimise ``C sum_i softmax_loss(Theta x_i, y_i) + (1 + Delta)/2 ||Theta||^2 +
    <B, Theta>`` over ``Theta`` of shape ``(K, d)``, then add the cover's noise.

    As :func:`_objective_perturbation` in dimension ``K d``, with the softmax loss's
    per-record bounds: gradient Frobenius norm ``G = sqrt(2) C R``, Hessian
    eigenvalues at most ``beta_H = C R**2 / 2`` and rank at most ``K - 1``, which
    multiplies the Jacobian term (``docs/privacy/objective_perturbation.rst``). One
    problem spends the whole budget: no split over classes. A partitioned ``X`` holds
    its one-hot labels (``Y`` is then ``None`` and ``n_classes`` given). Row
    ``weights`` in ``[0, weight_bound]`` multiply the bounds by ``weight_bound``
    (:class:`~skdp.losses.WeightedLoss`). ``person_dim`` as in
    :func:`_objective_perturbation`.
    """
    loss = SoftmaxLoss() if weights is None else WeightedLoss(SoftmaxLoss(), weight_bound)
    ridge = 1.0
    n_classes = Y.shape[1] if n_classes is None else n_classes
    calibrate = partial(_calibration_at, epsilon, delta, loss.bounds(row_norm), ridge=ridge,
                        neighboring=neighboring, delta_rule=delta_rule,
                        eps_jacobian_frac=eps_jacobian_frac, hessian_rank=n_classes - 1,
                        person_dim=person_dim, n_coef=X.shape[1])
    budget, calibration = calibrate(C)
    shape = (n_classes, X.shape[1])
    dim = n_classes * X.shape[1]
    draw = draw_noise(calibration.noise, dim, rng)
    noise = np.zeros(shape) if draw is None else draw.vector(calibration.noise_scale).reshape(
        shape)
    total_ridge = ridge + calibration.extra_ridge
    if getattr(X, "partitioned", False):  # the same solve, its passes over partitions
        result = partitioned_multinomial_minimise(X, n_classes, C=C, ridge=total_ridge,
                                                  linear=noise, tol=tol, max_iter=max_iter)
    else:
        result = multinomial_minimise(X, Y, C=C, ridge=total_ridge, linear=noise, tol=tol,
                                      max_iter=max_iter, weights=weights)
    cover = solver_cover(tol, total_ridge, budget.epsilon_cover)
    cover_draw = None if draw is None else cover.draw(dim, rng)
    released = result.theta if draw is None else \
        result.theta + cover_draw.vector(cover.scale).reshape(shape)
    return MultinomialObjPertSolution(released, result.theta, result.converged, calibration,
                                      draw, cover, cover_draw, X, Y, C, total_ridge, loss,
                                      C_rate=C_rate, recalibrate=lambda c: calibrate(c)[1],
                                      weights=weights, record_bound=C * loss.bounds(row_norm)[0])


@fill_doc
class ObjPertLogisticRegression(GLMInferenceMixin, _MultinomialMixin, _LinearClassifierMixin,
                                ClassifierMixin, WeightedFitMixin, PrivateLinearModel):
    """Differentially private logistic regression (or Huber SVM) by objective perturbation.

    The coefficients are the exact minimiser of the L2-regularised empirical risk
    plus a random linear term ``<b, theta>`` (and, when the budget needs it, an
    extra ridge), in the sum form ``C * sum_i loss_i + 0.5 * ||theta||^2``
    that scikit-learn's ``LogisticRegression(C)`` minimises.

    Parameters
    ----------
    %(privacy_params)s

    C : float or "auto", default="auto"
        Inverse regularisation strength, as in scikit-learn: the objective is
        ``C * sum_i loss_i + 0.5 * ||theta||^2``. Larger ``C`` means more noise
        relative to the penalty. ``"auto"`` sets it from public quantities only
        (epsilon, the neighbouring relation, ``data_norm``, the loss and the
        number of classes): the ``C`` at which the Jacobian term ``m r log(1 + c
        C R^2)`` (see Notes) takes 5 %% of the problem's epsilon, about
        ``0.05 epsilon / (m r c R^2)``, so no extra ridge is needed and the noise
        gets the rest. ``epsilon=inf`` gives ``C = 1``. The value used is
        ``C_``. On Adult, KDDCup99 and MNIST it is within a point of accuracy of
        the best ``C`` of a grid at epsilon 0.1, 1 and 5
        (``benchmarks/bench_defaults.py``). Its shares were chosen on those
        datasets' training rows, outside any reported epsilon (see Notes).

    loss : {"logistic", "huber"}, default="logistic"
        ``"huber"`` is the Huber-smoothed hinge of width ``huber_h``.

    huber_h : float, default=0.5
        Width of the Huber hinge; its curvature bound is ``1 / (2 huber_h)``.

    multi_class : {"auto", "multinomial", "ovr"}, default="auto"
        With three classes or more: ``"multinomial"`` fits one softmax model with
        the whole budget; ``"ovr"`` fits one binary model per class, each with
        ``epsilon / K`` (and ``delta / K``). ``"auto"`` is multinomial for the
        logistic loss and one-vs-rest for the Huber loss (which has no softmax
        form). Two classes always fit one binary model.

    %(fit_intercept)s

    %(intercept_scaling)s

    %(data_norm)s

    delta_rule : {"continuous", "paper"}, default="continuous"
        When ``delta=0``: when to add the extra ridge of Chaudhuri et al.'s
        Algorithm 2. ``"paper"`` is the published rule (accuracy jumps at one
        epsilon); ``"continuous"`` is equally private and continuous in epsilon.

    eps_jacobian_frac : float, default=0.5
        When ``delta=0`` and ``delta_rule="continuous"``: the largest share of
        epsilon that the Jacobian (curvature) term may take; when the problem's
        own curvature would take more, an extra ridge brings it to exactly this
        share and the noise gets the rest. Every value in (0, 1) is equally
        private. Small values (about 0.05) buy less noise for more
        regularisation, which pays off at small epsilon (see the benchmark).

    tol : float, default=1e-8
        Public gradient-norm tolerance, in (0, 1e-6]. The solver stops when the
        gradient norm of the perturbed objective is at most ``tol``, which puts
        it within ``tol / (1 + Delta)`` of the exact minimiser; 1 %% of epsilon
        pays for Gamma-norm output noise that covers that distance (its norm is
        about ``2e2 * tol * d / epsilon``: 2e-6 d / epsilon at the default, 2e-4
        d / epsilon at the bound). The certified norm adds an estimate of the
        gradient's rounding error, up to about ``2.2e-16 * C * n * R`` (``R``
        as in Notes); where that estimate alone exceeds ``tol`` (``C * n * R``
        above about 3e7), the gradient is recomputed in double-double with a
        proven error bound (about ``1e-28 * C * n * R``) and the point refined,
        so the default stays reachable at any size a machine holds. If ``tol``
        is not reached within ``max_iter`` the fit raises
        :class:`~skdp.ConvergenceError` and releases nothing.

    max_iter : int, default=100
        Maximum number of Newton iterations.

    %(class_weight)s

    %(max_sample_weight)s

    %(max_rows_per_group)s

    %(classes)s

    inference : bool, default=False
        Also release what confidence intervals need, inside the same ``epsilon``
        and ``delta``: a tenth of both pays for a noisy information matrix (the
        loss's Hessian sum at the released coefficients, Gaussian or Laplace
        noise), and the objective perturbation gets the rest. ``coef_`` and
        ``intercept_`` are then the one-step correction of the ridge's bias,
        ``theta + (1 + Delta) / C H~^{-1} theta``, which estimates the population
        minimiser of the unpenalised logistic loss on the clipped rows, and
        :meth:`conf_int` covers it (the sampling variability and the noise,
        whose law is known). Binary logistic fits in memory without weights or
        groups. Where valid intervals are impossible (the noisy information
        matrix is singular within its noise) the fit raises
        :class:`~skdp.InferenceError` and releases nothing. See
        ``docs/privacy/inference.rst``.
        How many rows avoid a refusal, per ``epsilon``, ``delta`` and number of
        features: "How many rows you need" in ``docs/privacy/inference.rst``.

    %(random_state)s

    %(verbose)s

    Attributes
    ----------
    %(classifier_attrs)s

    C_ : float
        The ``C`` of the fit: ``C``, or the value of ``C="auto"`` at this budget.

    %(privacy_attrs)s

    %(weight_attrs)s

    %(noise_floor_attrs)s

    %(inference_attrs)s

    See Also
    --------
    OutputPertSVM : output perturbation, also for the non-smooth hinge loss.
    sklearn.linear_model.LogisticRegression : the non-private estimator.

    Notes
    -----
    Privacy statement. Unit of privacy: one record (row of ``X`` with its label).
    Neighbouring relation: ``neighboring`` (default add/remove-one). The budget
    is shared: 99 %% of epsilon (and ``delta exp(-epsilon / 200)``) for the
    objective perturbation, 1 %% for the output noise that covers the solver's
    distance to the exact minimiser. With ``delta=0`` the mechanism is
    Chaudhuri, Monteleoni & Sarwate (2011) Algorithm 2, epsilon-DP: noise with
    density ``exp(-epsilon' ||b|| / zeta)`` where ``zeta = G`` (add/remove) or
    ``2 G`` (replace) and ``G = C * data_norm_eff`` bounds a record's gradient,
    plus an extra ridge when the Jacobian term ``m log(1 + c C R^2)`` (``m =
    1`` add/remove, 2 replace) exceeds its share. With ``delta > 0`` it is the
    Gaussian objective perturbation of Kifer, Smith & Thakurta (2012),
    (epsilon, delta)-DP, with standard deviation ``zeta sqrt(4 q^2 + 4
    epsilon) / epsilon``, ``q^2 = max(2 log(2/delta), chi2.isf(delta, m))``,
    and extra ridge ``2 c C R^2 / epsilon``: ``m`` is the dimension of a fixed
    subspace that holds the neighbours' gradient difference whatever the
    output (1 for a binary record, 2 under replace, where ``q^2 = 2
    log(2/delta)``, Kifer et al.'s constant). Here ``R``
    is ``sqrt(data_norm**2 + intercept_scaling**2)`` with an intercept and
    ``c`` is 1/4 (logistic) or ``1 / (2 huber_h)`` (Huber). The proofs hold
    for the exact minimiser; the solver stops at the public gradient norm
    ``tol``, within ``r = tol / (1 + Delta)`` of it, and the release adds
    Gamma-norm noise of scale ``2 r / epsilon_cover``, which makes the release
    private whatever the solver's path. Multinomial fits (``K >= 3`` classes)
    perturb the softmax objective over the ``K x d`` coefficient matrix: ``G =
    sqrt(2) C R`` and ``c = 1/2`` with the Jacobian term multiplied by the rank
    ``K - 1`` of a record's Hessian (KST: extra ridge ``2 (K - 1) c C R^2 /
    epsilon``); a record's softmax gradient ``(p - e_y) x^T`` turns with the
    coefficients in a subspace of dimension ``K - 1``, so the Gaussian noise
    takes ``m = K - 1`` (``2 (K - 1)`` under replace, at most ``(K - 1) d``).
    One-vs-rest splits epsilon and delta evenly over the classes
    (sequential composition). A Gaussian fit under add/remove-one neighbours
    (binary or one-vs-rest) also has a Renyi curve, :meth:`renyi_curve`, which
    private selection and searches compose. A fit that does
    not reach ``tol`` raises and releases nothing. Not protected: the set of
    class labels unless ``classes`` is given, and the feature dimension.
    Floating-point attacks on the samplers are out of scope. Derivation:
    ``docs/privacy/objective_perturbation.rst``.

    Row weights. With ``sample_weight`` or ``class_weight`` the objective is
    ``C sum_i w_i loss_i + 0.5 ||theta||^2`` with every ``w_i`` in ``[0, W]``, ``W
    = weight_bound_``. A loss scaled by ``w <= W`` has ``W`` times the gradient
    bound and ``W`` times the curvature bound of the loss (and stays convex), so
    every constant above is taken at ``C W`` in place of ``C``: the noise, the
    extra ridge and the Jacobian term are exactly those of the unweighted fit at
    ``C W``, and the ridge 1 (the strong convexity) is unchanged. ``C="auto"``
    reads the weighted bounds, so ``C_`` is the automatic ``C`` divided by
    ``W``. The unit of privacy is one record with its weight.

    Persons. With ``fit(X, y, groups=...)`` the unit of privacy is one person
    (all of their rows): ``neighboring_`` is ``"add_remove_person"`` (or
    ``"replace_person"``). Each of a person's ``k`` rows is weighted ``min(1, M
    / k)`` (``M = max_rows_per_group``), so a person's weights sum to at most
    ``W = weight_bound_`` and their gradient is at most ``C W R``, as one
    weighted record's. Their Hessian is not rank one: a sum of up to ``k``
    rank-one terms of total trace at most ``beta = c C W R^2``, of rank at most
    ``d`` (the number of coefficients, intercept included; ``(K - 1) d`` for the
    softmax). The Jacobian term is then at most ``m d log(1 + beta / (d (1 +
    Delta)))`` (``m (K - 1) d log(1 + beta / (d (1 + Delta)))`` for the softmax)
    in place of ``m log(1 + beta / (1 + Delta))``: the calibration, its extra
    ridge and ``C="auto"`` use it for every fit with ``groups``, whatever the
    persons' sizes (which the fit does not read; even when each person has one
    row). With ``delta > 0`` a person's gradient turns with the coefficients in
    the span of their rows' gradients, of dimension at most ``d`` (``(K - 1) d``
    for the softmax): the Gaussian noise takes ``m = d`` (``(K - 1) d``), and
    the fit has no Renyi curve. Refused with ``groups``, before any noise:
    ``data_norm="private"`` (a row-level quantile).

    Defaults. The shares of ``C="auto"`` (the Jacobian term's 5 %% of a binary
    problem's epsilon, one-vs-rest included; 2.5 %% for the softmax problem with
    pure noise, 20 %% with Gaussian noise) were chosen with the defaults
    benchmark (``benchmarks/bench_defaults.py``, which fits on the training rows
    and scores on the test rows): the binary share on Adult and KDDCup99 at
    epsilon 0.1 to 5, the softmax shares on MNIST. That choice read those
    datasets' protected training rows without noise and is in no reported
    epsilon: the defaults are public choices for other data, but they are not
    independent of those datasets, and a study that tunes them on its own
    private data pays for the tuning.

    %(no_incremental_fits)s

    References
    ----------
    .. [CMS11] Chaudhuri, Monteleoni & Sarwate, "Differentially Private Empirical
       Risk Minimization", JMLR 12, 2011.
    .. [KST12] Kifer, Smith & Thakurta, "Private Convex Empirical Risk
       Minimization and High-dimensional Regression", COLT 2012.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from skdp import ObjPertLogisticRegression
    >>> X, y = make_classification(n_samples=200, n_features=4, random_state=0)
    >>> clf = ObjPertLogisticRegression(epsilon=1.0, data_norm=5.0, random_state=0).fit(X, y)
    >>> clf.coef_.shape, clf.epsilon_spent_, clf.neighboring_
    ((1, 4), 1.0, 'add_remove')
    >>> private = ObjPertLogisticRegression(data_norm="private", random_state=0).fit(X, y)
    >>> private.data_norm_epsilon_, private.epsilon_spent_   # 10 %% for the bound, in the total
    (0.1, 1.0)
    """

    # first-order expansion of the utility in EpsilonForUtility (see its benchmark)
    _epsilon_expansion = "log"

    _parameter_constraints = {
        **linear_classifier_constraints({"logistic", "huber"}),
        "neighboring": neighboring_constraint(),
        "C": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "multi_class": _MultinomialMixin.multi_class_constraint,
        "delta_rule": [StrOptions({"continuous", "paper"})],
        "eps_jacobian_frac": [Interval(Real, 0, 1, closed="neither")],
        "tol": [Interval(Real, 0, MAX_TOL, closed="right")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "verbose": ["verbose"],
        **weight_constraints(),
        **person_constraints(),
        "inference": ["boolean"],
    }

    def __init__(self, *, epsilon=1.0, delta=0.0, neighboring="add_remove", C="auto",
                 loss="logistic", huber_h=0.5, multi_class="auto", fit_intercept=True,
                 intercept_scaling=1.0, data_norm="warn", delta_rule="continuous",
                 eps_jacobian_frac=0.5, tol=1e-8, max_iter=100, class_weight=None,
                 max_sample_weight=1.0, max_rows_per_group=1.0, classes=None,
                 inference=False, random_state=None, verbose=0):
        self.epsilon = epsilon
        self.delta = delta
        self.neighboring = neighboring
        self.C = C
        self.loss = loss
        self.huber_h = huber_h
        self.multi_class = multi_class
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.data_norm = data_norm
        self.delta_rule = delta_rule
        self.eps_jacobian_frac = eps_jacobian_frac
        self.tol = tol
        self.max_iter = max_iter
        self.class_weight = class_weight
        self.max_sample_weight = max_sample_weight
        self.max_rows_per_group = max_rows_per_group
        self.classes = classes
        self.inference = inference
        self.random_state = random_state
        self.verbose = verbose

    _renyi_cost_params = ("C", "loss", "huber_h", "multi_class", "fit_intercept",
                          "intercept_scaling", "data_norm", "classes", "inference")
    """Parameters that change the Gaussian fit's Renyi curve besides the privacy ones
    (its ratio of curvature to ridge, its gradient bound, its number of problems, and
    whether it has one: none with ``inference=True``): a randomised search must give
    them as lists."""

    def _renyi_cost(self, n_classes=None, persons=False):
        """Gaussian objective perturbation has a Renyi curve for records under
        add/remove neighbours and one binary or one-vs-rest problems
        (:func:`gaussian_renyi_curve` for ``n_classes``), none for persons, for
        multinomial problems or for an unknown label set; pure fits as any."""
        if self.delta:
            if (persons or self.neighboring != "add_remove" or n_classes is None
                    or self._is_multinomial(n_classes) or self.inference):
                return None
            return gaussian_renyi_curve(self, n_classes)
        return super()._renyi_cost(n_classes, persons)

    def _renyi_spent(self):
        """The fitted Gaussian curve (:meth:`renyi_curve`) where it exists."""
        if float(self.delta_spent_) and (self.neighboring_ != "add_remove"
                                         or self._is_multinomial(len(self.classes_))
                                         or self.inference):
            return None
        return self.renyi_curve() if float(self.delta_spent_) else super()._renyi_spent()

    def renyi_curve(self, orders=None):
        """The fit's Renyi DP curve (Gaussian variant, ``delta > 0``).

        At each order ``alpha``, a bound on the Renyi divergence of order ``alpha``
        between the releases on add/remove-one neighbouring datasets: per binary
        problem ``c + alpha L^2 / (2 sigma^2) + log(2 Phi((alpha - 1) L / sigma)) /
        (alpha - 1)`` (Redberg, Koskela & Wang 2023, with ``c = log(1 + beta / lambda)``)
        plus the solver's cover, summed over one-vs-rest problems. Derivation:
        ``docs/privacy/objective_perturbation.rst``.

        Parameters
        ----------
        orders : array-like, default=None
            Orders ``alpha > 1``; ``None``: the accountant's grid
            (``skdp.accounting._rdp.ORDERS``: 1.1 to 10.9 by 0.1, 11 to 63, 128 to
            1024).

        Returns
        -------
        rdp : ndarray of shape orders.shape

        Raises
        ------
        ValueError
            With ``delta=0``, ``neighboring="replace"``, a multinomial fit or a
            fit with ``groups``.
        """
        check_is_fitted(self, "C_")
        if self.inference:
            raise ValueError(
                "A fit with inference=True has no Renyi curve here: its information "
                "matrix composes with the objective perturbation by adding their "
                "(epsilon, delta).")
        if self.neighboring_ not in ("add_remove", "replace"):
            raise ValueError(
                "A fit with groups (neighboring_="
                f"{self.neighboring_!r}) has no Renyi curve here: the curve needs one "
                "gradient direction per record, and one person's several rows have many. "
                "Its (epsilon, delta) guarantee is the KST calibration's.")
        return gaussian_renyi_curve(self, len(self.classes_), orders, C=self.C_,
                                    weight_bound=self.weight_bound_)

    def _partitioned_refusal(self, with_derivative):
        return None  # binary, one-vs-rest or softmax; logistic or Huber loss

    def _releases(self, X, y, with_derivative=False, sample_weight=None, groups=None):
        """Validate, then run the mechanism once (two classes, or a multinomial fit)
        or once per one-vs-rest problem.

        Returns the transient solutions (noise draws, clipped design), which
        the fitted estimator never keeps; each has its derivative in epsilon.
        With ``groups`` the Jacobian term is a person's (see Notes, "Persons").
        """
        check_class_weight(self.class_weight)
        self._check_privacy_params()
        check_person_params(self, groups)
        weights = None
        partitioned = is_dask_collection(X) or is_dask_collection(y)
        self._check_glm_inference_options(partitioned, sample_weight, groups)
        if partitioned:  # checked as a map-reduce; each partition maps its own labels
            if len(X.shape) == 2:  # before any pass over the data (other shapes: below)
                check_partitioned_hessian(X.shape[1] + bool(self.fit_intercept))
            design = partitioned_design(self, X, y, data_norm=self._resolve_data_norm(),
                                        fit_intercept=self.fit_intercept,
                                        intercept_scaling=self.intercept_scaling,
                                        max_classes=np.inf, groups=groups)
            y_idx, multinomial = None, self._is_multinomial(len(self.classes_))
            if multinomial and groups is not None:   # from the label set, before any noise
                raise ValueError(f"{type(self).__name__}: {PARTITIONED_SOFTMAX_PERSONS}")
        else:
            X, y = validate_data(self, X, y, dtype=np.float64, accept_sparse=("csr", "csc"))
            check_classification_targets(y)
            self.classes_, y_idx = encode_labels(y, self.classes)
            self._check_two_classes()
            multinomial = self._is_multinomial(len(self.classes_))
            weights, self.weight_bound_ = row_weights(self, sample_weight, X, y_idx,
                                                      self.classes_, groups=groups)
            design = solver_design(X, data_norm=self._resolve_data_norm(X),
                                   fit_intercept=self.fit_intercept,
                                   intercept_scaling=self.intercept_scaling)
        rng = noise_generator(self.random_state)
        row_norm = effective_data_norm(self.data_norm_, self.fit_intercept,
                                       self.intercept_scaling)
        n_classes = len(self.classes_)
        loss = SoftmaxLoss() if multinomial else self._make_loss()
        if partitioned:   # with groups, the partitions weigh a person's rows
            self.weight_bound_ = 1.0 if groups is None else float(self.max_rows_per_group)
        k = 1 if multinomial or n_classes == 2 else n_classes
        # a person's Hessian has rank up to the number of coefficients (public)
        person_dim = 1 if groups is None else design.shape[1]
        epsilon, delta = self._mechanism_budget()
        # C="auto" reads the weighted loss's bounds: the C of the weighted objective
        # is 1 / weight_bound_ times the unweighted one's
        weighted = weights is not None or (partitioned and groups is not None)
        bounded = WeightedLoss(loss, self.weight_bound_) if weighted else loss
        self.C_, C_rate = (
            auto_C(bounded, epsilon=epsilon / k, neighboring=self.neighboring,
                   row_norm=row_norm, hessian_rank=n_classes - 1 if multinomial else 1,
                   pure=delta == 0, person_dim=person_dim)
            if self.C == "auto" else (float(self.C), 0.0))
        common = dict(C=self.C_, C_rate=C_rate, neighboring=self.neighboring,
                      delta_rule=self.delta_rule,
                      eps_jacobian_frac=self.eps_jacobian_frac, row_norm=row_norm,
                      tol=self.tol, max_iter=self.max_iter, rng=rng, person_dim=person_dim)
        progress = Progress(self.verbose, type(self).__name__)
        names = problem_names(self.classes_, k, multinomial)
        header = problems_header(k, design.shape[1] * (n_classes if multinomial else 1),
                                 epsilon=epsilon / k, delta=delta / k, tol=self.tol,
                                 C=self.C_)
        if multinomial:
            if partitioned:   # each partition maps its labels to one-hot rows
                problems = [(design.with_targets(partial(one_hot, n_classes=n_classes)), None)]
                options = dict(n_classes=n_classes)
            else:
                problems = [(design, np.eye(n_classes)[y_idx])]
                options = dict(weights=weights, weight_bound=self.weight_bound_)
            solve = partial(_multinomial_objective_perturbation, epsilon=epsilon,
                            delta=delta, **options, **common)
            return solve_each(progress, names, solve, problems, header)
        if partitioned:   # the partitions hold the labels: one view per problem
            problems = [(design, None)] if n_classes == 2 else [
                (design.with_targets(partial(one_vs_rest, positive=c)), None)
                for c in range(n_classes)]
        else:
            problems = [(design, target) for target in one_vs_rest_targets(y_idx, n_classes)]
        if partitioned:   # the partitions' targets carry their weights
            problems = [(rows, bounded, target) for rows, target in problems]
        else:
            problems = [(rows, *weighted_problem(loss, target, weights, self.weight_bound_))
                        for rows, target in problems]

        def solve(rows, problem_loss, target):
            return _objective_perturbation(rows, target, problem_loss, epsilon=epsilon / k,
                                           delta=delta / k, n_problems=k, **common)

        solutions = solve_each(progress, names, solve, problems, header)
        if self.inference:   # after the objective's noise, from the same stream
            solution = solutions[0]
            solution.information, solution.information_calibration = \
                self._release_information(solution.X, solution.y, solution.theta,
                                          solution.loss, rng)
        return solutions

    def _has_epsilon_derivative(self):
        # the one-step correction of inference=True reads a second release
        return not self.inference

    def _inference_mechanism(self, solution):
        """The objective's ridge and noise, and the solver's cover noise."""
        return dict(C=solution.C, ridge=solution.ridge,
                    objective_noise=(solution.calibration.noise,
                                     solution.calibration.noise_scale),
                    output_noise=("gamma_norm", solution.cover.scale))
